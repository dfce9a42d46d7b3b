//! A `tools/call` the express lane leaves to a round (a person may be
//! asked, an intake is due, a retry carries state), handed to the
//! gateway's handler by the client's side itself rather than through
//! rmcp's service loop.
//!
//! Through rmcp, such a call's line goes from the tap to rmcp's transport,
//! from there to its service loop, which starts the handler; the answer
//! goes back through the loop and a task of its own that writes it: four
//! hops between tasks for nothing but carrying the call. Here the tap
//! starts the handler itself, through rmcp's own dispatch
//! ([`Service::handle_request`]: the request's revision checked, the result
//! shaped for the client's, as through the loop), with the request as rmcp
//! reads it — the same types, the same `_meta` and extensions, the client's
//! own peer, so the handler reports progress and logs as before — and
//! writes the answer to the client's pipe. Its asks go the same way:
//! written to the pipe, their answers taken from the client's lines by the
//! tap (see [`super::asks`]). What rmcp's loop does for a request is done
//! here too:
//!
//! - nothing is handed before the client says it is initialized (a
//!   client that calls sooner is served by rmcp, as before);
//! - a cancel from the client cancels the call's token, and its answer is
//!   not sent; the token is cancelled once the call is answered;
//! - when the client's service ends, the calls still running are given
//!   rmcp's grace to answer (5 s when the client closed its side, 2 s when
//!   the service was cancelled), then cancelled, the asks they wait on
//!   pending till then as rmcp's are. When the client closed its side,
//!   that grace starts as the tap reads the pipe's end, beside rmcp's
//!   drain of its own calls, not after it: a hang-up ends within one
//!   grace. A stop past the gateway's own grace cancels them at once.
//!
//! Only a classic client's calls are handed (see [`crate::express`]), and
//! never one that may become a task (its client follows tasks, or declares
//! capabilities in the request, or sends a 2025-11-25 `task`): those stay
//! rmcp's, which follows them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, ClientRequest, GetExtensions, GetMeta, JsonRpcMessage, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::service::{QuitReason, RequestContext, RoleServer, Service};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use askgate_mcp::direct::{ClientLine, DirectAsks};

use super::asks::ClientAsks;
use crate::express::Cancelled;
use crate::express::take::key_of;
use crate::lines::Out;
use crate::proxy::{ClientSlot, Gateway};

/// The client's side of handed calls.
pub(crate) struct Handed {
    gateway: Gateway,
    /// The client's pipe.
    reply: Arc<Out>,
    /// The client's peer, once its handshake is answered: until then,
    /// every call is rmcp's.
    peer: ClientSlot,
    /// The calls handed and not yet answered, by the client's request id.
    calls: Arc<Mutex<HashMap<String, CancellationToken>>>,
    /// Cancelled when the client's service ends: every handed call's token
    /// is a child of it, as rmcp's are of its loop's.
    ended: CancellationToken,
    /// The handed calls' asks, written to the client by the gateway.
    asks: Arc<ClientAsks>,
    /// The handed calls running.
    running: TaskTracker,
}

/// The call with `id` and `params` (a `tools/call` whose envelope rmcp
/// reads, see [`crate::express::Incoming::is_read_by_rmcp`]) as rmcp reads
/// it: its id, and the request by rmcp's own `Deserialize` for a
/// `tools/call` (its `_meta` moved to the request's extensions). `None`
/// when rmcp would not read it as a call (it serves it then, as any
/// request it cannot take as one of its own).
///
/// Not through rmcp's `ClientJsonRpcMessage`: that is an untagged enum of
/// the message kinds over an untagged enum of 22 requests, which reads a
/// line into serde's buffer and tries each request before `tools/call` in
/// turn, each failure an error made and dropped: callgrind counted 40,000
/// instructions to hand a call that way, 13,000 this way.
fn call_of(id: &RawValue, params: &RawValue) -> Option<(RequestId, CallToolRequest)> {
    let id = serde_json::from_str::<RequestId>(id.get()).ok()?;
    let params = params.get();
    let mut request = String::with_capacity(params.len() + 40);
    request.push_str(r#"{"method":"tools/call","params":"#);
    request.push_str(params);
    request.push('}');
    let call = serde_json::from_str::<CallToolRequest>(&request).ok()?;
    Some((id, call))
}

/// What the hand-off reads of a call's parameters besides rmcp.
#[derive(Deserialize)]
struct Besides {
    /// A 2025-11-25 task request (renamed for askgate's own method).
    task: Option<IgnoredAny>,
    #[serde(rename = "_meta")]
    meta: Option<MetaBesides>,
}

#[derive(Deserialize)]
struct MetaBesides {
    /// Capabilities declared in the request: its call may become a task.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: Option<IgnoredAny>,
}

impl Handed {
    /// The hand-off for the client writing to `reply`'s other end, its
    /// peer in `peer` once known, its calls cancelled with `ended`.
    pub(crate) fn new(
        gateway: Gateway,
        reply: Arc<Out>,
        peer: ClientSlot,
        ended: CancellationToken,
    ) -> Handed {
        Handed {
            gateway,
            reply: Arc::clone(&reply),
            peer,
            calls: Arc::new(Mutex::new(HashMap::new())),
            ended,
            asks: Arc::new(ClientAsks::new(Arc::clone(&reply))),
            running: TaskTracker::new(),
        }
    }

    /// Hand the client's `tools/call` (its id `id`, its parameters
    /// `params`) to the gateway's handler: `false` when it is
    /// rmcp's (no peer yet, a call that may become a task, or a line rmcp
    /// would not read as a call).
    pub(crate) fn take(&self, id: &RawValue, params: &RawValue) -> bool {
        let Some(peer) = self.peer.get() else {
            return false;
        };
        let Ok(besides) = serde_json::from_str::<Besides>(params.get()) else {
            return false;
        };
        let declares = besides
            .meta
            .is_some_and(|meta| meta.client_capabilities.is_some());
        if besides.task.is_some() || declares {
            return false;
        }
        let Some((request_id, call)) = call_of(id, params) else {
            return false;
        };
        tracing::debug!(target: "askgate_gateway::express", id = %request_id, tool = %call.params.name, "handed to its handler by the client's side");
        let mut request = ClientRequest::CallToolRequest(call);
        // As rmcp's loop does: the request's `_meta` and extensions move
        // to the context.
        let meta = std::mem::take(request.get_meta_mut());
        let extensions = std::mem::take(request.extensions_mut());
        let key = key_of(id);
        let ct = self.ended.child_token();
        self.calls().insert(key.clone(), ct.clone());
        let mut cx = RequestContext::new(request_id.clone(), peer.clone());
        cx.ct = ct.clone();
        cx.meta = meta;
        cx.extensions = extensions;
        // Its asks go to the client the same way its answer does.
        let asks: Arc<dyn ClientLine> = self.asks.clone();
        cx.extensions.insert(DirectAsks(asks));
        let gateway = self.gateway.clone();
        let reply = Arc::clone(&self.reply);
        let calls = Arc::clone(&self.calls);
        self.running.spawn(async move {
            // rmcp's own dispatch of a request to a handler, with all it
            // checks and mends on the way (the request's revision, the
            // result's shape for the client's).
            let result = Service::<RoleServer>::handle_request(&gateway, request, cx).await;
            // Answered: whatever watched the call's token stops.
            ct.cancel();
            let cancelled = calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key)
                .is_none();
            if cancelled {
                tracing::debug!(id = %request_id, "the client cancelled this call, or its service ended: its answer is not sent");
                return;
            }
            let message: ServerJsonRpcMessage = match result {
                Ok(result) => JsonRpcMessage::response(result, request_id),
                Err(error) => JsonRpcMessage::error(error, Some(request_id)),
            };
            let mut line = match serde_json::to_vec(&message) {
                Ok(line) => line,
                Err(error) => {
                    tracing::error!(%error, "a handed call's answer could not be written as JSON");
                    return;
                }
            };
            line.push(b'\n');
            if let Err(error) = reply.send(&crate::legacy_tasks::restore_frame(&line)) {
                tracing::debug!(%error, "the client went away before a handed call's answer");
            }
        });
        true
    }

    /// The client's service ended `why`: the calls handed and still
    /// running are given what rmcp's loop gives its own (5 s when the
    /// client closed its side, 2 s when the service was cancelled) to
    /// answer, then cancelled. An ask they wait on stays pending through
    /// that grace, as rmcp's do (so its call ends cancelled, not as one
    /// whose client could not show it), and its withdrawal is not written
    /// to a service that has ended.
    pub(crate) async fn end(&self, why: Option<&QuitReason>) {
        let grace = match why {
            Some(QuitReason::Closed) => Duration::from_secs(5),
            Some(QuitReason::Cancelled) => Duration::from_secs(2),
            _ => Duration::ZERO,
        };
        self.running.close();
        if tokio::time::timeout(grace, self.running.wait())
            .await
            .is_err()
        {
            tracing::debug!("handed calls still running as the client's service ended: cancelled");
        }
        // Past the grace, what they say is not written (rmcp's loop, ended,
        // writes nothing either): not their answers, not an ask's
        // withdrawal.
        self.calls().clear();
        self.asks.mute();
        self.ended.cancel();
    }

    /// A client's `notifications/cancelled` with `params`: `true` when it
    /// names a handed call (then its token is cancelled, and its answer
    /// will not be sent).
    pub(crate) fn cancel(&self, params: &RawValue) -> bool {
        let Ok(cancelled) = serde_json::from_str::<Cancelled<'_>>(params.get()) else {
            return false;
        };
        match self.calls().remove(&key_of(cancelled.request_id)) {
            Some(ct) => {
                // As rmcp says of a cancel it hears.
                let reason = cancelled.reason.map(RawValue::get);
                tracing::debug!(target: "askgate_gateway::express", id = cancelled.request_id.get(), reason, "cancelled");
                ct.cancel();
                true
            }
            None => false,
        }
    }

    /// The client's answer with `id`, its `result` or its `error`: `true`
    /// when it answers an ask of a handed call (see [`super::asks`]).
    pub(crate) fn answered(
        &self,
        id: &RawValue,
        result: Option<&RawValue>,
        error: Option<&RawValue>,
    ) -> bool {
        self.asks.answered(id, result, error)
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ClientJsonRpcMessage, JsonRpcRequest};
    use serde_json::Value as Json;

    use super::*;
    use crate::express::Incoming;

    /// A call's id and request, written back as JSON.
    type Read = Option<(Json, Json)>;

    /// The call in `line` as the hand-off reads it, and as rmcp's own
    /// message type does.
    fn both_ways(line: &str) -> (Read, Read) {
        let written = |id: &RequestId, request: &ClientRequest| {
            let id = serde_json::to_value(id).expect("an id");
            (id, serde_json::to_value(request).expect("a request"))
        };
        let incoming: Incoming<'_> = serde_json::from_str(line).expect("an envelope");
        let ours = call_of(
            incoming.id.expect("an id"),
            incoming.params.expect("params"),
        )
        .map(|(id, call)| written(&id, &ClientRequest::CallToolRequest(call)));
        let rmcp = match serde_json::from_str::<ClientJsonRpcMessage>(line) {
            Ok(JsonRpcMessage::Request(JsonRpcRequest { id, request, .. }))
                if matches!(request, ClientRequest::CallToolRequest(_)) =>
            {
                Some(written(&id, &request))
            }
            _ => None,
        };
        (ours, rmcp)
    }

    #[test]
    fn a_call_is_read_as_rmcp_reads_it_or_left_to_rmcp_as_it_would_not() {
        let calls = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
            r#"{"jsonrpc":"2.0","id":"s-1","method":"tools/call","params":{"name":"echo"}}"#,
            // `_meta` moves to the request's extensions, a progress token
            // and another key with it.
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"_meta":{"progressToken":"p","x.y/z":[1,2]},"name":"echo","arguments":{}}}"#,
            // Members rmcp does not know, in the params and the envelope.
            r#"{"params":{"name":"echo","other":{"a":1},"arguments":{"n":1.5}},"extra":true,"jsonrpc":"2.0","method":"tools/call","id":9}"#,
            // Retries carry what rmcp reads too.
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","requestState":"s","inputResponses":{}}}"#,
        ];
        for line in calls {
            let (ours, rmcp) = both_ways(line);
            assert!(ours.is_some(), "read as a call: {line}");
            assert_eq!(ours, rmcp, "{line}");
        }
        // Params rmcp does not read as a call's: it serves them (as a
        // request it cannot take as one of its own), not the hand-off.
        let not_calls = [
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"echo","_meta":"no"}}"#,
        ];
        for line in not_calls {
            let (ours, rmcp) = both_ways(line);
            assert_eq!(ours, None, "{line}");
            assert_eq!(rmcp, None, "{line}");
        }
    }
}
