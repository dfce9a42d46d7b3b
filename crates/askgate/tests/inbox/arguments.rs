//! A parked call's arguments on its page: in full, folded and masked, for
//! the people who may answer it only; erased once it is answered.

use askgate_core::{ArgumentSeal, Ask, Call, NONCE_LEN, Risk, confirmation_form};
use askgate_store::{NewAsk, SealedArguments, Store};
use askgate_testkit::approvals::TEAM;
use askgate_testkit::page::hidden;
use jiff::Timestamp;
use serde_json::{Map, Value as Json, json};

use super::{ALICE, CAROL, Server, asked_of, get, post_answer, sign_in, start};

/// Past the one-line preview's cut: only the full arguments hold it.
const DEEP: &str = "line 42: the part nobody could read before";

fn arguments() -> Map<String, Json> {
    let mut content: String = (1..=41).map(|n| format!("line {n}: keep\n")).collect();
    content.push_str(DEEP);
    let Json::Object(arguments) = json!({
        "path": "/srv/app/config.toml",
        "content": content,
        "password": "hunter2-hunter2",
    }) else {
        unreachable!("an object")
    };
    arguments
}

/// The deployment's seal, from the key `askgate inbox` made beside the store.
fn seal(server: &Server) -> ArgumentSeal {
    let path = askgate_gateway::keys::key_path(&server.store_url);
    askgate_gateway::keys::Keys::load_or_create(&path)
        .expect("the inbox's key")
        .argument_seal()
}

/// A confirmation of a call for alice's agent, parked with its arguments
/// sealed, under `panel` if given.
async fn park_call(server: &Server, id: &str, panel: Option<Json>) -> Store {
    let call = Call {
        server: "deployer",
        tool: "write_file",
        risk: Risk::HighWrite,
        why: None,
        preview: Some("path: /srv/app/config.toml, content: line 1: keep…"),
        may_have_run: None,
    };
    let ask = Ask::new(confirmation_form(&call)).expect("askable");
    let request = json!({"kind": "form", "ask": ask.to_record()});
    let store = Store::open(&server.store_url).await.expect("opens");
    let sealed = seal(server).seal(id, &arguments(), [3; NONCE_LEN]);
    store
        .park_with_arguments(
            &NewAsk {
                panel,
                ..asked_of(id, "alice", request, Timestamp::now())
            },
            Some(&sealed),
        )
        .await
        .expect("parks");
    store
}

#[tokio::test]
async fn the_person_who_may_answer_sees_every_argument_and_nothing_is_left_once_answered() {
    let server = start().await;
    let store = park_call(&server, "call-1", None).await;
    let alice = sign_in(&server, ALICE).await;
    let (_, page) = get(&server, &alice, "/asks/call-1").await;
    assert!(page.contains("What it runs with"), "{page}");
    assert!(page.contains(DEEP), "the whole content: {page}");
    assert!(page.contains("/srv/app/config.toml"));
    assert!(!page.contains("hunter2"), "a password shown: {page}");
    // Approved: the arguments are erased, and the page says so.
    let csrf = hidden(&page, "csrf");
    let (status, settled) = post_answer(
        &server,
        &alice,
        "call-1",
        &[("csrf", csrf.as_str()), ("action", "accept")],
    )
    .await;
    assert!(
        status.is_success() || status.is_redirection(),
        "{status}: {settled}"
    );
    assert_eq!(
        store.sealed_arguments("call-1").await.expect("reads"),
        SealedArguments::Erased
    );
    let (_, page) = get(&server, &alice, "/asks/call-1").await;
    assert!(!page.contains(DEEP), "{page}");
    assert!(page.contains("arguments were erased"), "{page}");
    assert!(
        page.contains("path: /srv/app/config.toml"),
        "the preview stays: {page}"
    );
}

#[tokio::test]
async fn under_a_rule_only_those_it_lets_answer_see_the_arguments() {
    // Any of the team, never alice, whose agent asks: carol sees them,
    // alice (who may see the page) does not.
    let server = start().await;
    let rule = json!({"any_of": ["team"], "not": "requester"});
    let panel =
        askgate_testkit::approvals::panel(rule, TEAM, Risk::HighWrite, &["alice".to_owned()]);
    let _store = park_call(
        &server,
        "call-2",
        Some(serde_json::to_value(panel).expect("json")),
    )
    .await;
    let carol = sign_in(&server, CAROL).await;
    let (_, page) = get(&server, &carol, "/asks/call-2").await;
    assert!(page.contains(DEEP), "carol may answer: {page}");
    let alice = sign_in(&server, ALICE).await;
    let (_, page) = get(&server, &alice, "/asks/call-2").await;
    assert!(page.contains("write_file"), "alice sees the ask: {page}");
    assert!(!page.contains(DEEP), "but not what it runs with: {page}");
}
