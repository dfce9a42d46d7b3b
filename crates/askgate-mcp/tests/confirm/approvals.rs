//! A call under a team's approval rule: the client's answer counts as the
//! agent's person's where the rule lets it, and the call waits for the
//! rest of the quorum; where it does not, the client is never asked.

use askgate_core::Risk;
use askgate_mcp::approvals::{Approving, settle_as_person};
use askgate_store::{AskStatus, Decision, Settlement};
use askgate_testkit::approvals::TEAM;
use askgate_testkit::person::{accept, decline};
use serde_json::json;

use super::{Setup, form_client, last, pending, run};

/// Two of Alice, Bob and Carol approve; the agent acts for `acts_for`,
/// and its own people may answer (`not_requester = false`); one no blocks
/// it if `veto`, else two.
pub(super) fn two_of_the_team(risk: Risk, acts_for: Vec<String>, veto: bool) -> Approving {
    let rule = json!({"quorum": {"of": "team", "need": 2}, "not_requester": false, "veto": veto});
    Approving {
        panel: askgate_testkit::approvals::panel(rule, TEAM, risk, &acts_for),
        acts_for,
        expires: None,
        client_speaks: true,
    }
}

fn yes(by: &str) -> Settlement {
    Settlement {
        status: AskStatus::Answered,
        reply: json!({"action": "accept", "content": {"confirm": true}}),
        outcome: json!(null),
        answered_by: Some(by.to_owned()),
        answered_via: "cli".to_owned(),
    }
}

#[tokio::test]
async fn the_clients_yes_counts_as_its_person_and_the_call_waits_for_the_second() {
    let mut setup = Setup::new(form_client(), vec![accept(json!({"confirm": true}))]);
    setup.inbox = true;
    let h = setup.start().await;
    let call = json!({"risk": "destructive", "acts_for": ["alice"]});
    let verdict = run(&h.client, call.clone()).await;
    assert_eq!(verdict["proceed"], false, "{verdict}");
    assert_eq!(verdict["method"], "waiting");
    let for_model = verdict["for_model"].as_str().expect("text");
    assert!(for_model.contains("needs 1 more approval "), "{for_model}");
    assert_eq!(h.person.messages().len(), 1, "the client was asked once");
    let ask = pending(h.store.store()).await.remove(0);
    let answers = h.store.store().answers(&ask.ask.id).await.expect("reads");
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].answer.person, "alice");
    assert_eq!(answers[0].answer.via, "mcp");

    // Bob approves in the inbox: the quorum is met, the call runs, and the
    // client is not asked again.
    let now = jiff::Timestamp::now();
    let row = settle_as_person(h.store.store(), &ask, &yes("bob"), "bob", &[], now)
        .await
        .expect("counted");
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(row.answered_by.as_deref(), Some("alice, bob"));
    let verdict = run(&h.client, call).await;
    assert_eq!(verdict["proceed"], true, "{verdict}");
    assert_eq!(h.person.messages().len(), 1, "not asked again");
    let entry = last(h.store.store()).await;
    assert_eq!(entry.answered_by.as_deref(), Some("alice, bob"));
}

#[tokio::test]
async fn the_clients_no_as_its_person_is_a_veto() {
    let mut setup = Setup::new(form_client(), vec![decline()]);
    setup.inbox = true;
    let h = setup.start().await;
    let verdict = run(
        &h.client,
        json!({"risk": "high_write", "acts_for": ["alice"]}),
    )
    .await;
    assert_eq!(verdict["proceed"], false, "{verdict}");
    assert_eq!(verdict["final"], true, "{verdict}");
    let entry = last(h.store.store()).await;
    assert_eq!(entry.decision, Decision::Blocked);
    assert_eq!(entry.answered_by.as_deref(), Some("alice"));
}

#[tokio::test]
async fn a_client_whose_answer_counts_for_nobody_is_not_asked_and_its_confirm_stands_in_for_nobody()
{
    let mut setup = Setup::new(form_client(), vec![accept(json!({"confirm": true}))]);
    setup.inbox = true;
    // Even where the operator lets the caller's word stand in.
    setup.confirmations.caller_confirm = Some(Risk::Destructive);
    let h = setup.start().await;
    // The agent acts for two people: which one would the client be?
    let call = json!({"risk": "medium_write", "acts_for": ["alice", "bob"], "confirm": true});
    let verdict = run(&h.client, call).await;
    assert_eq!(verdict["method"], "waiting", "{verdict}");
    assert!(h.person.messages().is_empty(), "the client was not asked");
    let ask = pending(h.store.store()).await.remove(0);
    assert!(
        h.store
            .store()
            .answers(&ask.ask.id)
            .await
            .expect("reads")
            .is_empty()
    );
}

#[tokio::test]
async fn a_no_given_to_a_withdrawn_ask_still_counts_for_the_calls_next_ask() {
    // Two no's block it (veto = false). Alice said no; the call's ask was
    // then withdrawn and asked again (its question changed): her no is
    // carried over, so Bob's no is the second.
    let store = askgate_testkit::TempStore::open().await;
    let rule = json!({"quorum": {"of": "team", "need": 2}, "veto": false});
    let panel = askgate_testkit::approvals::panel(rule, TEAM, Risk::HighWrite, &[]);
    let now = jiff::Timestamp::now();
    let ask = |id: &str, resume_key: &str| askgate_store::NewAsk {
        id: id.to_owned(),
        resume_key: resume_key.to_owned(),
        call_key: Some("call-1".to_owned()),
        principal: "agent".to_owned(),
        request: json!({"message": "Run deploy?", "fields": []}),
        server: Some("ops".to_owned()),
        tool: Some("deploy".to_owned()),
        risk: Some("high_write".to_owned()),
        created_at: now,
        expires_at: None,
        panel: Some(serde_json::to_value(&panel).expect("serializes")),
    };
    let first = store.park(&ask("ask-1", "call-1")).await.expect("parks");
    let no = no();
    let row = settle_as_person(&store, &first, &no, "alice", &[], now)
        .await
        .expect("counted");
    assert_eq!(row.status, AskStatus::Pending, "one no of two");
    store.expire("ask-1", now).await.expect("withdrawn");
    let second = store.park(&ask("ask-2", "call-1#2")).await.expect("parks");
    let carried = askgate_mcp::approvals::carry_noes(&store, &second, now)
        .await
        .expect("carries")
        .expect("a no was carried");
    assert_eq!(carried.status, AskStatus::Pending);
    let answers = store.answers("ask-2").await.expect("reads");
    let said: Vec<(&str, bool)> = answers
        .iter()
        .map(|a| (a.answer.person.as_str(), a.answer.accepted))
        .collect();
    assert_eq!(said, [("alice", false)]);
    let row = settle_as_person(&store, &carried, &no, "bob", &[], now)
        .await
        .expect("counted");
    assert_eq!(row.status, AskStatus::Declined, "two no's block it");
    assert_eq!(row.answered_by.as_deref(), Some("alice, bob"));
    // A no that declined an ask stands for that ask's lifetime: the call
    // asked again after it is asked afresh, nothing carried.
    let third = store.park(&ask("ask-3", "call-1#3")).await.expect("parks");
    let carried = askgate_mcp::approvals::carry_noes(&store, &third, now)
        .await
        .expect("reads");
    assert_eq!(carried, None, "a declined ask's no's are not carried");
    assert!(store.answers("ask-3").await.expect("reads").is_empty());
    // The carried no is its own audit entry, saying so.
    let entries = askgate_testkit::audited(&store).await;
    assert!(
        entries.iter().any(|e| e
            .reason
            .contains("carried over from the call's earlier ask")),
        "{entries:?}"
    );
}

#[tokio::test]
async fn a_no_given_before_the_calls_question_changed_counts_for_the_ask_it_is_asked_again_with() {
    // The agent acts for nobody: its client is not asked, the ask waits
    // in the inbox. Two no's block it.
    let mut setup = Setup::new(form_client(), vec![]);
    setup.inbox = true;
    let h = setup.start().await;
    let store = h.store.store();
    let call = json!({"risk": "high_write", "acts_for": [], "veto": false});
    let verdict = run(&h.client, call.clone()).await;
    assert_eq!(verdict["method"], "waiting", "{verdict}");
    let first = pending(store).await.remove(0);
    let now = jiff::Timestamp::now();
    let row = settle_as_person(store, &first, &no(), "alice", &[], now)
        .await
        .expect("counted");
    assert_eq!(row.status, AskStatus::Pending, "one no of two");
    // The call comes again, and may have run meanwhile: its question
    // changed, so its ask is withdrawn and it is asked again.
    let mut again = call.clone();
    again["doubt"] = json!(true);
    let verdict = run(&h.client, again.clone()).await;
    assert_eq!(verdict["method"], "waiting", "{verdict}");
    let second = pending(store).await.remove(0);
    assert_ne!(second.ask.id, first.ask.id, "asked again");
    let answers = store.answers(&second.ask.id).await.expect("reads");
    let said: Vec<(&str, bool)> = answers
        .iter()
        .map(|a| (a.answer.person.as_str(), a.answer.accepted))
        .collect();
    assert_eq!(said, [("alice", false)], "Alice's no is carried over");
    // Bob's no is the second: the call is blocked, by both.
    let row = settle_as_person(store, &second, &no(), "bob", &[], now)
        .await
        .expect("counted");
    assert_eq!(row.status, AskStatus::Declined);
    assert_eq!(row.answered_by.as_deref(), Some("alice, bob"));
    let verdict = run(&h.client, again).await;
    assert_eq!(verdict["proceed"], false, "{verdict}");
    assert_eq!(verdict["final"], true, "{verdict}");
}

fn no() -> Settlement {
    Settlement {
        status: AskStatus::Declined,
        reply: json!({"action": "decline"}),
        outcome: json!(null),
        answered_by: None,
        answered_via: "web".to_owned(),
    }
}
