//! A session's end over Streamable HTTP, as an SDK's client sees it.

use serde_json::json;

use super::http_session::HttpSession;
use super::{ALICE, start};

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
