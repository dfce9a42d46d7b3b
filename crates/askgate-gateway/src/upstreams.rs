//! The servers behind the gateway, as they start: one slot per configured
//! upstream, in the config's order, filled when its handshake is done.
//!
//! They start once the gateway knows whom it serves
//! ([`Upstreams::release`]): the stdio client's `initialize` (so each
//! upstream is told the client's sampling and roots as it declared them,
//! and a server that offers tools by the client's capabilities offers
//! the right ones), or at once for `--listen` and the dry run.
//!
//! Every upstream starts at once, in a task of its own, and the client is
//! served meanwhile: its handshake does not wait for the slowest server (a
//! desktop client gives up a probe after a couple of seconds). An upstream
//! that fails to start is logged and tried again, waiting twice as long
//! each time (up to a minute), without holding up the others. Whoever
//! needs one still starting waits for it, for a bounded time
//! ([`Upstreams::settled`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;

use crate::upstream::{Declared, Upstream};

/// The first wait before starting a failed upstream again.
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between two tries.
const LONGEST_RETRY: Duration = Duration::from_secs(60);

/// The configured upstreams, each connected or still starting.
#[derive(Debug)]
pub(crate) struct Upstreams {
    slots: Vec<OnceLock<Upstream>>,
    /// Each one's name in the config, for saying which are not running.
    names: Vec<String>,
    /// Whether its last try to start failed (it is tried again).
    failed: Vec<AtomicBool>,
    /// How many have been tried at least once (connected or failed).
    tried: AtomicUsize,
    /// Rung when one connects or a first try ends.
    changed: Notify,
    /// How many the client was told of (its handshake's answer, then
    /// list changes): one joining after is news.
    told: AtomicUsize,
    /// Whether the client's handshake was answered: before, nobody is
    /// told of news (the answer lists what joined).
    answered: std::sync::atomic::AtomicBool,
    /// What they are told of the client: none start before it is known
    /// (see [`Upstreams::release`]).
    declared: tokio::sync::watch::Sender<Option<Declared>>,
}

impl Upstreams {
    /// The upstreams `names` (the config's, in its order), none started
    /// yet.
    pub(crate) fn new(names: Vec<String>) -> Upstreams {
        Upstreams {
            slots: names.iter().map(|_| OnceLock::new()).collect(),
            failed: names.iter().map(|_| AtomicBool::new(false)).collect(),
            names,
            tried: AtomicUsize::new(0),
            changed: Notify::new(),
            told: AtomicUsize::new(0),
            answered: std::sync::atomic::AtomicBool::new(false),
            declared: tokio::sync::watch::Sender::new(None),
        }
    }

    /// Let them start, declaring `declared` (the first release holds:
    /// an upstream's handshake happens once).
    pub(crate) fn release(&self, declared: Declared) {
        self.declared.send_if_modified(|slot| {
            if slot.is_some() {
                return false;
            }
            *slot = Some(declared);
            true
        });
    }

    /// What to declare, once released.
    pub(crate) async fn declared(&self) -> Declared {
        let mut released = self.declared.subscribe();
        loop {
            if let Some(declared) = *released.borrow_and_update() {
                return declared;
            }
            if released.changed().await.is_err() {
                return Declared::ANY_CLIENT;
            }
        }
    }

    /// How many are configured.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Upstream `index`, once connected.
    pub(crate) fn get(&self, index: usize) -> Option<&Upstream> {
        self.slots.get(index)?.get()
    }

    /// The connected upstreams, by index, in the config's order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, &Upstream)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(index, slot)| Some((index, slot.get()?)))
    }

    /// The connected upstreams, in the config's order.
    pub(crate) fn connected(&self) -> impl Iterator<Item = &Upstream> + '_ {
        self.slots.iter().filter_map(OnceLock::get)
    }

    /// Whether every upstream is connected.
    pub(crate) fn all_connected(&self) -> bool {
        self.slots.iter().all(|slot| slot.get().is_some())
    }

    /// Whether every upstream has been tried once (connected or not).
    pub(crate) fn tried_all(&self) -> bool {
        self.tried.load(Ordering::Acquire) >= self.slots.len()
    }

    /// The upstreams not connected, each named with why, for a client
    /// whose call finds no tool (`everything (its start failed; ...)`):
    /// `None` when all are. Never the failure itself (a command line, a
    /// path): the gateway's log has it.
    pub(crate) fn not_running(&self) -> Option<String> {
        let missing: Vec<String> = self
            .slots
            .iter()
            .zip(&self.names)
            .zip(&self.failed)
            .filter(|((slot, _), _)| slot.get().is_none())
            .map(|((_, name), failed)| {
                if failed.load(Ordering::Acquire) {
                    format!(
                        "{name} (its start failed; it is tried again in the background, and \
                         askgate's log says why)"
                    )
                } else {
                    format!("{name} (still starting)")
                }
            })
            .collect();
        (!missing.is_empty()).then(|| missing.join(", "))
    }

    /// The client is told of every upstream connected now.
    pub(crate) fn told(&self) {
        self.told.store(self.connected().count(), Ordering::Release);
        self.answered.store(true, Ordering::Release);
    }

    /// Whether upstreams joined since the client was last told (and if so,
    /// it is told now).
    pub(crate) fn news(&self) -> bool {
        if !self.answered.load(Ordering::Acquire) {
            return false;
        }
        let connected = self.connected().count();
        self.told.swap(connected, Ordering::AcqRel) < connected
    }

    /// Upstream `index` is connected.
    pub(crate) fn connect(&self, index: usize, upstream: Upstream) {
        if let Some(slot) = self.slots.get(index) {
            let _ = slot.set(upstream);
        }
        self.changed.notify_waiters();
    }

    /// Upstream `index`'s first try ended (connected or failed).
    pub(crate) fn tried_once(&self) {
        self.tried.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    /// Wait, at most `within`, until every upstream is connected — or,
    /// with `tried_is_enough`, has been tried once. Whether that happened.
    pub(crate) async fn settled(&self, within: Duration, tried_is_enough: bool) -> bool {
        let done = |upstreams: &Upstreams| {
            upstreams.all_connected() || (tried_is_enough && upstreams.tried_all())
        };
        let waiting = async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if done(self) {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(within, waiting).await.is_ok()
    }

    /// Upstream `index`, waiting at most `within` for it to connect.
    pub(crate) async fn wait_for(&self, index: usize, within: Duration) -> Option<&Upstream> {
        let waiting = async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if let Some(upstream) = self.get(index) {
                    return upstream;
                }
                changed.await;
            }
        };
        match tokio::time::timeout(within, waiting).await {
            Ok(upstream) => Some(upstream),
            Err(_) => self.get(index),
        }
    }

    /// Wait until more upstreams are connected than `seen`: how many are
    /// now. For the task that tells the clients their lists changed.
    pub(crate) async fn more_than(&self, seen: usize) -> usize {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = self.connected().count();
            if now > seen {
                return now;
            }
            changed.await;
        }
    }
}

/// Start upstream `index` of `upstreams`: keep trying `connect` until it
/// gives the upstream, waiting longer after each failure (logged, naming
/// the upstream; never its environment). The first try is counted
/// (see [`Upstreams::settled`]) once its upstream is in its slot, or it
/// failed.
pub(crate) async fn start<F, Fut>(
    upstreams: Arc<Upstreams>,
    index: usize,
    name: String,
    within: Duration,
    mut connect: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Upstream, String>>,
{
    let mut first = true;
    let mut wait = FIRST_RETRY;
    loop {
        // A server that never answers its handshake is given up on (its
        // process stopped with the connection) and tried again later.
        let tried = tokio::time::timeout(within, connect())
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "it did not answer the MCP handshake within {} (its start_timeout)",
                    jiff::SignedDuration::try_from(within)
                        .map_or_else(|_| format!("{within:?}"), |d| format!("{d:#}"))
                ))
            });
        match tried {
            Ok(upstream) => {
                if !first {
                    tracing::info!(upstream = %name, "started after all");
                }
                upstreams.connect(index, upstream);
                if first {
                    upstreams.tried_once();
                }
                return;
            }
            Err(error) => {
                tracing::error!(upstream = %name, %error, "could not start; trying again in {}s", wait.as_secs());
                if let Some(failed) = upstreams.failed.get(index) {
                    failed.store(true, Ordering::Release);
                }
                if first {
                    upstreams.tried_once();
                    first = false;
                }
            }
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(LONGEST_RETRY);
    }
}
