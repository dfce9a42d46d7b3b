//! The fixture server's sessions: rmcp's local session manager, which also
//! notes the POST stream of each `test_reconnection` call, so that tool can
//! close its own response stream mid-call (SEP-1699's SSE polling: the
//! client reconnects with `Last-Event-ID` and the answer is replayed).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use tokio_stream::wrappers::ReceiverStream;

/// The tool whose response stream the server closes mid-call.
pub(crate) const RECONNECTION_TOOL: &str = "test_reconnection";

/// How soon the client is told to reconnect after its stream is closed.
const RETRY: Duration = Duration::from_millis(200);

/// How long after closing the stream the call answers: past the retry a
/// client waits before it reconnects (SEP-1699), with room to spare, so
/// that the answer finds it back. rmcp's session replays to a resuming
/// client what the stream carried before it closed, but not an answer
/// given while no stream was open: answered sooner, a client that honours
/// `retry` (rmcp's own, in a gateway) would never get it.
pub(crate) const ANSWER_AFTER: Duration = Duration::from_millis(800);

/// The sessions of the fixture server, shared by its handlers.
#[derive(Debug, Default)]
pub struct Sessions {
    local: LocalSessionManager,
    /// The POST stream (rmcp's per-session HTTP request number) of each
    /// `test_reconnection` call not yet closed.
    open: Mutex<HashMap<(SessionId, RequestId), u64>>,
}

/// Why a call could not close its response stream.
#[derive(Debug)]
pub(crate) enum CloseError {
    /// The request came without a session (stateless, or not over HTTP).
    NoSession,
    /// The call is not the noted `test_reconnection` request of its session.
    NoStream,
    /// The session refused (it ended meanwhile).
    Session(String),
}

impl std::fmt::Display for CloseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseError::NoSession => f.write_str("the call has no Mcp-Session-Id"),
            CloseError::NoStream => f.write_str("the call's response stream is not known"),
            CloseError::Session(e) => write!(f, "the session refused: {e}"),
        }
    }
}

impl Sessions {
    /// Close the response stream of the call `cx` (a priming event with a
    /// short retry first); the session keeps the answer for the resume.
    pub(crate) async fn close_stream(
        &self,
        cx: &RequestContext<RoleServer>,
    ) -> Result<(), CloseError> {
        let session: SessionId = cx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok())
            .ok_or(CloseError::NoSession)?
            .into();
        let stream = self
            .open
            .lock()
            .map_err(|_| CloseError::NoStream)?
            .remove(&(session.clone(), cx.id.clone()))
            .ok_or(CloseError::NoStream)?;
        let handle = self
            .local
            .sessions
            .read()
            .await
            .get(&session)
            .cloned()
            .ok_or(CloseError::NoSession)?;
        handle
            .close_sse_stream(stream, Some(RETRY))
            .await
            .map_err(|e| CloseError::Session(e.to_string()))
    }

    /// Note `message`'s stream when it calls `test_reconnection`.
    fn note(&self, session: &SessionId, message: &ClientJsonRpcMessage, stream: Option<u64>) {
        let (ClientJsonRpcMessage::Request(request), Some(stream)) = (message, stream) else {
            return;
        };
        let ClientRequest::CallToolRequest(call) = &request.request else {
            return;
        };
        if call.params.name != RECONNECTION_TOOL {
            return;
        }
        if let Ok(mut open) = self.open.lock() {
            open.insert((session.clone(), request.id.clone()), stream);
        }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.local.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        if let Ok(mut open) = self.open.lock() {
            open.retain(|(session, _), _| session != id);
        }
        self.local.close_session(id).await
    }

    /// As rmcp's own, with the stream noted before the request runs.
    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<
        impl tokio_stream::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        let handle = self
            .local
            .sessions
            .read()
            .await
            .get(id)
            .cloned()
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        let receiver = handle.establish_request_wise_channel().await?;
        self.note(id, &message, receiver.http_request_id);
        handle
            .push_message(message, receiver.http_request_id)
            .await?;
        Ok(ReceiverStream::new(receiver.inner))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<
        impl tokio_stream::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        self.local.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<
        impl tokio_stream::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        Self::Error,
    > {
        self.local.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.local.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.local.event_store()
    }
}
