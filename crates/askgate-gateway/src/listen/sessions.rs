//! The Streamable HTTP sessions of `--listen`: rmcp's own session manager,
//! with a cap on how many are open and the gateway's record of whose each
//! one is kept in step with it.
//!
//! Each session costs memory (its worker, its channels: some 70 KB). rmcp
//! ends a session whose client went quiet (5 minutes) or closed it, and
//! then closes it here; [`Sessions`] forgets its principal at the same
//! time (before, that record grew with every session ever opened). At
//! most `[limits] sessions` are open at once: for a new one past it, the
//! session used least recently is closed, if nothing came from it for
//! [`IDLE`] — its client, if it comes back, is told the session is gone
//! and starts another; else the new session is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio_stream::Stream;

/// How long a session must have sent nothing to be closed for a new one.
pub(crate) const IDLE: Duration = Duration::from_secs(60);

/// Session id -> the principal that opened it.
pub(crate) type Owners = Arc<Mutex<HashMap<String, String>>>;

/// rmcp's sessions, capped, and whose each one is.
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    owners: Owners,
    /// How many may be open at once.
    most: usize,
    /// When each open session last sent something.
    used: Mutex<HashMap<SessionId, Instant>>,
    /// Held while a session is counted and made, so that two made at once
    /// cannot both pass the cap.
    making: tokio::sync::Mutex<()>,
}

impl Sessions {
    /// At most `most` sessions, whose principals are recorded in `owners`.
    pub(crate) fn new(owners: Owners, most: usize) -> Sessions {
        Sessions {
            inner: LocalSessionManager::default(),
            owners,
            most,
            used: Mutex::new(HashMap::new()),
            making: tokio::sync::Mutex::new(()),
        }
    }

    /// `id` sent something now.
    fn touch(&self, id: &SessionId) {
        if let Some(at) = self
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(id)
        {
            *at = Instant::now();
        }
    }

    /// The session used least recently, if nothing came from it for
    /// [`IDLE`].
    fn idlest(&self) -> Option<SessionId> {
        let used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        let (id, at) = used.iter().min_by_key(|(_, at)| **at)?;
        (at.elapsed() >= IDLE).then(|| id.clone())
    }

    /// Close `id` and forget it, whoever closed it.
    async fn forget(&self, id: &SessionId) -> Result<(), SessionsError> {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id.as_ref());
        self.used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        Ok(self.inner.close_session(id).await?)
    }
}

/// Why a session could not be made or used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError {
    /// As many sessions are open as may be, none of them idle.
    #[error(
        "askgate serves {0} sessions at once ([limits] sessions), and that many are open, none idle \
         for a minute: close one (DELETE with its Mcp-Session-Id), or try again in a minute"
    )]
    Full(usize),
    /// rmcp's.
    #[error(transparent)]
    Inner(#[from] LocalSessionManagerError),
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _making = self.making.lock().await;
        if self.inner.sessions.read().await.len() >= self.most {
            let Some(idlest) = self.idlest() else {
                tracing::warn!(
                    most = self.most,
                    "a new session was refused: as many are open as may be, none idle"
                );
                return Err(SessionsError::Full(self.most));
            };
            tracing::info!(
                session = %idlest,
                most = self.most,
                "the session idle longest was closed to make room for a new one"
            );
            self.forget(&idlest).await?;
        }
        let (id, transport) = self.inner.create_session().await?;
        self.used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), Instant::now());
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.forget(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOST: usize = 16;

    /// `sessions` filled to `MOST`, each owned by alice.
    async fn filled(sessions: &Sessions, owners: &Owners) -> Vec<SessionId> {
        let mut ids = Vec::new();
        for _ in 0..MOST {
            let (id, _transport) = sessions.create_session().await.expect("room for it");
            owners
                .lock()
                .expect("not poisoned")
                .insert(id.to_string(), "alice".into());
            ids.push(id);
        }
        ids
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_cap_a_new_session_is_refused_while_every_one_is_in_use() {
        let owners = Owners::default();
        let sessions = Sessions::new(Arc::clone(&owners), MOST);
        let mut ids = filled(&sessions, &owners).await;
        let refused = sessions.create_session().await.err().expect("refused");
        assert!(matches!(refused, SessionsError::Full(MOST)), "{refused}");
        assert!(refused.to_string().contains("16 sessions at once"));
        // One ends (its client's DELETE, or rmcp when it went quiet).
        let closed = ids.pop().expect("an id");
        sessions.close_session(&closed).await.expect("closes");
        assert!(
            !owners
                .lock()
                .expect("not poisoned")
                .contains_key(closed.as_ref())
        );
        assert_eq!(owners.lock().expect("not poisoned").len(), MOST - 1);
        sessions.create_session().await.expect("room again");
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_cap_the_session_idle_longest_is_closed_for_the_new_one() {
        let owners = Owners::default();
        let sessions = Sessions::new(Arc::clone(&owners), MOST);
        let ids = filled(&sessions, &owners).await;
        tokio::time::sleep(IDLE).await;
        // Every session but the first sent something since.
        for id in &ids[1..] {
            sessions.touch(id);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The first has been idle a minute: closed for the new one.
        let (new, _transport) = sessions.create_session().await.expect("room made");
        assert!(!sessions.has_session(&ids[0]).await.expect("answers"));
        assert!(sessions.has_session(&new).await.expect("answers"));
        assert!(sessions.has_session(&ids[1]).await.expect("answers"));
        assert!(
            !owners
                .lock()
                .expect("not poisoned")
                .contains_key(ids[0].as_ref()),
            "its principal is forgotten with it"
        );
        // The rest were used within the minute: the next is refused.
        let refused = sessions.create_session().await.err().expect("refused");
        assert!(matches!(refused, SessionsError::Full(MOST)), "{refused}");
    }
}
