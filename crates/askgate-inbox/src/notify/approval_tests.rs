//! The notifier and asks a team's rule decides: each person's answer
//! posted, an ask that expires or escalates posted as such.

use std::time::Duration;

use askgate_core::{Risk, Surface};
use askgate_mcp::stored::{self, Act};
use askgate_store::NewAsk;
use askgate_testkit::webhook::Receiver;
use jiff::Timestamp;
use serde_json::{Value as Json, json};

use super::tests::{Posting, confirmation, inbox, next_delivery, sqlite, webhook};
use super::{Event, Notifier, Preset};

/// [`confirmation`], decided by two of Ana, Bo and Cy.
fn governed(id: &str) -> NewAsk {
    governed_by(id, json!({"quorum": {"of": "sre", "need": 2}}))
}

/// [`confirmation`], decided by `rule` over Ana, Bo and Cy (SRE) and Di
/// (on call).
fn governed_by(id: &str, rule: Json) -> NewAsk {
    let team: &[(&str, &[&str])] = &[
        ("ana", &["sre"]),
        ("bo", &["sre"]),
        ("cy", &["sre"]),
        ("di", &["oncall"]),
    ];
    let panel = askgate_testkit::approvals::panel(rule, team, Risk::HighWrite, &[]);
    NewAsk {
        panel: Some(serde_json::to_value(panel).expect("serializes")),
        ..confirmation(id)
    }
}

#[tokio::test]
async fn each_persons_answer_is_posted_with_who_and_how_many_more_then_the_settlement() {
    let mut posting = Posting::start(Vec::new(), Preset::Generic).await;
    let row = posting
        .store
        .park(&governed("ask_q1"))
        .await
        .expect("parks");
    next_delivery(&mut posting.deliveries).await;
    for person in ["ana", "bo"] {
        let mut content = serde_json::Map::new();
        content.insert("confirm".into(), Json::Bool(true));
        let settlement =
            stored::settle(&row.ask.request, Act::Answer(content), person, Surface::Cli)
                .expect("passes its checks");
        let now = Timestamp::now();
        askgate_mcp::approvals::settle_as_person(
            &posting.store,
            &row,
            &settlement,
            person,
            &[],
            now,
        )
        .await
        .expect("counted");
    }
    posting.receiver.at_least(4).await;
    posting.notifier.flush(Duration::from_secs(10)).await;
    let bodies = posting.receiver.bodies();
    let said: Vec<(String, Json, Json)> = bodies
        .iter()
        .map(|b| {
            (
                b["event"].as_str().unwrap_or("").to_owned(),
                b["person"].clone(),
                b["needed"].clone(),
            )
        })
        .collect();
    assert!(
        said.contains(&("answered".into(), json!("ana"), json!(1))),
        "{said:?}"
    );
    assert!(
        said.contains(&("answered".into(), json!("bo"), Json::Null)),
        "{said:?}"
    );
    let settled = bodies
        .iter()
        .find(|b| b["event"] == "settled")
        .expect("settled");
    assert_eq!(settled["status"], "answered");
    assert_eq!(bodies.len(), 4, "parked, two answers, settled: {bodies:?}");
    for body in &bodies {
        assert!(
            body.get("confirm").is_none() && !body.to_string().contains("content"),
            "{body}"
        );
    }
}

#[tokio::test]
async fn an_ask_that_expires_is_posted_as_expired() {
    let mut posting = Posting::start(Vec::new(), Preset::Slack).await;
    let past = Timestamp::now() - jiff::SignedDuration::from_secs(60);
    let ask = NewAsk {
        expires_at: Some(past),
        ..confirmation("ask_x1")
    };
    posting.store.park(&ask).await.expect("parks");
    next_delivery(&mut posting.deliveries).await;
    posting
        .store
        .expire_due(Timestamp::now())
        .await
        .expect("expires");
    let delivery = next_delivery(&mut posting.deliveries).await;
    assert_eq!((delivery.event, delivery.delivered), (Event::Expired, true));
    posting.notifier.flush(Duration::from_secs(10)).await;
    let last = posting.receiver.bodies().pop().expect("a post");
    assert!(
        last["text"]
            .as_str()
            .unwrap_or("")
            .starts_with("An ask was expired"),
        "{last}"
    );
}

#[tokio::test]
async fn an_ask_past_its_escalation_is_posted_as_escalated_once_even_across_a_restart() {
    let rule =
        json!({"quorum": {"of": "sre", "need": 2}, "escalate": {"after": "1s", "to": "oncall"}});
    let parked_before = Timestamp::now() - jiff::SignedDuration::from_secs(10);
    let receiver = Receiver::answering(Vec::new()).await;
    let store = sqlite().await;
    // Parked before this notifier listened (askgate restarted since).
    let early = NewAsk {
        created_at: parked_before,
        ..governed_by("ask_e1", rule.clone())
    };
    store.park(&early).await.expect("parks");
    let notifier =
        Notifier::new(store.clone(), webhook(&receiver, Preset::Generic), inbox()).expect("builds");
    let mut deliveries = notifier.deliveries();
    let _listening = notifier.listen();
    // And one parked now, already past its time (its clock is the one that
    // parked it).
    let late = NewAsk {
        created_at: parked_before,
        ..governed_by("ask_e2", rule)
    };
    store.park(&late).await.expect("parks");
    let mut escalated = Vec::new();
    while escalated.len() < 2 {
        let delivery = next_delivery(&mut deliveries).await;
        if delivery.event == Event::Escalated {
            escalated.push(delivery.id);
        }
    }
    escalated.sort();
    assert_eq!(escalated, ["ask_e1", "ask_e2"]);
    notifier.flush(Duration::from_secs(10)).await;
    let bodies = receiver.bodies();
    let posts: Vec<&Json> = bodies
        .iter()
        .filter(|b| b["event"] == "escalated")
        .collect();
    assert_eq!(posts.len(), 2, "once each: {bodies:?}");
    assert_eq!(posts[0]["escalated_to"], "oncall");
}
