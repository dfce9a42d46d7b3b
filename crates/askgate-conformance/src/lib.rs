//! Fixtures of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`), built with askgate-mcp: a server
//! with the tools, prompts and resources of the suite's server scenarios, and a client
//! for its client scenarios. `scripts/conformance.sh` runs the suite
//! against both. Also the example upstream the gateway is tested behind
//! ([`example_upstream`]): a tool of each risk level.

pub mod changes;
pub mod client;
pub mod example_upstream;
mod fixture;
mod forms;
pub mod interop;
mod logs;
mod prompt_fixtures;
mod resource_fixtures;
mod round_fixtures;
pub mod server;
pub mod store;
pub mod streams;
mod task_fixtures;
mod tool_fixtures;
