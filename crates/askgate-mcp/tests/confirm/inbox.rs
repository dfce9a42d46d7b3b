//! The caller's word, the inbox and cancels: what the operator allows, a call
//! waiting for the inbox, a cancelled call or wait.

use std::time::Duration;

use askgate_core::Risk;
use askgate_mcp::stored::Act;
use askgate_store::{AskStatus, Decision};
use askgate_testkit::mcp::cancel_once_asked;
use askgate_testkit::person::{cancel, decline};
use serde_json::json;

use super::{
    Setup, answer_in_inbox, cancellable, confirmed, form_client, last, pending, run, spawn_call,
    verdict_of,
};

#[tokio::test]
async fn the_callers_word_counts_only_where_the_operator_allows_it() {
    // By default only a person approves, even where nobody can be asked.
    let h = Setup::new(json!({}), vec![]).start().await;
    let verdict = run(&h.client, json!({"risk": "medium_write", "confirm": true})).await;
    assert_eq!(verdict["proceed"], false);
    let for_model = verdict["for_model"].as_str().expect("text");
    assert!(!for_model.contains("confirm: true"), "{for_model}");

    let mut setup = Setup::new(json!({}), vec![]);
    setup.confirmations.caller_confirm = Some(Risk::MediumWrite);
    let h = setup.start().await;
    let verdict = run(&h.client, json!({"risk": "medium_write", "confirm": true})).await;
    assert_eq!(verdict["method"], "caller_confirmed");
    let entry = last(&h.store).await;
    assert_eq!(entry.answered_via, None, "no person answered");
    assert!(
        entry.reason.contains("allowed up to medium_write"),
        "{}",
        entry.reason
    );
    // Above what the operator allows: no.
    let verdict = run(&h.client, json!({"risk": "high_write", "confirm": true})).await;
    assert_eq!(verdict["proceed"], false);
    // A client that can show the ask: the person is asked, whatever the caller says.
    let mut setup = Setup::new(form_client(), vec![decline()]);
    setup.confirmations.caller_confirm = Some(Risk::Destructive);
    let h = setup.start().await;
    let verdict = run(&h.client, json!({"risk": "medium_write", "confirm": true})).await;
    assert_eq!(verdict["final"], true);
    assert_eq!(h.person.asked.len(), 1);
}

#[tokio::test]
async fn a_decline_in_the_inbox_is_not_undone_by_the_callers_word() {
    for capabilities in [json!({}), json!({"elicitation": {"url": {}}})] {
        let mut setup = Setup::new(
            capabilities.clone(),
            // A URL-only client that dismisses the link at once.
            vec![cancel()],
        );
        setup.name = "headless";
        setup.inbox = true;
        setup.confirmations.caller_confirm = Some(Risk::Destructive);
        let h = setup.start().await;
        let args = json!({"risk": "destructive"});
        let verdict = run(&h.client, args.clone()).await;
        assert_eq!(verdict["method"], "waiting", "{capabilities}: {verdict}");
        let waiting = pending(&h.store).await;
        assert_eq!(waiting.len(), 1);
        // While it waits, the caller's word does not stand in.
        let verdict = run(&h.client, json!({"risk": "destructive", "confirm": true})).await;
        assert_eq!(verdict["method"], "waiting", "{capabilities}");
        // A person declines in the inbox: final, for the same call.
        answer_in_inbox(&h.store, &waiting[0].ask.id, Act::Decline).await;
        let verdict = run(&h.client, json!({"risk": "destructive", "confirm": true})).await;
        assert_eq!(verdict["method"], "blocked", "{capabilities}");
        assert_eq!(verdict["final"], true, "{capabilities}");
        let entry = last(&h.store).await;
        assert_eq!(entry.answered_by.as_deref(), Some("alice"));
        assert!(
            entry
                .reason
                .starts_with("alice declined this exact call earlier (via cli)"),
            "{}",
            entry.reason
        );
    }
}

/// A client with no elicitation, whose calls wait up to 120 s for the
/// inbox.
fn waiting_on_the_inbox() -> Setup {
    let mut setup = Setup::new(json!({}), vec![]);
    setup.inbox = true;
    setup.confirmations.inbox_wait = Duration::from_secs(120);
    setup
}

#[tokio::test]
async fn a_call_waits_for_the_inbox_and_keeps_its_request_alive() {
    let h = waiting_on_the_inbox().start().await;
    let waiting = spawn_call(&h, json!({"risk": "high_write"}));
    // The first progress notification says the call waits for the inbox.
    h.person
        .progress
        .at_least("progress while waiting", 1)
        .await;
    let parked = pending(&h.store).await;
    assert_eq!(parked.len(), 1);
    answer_in_inbox(&h.store, &parked[0].ask.id, confirmed()).await;
    let verdict = verdict_of(waiting.await.expect("joins").expect("a result"));
    assert_eq!(verdict["method"], "elicited", "answered within the wait");
    assert_eq!(last(&h.store).await.answered_by.as_deref(), Some("alice"));
}

#[tokio::test]
async fn a_cancelled_call_withdraws_its_ask_and_never_proceeds() {
    // The person is asked and never answers; the caller cancels the call.
    let mut setup = Setup::new(form_client(), vec![]);
    setup.hold = true;
    setup.confirmations.caller_confirm = Some(Risk::Destructive);
    let h = setup.start().await;
    let handle = cancellable(&h, json!({"risk": "high_write", "confirm": true})).await;
    // Once the person is being asked, the caller stops the call: the
    // dialog is withdrawn from the client.
    cancel_once_asked(&h.person, handle, Some("the user pressed stop".into())).await;
    h.ended.at_least("the call's handler ends", 1).await;
    let entry = last(&h.store).await;
    assert_eq!(entry.decision, Decision::Blocked);
    assert!(
        entry.reason.contains("cancelled by the caller"),
        "{}",
        entry.reason
    );
}

#[tokio::test]
async fn a_cancelled_wait_for_the_inbox_withdraws_the_ask() {
    let h = waiting_on_the_inbox().start().await;
    let handle = cancellable(&h, json!({"risk": "high_write"})).await;
    h.person.progress.at_least("waiting", 1).await;
    handle.cancel(None).await.expect("cancels");
    h.ended.at_least("the call's handler ends", 1).await;
    assert!(pending(&h.store).await.is_empty(), "withdrawn");
    let entry = last(&h.store).await;
    let ask = h
        .store
        .ask(entry.ask_id.as_deref().expect("names the ask"))
        .await
        .expect("reads")
        .expect("the ask");
    assert_eq!(ask.status, AskStatus::Cancelled);
    assert_eq!(ask.answered_via.as_deref(), Some("caller"));
    // Withdrawn by the caller is not a person's no: the same call asks
    // again, and a person's answer to the new ask lets it through.
    let seen = h.person.progress.len();
    let again = spawn_call(&h, json!({"risk": "high_write"}));
    h.person.progress.at_least("waiting again", seen + 1).await;
    let parked = pending(&h.store).await;
    assert_eq!(parked.len(), 1, "a new ask");
    assert_ne!(Some(&parked[0].ask.id), entry.ask_id.as_ref());
    answer_in_inbox(&h.store, &parked[0].ask.id, confirmed()).await;
    let verdict = verdict_of(again.await.expect("joins").expect("a result"));
    assert_eq!(verdict["method"], "elicited", "{verdict}");
}

#[tokio::test]
async fn an_inbox_answer_to_a_question_that_changed_since_is_not_taken() {
    let mut setup = Setup::new(json!({}), vec![]);
    setup.name = "headless";
    setup.inbox = true;
    let h = setup.start().await;
    // Parked without a doubt, and approved so.
    let verdict = run(&h.client, json!({"risk": "destructive"})).await;
    assert_eq!(verdict["method"], "waiting", "{verdict}");
    let first = pending(&h.store).await;
    assert_eq!(first.len(), 1);
    answer_in_inbox(&h.store, &first[0].ask.id, confirmed()).await;
    // Now the same call may already have run: the yes, given without
    // that, does not let it through; the person is asked with it.
    let verdict = run(&h.client, json!({"risk": "destructive", "doubt": true})).await;
    assert_eq!(verdict["method"], "waiting", "{verdict}");
    let second = pending(&h.store).await;
    assert_eq!(second.len(), 1);
    assert_ne!(second[0].ask.id, first[0].ask.id);
    assert!(
        second[0]
            .ask
            .request
            .to_string()
            .contains("may already have run"),
        "{}",
        second[0].ask.request
    );
    // A pending ask whose question changes is withdrawn for the new one.
    let verdict = run(&h.client, json!({"risk": "destructive"})).await;
    assert_eq!(verdict["method"], "waiting", "{verdict}");
    let third = pending(&h.store).await;
    assert_eq!(third.len(), 1, "{third:?}");
    assert_ne!(third[0].ask.id, second[0].ask.id);
    let withdrawn = h
        .store
        .ask(&second[0].ask.id)
        .await
        .expect("reads")
        .expect("there");
    assert_eq!(withdrawn.status, AskStatus::Expired);
    // The yes to the question asked now lets the call through, once.
    answer_in_inbox(&h.store, &third[0].ask.id, confirmed()).await;
    let verdict = run(&h.client, json!({"risk": "destructive"})).await;
    assert_eq!(verdict["proceed"], true, "{verdict}");
}

#[tokio::test]
async fn an_inbox_no_stands_whatever_the_question_it_was_given_to() {
    let mut setup = Setup::new(json!({}), vec![]);
    setup.name = "headless";
    setup.inbox = true;
    let h = setup.start().await;
    run(&h.client, json!({"risk": "destructive"})).await;
    let asked = pending(&h.store).await;
    answer_in_inbox(&h.store, &asked[0].ask.id, Act::Decline).await;
    let verdict = run(&h.client, json!({"risk": "destructive", "doubt": true})).await;
    assert_eq!(verdict["method"], "blocked", "{verdict}");
    assert_eq!(verdict["final"], true, "{verdict}");
}

#[tokio::test]
async fn past_the_most_pending_asks_a_principal_may_have_a_new_call_is_refused_and_nothing_runs() {
    let mut setup = Setup::new(
        json!({"elicitation": {"url": {}}}),
        vec![cancel(), cancel()],
    );
    setup.name = "headless";
    setup.inbox = true;
    setup.confirmations.most_pending_per_principal = 2;
    let h = setup.start().await;
    for path in ["/srv/a", "/srv/b"] {
        let verdict = run(&h.client, json!({"risk": "destructive", "path": path})).await;
        assert_eq!(verdict["method"], "waiting", "{path}: {verdict}");
    }
    // A third call: refused before anything is asked, saying why.
    let refused = h
        .client
        .call_tool_once(super::delete(
            json!({"risk": "destructive", "path": "/srv/c"}),
        ))
        .await
        .expect_err("refused");
    let text = refused.to_string();
    assert!(text.contains("2 asks waiting for a person"), "{text}");
    assert!(text.contains("nothing ran"), "{text}");
    assert_eq!(pending(&h.store).await.len(), 2, "no third ask parked");
    // The same call as a waiting one still finds its ask.
    let again = run(&h.client, json!({"risk": "destructive", "path": "/srv/a"})).await;
    assert_eq!(again["method"], "waiting", "{again}");
    // Once one is answered, there is room again.
    let first = pending(&h.store).await.remove(0);
    answer_in_inbox(&h.store, &first.ask.id, Act::Decline).await;
    let third = run(&h.client, json!({"risk": "destructive", "path": "/srv/c"})).await;
    assert_eq!(third["method"], "waiting", "{third}");
}
