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
}

/// One connected client: its session, whose it is, and its connection.
#[derive(Debug, Clone)]
struct Client {
    session: Arc<str>,
    principal: String,
    peer: Peer<RoleServer>,
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
            clients.retain(|c| c.session != *session && !c.peer.is_transport_closed());
            clients.push(Client {
                session: Arc::clone(session),
                principal: principal.to_owned(),
                peer,
            });
        }
        self.noted.notify_waiters();
    }

    /// The clients still connected.
    fn live(&self) -> Vec<Client> {
        let mut clients = self.clients();
        clients.retain(|c| !c.peer.is_transport_closed());
        clients.clone()
    }

    /// Every connected client of a classic revision (2025-11-25 and
    /// before), told of changes by notification; a 2026-07-28 client
    /// (whose session keeps no handshake) hears of them only on a listen
    /// stream it opened.
    pub(crate) fn classic(&self) -> Vec<Peer<RoleServer>> {
        self.live()
            .into_iter()
            .map(|c| c.peer)
            .filter(|peer| peer.peer_info().is_some())
            .collect()
    }

    /// Where an upstream's ask outside any call goes: the newest client,
    /// when every connected client is one principal's. With none connected
    /// yet, waits up to `within` for one — a client's first call on the
    /// express lane can reach its upstream before rmcp notes the client.
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
        Whom::Client(newest.peer.clone())
    }
}
