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
