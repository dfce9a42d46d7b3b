//! The gateway end to end: an rmcp client spawns `askgate gateway -- <the
//! example upstream>` and calls through it, as a desktop client would.

use askgate_store::{CallState, Decision, Store};
use askgate_testkit::gateway::{Gateway, Setup, ledger};
use askgate_testkit::mcp::{discover, text};
use askgate_testkit::person::{READING, accept};
use askgate_testkit::process::sigkill;
use askgate_testkit::webhook::Receiver;
use askgate_testkit::{Manner, Person, binaries};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitResult, ElicitationAction,
    InputRequiredResult, ProtocolVersion,
};
use rmcp::service::{ClientServiceExt, RoleClient, RunningService};
use serde_json::{Value as Json, json};

const UPSTREAM: &str = "askgate-example-upstream";

/// The express lane beyond the happy path: upstream errors, cancels, an
/// upstream that dies, a large result.
#[path = "gateway/express_lane.rs"]
mod express_lane;

/// The trust rules end to end: a person's no, the caller's word, what no
/// person saw, a cancelled call.
#[path = "gateway/trust.rs"]
mod trust;

/// A gateway over the example upstream with no config file, on a store of
/// its own.
fn setup() -> Setup {
    Setup::new(binaries!())
}

/// A person behind a client declaring `capabilities`, answering from
/// `script` after reading each ask.
fn person(capabilities: Json, script: Vec<ElicitResult>) -> Person {
    Person::new(capabilities)
        .speaking(ProtocolVersion::V_2025_11_25)
        .in_manner(Manner::Person)
        .answering(script)
}

async fn gateway(capabilities: Json, script: Vec<ElicitResult>) -> Gateway {
    setup().connect(person(capabilities, script)).await
}

/// A gateway over the example upstream, with `config` (TOML, the upstream
/// `notes` and the store added) instead of the no-config default.
async fn gateway_with(capabilities: Json, script: Vec<ElicitResult>, config: &str) -> Gateway {
    gateway_on(capabilities, script, config, "").await
}

/// [`gateway_with`], with `upstream` (TOML keys) added to the upstream's
/// table.
async fn gateway_on(
    capabilities: Json,
    script: Vec<ElicitResult>,
    config: &str,
    upstream: &str,
) -> Gateway {
    setup()
        .config(config)
        .upstream_keys(upstream)
        .connect(person(capabilities, script))
        .await
}

/// A client of 2026-07-28 driving the rounds by hand, on a gateway
/// started from `setup`; and the gateway's process id.
async fn round_tripper(setup: &Setup) -> (RunningService<RoleClient, Person>, u32) {
    let (transport, pid, _log) = setup.spawn();
    let client = Person::with_forms()
        .named("round-tripper")
        .serve_with_lifecycle(transport, discover())
        .await
        .expect("discovers the gateway");
    (client, pid)
}

fn tool(name: &str) -> String {
    format!("{UPSTREAM}__{name}")
}

async fn call(h: &Gateway, name: &str, args: Json) -> CallToolResult {
    h.client
        .call_tool(askgate_testkit::mcp::call(&tool(name), args))
        .await
        .expect("a result")
}

/// A call of `name` on the upstream `notes` (the config's name for it).
async fn on_notes(h: &Gateway, name: &str, args: Json) -> CallToolResult {
    h.client
        .call_tool(askgate_testkit::mcp::call(&format!("notes__{name}"), args))
        .await
        .expect("a result")
}

/// `params` again, with `responses` (JSON by key) and the sealed `state`.
fn retried(
    params: &CallToolRequestParams,
    responses: Json,
    state: Option<String>,
) -> CallToolRequestParams {
    let mut retry = params.clone();
    retry.input_responses = Some(serde_json::from_value(responses).expect("responses"));
    retry.request_state = state;
    retry
}

/// The input requests a response asks for (the test fails on any other).
fn needs(response: CallToolResponse) -> InputRequiredResult {
    match response {
        CallToolResponse::InputRequired(needed) => needed,
        other => panic!("expected input requests, got {other:?}"),
    }
}

/// The result of a complete response (the test fails on any other).
fn done(response: CallToolResponse) -> CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a result, got {other:?}"),
    }
}

/// A retry whose sealed state was used already is refused (-32602).
async fn refused_as_a_replay(
    client: &RunningService<RoleClient, Person>,
    retry: CallToolRequestParams,
) {
    match client.call_tool_once(retry).await {
        Err(rmcp::ServiceError::McpError(error)) => assert_eq!(error.code.0, -32602),
        other => panic!("a replay must be refused, got {other:?}"),
    }
}

/// The input requests of an `InputRequiredResult`, as JSON by key.
fn input_requests(result: &InputRequiredResult) -> serde_json::Map<String, Json> {
    serde_json::to_value(result.input_requests.clone().unwrap_or_default())
        .expect("json")
        .as_object()
        .cloned()
        .expect("a map")
}

#[tokio::test]
async fn tools_are_listed_under_their_servers_name_with_their_risk() {
    let h = gateway(json!({"elicitation": {"form": {}}}), vec![]).await;
    let tools = h.client.list_all_tools().await.expect("tools");
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    for expected in [
        "read_note",
        "write_note",
        "delete_all_notes",
        "ask_name",
        "wait_for_note",
    ] {
        assert!(names.contains(&tool(expected)), "{expected} in {names:?}");
    }
    let delete = tools
        .iter()
        .find(|t| t.name == tool("delete_all_notes"))
        .expect("listed");
    assert!(
        delete.input_schema["properties"].get("confirm").is_none(),
        "by default only a person approves, so no confirm argument tempts the model"
    );
    assert!(
        delete
            .description
            .as_deref()
            .is_some_and(|d| d.contains("[askgate: risk destructive]")),
        "{:?}",
        delete.description
    );
}

#[tokio::test]
async fn a_confirmed_call_runs_once_and_is_audited_and_ledgered() {
    let h = gateway(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"confirm": true}))],
    )
    .await;
    let result = call(
        &h,
        "append_note",
        json!({"name": "todo", "text": "buy milk"}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let asked = h.person.messages();
    assert_eq!(asked.len(), 1, "one confirmation");
    let message = &asked[0];
    assert!(
        message.contains("append_note") && message.contains("medium write"),
        "{message}"
    );
    let store = h.store().await;
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.decision, Decision::Elicited);
    assert_eq!(audit[0].entry.tool, "append_note");
    let raw = serde_json::to_string(&audit[0].entry).expect("json");
    assert!(!raw.contains("buy milk"), "no argument in the audit: {raw}");
    // Recorded as sent before it left; its end is recorded after the answer.
    assert!(
        matches!(h.ledger().await.as_slice(), [state] if state == "sent" || state == "answered"),
        "the call is in the ledger when its answer arrives"
    );
    let stopped = h.stop().await;
    assert_eq!(
        ledger(stopped.store_url()).await,
        [CallState::Answered.as_str()]
    );
}

#[tokio::test]
async fn a_declined_call_never_reaches_the_upstream() {
    let h = gateway(
        json!({"elicitation": {"form": {}}}),
        vec![ElicitResult::new(ElicitationAction::Decline)],
    )
    .await;
    let result = call(&h, "delete_all_notes", json!({})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("final"), "{}", text(&result));
    let store = h.store().await;
    assert_eq!(
        store.audit_entries().await.expect("audit")[0]
            .entry
            .decision,
        Decision::Blocked
    );
    assert!(h.ledger().await.is_empty(), "nothing was sent upstream");
}

#[tokio::test]
async fn without_elicitation_the_ask_waits_in_the_inbox_whatever_the_caller_says() {
    let h = gateway(json!({}), vec![]).await;
    // Parked in the inbox: the result says where to answer, and nothing
    // that approves by itself.
    let parked = call(&h, "delete_all_notes", json!({})).await;
    assert_eq!(parked.is_error, Some(true));
    let said = text(&parked);
    assert!(said.contains("askgate inbox (http://"), "{said}");
    assert!(!said.contains("askgate asks"), "{said}");
    assert!(!said.contains("confirm: true"), "{said}");
    let store = h.store().await;
    assert_eq!(
        store.pending(10, None).await.expect("pending").asks.len(),
        1
    );
    // By default the caller's confirm: true stands in for nobody.
    let result = call(&h, "delete_all_notes", json!({"confirm": true})).await;
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(
        audit.last().expect("an entry").entry.decision,
        Decision::Waiting
    );
    store.close().await;
    assert!(h.ledger().await.is_empty(), "nothing was sent upstream");
}

#[tokio::test]
async fn the_upstreams_own_ask_reaches_the_person() {
    let h = gateway(
        json!({"elicitation": {"form": {}}}),
        vec![
            accept(json!({"confirm": true})),
            accept(json!({"name": "Ada"})),
        ],
    )
    .await;
    let result = call(&h, "ask_name", json!({})).await;
    assert!(text(&result).contains("Ada"), "{}", text(&result));
    let asked = h.person.asked.all();
    assert_eq!(
        asked.len(),
        2,
        "the confirmation, then the server's own ask"
    );
    let stopped = h.stop().await;
    assert_eq!(ledger(stopped.store_url()).await, ["answered"]);
}

#[tokio::test]
async fn a_read_call_is_audited_and_ledgered_and_a_clean_stop_keeps_both() {
    let config = "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
    let h = gateway_with(json!({"elicitation": {"form": {}}}), vec![], config).await;
    let mut params = CallToolRequestParams::new("notes__read_note");
    params.arguments = json!({"name": "todo"}).as_object().cloned();
    h.client.call_tool(params).await.expect("a result");
    assert!(h.person.asked.is_empty(), "a read is not confirmed");
    // The read did not wait for its records; a clean stop writes them.
    let stopped = h.stop().await;
    let store = Store::open(stopped.store_url()).await.expect("opens");
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.decision, Decision::NotRequired);
    assert_eq!(audit[0].entry.tool, "read_note");
    assert_eq!(audit[0].entry.risk, "read");
    assert_eq!(store.verify_audit().await.expect("verifies").broken, None);
    store.close().await;
    assert_eq!(ledger(stopped.store_url()).await, ["answered"]);
}

#[tokio::test]
async fn reads_called_side_by_side_keep_one_unbroken_audit_chain() {
    let config = "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
    let h = gateway_with(json!({"elicitation": {"form": {}}}), vec![], config).await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..20 {
        let mut params = CallToolRequestParams::new("notes__read_note");
        params.arguments = json!({"name": format!("n{i}")}).as_object().cloned();
        let peer = h.client.peer().clone();
        calls.spawn(async move { peer.call_tool(params).await });
    }
    while let Some(done) = calls.join_next().await {
        done.expect("the call's task ends").expect("a result");
    }
    let stopped = h.stop().await;
    let store = Store::open(stopped.store_url()).await.expect("opens");
    let verification = store.verify_audit().await.expect("verifies");
    assert_eq!(verification.entries, 20);
    assert_eq!(verification.broken, None);
    store.close().await;
    assert_eq!(ledger(stopped.store_url()).await, vec!["answered"; 20]);
}

#[tokio::test]
async fn with_durable_reads_a_read_is_recorded_before_its_answer() {
    let config = "durable_reads = true\n\n[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
    let h = gateway_with(json!({"elicitation": {"form": {}}}), vec![], config).await;
    let mut params = CallToolRequestParams::new("notes__read_note");
    params.arguments = json!({"name": "todo"}).as_object().cloned();
    h.client.call_tool(params).await.expect("a result");
    // Still running: what the answer waited for is in the store.
    let store = h.store().await;
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.decision, Decision::NotRequired);
    store.close().await;
    assert!(
        matches!(h.ledger().await.as_slice(), [state] if state == "sent" || state == "answered"),
        "the read is in the ledger when its answer arrives"
    );
}

/// `askgate tools --json`: one object per tool.
fn tools_json(extra: &[&str]) -> Vec<Json> {
    let bins = binaries!();
    let dir = askgate_testkit::Scratch::new();
    let output = std::process::Command::new(&bins.askgate)
        .args(["tools", "--json", "--store", &dir.store_url()])
        .args(extra)
        .arg("--")
        .arg(&bins.upstream)
        .env("ASKGATE_LOG", "warn")
        .output()
        .expect("askgate tools runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

fn row<'a>(rows: &'a [Json], name: &str) -> &'a Json {
    rows.iter()
        .find(|r| r["tool"] == tool(name))
        .unwrap_or_else(|| panic!("{name} listed in {rows:?}"))
}

#[test]
fn the_dry_run_names_each_tools_risk_rule_and_what_a_call_would_do() {
    let rows = tools_json(&[]);
    let delete = row(&rows, "delete_all_notes");
    assert_eq!(delete["risk"], "destructive");
    assert_eq!(delete["rule"], "annotations.destructiveHint");
    assert_eq!(delete["now"], "ask");
    // Without a rule, even a read-only tool fails closed.
    let read = row(&rows, "read_note");
    assert_eq!(read["risk"], "medium_write");
    assert_eq!(read["rule"], "default");
    assert_eq!(read["now"], "ask");

    let rows = tools_json(&["--auto-approve", "medium_write"]);
    assert_eq!(row(&rows, "read_note")["now"], "proceed (auto_approved)");
    assert_eq!(row(&rows, "delete_all_notes")["now"], "ask");
}

#[tokio::test]
async fn the_model_asks_the_person_through_the_ask_tool() {
    let h = gateway(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"env": "prod"}))],
    )
    .await;
    let tools = h.client.list_all_tools().await.expect("tools");
    assert!(
        tools.iter().any(|t| t.name == "ask"),
        "the ask tool is offered"
    );
    let mut params = CallToolRequestParams::new("ask");
    params.arguments = json!({"questions": [{
        "id": "env", "prompt": "Which environment?", "defaults": ["staging"],
        "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]
    }]})
    .as_object()
    .cloned();
    let result = h.client.call_tool(params).await.expect("a result");
    assert!(
        text(&result).contains("Which environment? → Production"),
        "{}",
        text(&result)
    );

    // A malformed set is a tool error addressed to the model.
    let mut params = CallToolRequestParams::new("ask");
    params.arguments = json!({"questions": []}).as_object().cloned();
    let result = h.client.call_tool(params).await.expect("a result");
    assert_eq!(result.is_error, Some(true));
    assert!(!text(&result).is_empty());
}

#[tokio::test]
async fn intake_questions_come_before_a_tools_first_call_only() {
    let config = r#"
[[rules]]
tool = "append_note"
risk = "read"

[[intake]]
tool = "append_note"
when = "once"
preamble = "Before the first note:"
questions = [{ id = "team", prompt = "Which team?", options = [{ value = "ops", label = "Ops" }, { value = "dev", label = "Dev" }], defaults = ["ops"] }]
"#;
    let h = gateway_with(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"team": "dev"}))],
        config,
    )
    .await;
    let mut params = CallToolRequestParams::new("notes__append_note");
    params.arguments = json!({"name": "log", "text": "one"}).as_object().cloned();
    let first = h.client.call_tool(params.clone()).await.expect("a result");
    assert!(
        text(&first).contains("Which team? → Dev"),
        "{}",
        text(&first)
    );
    let second = h.client.call_tool(params).await.expect("a result");
    assert!(!text(&second).contains("Which team?"), "{}", text(&second));
    assert_eq!(
        h.person.asked.len(),
        1,
        "asked once; a read needs no confirmation"
    );
}

#[tokio::test]
async fn a_gateway_killed_mid_ask_gives_the_retry_its_result_and_runs_the_call_once() {
    let setup = setup();
    let params =
        askgate_testkit::mcp::call(&tool("append_note"), json!({"name": "log", "text": "once"}));
    let (client, pid) = round_tripper(&setup).await;
    let first = needs(
        client
            .call_tool_once(params.clone())
            .await
            .expect("a result"),
    );
    // The gateway dies while the person decides.
    sigkill(&pid.to_string());
    drop(client);

    let (client, _) = round_tripper(&setup).await;
    // The person reads the confirmation before answering it.
    tokio::time::sleep(READING).await;
    let retry = retried(
        &params,
        json!({"confirm": {"action": "accept", "content": {"confirm": true}}}),
        first.request_state.clone(),
    );
    let done = done(
        client
            .call_tool_once(retry.clone())
            .await
            .expect("a result"),
    );
    assert_ne!(done.is_error, Some(true), "{}", text(&done));
    // The same retry again is refused: the state was used.
    refused_as_a_replay(&client, retry).await;
    client.cancel().await.expect("the gateway stops");
    assert_eq!(ledger(setup.store_url()).await, ["answered"], "ran once");
}

#[tokio::test]
async fn the_upstreams_own_ask_reaches_a_2026_client_as_input_requests_and_its_answer_is_checked() {
    let setup = setup();
    let (client, _) = round_tripper(&setup).await;
    let params = CallToolRequestParams::new(tool("ask_name"));
    let mut call = params.clone();
    let mut asked_name = Vec::new();
    let mut states = Vec::new();
    let mut answers = [json!({"name": 42}), json!({"name": "Grace"})].into_iter();
    let done = loop {
        let needed = match client.call_tool_once(call.clone()).await.expect("a result") {
            CallToolResponse::Complete(result) => break result,
            CallToolResponse::InputRequired(needed) => needed,
            other => panic!("expected a result or input requests, got {other:?}"),
        };
        assert!(states.len() < 6, "too many rounds");
        let mut responses = serde_json::Map::new();
        for (key, request) in input_requests(&needed) {
            let message = request["params"]["message"].as_str().unwrap_or_default();
            let content = if key == "confirm" {
                // The person reads the confirmation before answering it.
                tokio::time::sleep(READING).await;
                json!({"confirm": true})
            } else {
                assert!(key.starts_with("upstream-"), "{key}");
                asked_name.push(message.to_owned());
                answers.next().expect("asked at most twice")
            };
            responses.insert(key, json!({"action": "accept", "content": content}));
        }
        let state = needed.request_state.clone().expect("a sealed state");
        states.push(state.clone());
        call = retried(&params, Json::Object(responses), Some(state));
    };
    assert!(text(&done).contains("Hello, Grace"), "{}", text(&done));
    assert_eq!(
        asked_name.len(),
        2,
        "asked, then asked again: {asked_name:?}"
    );
    assert_eq!(asked_name[0], "What is your name?");
    assert!(
        asked_name[1].contains("name") && asked_name[1].contains("What is your name?"),
        "the re-ask says what did not fit: {:?}",
        asked_name[1]
    );
    assert!(
        !asked_name[1].contains("42"),
        "the reason never echoes the value"
    );
    // A used state does not run anything again.
    let replay = retried(
        &params,
        json!({"upstream-2": {"action": "accept", "content": {"name": "Eve"}}}),
        states.last().cloned(),
    );
    refused_as_a_replay(&client, replay).await;
    // A read's record is written as it ends: a clean stop keeps it.
    client.cancel().await.expect("the gateway stops");
    assert_eq!(ledger(setup.store_url()).await, ["answered"], "ran once");
}

#[tokio::test]
async fn an_upstream_on_2026_asks_a_classic_client_through_elicitation() {
    let h = gateway_on(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"name": ""})), accept(json!({"name": "Ada"}))],
        "[[rules]]\nserver = \"notes\"\ntool = \"ask_name\"\nrisk = \"read\"",
        "protocol = \"2026-07-28\"",
    )
    .await;
    let params = CallToolRequestParams::new("notes__ask_name");
    let result = h.client.call_tool(params).await.expect("a result");
    assert!(text(&result).contains("Hello, Ada"), "{}", text(&result));
    let asked = h.person.asked.all();
    assert_eq!(
        asked.len(),
        2,
        "asked, then asked again after an empty name"
    );
    assert_eq!(asked[0]["message"], "What is your name?");
    let again = asked[1]["message"].as_str().unwrap_or_default();
    assert!(
        again.contains("name") && again.ends_with("What is your name?"),
        "the re-ask says why: {again:?}"
    );
    // A read's record is written as it ends, without the answer waiting:
    // a clean stop keeps it.
    let stopped = h.stop().await;
    assert_eq!(ledger(stopped.store_url()).await, ["answered"]);
}

#[tokio::test]
async fn a_parked_ask_is_posted_to_the_configured_webhook_without_arguments() {
    // A local receiver records what is posted to it.
    let receiver = Receiver::start().await;
    let config = format!("[notify]\nwebhook = {:?}\n", receiver.url);
    let h = gateway_with(json!({}), vec![], &config).await;
    let parked = on_notes(
        &h,
        "delete_all_notes",
        json!({"reason": "a-secret-argument"}),
    )
    .await;
    assert_eq!(parked.is_error, Some(true), "parked: {}", text(&parked));
    receiver.at_least(1).await;
    let seen = receiver.bodies();
    assert_eq!(seen.len(), 1, "one post for the parked ask: {seen:?}");
    let post = &seen[0];
    assert_eq!(post["event"], "parked");
    assert_eq!(
        (post["server"].as_str(), post["tool"].as_str()),
        (Some("notes"), Some("delete_all_notes"))
    );
    assert_eq!(post["risk"], "destructive");
    assert!(post["link"].as_str().is_some_and(|l| l.contains("/asks/")));
    assert!(
        !post.to_string().contains("a-secret-argument"),
        "no argument is posted: {post}"
    );
}

#[tokio::test]
async fn a_2026_upstreams_prompt_asks_a_classic_client_and_gets_its_checked_answer() {
    let h = gateway_on(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"name": ""})), accept(json!({"name": "Ada"}))],
        "",
        "protocol = \"2026-07-28\"",
    )
    .await;
    let prompt = h
        .client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("notes__greet_me"))
        .await
        .expect("the prompt");
    let prompt = serde_json::to_value(&prompt).expect("json");
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "Greet Ada by name, warmly.",
        "the prompt the upstream built from the answer: {prompt}"
    );
    let asked = h.person.asked.all();
    assert_eq!(
        asked.len(),
        2,
        "asked, then asked again after an empty name"
    );
    assert_eq!(asked[0]["message"], "What is your name?");
    let again = asked[1]["message"].as_str().unwrap_or_default();
    assert!(
        again.contains("name") && again.ends_with("What is your name?"),
        "the re-ask says why: {again:?}"
    );
}

#[tokio::test]
async fn a_2026_upstreams_resource_asks_a_2026_client_which_answers_on_its_retry() {
    let setup = setup()
        .config("")
        .upstream_keys("protocol = \"2026-07-28\"");
    let (client, _) = round_tripper(&setup).await;
    let params = rmcp::model::ReadResourceRequestParams::new("notes://owner");
    let mut read = params.clone();
    let mut asked = Vec::new();
    let mut answers = [json!({"name": 42}), json!({"name": "Grace"})].into_iter();
    let done = loop {
        let needed = match client
            .read_resource_once(read.clone())
            .await
            .expect("a result")
        {
            rmcp::model::ReadResourceResponse::Complete(result) => break result,
            rmcp::model::ReadResourceResponse::InputRequired(needed) => needed,
            other => panic!("expected a result or input requests, got {other:?}"),
        };
        assert!(asked.len() < 4, "too many rounds");
        let mut responses = serde_json::Map::new();
        for (key, request) in input_requests(&needed) {
            assert!(key.starts_with("upstream-"), "{key}");
            asked.push(request["params"]["message"].clone());
            let content = answers.next().expect("asked at most twice");
            responses.insert(key, json!({"action": "accept", "content": content}));
        }
        read = params.clone();
        read.input_responses =
            Some(serde_json::from_value(Json::Object(responses)).expect("responses"));
        read.request_state = Some(needed.request_state.clone().expect("a sealed state"));
    };
    let done = serde_json::to_value(&done).expect("json");
    assert_eq!(
        done["contents"][0]["text"], "These notes belong to Grace.",
        "the resource the upstream built from the answer: {done}"
    );
    assert_eq!(asked.len(), 2, "asked, then asked again: {asked:?}");
    let again = asked[1].as_str().unwrap_or_default();
    assert!(
        again.contains("name") && !again.contains("42"),
        "the re-ask says what did not fit, never the value: {again:?}"
    );
    client.cancel().await.expect("the gateway stops");
}

#[tokio::test]
async fn the_completion_of_a_url_mode_ask_reaches_the_classic_client_it_went_to() {
    let h = gateway_with(
        json!({"elicitation": {"form": {}, "url": {}}}),
        vec![ElicitResult::new(ElicitationAction::Accept)],
        "[[rules]]\nserver = \"notes\"\ntool = \"sign_in\"\nrisk = \"read\"",
    )
    .await;
    let result = h
        .client
        .call_tool(CallToolRequestParams::new("notes__sign_in"))
        .await
        .expect("a result");
    assert!(text(&result).starts_with("Signed in"), "{}", text(&result));
    let asked = h.person.asked.all();
    assert_eq!(asked.len(), 1, "one ask: {asked:?}");
    assert_eq!(asked[0]["mode"], "url");
    let id = asked[0]["elicitationId"].clone();
    assert!(
        id.as_str().is_some_and(|id| id.starts_with("sign-in-")),
        "{id}"
    );
    let told = h.person.told.at_least("a notification", 1).await[0].clone();
    assert_eq!(told["method"], "notifications/elicitation/complete");
    assert_eq!(told["params"]["elicitationId"], id, "{told}");
}

#[tokio::test]
async fn a_2026_upstreams_ask_outlives_a_killed_gateway_and_the_retry_gets_the_result() {
    // ask_name, ruled high_write: the person confirms, then the server
    // asks in its own InputRequiredResult.
    let setup = setup()
        .config("[[rules]]\ntool = \"ask_name\"\nrisk = \"high_write\"")
        .upstream_keys("protocol = \"2026-07-28\"");
    let params = CallToolRequestParams::new("notes__ask_name");
    let answer_all = |needed: &rmcp::model::InputRequiredResult, name: &str| {
        let mut responses = serde_json::Map::new();
        for (key, _) in input_requests(needed) {
            let content = if key == "confirm" {
                json!({"confirm": true})
            } else {
                json!({"name": name})
            };
            responses.insert(key, json!({"action": "accept", "content": content}));
        }
        retried(
            &params,
            Json::Object(responses),
            needed.request_state.clone(),
        )
    };

    let (client, pid) = round_tripper(&setup).await;
    let confirm = needs(
        client
            .call_tool_once(params.clone())
            .await
            .expect("a result"),
    );
    // The person reads the confirmation before answering it.
    tokio::time::sleep(READING).await;
    let retry = answer_all(&confirm, "unused");
    let asked = needs(client.call_tool_once(retry).await.expect("a result"));
    let keys: Vec<String> = input_requests(&asked).keys().cloned().collect();
    assert!(
        keys.iter().all(|k| k.starts_with("upstream-")),
        "the server's ask: {keys:?}"
    );
    // The gateway, and its upstream with it, die while the person types.
    sigkill(&pid.to_string());
    drop(client);

    let (client, _) = round_tripper(&setup).await;
    let retry = answer_all(&asked, "Ada");
    let done = done(
        client
            .call_tool_once(retry.clone())
            .await
            .expect("a result"),
    );
    assert!(text(&done).contains("Hello, Ada"), "{}", text(&done));
    // The same retry again is refused: its state was used.
    refused_as_a_replay(&client, retry).await;
    client.cancel().await.expect("the gateway stops");
    let store = Store::open(setup.store_url()).await.expect("opens");
    let decisions: Vec<String> = store
        .audit_entries()
        .await
        .expect("reads")
        .into_iter()
        .map(|r| format!("{} {:?}", r.entry.tool, r.entry.decision))
        .collect();
    assert_eq!(decisions.len(), 1, "decided once: {decisions:?}");
    // The round before the kill was answered with the server's ask; the
    // round after it, with the result.
    let states = ledger(setup.store_url()).await;
    assert!(states.contains(&"answered".to_owned()), "{states:?}");
}

#[tokio::test]
async fn a_2026_upstreams_resource_ask_outlives_a_killed_gateway() {
    let setup = setup()
        .config("")
        .upstream_keys("protocol = \"2026-07-28\"");
    let params = rmcp::model::ReadResourceRequestParams::new("notes://owner");
    let (client, pid) = round_tripper(&setup).await;
    let asked = match client
        .read_resource_once(params.clone())
        .await
        .expect("a result")
    {
        rmcp::model::ReadResourceResponse::InputRequired(needed) => needed,
        other => panic!("expected the server's ask, got {other:?}"),
    };
    sigkill(&pid.to_string());
    drop(client);

    let (client, _) = round_tripper(&setup).await;
    let mut responses = serde_json::Map::new();
    for (key, _) in input_requests(&asked) {
        responses.insert(key, json!({"action": "accept", "content": {"name": "Ada"}}));
    }
    let mut retry = params.clone();
    retry.input_responses =
        Some(serde_json::from_value(Json::Object(responses)).expect("responses"));
    retry.request_state = asked.request_state.clone();
    let done = match client.read_resource_once(retry).await.expect("a result") {
        rmcp::model::ReadResourceResponse::Complete(result) => result,
        other => panic!("expected the resource, got {other:?}"),
    };
    let text = serde_json::to_string(&done).expect("serializes");
    assert!(text.contains("These notes belong to Ada."), "{text}");
    client.cancel().await.expect("the gateway stops");
}

#[tokio::test]
async fn on_stdio_the_inbox_listener_serves_metrics_to_the_operator_only() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let config = format!(
        "[inbox]\nlisten = \"127.0.0.1:{port}\"\ntoken = \"metrics-operator-token\"\n\n\
         [[rules]]\ntool = \"read_note\"\nrisk = \"read\""
    );
    let h = gateway_on(json!({}), Vec::new(), &config, "").await;
    let mut params = CallToolRequestParams::new("notes__read_note");
    params.arguments = json!({"name": "absent"}).as_object().cloned();
    let read = h.client.call_tool(params).await.expect("a result");
    assert!(text(&read).contains("no note named"), "{}", text(&read));
    let url = format!("http://127.0.0.1:{port}/metrics");
    let http = reqwest::Client::new();
    let anonymous = http.get(&url).send().await.expect("the inbox answers");
    assert_eq!(anonymous.status(), reqwest::StatusCode::UNAUTHORIZED);
    let wrong = http
        .get(&url)
        .bearer_auth("not-the-token")
        .send()
        .await
        .expect("the inbox answers");
    assert_eq!(wrong.status(), reqwest::StatusCode::UNAUTHORIZED);
    // The call and its decision were counted before its answer went out.
    let counted = "askgate_upstream_calls_total{server=\"notes\",outcome=\"answered\"} 1";
    let scraped = http
        .get(&url)
        .bearer_auth("metrics-operator-token")
        .send()
        .await
        .expect("the inbox answers")
        .text()
        .await
        .expect("a body");
    assert!(scraped.contains(counted), "{scraped}");
    assert!(
        scraped.contains("askgate_decisions_total{method=\"not_required\"} 1"),
        "{scraped}"
    );
    assert!(scraped.contains("askgate_pending_asks 0"), "{scraped}");
    assert!(!scraped.contains("absent"), "no argument in the metrics");
    h.stop().await;
}
