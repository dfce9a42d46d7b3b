//! Expiry is real: an ask past its `expires_at` is `expired` in the store,
//! not a `pending` one nobody can answer. [`sweep`] moves every overdue ask
//! there, every [`SWEEP_EVERY`], in each process that serves asks (the
//! gateway, `askgate inbox`): the move is one `UPDATE … WHERE status =
//! 'pending'`, so when several replicas sweep one store, one wins per ask.
//! Between two sweeps the inbox expires an overdue ask as it opens it
//! ([`Store::expire`]), so a person never sees a form for one. Expiry never
//! applies defaults. The same sweep forgets, every [`PURGE_EVERY`], the
//! spent single-use tokens past their expiry (a sealed state's nonce, a
//! link's): they can no longer be presented, and would pile up forever.

use std::sync::Arc;
use std::time::Duration;

use askgate_mcp::Clock;
use askgate_store::Store;

/// How often overdue asks are moved to `expired`.
pub const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// How often spent tokens past their expiry are forgotten.
pub const PURGE_EVERY: Duration = Duration::from_secs(600);

/// Move every ask of `store` past its expiry on `clock` to `expired`, now
/// and every [`SWEEP_EVERY`]; forget the spent tokens past theirs, now and
/// every [`PURGE_EVERY`]; for as long as the future runs.
pub async fn sweep(store: Store, clock: Arc<dyn Clock>) {
    let mut purged: Option<tokio::time::Instant> = None;
    loop {
        sweep_once(&store, clock.now()).await;
        if purged.is_none_or(|at| at.elapsed() >= PURGE_EVERY) {
            match store.purge_tokens(clock.now()).await {
                Ok(0) => {}
                Ok(gone) => tracing::debug!(gone, "spent tokens past their expiry forgotten"),
                Err(error) => {
                    tracing::warn!(%error, "could not forget the spent tokens; trying again later")
                }
            }
            purged = Some(tokio::time::Instant::now());
        }
        tokio::time::sleep(SWEEP_EVERY).await;
    }
}

/// Move every ask of `store` past its expiry at `now` to `expired`: how
/// many moved (none when the store failed; that is logged, and the next
/// sweep tries again).
pub async fn sweep_once(store: &Store, now: jiff::Timestamp) -> usize {
    match store.expire_due(now).await {
        Ok(ids) => {
            for id in &ids {
                tracing::info!(ask = %id, "expired: nobody answered in time; no default was applied");
            }
            ids.len()
        }
        Err(error) => {
            tracing::warn!(%error, "could not expire the overdue asks; trying again at the next sweep");
            0
        }
    }
}
