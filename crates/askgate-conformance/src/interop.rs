//! The interop fixture: one tool, `deploy`, that asks a person through
//! askgate-mcp's [`Round`](askgate_mcp::Round) whatever revision the client
//! speaks. The clients of other SDKs in `interop/` (Python `mcp`, TypeScript
//! `@modelcontextprotocol/sdk`) drive it through accept, decline, cancel, a
//! re-ask and the multi round-trip model; `scripts/interop.sh` runs them.
//!
//! The tool's result is one JSON text: the settled [`Outcome`] as askgate
//! serializes it (`{"outcome": "accepted", "values": {id: {"value",
//! "source"}}}`, `declined`, `cancelled`, or `gave_up` with the problems),
//! plus the revision the client spoke and how the person was asked
//! (`elicitation/create` sent and awaited, or `input_required` returned).

use askgate_core::{Ask, Form, Outcome};
use askgate_mcp::{Request, Rounds};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value as Json, json};

use crate::fixture::{argument, schema as schema_of, unknown};

/// The name of the one tool.
pub const TOOL: &str = "deploy";

/// The interop server's handler: the `deploy` tool.
#[derive(Debug, Clone)]
pub struct Deploy {
    rounds: Rounds,
}

impl Deploy {
    /// A handler asking through `rounds`.
    pub fn new(rounds: Rounds) -> Deploy {
        Deploy { rounds }
    }

    async fn deploy(
        &self,
        params: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let service = argument(params.arguments.as_ref(), "service")
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    "deploy needs a non-empty string argument \"service\"",
                    None,
                )
            })?;
        let ask = Ask::new(deploy_form(service)?)
            .map_err(|e| ErrorData::internal_error(format!("the deploy form: {e}"), None))?;
        let mut round = self.rounds.begin(cx, Request::tool(params)).await?;
        let revision = round.revision();
        let path = if round.is_multi_round_trip() {
            "input_required"
        } else {
            "elicitation/create"
        };
        let Some(outcome) = round.ask("deploy", ask).await? else {
            eprintln!("deploy: asking the person (input_required on {revision})");
            return Ok(round.input_required()?.into());
        };
        // Only the kind of outcome: never the values.
        eprintln!("deploy: {} on {revision}", kind(&outcome));
        let mut result = match serde_json::to_value(&outcome) {
            Ok(Json::Object(map)) => map,
            _ => {
                return Err(ErrorData::internal_error(
                    "the outcome did not serialize as an object",
                    None,
                ));
            }
        };
        result.insert("revision".into(), json!(revision.as_str()));
        result.insert("path".into(), json!(path));
        Ok(
            CallToolResult::success(vec![ContentBlock::text(Json::Object(result).to_string())])
                .into(),
        )
    }
}

/// What the person is asked before `service` is deployed: the environment
/// (a choice with labels), the replicas (1 to 5, 2 by default) and a
/// confirmation.
fn deploy_form(service: &str) -> Result<Form, ErrorData> {
    serde_json::from_value(json!({
        "message": format!("Deploy {service}?"),
        "fields": [
            {"id": "environment", "title": "Environment", "type": "choice",
             "description": "Where to deploy",
             "options": [{"value": "staging", "label": "Staging"},
                         {"value": "production", "label": "Production"}]},
            {"id": "replicas", "title": "Replicas", "type": "integer",
             "description": "How many instances to run", "minimum": 1, "maximum": 5, "default": 2},
            {"id": "confirm", "title": "Deploy now", "type": "boolean",
             "description": "Start the deploy when you accept"}
        ]
    }))
    .map_err(|e| ErrorData::internal_error(format!("the deploy form: {e}"), None))
}

/// The kind of an outcome, for the log.
fn kind(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Accepted { .. } => "accepted",
        Outcome::Declined => "declined",
        Outcome::Cancelled => "cancelled",
        Outcome::GaveUp { .. } => "gave up",
        _ => "settled",
    }
}

impl ServerHandler for Deploy {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions("askgate interop fixture: the deploy tool asks a person first")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {"service": {"type": "string", "description": "The service to deploy"}},
            "required": ["service"]
        });
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            TOOL,
            "Deploys a service, after asking a person where, how many replicas, and to confirm",
            schema_of(schema),
        )]))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match params.name.as_ref() {
            TOOL => self.deploy(&params, &cx).await,
            other => Err(unknown("tool", other, format!("the only tool is {TOOL:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deploy_form_is_sound() {
        let form = deploy_form("billing").expect("the form parses");
        assert_eq!(form.message, "Deploy billing?");
        Ask::new(form).expect("the form checks");
    }
}
