//! The replay contract's eyes on an upstream connection: a transport that
//! wraps the real one, lets a `tools/call` out only when it carries the
//! private marker of a call the gateway recorded, and notes the answer to
//! each marked call as it comes back.
//!
//! The gateway records a call (`prepared`, then `sent`, durably) before it
//! hands it to this transport, so after a crash a call is never thought
//! unsent when it may have gone out.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestId};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// The `_meta` key of the private marker.
pub(crate) const MARKER_KEY: &str = "io.askgate/call";

/// Why a call could not be watched (the replay contract's reasons; every
/// upstream connection askgate makes is watched, so only a request
/// without its marker can be refused here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unwatched {
    /// A request reached the transport without a recorded marker.
    RequestUnmatched,
}

impl Unwatched {
    /// The reason as the error names it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Unwatched::RequestUnmatched => "request-unmatched",
        }
    }
}

/// A refused send.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WatchError<E> {
    /// Refused by the replay contract: not sent.
    #[error("ERR_MCP_REPLAY_UNAVAILABLE ({}): the request was not sent", .0.as_str())]
    Refused(Unwatched),
    /// The real transport failed.
    #[error(transparent)]
    Inner(E),
}

/// What the watcher shares with the gateway: markers of recorded calls,
/// and which request carries which.
#[derive(Debug, Default, Clone)]
pub(crate) struct Watch {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// Markers the gateway recorded and not yet seen go out.
    expected: HashMap<String, String>,
    /// Requests out, by JSON-RPC id: the call id each carries.
    out: HashMap<RequestId, String>,
    /// Calls whose answer came back.
    answered: HashMap<String, bool>,
}

impl Watch {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Expect a call with `marker` (recorded as `call`).
    pub(crate) fn expect(&self, marker: &str, call: &str) {
        self.state()
            .expected
            .insert(marker.to_owned(), call.to_owned());
    }

    /// Whether the answer to `call` was seen coming back.
    pub(crate) fn answered(&self, call: &str) -> bool {
        self.state().answered.remove(call).unwrap_or(false)
    }

    /// Forget a call that will not go out.
    pub(crate) fn forget(&self, marker: &str) {
        self.state().expected.remove(marker);
    }
}

/// A transport whose `tools/call` requests are checked and whose answers
/// are noted.
pub(crate) struct Watched<T> {
    inner: T,
    watch: Watch,
}

impl<T> Watched<T> {
    /// Watch `inner`.
    pub(crate) fn new(inner: T, watch: Watch) -> Watched<T> {
        Watched { inner, watch }
    }
}

/// The marker a `tools/call` carries, if any.
fn marker_of(message: &ClientJsonRpcMessage) -> Option<(RequestId, Option<String>)> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return None;
    };
    let marker = call
        .params
        .meta
        .as_ref()
        .and_then(|meta| meta.get(MARKER_KEY))
        .and_then(|value| value.as_str())
        .map(str::to_owned);
    Some((request.id.clone(), marker))
}

impl<T> Transport<RoleClient> for Watched<T>
where
    T: Transport<RoleClient>,
{
    type Error = WatchError<T::Error>;

    fn name() -> Cow<'static, str> {
        Cow::Borrowed("askgate-watched")
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let refused = match marker_of(&item) {
            None => None,
            Some((id, marker)) => {
                let mut state = self.watch.state();
                match marker.and_then(|m| state.expected.remove(&m)) {
                    Some(call) => {
                        state.out.insert(id, call);
                        None
                    }
                    None => Some(Unwatched::RequestUnmatched),
                }
            }
        };
        let sent = match refused {
            None => Some(self.inner.send(item)),
            Some(_) => None,
        };
        async move {
            match (refused, sent) {
                (Some(reason), _) => Err(WatchError::Refused(reason)),
                (None, Some(sent)) => sent.await.map_err(WatchError::Inner),
                (None, None) => Ok(()),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        let id = match &message {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        if let Some(id) = id {
            let mut state = self.watch.state();
            if let Some(call) = state.out.remove(id) {
                state.answered.insert(call, true);
            }
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await.map_err(WatchError::Inner)
    }
}
