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
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::service::{Peer, RoleServer};

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
}

/// One connected client: its session, whose it is, and its connection.
#[derive(Debug, Clone)]
struct Client {
    session: Arc<str>,
    principal: String,
    /// Its connection; none while its session is at rest (see
    /// [`Downstream::rest`]): the connection ended, the session did not,
    /// and its next request wakes it. (A connection kept would keep its
    /// channel's memory.)
    peer: Option<Peer<RoleServer>>,
}

/// Where an upstream's ask outside any call goes.
#[derive(Debug)]
pub(crate) enum Whom {
    /// To this client: the one principal connected.
    Client(Peer<RoleServer>),
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
                peer: Some(peer),
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
    /// done and nothing will be sent to its client outside a request.
    pub(crate) fn may_rest(&self, id: &str) -> bool {
        let http = self.http();
        http.linked.contains_key(id) && !http.pinned.contains(id)
    }

    /// Streamable HTTP session `id` rests: its connection ends now, and it
    /// still counts as connected (an upstream's ask outside a call is not
    /// shown to another principal while it rests).
    pub(crate) fn rest(&self, id: &str) {
        let Some(session) = self.linked(id) else {
            return;
        };
        for client in self.clients().iter_mut() {
            if client.session == session {
                client.peer = None;
            }
        }
    }

    /// Streamable HTTP session `id` ended: forgotten.
    pub(crate) fn gone(&self, id: &str) {
        let session = {
            let mut http = self.http();
            http.pinned.remove(id);
            http.linked.remove(id)
        };
        if let Some(session) = session {
            self.clients().retain(|c| c.session != session);
        }
    }

    /// Every connected client of a classic revision (2025-11-25 and
    /// before), told of changes by notification; a 2026-07-28 client
    /// (whose session keeps no handshake) hears of them only on a listen
    /// stream it opened.
    pub(crate) fn classic(&self) -> Vec<Peer<RoleServer>> {
        self.live()
            .into_iter()
            .filter_map(|c| c.peer)
            .filter(|peer| peer.peer_info().is_some())
            .collect()
    }

    /// Where an upstream's ask outside any call goes: the newest client,
    /// when every connected client is one principal's. With none connected
    /// yet, waits up to `within` for one — a client's first call on the
    /// express lane can reach its upstream before rmcp notes the client.
    /// A session at rest counts as connected, and is not asked: it has no
    /// stream open to take a request.
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
        match live.iter().rev().find_map(|c| c.peer.as_ref()) {
            Some(awake) => Whom::Client(awake.clone()),
            None => Whom::Refused(
                "the client's session is at rest, with no stream open to take a request".into(),
            ),
        }
    }
}

impl Client {
    /// Whether it is connected: its connection open, or its session at
    /// rest.
    fn is_connected(&self) -> bool {
        self.peer
            .as_ref()
            .is_none_or(|peer| !peer.is_transport_closed())
    }
}
