//! A request's asks sent to its client without rmcp's service loop in
//! between, for a server that carries the client's messages itself.
//!
//! Through rmcp's [`Peer`](rmcp::service::Peer), an `elicitation/create`
//! goes from the handler to the service loop, then to a task that writes
//! it; its answer comes back from the transport to the loop, then to the
//! handler. A server that reads and writes the client's pipe itself (the
//! askgate gateway on stdio) can send the ask and hand the answer straight
//! back. It puts a [`DirectAsks`] in the request's extensions
//! ([`RequestContext::extensions`](rmcp::service::RequestContext)), and
//! the asks this crate makes for that request ([`ask_person`](crate::ask_person),
//! a round's confirmation and questions) go that way, with the same
//! timeout and the same withdrawal when the request is cancelled. A
//! request without one asks through the peer, as before; so does anything
//! that sends its own requests through the peer (the gateway's relay of an
//! upstream's asks), whose answers the server leaves to rmcp.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ElicitResult, RequestId};
use rmcp::service::{RequestHandle, RoleServer};
use rmcp::{ErrorData, ServiceError};
use serde_json::Value as Json;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::ask::{Unanswered, WITHDRAWN};

/// The client's answer to an ask sent directly: its `result` as the
/// client wrote it (read here as an elicitation's result, as rmcp would
/// read it), or the error response it gave.
pub type Reply = Result<Box<RawValue>, ErrorData>;

/// Where the client's [`Reply`] to an ask sent directly comes. Dropped
/// unsent when the client went away.
pub type Answer = oneshot::Receiver<Reply>;

/// What sends a request's asks to its client directly.
pub trait ClientLine: Send + Sync {
    /// Send `elicitation/create` with `params`, a JSON object (a form's or
    /// a link's params, as the client's revision has them): its request id
    /// (for [`ClientLine::withdraw`]), and where its answer will come.
    ///
    /// The params come as JSON, not as rmcp's `ElicitRequestParams`: they
    /// are made as JSON, and go to the client as JSON, and rmcp's type (an
    /// untagged enum) costs a confirmed call more to pass through than
    /// anything else on its way to the person.
    ///
    /// # Errors
    /// The ask could not be written (the client went away): why.
    fn elicit(&self, params: Json) -> Result<(RequestId, Answer), String>;

    /// Withdraw ask `id`, whose answer is no longer awaited: the client is
    /// sent `notifications/cancelled` for it with `reason`, so it stops
    /// showing it.
    fn withdraw(&self, id: RequestId, reason: &str);
}

/// A request's way to its client for asks, in its extensions (see the
/// module's docs).
#[derive(Clone)]
pub struct DirectAsks(pub Arc<dyn ClientLine>);

impl std::fmt::Debug for DirectAsks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DirectAsks")
    }
}

/// Send `elicitation/create` with `params` by `line` and wait for its
/// answer, at most `timeout`, or until `cancelled` — then the ask is
/// withdrawn from the client. The same answers, errors and withdrawals,
/// with the same words, as through rmcp's peer.
///
/// # Errors
/// As the peer's way: [`Unanswered::RequestCancelled`],
/// [`Unanswered::TimedOut`], [`Unanswered::WrongResult`], or
/// [`Unanswered::Failed`] for an error reply or a client gone.
pub(crate) async fn elicit(
    line: &dyn ClientLine,
    params: Json,
    timeout: Option<Duration>,
    cancelled: impl Future<Output = ()>,
) -> Result<ElicitResult, Unanswered> {
    let (id, answer) = line.elicit(params).map_err(|why| {
        tracing::debug!(%why, "an ask could not be sent to the client");
        Unanswered::Failed(ServiceError::TransportClosed)
    })?;
    let answered = async {
        match timeout {
            Some(timeout) => tokio::time::timeout(timeout, answer)
                .await
                .map_err(|_| timeout),
            None => Ok(answer.await),
        }
    };
    tokio::select! {
        answered = answered => match answered {
            // What rmcp reads as another kind of result (or as none it
            // knows) is no elicitation's.
            Ok(Ok(Ok(result))) => serde_json::from_str::<ElicitResult>(result.get())
                .map_err(|_| Unanswered::WrongResult),
            Ok(Ok(Err(error))) => Err(Unanswered::Failed(ServiceError::McpError(error))),
            Ok(Err(_)) => Err(Unanswered::Failed(ServiceError::TransportClosed)),
            Err(timeout) => {
                line.withdraw(id, RequestHandle::<RoleServer>::REQUEST_TIMEOUT_REASON);
                Err(Unanswered::TimedOut(timeout))
            }
        },
        () = cancelled => {
            line.withdraw(id, WITHDRAWN);
            Err(Unanswered::RequestCancelled)
        }
    }
}

#[cfg(test)]
mod tests;
