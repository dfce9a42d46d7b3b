//! What a client POSTs on `--listen` that rmcp would misread, answered or
//! mended before rmcp sees it — the screen stdio has (see
//! `stdio/screen.rs`): a request whose params do not fit its method is
//! answered `-32602` naming the method and what was wrong, one that cannot
//! be read `-32600` with its id, and an answer that cannot be read reaches
//! rmcp as a JSON-RPC error with its id. Without it rmcp answers the first
//! "method not found" and the second without its id.
//!
//! The body is read whole, as rmcp reads it, within the listener's
//! longest body (`[limits] request_mib`, see `askgate_inbox::serving`).
//!
//! A request of 2026-07-28 (its `MCP-Protocol-Version` says so) of a
//! method that revision removed is rmcp's to answer (`404`, `-32601`),
//! whatever its params.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use askgate_mcp::Principal;

use super::carrying;
use super::express::HttpLane;
use crate::stdio::screen::{Verdict, verdict};
use crate::tasks::Routes;

/// What the screen needs: where 2025-11-25's tasks go, and the express
/// lane.
pub(super) struct Screen {
    /// The tasks' routes, by task id.
    pub(super) routes: Routes,
    /// The lane, which answers the calls that need no person.
    pub(super) lane: HttpLane,
}

/// The methods 2026-07-28 removed.
const REMOVED: [&str; 4] = [
    "initialize",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Whether `message`, sent under revision `version`, is a request of a
/// method that revision removed.
fn removed_in(version: Option<&str>, message: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    version.is_some_and(|version| !crate::express::is_classic(version))
        && serde_json::from_slice::<Method<'_>>(message)
            .ok()
            .and_then(|m| m.method)
            .is_some_and(|method| REMOVED.contains(&method.as_ref()))
}

/// Screen a POST's message, a classic client's 2025-11-25 task request
/// renamed for askgate and the answers that carry task fields put back
/// (see [`super::carrying`]); answer a call that needs no person from the
/// express lane (see [`super::express`]); pass anything else on as it is.
pub(super) async fn screened<F: Future<Output = Response>>(
    screen: &Screen,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    if request.method() != Method::POST {
        return next(request).await;
    }
    let (mut parts, body) = request.into_parts();
    // Already cut at the listener's longest body.
    let message = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(message) => message,
        Err(error) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("askgate: the request's body could not be read whole: {error}\n"),
            )
                .into_response();
        }
    };
    // First the lane, as on stdio: it takes only what it reads whole, and
    // what it reads rmcp reads.
    if let Some(answer) = screen.lane.offer(&parts, &message).await {
        return answer;
    }
    let version = parts
        .headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok());
    let screened = if removed_in(version, &message) {
        Verdict::Pass
    } else {
        verdict(&message)
    };
    match screened {
        Verdict::Pass => {
            let handshake = HttpLane::handshake(&parts, &message);
            let principal = parts.extensions.get::<Principal>().cloned();
            let carries = carrying::answer_carries(&message);
            let body = match carrying::renamed(&message, version, &screen.routes) {
                Some(renamed) => {
                    parts.headers.remove(header::CONTENT_LENGTH);
                    Body::from(renamed)
                }
                None => Body::from(message),
            };
            let response = next(Request::from_parts(parts, body)).await;
            if let (Some(handshake), Some(principal)) = (handshake, principal) {
                screen.lane.opened(handshake, &principal.0, &response);
            }
            if carries {
                carrying::restored(response).await
            } else {
                response
            }
        }
        Verdict::Answer(error) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            error,
        )
            .into_response(),
        Verdict::Mend(instead) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            next(Request::from_parts(parts, Body::from(instead))).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_modern_request_of_a_removed_method_is_left_to_rmcp() {
        let initialize = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        let call = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}"#;
        assert!(removed_in(Some("2026-07-28"), initialize));
        assert!(!removed_in(Some("2025-11-25"), initialize));
        assert!(!removed_in(None, initialize));
        assert!(!removed_in(Some("2026-07-28"), call));
        // What is left to the screen: a misfit initialize of a classic
        // client is answered with its id.
        assert!(
            matches!(verdict(initialize), Verdict::Answer(error) if error.contains(r#""id":1"#))
        );
    }
}
