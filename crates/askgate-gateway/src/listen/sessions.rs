//! The Streamable HTTP sessions of `--listen`: rmcp's own session manager,
//! with a cap on how many are open and the gateway's record of whose each
//! one is kept in step with it.
//!
//! Each session costs memory (its worker, its channels: some 70 KB). rmcp
//! ends a session whose client went quiet (5 minutes) or closed it, and
//! then closes it here; [`Sessions`] forgets its principal at the same
//! time (before, that record grew with every session ever opened), and
//! refuses a new session past [`MOST_SESSIONS`] open at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio_stream::Stream;

/// How many sessions are open at most.
pub(crate) const MOST_SESSIONS: usize = 1024;

/// Session id -> the principal that opened it.
pub(crate) type Owners = Arc<Mutex<HashMap<String, String>>>;

/// rmcp's sessions, capped, and whose each one is.
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    owners: Owners,
    /// Held while a session is counted and made, so that two made at once
    /// cannot both pass the cap.
    making: tokio::sync::Mutex<()>,
}

impl Sessions {
    /// Sessions whose principals are recorded in `owners`.
    pub(crate) fn new(owners: Owners) -> Sessions {
        Sessions {
            inner: LocalSessionManager::default(),
            owners,
            making: tokio::sync::Mutex::new(()),
        }
    }
}

/// Why a session could not be made or used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError {
    /// As many sessions are open as may be.
    #[error(
        "askgate serves {MOST_SESSIONS} sessions at once, and that many are open: close one \
         (DELETE with its Mcp-Session-Id), or try again once idle ones have ended"
    )]
    Full,
    /// rmcp's.
    #[error(transparent)]
    Inner(#[from] LocalSessionManagerError),
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _making = self.making.lock().await;
        if self.inner.sessions.read().await.len() >= MOST_SESSIONS {
            tracing::warn!(
                most = MOST_SESSIONS,
                "a new session was refused: as many are open as may be"
            );
            return Err(SessionsError::Full);
        }
        Ok(self.inner.create_session().await?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id.as_ref());
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sessions_past_the_cap_are_refused_and_a_closed_one_is_forgotten_with_its_owner() {
        let owners = Owners::default();
        let sessions = Sessions::new(Arc::clone(&owners));
        let mut ids = Vec::new();
        for _ in 0..MOST_SESSIONS {
            let (id, _transport) = sessions.create_session().await.expect("room for it");
            owners
                .lock()
                .expect("not poisoned")
                .insert(id.to_string(), "alice".into());
            ids.push(id);
        }
        let refused = sessions.create_session().await.err().expect("refused");
        assert!(matches!(refused, SessionsError::Full), "{refused}");
        assert!(refused.to_string().contains("1024 sessions at once"));
        // One ends (its client's DELETE, or rmcp when it went quiet).
        let closed = ids.pop().expect("an id");
        sessions.close_session(&closed).await.expect("closes");
        assert!(
            !owners
                .lock()
                .expect("not poisoned")
                .contains_key(closed.as_ref())
        );
        assert_eq!(
            owners.lock().expect("not poisoned").len(),
            MOST_SESSIONS - 1
        );
        sessions.create_session().await.expect("room again");
    }
}
