//! Waiting without sleeping: a wait ends on the news it waits for — a
//! [`Seen`] record growing, a store's news, a future's end — or fails the
//! test past [`PATIENCE`], naming what it waited for.

use std::future::IntoFuture;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use askgate_store::{AskRow, Store};
use tokio::sync::Notify;

/// How long a test waits for news before it fails: long enough for a
/// loaded machine, short enough that a lost answer fails rather than hangs.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// What `future` comes to; the test fails, naming `what`, if it takes more
/// than [`PATIENCE`].
///
/// # Example
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let two = askgate_testkit::within("the sum", async { 1 + 1 }).await;
/// assert_eq!(two, 2);
/// # });
/// ```
pub async fn within<F: IntoFuture>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(PATIENCE, future)
        .await
        .unwrap_or_else(|_| panic!("waited {PATIENCE:?} for {what}"))
}

/// What a test has seen so far — asks shown to a client, notifications,
/// lines on a process's stderr, webhook posts — that a test can wait on
/// from async code or from a thread. Cheap to clone: clones share it.
#[derive(Debug)]
pub struct Seen<T> {
    shared: Arc<Shared<T>>,
}

#[derive(Debug)]
struct Shared<T> {
    items: Mutex<Vec<T>>,
    /// For waits on a thread.
    grew: Condvar,
    /// For waits in async code.
    rung: Notify,
}

impl<T> Clone for Seen<T> {
    fn clone(&self) -> Seen<T> {
        Seen {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> Default for Seen<T> {
    fn default() -> Seen<T> {
        Seen {
            shared: Arc::new(Shared {
                items: Mutex::new(Vec::new()),
                grew: Condvar::new(),
                rung: Notify::new(),
            }),
        }
    }
}

impl<T: Clone> Seen<T> {
    /// Add what was seen, and wake whoever waits.
    pub fn push(&self, item: T) {
        self.items().push(item);
        self.shared.grew.notify_all();
        self.shared.rung.notify_waiters();
    }

    /// Everything seen so far, oldest first.
    pub fn all(&self) -> Vec<T> {
        self.items().clone()
    }

    /// How many were seen so far.
    pub fn len(&self) -> usize {
        self.items().len()
    }

    /// Whether nothing was seen yet.
    pub fn is_empty(&self) -> bool {
        self.items().is_empty()
    }

    /// Forget what was seen so far.
    pub fn clear(&self) {
        self.items().clear();
    }

    /// The first item seen that `fits`, once there is one.
    pub async fn find(&self, what: &str, mut fits: impl FnMut(&T) -> bool) -> T {
        self.when(what, |items| items.iter().find(|i| fits(i)).cloned())
            .await
    }

    /// Everything seen, once at least `n` items were.
    pub async fn at_least(&self, what: &str, n: usize) -> Vec<T> {
        self.when(what, |items| (items.len() >= n).then(|| items.to_vec()))
            .await
    }

    /// What `probe` finds in the items, once it finds something: looked
    /// at now and each time an item is added.
    pub async fn when<U>(&self, what: &str, mut probe: impl FnMut(&[T]) -> Option<U>) -> U {
        within(what, async {
            loop {
                let added = self.shared.rung.notified();
                tokio::pin!(added);
                // Registered before looking: an item added in between wakes it.
                added.as_mut().enable();
                if let Some(found) = probe(&self.items()) {
                    return found;
                }
                added.await;
            }
        })
        .await
    }

    /// [`Seen::find`], from a thread (outside async code).
    pub fn find_blocking(&self, what: &str, mut fits: impl FnMut(&T) -> bool) -> T {
        let items = self.items();
        let (items, timeout) = self
            .shared
            .grew
            .wait_timeout_while(items, PATIENCE, |items| !items.iter().any(&mut fits))
            .unwrap_or_else(PoisonError::into_inner);
        assert!(!timeout.timed_out(), "waited {PATIENCE:?} for {what}");
        items
            .iter()
            .find(|i| fits(i))
            .cloned()
            .unwrap_or_else(|| panic!("{what} vanished"))
    }

    fn items(&self) -> MutexGuard<'_, Vec<T>> {
        // A test that panicked while holding the lock has failed already.
        self.shared
            .items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Seen<()> {
    /// Note that it happened once more.
    pub fn ring(&self) {
        self.push(());
    }
}

impl Seen<String> {
    /// The first line holding every one of `parts`, once written.
    pub async fn line_with(&self, parts: &[&str]) -> String {
        let what = format!("a line with {parts:?}");
        self.find(&what, |line| parts.iter().all(|p| line.contains(p)))
            .await
    }

    /// Whether a line holding every one of `parts` was written so far.
    pub fn has_line_with(&self, parts: &[&str]) -> bool {
        self.items()
            .iter()
            .any(|line| parts.iter().all(|p| line.contains(p)))
    }
}

/// The first pending ask in `store` (oldest first), once one is parked:
/// looked for now, and again on each of the store's news of a parked ask.
pub async fn first_pending(store: &Store) -> AskRow {
    within("an ask parked in the store", async {
        let mut parked = store.parked();
        loop {
            let page = store.pending(100, None).await.expect("the store reads");
            if let Some(row) = page.asks.into_iter().last() {
                return row;
            }
            // Lagged or closed: look again all the same.
            let _ = parked.recv().await;
        }
    })
    .await
}

/// A wait for the ask `id` of `store` to settle, begun now in a task of
/// its own (so that it waits while the test answers): the ask as it
/// settled. The test fails if it is not settled within [`PATIENCE`].
pub fn settlement(store: &Store, id: &str) -> impl Future<Output = AskRow> + Send + 'static {
    let (store, id) = (store.clone(), id.to_owned());
    let waiter = tokio::spawn(async move { store.wait_settled(&id, PATIENCE).await });
    async move {
        waiter
            .await
            .expect("the waiter ends")
            .expect("the store reads")
            .expect("the ask settles")
    }
}
