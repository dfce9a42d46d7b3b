//! Fixtures of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`), built with askgate-mcp: a server
//! with the tools and prompts of the suite's server scenarios, and a client
//! for its client scenarios. `scripts/conformance.sh` runs the suite
//! against both. Also the example upstream the gateway is tested behind
//! ([`example_upstream`]): a tool of each risk level.

pub mod client;
pub mod example_upstream;
mod fixture;
pub mod interop;
pub mod server;
pub mod store;
mod task_fixtures;
