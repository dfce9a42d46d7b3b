//! Store writes a call's answer does not wait for: the ledger and audit
//! records of `read` calls (unless `durable_reads`), and the end of every
//! other call. They run as tasks beside the calls; the gateway waits for them
//! before it closes the store on the way out, so a clean stop keeps them
//! all. A crash may lose the ones not yet committed (see DESIGN.md,
//! "Reads do not wait for the store").

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// The writes under way, counted so that a stop can wait for them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Background {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    running: AtomicUsize,
    /// Rung when none is left.
    idle: Notify,
    /// Rung when one ends while [`MOST_UNDER_WAY`] or more were.
    room: Notify,
}

/// The most writes under way before a read waits for room: a store that
/// falls behind slows reads down instead of piling their records up in
/// memory (a few hundred bytes each).
const MOST_UNDER_WAY: usize = 4096;

/// Counts one write down when it ends, however it ends.
struct Running(Arc<Inner>);

impl Drop for Running {
    fn drop(&mut self) {
        let before = self.0.running.fetch_sub(1, Ordering::AcqRel);
        if before == 1 {
            self.0.idle.notify_waiters();
        }
        if before >= MOST_UNDER_WAY {
            self.0.room.notify_waiters();
        }
    }
}

impl Background {
    /// Run `work` beside the call that started it.
    pub(crate) fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        self.inner.running.fetch_add(1, Ordering::AcqRel);
        let running = Running(Arc::clone(&self.inner));
        tokio::spawn(async move {
            let _running = running;
            work.await;
        });
    }

    /// Wait until no write is under way.
    pub(crate) async fn idle(&self) {
        Self::until(&self.inner.idle, || {
            self.inner.running.load(Ordering::Acquire) == 0
        })
        .await;
    }

    /// Whether fewer than [`MOST_UNDER_WAY`] writes are under way.
    pub(crate) fn has_room(&self) -> bool {
        self.inner.running.load(Ordering::Acquire) < MOST_UNDER_WAY
    }

    /// Wait until fewer than [`MOST_UNDER_WAY`] writes are under way.
    pub(crate) async fn room(&self) {
        Self::until(&self.inner.room, || {
            self.inner.running.load(Ordering::Acquire) < MOST_UNDER_WAY
        })
        .await;
    }

    /// Wait until `done()`, checked again each time `rung` is rung.
    async fn until(rung: &Notify, done: impl Fn() -> bool) {
        loop {
            let notified = rung.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done() {
                return;
            }
            notified.await;
        }
    }
}
