//! The express lane on `--listen`: a `tools/call` that needs no person,
//! POSTed on a session of a classic revision, is answered from the
//! upstream's lane (see [`crate::express`]) as one `application/json`
//! body — no session worker, no event stream, no priming event. Through
//! rmcp each such call is decoded and encoded twice, handed between three
//! tasks, and answered as a stream the client must parse.
//!
//! The lane keeps every promise of the rmcp path: the same decision for
//! the session's principal under the request's auto-approve header, the
//! same records, metrics and errors (see `crate::express::take`). It takes
//! a POST only when rmcp would take it as it is, and everything else is
//! rmcp's:
//!
//! - it names a session this principal opened with a classic `initialize`
//!   (so rmcp checked its Host and Origin then), carries no `Origin`
//!   itself (no browser's request: those stay with rmcp's checks), and
//!   its `MCP-Protocol-Version`, if any, is the session's;
//! - it accepts both JSON and an event stream and sends JSON, with no
//!   weights or parameters to weigh (rmcp's 406 and 415 stay rmcp's);
//! - it asks for no progress (progress goes out on the stream).
//!
//! While a call is on the lane its session counts a request open (see
//! [`Sessions::hold`]); a client's `notifications/cancelled` naming it is
//! passed to its upstream and accepted with `202`.

use std::sync::Arc;

use askgate_mcp::Principal;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::ErrorData;
use rmcp::transport::streamable_http_server::session::SessionId;
use tokio::sync::oneshot;

use super::sessions::{Owner, Owners, Sessions, Speaks};
use crate::express::lane::error_response;
use crate::express::take::{self, Caller};
use crate::express::{Incoming, Initialize, ReplyTo, is_classic};
use crate::proxy::Gateway;

/// The lane's side of `--listen`: the gateway, and the sessions.
pub(super) struct HttpLane {
    gateway: Gateway,
    owners: Owners,
    sessions: Arc<Sessions>,
}

/// What a client's `initialize` said, kept until its session is known.
pub(super) struct Handshake {
    speaks: Speaks,
}

impl HttpLane {
    /// The lane for `gateway`'s calls on `sessions`, whose owners are
    /// `owners`.
    pub(super) fn new(gateway: Gateway, owners: Owners, sessions: Arc<Sessions>) -> HttpLane {
        HttpLane {
            gateway,
            owners,
            sessions,
        }
    }

    /// What `message` says of its session, when it is an `initialize`
    /// (with no session yet) that rmcp reads, asking for a classic
    /// revision.
    pub(super) fn handshake(parts: &Parts, message: &[u8]) -> Option<Handshake> {
        if parts.headers.contains_key("mcp-session-id") {
            return None;
        }
        let request = serde_json::from_slice::<Incoming<'_>>(message).ok()?;
        if !request.is_read_by_rmcp() || request.method.as_deref() != Some("initialize") {
            return None;
        }
        let params = request.params?;
        // One rmcp will refuse opens no session.
        serde_json::from_str::<rmcp::model::InitializeRequestParams>(params.get()).ok()?;
        let initialize = serde_json::from_str::<Initialize<'_>>(params.get()).ok()?;
        is_classic(&initialize.protocol_version).then(|| Handshake {
            speaks: Speaks {
                version: initialize.protocol_version.clone().into_owned(),
                follows_tasks: initialize.follows_tasks(),
                calls: Arc::default(),
            },
        })
    }

    /// The session `response` opened (for `principal`) after `handshake`:
    /// its calls may take the lane from now on.
    pub(super) fn opened(&self, handshake: Handshake, principal: &str, response: &Response) {
        if !response.status().is_success() {
            return;
        }
        let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        else {
            return;
        };
        self.owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(id.to_owned())
            .or_insert_with(|| Owner::of(principal.to_owned()))
            .speaks = Some(Arc::new(handshake.speaks));
    }

    /// Offer a POSTed `message`: its answer when the lane took it, else
    /// `None` (it is rmcp's).
    pub(super) async fn offer(&self, parts: &Parts, message: &[u8]) -> Option<Response> {
        let headers = &parts.headers;
        let session = headers.get("mcp-session-id")?.to_str().ok()?;
        if headers.contains_key(header::ORIGIN) || !speaks_plain_json(headers) {
            return None;
        }
        let principal = parts.extensions.get::<Principal>()?;
        let request = serde_json::from_slice::<Incoming<'_>>(message).ok()?;
        if !request.is_read_by_rmcp() {
            return None;
        }
        let speaks = self.speaks(session, &principal.0)?;
        if headers
            .get("mcp-protocol-version")
            .is_some_and(|v| v.as_bytes() != speaks.version.as_bytes())
        {
            return None;
        }
        match (request.method.as_deref(), request.id) {
            (Some("tools/call"), Some(id)) => {
                // A header rmcp would refuse is refused there, with why.
                let threshold = self.gateway.threshold_in(headers).ok()?;
                let session = SessionId::from(session);
                let _open = self.sessions.hold(&session)?;
                let (body, answered) = oneshot::channel();
                let caller = Caller {
                    principal: &principal.0,
                    threshold,
                    follows_tasks: speaks.follows_tasks,
                    calls: &speaks.calls,
                    progress: None,
                };
                if !take::take(
                    &self.gateway,
                    caller,
                    id,
                    request.params?,
                    ReplyTo::Body(body),
                ) {
                    return None;
                }
                let answer = answered.await.unwrap_or_else(|_| {
                    error_response(
                        id,
                        ErrorData::internal_error(
                            "askgate: the call ended without its server's answer: it was \
                             cancelled, or the gateway stopped; it may have run",
                            None,
                        ),
                    )
                });
                Some(
                    (
                        StatusCode::OK,
                        [(header::CONTENT_TYPE, "application/json")],
                        answer,
                    )
                        .into_response(),
                )
            }
            (Some("notifications/cancelled"), None) => {
                take::cancel(&self.gateway, &speaks.calls, request.params?)
                    .then(|| StatusCode::ACCEPTED.into_response())
            }
            _ => None,
        }
    }

    /// How session `id`'s client speaks, when it is `principal`'s and its
    /// calls may take the lane.
    fn speaks(&self, id: &str, principal: &str) -> Option<Arc<Speaks>> {
        let owners = self
            .owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let owner = owners.get(id)?;
        (owner.principal == principal)
            .then(|| owner.speaks.clone())
            .flatten()
    }
}

/// Whether a POST with `headers` sends JSON and accepts both JSON and an
/// event stream, each named plainly (no weight, no parameter): one rmcp
/// takes, and one a JSON answer suits.
fn speaks_plain_json(headers: &HeaderMap) -> bool {
    let sends_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
        });
    let mut accepts = headers.get_all(header::ACCEPT).iter();
    let (Some(accept), None) = (accepts.next(), accepts.next()) else {
        return false;
    };
    let Ok(accept) = accept.to_str() else {
        return false;
    };
    let (mut json, mut stream) = (false, false);
    for entry in accept.split(',') {
        let entry = entry.trim();
        if entry.contains(';') {
            return false;
        }
        json |= entry.eq_ignore_ascii_case("application/json");
        stream |= entry.eq_ignore_ascii_case("text/event-stream");
    }
    sends_json && json && stream
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(accept: &[&'static str], content_type: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in accept {
            headers.append(header::ACCEPT, HeaderValue::from_static(value));
        }
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers
    }

    #[test]
    fn only_a_post_that_plainly_accepts_both_and_sends_json_is_the_lanes() {
        let both = "application/json, text/event-stream";
        assert!(speaks_plain_json(&headers(&[both], "application/json")));
        assert!(speaks_plain_json(&headers(
            &["text/event-stream,application/json"],
            "application/json; charset=utf-8"
        )));
        // rmcp's to weigh, or to refuse.
        for accept in [
            "application/json",
            "text/event-stream",
            "application/json;q=0, text/event-stream",
            "*/*",
        ] {
            assert!(
                !speaks_plain_json(&headers(&[accept], "application/json")),
                "{accept}"
            );
        }
        assert!(!speaks_plain_json(&headers(&[both], "text/plain")));
        assert!(!speaks_plain_json(&headers(
            &["application/json", "text/event-stream"],
            "application/json"
        )));
    }
}
