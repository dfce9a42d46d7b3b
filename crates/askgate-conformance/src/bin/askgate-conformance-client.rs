//! The conformance fixture client, spawned by the suite in client mode.
//!
//! `askgate-conformance-client <server-url>` with the scenario in
//! `MCP_CONFORMANCE_SCENARIO`. Exits 0 when the scenario ran, 1 when it
//! failed or is not one this client plays. Reports go to stderr.

use std::process::ExitCode;

use askgate_conformance::client::{Scenario, run};

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!(
            "usage: askgate-conformance-client <server-url> (scenario in $MCP_CONFORMANCE_SCENARIO)"
        );
        return ExitCode::FAILURE;
    };
    let name = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(scenario) = Scenario::from_name(&name) else {
        let known: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
        eprintln!(
            "askgate-conformance-client: unknown scenario {name:?} (MCP_CONFORMANCE_SCENARIO); this client plays: {}",
            known.join(", ")
        );
        return ExitCode::FAILURE;
    };
    match run(scenario, &url).await {
        Ok(()) => {
            eprintln!("askgate-conformance-client: {} done", scenario.name());
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!(
                "askgate-conformance-client: {} failed: {failure}",
                scenario.name()
            );
            ExitCode::FAILURE
        }
    }
}
