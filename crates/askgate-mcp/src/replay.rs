//! The replay contract, for any client that calls tools it must never run
//! twice by accident: a transport that wraps the real one, lets a
//! `tools/call` out only when it carries the private marker of a call the
//! caller recorded, and notes the answer to each marked call as it comes
//! back.
//!
//! The caller records a call in the store's ledger (`sent`, durably, with
//! [`askgate_store::Store::record_sent_call`]) before it hands it to this
//! transport with the call's marker under [`MARKER_KEY`] in `_meta` — so
//! after a crash a call is never thought unsent when it may have gone out
//! ([`askgate_store::Store::recover_lapsed`] reports it "may have run"). A
//! call that reaches the transport without a marker it expects is refused,
//! unsent: [`refusal`] finds that in the error rmcp returns.
//!
//! ```no_run
//! # use askgate_mcp::replay::{Watch, Watched};
//! # async fn connect(transport: rmcp::transport::TokioChildProcess) {
//! let watch = Watch::default();
//! let watched = Watched::new(transport, watch.clone());
//! // serve a client handler over `watched`; before each call:
//! watch.expect("m_1234", "call_abcd");
//! # }
//! ```

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcMessage, RequestId};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// The `_meta` key of the private marker.
pub const MARKER_KEY: &str = "io.askgate/call";

/// Why a call could not be watched (the replay contract's reasons; every
/// connection through [`Watched`] is watched, so only a request without
/// its marker can be refused here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unwatched {
    /// A request reached the transport without a recorded marker.
    #[error("ERR_MCP_REPLAY_UNAVAILABLE (request-unmatched): the request was not sent")]
    RequestUnmatched,
}

impl Unwatched {
    /// The reason as the error names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Unwatched::RequestUnmatched => "request-unmatched",
        }
    }
}

/// A refused send.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError<E> {
    /// Refused by the replay contract: not sent. The reason is the error's
    /// source, so [`refusal`] finds it whatever wraps it.
    #[error("the replay contract refused the request")]
    Refused(#[source] Unwatched),
    /// The real transport failed.
    #[error(transparent)]
    Inner(E),
}

/// The replay contract's refusal in `error`, if the request was refused
/// unsent by [`Watched`] (as opposed to a failure of the transport or the
/// server, after which the call may have run).
pub fn refusal(error: &rmcp::ServiceError) -> Option<Unwatched> {
    let rmcp::ServiceError::TransportSend(sent) = error else {
        return None;
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(sent.error.as_ref());
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<Unwatched>() {
            return Some(*refused);
        }
        source = current.source();
    }
    None
}

/// What the watcher shares with its caller: markers of recorded calls,
/// and which request carries which.
#[derive(Debug, Default, Clone)]
pub struct Watch {
    inner: Arc<Mutex<State>>,
    /// Whether the transport's `close` ran to its end.
    closed: Arc<tokio::sync::watch::Sender<bool>>,
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
    pub fn expect(&self, marker: &str, call: &str) {
        self.state()
            .expected
            .insert(marker.to_owned(), call.to_owned());
    }

    /// Whether the answer to `call` was seen coming back.
    pub fn answered(&self, call: &str) -> bool {
        self.state().answered.remove(call).unwrap_or(false)
    }

    /// Forget a call that will not go out.
    pub fn forget(&self, marker: &str) {
        self.state().expected.remove(marker);
    }

    /// Wait until the watched transport is closed: its `close` ran to its
    /// end (a child process it ran has exited, or was killed).
    pub async fn closed(&self) {
        let mut closed = self.closed.subscribe();
        let _ = closed.wait_for(|closed| *closed).await;
    }
}

/// A transport whose `tools/call` requests are checked and whose answers
/// are noted.
pub struct Watched<T> {
    inner: T,
    watch: Watch,
}

impl<T> Watched<T> {
    /// Watch `inner`.
    pub fn new(inner: T, watch: Watch) -> Watched<T> {
        Watched { inner, watch }
    }
}

/// The marker a `tools/call` carries, if any: rmcp's typed request, or one
/// sent as written (a 2025-11-25 call with its `task`, which rmcp's model
/// cannot hold), its `_meta` in its params or beside them.
fn marker_of(message: &ClientJsonRpcMessage) -> Option<(RequestId, Option<String>)> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let marker = match &request.request {
        ClientRequest::CallToolRequest(call) => call
            .params
            .meta
            .as_ref()
            .and_then(|meta| meta.get(MARKER_KEY))
            .and_then(|value| value.as_str())
            .map(str::to_owned),
        ClientRequest::CustomRequest(custom) if custom.method == "tools/call" => custom
            .params
            .as_ref()
            .and_then(|params| params.get("_meta"))
            .and_then(|meta| meta.get(MARKER_KEY))
            .or_else(|| custom.get_meta().get(MARKER_KEY))
            .and_then(|value| value.as_str())
            .map(str::to_owned),
        _ => return None,
    };
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
        let closed = self.inner.close().await.map_err(WatchError::Inner);
        self.watch.closed.send_replace(true);
        closed
    }
}
