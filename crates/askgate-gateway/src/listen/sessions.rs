//! The Streamable HTTP sessions of `--listen`: rmcp's own session manager,
//! with a cap on how many are open and the gateway's record of whose each
//! one is kept in step with it.
//!
//! Each session costs memory (its worker, its channels: some 70 KB). A
//! session is closed when its client closes it, or when it went quiet:
//! no request of it open and nothing from it for [`KEEP_ALIVE`] (see
//! [`Sessions::close_idle`]). rmcp's own idle timer is off: it sees only
//! what reaches rmcp, and the calls the express lane answers do not (see
//! `super::express`), which [`Sessions::hold`] counts instead. As a
//! session closes, [`Sessions`] forgets its owner (before, that record grew
//! with every session ever opened). At most `[limits] sessions` are open at
//! once: for a new one past it, the session used least recently is closed,
//! if nothing came from it for [`IDLE`] and no request of it is open — its
//! client, if it comes back, is told the session is gone and starts
//! another; else the new session is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio_stream::{Stream, StreamExt};

/// How long a session must have sent nothing to be closed for a new one.
pub(crate) const IDLE: Duration = Duration::from_secs(60);

/// How long a session with no request open may send nothing before it is
/// closed (rmcp's default).
pub(crate) const KEEP_ALIVE: Duration = SessionConfig::DEFAULT_KEEP_ALIVE;

/// How often sessions are looked at for [`KEEP_ALIVE`]: one is closed at
/// most this much after it.
const SWEEP_EVERY: Duration = Duration::from_secs(15);

/// Session id -> whose it is.
pub(crate) type Owners = Arc<Mutex<HashMap<String, Owner>>>;

/// Whose a session is, and how its client speaks.
pub(crate) struct Owner {
    /// The principal that opened it.
    pub(crate) principal: String,
    /// How its client speaks, when its calls may take the express lane
    /// (it asked for a classic revision; see `super::express`).
    pub(crate) speaks: Option<Arc<Speaks>>,
}

impl Owner {
    /// A session of `principal`'s whose calls are all rmcp's.
    pub(crate) fn of(principal: String) -> Owner {
        Owner {
            principal,
            speaks: None,
        }
    }
}

/// What the express lane keeps of a session.
pub(crate) struct Speaks {
    /// The revision its client asked for, and speaks (a classic one).
    pub(crate) version: String,
    /// Whether its client declared the tasks extension.
    pub(crate) follows_tasks: bool,
    /// Its calls on the lanes, by request id.
    #[cfg(all(unix, not(askgate_portable)))]
    pub(crate) calls: crate::express::lane::OnLanes,
}

/// How an open session is used.
struct Use {
    /// When something last came from it, or a request of it ended.
    at: Instant,
    /// How many of its requests are open (an answer under way).
    open: usize,
}

impl Use {
    /// Whether nothing came from it for `quiet`, and no request of it is
    /// open.
    fn is_idle_for(&self, quiet: Duration, now: Instant) -> bool {
        self.open == 0 && now.saturating_duration_since(self.at) >= quiet
    }
}

/// Session id -> how it is used.
type Used = Arc<Mutex<HashMap<SessionId, Use>>>;

/// A request of a session open, counted until dropped (see
/// [`Sessions::hold`]).
pub(crate) struct Held {
    used: Used,
    id: SessionId,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(used) = self
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&self.id)
        {
            used.open = used.open.saturating_sub(1);
            used.at = Instant::now();
        }
    }
}

/// rmcp's sessions, capped, and whose each one is.
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    owners: Owners,
    /// How many may be open at once.
    most: usize,
    /// How each open session is used.
    used: Used,
    /// Held while a session is counted and made, so that two made at once
    /// cannot both pass the cap.
    making: tokio::sync::Mutex<()>,
}

impl Sessions {
    /// At most `most` sessions, whose principals are recorded in `owners`.
    pub(crate) fn new(owners: Owners, most: usize) -> Sessions {
        let mut inner = LocalSessionManager::default();
        // Kept here instead (see the module's doc).
        inner.session_config.keep_alive = None;
        Sessions {
            inner,
            owners,
            most,
            used: Arc::default(),
            making: tokio::sync::Mutex::new(()),
        }
    }

    /// `id` sent something now.
    fn touch(&self, id: &SessionId) {
        if let Some(used) = self.used().get_mut(id) {
            used.at = Instant::now();
        }
    }

    /// A request of session `id` opens now, counted until the guard drops:
    /// while one is open the session is not idle. `None` when `id` is not
    /// open.
    pub(crate) fn hold(&self, id: &SessionId) -> Option<Held> {
        let mut used = self.used();
        let open = used.get_mut(id)?;
        open.open += 1;
        open.at = Instant::now();
        Some(Held {
            used: Arc::clone(&self.used),
            id: id.clone(),
        })
    }

    fn used(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Use>> {
        self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session used least recently, if it is idle for [`IDLE`].
    fn idlest(&self) -> Option<SessionId> {
        let now = Instant::now();
        let used = self.used();
        used.iter()
            .filter(|(_, used)| used.is_idle_for(IDLE, now))
            .min_by_key(|(_, used)| used.at)
            .map(|(id, _)| id.clone())
    }

    /// Close every session idle for [`KEEP_ALIVE`] at `now`.
    async fn close_quiet(&self, now: Instant) {
        let quiet: Vec<SessionId> = self
            .used()
            .iter()
            .filter(|(_, used)| used.is_idle_for(KEEP_ALIVE, now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in quiet {
            tracing::debug!(session = %id, "closed a session idle for {KEEP_ALIVE:?}");
            if let Err(error) = self.forget(&id).await {
                tracing::debug!(session = %id, %error, "the idle session was closed already");
            }
        }
    }

    /// Close each session idle for [`KEEP_ALIVE`] (no request open,
    /// nothing sent), until `stop`.
    pub(crate) async fn close_idle(self: Arc<Self>, stop: impl Future<Output = ()>) {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => return,
                _ = every.tick() => self.close_quiet(Instant::now()).await,
            }
        }
    }

    /// Close `id` and forget it, whoever closed it.
    async fn forget(&self, id: &SessionId) -> Result<(), SessionsError> {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id.as_ref());
        self.used().remove(id);
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
        self.used().insert(
            id.clone(),
            Use {
                at: Instant::now(),
                open: 0,
            },
        );
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
        // Open until its answer's stream ends.
        let held = self.hold(id);
        let stream = self.inner.create_stream(id, message).await?;
        Ok(stream.map(move |message| {
            let _open = &held;
            message
        }))
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
                .insert(id.to_string(), Owner::of("alice".into()));
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

    #[tokio::test(start_paused = true)]
    async fn a_session_quiet_for_the_keep_alive_is_closed_and_one_with_a_request_open_is_not() {
        let owners = Owners::default();
        let sessions = Sessions::new(Arc::clone(&owners), MOST);
        let ids = filled(&sessions, &owners).await;
        // The first has a request open the whole time (a call on the
        // express lane, which rmcp never sees); the second sent something
        // a minute ago; the rest sent nothing since they opened.
        let held = sessions.hold(&ids[0]).expect("open");
        tokio::time::sleep(KEEP_ALIVE - IDLE).await;
        sessions.touch(&ids[1]);
        tokio::time::sleep(IDLE).await;
        sessions.close_quiet(Instant::now()).await;
        assert!(sessions.has_session(&ids[0]).await.expect("answers"));
        assert!(sessions.has_session(&ids[1]).await.expect("answers"));
        for id in &ids[2..] {
            assert!(!sessions.has_session(id).await.expect("answers"));
        }
        assert_eq!(owners.lock().expect("not poisoned").len(), 2);
        // Its request ended: the first is quiet from then on.
        drop(held);
        tokio::time::sleep(KEEP_ALIVE).await;
        sessions.close_quiet(Instant::now()).await;
        assert!(!sessions.has_session(&ids[0]).await.expect("answers"));
        assert!(!sessions.has_session(&ids[1]).await.expect("answers"));
        assert!(owners.lock().expect("not poisoned").is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_cap_a_session_with_a_request_open_is_not_closed_for_a_new_one() {
        let owners = Owners::default();
        let sessions = Sessions::new(Arc::clone(&owners), MOST);
        let ids = filled(&sessions, &owners).await;
        let _held: Vec<Held> = ids
            .iter()
            .map(|id| sessions.hold(id).expect("open"))
            .collect();
        tokio::time::sleep(IDLE * 2).await;
        let refused = sessions.create_session().await.err().expect("refused");
        assert!(matches!(refused, SessionsError::Full(MOST)), "{refused}");
    }
}
