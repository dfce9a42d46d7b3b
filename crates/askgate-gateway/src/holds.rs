//! Upstream requests held in memory while a 2026-07-28 client answers
//! their server's asks: the retry that brings the answers takes its
//! request back by the handle its sealed state carries (see the `upcall`
//! module).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::CallToolResponse;

use super::upcall::Held;

/// Upstream calls waiting on a 2026-07-28 client's retry, by the handle
/// the round's sealed state carries. Each is dropped when its wait passes
/// the limit — its server's asks are then told nobody answered.
pub(crate) struct Holds<R = CallToolResponse> {
    held: Arc<Mutex<HashMap<String, Held<R>>>>,
    ttl: Duration,
}

impl<R> std::fmt::Debug for Holds<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holds")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl<R: Send + 'static> Holds<R> {
    /// Nothing held yet; each call held for at most `ttl` (as long as a
    /// sealed state lives).
    pub(crate) fn new(ttl: Duration) -> Holds<R> {
        Holds {
            held: Arc::default(),
            ttl,
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held<R>>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hold `held` until the client's retry takes it, or its wait ends:
    /// the handle to take it by.
    ///
    /// # Errors
    /// The system's random source failed.
    pub(crate) fn hold(&self, held: Held<R>) -> Result<String, ErrorData> {
        let handle = super::proxy::random("held")?;
        self.held().insert(handle.clone(), held);
        let holds = Arc::downgrade(&self.held);
        let expired = handle.clone();
        let ttl = self.ttl;
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            if let Some(holds) = holds.upgrade() {
                let gone = holds
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&expired);
                drop(gone);
            }
        });
        Ok(handle)
    }

    /// The call held under `handle`, if it still is.
    pub(crate) fn take(&self, handle: &str) -> Option<Held<R>> {
        self.held().remove(handle)
    }
}
