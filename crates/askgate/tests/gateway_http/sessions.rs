//! A session's end over Streamable HTTP, as an SDK's client sees it, and
//! its rest while quiet, as its client does not see it.

/// What the gateway logs as it wakes a resting session to ask its client.
const WOKE: &str = "woke a resting session to ask its client";

use askgate_testkit::Person;
use askgate_testkit::person::accept;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

use super::http_session::{HttpSession, message_of};
use super::{ALICE, ASKED_LATER, BOB, connect, sessions_come_to, setup, start, start_with};

#[tokio::test]
async fn a_session_its_client_closes_is_closed_with_200_and_then_unknown() {
    let gateway = start().await;
    let session = HttpSession::open(&gateway.url, ALICE, "2025-06-18", json!({})).await;
    // 200, not rmcp's 202: the Python SDK logs "Session termination
    // failed" for anything but 200 or 204.
    let closed = session.close().await;
    assert_eq!(closed.status(), 200);
    let after = session
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    assert_eq!(after.status(), 404);
}

#[tokio::test]
async fn three_hundred_connections_from_this_machine_are_all_served() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let gateway = start().await;
    let address = gateway
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    // Every client on this machine is one address: three hundred
    // connections, as a hundred-odd SDK clients hold, are open at once.
    let mut open = Vec::new();
    for _ in 0..300 {
        open.push(
            tokio::net::TcpStream::connect(&address)
                .await
                .expect("connects"),
        );
    }
    for (n, connection) in open.iter_mut().enumerate() {
        let request = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\n\r\n");
        connection
            .write_all(request.as_bytes())
            .await
            .expect("writes");
        let mut answer = vec![0u8; 64];
        let read = askgate_testkit::within("an answer", connection.read(&mut answer))
            .await
            .expect("reads");
        let answer = String::from_utf8_lossy(&answer[..read]);
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "connection {n}: {answer}"
        );
    }
}

#[tokio::test]
async fn a_quiet_session_rests_and_its_next_request_wakes_it_as_it_was() {
    let gateway = start_with("[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n").await;
    let session = HttpSession::open(&gateway.url, ALICE, "2025-06-18", json!({})).await;
    sessions_come_to(&gateway, "awake", 1).await;
    // Quiet for a second, no stream open: its worker closes.
    sessions_come_to(&gateway, "resting", 1).await;
    sessions_come_to(&gateway, "awake", 0).await;
    // A call that needs no person is the express lane's: answered at
    // rest.
    let read = session
        .ask(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "read_note", "arguments": {"name": "todo"}}}))
        .await;
    // (The example server has no such note: its own answer.)
    let said = read["result"]["content"][0]["text"].as_str();
    assert_eq!(said, Some("no note named \"todo\""), "{read}");
    // Another principal cannot wake it.
    let bobs = HttpSession::open(&gateway.url, BOB, "2025-06-18", json!({})).await;
    let refused = bobs
        .post_with(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
            None,
            &[
                ("mcp-session-id", session.id.as_str()),
                ("mcp-protocol-version", "2025-06-18"),
            ],
        )
        .await;
    assert_eq!(refused.status(), 404);
    // Its next request of rmcp's wakes it, in the revision it negotiated.
    let listed = session
        .ask(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}))
        .await;
    let tools = listed["result"]["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "read_note"), "{listed}");
    let pinged = session
        .ask(&json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}))
        .await;
    assert_eq!(pinged["result"], json!({}), "{pinged}");
    // Its handshake is not done again: a second one is still refused.
    let again = session
        .ask(
            &json!({"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        )
        .await;
    assert!(
        again["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("handshake is done")),
        "{again}"
    );
    // At rest again (with bob's), its client's close ends it.
    sessions_come_to(&gateway, "resting", 2).await;
    assert_eq!(session.close().await.status(), 200);
    sessions_come_to(&gateway, "resting", 1).await;
    let after = session
        .post(&json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
        .await;
    assert_eq!(after.status(), 404);
}

#[tokio::test]
async fn a_session_listening_on_its_get_stream_rests_and_an_upstreams_later_ask_wakes_it_there() {
    let gateway = setup("trust_read_only_hints = true")
        .logging("askgate_mcp=info,askgate_gateway::downstream=info")
        .listen()
        .await;
    let alice = Person::with_forms()
        .named("http-alice")
        .otherwise(accept(json!({"name": "Alice"})));
    // rmcp's client, as the SDKs' do, listens on its GET stream.
    let client = connect(&gateway.url, ALICE, &alice).await;
    sessions_come_to(&gateway, "resting", 1).await;
    // Twice: the upstream asks outside any call, two seconds after its
    // call ended, when the session rests again; the session wakes, and
    // the question reaches the client on the GET stream it kept open —
    // the second time fed by another worker than the first.
    for round in 1..=2 {
        gateway.log().clear();
        let mut later = CallToolRequestParams::new("ask_name_later");
        later.arguments = json!({"after_ms": 2000}).as_object().cloned();
        let said = client.call_tool(later).await.expect("a result");
        assert_ne!(said.is_error, Some(true), "{said:?}");
        sessions_come_to(&gateway, "resting", 1).await;
        let ended = gateway.log().line_with(&[ASKED_LATER]).await;
        assert!(ended.ends_with(" answered"), "round {round}: {ended}");
        assert!(
            gateway.log().has_line_with(&[WOKE]),
            "round {round}: the session was asked at rest"
        );
        assert_eq!(alice.asked.len(), round, "{:?}", alice.messages());
        // Answered, it rests again.
        sessions_come_to(&gateway, "resting", 1).await;
    }
}

#[tokio::test]
async fn a_second_initialize_over_http_is_refused_and_the_session_goes_on_as_negotiated() {
    let gateway = start().await;
    let session = HttpSession::open(&gateway.url, ALICE, "2025-06-18", json!({})).await;
    // Another revision asked for on the same session: refused, naming
    // the one negotiated.
    let said = message_of(
        session
            .post_raw(
                &json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}}),
                Some("2025-11-25"),
            )
            .await,
    )
    .await;
    assert_eq!(said["id"], 2, "{said}");
    assert!(said.get("result").is_none(), "{said}");
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("protocol 2025-06-18"),
        "{said}"
    );
    // The session goes on, at the revision it negotiated.
    let listed = session
        .ask(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        .await;
    assert_eq!(listed["id"], 3, "{listed}");
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "read_note")),
        "{listed}"
    );
}
