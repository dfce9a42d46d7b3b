//! A resting session woken from inside the gateway: an upstream asks
//! something outside any call, and the one principal connected is a client
//! whose session rests with its GET stream open. The session is woken as
//! a request of its client would wake it — a `ping` through rmcp's own
//! service, which restores the session from its handshake (see
//! `super::sessions`) — so the question goes through a worker of rmcp's
//! and out on the client's GET stream, and its answer comes back the way
//! every answer does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};

use askgate_mcp::Principal;
use axum::body::Body;
use axum::http::{Request, header};
use rmcp::transport::streamable_http_server::StreamableHttpService;

use super::sessions::{Owners, Sessions};
use crate::downstream::Waker;
use crate::proxy::Gateway;

/// What the ping's answer may take, read to its end (it is one event).
const ANSWER_AT_MOST: usize = 64 * 1024;

/// The number of the next waking ping: two wakings of one session at
/// once send two requests, each its own id.
static PINGS: AtomicU64 = AtomicU64::new(0);

/// Wakes a session through `service`, as its owner in `owners`.
pub(super) fn waker(service: StreamableHttpService<Gateway, Sessions>, owners: Owners) -> Waker {
    Waker::new(move |id: String| {
        let service = service.clone();
        let owners = Arc::clone(&owners);
        Box::pin(async move {
            let principal = owners
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&id)
                .map(|owner| owner.principal.clone());
            let Some(principal) = principal else {
                return false;
            };
            let woke = wake(&service, &id, principal).await;
            if !woke {
                tracing::warn!(session = %id, "a resting session could not be woken to be asked");
            }
            woke
        })
    })
}

/// Send session `id` a `ping` as `principal`'s client would: whether it
/// was answered. With no `MCP-Protocol-Version` header: a request of a
/// session whose handshake was done (the revision it negotiated holds).
async fn wake(
    service: &StreamableHttpService<Gateway, Sessions>,
    id: &str,
    principal: String,
) -> bool {
    let request = Request::post("/mcp")
        // A loopback name: rmcp's check of the Host header.
        .header(header::HOST, "localhost")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json")
        .header("mcp-session-id", id);
    let number = PINGS.fetch_add(1, Ordering::Relaxed);
    let ping = format!(r#"{{"jsonrpc":"2.0","id":"askgate-wakes-{number}","method":"ping"}}"#);
    let Ok(mut request) = request.body(Body::from(ping)) else {
        return false;
    };
    request.extensions_mut().insert(Principal(principal));
    let response = service.handle(request).await;
    if !response.status().is_success() {
        tracing::debug!(session = %id, status = %response.status(), "the waking ping was refused");
        return false;
    }
    // Read to its end: the ping's stream counts as open until then.
    axum::body::to_bytes(Body::new(response.into_body()), ANSWER_AT_MOST)
        .await
        .is_ok_and(|answer| {
            answer
                .windows(b"\"result\"".len())
                .any(|w| w == b"\"result\"")
        })
}
