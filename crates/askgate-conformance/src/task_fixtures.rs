//! The tools of the suite's `tasks-*` scenarios (the tasks extension),
//! their works kept durable by askgate-mcp's [`Tasks`].

use std::time::Duration;

use askgate_core::Ask;
use askgate_mcp::{Request, Round, Rounds, Tasks};
use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Tool};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value as Json, json};

use crate::fixture::{form, text, value};

/// The task tools' names and how each may run.
const TASK_TOOLS: &[(&str, Support)] = &[
    ("slow_compute", Support::Optional),
    ("failing_job", Support::Required),
    ("protocol_error_job", Support::Optional),
    ("confirm_delete", Support::Optional),
    ("multi_input", Support::Optional),
    ("test_tool_with_task", Support::Required),
];

/// Whether a tool runs as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Support {
    /// As a task when the client can follow one, else synchronously.
    Optional,
    /// Only as a task.
    Required,
}

/// The tools of the tasks scenarios, for `tools/list`.
pub(crate) fn tools() -> Vec<Tool> {
    let schema = |json: Json| match json {
        Json::Object(map) => std::sync::Arc::new(map),
        _ => std::sync::Arc::new(Map::new()),
    };
    vec![
        Tool::new(
            "greet",
            "Greets by name, at once (never a task)",
            schema(
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            ),
        ),
        Tool::new(
            "slow_compute",
            "Sleeps the seconds given, then answers (a task when the client can follow one)",
            schema(json!({"type": "object", "properties": {
                "seconds": {"type": "integer", "minimum": 0}, "label": {"type": "string"}}})),
        ),
        Tool::new(
            "failing_job",
            "Always ends with a tool error (a task only)",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "protocol_error_job",
            "Always ends with a protocol error",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "confirm_delete",
            "Asks a person to confirm deleting a file",
            schema(json!({"type": "object", "properties": {"filename": {"type": "string"}}})),
        ),
        Tool::new(
            "multi_input",
            "Asks a person two things at once",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "test_tool_with_task",
            "Asks a name over round trips, then runs as a task",
            schema(json!({"type": "object", "properties": {}})),
        ),
    ]
}

/// The task works, registered with `tasks`.
pub(crate) fn register(rounds: Rounds) -> Tasks {
    Tasks::new(rounds)
        .with_work("slow_compute", |_round, params| async move {
            Ok(slow_compute(&params).await)
        })
        .with_work("failing_job", |_round, _params| async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(CallToolResult::error(vec![ContentBlock::text(
                "the job failed, as it always does",
            )])
            .into())
        })
        .with_work("protocol_error_job", |_round, _params| async move {
            Err(ErrorData::internal_error(
                "protocol_error_job always ends with a protocol error",
                None,
            ))
        })
        .with_work("confirm_delete", confirm_delete)
        .with_work("multi_input", multi_input)
        .with_work("test_tool_with_task", |_round, params| async move {
            let name = argument(&params, "name").unwrap_or_default();
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(text(format!("Hello, {name}! (from a task)")))
        })
}

/// Whether `tool` is one of the task tools.
pub(crate) fn is_task_tool(tool: &str) -> bool {
    tool == "greet" || TASK_TOOLS.iter().any(|(name, _)| *name == tool)
}

/// Answer a call of a task tool: at once, as a task, or `-32021`.
pub(crate) async fn call(
    tasks: &Tasks,
    rounds: &Rounds,
    params: CallToolRequestParams,
    cx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let name = params.name.to_string();
    if name == "greet" {
        let who = argument(&params, "name").unwrap_or_else(|| "stranger".into());
        return Ok(text(format!("Hello, {who}!")));
    }
    let support = TASK_TOOLS
        .iter()
        .find(|(tool, _)| *tool == name)
        .map_or(Support::Optional, |(_, support)| *support);
    let as_task = Tasks::client_supports(cx);
    if name == "test_tool_with_task" {
        if !as_task {
            return Err(Tasks::required());
        }
        // Round trips first, then the task: the name asked on the way is
        // the task's argument.
        let mut round = rounds.begin(cx, Request::tool(&params)).await?;
        let Some(outcome) = round.ask("user_name", name_form()?).await? else {
            return Ok(round.input_required()?.into());
        };
        let mut arguments = Map::new();
        arguments.insert(
            "name".into(),
            json!(value(&outcome, "name").unwrap_or_default()),
        );
        return Ok(tasks.start(cx, &name, arguments).await?.into());
    }
    if as_task {
        let arguments = params.arguments.clone().unwrap_or_default();
        return Ok(tasks.start(cx, &name, arguments).await?.into());
    }
    match (support, name.as_str()) {
        (Support::Required, _) => Err(Tasks::required()),
        (_, "slow_compute") => Ok(slow_compute(&params).await),
        (_, "protocol_error_job") => Err(ErrorData::internal_error(
            "protocol_error_job always ends with a protocol error",
            None,
        )),
        // Asking tools run their work here, through a round of this call.
        (_, "confirm_delete") => {
            let round = rounds.begin(cx, Request::tool(&params)).await?;
            confirm_delete(round, params).await
        }
        (_, "multi_input") => {
            let round = rounds.begin(cx, Request::tool(&params)).await?;
            multi_input(round, params).await
        }
        (_, other) => Err(ErrorData::invalid_params(
            format!("unknown tool {other:?}"),
            None,
        )),
    }
}

async fn slow_compute(params: &CallToolRequestParams) -> CallToolResponse {
    let seconds = params
        .arguments
        .as_ref()
        .and_then(|a| a.get("seconds"))
        .and_then(Json::as_u64)
        .unwrap_or(0)
        .min(600);
    let label = argument(params, "label").unwrap_or_else(|| "compute".into());
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    text(format!("{label}: done after {seconds}s"))
}

async fn confirm_delete(
    mut round: Round,
    params: CallToolRequestParams,
) -> Result<CallToolResponse, ErrorData> {
    let filename = argument(&params, "filename").unwrap_or_else(|| "the file".into());
    let ask = form(json!({
        "message": format!("Delete {filename}?"),
        "fields": [{"id": "confirm", "title": "Delete it", "type": "boolean"}]
    }))?;
    let Some(outcome) = round.ask("confirm", ask).await? else {
        return Ok(round.input_required()?.into());
    };
    Ok(match value(&outcome, "confirm").as_deref() {
        Some("true") => text(format!("Deleted {filename}")),
        _ => text(format!("Kept {filename}")),
    })
}

/// Two asks at once, each a name and a confirmation (the suite answers
/// each with both; an answer with a property its form does not ask for
/// would be refused).
async fn multi_input(
    mut round: Round,
    _params: CallToolRequestParams,
) -> Result<CallToolResponse, ErrorData> {
    let first = round
        .ask("first", name_and_confirm("What is your name?")?)
        .await?;
    let friend = name_and_confirm("What is your friend's name?")?;
    let second = round.ask("second", friend).await?;
    let (Some(first), Some(second)) = (first, second) else {
        return Ok(round.input_required()?.into());
    };
    Ok(text(format!(
        "{} and {} are friends",
        value(&first, "name").unwrap_or_default(),
        value(&second, "name").unwrap_or_default()
    )))
}

/// A name, and an optional confirmation.
fn name_and_confirm(message: &str) -> Result<Ask, ErrorData> {
    form(json!({
        "message": message,
        "fields": [{"id": "name", "title": "Name", "type": "text"},
                   {"id": "confirm", "title": "Confirm", "type": "boolean", "required": false}]
    }))
}

fn name_form() -> Result<Ask, ErrorData> {
    form(json!({
        "message": "What is your name?",
        "fields": [{"id": "name", "title": "Name", "type": "text"}]
    }))
}

fn argument(params: &CallToolRequestParams, name: &str) -> Option<String> {
    params
        .arguments
        .as_ref()
        .and_then(|a| a.get(name))
        .and_then(Json::as_str)
        .map(str::to_owned)
}
