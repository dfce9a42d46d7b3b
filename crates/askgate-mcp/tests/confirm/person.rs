//! What a person answers over elicitation: who confirmed, a no that stands, an
//! unticked box, an answer too fast to be a person's, no answer at all.

use std::time::Duration;

use askgate_core::Risk;
use askgate_store::Decision;
use askgate_testkit::person::{accept, cancel, decline};
use serde_json::json;

use super::{Setup, answer_in_inbox, audit, confirmed, form_client, last, pending, run};

#[tokio::test]
async fn reads_and_low_writes_never_prompt_and_the_threshold_auto_approves() {
    let mut setup = Setup::new(form_client(), vec![]);
    setup.configured = Some(Risk::MediumWrite);
    let h = setup.start().await;
    for (risk, method) in [
        ("read", "auto_approved"),
        ("low_write", "auto_approved"),
        ("medium_write", "auto_approved"),
    ] {
        let verdict = run(&h.client, json!({"risk": risk})).await;
        assert_eq!(verdict["proceed"], true, "{risk}");
        assert_eq!(verdict["method"], method, "{risk}");
    }
    assert_eq!(h.person.asked.len(), 0, "nobody was asked");
    let entries = audit(&h.store).await;
    let decisions: Vec<Decision> = entries.iter().map(|r| r.entry.decision).collect();
    assert_eq!(
        decisions,
        [
            Decision::AutoApproved,
            Decision::AutoApproved,
            Decision::AutoApproved
        ],
        "with a threshold of medium_write, even a read is auto-approved"
    );
    let h = Setup::new(form_client(), vec![]).start().await;
    let verdict = run(&h.client, json!({"risk": "read"})).await;
    assert_eq!(verdict["method"], "not_required");
    assert_eq!(last(&h.store).await.decision, Decision::NotRequired);
}

#[tokio::test]
async fn a_person_confirms_and_the_audit_says_who_and_where() {
    let h = Setup::new(form_client(), vec![accept(json!({"confirm": true}))])
        .start()
        .await;
    let verdict = run(
        &h.client,
        json!({"risk": "high_write", "path": "/srv/data"}),
    )
    .await;
    assert_eq!(verdict["proceed"], true);
    assert_eq!(verdict["method"], "elicited");
    let asked = h.person.asked.all();
    let message = asked[0]["message"].as_str().expect("a message");
    assert!(
        message.contains("files") && message.contains("delete") && message.contains("high write"),
        "{message}"
    );
    assert_eq!(
        asked[0]["requestedSchema"]["properties"]["confirm"]["default"],
        true
    );
    let entry = last(&h.store).await;
    assert_eq!(entry.decision, Decision::Elicited);
    assert_eq!(entry.answered_via.as_deref(), Some("mcp"));
    assert_eq!(entry.answered_by.as_deref(), Some("anonymous"));
    assert_eq!(entry.principal.as_deref(), Some("anonymous"));
    assert!(
        entry
            .arguments_digest
            .as_deref()
            .is_some_and(|d| d.starts_with("hmac-sha256:"))
    );
    let raw = serde_json::to_string(&entry).expect("json");
    assert!(
        !raw.contains("/srv/data"),
        "arguments are never stored: {raw}"
    );
}

#[tokio::test]
async fn a_persons_no_is_final_and_stands_for_the_same_call() {
    for (answer, words) in [
        (decline(), "declined"),
        (cancel(), "cancelled"),
        (accept(json!({"confirm": false})), "unticked"),
    ] {
        let h = Setup::new(form_client(), vec![answer]).start().await;
        // Even with confirm: true from the caller.
        let args = json!({"risk": "destructive", "path": "/srv", "confirm": true});
        let verdict = run(&h.client, args.clone()).await;
        assert_eq!(verdict["proceed"], false);
        assert_eq!(verdict["method"], "blocked");
        assert_eq!(verdict["final"], true);
        let for_model = verdict["for_model"].as_str().expect("text");
        assert!(
            for_model.contains("final") && for_model.contains("do not pass confirm: true"),
            "{for_model}"
        );
        let entry = last(&h.store).await;
        assert_eq!(entry.decision, Decision::Blocked);
        assert!(entry.reason.contains(words), "{}", entry.reason);

        // The same call again — with or without confirm — meets the same
        // answer, and nobody is asked again.
        for again in [args.clone(), json!({"risk": "destructive", "path": "/srv"})] {
            let verdict = run(&h.client, again).await;
            assert_eq!(verdict["final"], true, "{verdict}");
            assert_eq!(h.person.asked.len(), 1, "the person is not asked twice");
            let entry = last(&h.store).await;
            assert!(
                entry.reason.contains("this exact call earlier"),
                "{}",
                entry.reason
            );
            assert!(
                entry.ask_id.is_some(),
                "the audit names the ask that said no"
            );
        }
        // Other arguments are another call: the person is asked.
        let _ = run(&h.client, json!({"risk": "destructive", "path": "/tmp"})).await;
        assert_eq!(h.person.asked.len(), 2);
    }
}

#[tokio::test]
async fn an_accept_without_the_checkbox_is_no_persons_decision() {
    // A client that accepts without showing the prompt sends no confirm.
    let h = Setup::new(form_client(), vec![accept(json!({})), accept(json!({}))])
        .start()
        .await;
    let verdict = run(&h.client, json!({"risk": "high_write"})).await;
    assert_eq!(verdict["proceed"], false);
    assert_eq!(verdict["final"], false, "not a person's no");
    let reason = last(&h.store).await.reason;
    assert!(
        reason.starts_with("not shown: ") && reason.contains("no person saw the prompt"),
        "{reason}"
    );
    assert!(!reason.contains("the person"), "{reason}");
    // The caller's confirm: true does not turn it into an approval.
    let verdict = run(&h.client, json!({"risk": "high_write", "confirm": true})).await;
    assert_eq!(verdict["proceed"], false);
    assert_ne!(verdict["method"], "caller_confirmed");

    // With an inbox, the ask moves there.
    let mut setup = Setup::new(form_client(), vec![accept(json!({}))]);
    setup.inbox = true;
    let h = setup.start().await;
    let verdict = run(&h.client, json!({"risk": "high_write"})).await;
    assert_eq!(verdict["method"], "waiting");
    let waiting = pending(&h.store).await;
    assert_eq!(waiting.len(), 1, "parked in the inbox");
    assert_eq!(
        last(&h.store).await.ask_id.as_ref(),
        Some(&waiting[0].ask.id)
    );
}

#[tokio::test]
async fn an_answer_faster_than_a_person_reads_moves_the_ask_to_the_inbox() {
    // A headless client declines every ask at once.
    let mut setup = Setup::new(form_client(), vec![decline(), decline()]);
    setup.name = "headless";
    setup.inbox = true;
    let h = setup.start().await;
    let args = json!({"risk": "high_write"});
    let verdict = run(&h.client, args.clone()).await;
    assert_eq!(verdict["method"], "waiting");
    assert_eq!(verdict["final"], false);
    let for_model = verdict["for_model"].as_str().expect("text");
    assert!(
        for_model.contains("https://askgate.example/asks/ask_")
            && for_model.contains("call delete again"),
        "{for_model}"
    );
    let entry = last(&h.store).await;
    assert_eq!(entry.decision, Decision::Waiting);
    assert!(
        entry.reason.starts_with("not shown: the client declined ")
            && entry
                .reason
                .contains("ms after asking, before a person could have read it"),
        "{}",
        entry.reason
    );
    assert_eq!(entry.answered_by, None, "nobody answered");
    // A retry before anyone answered waits on the same ask, unasked.
    let _ = run(&h.client, args.clone()).await;
    assert_eq!(h.person.asked.len(), 1);
    let waiting = pending(&h.store).await;
    assert_eq!(waiting.len(), 1);
    // A person approves in the inbox: the retry goes ahead, theirs.
    answer_in_inbox(&h.store, &waiting[0].ask.id, confirmed()).await;
    let verdict = run(&h.client, args.clone()).await;
    assert_eq!(verdict["method"], "elicited");
    let entry = last(&h.store).await;
    assert_eq!(entry.answered_by.as_deref(), Some("alice"));
    assert_eq!(entry.answered_via.as_deref(), Some("cli"));
    // One approval, one call: the next identical call asks again.
    let verdict = run(&h.client, args).await;
    assert_eq!(verdict["method"], "waiting");
    assert_eq!(h.person.asked.len(), 2);
}

#[tokio::test]
async fn an_ask_nobody_answers_in_time_moves_to_the_inbox_and_is_withdrawn() {
    let mut setup = Setup::new(form_client(), vec![]);
    setup.hold = true;
    setup.inbox = true;
    setup.timeout = Some(Duration::from_millis(200));
    let h = setup.start().await;
    let verdict = run(&h.client, json!({"risk": "high_write"})).await;
    assert_eq!(verdict["method"], "waiting", "{verdict}");
    assert_eq!(verdict["final"], false, "nobody answered: not a no");
    h.person
        .withdrawn
        .at_least("the timed-out ask is withdrawn from the client", 1)
        .await;
    let entry = last(&h.store).await;
    assert!(
        entry
            .reason
            .starts_with("not shown: nobody answered in the client within 200 ms"),
        "{}",
        entry.reason
    );
    assert_eq!(pending(&h.store).await.len(), 1, "it waits in the inbox");
}
