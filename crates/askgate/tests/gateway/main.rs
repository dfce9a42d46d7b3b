//! The gateway end to end: an rmcp client spawns `askgate gateway -- <the
//! example upstream>` and calls through it, as a desktop client would.

use askgate_testkit::gateway::{Gateway, Setup};
use askgate_testkit::in_process::InProcess;
use askgate_testkit::mcp::discover;
use askgate_testkit::{Manner, Person, binaries};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitResult, InputRequiredResult,
    ProtocolVersion,
};
use rmcp::service::{ClientServiceExt, RoleClient, RunningService};
use serde_json::Value as Json;

/// The express lane beyond the happy path: upstream errors, cancels, an
/// upstream that dies, a large result.
mod express_lane;

/// A client speaking Streamable HTTP by hand.
#[path = "../support/http_session.rs"]
mod http_session;

/// The trust rules end to end: a person's no, the caller's word, what no
/// person saw, a cancelled call.
mod trust;

/// Who approves what: a quorum of a group, answered in the inbox by
/// each person as themselves.
mod approvals;
mod asks;
/// Requests that do not fit, answers too long: every one ends.
mod bad_input;
mod calls;
/// A call a person confirmed, sent on the express lane by the handler.
mod decided_lane;
/// A classic client's call a person confirms, handed to the handler by
/// the stdio tap rather than through rmcp's service loop.
mod handed;
mod inbox_links;
mod key_rotation;
mod legacy_tasks;
/// What the gateway writes to stderr.
mod logs;
mod mrtr;
mod names;
mod outages;
mod raw;
mod restarts;
mod startup;
mod stops;
mod tasks;
/// How long an upstream may take: its handshake, a call.
mod timeouts;

/// Whether `python3` is missing, said on stderr: a test whose upstream is
/// a Python script is then skipped (CI has it).
fn python_missing() -> bool {
    let missing = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err();
    if missing {
        eprintln!("skipped: python3 is not installed (CI has it)");
    }
    missing
}

/// The `[[upstreams]]` table of a stdio MCP server in Python named `name`,
/// listing one tool, `tool`: it answers `initialize`, `tools/list` and
/// `ping`, and runs `on_call` — Python, each line indented eight spaces,
/// with the request as `message` and `json`, `sys` and `time` imported —
/// for each `tools/call`. Other keys of the table may follow it.
fn python_upstream(name: &str, tool: &str, on_call: &str) -> String {
    let script = format!(
        r#"
import json, sys, time
answers = {{
    "initialize": {{"protocolVersion": "2025-06-18", "capabilities": {{"tools": {{}}}},
                   "serverInfo": {{"name": "{name}", "version": "1"}}}},
    "tools/list": {{"tools": [{{"name": "{tool}", "inputSchema": {{"type": "object"}}}}]}},
    "ping": {{}},
}}
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if "id" in message and method in answers:
        print(json.dumps({{"jsonrpc": "2.0", "id": message["id"],
                          "result": answers[method]}}), flush=True)
    elif method == "tools/call":
{on_call}"#
    );
    format!(
        "[[upstreams]]\nname = \"{name}\"\ncommand = \"python3\"\nargs = [\"-c\", {script:?}]\n"
    )
}

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

/// [`gateway_on`], with the gateway in the test's own process over a
/// duplex pipe (no `askgate` process, no express lane): for the tests of
/// what the library does, whatever runs it.
async fn in_process_on(
    capabilities: Json,
    script: Vec<ElicitResult>,
    config: &str,
    upstream: &str,
) -> InProcess {
    setup()
        .config(config)
        .upstream_keys(upstream)
        .in_process(person(capabilities, script))
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

/// The example upstream's tool `name` as the gateway lists it: the only
/// upstream keeps its tools' names.
fn tool(name: &str) -> String {
    name.to_owned()
}

async fn call(h: &Gateway, name: &str, args: Json) -> CallToolResult {
    h.client
        .call_tool(askgate_testkit::mcp::call(&tool(name), args))
        .await
        .expect("a result")
}

/// The names of the tools the gateway lists now.
async fn tool_names(h: &Gateway) -> Vec<String> {
    h.client
        .list_all_tools()
        .await
        .expect("tools/list answers")
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect()
}

/// A call of `name` on the upstream `notes` (the config's name for it,
/// and its only upstream: the tool keeps its name), by `client`.
async fn on_notes(
    client: &RunningService<RoleClient, Person>,
    name: &str,
    args: Json,
) -> CallToolResult {
    client
        .call_tool(askgate_testkit::mcp::call(name, args))
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

/// A retry whose sealed state was used already is answered from the
/// ledger: the call already ran, and is not sent again.
async fn answered_from_the_ledger(
    client: &RunningService<RoleClient, Person>,
    retry: CallToolRequestParams,
) {
    let result = done(client.call_tool_once(retry).await.expect("a result"));
    let text = askgate_testkit::mcp::text(&result);
    assert!(
        text.contains("already ran: its server answered at")
            && text.contains("the call was not sent again"),
        "{text}"
    );
}

/// The input requests of an `InputRequiredResult`, as JSON by key.
fn input_requests(result: &InputRequiredResult) -> serde_json::Map<String, Json> {
    serde_json::to_value(result.input_requests.clone().unwrap_or_default())
        .expect("json")
        .as_object()
        .cloned()
        .expect("a map")
}
