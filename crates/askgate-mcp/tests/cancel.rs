//! Waiting on a person ends when the client cancels the request
//! (`notifications/cancelled`) or the wait times out — as "nobody
//! answered", never as a person's decision — and the ask is withdrawn from
//! the client, so no dialog stays up whose answer nobody reads.

use std::time::Duration;

use askgate_core::{Ask, Form};
use askgate_mcp::{AskOptions, ask_person};
use askgate_testkit::mcp::{Tools, complete_text, connect};
use askgate_testkit::{Manner, Person, Seen};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, RoleClient, RunningService};
use serde_json::json;

/// A server whose tool asks and records why nobody answered in `ended`.
fn server(timeout: Option<Duration>, ended: Seen<String>) -> Tools {
    Tools::new(move |_params, cx| {
        let ended = ended.clone();
        async move {
            let form: Form = serde_json::from_value(json!({
                "message": "Go?", "fields": [{"id": "go", "title": "Go", "type": "boolean"}]
            }))
            .expect("a form");
            let options = AskOptions { timeout };
            let said = match ask_person(&cx, Ask::new(form).expect("askable"), &options).await {
                Ok(outcome) => {
                    format!("outcome: {}", serde_json::to_value(&outcome).expect("json"))
                }
                Err(unanswered) => format!("unanswered: {unanswered:?}"),
            };
            ended.push(said.clone());
            Ok(CallToolResult::success(vec![ContentBlock::text(said)]).into())
        }
    })
}

/// A person who never answers; notes when an ask shown to them is
/// withdrawn.
fn away() -> Person {
    Person::with_forms()
        .named("away")
        .speaking(ProtocolVersion::V_2025_11_25)
        .in_manner(Manner::Away)
}

async fn connected(server: Tools, away: &Person) -> RunningService<RoleClient, Person> {
    connect(server, away.clone(), ClientLifecycleMode::Initialize).await
}

#[tokio::test]
async fn a_cancelled_request_stops_the_wait() {
    let ended = Seen::default();
    let away = away();
    let client = connected(server(None, ended.clone()), &away).await;
    // Dropping the call sends notifications/cancelled for it: dropped once
    // the person is asked (the person never answers).
    let call = client.call_tool_once(CallToolRequestParams::new("go"));
    tokio::select! {
        answered = call => panic!("the person never answers, yet: {answered:?}"),
        _ = away.asked.at_least("the person is asked", 1) => {}
    }
    let seen = ended.at_least("the server's wait ends", 1).await;
    assert_eq!(seen[0], "unanswered: RequestCancelled");
    // The dialog the person was shown is withdrawn too.
    away.withdrawn
        .at_least("the ask is withdrawn from the client", 1)
        .await;
}

#[tokio::test]
async fn a_wait_past_its_timeout_is_a_failure_not_a_decline() {
    let away = away();
    let client = connected(
        server(Some(Duration::from_millis(100)), Seen::default()),
        &away,
    )
    .await;
    let result = client
        .call_tool_once(CallToolRequestParams::new("go"))
        .await
        .expect("a result");
    assert_eq!(complete_text(result), "unanswered: TimedOut(100ms)");
    away.withdrawn
        .at_least("the timed-out ask is withdrawn from the client", 1)
        .await;
}
