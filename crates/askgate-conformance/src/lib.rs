//! Fixtures of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`), built with askgate-mcp: a server
//! with the tools and prompts of the suite's server scenarios, and a client
//! for its client scenarios. `scripts/conformance.sh` runs the suite
//! against both.

pub mod client;
pub mod interop;
pub mod server;
mod task_fixtures;
