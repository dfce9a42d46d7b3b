//! Answering asks as a client: askgate's client handler connected in
//! process to an rmcp server that asks — by `elicitation/create` on
//! 2025-11-25, by `InputRequiredResult` rounds on 2026-07-28 — answered by
//! policy, by a scripted person at a terminal, and through the store.

use std::io::{Cursor, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askgate_core::{Ask, Form, Revision, Surface};
use askgate_mcp::client::{
    Answerer, AskgateClient, MAX_ROUNDS, Parking, Policy, Terminal, call_tool_answering,
};
use askgate_mcp::stored::Act;
use askgate_mcp::{Request, Rounds};
use askgate_store::{AskStatus, Store};
use askgate_testkit::TempStore;
use askgate_testkit::mcp::{Tools, connect, discover, text};
use askgate_testkit::wait::first_pending;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    InputRequest, InputRequests, InputRequiredResult,
};
use rmcp::service::{ClientLifecycleMode, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceError};
use serde_json::{Value as Json, json};

const SERVER_NAME: &str = "deploy-server";

/// A server whose `ask` tool sends one `elicitation/create` with the given
/// params and returns the client's `ElicitResult` as JSON text.
fn asking(params: Json) -> Tools {
    Tools::new(move |_request, cx| {
        let params: ElicitRequestParams =
            serde_json::from_value(params.clone()).expect("elicitation params");
        async move {
            let text = match cx.peer.create_elicitation(params).await {
                Ok(result) => serde_json::to_string(&result).expect("serializes"),
                Err(e) => format!("error: {e}"),
            };
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
        }
    })
    .named(SERVER_NAME)
}

/// What the `ask` tool says after asking `params` of a client answering
/// with `answerer` (2025-11-25, `initialize`).
async fn ask_text(answerer: Answerer, params: Json) -> String {
    let client = AskgateClient::new(answerer);
    let client = connect(asking(params), client, ClientLifecycleMode::Initialize).await;
    let result = call_tool_answering(&client, CallToolRequestParams::new("ask"))
        .await
        .expect("the call returns");
    let _ = client.cancel().await;
    text(&result)
}

/// Ask `params` of a client answering with `answerer`; the `ElicitResult`
/// it gave.
async fn elicit(answerer: Answerer, params: Json) -> Json {
    let text = ask_text(answerer, params).await;
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("an ElicitResult, got {text}"))
}

fn form(schema: Json) -> Json {
    json!({"mode": "form", "message": "Deploy billing?", "requestedSchema": schema})
}

/// The SEP-1034 form: five optional properties, each with a default.
fn sep1034() -> Json {
    form(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status",
                       "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        },
        "required": []
    }))
}

#[tokio::test]
async fn policy_accepts_with_every_default_filled_in() {
    let result = elicit(Answerer::Policy(Policy::accept_defaults()), sep1034()).await;
    assert_eq!(result["action"], "accept");
    assert_eq!(
        result["content"],
        json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
    );
}

#[tokio::test]
async fn policy_declines_a_required_property_it_has_no_value_for() {
    let schema = json!({
        "type": "object",
        "properties": {
            "ticket": {"type": "string", "minLength": 3},
            "replicas": {"type": "integer", "default": 2}
        },
        "required": ["ticket"]
    });
    let declined = elicit(
        Answerer::Policy(Policy::accept_defaults()),
        form(schema.clone()),
    )
    .await;
    assert_eq!(declined, json!({"action": "decline"}));

    let configured = Policy::accept_defaults().with_value("ticket", json!("OPS-7"));
    let accepted = elicit(Answerer::Policy(configured), form(schema.clone())).await;
    assert_eq!(accepted["action"], "accept");
    assert_eq!(
        accepted["content"],
        json!({"ticket": "OPS-7", "replicas": 2})
    );

    // A configured value that does not fit is not sent: the form is declined.
    let too_short = Policy::accept_defaults().with_value("ticket", json!("OP"));
    let declined = elicit(Answerer::Policy(too_short), form(schema)).await;
    assert_eq!(declined["action"], "decline");
}

#[tokio::test]
async fn policy_declines_url_mode_and_only_a_terminal_declares_it() {
    let url = json!({"mode": "url", "message": "Sign in", "url": "https://auth.example/x",
                     "elicitationId": "e-1"});
    let result = elicit(Answerer::Policy(Policy::accept_defaults()), url).await;
    assert_eq!(result["action"], "decline");

    let policy = AskgateClient::new(Answerer::Policy(Policy::accept_defaults())).get_info();
    let elicitation = policy.capabilities.elicitation.expect("elicitation");
    assert!(elicitation.form.is_some() && elicitation.url.is_none());
    let (terminal, _) = scripted("");
    let terminal = AskgateClient::new(Answerer::Terminal(terminal)).get_info();
    let elicitation = terminal.capabilities.elicitation.expect("elicitation");
    assert!(elicitation.form.is_some() && elicitation.url.is_some());
    assert_eq!(terminal.client_info.name, "askgate");
}

/// What a terminal wrote, shared with the test.
#[derive(Clone, Default)]
struct Screen(Arc<Mutex<Vec<u8>>>);

impl Write for Screen {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("not poisoned")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Screen {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("not poisoned").clone()).expect("UTF-8")
    }
}

/// A terminal whose person types `input`.
fn scripted(input: &str) -> (Terminal, Screen) {
    let screen = Screen::default();
    let terminal = Terminal::new(Cursor::new(input.as_bytes().to_vec()), screen.clone());
    (terminal, screen)
}

/// One property of every kind a form can carry.
fn every_kind() -> Json {
    form(json!({
        "type": "object",
        "properties": {
            "email": {"type": "string", "title": "Email", "format": "email", "minLength": 5},
            "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
            "score": {"type": "number", "title": "Score", "minimum": 0, "maximum": 10},
            "verified": {"type": "boolean", "title": "Verified"},
            "env": {"type": "string", "title": "Environment",
                    "oneOf": [{"const": "staging", "title": "Staging"},
                              {"const": "prod", "title": "Production"}]},
            "size": {"type": "string", "title": "Size", "enum": ["s", "m", "l"],
                     "enumNames": ["Small", "Medium", "Large"]},
            "color": {"type": "string", "title": "Color", "enum": ["red", "green"]},
            "tags": {"type": "array", "title": "Tags",
                     "items": {"anyOf": [{"const": "a", "title": "Alpha"},
                                         {"const": "b", "title": "Beta"},
                                         {"const": "c", "title": "Gamma"}]}},
            "days": {"type": "array", "title": "Days", "maxItems": 2,
                     "items": {"type": "string", "enum": ["mon", "tue", "wed"]}},
            "when": {"type": "string", "title": "When", "format": "date"},
            "note": {"type": "string", "title": "Note", "default": "none"}
        },
        "required": ["email", "age", "score", "verified", "env", "size", "color", "tags", "days", "when"]
    }))
}

#[tokio::test]
async fn terminal_prompts_every_field_type_and_asks_again_after_a_wrong_value() {
    let input = [
        "nobody",          // email: not an address
        "ann@example.com", // email
        "200",             // age: above 150
        "42",              // age
        "7.5",             // score
        "y",               // verified
        "2",               // env: by number -> prod
        "Large",           // size: by label (enumNames) -> l
        "green",           // color: by value
        "1, c",            // tags: by number and value
        "mon,tue,wed",     // days: more than 2
        "tue",             // days
        "2026-02-30",      // when: no such date
        "2026-07-01",      // when
        "",                // note: the default
    ]
    .join("\n")
        + "\n";
    let (terminal, screen) = scripted(&input);
    let result = elicit(Answerer::Terminal(terminal), every_kind()).await;
    assert_eq!(result["action"], "accept");
    assert_eq!(
        result["content"],
        json!({
            "email": "ann@example.com", "age": 42, "score": 7.5, "verified": true,
            "env": "prod", "size": "l", "color": "green", "tags": ["a", "c"],
            "days": ["tue"], "when": "2026-07-01", "note": "none"
        })
    );
    let shown = screen.text();
    assert!(
        shown.contains(&format!("== {SERVER_NAME} asks ==")),
        "{shown}"
    );
    assert!(shown.contains("Deploy billing?"), "{shown}");
    for reason in [
        "! expected an email address",
        "! too large: at most 150",
        "! too many: pick at most 2",
        "! expected a date, YYYY-MM-DD",
    ] {
        assert!(shown.contains(reason), "missing {reason:?} in:\n{shown}");
    }
    assert!(shown.contains("2) Production [prod]"), "{shown}");
    assert!(shown.contains("3) Large [l]"), "{shown}");
    assert!(shown.contains("default: none"), "{shown}");
}

#[tokio::test]
async fn terminal_declines_when_the_person_says_decline() {
    let (terminal, _) = scripted("ann@example.com\n!decline\n");
    let result = elicit(Answerer::Terminal(terminal), every_kind()).await;
    assert_eq!(result, json!({"action": "decline"}));
}

#[tokio::test]
async fn terminal_cancels_on_cancel_and_at_the_end_of_input() {
    for input in ["!cancel\n", "ann@example.com\n"] {
        let (terminal, _) = scripted(input);
        let result = elicit(Answerer::Terminal(terminal), every_kind()).await;
        assert_eq!(result, json!({"action": "cancel"}), "after {input:?}");
    }
}

#[tokio::test]
async fn terminal_shows_a_url_and_accepts_once_the_person_is_back() {
    let url = json!({"mode": "url", "message": "Sign in to the registry",
                     "url": "https://auth.example/flow/1", "elicitationId": "e-1"});
    let (terminal, screen) = scripted("\n");
    let result = elicit(Answerer::Terminal(terminal), url).await;
    assert_eq!(result, json!({"action": "accept"}));
    let shown = screen.text();
    assert!(shown.contains("https://auth.example/flow/1"), "{shown}");
    assert!(shown.contains("(on auth.example)"), "{shown}");
}

/// A form of one required choice, `env`: staging or prod.
fn env_form() -> Json {
    form(json!({
        "type": "object",
        "properties": {"env": {"type": "string", "enum": ["staging", "prod"]}},
        "required": ["env"]
    }))
}

/// Parking in `store`, without the notice on stderr.
fn quiet_parking(store: &TempStore) -> Parking {
    Parking::new(store.store().clone()).with_notice(false)
}

/// Settle a pending ask as the CLI does (`askgate asks answer`).
async fn answer_in_store(store: &Store, id: &str, content: Json) {
    let answer = askgate_testkit::answer(content);
    askgate_testkit::answer_in_inbox(store, id, answer, "ann", Surface::Cli).await;
}

#[tokio::test]
async fn an_ask_from_the_store_waits_as_pending_until_answered_there() {
    let store = TempStore::open().await;
    let parking = quiet_parking(&store).with_timeout(Duration::from_secs(60));
    let schema = form(json!({
        "type": "object",
        "properties": {
            "env": {"type": "string", "title": "Environment",
                    "oneOf": [{"const": "staging", "title": "Staging"},
                              {"const": "prod", "title": "Production"}]},
            "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 5,
                         "default": 2},
            "tags": {"type": "array", "title": "Tags",
                     "items": {"type": "string", "enum": ["a", "b"]}}
        },
        "required": ["env"]
    }));
    let call = tokio::spawn(elicit(Answerer::Store(parking), schema));

    let pending = first_pending(&store).await;
    assert_eq!(pending.status, AskStatus::Pending);
    assert_eq!(pending.ask.server.as_deref(), Some(SERVER_NAME));
    assert_eq!(pending.ask.request["kind"], "form");
    assert!(!call.is_finished(), "the call waits for the person");

    answer_in_store(
        &store,
        &pending.ask.id,
        json!({"env": "prod", "tags": ["b"]}),
    )
    .await;
    let result = call.await.expect("the call completes");
    assert_eq!(result["action"], "accept");
    assert_eq!(
        result["content"],
        json!({"env": "prod", "replicas": 2, "tags": ["b"]})
    );
}

#[tokio::test]
async fn a_decline_in_the_store_declines_the_elicitation() {
    let store = TempStore::open().await;
    let parking = quiet_parking(&store);
    let schema = env_form();
    let call = tokio::spawn(elicit(Answerer::Store(parking), schema));
    let pending = first_pending(&store).await;
    askgate_testkit::answer_in_inbox(&store, &pending.ask.id, Act::Decline, "ann", Surface::Cli)
        .await;
    assert_eq!(
        call.await.expect("the call completes"),
        json!({"action": "decline"})
    );
}

#[tokio::test]
async fn a_form_the_inbox_cannot_carry_is_refused_with_an_error_not_parked() {
    let store = TempStore::open().await;
    let parking = quiet_parking(&store);
    let schema = form(json!({
        "type": "object",
        "properties": {"first name": {"type": "string"}}
    }));
    let text = ask_text(Answerer::Store(parking), schema).await;
    assert!(
        text.starts_with("error:") && text.contains("cannot be parked"),
        "{text}"
    );
    let page = store.pending(10, None).await.expect("the store reads");
    assert!(page.asks.is_empty());
}

#[tokio::test]
async fn an_ask_nobody_answers_in_time_is_cancelled_and_closed_in_the_store() {
    let store = TempStore::open().await;
    let parking = quiet_parking(&store).with_timeout(Duration::from_millis(300));
    let schema = env_form();
    let result = elicit(Answerer::Store(parking), schema).await;
    assert_eq!(result, json!({"action": "cancel"}));
    let page = store.pending(10, None).await.expect("the store reads");
    assert!(page.asks.is_empty(), "nothing is left pending");
}

fn one_field(field: Json) -> Ask {
    let form: Form =
        serde_json::from_value(json!({"message": "Deploy billing?", "fields": [field]}))
            .expect("a form");
    Ask::new(form).expect("MCP can carry it")
}

/// A 2026-07-28 server whose `deploy` tool asks the environment, then the
/// replicas, each in its own round, sealed state carried between them;
/// `forever` asks a fresh request every round. Each call is counted.
fn rounded(rounds: Rounds, calls: Arc<AtomicUsize>) -> Tools {
    Tools::new(move |request, cx| {
        calls.fetch_add(1, Ordering::SeqCst);
        let rounds = rounds.clone();
        async move {
            if request.name == "forever" {
                // Never satisfied: a fresh request every round.
                let ask = one_field(json!({"id": "ok", "title": "OK", "type": "boolean"}));
                let params = ask.request(Revision::V2026_07_28).expect("maps");
                let params: ElicitRequestParams =
                    serde_json::from_value(params.to_json()).expect("rmcp params");
                let mut requests = InputRequests::new();
                requests.insert(
                    "ok".into(),
                    InputRequest::Elicitation(ElicitRequest::new(params)),
                );
                return Ok(InputRequiredResult::from_input_requests(requests).into());
            }
            let mut round = rounds.begin(&cx, Request::tool(&request)).await?;
            let env = one_field(
                json!({"id": "env", "title": "Environment", "type": "choice",
                "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]}),
            );
            let Some(env) = round.ask("env", env).await? else {
                return Ok(round.input_required()?.into());
            };
            let replicas = one_field(
                json!({"id": "replicas", "title": "Replicas", "type": "integer",
                "minimum": 1, "maximum": 5, "default": 2}),
            );
            let Some(replicas) = round.ask("replicas", replicas).await? else {
                return Ok(round.input_required()?.into());
            };
            let text = json!({"env": env, "replicas": replicas}).to_string();
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
        }
    })
}

async fn discover_with(
    policy: Policy,
) -> (
    RunningService<RoleClient, AskgateClient>,
    Arc<AtomicUsize>,
    TempStore,
) {
    let store = TempStore::open().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let server = rounded(
        Rounds::new([7u8; 32], store.store().clone()),
        Arc::clone(&calls),
    );
    let client = connect(
        server,
        AskgateClient::new(Answerer::Policy(policy)),
        discover(),
    )
    .await;
    (client, calls, store)
}

#[tokio::test]
async fn on_2026_07_28_the_client_answers_each_round_until_the_call_completes() {
    let policy = Policy::accept_defaults().with_value("env", json!("prod"));
    let (client, calls, _store) = discover_with(policy).await;
    let result = call_tool_answering(&client, CallToolRequestParams::new("deploy"))
        .await
        .expect("the call completes");
    let outcomes: Json = serde_json::from_str(&text(&result)).expect("JSON");
    assert_eq!(outcomes["env"]["outcome"], "accepted");
    assert_eq!(outcomes["env"]["values"]["env"]["value"], "prod");
    assert_eq!(outcomes["replicas"]["values"]["replicas"]["value"], 2);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "one call, then one retry per round"
    );
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_server_that_never_completes_stops_at_the_round_cap() {
    let (client, calls, _store) = discover_with(Policy::accept_defaults()).await;
    let error = call_tool_answering(&client, CallToolRequestParams::new("forever"))
        .await
        .expect_err("never completes");
    assert!(
        matches!(error, ServiceError::InputRequiredRoundsExceeded { max_rounds } if max_rounds == MAX_ROUNDS),
        "{error}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), MAX_ROUNDS);
    let _ = client.cancel().await;
}
