//! The Streamable HTTP sessions of `--listen`: rmcp's own session manager,
//! with a cap on how many are open, rest for the quiet ones, and the
//! gateway's record of whose each one is kept in step with it.
//!
//! An awake session costs some 50-80 KB: its worker, and the channels
//! between rmcp's tasks, whose first blocks are allocated whole as each
//! channel is made. So a session that went quiet **rests**: once nothing
//! came from it for [`REST_AFTER`] (half a second), no request of it is
//! open (a GET stream may be: see the `listening` module) and nothing
//! will be sent to its client outside a request (see
//! `Downstream::may_rest`), its worker is closed and its handshake kept.
//! Its next request wakes it: rmcp restores it from the handshake
//! (`SessionStore`, `SessionManager::restore_session`) and replays
//! `initialize`, which the gateway knows for a waking (the session takes
//! its own id back, its client is not introduced again). So does an
//! upstream's ask outside any call for its client (see `super::waking`).
//! A call on the express lane does not wake it: the lane needs no worker.
//! Freed as sessions rest, the memory is what the next sessions are made
//! of, so the gateway holds as many workers as are awake at once, not as
//! many sessions as are open.
//!
//! A session is closed when its client closes it, or when it went quiet:
//! no request or stream of it open (its GET stream included) and nothing
//! from it for
//! [`KEEP_ALIVE`], at rest or not (see [`Sessions::close_idle`]). A client
//! listening on its GET stream keeps its session: rmcp's own timer, and
//! askgate's before, closed it after five quiet minutes, and the client
//! found its session gone at its next request. rmcp's own idle timer is
//! off: it sees only what reaches rmcp, and the calls the express lane
//! answers do not (see `super::express`), which [`Sessions::hold`] counts
//! instead. As a session closes, [`Sessions`] forgets its owner (before,
//! that record grew with every session ever opened). At most `[limits]
//! sessions` are open at once, awake or at rest: for a new one past it,
//! the session used least recently is closed, if nothing came from it for
//! [`IDLE`] and no request or stream of it is open — its client, if it
//! comes back, is told the session is gone and starts another; else the
//! new session is refused.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use tokio::time::Instant;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionState, SessionStore,
};
use tokio_stream::Stream;

use crate::downstream::{Downstream, Listening};

mod handshakes;
mod held;
mod listening;

use handshakes::{Handshakes, is_replayed_initialized};
pub(crate) use held::Held;
use held::counted_while_open;

/// A session's stream of events, as rmcp serves it.
type Events = std::pin::Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync + 'static>>;

/// How long a session must have sent nothing to be closed for a new one.
pub(crate) const IDLE: Duration = Duration::from_secs(60);

/// How long a session with no request open may send nothing before it is
/// closed (rmcp's default).
pub(crate) const KEEP_ALIVE: Duration = SessionConfig::DEFAULT_KEEP_ALIVE;

/// How often sessions are looked at for [`KEEP_ALIVE`]: one is closed at
/// most this much after it.
const SWEEP_EVERY: Duration = Duration::from_secs(15);

/// How long a session must be quiet to rest: long enough that a client
/// busy with it does not wake it between two requests (a waking adds
/// some 0.4 ms to the request that wakes it; docs/benchmarks.md), short
/// enough that the workers awake at once are few however fast sessions
/// open (their memory is what later sessions are made of; see the
/// module's doc).
pub(crate) const REST_AFTER: Duration = Duration::from_millis(500);

/// How often sessions are looked at for [`REST_AFTER`].
const REST_EVERY: Duration = Duration::from_millis(100);

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

/// Whether a session's worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Its worker runs.
    Awake,
    /// Its worker is being closed, to rest: a request for it waits for
    /// that, then wakes it.
    Closing,
    /// Its worker is closed; its handshake is kept.
    Resting,
}

/// How an open session is used.
struct Use {
    /// When something last came from it, or a request of it ended.
    at: Instant,
    /// How many of its requests are open (an answer under way).
    open: usize,
    /// How many of its answers' streams are open again (resumed).
    streams: usize,
    /// Its GET stream, once opened (see the `listening` module): while
    /// open, the session is not idle, and may still rest.
    listening: Option<Listening>,
    /// Whether its worker runs.
    state: State,
    /// Its client's `initialize`, once answered: what wakes it.
    handshake: Option<SessionState>,
    /// How many closes of its worker, as it went to rest, rmcp has still
    /// to report (its `close_session` once the worker ends): those are not
    /// the session's end.
    rests_to_report: usize,
}

impl Use {
    /// Whether nothing came from it for `quiet`, and no request or stream
    /// of it is open (a client listening on its GET stream is there, and
    /// the stream's keep-alive events find out when it is not).
    fn is_idle_for(&self, quiet: Duration, now: Instant) -> bool {
        self.is_quiet_for(quiet, now) && !self.listens()
    }

    /// Whether nothing came from it for `quiet`, and no request of it is
    /// open (its GET stream may be).
    fn is_quiet_for(&self, quiet: Duration, now: Instant) -> bool {
        self.open == 0 && self.streams == 0 && now.saturating_duration_since(self.at) >= quiet
    }

    /// Whether its client listens on its GET stream.
    fn listens(&self) -> bool {
        self.listening.as_ref().is_some_and(Listening::is_open)
    }

    /// Whether it may rest at `now`: awake, its handshake known, and quiet
    /// for [`REST_AFTER`].
    fn may_rest(&self, now: Instant) -> bool {
        self.state == State::Awake && self.handshake.is_some() && self.is_quiet_for(REST_AFTER, now)
    }
}

/// Session id -> how it is used.
type Used = Arc<Mutex<HashMap<SessionId, Use>>>;

fn lock(used: &Used) -> std::sync::MutexGuard<'_, HashMap<SessionId, Use>> {
    used.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How many sessions are awake and at rest, as the metrics show them.
struct Counted {
    awake: Gauge,
    resting: Gauge,
}

/// rmcp's sessions, capped and rested, and whose each one is.
pub(crate) struct Sessions {
    inner: LocalSessionManager,
    owners: Owners,
    /// What the gateway knows of each session's client.
    downstream: Downstream,
    /// How many may be open at once.
    most: usize,
    /// How each open session is used.
    used: Used,
    /// Held while a session is counted and made, so that two made at once
    /// cannot both pass the cap.
    making: tokio::sync::Mutex<()>,
    /// Rung as a session's worker has closed for rest.
    rested: tokio::sync::Notify,
    counted: Counted,
}

impl Sessions {
    /// At most `most` sessions, whose principals are recorded in `owners`
    /// and whose clients are `downstream`'s; `(awake, resting)` count
    /// them.
    pub(crate) fn new(
        owners: Owners,
        most: usize,
        downstream: Downstream,
        (awake, resting): (Gauge, Gauge),
    ) -> Sessions {
        let mut inner = LocalSessionManager::default();
        // Kept here instead (see the module's doc).
        inner.session_config.keep_alive = None;
        Sessions {
            inner,
            owners,
            downstream,
            most,
            used: Arc::default(),
            making: tokio::sync::Mutex::new(()),
            rested: tokio::sync::Notify::new(),
            counted: Counted { awake, resting },
        }
    }

    /// Where rmcp keeps each session's handshake, to wake it.
    pub(crate) fn handshakes(&self) -> Arc<dyn SessionStore> {
        Arc::new(Handshakes {
            used: Arc::clone(&self.used),
        })
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
        self.held(id, false)
    }

    /// A resumed stream of session `id` opens now, counted until the
    /// guard drops: while one is open the session is not idle, and does
    /// not rest.
    fn hold_stream(&self, id: &SessionId) -> Option<Held> {
        self.held(id, true)
    }

    /// A request of session `id` opens now, or a `stream` of it.
    fn held(&self, id: &SessionId, stream: bool) -> Option<Held> {
        let mut used = self.used();
        let open = used.get_mut(id)?;
        if stream {
            open.streams += 1;
        } else {
            open.open += 1;
        }
        open.at = Instant::now();
        Some(Held {
            used: Arc::clone(&self.used),
            id: id.clone(),
            stream,
        })
    }

    fn used(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Use>> {
        lock(&self.used)
    }

    /// Session `id`'s GET stream, opened now: the gateway's own (see the
    /// `listening` module), fed by rmcp's. While one is open, another is
    /// as rmcp's own second one: its keep-alive events only.
    async fn listen(&self, id: &SessionId) -> Result<Events, SessionsError> {
        if self.used().get(id).is_some_and(Use::listens) {
            return Ok(Box::pin(tokio_stream::pending()));
        }
        let from = self.inner.create_standalone_stream(id).await?;
        let (listening, stream) = listening::open();
        listening::relay(&listening, from);
        if let Some(used) = self.used().get_mut(id) {
            used.listening = Some(listening);
            used.at = Instant::now();
        }
        Ok(Box::pin(stream))
    }

    /// Session `id` woke (the replay of its client's `initialized` was
    /// taken): its GET stream, if open, is fed by its new worker.
    async fn listen_again(&self, id: &SessionId) {
        let listening = self.used().get(id).and_then(|u| u.listening.clone());
        let Some(listening) = listening.filter(Listening::is_open) else {
            return;
        };
        match self.inner.create_standalone_stream(id).await {
            Ok(from) => listening::relay(&listening, from),
            Err(error) => {
                tracing::warn!(session = %id, %error, "a woken session's GET stream is fed no more");
            }
        }
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

    /// Rest every session that may at `now` (see the module's doc).
    async fn rest_quiet(&self, now: Instant) {
        let quiet: Vec<SessionId> = {
            let mut used = self.used();
            used.iter_mut()
                .filter(|(id, used)| used.may_rest(now) && self.downstream.may_rest(id))
                .map(|(id, used)| {
                    // Seen as not there from now on: a request for it waits
                    // for the worker to close, then wakes it.
                    used.state = State::Closing;
                    used.rests_to_report += 1;
                    id.clone()
                })
                .collect()
        };
        for id in quiet {
            let listening = self.used().get(&id).and_then(|u| u.listening.clone());
            self.downstream.rest(&id, listening);
            if let Err(error) = self.inner.close_session(&id).await {
                tracing::debug!(session = %id, %error, "the resting session's worker had ended");
            }
            if let Some(used) = self.used().get_mut(&id)
                && used.state == State::Closing
            {
                used.state = State::Resting;
                self.counted.awake.dec();
                self.counted.resting.inc();
            }
            tracing::debug!(session = %id, "a session quiet for {REST_AFTER:?} rests");
        }
        self.rested.notify_waiters();
    }

    /// Close each session idle for [`KEEP_ALIVE`] (no request or stream
    /// open, nothing sent), and rest each quiet one (see the module's doc),
    /// until `stop`.
    pub(crate) async fn close_idle(self: Arc<Self>, stop: impl Future<Output = ()>) {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut rest = tokio::time::interval(REST_EVERY);
        rest.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => return,
                _ = every.tick() => self.close_quiet(Instant::now()).await,
                _ = rest.tick() => self.rest_quiet(Instant::now()).await,
            }
        }
    }

    /// Close `id` and forget it, whoever closed it.
    async fn forget(&self, id: &SessionId) -> Result<(), SessionsError> {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id.as_ref());
        if let Some(gone) = self.used().remove(id) {
            match gone.state {
                State::Awake => self.counted.awake.dec(),
                // Counted awake until its worker closed.
                State::Closing => self.counted.awake.dec(),
                State::Resting => self.counted.resting.dec(),
            };
        }
        self.downstream.gone(id);
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
        if self.used().len() >= self.most {
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
                streams: 0,
                listening: None,
                state: State::Awake,
                handshake: None,
                rests_to_report: 0,
            },
        );
        self.counted.awake.inc();
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
        // Awake: used now, so it does not rest under this request. At
        // rest (or on its way): not here, so rmcp wakes it (see
        // `restore_session`).
        let mut used = self.used();
        Ok(used.get_mut(id).is_some_and(|used| {
            used.at = Instant::now();
            used.state == State::Awake
        }))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        if let Some(used) = self.used().get_mut(id)
            && used.rests_to_report > 0
        {
            // rmcp reports the end of a worker closed for rest.
            used.rests_to_report -= 1;
            return Ok(());
        }
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
        Ok(counted_while_open(stream, held))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        let woke = is_replayed_initialized(&message);
        self.inner.accept_message(id, message).await?;
        if woke {
            self.listen_again(id).await;
        }
        Ok(())
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.listen(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        if !last_event_id.contains('/') {
            // The GET stream's (an answer's has its request's number):
            // the events of the gateway's own carry no ids, and those of
            // an earlier worker are not kept (see the `listening` module).
            return self.listen(id).await;
        }
        let held = self.hold_stream(id);
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(Box::pin(counted_while_open(stream, held)) as Events)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // Wait for its worker to have closed, if it is closing.
        loop {
            let rested = self.rested.notified();
            tokio::pin!(rested);
            rested.as_mut().enable();
            match self.used().get(&id).map(|used| used.state) {
                None => return Ok(RestoreOutcome::NotSupported),
                Some(State::Awake) => return Ok(RestoreOutcome::AlreadyPresent),
                Some(State::Resting) => break,
                Some(State::Closing) => {}
            }
            rested.await;
        }
        let outcome = self.inner.restore_session(id.clone()).await?;
        if let Some(used) = self.used().get_mut(&id)
            && used.state == State::Resting
        {
            used.state = State::Awake;
            used.at = Instant::now();
            self.counted.resting.dec();
            self.counted.awake.inc();
        }
        tracing::debug!(session = %id, "a resting session wakes");
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests;
