//! A clean stop. Desktop clients end a session with SIGINT or SIGTERM
//! (Claude Code, Codex), or by closing the gateway's stdin. Either way the
//! gateway stops taking calls, gives the calls in flight a bounded grace
//! (`stop_grace`, 10 s unless the config says otherwise) to finish, writes every record still queued, closes its
//! upstreams (a child's stdin first, then SIGTERM, then a kill) and exits 0. A call still
//! waiting when the grace is over is cancelled: its upstream is told, its
//! ledger row says how it ended, and an ask it parked stays in the store
//! for its retry.
//!
//! [`Stopping`] is what the sessions share: whether the gateway is
//! stopping, and how many calls are in flight ([`InFlight`], one per call,
//! on every path).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// How long each upstream is given to close (a child: its stdin closed,
/// SIGTERM 2 s later, killed 2 s after that; see `child.rs`).
pub(crate) const CLOSING: Duration = Duration::from_secs(5);

/// Whether the gateway is stopping, and its calls in flight.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stopping {
    state: Arc<State>,
}

#[derive(Debug, Default)]
struct State {
    stopping: AtomicBool,
    in_flight: AtomicUsize,
    /// Rung when the last call in flight ends.
    quiet: Notify,
}

impl Stopping {
    /// Whether the gateway takes no new calls.
    pub(crate) fn is_stopping(&self) -> bool {
        self.state.stopping.load(Ordering::Acquire)
    }

    /// Take no new calls from now on.
    pub(crate) fn begin(&self) {
        self.state.stopping.store(true, Ordering::Release);
    }

    /// A call starting: counted until the returned guard drops. `None`
    /// when the gateway is stopping (the call is refused, not sent).
    pub(crate) fn enter(&self) -> Option<InFlight> {
        self.state.in_flight.fetch_add(1, Ordering::AcqRel);
        let counted = InFlight(Arc::clone(&self.state));
        (!self.is_stopping()).then_some(counted)
    }

    /// How many calls are in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.state.in_flight.load(Ordering::Acquire)
    }

    /// Wait until no call is in flight.
    pub(crate) async fn quiet(&self) {
        loop {
            let quiet = self.state.quiet.notified();
            if self.in_flight() == 0 {
                return;
            }
            quiet.await;
        }
    }
}

/// One call in flight, counted while it lives.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<State>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.quiet.notify_waiters();
        }
    }
}

/// The error a call gets while the gateway stops: it is not sent.
pub(crate) fn refused(tool: &str) -> rmcp::ErrorData {
    rmcp::ErrorData::internal_error(
        format!(
            "askgate is stopping: the call to {tool} was not sent; call it again once askgate is back"
        ),
        None,
    )
}

/// Wait for the signal to stop: SIGINT or SIGTERM (Ctrl-C where there are
/// no unix signals). Its name. Never, when the signals cannot be watched
/// (the default action stays: the process ends).
pub(crate) async fn signalled() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut interrupt), Ok(mut terminate)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            tracing::warn!("cannot watch SIGINT and SIGTERM: a signal ends askgate at once");
            return std::future::pending().await;
        };
        tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        }
    }
    #[cfg(not(unix))]
    {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            Err(_) => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn quiet_waits_for_the_last_call_and_stopping_refuses_new_ones() {
        let stopping = Stopping::default();
        let first = stopping.enter().expect("taken");
        let second = stopping.enter().expect("taken");
        stopping.begin();
        assert!(stopping.enter().is_none(), "no new call once stopping");
        assert_eq!(stopping.in_flight(), 2, "the refused one is not counted");
        drop(first);
        let waiting = tokio::spawn({
            let stopping = stopping.clone();
            async move { stopping.quiet().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one call is still in flight");
        drop(second);
        waiting.await.expect("quiet once the last call ends");
        assert_eq!(stopping.in_flight(), 0);
    }
}
