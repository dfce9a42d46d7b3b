//! What the clients are told of their upstreams, as a client of the server
//! directly would be: progress of their own requests, the servers' log
//! messages, changes of the resources they subscribed to, and of the
//! lists.
//!
//! A classic client (2025-06-18, 2025-11-25) hears of changes by
//! notification once it subscribed (`resources/subscribe`) or at once
//! (`list_changed`); a 2026-07-28 client only on a `subscriptions/listen`
//! stream it opened, for what that stream accepted. Progress is told to
//! the client whose request carried the token, under its own token: the
//! upstream is sent one of rmcp's (unique per upstream), mapped back.

// Logging and resources/subscribe are deprecated in rmcp (SEP-2577, and
// subscriptions/listen on 2026-07-28); clients and servers still use them,
// and the gateway relays them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    LoggingMessageNotificationParam, Notification, NumberOrString, ProgressNotificationParam,
    ProgressToken, ResourceUpdatedNotificationParam, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{Peer, RoleServer, SubscriptionSink};

use super::Hearer;

/// The clients' subscriptions, listen streams and progress tokens.
#[derive(Debug, Clone, Default)]
pub(crate) struct Notices {
    state: Arc<Mutex<State>>,
    next: Arc<AtomicU64>,
}

#[derive(Debug, Default)]
struct State {
    /// Resource URI -> the classic sessions subscribed to it.
    subscribed: HashMap<String, Vec<Subscriber>>,
    /// Lists that changed while no client was there to hear it (an
    /// upstream that offers tools by its client's capabilities says so as
    /// the gateway connects, during the client's own handshake): told to
    /// the first client once it is initialized, as a direct client hears.
    unheard: Vec<List>,
    /// The open `subscriptions/listen` streams, by number.
    listening: HashMap<u64, Listening>,
    /// An upstream (its relay's number) and the token its request was
    /// sent with -> the client and its own token.
    progress: HashMap<(u64, String), Route>,
}

/// A classic session subscribed to a resource: its id and its client.
type Subscriber = (Arc<str>, Peer<RoleServer>);

/// Writes one line to the express lane's client.
pub(crate) type WriteLine = Arc<dyn Fn(Vec<u8>) + Send + Sync>;

/// Whom a request's progress is told to.
#[derive(Clone)]
pub(crate) enum Client {
    /// A client rmcp serves.
    Peer(Peer<RoleServer>),
    /// The client of the express lane: the notification's line, written
    /// to its pipe.
    Line(WriteLine),
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Client::Peer(_) => "Client::Peer",
            Client::Line(_) => "Client::Line",
        })
    }
}

impl Client {
    async fn progress(&self, progress: ProgressNotificationParam) {
        match self {
            Client::Peer(peer) => {
                if let Err(error) = peer.notify_progress(progress).await {
                    tracing::debug!(%error, "could not relay progress");
                }
            }
            Client::Line(write) => {
                let notification = serde_json::json!({
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": progress,
                });
                let mut line = notification.to_string().into_bytes();
                line.push(b'\n');
                write(line);
            }
        }
    }
}

/// Where one upstream request's progress goes.
#[derive(Debug, Clone)]
struct Route {
    client: Client,
    token: ProgressToken,
    /// Notifications on their way to the client now.
    relaying: Arc<AtomicUsize>,
    /// Notifications the upstream's pipe has carried that rmcp has yet to
    /// hand over (see [`Notices::announce`]).
    announced: Arc<AtomicUsize>,
}

#[derive(Debug)]
struct Listening {
    sink: SubscriptionSink,
    accepted: SubscriptionFilter,
}

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum List {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
}

/// A client's request that asked for progress: its client and token.
#[derive(Debug)]
pub(crate) struct Progress {
    client: Client,
    token: ProgressToken,
    notices: Notices,
}

impl Progress {
    /// Route what upstream `upstream` (its relay's number) says of the
    /// request it was sent with `token` to the client, while the returned
    /// guard lives.
    pub(crate) fn route(&self, upstream: u64, token: &ProgressToken) -> Routed {
        let key = (upstream, key_of(token));
        let relaying = Arc::new(AtomicUsize::new(0));
        let announced = Arc::new(AtomicUsize::new(0));
        let route = Route {
            client: self.client.clone(),
            token: self.token.clone(),
            relaying: Arc::clone(&relaying),
            announced: Arc::clone(&announced),
        };
        self.notices.state().progress.insert(key.clone(), route);
        Routed {
            key,
            relaying,
            announced,
            notices: self.notices.clone(),
        }
    }
}

/// A route of an upstream's progress to a client, removed when dropped.
#[derive(Debug)]
pub(crate) struct Routed {
    key: (u64, String),
    relaying: Arc<AtomicUsize>,
    announced: Arc<AtomicUsize>,
    notices: Notices,
}

impl Routed {
    /// Let the progress the upstream sent before its answer reach the
    /// client first, as it would directly: rmcp hands each notification
    /// to a task of its own, and the answer straight to its caller — or,
    /// on the express lane, the answer is read off the pipe while the
    /// notifications before it are still on their way through rmcp (the
    /// lane announces each as it passes them on).
    pub(crate) async fn settle(&self) {
        for _ in 0..SETTLE_YIELDS {
            tokio::task::yield_now().await;
        }
        for _ in 0..SETTLE_WAITS {
            if self.relaying.load(Ordering::Acquire) == 0
                && self.announced.load(Ordering::Acquire) == 0
            {
                return;
            }
            tokio::task::yield_now().await;
        }
    }
}

/// How often a finished request yields for the progress its upstream sent
/// just before answering, and then at most how often it waits for what is
/// on its way.
const SETTLE_YIELDS: usize = 4;
const SETTLE_WAITS: usize = 1_000;

impl Drop for Routed {
    fn drop(&mut self) {
        self.notices.state().progress.remove(&self.key);
    }
}

/// A progress token as a key.
fn key_of(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::String(text) => format!("s:{text}"),
        NumberOrString::Number(number) => format!("n:{number}"),
    }
}

/// A `subscriptions/listen` stream, heard while this lives.
#[derive(Debug)]
pub(crate) struct Listener {
    number: u64,
    notices: Notices,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.notices.state().listening.remove(&self.number);
    }
}

impl Notices {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The progress of a request of `peer` that carried `token`, to be
    /// routed once it is sent upstream (see [`Progress::route`]).
    pub(crate) fn progress_of(&self, client: Client, token: ProgressToken) -> Progress {
        Progress {
            client,
            token,
            notices: self.clone(),
        }
    }

    /// A number for an upstream's relay, unique in this gateway.
    pub(crate) fn relay_number(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The express lane of upstream `upstream` passed rmcp a progress
    /// notification of `token` (a string, the lane's own): its route's
    /// answer waits for it (see [`Routed::settle`]).
    pub(crate) fn announce(&self, upstream: u64, token: &str) {
        let token = ProgressToken(NumberOrString::String(token.into()));
        let key = (upstream, key_of(&token));
        if let Some(route) = self.state().progress.get(&key) {
            route.announced.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Upstream `upstream`'s progress: to the client whose request it is,
    /// under its own token (progress of no request in flight is dropped).
    pub(crate) async fn progressed(&self, upstream: u64, mut progress: ProgressNotificationParam) {
        let key = (upstream, key_of(&progress.progress_token));
        let Some(route) = self.state().progress.get(&key).cloned() else {
            tracing::debug!("progress of no request in flight; dropped");
            return;
        };
        route.relaying.fetch_add(1, Ordering::AcqRel);
        // Handed over: no longer only announced (never below none: a
        // notification the lane did not see was not announced).
        let _ = route
            .announced
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        progress.progress_token = route.token;
        route.client.progress(progress).await;
        route.relaying.fetch_sub(1, Ordering::AcqRel);
    }

    /// Session `session` (a classic client) subscribed to `uri`.
    pub(crate) fn subscribe(&self, uri: &str, session: &Arc<str>, peer: Peer<RoleServer>) {
        let mut state = self.state();
        let subscribers = state.subscribed.entry(uri.to_owned()).or_default();
        subscribers.retain(|(s, p)| s != session && !p.is_transport_closed());
        subscribers.push((Arc::clone(session), peer));
    }

    /// Session `session` unsubscribed from `uri`: whether any session is
    /// still subscribed to it.
    pub(crate) fn unsubscribe(&self, uri: &str, session: &Arc<str>) -> bool {
        let mut state = self.state();
        let Some(subscribers) = state.subscribed.get_mut(uri) else {
            return false;
        };
        subscribers.retain(|(s, p)| s != session && !p.is_transport_closed());
        if subscribers.is_empty() {
            state.subscribed.remove(uri);
            return false;
        }
        true
    }

    /// Whether a classic session is subscribed to `uri`.
    pub(crate) fn subscribed(&self, uri: &str) -> bool {
        self.state()
            .subscribed
            .get(uri)
            .is_some_and(|s| s.iter().any(|(_, p)| !p.is_transport_closed()))
    }

    /// Whether an open listen stream hears of `uri`.
    pub(crate) fn listened(&self, uri: &str) -> bool {
        self.state().listening.values().any(|l| {
            l.accepted
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|u| u == uri))
        })
    }

    /// Hear a `subscriptions/listen` stream: `accepted` on `sink`.
    pub(crate) fn listen(&self, sink: SubscriptionSink, accepted: SubscriptionFilter) -> Listener {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        self.state()
            .listening
            .insert(number, Listening { sink, accepted });
        Listener {
            number,
            notices: self.clone(),
        }
    }

    /// An upstream's resource changed: told to every client subscribed to
    /// it, on classic notifications or a listen stream.
    pub(crate) async fn updated(&self, update: ResourceUpdatedNotificationParam) {
        let (peers, sinks) = {
            let state = self.state();
            let peers: Vec<Peer<RoleServer>> = state
                .subscribed
                .get(&update.uri)
                .map(|s| s.iter().map(|(_, peer)| peer.clone()).collect())
                .unwrap_or_default();
            let sinks: Vec<SubscriptionSink> = state
                .listening
                .values()
                .filter(|l| {
                    l.accepted
                        .resource_subscriptions
                        .as_ref()
                        .is_some_and(|uris| uris.contains(&update.uri))
                })
                .map(|l| l.sink.clone())
                .collect();
            (peers, sinks)
        };
        for peer in peers {
            if let Err(error) = peer.notify_resource_updated(update.clone()).await {
                tracing::debug!(%error, "could not relay resources/updated");
            }
        }
        for sink in sinks {
            if let Err(error) = sink.notify_resource_updated(update.uri.clone()).await {
                tracing::debug!(%error, "could not relay resources/updated on a listen stream");
            }
        }
    }

    /// `list` changed: told to the classic `hearers` and to every listen
    /// stream that accepted it.
    pub(crate) async fn list_changed(&self, list: List, hearers: Vec<Hearer>) {
        if hearers.is_empty() {
            let mut state = self.state();
            if !state.unheard.contains(&list) {
                state.unheard.push(list);
            }
        }
        let sinks: Vec<SubscriptionSink> = self
            .state()
            .listening
            .values()
            .filter(|l| {
                let wanted = match list {
                    List::Tools => l.accepted.tools_list_changed,
                    List::Prompts => l.accepted.prompts_list_changed,
                    List::Resources => l.accepted.resources_list_changed,
                };
                wanted == Some(true)
            })
            .map(|l| l.sink.clone())
            .collect();
        for hearer in hearers {
            if let Err(error) = hearer.tell(list.changed()).await {
                tracing::debug!(%error, ?list, "could not relay list_changed");
            }
        }
        for sink in sinks {
            let sent = match list {
                List::Tools => sink.notify_tool_list_changed().await,
                List::Prompts => sink.notify_prompt_list_changed().await,
                List::Resources => sink.notify_resource_list_changed().await,
            };
            if let Err(error) = sent {
                tracing::debug!(%error, ?list, "could not relay list_changed on a listen stream");
            }
        }
    }

    /// A client is initialized: the list changes no client heard, told to
    /// it.
    pub(crate) async fn initialized(&self, peer: &Peer<RoleServer>) {
        let unheard = std::mem::take(&mut self.state().unheard);
        for list in unheard {
            self.list_changed(list, vec![Hearer::Awake(peer.clone())])
                .await;
        }
    }

    /// An upstream's log message: told to the classic `hearers` (those
    /// that set a level, or all when none did: the server filters by the
    /// level it was last set).
    pub(crate) async fn logged(
        &self,
        message: LoggingMessageNotificationParam,
        hearers: Vec<Hearer>,
    ) {
        for hearer in hearers {
            let logged =
                ServerNotification::LoggingMessageNotification(Notification::new(message.clone()));
            if let Err(error) = hearer.tell(logged).await {
                tracing::debug!(%error, "could not relay a log message");
            }
        }
    }
}

impl List {
    /// The notification that it changed.
    fn changed(self) -> ServerNotification {
        match self {
            List::Tools => ServerNotification::ToolListChangedNotification(Default::default()),
            List::Prompts => ServerNotification::PromptListChangedNotification(Default::default()),
            List::Resources => {
                ServerNotification::ResourceListChangedNotification(Default::default())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use rmcp::model::{NumberOrString, ProgressNotificationParam, ProgressToken};
    use serde_json::Value as Json;

    use super::{Client, Notices};

    /// A client that keeps the lines it is written.
    fn client() -> (Client, Arc<Mutex<Vec<Json>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&lines);
        let write = Arc::new(move |line: Vec<u8>| {
            if let Ok(json) = serde_json::from_slice(&line) {
                kept.lock().expect("lines").push(json);
            }
        });
        (Client::Line(write), lines)
    }

    fn token(text: &str) -> ProgressToken {
        ProgressToken(NumberOrString::String(text.to_owned().into()))
    }

    fn number(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    #[tokio::test]
    async fn progress_goes_to_the_client_whose_request_it_is_under_its_own_token() {
        let notices = Notices::default();
        let (a, heard_a) = client();
        let (b, heard_b) = client();
        // Two upstreams give their requests the same token (each counts
        // its own); each client asked under a token of its own.
        let first = notices.progress_of(a, token("client-a"));
        let second = notices.progress_of(b, token("client-b"));
        let routed_a = first.route(1, &number(7));
        let routed_b = second.route(2, &number(7));
        notices
            .progressed(1, ProgressNotificationParam::new(number(7), 0.5))
            .await;
        let said = heard_a.lock().expect("lines").clone();
        assert_eq!(said.len(), 1);
        assert_eq!(said[0]["method"], "notifications/progress");
        assert_eq!(said[0]["params"]["progressToken"], "client-a");
        assert_eq!(said[0]["params"]["progress"], 0.5);
        assert!(heard_b.lock().expect("lines").is_empty());
        // Once its request is over, an upstream's late progress goes
        // nowhere.
        drop(routed_a);
        notices
            .progressed(1, ProgressNotificationParam::new(number(7), 1.0))
            .await;
        assert_eq!(heard_a.lock().expect("lines").len(), 1);
        notices
            .progressed(2, ProgressNotificationParam::new(number(7), 1.0))
            .await;
        assert_eq!(
            heard_b.lock().expect("lines")[0]["params"]["progressToken"],
            "client-b"
        );
        drop(routed_b);
    }
}
