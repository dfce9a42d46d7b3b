//! A complete MCP server on stdio whose one tool asks a person a typed form
//! derived from a Rust struct, and reads the answer back as that struct.
//!
//! ```text
//! cargo run -p askgate-mcp --example typed_ask
//! ```
//!
//! Point an MCP client that shows forms (it declares the `elicitation`
//! capability) at that command and call `schedule_deploy`: the person is
//! asked which environment, when (a local time in Paris), whom to notify and
//! why; a wrong answer is asked again with the reason; a decline or a cancel
//! comes back as an outcome. stdout carries MCP only; the server logs to
//! stderr, and never the answers.

use std::sync::Arc;

use askgate_core::{Ask, Outcome};
use askgate_mcp::{AskChoice, AskForm, AskOptions, ask_person};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};

/// Where to deploy: a single choice. Values are `staging` and `prod`.
#[derive(Debug, Clone, Copy, PartialEq, AskChoice)]
enum Environment {
    Staging,
    #[ask(label = "Production", hotkey = 'p')]
    Prod,
}

/// Whom to tell: a `Vec` of it is a multiple choice.
#[derive(Debug, Clone, Copy, PartialEq, AskChoice)]
enum Channel {
    Slack,
    Email,
    #[ask(label = "PagerDuty")]
    PagerDuty,
}

/// What the person is asked, and what the tool gets back.
#[derive(Debug, AskForm)]
#[ask(message = "Schedule the billing deploy")]
struct Deploy {
    #[ask(default = Environment::Staging)]
    environment: Environment,
    /// An instant: a local time is read in Paris, and read back there.
    #[ask(
        title = "When",
        description = "A date and time, such as 2026-07-01T09:30.",
        zone = "Europe/Paris"
    )]
    when: jiff::ZonedDateTime,
    #[ask(description = "Who hears about it; nobody is fine.")]
    notify: Vec<Channel>,
    /// Optional: `None` when left empty.
    #[ask(max_length = 200)]
    reason: Option<String>,
}

const TOOL: &str = "schedule_deploy";

/// The server: one tool, no state.
struct DeployServer;

impl ServerHandler for DeployServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("askgate-typed-ask", "0.1.0"))
            .with_instructions(format!(
                "Call `{TOOL}` to have a person schedule the billing deploy."
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The tool takes no arguments: everything is asked of the person.
        let mut schema = JsonObject::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), JsonObject::new().into());
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            TOOL,
            "Ask a person where, when and with whom to deploy billing, then schedule it.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params(
                format!("no tool named {:?}; this server has {TOOL:?}", request.name),
                None,
            ));
        }
        // A derived form is checked here (a zone that does not exist, a
        // default out of bounds); a test doing the same keeps that from a release.
        let ask = Ask::new(Deploy::form())
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let outcome = match ask_person(&cx, ask, &AskOptions::default()).await {
            Ok(outcome) => outcome,
            Err(unanswered) => {
                eprintln!("{TOOL}: nobody could be asked: {unanswered}");
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "Nobody could be asked, so nothing is scheduled: {unanswered}"
                ))])
                .into());
            }
        };
        let text = match outcome {
            Outcome::Accepted { values } => {
                let deploy = Deploy::from_values(&values)
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                eprintln!("{TOOL}: accepted");
                scheduled(&deploy)
            }
            Outcome::Declined => {
                eprintln!("{TOOL}: declined");
                "The person declined: nothing is scheduled.".to_owned()
            }
            Outcome::Cancelled => {
                eprintln!("{TOOL}: cancelled");
                "The person dismissed the form: nothing is scheduled.".to_owned()
            }
            Outcome::GaveUp { attempts, .. } => {
                eprintln!("{TOOL}: gave up after {attempts} attempts");
                format!(
                    "The answers were still not valid after {attempts} attempts: nothing is scheduled."
                )
            }
            // Outcomes a later askgate adds: nothing was agreed to.
            _ => {
                eprintln!("{TOOL}: another outcome");
                "Nothing is scheduled.".to_owned()
            }
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// What the tool tells the model it scheduled.
fn scheduled(deploy: &Deploy) -> String {
    let notify = if deploy.notify.is_empty() {
        "nobody".to_owned()
    } else {
        deploy
            .notify
            .iter()
            .map(|channel| channel.value())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let reason = deploy.reason.as_deref().unwrap_or("(none given)");
    format!(
        "Scheduled billing on {} at {} (UTC {}); notifying {notify}; reason: {reason}",
        deploy.environment.value(),
        deploy.when,
        deploy.when.timestamp(),
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    eprintln!("typed_ask: serving MCP on stdio");
    let server = DeployServer.serve(rmcp::transport::stdio()).await?;
    server.waiting().await?;
    Ok(())
}
