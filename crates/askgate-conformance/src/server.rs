//! The fixture server: every tool, prompt and resource the suite's server
//! scenarios name. Those that ask the client something ask through
//! askgate-mcp's [`Round`] — the same handler code answers a 2025-11-25
//! session (a request sent, an answer awaited) and a 2026-07-28 client
//! (input requests returned, sealed state checked on the retry); the rest
//! live in [`crate::tool_fixtures`], [`crate::prompt_fixtures`] and
//! [`crate::resource_fixtures`].

// Sampling and roots are deprecated in rmcp (SEP-2577); the suite still
// exercises both.
#![allow(deprecated)]

use std::sync::Arc;

use askgate_mcp::{Request, Rounds, Tasks};

use crate::changes::{self, Changes};
use crate::fixture::{argument, finish, form, given, schema, text, unknown, value};
use crate::forms::{ask_with_legacy_enum, defaults_form, elicitation_form, enums_form};
use crate::logs::Logs;
use crate::resource_fixtures::{self, Subscriptions};
use crate::round_fixtures::{
    asked, described, irr_capabilities, irr_confirm, irr_elicitation, irr_multi_round,
    irr_multiple, irr_roots, irr_sampling, missing_capability, said,
};
use crate::streams::Sessions;
use crate::{prompt_fixtures, task_fixtures, tool_fixtures};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CreateMessageRequestParams, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, GetTaskParams, GetTaskResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, Role, SamplingMessage, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value as Json, json};

/// The fixture server's handler.
#[derive(Debug, Clone)]
pub struct Fixtures {
    rounds: Rounds,
    tasks: Tasks,
    logs: Logs,
    subscriptions: Subscriptions,
    /// The server's sessions, for `test_reconnection` to close its stream.
    sessions: Option<Arc<Sessions>>,
    changes: Changes,
}

impl Fixtures {
    /// Fixtures asking through `rounds`, their tasks kept in its store.
    pub fn new(rounds: Rounds) -> Fixtures {
        let tasks = task_fixtures::register(rounds.clone());
        Fixtures::with_tasks(rounds, tasks)
    }

    /// Fixtures sharing `tasks` (one per server, however many sessions).
    pub fn with_tasks(rounds: Rounds, tasks: Tasks) -> Fixtures {
        Fixtures {
            rounds,
            tasks,
            logs: Logs::default(),
            subscriptions: Subscriptions::default(),
            sessions: None,
            changes: Changes::default(),
        }
    }

    /// These fixtures, announcing list changes to every listener of
    /// `changes` (one per server, however many sessions and requests).
    pub fn announcing(mut self, changes: Changes) -> Fixtures {
        self.changes = changes;
        self
    }

    /// These fixtures, served in `sessions` (so `test_reconnection` can
    /// close its response stream mid-call).
    pub fn in_sessions(mut self, sessions: Arc<Sessions>) -> Fixtures {
        self.sessions = Some(sessions);
        self
    }

    /// The task works of the fixtures, registered once per server.
    pub fn tasks(rounds: Rounds) -> Tasks {
        task_fixtures::register(rounds)
    }
}

/// The tools asking through a round, but `test_elicitation` and
/// `test_sampling` (which take an argument): each with its description.
const ROUND_TOOLS: [(&str, &str); 12] = [
    (
        "test_streaming_elicitation",
        "Asks the person's name (on 2026-07-28: input requests in its result)",
    ),
    (
        "test_missing_capability",
        "Needs the client's sampling capability; refuses a client without it",
    ),
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
    tools.push(tool(
        "test_sampling",
        "Asks the client's model the prompt given",
        json!({"type": "object", "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
               "required": ["prompt"]}),
    ));
    for (name, description) in ROUND_TOOLS {
        tools.push(tool(name, description, empty.clone()));
    }
    tools.extend(tool_fixtures::tools());
    tools.extend(changes::tools());
    tools.extend(task_fixtures::tools());
    tools
}

fn tool(name: &'static str, description: &'static str, json: Json) -> Tool {
    Tool::new(name, description, schema(json))
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
        if params.name == "test_sampling" {
            return self.call_sampling(params, cx).await;
        }
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
            ("test_input_required_result_elicitation" | "test_streaming_elicitation", _) => {
                irr_elicitation(round).await
            }
            ("test_missing_capability", _) => missing_capability(round).await,
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

impl Fixtures {
    /// `test_sampling`: the prompt given to the client's model, its answer
    /// in the result.
    async fn call_sampling(
        &self,
        params: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let prompt = argument(params.arguments.as_ref(), "prompt").ok_or_else(|| {
            ErrorData::invalid_params("test_sampling needs a string argument \"prompt\"", None)
        })?;
        let question =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
        let round = self.rounds.begin(cx, Request::tool(params)).await?;
        finish(round, async |round| {
            let answer = given(round.sample("prompt", question).await?)?;
            Ok(text(format!("LLM response: {}", said(&answer))))
        })
        .await
    }
}

impl ServerHandler for Fixtures {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_logging()
                .enable_completions()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tools()
                .enable_tool_list_changed()
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
        if changes::has(name) {
            return Ok(self.changes.call(name, &cx).await);
        }
        if tool_fixtures::has(name) {
            return tool_fixtures::call(&params, &cx, &self.logs, self.sessions.as_deref()).await;
        }
        if !["test_elicitation", "test_sampling"].contains(&name)
            && !ROUND_TOOLS.iter().any(|(tool, _)| *tool == name)
        {
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
        let mut prompts = prompt_fixtures::prompts();
        prompts.push(Prompt::new(
            "test_input_required_result_prompt",
            Some("A prompt that asks the person for its context first"),
            None,
        ));
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if prompt_fixtures::has(&params.name) {
            return Ok(prompt_fixtures::get(&params)?.into());
        }
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

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|tool| tool.name == name)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(resource_fixtures::resources())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resource_fixtures::templates())
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Ok(resource_fixtures::read(&params.uri)?.into())
    }

    async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.subscribe(&params.uri)
    }

    async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.unsubscribe(&params.uri);
        Ok(())
    }

    async fn set_level(
        &self,
        params: SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.logs.set(params.level);
        Ok(())
    }

    async fn complete(
        &self,
        params: CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        prompt_fixtures::complete(&params)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp keeps of it what get_info advertises.
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.changes.listen(context).await;
        Ok(())
    }
}
