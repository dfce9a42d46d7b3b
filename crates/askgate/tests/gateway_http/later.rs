//! An upstream's ask outside any call, and an intake, over Streamable
//! HTTP: whose session each reaches, at rest or awake.

use super::*;

/// `client` calls `ask_name_later`: the gateway's log line of how the
/// upstream's ask after the call ended.
async fn asked_later(gateway: &Listening, client: &RunningService<RoleClient, Person>) -> String {
    let said = client
        .call_tool(CallToolRequestParams::new("ask_name_later"))
        .await
        .expect("a result");
    assert_ne!(said.is_error, Some(true), "{said:?}");
    gateway.log().line_with(&[ASKED_LATER]).await
}

/// With its principal the only one connected, the upstream's ask after
/// `client`'s call reaches `person`.
async fn reaches_alone(
    gateway: &Listening,
    client: &RunningService<RoleClient, Person>,
    person: &Person,
) {
    gateway.log().clear();
    let ended = asked_later(gateway, client).await;
    assert!(!ended.contains("refused"), "{ended}");
    assert_eq!(
        person.messages().first().map(String::as_str),
        Some("What is your name?")
    );
}

#[tokio::test]
async fn an_upstreams_ask_outside_any_call_reaches_only_a_lone_principal() {
    // ask_name_later says it only reads: taken at its word here.
    let gateway = start_with("trust_read_only_hints = true").await;
    let (alice, bob) = (reader(), reader());
    let alice_client = connect(&gateway.url, ALICE, &alice).await;
    let bob_client = connect(&gateway.url, BOB, &bob).await;
    // Two principals connected: the upstream's ask, after its call ended,
    // says nothing of whose it is — refused, shown to neither.
    let ended = asked_later(&gateway, &alice_client).await;
    assert!(ended.contains("refused"), "{ended}");
    assert!(ended.contains("2 principals"), "{ended}");
    assert!(alice.asked.is_empty() && bob.asked.is_empty());
    // With bob gone, alice is the one principal: the ask reaches her.
    bob_client.cancel().await.expect("bob leaves");
    reaches_alone(&gateway, &alice_client, &alice).await;
}

#[tokio::test]
async fn a_session_at_rest_counts_as_its_principal_connected_for_an_ask_outside_any_call() {
    let gateway = start_with("trust_read_only_hints = true").await;
    let alice = reader();
    let alice_client = connect(&gateway.url, ALICE, &alice).await;
    // Bob's session, quiet, rests (and alice's, her client listening on
    // its GET stream).
    let bob = HttpSession::open(&gateway.url, BOB, "2025-06-18", json!({})).await;
    sessions_come_to(&gateway, "resting", 2).await;
    // Still two principals connected: the upstream's ask, after its call
    // ended, is shown to neither.
    let ended = asked_later(&gateway, &alice_client).await;
    assert!(ended.contains("2 principals"), "{ended}");
    assert!(alice.asked.is_empty());
    // Bob's client closes the session: alice is alone.
    assert_eq!(bob.close().await.status(), 200);
    reaches_alone(&gateway, &alice_client, &alice).await;
}

#[tokio::test]
async fn an_intake_asked_once_is_once_per_principal_and_session() {
    let gateway = start_with(INTAKE).await;
    let read = || {
        let mut params = CallToolRequestParams::new("read_note");
        params.arguments = json!({"name": "todo"}).as_object().cloned();
        params
    };
    let (alice, bob) = (reader(), reader());
    let alice_client = connect(&gateway.url, ALICE, &alice).await;
    for _ in 0..2 {
        alice_client.call_tool(read()).await.expect("a result");
    }
    assert_eq!(
        alice.asked.len(),
        1,
        "once for alice: {:?}",
        alice.messages()
    );
    // Another principal, another session: asked once too.
    let bob_client = connect(&gateway.url, BOB, &bob).await;
    for _ in 0..2 {
        bob_client.call_tool(read()).await.expect("a result");
    }
    assert_eq!(bob.asked.len(), 1, "once for bob: {:?}", bob.messages());
    assert_eq!(alice.asked.len(), 1, "alice is not asked for bob");
    // A new session of alice's is a new start.
    let again = reader();
    let alice_again = connect(&gateway.url, ALICE, &again).await;
    alice_again.call_tool(read()).await.expect("a result");
    assert_eq!(again.asked.len(), 1);
}

#[tokio::test]
async fn an_intake_settled_in_a_session_stays_settled_after_the_session_rests_and_wakes() {
    let gateway = start_with(INTAKE).await;
    // A client that takes forms, and opens no stream of its own.
    let session = HttpSession::open(
        &gateway.url,
        ALICE,
        "2025-06-18",
        json!({"elicitation": {"form": {}}}),
    )
    .await;
    let read = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "read_note", "arguments": {"name": "todo"}}})
    };
    let staging =
        |_: &serde_json::Value| json!({"action": "accept", "content": {"env": "staging"}});
    let (asked, said) = session.converse(&read(2), staging).await;
    assert_eq!(asked.len(), 1, "the intake, asked once: {asked:?}");
    assert!(
        said.last().is_some_and(|m| m.get("result").is_some()),
        "{said:?}"
    );
    // Quiet: it rests. Its next call wakes it, as the same session.
    sessions_come_to(&gateway, "resting", 1).await;
    let (asked, said) = session.converse(&read(3), staging).await;
    assert!(asked.is_empty(), "asked again after a wake: {asked:?}");
    assert!(
        said.last().is_some_and(|m| m.get("result").is_some()),
        "{said:?}"
    );
    sessions_come_to(&gateway, "awake", 0).await;
}
