//! How long an upstream may take: a server that never answers its
//! handshake does not hold the gateway up, and a call that gets no answer
//! is given up on at its `call_timeout` — its server told to cancel it,
//! its client that it may have run — on the rmcp path and on the express
//! lane alike.

use askgate_testkit::gateway::{Gateway, ledger};
use askgate_testkit::mcp::call;
use askgate_testkit::within;
use rmcp::ServiceError;
use serde_json::json;

use super::{person, setup};

/// What the example upstream writes when a `wait_for_note` is cancelled
/// (`askgate_conformance::example_upstream::WAIT_CANCELLED`).
const WAIT_CANCELLED: &str = "askgate-example-upstream: wait_for_note cancelled";

/// A call that waits an hour for a note nobody writes.
fn waiting_forever() -> rmcp::model::CallToolRequestParams {
    call(
        "wait_for_note",
        json!({"name": "never", "wait_ms": 60 * 60 * 1000}),
    )
}

/// Call `wait_for_note` through a gateway whose config is `config`, the
/// upstream limited to one second a call: the client's error, the ledger,
/// and whether the upstream heard the cancel.
async fn given_up_on(config: &str, on_the_lane: bool) {
    let h = setup()
        .config(config)
        .upstream_keys("call_timeout = \"1s\"")
        .logging("askgate_gateway::express=debug")
        .connect(person(json!({}), vec![]))
        .await;
    let refused = within("the call's end", h.client.call_tool(waiting_forever())).await;
    let Err(ServiceError::McpError(error)) = refused else {
        panic!("expected an error, got {refused:?}");
    };
    assert!(
        error
            .message
            .contains("no answer within 1s (its call_timeout)")
            || error.message.contains("for 1s (its call_timeout)"),
        "{}",
        error.message
    );
    assert!(error.message.contains("may have run"), "{}", error.message);
    assert_eq!(
        h.log
            .has_line_with(&["on the express lane", "wait_for_note"]),
        on_the_lane
    );
    // Its server was told.
    h.log.line_with(&[WAIT_CANCELLED]).await;
    let stopped = h.stop().await;
    assert_eq!(ledger(stopped.store_url()).await, ["may_have_run"]);
}

#[tokio::test]
async fn a_call_past_its_timeout_is_cancelled_at_its_server_and_may_have_run() {
    // Reads go through rmcp when the lane is off.
    given_up_on(
        "express_lane = false\n[[rules]]\ntool = \"wait_for_note\"\nrisk = \"read\"",
        false,
    )
    .await;
}

#[tokio::test]
async fn a_read_on_the_express_lane_past_its_timeout_is_given_up_on_the_same_way() {
    given_up_on("[[rules]]\ntool = \"wait_for_note\"\nrisk = \"read\"", true).await;
}

#[test]
fn a_server_that_never_answers_its_handshake_is_given_up_on_and_the_rest_served() {
    let setup = setup().config("").tables(
        "[[upstreams]]\nname = \"mute\"\ncommand = \"sh\"\nargs = [\"-c\", \"cat > /dev/null\"]\n\
         start_timeout = \"1s\"\n",
    );
    // Writes the config file.
    let _ = setup.command();
    let mut tools = std::process::Command::new(&setup.binaries().askgate)
        .args(["tools", "--config"])
        .arg(setup.config_path())
        .env("ASKGATE_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("askgate runs");
    let started = std::time::Instant::now();
    while tools.try_wait().expect("waits").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = tools.kill();
            panic!("askgate tools still waits on a server that never answers its handshake");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let output = tools.wait_with_output().expect("its output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stderr.contains("did not answer the MCP handshake within 1s (its start_timeout)"),
        "{stderr}"
    );
    assert!(
        stdout.contains("read_note"),
        "the other server's tools: {stdout}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_its_list_is_left_out_of_it_and_the_rest_listed() {
    // Answers its handshake (rmcp's first request is id 0), then nothing.
    let script = r#"read -r line; printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hung","version":"1"}}}'; while read -r _; do :; done"#;
    let h = setup()
        .config("")
        .tables(&format!(
            "[[upstreams]]\nname = \"hung\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n\
             start_timeout = \"1s\"\n"
        ))
        .connect(person(json!({}), vec![]))
        .await;
    let tools = within("the tools", h.client.list_all_tools())
        .await
        .expect("listed");
    assert!(
        tools.iter().any(|tool| tool.name == "notes__read_note"),
        "{tools:?}"
    );
    h.log.line_with(&["listing tools failed", "hung"]).await;
}

/// A stdio server that lists one resource and never answers its read.
pub(super) const SLOW_READS: &str = r#"
import json, sys
answers = {
    "initialize": {"protocolVersion": "2025-06-18", "capabilities": {"resources": {}},
                   "serverInfo": {"name": "slow", "version": "1"}},
    "resources/list": {"resources": [{"uri": "slow://one", "name": "one"}]},
    "resources/templates/list": {"resourceTemplates": []},
    "tools/list": {"tools": []},
    "prompts/list": {"prompts": []},
    "ping": {},
}
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and message.get("method") in answers:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                          "result": answers[message["method"]]}), flush=True)
    elif message.get("method") == "notifications/cancelled":
        print("slow: cancelled", file=sys.stderr, flush=True)
"#;

#[tokio::test]
async fn a_resource_read_past_its_timeout_is_given_up_and_its_server_told() {
    if super::python_missing() {
        return;
    }
    let h = setup()
        .config("")
        .tables(&format!(
            "[[upstreams]]\nname = \"slow\"\ncommand = \"python3\"\nargs = [\"-c\", {SLOW_READS:?}]\n\
             call_timeout = \"1s\"\n"
        ))
        .connect(person(json!({}), vec![]))
        .await;
    let read = within(
        "the read's end",
        h.client
            .read_resource(rmcp::model::ReadResourceRequestParams::new("slow://one")),
    )
    .await;
    let Err(ServiceError::McpError(error)) = read else {
        panic!("expected an error, got {read:?}");
    };
    assert!(
        error.message.contains("slow failed to"),
        "{}",
        error.message
    );
    h.log.line_with(&["slow: cancelled"]).await;
}

/// Call `ask_name` through a gateway whose config is `config`, the
/// upstream limited to two seconds a call (time for its ask to arrive on
/// a busy machine), and a person who takes six seconds to answer: the
/// call is not given up while the person reads.
async fn answered_after_its_limit(config: &str, on_the_lane: bool) {
    let slow = askgate_testkit::Person::new(json!({"elicitation": {"form": {}}}))
        .speaking(rmcp::model::ProtocolVersion::V_2025_11_25)
        .in_manner(askgate_testkit::Manner::Headless)
        .before_answering(|_| tokio::time::sleep(std::time::Duration::from_secs(6)))
        .answering(vec![askgate_testkit::person::accept(
            json!({"name": "Ada"}),
        )]);
    let h = setup()
        .config(config)
        .upstream_keys("call_timeout = \"2s\"")
        .logging("askgate_gateway::express=debug")
        .connect(slow)
        .await;
    let result = within(
        "the call's end",
        h.client.call_tool(call("ask_name", json!({}))),
    )
    .await
    .expect("a result, not a timeout");
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    assert!(text.contains("Hello, Ada"), "{result:?}");
    assert_eq!(
        h.log.has_line_with(&["on the express lane", "ask_name"]),
        on_the_lane
    );
    let stopped = h.stop().await;
    assert_eq!(ledger(stopped.store_url()).await, ["answered"]);
}

#[tokio::test]
async fn a_call_whose_server_asks_the_person_is_not_given_up_while_the_person_answers() {
    answered_after_its_limit(
        "express_lane = false\n[[rules]]\ntool = \"ask_name\"\nrisk = \"read\"",
        false,
    )
    .await;
}

#[tokio::test]
async fn a_call_on_the_express_lane_is_not_given_up_while_its_server_asks_the_person() {
    answered_after_its_limit("[[rules]]\ntool = \"ask_name\"\nrisk = \"read\"", true).await;
}

/// What the one tool of a Python server (see `python_upstream`) does: it
/// works for 2.5 s, telling of progress every half second, then answers.
const WORKING: &str = r#"
        token = message["params"].get("_meta", {}).get("progressToken")
        for step in range(5):
            time.sleep(0.5)
            if token is not None:
                print(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                                  "params": {"progressToken": token, "progress": step + 1,
                                             "total": 5}}), flush=True)
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
            "content": [{"type": "text", "text": "worked"}]}}), flush=True)
"#;

/// A gateway with `config` over `WORKING` (`working`, limited to one second
/// a call), whose log says which path a call took, its client `person`.
async fn over_working(config: &str, person: askgate_testkit::Person) -> Gateway {
    setup()
        .config(config)
        .tables(&format!(
            "{}call_timeout = \"1s\"\n",
            super::python_upstream("working", "work", WORKING)
        ))
        .logging("askgate_gateway::express=debug")
        .connect(person)
        .await
}

#[tokio::test]
async fn a_confirmed_call_whose_server_tells_of_progress_on_the_lane_runs_past_its_limit_and_the_client_hears_it()
 {
    if super::python_missing() {
        return;
    }
    let yes = askgate_testkit::person::accept(json!({"confirm": true}));
    let h = over_working(
        "[[rules]]\ntool = \"work\"\nrisk = \"medium_write\"",
        person(json!({"elicitation": {"form": {}}}), vec![yes]),
    )
    .await;
    let result = within(
        "the call's end",
        h.client.call_tool(call("working__work", json!({}))),
    )
    .await
    .expect("a result, not a timeout");
    assert_eq!(
        result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.as_str()),
        Some("worked"),
        "{result:?}"
    );
    assert!(
        h.log
            .has_line_with(&["sent on the express lane by its handler", "work"])
    );
    // Handed to the handler by the tap: the progress goes to the client
    // all the same.
    assert!(h.log.has_line_with(&[super::handed::HANDED, "work"]));
    // Its server's five notifications, each under the client's own token
    // (the client handles each in a task of its own: they may still be on
    // their way when the answer is read).
    h.person
        .progress
        .at_least("the server's five progress notifications", 5)
        .await;
}

#[tokio::test]
async fn a_call_whose_server_tells_of_progress_runs_past_its_limit_on_either_path() {
    if super::python_missing() {
        return;
    }
    for lane in [true, false] {
        let h = over_working(
            &format!("express_lane = {lane}\n[[rules]]\ntool = \"work\"\nrisk = \"read\""),
            person(json!({}), vec![]),
        )
        .await;
        let result = within(
            "the call's end",
            h.client.call_tool(call("working__work", json!({}))),
        )
        .await
        .unwrap_or_else(|e| panic!("lane {lane}: a result, not {e:?}"));
        let text = result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        assert_eq!(text, "worked", "lane {lane}: {result:?}");
        assert_eq!(h.log.has_line_with(&["on the express lane", "work"]), lane);
    }
}

#[tokio::test]
async fn the_gateway_ends_with_its_clients_stdin_while_a_server_never_answers_its_handshake() {
    use rmcp::ServiceExt;
    // A server that reads and never answers, given the longest start
    // there is: the gateway does not give up on it before the test does.
    let setup = setup().config("").tables(
        "[[upstreams]]\nname = \"mute\"\ncommand = \"sh\"\nargs = [\"-c\", \"cat > /dev/null\"]\n\
         start_timeout = \"10m\"\n",
    );
    let mut command = setup.command();
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut gateway = command.spawn().expect("the gateway starts");
    let log = askgate_testkit::Seen::default();
    askgate_testkit::process::keep_lines_async(gateway.stderr.take().expect("piped"), log);
    let pipes = (
        gateway.stdout.take().expect("piped"),
        gateway.stdin.take().expect("piped"),
    );
    let client = within(
        "the handshake, with a server still starting",
        person(json!({}), vec![]).serve(pipes),
    )
    .await
    .expect("the client connects");
    // The client quits: the gateway's stdin ends.
    client.cancel().await.expect("the client's side closes");
    let status = within("the gateway's exit at the end of its stdin", gateway.wait())
        .await
        .expect("the gateway exits");
    assert!(status.success(), "{status:?}");
}
