//! The calls the gateway's handler sends — a call a person confirmed —
//! on a stdio upstream's express lane: the client, the upstream and the
//! records see what they see through rmcp (`express_lane = false`), and
//! the gateway's log says which path the call took, so a call that fell
//! back to rmcp cannot pass for the lane.

use askgate_store::{Decision, Store};
use askgate_testkit::gateway::{Gateway, ledger};
use askgate_testkit::mcp::{call, send_call, text};
use askgate_testkit::person::accept;
use askgate_testkit::within;
use rmcp::ServiceError;
use rmcp::model::ElicitResult;
use serde_json::json;

use super::{person, setup};

/// What the gateway logs (at debug) when its handler sends a call on the
/// lane.
const ON_THE_LANE: &str = "sent on the express lane by its handler";

/// What the example upstream writes to stderr when a `wait_for_note`
/// arrives, and when it is cancelled.
const WAIT_ARRIVED: &str = "askgate-example-upstream: call wait_for_note";
const WAIT_CANCELLED: &str = "askgate-example-upstream: wait_for_note cancelled";
/// What it writes, with the reason it was given, at each cancel.
const CANCELLED_BECAUSE: &str = askgate_conformance::example_upstream::CANCELLED_BECAUSE;

/// The example upstream's tools ruled so that a person confirms each call
/// but a read.
pub(super) const CONFIRMED: &str = "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n\n\
                         [[rules]]\ntool = \"*\"\nrisk = \"medium_write\"\n";

/// The same, every call through rmcp.
pub(super) fn through_rmcp() -> String {
    format!("express_lane = false\n{CONFIRMED}")
}

/// A gateway with `config` and `upstream` (keys of `notes`' table), whose
/// log says which path a call took; its client's person answers from
/// `script`.
async fn watched(config: &str, upstream: &str, script: Vec<ElicitResult>) -> Gateway {
    setup()
        .config(config)
        .upstream_keys(upstream)
        .logging("askgate_gateway::express=debug")
        .connect(person(json!({"elicitation": {"form": {}}}), script))
        .await
}

/// The person says yes to the call.
fn yes() -> ElicitResult {
    accept(json!({"confirm": true}))
}

/// Stop the gateway: its ledger's states, and the decisions of its audit
/// chain (checked to verify).
pub(super) async fn records(h: Gateway) -> (Vec<String>, Vec<Decision>) {
    let stopped = h.stop().await;
    let url = stopped.store_url();
    let store = Store::open(url).await.expect("the store opens");
    let verification = store.verify_audit().await.expect("verifies");
    assert_eq!(verification.broken, None, "the audit chain is unbroken");
    let audited = askgate_testkit::audited(&store).await;
    store.close().await;
    (
        ledger(url).await,
        audited.into_iter().map(|e| e.decision).collect(),
    )
}

/// What a client and the records see of a run: the answers' texts or
/// errors, the ledger, the audited decisions.
type Seen = (Vec<String>, Vec<String>, Vec<Decision>);

#[tokio::test]
async fn a_confirmed_call_goes_on_the_lane_and_neither_client_nor_records_can_tell() {
    let mut seen: Vec<(bool, Seen)> = Vec::new();
    for config in [CONFIRMED.to_owned(), through_rmcp()] {
        // Yes to both writes.
        let script = vec![yes(), yes()];
        let h = watched(&config, "", script).await;
        let mut answers = Vec::new();
        let write = call("write_note", json!({"name": "todo", "text": "milk"}));
        let written = within("the write", h.client.call_tool(write))
            .await
            .expect("the write answers");
        answers.push(text(&written));
        // The upstream's own error, on a call a person confirmed.
        let bad = call("write_note", json!({"name": "../x", "text": "no"}));
        let refused = within("the bad write", h.client.call_tool(bad)).await;
        answers.push(match refused {
            Ok(result) => text(&result),
            Err(ServiceError::McpError(error)) => format!("{:?}: {}", error.code, error.message),
            Err(other) => panic!("expected an answer or the upstream's error, got {other:?}"),
        });
        let read = call("read_note", json!({"name": "todo"}));
        let read = within("the read", h.client.call_tool(read))
            .await
            .expect("the read answers");
        answers.push(text(&read));
        h.log
            .line_with(&["askgate-example-upstream: call read_note"])
            .await;
        // Taken from the client by the tap, and sent on the lane.
        let lane = h.log.has_line_with(&[ON_THE_LANE, "write_note"])
            && h.log.has_line_with(&[super::handed::HANDED, "write_note"]);
        let through_rmcp = !h.log.has_line_with(&[super::handed::HANDED]);
        let (ledger, decisions) = records(h).await;
        seen.push((lane, (answers, ledger, decisions)));
        assert_eq!(lane, !through_rmcp, "one path or the other, whole");
    }
    let (on, off) = (&seen[0], &seen[1]);
    assert!(on.0, "the confirmed write was handed and took the lane");
    assert!(!off.0, "express_lane = false: it went through rmcp");
    assert_eq!(on.1, off.1, "the client and the records see the same");
    let (answers, ledger, _) = &on.1;
    assert!(
        answers[2].contains("milk"),
        "the write was done: {answers:?}"
    );
    assert!(
        answers[1].contains("must be"),
        "the upstream's error: {answers:?}"
    );
    let mut states = ledger.clone();
    states.sort();
    assert_eq!(states, ["answered", "answered", "failed"]);
}

/// Confirm a `wait_for_note` through a gateway with `config`, cancel it
/// once its server works on it: whether it took the lane, and what the
/// ledger and the audit chain say.
async fn cancelled_while_it_runs(config: &str) -> (bool, Vec<String>, Vec<Decision>) {
    let h = watched(config, "", vec![yes()]).await;
    let waiting = call(
        "wait_for_note",
        json!({"name": "never", "wait_ms": 60 * 60 * 1000}),
    );
    let handle = send_call(h.client.peer(), waiting).await;
    h.log.line_with(&[WAIT_ARRIVED]).await;
    handle.cancel(None).await.expect("the cancel is sent");
    // Its server was told, and stops waiting.
    h.log.line_with(&[WAIT_CANCELLED]).await;
    // It was told why, as rmcp tells it of a request given up.
    let told = h.log.line_with(&[CANCELLED_BECAUSE]).await;
    assert!(
        told.contains("\"request abandoned by the caller\""),
        "{told}"
    );
    // The gateway goes on serving.
    let later = call("read_note", json!({"name": "never"}));
    let later = within("a later read", h.client.call_tool(later))
        .await
        .expect("a later read answers");
    assert!(text(&later).contains("no note named"), "{}", text(&later));
    let lane = h.log.has_line_with(&[ON_THE_LANE, "wait_for_note"]);
    let (ledger, decisions) = records(h).await;
    (lane, ledger, decisions)
}

#[tokio::test]
async fn a_confirmed_call_its_client_cancels_while_it_runs_is_cancelled_at_its_server_on_either_path()
 {
    let on = cancelled_while_it_runs(CONFIRMED).await;
    let off = cancelled_while_it_runs(&through_rmcp()).await;
    assert!(on.0 && !off.0, "the lane, then rmcp: {} {}", on.0, off.0);
    // Sent, and given up while its server worked on it: it may have run.
    assert_eq!((&on.1, &on.2), (&off.1, &off.2));
    assert_eq!(on.1[0], "may_have_run", "{:?}", on.1);
}

/// Confirm a `wait_for_note` through a gateway with `config`, its
/// upstream limited to one second a call: the client's error, and whether
/// the call took the lane.
async fn past_its_timeout(config: &str) -> (bool, String, Vec<String>) {
    let h = watched(config, "call_timeout = \"1s\"", vec![yes()]).await;
    let waiting = call(
        "wait_for_note",
        json!({"name": "never", "wait_ms": 60 * 60 * 1000}),
    );
    let refused = within("the call's end", h.client.call_tool(waiting)).await;
    let Err(ServiceError::McpError(error)) = refused else {
        panic!("expected an error, got {refused:?}");
    };
    // Its server was told.
    h.log.line_with(&[WAIT_CANCELLED]).await;
    let lane = h.log.has_line_with(&[ON_THE_LANE, "wait_for_note"]);
    let (ledger, _) = records(h).await;
    (lane, error.message.to_string(), ledger)
}

#[tokio::test]
async fn a_confirmed_call_past_its_timeout_is_given_up_the_same_way_on_the_lane() {
    let on = past_its_timeout(CONFIRMED).await;
    let off = past_its_timeout(&through_rmcp()).await;
    assert!(on.0 && !off.0, "the lane, then rmcp: {} {}", on.0, off.0);
    assert!(
        on.1.contains("for 1s (its call_timeout)") && on.1.contains("may have run"),
        "{}",
        on.1
    );
    assert_eq!((&on.1, &on.2), (&off.1, &off.2));
}

#[tokio::test]
async fn a_confirmed_call_whose_server_asks_the_person_on_the_lane_gets_the_answer() {
    // Yes to the call, then the name its server asks for.
    let script = vec![yes(), accept(json!({"name": "Ada"}))];
    let h = watched(CONFIRMED, "", script).await;
    let asked = within("the call", h.client.call_tool(call("ask_name", json!({}))))
        .await
        .expect("a result");
    assert!(text(&asked).contains("Hello, Ada"), "{}", text(&asked));
    assert!(h.log.has_line_with(&[ON_THE_LANE, "ask_name"]));
    let (ledger, _) = records(h).await;
    assert_eq!(ledger, ["answered"]);
}

/// Confirm a `wait_for_note` through a gateway with `config`, its stop
/// grace one second, and stop the gateway with SIGTERM while its server
/// works on it: whether it took the lane, and what the ledger says of it
/// once the gateway has exited.
async fn stopped_while_it_runs(config: &str) -> (bool, Vec<String>) {
    let h = watched(&format!("stop_grace = \"1s\"\n{config}"), "", vec![yes()]).await;
    let waiting = call(
        "wait_for_note",
        json!({"name": "never", "wait_ms": 60 * 60 * 1000}),
    );
    let _handle = send_call(h.client.peer(), waiting).await;
    h.log.line_with(&[WAIT_ARRIVED]).await;
    let lane = h.log.has_line_with(&[ON_THE_LANE, "wait_for_note"]);
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &h.pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(signalled.success());
    // Past its grace the call is cancelled; the gateway exits.
    within("the gateway's exit", async {
        while std::fs::read_to_string(format!("/proc/{}/stat", h.pid))
            .is_ok_and(|stat| !stat.contains(") Z "))
        {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    (lane, h.ledger().await)
}

#[tokio::test]
async fn a_confirmed_call_in_flight_past_the_stop_grace_ends_as_it_does_through_rmcp() {
    let on = stopped_while_it_runs(CONFIRMED).await;
    let off = stopped_while_it_runs(&through_rmcp()).await;
    assert!(on.0 && !off.0, "the lane, then rmcp: {} {}", on.0, off.0);
    // Given up as the gateway stopped: it may have run.
    assert_eq!(on.1, off.1);
    assert_eq!(on.1, ["may_have_run"]);
}

/// What the one tool of a Python server (see `python_upstream`) does: it
/// answers with what is not a tool's result (its `content` a string).
const ODD: &str = r#"
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                          "result": {"content": "not a list"}}), flush=True)
"#;

#[tokio::test]
async fn a_confirmed_calls_answer_that_is_not_a_tools_result_fails_it_on_either_path() {
    if super::python_missing() {
        return;
    }
    let mut seen = Vec::new();
    for lane in [true, false] {
        let h = setup()
            .config(&format!(
                "express_lane = {lane}\n[[rules]]\ntool = \"odd\"\nrisk = \"medium_write\""
            ))
            .tables(&super::python_upstream("odd", "odd", ODD))
            .logging("askgate_gateway::express=debug")
            .connect(person(json!({"elicitation": {"form": {}}}), vec![yes()]))
            .await;
        let answered = within("the call", h.client.call_tool(call("odd__odd", json!({})))).await;
        let Err(ServiceError::McpError(error)) = answered else {
            panic!("lane {lane}: expected an error, got {answered:?}");
        };
        assert_eq!(h.log.has_line_with(&[ON_THE_LANE, "odd"]), lane);
        let (ledger, _) = records(h).await;
        seen.push((error.code, ledger));
    }
    // The client is told it failed, and the ledger does not say answered.
    assert_eq!(seen[0], seen[1]);
    assert_ne!(seen[0].1, ["answered"]);
}
