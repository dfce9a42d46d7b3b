//! Store writes a call's answer does not wait for: the ledger and audit
//! records of `read` calls (unless `durable_reads`), and the end of every
//! other call. They run as tasks beside the calls; the gateway waits for them
//! before it closes the store on the way out, so a clean stop keeps them
//! all. A crash may lose the ones not yet committed (see DESIGN.md,
//! "Reads do not wait for the store").
//!
//! The records of ended reads are gathered for [`LINGER`] and written
//! together, in one store write: a stream of reads then costs the store one
//! commit (one fsync) per few milliseconds instead of one per call.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use askgate_store::{EndedCall, Store};
use tokio::sync::Notify;

/// The writes under way, counted so that a stop can wait for them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Background {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Ended reads waiting to be written together.
    gathered: std::sync::Mutex<Gathered>,
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

/// How long the records of ended reads are gathered before they are
/// written together.
const LINGER: std::time::Duration = std::time::Duration::from_millis(25);

/// Record `calls` as they ended, trying again while the store's server is
/// out of reach (each call that is in the ledger by then was written by an
/// attempt whose answer was lost: it is not written twice).
async fn record_until_written(store: &Store, calls: Vec<EndedCall>) {
    let mut backoff = askgate_store::Backoff::new();
    // Shared with the store's thread, kept here for another try.
    let mut calls: Arc<[EndedCall]> = calls.into();
    loop {
        let error = match store.record_ended_calls(Arc::clone(&calls)).await {
            Ok(()) => return,
            Err(error) => error,
        };
        let ids: Vec<&str> = calls.iter().map(|c| c.call.id.as_str()).collect();
        if !error.is_outage() {
            tracing::warn!(calls = ?ids, %error, "the audit entries and ledger records of read calls were not all written");
            return;
        }
        tracing::warn!(calls = ?ids, %error, "the store is unreachable; the records of read calls are written once it is back");
        tokio::time::sleep(backoff.next_wait()).await;
        let mut left = Vec::with_capacity(calls.len());
        for ended in calls.iter() {
            if !matches!(store.call(&ended.call.id).await, Ok(Some(_))) {
                left.push(ended.clone());
            }
        }
        if left.is_empty() {
            return;
        }
        calls = left.into();
    }
}

/// The ended reads gathered for the next write.
#[derive(Debug, Default)]
struct Gathered {
    calls: Vec<EndedCall>,
    running: Vec<Running>,
    /// Whether a task is writing them.
    writing: bool,
}

/// Counts one write down when it ends, however it ends.
#[derive(Debug)]
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
    /// Count one more write under way, until the guard drops.
    fn start(&self) -> Running {
        self.inner.running.fetch_add(1, Ordering::AcqRel);
        Running(Arc::clone(&self.inner))
    }

    fn gathered(&self) -> std::sync::MutexGuard<'_, Gathered> {
        self.inner
            .gathered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Record `ended` in `store` with the other reads that end within
    /// [`LINGER`], in one write.
    pub(crate) fn record_ended(&self, store: &Store, ended: EndedCall) {
        let running = self.start();
        let mut gathered = self.gathered();
        gathered.calls.push(ended);
        gathered.running.push(running);
        if std::mem::replace(&mut gathered.writing, true) {
            return;
        }
        drop(gathered);
        let background = self.clone();
        let store = store.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LINGER).await;
                let (calls, running) = {
                    let mut gathered = background.gathered();
                    if gathered.calls.is_empty() {
                        gathered.writing = false;
                        return;
                    }
                    (
                        std::mem::take(&mut gathered.calls),
                        std::mem::take(&mut gathered.running),
                    )
                };
                record_until_written(&store, calls).await;
                drop(running);
            }
        });
    }

    /// Run `work` beside the call that started it.
    pub(crate) fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        let running = self.start();
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

    /// How many writes are under way.
    pub(crate) fn under_way(&self) -> usize {
        self.inner.running.load(Ordering::Acquire)
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
