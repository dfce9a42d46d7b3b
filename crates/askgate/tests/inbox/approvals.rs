//! An ask a team's rule decides, answered on its page by two people: the
//! page says the rule, who answered and who may still; the first
//! approval leaves it waiting; the second settles it, naming both; a
//! person the rule does not name is refused on the page, saying why.

use askgate_core::{Ask, Call, Risk, confirmation_form};
use askgate_store::{AskStatus, NewAsk};
use askgate_testkit::approvals::TEAM;
use askgate_testkit::page::hidden;
use jiff::Timestamp;
use reqwest::StatusCode;
use serde_json::json;

use super::{ALICE, CAROL, Server, asked_of, get, post_answer, row_of, sign_in, start};

/// A confirmation for alice's agent that two of alice, bob and carol
/// approve (alice may: `not_requester = false`).
async fn park_governed(server: &Server, id: &str) -> askgate_store::Store {
    let rule = json!({"quorum": {"of": "team", "need": 2}, "not_requester": false});
    let alice = ["alice".to_owned()];
    let panel = askgate_testkit::approvals::panel(rule, TEAM, Risk::HighWrite, &alice);
    let call = Call {
        server: "deployer",
        tool: "deploy",
        risk: Risk::HighWrite,
        why: None,
        preview: None,
        may_have_run: None,
    };
    let ask = Ask::new(confirmation_form(&call)).expect("askable");
    let request = json!({"kind": "form", "ask": ask.to_record()});
    let store = askgate_store::Store::open(&server.store_url)
        .await
        .expect("opens");
    store
        .park(&NewAsk {
            panel: Some(serde_json::to_value(panel).expect("serializes")),
            ..asked_of(id, "alice", request, Timestamp::now())
        })
        .await
        .expect("parks");
    store
}

/// `person` approves `id` on its page.
async fn approve(server: &Server, token: &str, id: &str) -> (StatusCode, String) {
    let session = sign_in(server, token).await;
    let (_, page) = get(server, &session, &format!("/asks/{id}")).await;
    let csrf = hidden(&page, "csrf");
    let form = [
        ("csrf", csrf.as_str()),
        ("action", "accept"),
        ("f.confirm.shown", "1"),
        ("f.confirm", "true"),
    ];
    post_answer(server, &session, id, &form).await
}

#[tokio::test]
async fn two_people_approve_a_quorum_ask_on_its_page_and_the_page_says_where_it_stands() {
    let server = start().await;
    let store = park_governed(&server, "ask_team").await;
    let alice = sign_in(&server, ALICE).await;
    let (_, page) = get(&server, &alice, "/asks/ask_team").await;
    assert!(page.contains("Rule approvals[0]: 2 of team."), "{page}");
    assert!(page.contains("2 more approvals needed."), "{page}");
    assert!(
        page.contains("May still answer: alice, bob, carol."),
        "{page}"
    );

    let (status, _) = approve(&server, ALICE, "ask_team").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let row = row_of(&store, "ask_team").await;
    assert_eq!(row.status, AskStatus::Pending, "one of two");
    let (_, page) = get(&server, &alice, "/asks/ask_team").await;
    assert!(page.contains("alice approved"), "{page}");
    assert!(page.contains("1 more approval needed."), "{page}");
    assert!(page.contains("May still answer: bob, carol."), "{page}");

    // Alice again: refused on the page, her first answer counts.
    let (status, page) = approve(&server, ALICE, "ask_team").await;
    assert_ne!(status, StatusCode::SEE_OTHER);
    assert!(
        page.contains("alice already answered ask ask_team"),
        "{page}"
    );

    let (status, _) = approve(&server, CAROL, "ask_team").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let row = row_of(&store, "ask_team").await;
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(row.answered_by.as_deref(), Some("alice, carol"));
    assert_eq!(row.answered_via.as_deref(), Some("web"));
}

#[tokio::test]
async fn the_operator_is_no_approver_unless_the_rule_names_them() {
    let server = start().await;
    let store = park_governed(&server, "ask_op").await;
    let token = server.operator_token.clone();
    let (status, page) = approve(&server, &token, "ask_op").await;
    assert_ne!(status, StatusCode::SEE_OTHER);
    assert!(
        page.contains("operator is not among those who may answer this ask (2 of team)"),
        "{page}"
    );
    assert_eq!(row_of(&store, "ask_op").await.status, AskStatus::Pending);
    assert_eq!(store.rejected_attempts("ask_op").await.expect("counts"), 1);
}
