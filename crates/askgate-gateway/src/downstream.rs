//! The clients connected to the gateway, and whose they are: where an
//! upstream's own ask goes when no call of the gateway's is in flight to
//! it, and who hears that an upstream's lists changed.
//!
//! A classic request from an upstream (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`) says nothing of whom it is for.
//! While a call is in flight to that upstream, the call says it (see the
//! `relay` module). Outside any call, it may be shown only when exactly
//! one principal is connected — on stdio, always the one client; over
//! Streamable HTTP, only while every open session is one principal's —
//! and is refused otherwise, never shown to whoever touched the gateway
//! last.

mod notices;

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{ServerJsonRpcMessage, ServerNotification};
use rmcp::service::{Peer, RoleServer};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use tokio::sync::mpsc;

pub(crate) use notices::{Client as Told, List, Notices, Progress, Routed, WriteLine};

/// The connected clients.
#[derive(Debug, Clone, Default)]
pub(crate) struct Downstream {
    clients: Arc<Mutex<Vec<Client>>>,
    /// Rung when a client is noted.
    noted: Arc<tokio::sync::Notify>,
    /// What the clients are told of their upstreams (see the `notices`
    /// module).
    pub(crate) notices: Notices,
    /// The tasks made through the gateway: their upstreams and clients
    /// (see [`crate::tasks`]).
    pub(crate) tasks: crate::tasks::Routes,
    /// The Streamable HTTP sessions, as the gateway knows them (see
    /// [`Downstream::may_rest`]).
    http: Arc<Mutex<HttpSessions>>,
    /// What wakes a resting Streamable HTTP session (see
    /// [`Downstream::wake_with`]).
    waker: Arc<Mutex<Option<Waker>>>,
}

/// Wakes a Streamable HTTP session, as a request of its client would.
#[derive(Clone)]
pub(crate) struct Waker(Arc<Wake>);

/// Wakes the session of this id (rmcp's): whether it woke.
type Wake = dyn Fn(String) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync;

impl Waker {
    /// The waker that `wake` is.
    pub(crate) fn new(
        wake: impl Fn(String) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync + 'static,
    ) -> Waker {
        Waker(Arc::new(wake))
    }

    /// Wake session `id` (rmcp's): whether it woke.
    async fn wake(&self, id: String) -> bool {
        (self.0)(id).await
    }
}

impl std::fmt::Debug for Waker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Waker")
    }
}

/// What the gateway knows of the Streamable HTTP sessions, by the id rmcp
/// gave each.
#[derive(Debug, Default)]
struct HttpSessions {
    /// Session id -> the gateway's own id of the session (see
    /// [`Downstream::link`]).
    linked: HashMap<String, Arc<str>>,
    /// The sessions whose client something outside a request will be
    /// sent to: a subscription, a log level, a task, a link a person went
    /// to. They never rest.
    pinned: HashSet<String>,
    /// The sessions whose client is asked something now, outside any
    /// request of its own (see [`Busy`]), and how many times: they do not
    /// rest until it answered.
    asked: HashMap<String, usize>,
}

/// A Streamable HTTP session's client asked something outside any request
/// of its own: the session does not rest until this drops (the question
/// and its answer go through its worker).
#[derive(Debug)]
pub(crate) struct Busy {
    http: Arc<Mutex<HttpSessions>>,
    id: Option<String>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let mut http = self.http.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = http.asked.get_mut(&id) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                http.asked.remove(&id);
            }
        }
    }
}

/// The stream a Streamable HTTP session's client listens on (its GET
/// stream), as the gateway holds it: it stays open while the session rests,
/// and what the client is told then goes straight into it.
#[derive(Debug, Clone)]
pub(crate) struct Listening(mpsc::Sender<Event>);

/// An event of a listen stream, boxed: a channel's first block holds 32
/// of its items whole, and a session at rest keeps one channel.
pub(crate) type Event = Box<ServerSseMessage>;

impl Listening {
    /// The stream whose events `sender` takes.
    pub(crate) fn new(sender: mpsc::Sender<Event>) -> Listening {
        Listening(sender)
    }

    /// Where its events go.
    pub(crate) fn sender(&self) -> &mpsc::Sender<Event> {
        &self.0
    }

    /// Whether its client still listens.
    pub(crate) fn is_open(&self) -> bool {
        !self.0.is_closed()
    }

    /// `notification`, sent as an event of the stream; refused when the
    /// stream is closed or full (a client that reads nothing is not waited
    /// for).
    fn tell(&self, notification: ServerNotification) -> Result<(), String> {
        let event = Box::new(ServerSseMessage::from_message(
            ServerJsonRpcMessage::notification(notification),
        ));
        self.0
            .try_send(event)
            .map_err(|error| format!("its listen stream took no event: {error}"))
    }
}

/// A classic client to be told of a change: awake, or resting with its
/// GET stream open.
#[derive(Debug, Clone)]
pub(crate) enum Hearer {
    /// Its connection.
    Awake(Peer<RoleServer>),
    /// Its session rests: its listen stream.
    Resting(Listening),
}

impl Hearer {
    /// Tell it `notification`.
    ///
    /// # Errors
    /// Its connection or stream is closed, in words.
    pub(crate) async fn tell(&self, notification: ServerNotification) -> Result<(), String> {
        match self {
            Hearer::Awake(peer) => peer
                .send_notification(notification)
                .await
                .map_err(|error| error.to_string()),
            Hearer::Resting(listening) => listening.tell(notification),
        }
    }
}

/// One connected client: its session, whose it is, and how it is reached.
#[derive(Debug, Clone)]
struct Client {
    session: Arc<str>,
    principal: String,
    reach: Reach,
}

/// How a connected client is reached.
#[derive(Debug, Clone)]
enum Reach {
    /// Through its connection.
    Awake(Peer<RoleServer>),
    /// Its session (rmcp's id) rests (see [`Downstream::rest`]): the
    /// connection ended, the session did not, and its next request wakes
    /// it. (A connection kept would keep its channel's memory.) Told of
    /// changes on its listen stream, when it has one open.
    Resting {
        id: String,
        listening: Option<Listening>,
    },
}

/// Where an upstream's ask outside any call goes.
#[derive(Debug)]
pub(crate) enum Whom {
    /// To this client, the one principal connected; its session does not
    /// rest while the guard is held.
    Client(Peer<RoleServer>, Busy),
    /// Refused: why, in words for the upstream (no names).
    Refused(String),
}

impl Downstream {
    fn clients(&self) -> std::sync::MutexGuard<'_, Vec<Client>> {
        self.clients.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Note that `peer`, the client of `session`, is connected for
    /// `principal` (again: the newest note of a session stands).
    pub(crate) fn note(&self, session: &Arc<str>, principal: &str, peer: Peer<RoleServer>) {
        {
            let mut clients = self.clients();
            clients.retain(|c| c.session != *session && c.is_connected());
            clients.push(Client {
                session: Arc::clone(session),
                principal: principal.to_owned(),
                reach: Reach::Awake(peer),
            });
        }
        self.noted.notify_waiters();
    }

    /// The clients still connected, those at rest among them.
    fn live(&self) -> Vec<Client> {
        let mut clients = self.clients();
        clients.retain(Client::is_connected);
        clients.clone()
    }

    fn http(&self) -> std::sync::MutexGuard<'_, HttpSessions> {
        self.http.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Streamable HTTP session `id` (rmcp's id) is the gateway's session
    /// `session`: when it wakes from rest, it is that session again (its
    /// intake settled, its client the one noted).
    pub(crate) fn link(&self, id: &str, session: &Arc<str>) {
        self.http()
            .linked
            .insert(id.to_owned(), Arc::clone(session));
    }

    /// The gateway's session that Streamable HTTP session `id` is.
    pub(crate) fn linked(&self, id: &str) -> Option<Arc<str>> {
        self.http().linked.get(id).cloned()
    }

    /// Streamable HTTP session `id`'s client will be sent something
    /// outside any request of it: the session never rests.
    pub(crate) fn pin(&self, id: &str) {
        self.http().pinned.insert(id.to_owned());
    }

    /// Whether Streamable HTTP session `id` may rest: its handshake is
    /// done, nothing will be sent to its client outside a request, and
    /// its client is not being asked something.
    pub(crate) fn may_rest(&self, id: &str) -> bool {
        let http = self.http();
        http.linked.contains_key(id) && !http.pinned.contains(id) && !http.asked.contains_key(id)
    }

    /// Streamable HTTP session `id` rests: its connection ends now, and it
    /// still counts as connected (an upstream's ask outside a call is not
    /// shown to another principal while it rests). What its client is
    /// told meanwhile goes to `listening`, its GET stream, when open.
    pub(crate) fn rest(&self, id: &str, listening: Option<Listening>) {
        let Some(session) = self.linked(id) else {
            return;
        };
        for client in self.clients().iter_mut() {
            if client.session == session {
                client.reach = Reach::Resting {
                    id: id.to_owned(),
                    listening: listening.clone(),
                };
            }
        }
    }

    /// `waker` wakes a resting Streamable HTTP session: an upstream's ask
    /// outside any call, for a session at rest with its GET stream open,
    /// wakes it to be asked there. Set by the listener, and let go (none)
    /// as it stops.
    pub(crate) fn wake_with(&self, waker: Option<Waker>) {
        *self.waker.lock().unwrap_or_else(PoisonError::into_inner) = waker;
    }

    /// Streamable HTTP session `id`'s client is asked something now: the
    /// session does not rest while the guard is held.
    fn busy(&self, id: Option<String>) -> Busy {
        if let Some(id) = &id {
            *self.http().asked.entry(id.clone()).or_default() += 1;
        }
        Busy {
            http: Arc::clone(&self.http),
            id,
        }
    }

    /// The rmcp id of the Streamable HTTP session that is `session`.
    fn http_id(&self, session: &Arc<str>) -> Option<String> {
        self.http()
            .linked
            .iter()
            .find(|(_, linked)| *linked == session)
            .map(|(id, _)| id.clone())
    }

    /// Streamable HTTP session `id` ended: forgotten.
    pub(crate) fn gone(&self, id: &str) {
        let session = {
            let mut http = self.http();
            http.pinned.remove(id);
            http.asked.remove(id);
            http.linked.remove(id)
        };
        if let Some(session) = session {
            self.clients().retain(|c| c.session != session);
        }
    }

    /// Every connected client of a classic revision (2025-11-25 and
    /// before), told of changes by notification: awake, or resting with
    /// its GET stream open (of a resting session without one, nothing
    /// listens). A 2026-07-28 client (whose session keeps no handshake)
    /// hears of them only on a listen stream it opened.
    pub(crate) fn classic(&self) -> Vec<Hearer> {
        self.live()
            .into_iter()
            .filter_map(|c| match c.reach {
                Reach::Awake(peer) => peer.peer_info().is_some().then_some(Hearer::Awake(peer)),
                Reach::Resting { listening, .. } => {
                    listening.filter(Listening::is_open).map(Hearer::Resting)
                }
            })
            .collect()
    }

    /// Where an upstream's ask outside any call goes: the newest client,
    /// when every connected client is one principal's. With none connected
    /// yet, waits up to `within` for one — a client's first call on the
    /// express lane can reach its upstream before rmcp notes the client.
    /// A session at rest counts as connected; with no client awake, one
    /// resting with its GET stream open is woken to be asked there (its
    /// client noted again within `within`), and one without is not asked:
    /// nothing of its client listens.
    pub(crate) async fn whom(&self, within: Duration) -> Whom {
        let waiting = async {
            loop {
                let noted = self.noted.notified();
                tokio::pin!(noted);
                noted.as_mut().enable();
                let live = self.live();
                if !live.is_empty() {
                    return live;
                }
                noted.await;
            }
        };
        let Ok(live) = tokio::time::timeout(within, waiting).await else {
            return Whom::Refused("no client is connected".into());
        };
        let Some(newest) = live.last() else {
            return Whom::Refused("no client is connected".into());
        };
        if live.iter().any(|c| c.principal != newest.principal) {
            let mut principals: Vec<&str> = live.iter().map(|c| c.principal.as_str()).collect();
            principals.sort_unstable();
            principals.dedup();
            return Whom::Refused(format!(
                "clients of {} principals are connected, and a request outside any call does \
                 not say whose it is, so it is shown to none of them",
                principals.len()
            ));
        }
        if let Some(awake) = self.awake(&live) {
            return awake;
        }
        let listening = live.iter().rev().find_map(|c| match &c.reach {
            Reach::Resting {
                id,
                listening: Some(listening),
            } if listening.is_open() => Some((id.clone(), Arc::clone(&c.session))),
            _ => None,
        });
        let refused = || {
            Whom::Refused(
                "the client's session is at rest, with no stream open to take a request".into(),
            )
        };
        let waker = self
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let (Some((id, session)), Some(waker)) = (listening, waker) else {
            return refused();
        };
        // Kept awake from the start: it is woken to be asked.
        let busy = self.busy(Some(id.clone()));
        if !waker.wake(id.clone()).await {
            return refused();
        }
        tracing::info!(session = %id, "woke a resting session to ask its client");
        // Its client is noted again as the replayed handshake ends.
        let noted = async {
            loop {
                let noted = self.noted.notified();
                tokio::pin!(noted);
                noted.as_mut().enable();
                if let Some(peer) = self.awake_in(&session) {
                    return peer;
                }
                noted.await;
            }
        };
        match tokio::time::timeout(within, noted).await {
            Ok(peer) => Whom::Client(peer, busy),
            Err(_) => refused(),
        }
    }

    /// The connection of `session`'s client, when it is awake.
    fn awake_in(&self, session: &Arc<str>) -> Option<Peer<RoleServer>> {
        self.live()
            .into_iter()
            .filter(|c| c.session == *session)
            .find_map(|c| match c.reach {
                Reach::Awake(peer) => Some(peer),
                Reach::Resting { .. } => None,
            })
    }

    /// The newest of `live` that is awake, as where an ask goes.
    fn awake(&self, live: &[Client]) -> Option<Whom> {
        live.iter().rev().find_map(|c| match &c.reach {
            Reach::Awake(peer) => {
                let busy = self.busy(self.http_id(&c.session));
                Some(Whom::Client(peer.clone(), busy))
            }
            Reach::Resting { .. } => None,
        })
    }
}

impl Client {
    /// Whether it is connected: its connection open, or its session at
    /// rest.
    fn is_connected(&self) -> bool {
        match &self.reach {
            Reach::Awake(peer) => !peer.is_transport_closed(),
            Reach::Resting { .. } => true,
        }
    }
}

#[cfg(test)]
mod tests;
