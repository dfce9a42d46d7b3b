//! Time in a confirmation, as the test sets it: a person's no stands for
//! the ask's lifetime, and only for it — on the clock the rounds are given,
//! not the system's (a manual clock moves past the lifetime instead of a
//! test waiting a day); and how long a person took to answer is measured on
//! tokio's time, so a paused runtime drives it.

use std::time::Duration;

use askgate_core::{Call, Risk};
use askgate_mcp::{Confirmations, Policy, Request, Rounds};
use askgate_testkit::clock::ManualClock;
use askgate_testkit::mcp::{Tools, call, complete_text, connect};
use askgate_testkit::person::{accept, decline};
use askgate_testkit::{Person, TempStore};
use jiff::Timestamp;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::ClientLifecycleMode;
use serde_json::{Value as Json, json};

const LIFETIME: Duration = Duration::from_secs(60 * 60);

/// A server whose `delete` (destructive) is confirmed by a person; it
/// answers with the verdict.
fn server(rounds: Rounds) -> Tools {
    Tools::new(move |params, cx| {
        let rounds = rounds.clone();
        async move {
            let mut round = rounds.begin(&cx, Request::tool(&params)).await?;
            let call = Call {
                server: "files",
                tool: "delete",
                risk: Risk::Destructive,
                why: None,
                preview: None,
                may_have_run: None,
            };
            let policy = Policy {
                threshold: None,
                caller_confirmed: false,
                approval: None,
                arguments: None,
            };
            let Some(verdict) = round.confirm("confirm", &call, policy).await? else {
                return Ok(round.respond()?);
            };
            let text = json!({"proceed": verdict.proceed, "final": verdict.final_no});
            Ok(CallToolResult::success(vec![ContentBlock::text(text.to_string())]).into())
        }
    })
}

#[tokio::test]
async fn a_persons_no_stands_for_the_ask_lifetime_and_ends_after_it() {
    let store = TempStore::open().await;
    // Far from the system's time: whatever reads the system clock instead
    // sees another day.
    let start: Timestamp = "2030-01-01T09:00:00Z".parse().expect("an instant");
    let clock = ManualClock::starting_at(start);
    let mut confirmations = Confirmations {
        ask_lifetime: LIFETIME,
        ..Confirmations::default()
    };
    // The scripted person answers at once.
    confirmations
        .min_answer_by_client
        .insert("person".into(), Duration::ZERO);
    let rounds = Rounds::new([4u8; 32], store.store().clone())
        .with_confirmations(confirmations)
        .with_clock(clock.clone());
    let person = Person::with_forms().answering(vec![decline(), accept(json!({"confirm": true}))]);
    let client = connect(
        server(rounds),
        person.clone(),
        ClientLifecycleMode::Initialize,
    )
    .await;
    let delete = || call("delete", json!({"path": "/srv/data"}));
    let verdict = |text: String| -> Json { serde_json::from_str(&text).expect("the verdict") };

    let first = verdict(complete_text(
        client.call_tool_once(delete()).await.expect("a result"),
    ));
    assert_eq!(first, json!({"proceed": false, "final": true}));
    assert_eq!(person.asked.len(), 1);
    let audited = askgate_testkit::last_audited(store.store()).await;
    assert_eq!(audited.at, start, "the audit is dated on the rounds' clock");

    // Just inside the lifetime: the no stands, nobody is asked.
    clock.advance(LIFETIME - Duration::from_secs(60));
    let again = verdict(complete_text(
        client.call_tool_once(delete()).await.expect("a result"),
    ));
    assert_eq!(again, json!({"proceed": false, "final": true}));
    assert_eq!(person.asked.len(), 1, "the person is not asked again");

    // Past it: the no has lapsed, the person is asked again and approves.
    clock.advance(Duration::from_secs(120));
    let after = verdict(complete_text(
        client.call_tool_once(delete()).await.expect("a result"),
    ));
    assert_eq!(person.asked.len(), 2, "the person is asked again");
    assert_eq!(after, json!({"proceed": true, "final": false}));
}

#[tokio::test]
async fn an_answer_that_took_a_person_a_second_counts_on_paused_time() {
    let store = TempStore::open().await;
    // The default: an answer faster than 250 ms was not read by a person.
    let rounds = Rounds::new([4u8; 32], store.store().clone());
    let person = Person::with_forms()
        .answering(vec![accept(json!({"confirm": true}))])
        // The person reads for a second — of tokio's time, paused and moved
        // on while the ask is shown (the store keeps real time around it).
        .before_answering(|_| async {
            tokio::time::pause();
            tokio::time::advance(Duration::from_secs(1)).await;
            tokio::time::resume();
        });
    let client = connect(
        server(rounds),
        person.clone(),
        ClientLifecycleMode::Initialize,
    )
    .await;
    let text = complete_text(
        client
            .call_tool_once(call("delete", json!({"path": "/srv/data"})))
            .await
            .expect("a result"),
    );
    let verdict: Json = serde_json::from_str(&text).expect("the verdict");
    assert_eq!(verdict, json!({"proceed": true, "final": false}));
    assert_eq!(person.asked.len(), 1);
}
