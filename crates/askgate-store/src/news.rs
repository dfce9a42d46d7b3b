//! News of settled asks: to every subscriber of [`Store::settlements`], and
//! to the waiters of that one ask only — a settlement wakes its own waiters,
//! not every task waiting on some ask. News of parked asks: to every
//! subscriber of [`Store::parked`]. News of a person's answer counted
//! toward an ask's rule: to every subscriber of [`Store::answered`].
//!
//! [`Store::settlements`]: crate::Store::settlements
//! [`Store::parked`]: crate::Store::parked
//! [`Store::answered`]: crate::Store::answered

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{broadcast, mpsc};

use crate::asks::{AskAnswered, AskParked, AskSettled};

/// The waiters of each ask, by ask id: each a token and where to send.
type Waiters = HashMap<Arc<str>, Vec<(u64, mpsc::UnboundedSender<AskSettled>)>>;

/// Where news of settled asks goes.
#[derive(Debug)]
pub(crate) struct News {
    all: broadcast::Sender<AskSettled>,
    parked: broadcast::Sender<AskParked>,
    answered: broadcast::Sender<AskAnswered>,
    waiters: Mutex<Waiters>,
    next_waiter: AtomicU64,
}

impl News {
    pub(crate) fn new() -> News {
        News {
            all: broadcast::channel(1024).0,
            parked: broadcast::channel(1024).0,
            answered: broadcast::channel(1024).0,
            waiters: Mutex::new(HashMap::new()),
            next_waiter: AtomicU64::new(0),
        }
    }

    /// Tell the ask's waiters, and every subscriber.
    pub(crate) fn announce(&self, settled: AskSettled) {
        if let Some(waiters) = self.waiters().get(&settled.id) {
            for (_, waiter) in waiters {
                let _ = waiter.send(settled.clone());
            }
        }
        let _ = self.all.send(settled);
    }

    /// Tell every subscriber an ask was parked.
    pub(crate) fn announce_parked(&self, parked: AskParked) {
        let _ = self.parked.send(parked);
    }

    /// Tell every subscriber a person's answer was counted.
    pub(crate) fn announce_answered(&self, answered: AskAnswered) {
        let _ = self.answered.send(answered);
    }

    /// Every person's answer counted from now on.
    pub(crate) fn subscribe_answered(&self) -> broadcast::Receiver<AskAnswered> {
        self.answered.subscribe()
    }

    /// Every parked ask from now on.
    pub(crate) fn subscribe_parked(&self) -> broadcast::Receiver<AskParked> {
        self.parked.subscribe()
    }

    /// Every settlement from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<AskSettled> {
        self.all.subscribe()
    }

    /// The settlements of ask `id` from now on, while the waiter lives.
    pub(crate) fn wait_for(self: &Arc<Self>, id: &str) -> Waiter {
        let id: Arc<str> = Arc::from(id);
        let token = self.next_waiter.fetch_add(1, Ordering::Relaxed);
        let (sender, news) = mpsc::unbounded_channel();
        self.waiters()
            .entry(Arc::clone(&id))
            .or_default()
            .push((token, sender));
        Waiter {
            owner: Arc::clone(self),
            id,
            token,
            news,
        }
    }

    fn waiters(&self) -> MutexGuard<'_, Waiters> {
        // Every change under the lock leaves the map consistent.
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One task waiting on one ask; unregisters when dropped.
#[derive(Debug)]
pub(crate) struct Waiter {
    owner: Arc<News>,
    id: Arc<str>,
    token: u64,
    news: mpsc::UnboundedReceiver<AskSettled>,
}

impl Waiter {
    /// The next settlement of the ask.
    pub(crate) async fn next(&mut self) -> Option<AskSettled> {
        self.news.recv().await
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut waiters = self.owner.waiters();
        if let Some(list) = waiters.get_mut(&self.id) {
            list.retain(|(token, _)| *token != self.token);
            if list.is_empty() {
                waiters.remove(&self.id);
            }
        }
    }
}
