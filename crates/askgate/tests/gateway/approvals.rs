//! `[[approvals]]` end to end, through `askgate gateway` on stdio with a
//! real rmcp client: a call under a quorum rule waits until two people of
//! the group approved it, each as themselves from the CLI; one person's
//! "no" blocks it for good; someone the rule does not name is refused,
//! saying why; the client's own answer counts for nobody the rule names,
//! so the client is not asked.

use askgate_store::{AskStatus, Decision};
use askgate_testkit::gateway::Gateway;
use askgate_testkit::mcp::text;
use askgate_testkit::person::accept;
use serde_json::json;

use super::{on_notes as call, person, setup};

const ANA: &str = "ana-token-0123456789abcdef";
const BO: &str = "bo-token-0123456789abcdefg";
const CAROL: &str = "carol-token-0123456789abc";

/// Ana and Bo are SRE; Carol answers everyone's asks but is in no group.
/// Writing a note takes two of SRE.
const TEAM: &str = r#"
[[rules]]
tool = "read_note"
risk = "read"

[[people]]
name = "ana"
token = "ana-token-0123456789abcdef"
answers_for = ["*"]
groups = ["sre"]

[[people]]
name = "bo"
token = "bo-token-0123456789abcdefg"
answers_for = ["*"]
groups = ["sre"]

[[people]]
name = "carol"
token = "carol-token-0123456789abc"
answers_for = ["*"]

[[approvals]]
tool = "write_note"
quorum = { of = "sre", need = 2 }
"#;

/// A gateway with [`TEAM`], its client one that would accept any form at
/// once (it is never asked).
async fn gateway() -> Gateway {
    let forms = json!({"elicitation": {"form": {}}});
    setup()
        .config(TEAM)
        .logging("askgate_mcp=info")
        .connect(person(forms, vec![accept(json!({"confirm": true}))]))
        .await
}

/// The one ask waiting, by id.
async fn waiting(h: &Gateway) -> String {
    let store = h.store().await;
    let asks = store.pending(50, None).await.expect("pending").asks;
    store.close().await;
    assert_eq!(asks.len(), 1, "one ask waits");
    asks[0].ask.id.clone()
}

fn approve(h: &Gateway, token: &str, id: &str) -> std::process::Output {
    h.as_person(token, &["answer", id, "--content", r#"{"confirm": true}"#])
}

fn said(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test]
async fn a_quorum_call_runs_only_once_two_of_the_group_approved() {
    let h = gateway().await;
    let args = json!({"name": "todo", "text": "ship it"});
    let first = call(&h.client, "write_note", args.clone()).await;
    assert_eq!(first.is_error, Some(true), "{}", text(&first));
    assert!(
        text(&first).contains("needs 2 more approvals"),
        "the model is told how many, not who: {}",
        text(&first)
    );
    assert!(!text(&first).contains("ana"), "{}", text(&first));
    assert!(
        h.person.messages().is_empty(),
        "the client's answer would count for nobody the rule names: it is not asked"
    );
    let id = waiting(&h).await;

    // Carol may answer anyone's asks, but the rule names SRE.
    let refused = h.as_person(CAROL, &["answer", &id, "--content", r#"{"confirm": true}"#]);
    assert!(!refused.status.success());
    assert!(
        said(&refused).contains("carol is not among those who may answer this ask (2 of sre)"),
        "{}",
        said(&refused)
    );
    let one = approve(&h, ANA, &id);
    assert!(one.status.success(), "{}", said(&one));
    assert!(
        said(&one).contains("waits for more approvals"),
        "{}",
        said(&one)
    );
    let shown = said(&h.as_person(CAROL, &["show", &id]));
    for line in [
        "rule: approvals[0]: 2 of sre",
        "  ana approved",
        "needed: 1 more approval",
        "may still answer: bo",
    ] {
        assert!(shown.contains(line), "asks show says {line:?}: {shown}");
    }
    // Ana again is Ana once.
    let again = approve(&h, ANA, &id);
    assert!(!again.status.success());
    assert!(
        said(&again).contains("ana already answered"),
        "{}",
        said(&again)
    );
    let second = call(&h.client, "write_note", args.clone()).await;
    assert_eq!(second.is_error, Some(true), "one of two: {}", text(&second));
    assert!(
        text(&second).contains("needs 1 more approval "),
        "{}",
        text(&second)
    );
    assert!(h.ledger().await.is_empty(), "nothing was sent yet");

    let two = approve(&h, BO, &id);
    assert!(two.status.success(), "{}", said(&two));
    assert!(said(&two).contains("answered"), "{}", said(&two));
    let ran = call(&h.client, "write_note", args).await;
    assert_ne!(ran.is_error, Some(true), "{}", text(&ran));
    let store = h.store().await;
    let row = store.ask(&id).await.expect("reads").expect("exists");
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(row.answered_by.as_deref(), Some("ana, bo"));
    let entries = store.audit_of_ask(&id).await.expect("audit");
    store.close().await;
    let answered: Vec<_> = entries
        .iter()
        .map(|record| &record.entry)
        .filter(|e| e.decision == Decision::Answered)
        .map(|e| {
            (
                e.answered_by.clone().unwrap_or_default(),
                e.answered_via.clone(),
            )
        })
        .collect();
    assert_eq!(
        answered,
        [
            ("ana".to_owned(), Some("cli".to_owned())),
            ("bo".to_owned(), Some("cli".to_owned()))
        ],
        "each person's answer is its own entry"
    );
    let settling = &entries.last().expect("the decision").entry;
    assert_eq!(settling.decision, Decision::Elicited);
    assert_eq!(
        settling.answered_by.as_deref(),
        Some("ana, bo"),
        "it names them all"
    );
    assert!(text(&call(&h.client, "read_note", json!({"name": "todo"})).await).contains("ship it"));
}

#[tokio::test]
async fn one_approvers_no_blocks_a_quorum_call_for_good() {
    let h = gateway().await;
    let args = json!({"name": "todo", "text": "rm -rf"});
    let first = call(&h.client, "write_note", args.clone()).await;
    assert_eq!(first.is_error, Some(true));
    let id = waiting(&h).await;
    approve(&h, ANA, &id);
    let no = h.as_person(BO, &["decline", &id]);
    assert!(no.status.success(), "{}", said(&no));
    let mut confirmed = args;
    confirmed["confirm"] = json!(true);
    let again = call(&h.client, "write_note", confirmed).await;
    assert_eq!(again.is_error, Some(true));
    assert!(
        text(&again).contains("already declined this exact call"),
        "{}",
        text(&again)
    );
    assert!(h.ledger().await.is_empty(), "nothing was sent");
    let store = h.store().await;
    let row = store.ask(&id).await.expect("reads").expect("exists");
    store.close().await;
    assert_eq!(row.status, AskStatus::Declined);
    assert_eq!(row.answered_by.as_deref(), Some("bo"));
}
