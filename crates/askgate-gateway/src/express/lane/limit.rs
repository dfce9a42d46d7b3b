//! An express lane's `call_timeout`: one task per lane looks at its calls
//! every [`WATCH_EVERY`], and gives up on each whose server went idle past
//! the limit, as rmcp's path does (see [`crate::relay::idle`]).

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::{Lane, LaneEnd, Pending, cancel_line};

/// How often the calls of a lane with a time limit are looked at: a call
/// is given up at most this much after its limit.
const WATCH_EVERY: Duration = Duration::from_millis(250);

impl Lane {
    /// Give up on each call whose server goes idle for `timeout` (the
    /// upstream's `call_timeout`: no answer, no progress, no ask of its
    /// waiting on a person; see [`crate::relay::idle`]): its server is
    /// told to cancel it, and its client that it may have run. One task
    /// watches the lane's calls for as long as the lane lives.
    pub(crate) fn limit(self: &Arc<Self>, timeout: Option<Duration>) {
        let Some(timeout) = timeout else {
            return;
        };
        let first = self
            .timeout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(timeout)
            .is_none();
        if !first {
            return;
        }
        let lane = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(WATCH_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let Some(lane) = lane.upgrade() else {
                    return;
                };
                lane.give_up_late(Instant::now());
            }
        });
    }

    /// Give up on every call whose server has been idle past the limit.
    fn give_up_late(&self, now: Instant) {
        let Some(timeout) = *self.timeout.lock().unwrap_or_else(PoisonError::into_inner) else {
            return;
        };
        // An ask of its server's that names no call may be for any of
        // them: while one waits on a person, none is given up.
        if !self.inflight.outside().is_idle_for(timeout, now) {
            return;
        }
        let late: Vec<(u64, Pending)> = {
            let mut calls = self.calls();
            let ids: Vec<u64> = calls
                .iter()
                .filter(|(_, pending)| pending.idle.is_idle_for(timeout, now))
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter()
                .filter_map(|id| calls.remove(&id).map(|pending| (id, pending)))
                .collect()
        };
        for (id, pending) in late {
            let why = format!(
                "its server gave no answer and told of no progress for {} (its call_timeout), \
                 and was told to cancel it",
                jiff::SignedDuration::try_from(timeout)
                    .map_or_else(|_| format!("{timeout:?}"), |d| format!("{d:#}"))
            );
            let reason = serde_json::value::to_raw_value(&why).ok();
            let _ = self.out.send(&cancel_line(id, reason.as_deref()));
            pending.settle(LaneEnd::Gone(&why));
        }
    }
}
