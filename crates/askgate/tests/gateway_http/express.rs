//! The express lane over Streamable HTTP: a call that needs no person is
//! answered as one JSON body, decided and recorded for the session's
//! principal, under its request's threshold header, as on rmcp's path; a
//! request whose threshold header is wrong stays rmcp's; a client's cancel
//! of a call on the lane reaches its server.

use askgate_store::{Decision, Store};
use askgate_testkit::gateway::{Listening, ledger};
use askgate_testkit::within;
use serde_json::{Value as Json, json};

use super::http_session::{HttpSession, message_of};
use super::{ALICE, setup};

/// Reads ruled `read`: they need no person.
const READS: &str = "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n\n\
                     [[rules]]\ntool = \"wait_for_note\"\nrisk = \"read\"\n";

/// What the example upstream writes when a call reaches it
/// (`askgate_conformance::example_upstream`), and when a `wait_for_note`
/// is cancelled.
const WAIT_ARRIVED: &str = "askgate-example-upstream: call wait_for_note";
const WAIT_CANCELLED: &str = "askgate-example-upstream: wait_for_note cancelled";

/// A gateway with the reads above whose log says when a call takes the
/// lane.
async fn start() -> Listening {
    setup(READS)
        .logging("askgate_mcp=info,askgate_gateway::express=debug")
        .listen()
        .await
}

/// A `tools/call` of `name` with `arguments`, as request `id`.
fn call(id: u64, name: &str, arguments: Json) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

/// The media type of `response`'s body, without its parameters.
fn media_type(response: &reqwest::Response) -> String {
    let value = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The ledger of the store at `url` once it holds `calls` calls: a call on
/// the lane is recorded in one write as it ends, which the client's answer
/// does not wait for.
async fn ended(url: &str, calls: usize) -> Vec<String> {
    within("the calls' records", async {
        loop {
            let states = ledger(url).await;
            if states.len() == calls {
                return states;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test]
async fn a_read_over_http_is_answered_as_json_and_recorded_for_the_sessions_principal() {
    let gateway = start().await;
    let session = HttpSession::open(&gateway.url, ALICE, "2025-06-18", json!({})).await;
    let response = session
        .post(&call(7, "read_note", json!({"name": "todo"})))
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(media_type(&response), "application/json");
    let answer: Json = response.json().await.expect("one JSON message");
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("no note named \"todo\""), "{answer}");
    gateway
        .log()
        .line_with(&["on the express lane", "read_note"])
        .await;
    // Recorded as rmcp's path records it: for alice, who opened the
    // session, decided with no one asked, answered.
    assert_eq!(ended(gateway.store_url(), 1).await, ["answered"]);
    let store = Store::open(gateway.store_url()).await.expect("opens");
    let entry = askgate_testkit::last_audited(&store).await;
    assert_eq!(entry.decision, Decision::NotRequired);
    assert_eq!(entry.principal.as_deref(), Some("alice"));
    assert_eq!(entry.tool, "read_note");
    let principal: String =
        askgate_testkit::sqlite_value(gateway.store_url(), "SELECT principal FROM calls").await;
    assert_eq!(principal, "alice");
    assert_eq!(store.verify_audit().await.expect("verifies").broken, None);
    store.close().await;
}

#[tokio::test]
async fn each_request_on_the_lane_is_decided_under_its_own_threshold_header() {
    // The gateway approves up to medium_write; a read is auto-approved.
    let gateway = setup(&format!("auto_approve = \"medium_write\"\n\n{READS}"))
        .logging("askgate_mcp=info,askgate_gateway::express=debug")
        .listen()
        .await;
    let session = HttpSession::open(&gateway.url, ALICE, "2025-06-18", json!({})).await;
    let version = Some(session.version.as_str());
    let read = |id| call(id, "read_note", json!({"name": "todo"}));
    let approved = session.post(&read(1)).await;
    assert_eq!(media_type(&approved), "application/json");
    // This request lowers the threshold to none: its read proceeds as one
    // that needs no one, not as one the threshold approved.
    let lowered = session
        .post_with(&read(2), version, &[("askgate-auto-approve-risk", "none")])
        .await;
    assert_eq!(media_type(&lowered), "application/json");
    let lowered: Json = lowered.json().await.expect("one JSON message");
    assert_eq!(lowered["id"], 2);
    assert_eq!(ended(gateway.store_url(), 2).await.len(), 2);
    let store = Store::open(gateway.store_url()).await.expect("opens");
    let decisions: Vec<Decision> = askgate_testkit::audited(&store)
        .await
        .into_iter()
        .map(|entry| entry.decision)
        .collect();
    store.close().await;
    assert_eq!(decisions, [Decision::AutoApproved, Decision::NotRequired]);
    // A threshold that is no risk level: rmcp's answer, saying so; the
    // lane does not take the call.
    let refused = session
        .post_with(&read(3), version, &[("askgate-auto-approve-risk", "lots")])
        .await;
    let refused = message_of(refused).await;
    assert_eq!(refused["id"], 3);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("askgate-auto-approve-risk"), "{refused}");
    let log = gateway.log().all();
    let on_lane = log
        .iter()
        .filter(|line| line.contains("on the express lane"))
        .count();
    assert_eq!(on_lane, 2, "{log:?}");
}

#[tokio::test]
async fn a_read_on_the_lane_the_client_cancels_is_cancelled_at_its_server() {
    let gateway = start().await;
    let session = HttpSession::open(&gateway.url, ALICE, "2025-06-18", json!({})).await;
    let waiting = call(
        9,
        "wait_for_note",
        json!({"name": "never", "wait_ms": 3_600_000}),
    );
    let answer = {
        let session = &session;
        async move { session.post(&waiting).await }
    };
    let (answer, ()) = tokio::join!(answer, async {
        gateway
            .log()
            .line_with(&["on the express lane", "wait_for_note"])
            .await;
        gateway.log().line_with(&[WAIT_ARRIVED]).await;
        let cancelled = session
            .post(
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": 9, "reason": "moved on"}}),
            )
            .await;
        assert_eq!(cancelled.status(), 202);
        gateway.log().line_with(&[WAIT_CANCELLED]).await;
    });
    // The POST still ends, with an answer saying what became of the call.
    assert_eq!(media_type(&answer), "application/json");
    let answer: Json = answer.json().await.expect("one JSON message");
    assert_eq!(answer["id"], 9);
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("cancelled"), "{answer}");
    // Sent, and given up while its server worked on it: it may have run
    // (left at `sent`, it would read as a call a crash cut off).
    assert_eq!(ended(gateway.store_url(), 1).await, ["may_have_run"]);
}
