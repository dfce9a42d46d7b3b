//! The tools of the suite's `tasks-*` scenarios (the tasks extension),
//! their works kept durable by askgate-mcp's [`Tasks`].

use std::time::Duration;

use askgate_core::Ask;
use askgate_mcp::{Request, Round, Rounds, Tasks};
use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Tool};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value as Json, json};

use crate::fixture::{argument, finish, form, given, schema, text, value};

/// Whether a tool runs as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Support {
    /// At once, never as a task.
    Never,
    /// As a task when the client can follow one, else synchronously.
    Optional,
    /// Only as a task.
    Required,
}

/// The tools of the tasks scenarios: each one's name, description, input
/// schema, and how it may run.
fn table() -> [(&'static str, &'static str, Json, Support); 7] {
    let empty = || json!({"type": "object", "properties": {}});
    [
        (
            "greet",
            "Greets by name, at once (never a task)",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            Support::Never,
        ),
        (
            "slow_compute",
            "Sleeps the seconds given, then answers (a task when the client can follow one)",
            json!({"type": "object", "properties": {
                "seconds": {"type": "integer", "minimum": 0}, "label": {"type": "string"}}}),
            Support::Optional,
        ),
        (
            "failing_job",
            "Always ends with a tool error (a task only)",
            empty(),
            Support::Required,
        ),
        (
            "protocol_error_job",
            "Always ends with a protocol error",
            empty(),
            Support::Optional,
        ),
        (
            "confirm_delete",
            "Asks a person to confirm deleting a file",
            json!({"type": "object", "properties": {"filename": {"type": "string"}}}),
            Support::Optional,
        ),
        (
            "multi_input",
            "Asks a person two things at once",
            empty(),
            Support::Optional,
        ),
        (
            "test_tool_with_task",
            "Asks a name over round trips, then runs as a task",
            empty(),
            Support::Required,
        ),
    ]
}

/// The tools of the tasks scenarios, for `tools/list`.
pub(crate) fn tools() -> Vec<Tool> {
    table()
        .into_iter()
        .map(|(name, description, json, _)| Tool::new(name, description, schema(json)))
        .collect()
}

/// How `tool` may run, if it is one of the task tools.
fn support(tool: &str) -> Option<Support> {
    table()
        .into_iter()
        .find(|(name, ..)| *name == tool)
        .map(|(.., support)| support)
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
            let name = argument(params.arguments.as_ref(), "name").unwrap_or_default();
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(text(format!("Hello, {name}! (from a task)")))
        })
}

/// Whether `tool` is one of the task tools.
pub(crate) fn is_task_tool(tool: &str) -> bool {
    support(tool).is_some()
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
        let who = argument(params.arguments.as_ref(), "name").unwrap_or("stranger");
        return Ok(text(format!("Hello, {who}!")));
    }
    let support = support(&name).unwrap_or(Support::Optional);
    let as_task = Tasks::client_supports(cx);
    if name == "test_tool_with_task" {
        if !as_task {
            return Err(Tasks::required());
        }
        // Round trips first, then the task: the name asked on the way is
        // the task's argument.
        let round = rounds.begin(cx, Request::tool(&params)).await?;
        return finish(round, async |round| {
            let outcome = given(round.ask("user_name", name_form()?).await?)?;
            let mut arguments = Map::new();
            arguments.insert(
                "name".into(),
                json!(value(&outcome, "name").unwrap_or_default()),
            );
            Ok(tasks.start(cx, &name, arguments).await?.into())
        })
        .await;
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
    let label = argument(params.arguments.as_ref(), "label").unwrap_or("compute");
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    text(format!("{label}: done after {seconds}s"))
}

async fn confirm_delete(
    round: Round,
    params: CallToolRequestParams,
) -> Result<CallToolResponse, ErrorData> {
    let filename = argument(params.arguments.as_ref(), "filename").unwrap_or("the file");
    finish(round, async |round| {
        let ask = form(json!({
            "message": format!("Delete {filename}?"),
            "fields": [{"id": "confirm", "title": "Delete it", "type": "boolean"}]
        }))?;
        let outcome = given(round.ask("confirm", ask).await?)?;
        Ok(match value(&outcome, "confirm").as_deref() {
            Some("true") => text(format!("Deleted {filename}")),
            _ => text(format!("Kept {filename}")),
        })
    })
    .await
}

/// Two asks at once, each a name and a confirmation (the suite answers
/// each with both; an answer with a property its form does not ask for
/// would be refused).
async fn multi_input(
    round: Round,
    _params: CallToolRequestParams,
) -> Result<CallToolResponse, ErrorData> {
    finish(round, async |round| {
        let first = round
            .ask("first", name_and_confirm("What is your name?")?)
            .await?;
        let friend = name_and_confirm("What is your friend's name?")?;
        let second = round.ask("second", friend).await?;
        // Both are asked before the round halts: one round asks the two.
        let (first, second) = given(first.zip(second))?;
        Ok(text(format!(
            "{} and {} are friends",
            value(&first, "name").unwrap_or_default(),
            value(&second, "name").unwrap_or_default()
        )))
    })
    .await
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
