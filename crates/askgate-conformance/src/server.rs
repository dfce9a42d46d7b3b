//! The fixture server: every tool and prompt the suite's server scenarios
//! call, each asking through askgate-mcp's [`Round`] — the same handler
//! code answers a 2025-11-25 session (a request sent, an answer awaited)
//! and a 2026-07-28 client (input requests returned, sealed state checked
//! on the retry).

// Sampling and roots are deprecated in rmcp (SEP-2577); the suite still
// exercises both.
#![allow(deprecated)]

use askgate_core::{Action, Ask, Outcome, Response, Revision, Step};
use askgate_mcp::input::InputKind;
use askgate_mcp::{Request, Round, RoundError, Rounds, Tasks};

use crate::fixture::{Halt, argument, finish, form, given, schema, text, unknown, value};
use crate::task_fixtures;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CreateMessageRequestParams,
    ElicitRequestParams, ElicitationAction, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, GetTaskParams, GetTaskResult, ListPromptsResult, ListToolsResult,
    PaginatedRequestParams, Prompt, PromptMessage, Role, SamplingMessage, ServerCapabilities,
    ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value as Json, json};

/// The fixture server's handler.
#[derive(Debug, Clone)]
pub struct Fixtures {
    rounds: Rounds,
    tasks: Tasks,
}

impl Fixtures {
    /// Fixtures asking through `rounds`, their tasks kept in its store.
    pub fn new(rounds: Rounds) -> Fixtures {
        let tasks = task_fixtures::register(rounds.clone());
        Fixtures { rounds, tasks }
    }

    /// Fixtures sharing `tasks` (one per server, however many sessions).
    pub fn with_tasks(rounds: Rounds, tasks: Tasks) -> Fixtures {
        Fixtures { rounds, tasks }
    }

    /// The task works of the fixtures, registered once per server.
    pub fn tasks(rounds: Rounds) -> Tasks {
        task_fixtures::register(rounds)
    }
}

/// The tools asking through a round, but `test_elicitation` (which takes
/// an argument): each with its description.
const ROUND_TOOLS: [(&str, &str); 10] = [
    (
        "test_elicitation_sep1034_defaults",
        "Asks a form whose every field has a default (SEP-1034)",
    ),
    (
        "test_elicitation_sep1330_enums",
        "Asks every kind of enum field (SEP-1330)",
    ),
    (
        "test_input_required_result_elicitation",
        "Asks the person's name",
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's model a question",
    ),
    (
        "test_input_required_result_list_roots",
        "Asks for the client's roots",
    ),
    (
        "test_input_required_result_request_state",
        "Asks a confirmation, carrying state across the round trip",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks a person, the model and the roots at once",
    ),
    (
        "test_input_required_result_multi_round",
        "Asks two questions, one round each",
    ),
    (
        "test_input_required_result_tampered_state",
        "Asks a confirmation; refuses altered state",
    ),
    (
        "test_input_required_result_capabilities",
        "Asks only what the client declared it can answer",
    ),
];

/// The tools, each with its input schema.
fn tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    let mut tools = vec![tool(
        "test_elicitation",
        "Asks the person the message given, for a username and an email",
        json!({"type": "object", "properties": {"message": {"type": "string", "description": "What to ask"}},
               "required": ["message"]}),
    )];
    for (name, description) in ROUND_TOOLS {
        tools.push(tool(name, description, empty.clone()));
    }
    tools.extend(task_fixtures::tools());
    tools
}

fn tool(name: &'static str, description: &'static str, json: Json) -> Tool {
    Tool::new(name, description, schema(json))
}

/// How an outcome reads in a tool result: the action, and the settled
/// values of an accepted answer.
fn describe(outcome: &Outcome) -> (String, Json) {
    match outcome {
        Outcome::Accepted { values } => ("accept".into(), Json::Object(values.to_json())),
        Outcome::Declined => ("decline".into(), json!({})),
        Outcome::Cancelled => ("cancel".into(), json!({})),
        Outcome::GaveUp { attempts, .. } => {
            (format!("gave up after {attempts} attempts"), json!({}))
        }
        _ => ("unknown".into(), json!({})),
    }
}

/// A tool result that says how the outcome reads after `what`.
fn described(what: &str, outcome: &Outcome) -> CallToolResponse {
    let (action, content) = describe(outcome);
    text(format!("{what}: action={action}, content={content}"))
}

fn name_form(message: &str) -> Result<Ask, ErrorData> {
    form(json!({
        "message": message,
        "fields": [{"id": "name", "title": "Name", "type": "text"}]
    }))
}

fn confirm_form() -> Result<Ask, ErrorData> {
    form(json!({
        "message": "Please confirm",
        "fields": [{"id": "ok", "title": "OK", "type": "boolean"}]
    }))
}

/// `test_elicitation`'s form: the message given, for a username and an
/// email.
fn elicitation_form(params: &CallToolRequestParams) -> Result<Ask, ErrorData> {
    let message = argument(params.arguments.as_ref(), "message").ok_or_else(|| {
        ErrorData::invalid_params("test_elicitation needs a string argument \"message\"", None)
    })?;
    form(json!({
        "message": message,
        "fields": [
            {"id": "username", "title": "Username", "description": "User's response", "type": "text"},
            {"id": "email", "title": "Email", "description": "User's email address", "type": "text", "format": "email"}
        ]
    }))
}

/// SEP-1034's form: every field has a default.
fn defaults_form() -> Result<Ask, ErrorData> {
    form(json!({
        "message": "Please review and update the form fields with defaults",
        "fields": [
            {"id": "name", "title": "Name", "description": "User name", "type": "text", "default": "John Doe", "required": false},
            {"id": "age", "title": "Age", "description": "User age", "type": "integer", "default": 30, "required": false},
            {"id": "score", "title": "Score", "description": "User score", "type": "number", "default": 95.5, "required": false},
            {"id": "status", "title": "Status", "description": "User status", "type": "choice", "default": "active", "required": false,
             "options": [{"value": "active", "label": "active"}, {"value": "inactive", "label": "inactive"},
                         {"value": "pending", "label": "pending"}]},
            {"id": "verified", "title": "Verified", "description": "Verification status", "type": "boolean", "default": true, "required": false}
        ]
    }))
}

/// SEP-1330's form: every kind of enum field.
fn enums_form() -> Result<Ask, ErrorData> {
    let untitled = |values: &[&str]| -> Json {
        values
            .iter()
            .map(|v| json!({"value": v, "label": v}))
            .collect()
    };
    let titled = |pairs: &[(&str, &str)]| -> Json {
        pairs
            .iter()
            .map(|(v, l)| json!({"value": v, "label": l}))
            .collect()
    };
    form(json!({
        "message": "Please select options from the enum fields",
        "fields": [
            {"id": "untitledSingle", "title": "Untitled single", "description": "Select one option",
             "type": "choice", "required": false, "options": untitled(&["option1", "option2", "option3"])},
            {"id": "titledSingle", "title": "Titled single", "description": "Select one option with titles",
             "type": "choice", "required": false,
             "options": titled(&[("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")])},
            {"id": "legacyEnum", "title": "Legacy", "description": "Select one option (legacy)",
             "type": "choice", "required": false,
             "options": titled(&[("opt1", "Option One"), ("opt2", "Option Two"), ("opt3", "Option Three")])},
            {"id": "untitledMulti", "title": "Untitled multi", "description": "Select multiple options",
             "type": "choice", "multiple": true, "min_items": 1, "max_items": 3, "required": false,
             "options": untitled(&["option1", "option2", "option3"])},
            {"id": "titledMulti", "title": "Titled multi", "description": "Select multiple options with titles",
             "type": "choice", "multiple": true, "min_items": 1, "max_items": 3, "required": false,
             "options": titled(&[("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")])}
        ]
    }))
}

/// A round's one form under `key`, its outcome described after `what`.
async fn asked(
    round: &mut Round,
    key: &str,
    ask: Ask,
    what: &str,
) -> Result<CallToolResponse, Halt> {
    let outcome = given(round.ask(key, ask).await?)?;
    Ok(described(what, &outcome))
}

async fn irr_elicitation(round: &mut Round) -> Result<CallToolResponse, Halt> {
    // The suite answers this tool before asking (ignore-extra-params):
    // a name is harmless to take unsealed.
    round.accept_unsealed(true);
    let outcome = given(
        round
            .ask("user_name", name_form("What is your name?")?)
            .await?,
    )?;
    Ok(match value(&outcome, "name") {
        Some(name) => text(format!("Hello, {name}!")),
        None => text(format!("No name given: {}", describe(&outcome).0)),
    })
}

async fn irr_sampling(round: &mut Round) -> Result<CallToolResponse, Halt> {
    let question = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text("What is the capital of France?")],
        100,
    );
    let answer = given(round.sample("capital_question", question).await?)?;
    let said = answer
        .message
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone());
    Ok(text(format!(
        "The model said: {}",
        said.unwrap_or_default()
    )))
}

async fn irr_roots(round: &mut Round) -> Result<CallToolResponse, Halt> {
    let roots = given(round.roots("client_roots").await?)?;
    let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(text(format!("Roots: {}", uris.join(", "))))
}

/// A confirmation whose state is sealed; the retry must bring it back
/// intact (`request_state`, `tampered_state`).
async fn irr_confirm(round: &mut Round) -> Result<CallToolResponse, Halt> {
    if round.carried("progress").is_none() {
        round.carry("progress", json!("state-ok"));
    }
    let outcome = given(round.ask("confirm", confirm_form()?).await?)?;
    let progress = round
        .carried("progress")
        .and_then(Json::as_str)
        .unwrap_or("state-missing");
    Ok(text(format!(
        "Confirmed: action={}, {progress}",
        describe(&outcome).0
    )))
}

async fn irr_multiple(round: &mut Round) -> Result<CallToolResponse, Halt> {
    let name = round
        .ask("user_name", name_form("What is your name?")?)
        .await?;
    let greeting = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text("Generate a greeting")],
        50,
    );
    let greeting = round.sample("greeting", greeting).await?;
    let roots = round.roots("client_roots").await?;
    // Every ask is queued before the round halts: one round asks all three.
    let (Some(name), Some(_greeting), Some(roots)) = (name, greeting, roots) else {
        return Err(Halt::Pending);
    };
    Ok(text(format!(
        "Got all three: name {}, a greeting, {} roots",
        value(&name, "name").unwrap_or_default(),
        roots.roots.len()
    )))
}

async fn irr_multi_round(round: &mut Round) -> Result<CallToolResponse, Halt> {
    let first = given(
        round
            .ask("step1", name_form("Step 1: What is your name?")?)
            .await?,
    )?;
    let color = form(json!({
        "message": "Step 2: What is your favorite color?",
        "fields": [{"id": "color", "title": "Color", "type": "text"}]
    }))?;
    let second = given(round.ask("step2", color).await?)?;
    Ok(text(format!(
        "{} likes {}",
        value(&first, "name").unwrap_or_default(),
        value(&second, "color").unwrap_or_default()
    )))
}

async fn irr_capabilities(round: &mut Round) -> Result<CallToolResponse, Halt> {
    if round.can(InputKind::Elicitation) {
        let outcome = given(
            round
                .ask("user_name", name_form("What is your name?")?)
                .await?,
        )?;
        return Ok(text(format!("Asked the person: {}", describe(&outcome).0)));
    }
    if round.can(InputKind::Sampling) {
        let request =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Sample request")], 50);
        given(round.sample("sample", request).await?)?;
        return Ok(text("Asked the model"));
    }
    Err(RoundError::Missing(InputKind::Elicitation).into())
}

fn unknown_tool(name: &str) -> ErrorData {
    unknown("tool", name, "tools/list names the fixtures")
}

impl Fixtures {
    /// A fixture tool's call: its form built first (a call without its
    /// argument is refused before any round begins), then its work in the
    /// call's round.
    async fn call_fixture(
        &self,
        params: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let form = match &*params.name {
            "test_elicitation" => Some(("response", elicitation_form(params)?, "User response")),
            "test_elicitation_sep1034_defaults" => {
                Some(("defaults", defaults_form()?, "Elicitation completed"))
            }
            "test_elicitation_sep1330_enums" => {
                let outcome = ask_with_legacy_enum(cx, enums_form()?, "legacyEnum").await?;
                return Ok(described("Elicitation completed", &outcome));
            }
            _ => None,
        };
        let round = self.rounds.begin(cx, Request::tool(params)).await?;
        finish(round, async |round| match (&*params.name, form) {
            (_, Some((key, ask, what))) => asked(round, key, ask, what).await,
            ("test_input_required_result_elicitation", _) => irr_elicitation(round).await,
            ("test_input_required_result_sampling", _) => irr_sampling(round).await,
            ("test_input_required_result_list_roots", _) => irr_roots(round).await,
            ("test_input_required_result_multiple_inputs", _) => irr_multiple(round).await,
            ("test_input_required_result_multi_round", _) => irr_multi_round(round).await,
            ("test_input_required_result_capabilities", _) => irr_capabilities(round).await,
            (
                "test_input_required_result_request_state"
                | "test_input_required_result_tampered_state",
                _,
            ) => irr_confirm(round).await,
            (other, _) => Err(unknown_tool(other).into()),
        })
        .await
    }
}

impl ServerHandler for Fixtures {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_tasks()
                .build(),
        )
        .with_instructions("askgate conformance fixtures")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if task_fixtures::is_task_tool(&params.name) {
            return task_fixtures::call(&self.tasks, &self.rounds, params, &cx).await;
        }
        let name = &*params.name;
        if name != "test_elicitation" && !ROUND_TOOLS.iter().any(|(tool, _)| *tool == name) {
            return Err(unknown_tool(name));
        }
        self.call_fixture(&params, &cx).await
    }

    async fn get_task(
        &self,
        params: GetTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get(&cx, params).await
    }

    async fn update_task(
        &self,
        params: UpdateTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(&cx, params).await
    }

    async fn cancel_task(
        &self,
        params: CancelTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&cx, params).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "test_input_required_result_prompt",
            Some("A prompt that asks the person for its context first"),
            None,
        )]))
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if params.name != "test_input_required_result_prompt" {
            return Err(unknown(
                "prompt",
                &params.name,
                "prompts/list names the fixtures",
            ));
        }
        let round = self.rounds.begin(&cx, Request::prompt(&params)).await?;
        finish(round, async |round| {
            let ask = form(json!({
                "message": "What context should the prompt use?",
                "fields": [{"id": "context", "title": "Context", "type": "text"}]
            }))?;
            let outcome = given(round.ask("user_context", ask).await?)?;
            let context = value(&outcome, "context").unwrap_or_else(|| "(none given)".into());
            Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                Role::User,
                format!("Use this context: {context}"),
            )])
            .into())
        })
        .await
    }
}

/// SEP-1330 also checks the legacy `enum` + `enumNames` shape, which
/// askgate writes only for 2025-06-18 clients (2025-11-25 deprecates it):
/// this asks the form as 2025-11-25 maps it, except `legacy`, which is
/// mapped as a 2025-06-18 client would see it. The answer is settled by
/// the same ask.
async fn ask_with_legacy_enum(
    cx: &RequestContext<RoleServer>,
    ask: Ask,
    legacy: &str,
) -> Result<Outcome, ErrorData> {
    let unsendable = |e: String| ErrorData::internal_error(format!("fixture form: {e}"), None);
    let mut params = ask
        .request(Revision::V2025_11_25)
        .map_err(|e| unsendable(e.to_string()))?;
    let old = ask
        .request(Revision::V2025_06_18)
        .map_err(|e| unsendable(e.to_string()))?;
    if let (Some(slot), Some(property)) = (
        params
            .requested_schema
            .properties
            .iter_mut()
            .find(|slot| slot.name == legacy),
        old.requested_schema.property(legacy),
    ) {
        slot.schema = property.clone();
    }
    let request: ElicitRequestParams =
        serde_json::from_value(params.to_json()).map_err(|e| unsendable(e.to_string()))?;
    let result = cx
        .peer
        .create_elicitation(request)
        .await
        .map_err(|e| ErrorData::internal_error(format!("elicitation failed: {e}"), None))?;
    let response = Response {
        action: match result.action {
            ElicitationAction::Accept => Action::Accept,
            ElicitationAction::Decline => Action::Decline,
            _ => Action::Cancel,
        },
        content: result.content.and_then(|c| c.as_object().cloned()),
    };
    match ask.settle(Revision::V2025_11_25, &response) {
        Step::Settled(outcome) => Ok(outcome),
        Step::ReAsk(_) => Err(ErrorData::invalid_params(
            "the SEP-1330 answer did not settle the form",
            None,
        )),
    }
}
