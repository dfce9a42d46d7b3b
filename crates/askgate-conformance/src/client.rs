//! The conformance fixture client: askgate-mcp's client handler answering
//! the suite's mock servers, one scenario per run.
//!
//! - `elicitation-sep1034-client-defaults` (2025-11-25, `initialize`): the
//!   mock's tool sends a form whose five properties all have defaults; the
//!   [`Policy`] answer accepts with every one filled in.
//! - `sep-2322-client-request-state` (2026-07-28, discovery): every listed
//!   tool is called, its `InputRequiredResult` rounds answered by policy,
//!   `requestState` echoed as sent and left out when none came.

use std::fmt;

use askgate_mcp::client::{Answerer, AskgateClient, Policy, call_tool_answering};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;

/// The client scenarios this fixture plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scenario {
    /// `elicitation-sep1034-client-defaults`.
    ElicitationDefaults,
    /// `sep-2322-client-request-state`.
    RequestState,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 2] = [Scenario::ElicitationDefaults, Scenario::RequestState];

    /// The suite's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::ElicitationDefaults => "elicitation-sep1034-client-defaults",
            Scenario::RequestState => "sep-2322-client-request-state",
        }
    }

    /// The scenario the suite names `name`.
    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Why a scenario run failed (never an answer value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failure {}

/// The tool the SEP-1034 mock asks from.
const DEFAULTS_TOOL: &str = "test_client_elicitation_defaults";

/// Play `scenario` against the mock server at `url`.
///
/// # Errors
/// [`Failure`] when connecting, listing or a call fails.
pub async fn run(scenario: Scenario, url: &str) -> Result<(), Failure> {
    let client = AskgateClient::new(Answerer::Policy(Policy::accept_defaults()))
        .with_name("askgate-conformance-client", env!("CARGO_PKG_VERSION"));
    let transport = StreamableHttpClientTransport::from_uri(url);
    match scenario {
        Scenario::ElicitationDefaults => {
            let client = client
                .serve(transport)
                .await
                .map_err(|e| Failure(format!("initialize: {e}")))?;
            let outcome = call_tool(&client, DEFAULTS_TOOL).await;
            let _ = client.cancel().await;
            outcome
        }
        Scenario::RequestState => {
            let client = client
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
                .map_err(|e| Failure(format!("server/discover: {e}")))?;
            let outcome = call_every_tool(&client).await;
            let _ = client.cancel().await;
            outcome
        }
    }
}

async fn call_tool(
    client: &RunningService<RoleClient, AskgateClient>,
    name: &str,
) -> Result<(), Failure> {
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| Failure(format!("tools/list: {e}")))?;
    if !tools.iter().any(|tool| tool.name == name) {
        return Err(Failure(format!("the server does not list {name}")));
    }
    call(client, name).await
}

/// Call every listed tool, each on its own; the first failure is reported
/// after all were tried.
async fn call_every_tool(
    client: &RunningService<RoleClient, AskgateClient>,
) -> Result<(), Failure> {
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| Failure(format!("tools/list: {e}")))?;
    let mut first_failure = None;
    for tool in &tools {
        if let Err(failure) = call(client, &tool.name).await {
            eprintln!("askgate-conformance-client: {failure}");
            first_failure.get_or_insert(failure);
        }
    }
    first_failure.map_or(Ok(()), Err)
}

async fn call(
    client: &RunningService<RoleClient, AskgateClient>,
    name: &str,
) -> Result<(), Failure> {
    let result = call_tool_answering(client, CallToolRequestParams::new(name.to_owned()))
        .await
        .map_err(|e| Failure(format!("tools/call {name}: {e}")))?;
    // The result's text may hold the answers: only its shape is reported.
    eprintln!(
        "askgate-conformance-client: called {name}: complete, {} content block(s){}",
        result.content.len(),
        if result.is_error == Some(true) {
            ", a tool error"
        } else {
            ""
        }
    );
    Ok(())
}
