//! Upstream requests held in memory while a 2026-07-28 client answers
//! their server's asks: the retry that brings the answers takes its
//! request back by the handle its sealed state carries (see the `relay`
//! module).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::time::Instant;

use rmcp::ErrorData;
use rmcp::model::CallToolResponse;

use super::relay::Held;

/// The key in a round's carried state of a held upstream request.
pub(crate) const HELD: &str = "held";

/// The key in a round's carried state of a held request's server's round
/// (see [`super::relay::Resumable`]): what a retry sends again when the
/// request is no longer held.
pub(crate) const RESUME: &str = "resume";

/// How many calls are held at most, in all and of one principal (`[limits]
/// held_calls`, `held_calls_per_principal`): each holds an upstream
/// request open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Most {
    /// In all.
    pub(crate) all: usize,
    /// Of one principal.
    pub(crate) per_principal: usize,
}

impl Most {
    /// As `limits` says.
    pub(crate) fn of(limits: &crate::config::Limits) -> Most {
        Most {
            all: limits.held_calls,
            per_principal: limits.held_calls_per_principal,
        }
    }
}

/// Upstream calls waiting on a 2026-07-28 client's retry, by the handle
/// the round's sealed state carries. Each is dropped when its wait passes
/// the limit — its server's asks are then told nobody answered. One task
/// per `Holds` sweeps them, and only while something is held: every wait
/// is as long, so they end in the order they began.
pub(crate) struct Holds<R = CallToolResponse> {
    waiting: Arc<Mutex<Waiting<R>>>,
    ttl: Duration,
    most: Most,
}

/// What is held, and when each wait ends.
struct Waiting<R> {
    /// By handle: the call, and whose it is.
    held: HashMap<String, (Held<R>, String)>,
    /// How many each principal has held.
    by_principal: HashMap<String, usize>,
    /// Handles by the end of their wait, soonest first (a handle taken
    /// meanwhile is skipped).
    ends: VecDeque<(Instant, String)>,
    /// Whether a sweeper runs.
    sweeping: bool,
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
    /// sealed state lives), and at most `most` at once.
    pub(crate) fn new(ttl: Duration, most: Most) -> Holds<R> {
        Holds {
            waiting: Arc::new(Mutex::new(Waiting {
                held: HashMap::new(),
                by_principal: HashMap::new(),
                ends: VecDeque::new(),
                sweeping: false,
            })),
            ttl,
            most,
        }
    }

    /// Hold `held`, a call of `principal`'s, until the client's retry
    /// takes it, or its wait ends: the handle to take it by.
    ///
    /// # Errors
    /// As many calls are held as may be, in all or of `principal`'s (the
    /// call is given up); the system's random source failed.
    pub(crate) fn hold(&self, held: Held<R>, principal: &str) -> Result<String, ErrorData> {
        let handle = super::ids::random("held")?;
        let mut waiting = lock(&self.waiting);
        let theirs = waiting.by_principal.get(principal).copied().unwrap_or(0);
        let full = if waiting.held.len() >= self.most.all {
            Some((self.most.all, "in all"))
        } else if theirs >= self.most.per_principal {
            Some((self.most.per_principal, "of one principal"))
        } else {
            None
        };
        if let Some((most, whose)) = full {
            drop(waiting);
            // Given up: its server's asks are told nobody answered.
            drop(held);
            tracing::warn!(
                most,
                whose,
                "a call was not held for its client's answers: as many are held as may be"
            );
            return Err(ErrorData::internal_error(
                format!(
                    "askgate holds {most} calls waiting on their clients' answers {whose}, the most it \
                     may ([limits] held_calls, held_calls_per_principal); this call's server asked for \
                     input and the call was given up there (it may have run in part): answer the \
                     others, or try again later"
                ),
                None,
            ));
        }
        *waiting
            .by_principal
            .entry(principal.to_owned())
            .or_insert(0) += 1;
        waiting
            .held
            .insert(handle.clone(), (held, principal.to_owned()));
        waiting
            .ends
            .push_back((Instant::now() + self.ttl, handle.clone()));
        if !waiting.sweeping {
            waiting.sweeping = true;
            tokio::spawn(sweep(Arc::downgrade(&self.waiting)));
        }
        Ok(handle)
    }

    /// The call held under `handle`, if it still is.
    pub(crate) fn take(&self, handle: &str) -> Option<Held<R>> {
        lock(&self.waiting).remove(handle)
    }
}

impl<R> Waiting<R> {
    /// The call held under `handle`, no longer counted.
    fn remove(&mut self, handle: &str) -> Option<Held<R>> {
        let (held, principal) = self.held.remove(handle)?;
        if let Some(count) = self.by_principal.get_mut(&principal) {
            *count -= 1;
            if *count == 0 {
                self.by_principal.remove(&principal);
            }
        }
        Some(held)
    }
}

fn lock<R>(waiting: &Mutex<Waiting<R>>) -> std::sync::MutexGuard<'_, Waiting<R>> {
    waiting.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Drop each held call whose wait has ended, until nothing is held (or
/// the `Holds` itself is gone).
async fn sweep<R>(waiting: Weak<Mutex<Waiting<R>>>) {
    loop {
        let next = {
            let Some(waiting) = waiting.upgrade() else {
                return;
            };
            let mut waiting = lock(&waiting);
            match waiting.ends.front() {
                Some((end, _)) => *end,
                None => {
                    waiting.sweeping = false;
                    return;
                }
            }
        };
        tokio::time::sleep_until(next).await;
        let Some(waiting) = waiting.upgrade() else {
            return;
        };
        let ended: Vec<Held<R>> = {
            let mut waiting = lock(&waiting);
            let now = Instant::now();
            let mut ended = Vec::new();
            while waiting.ends.front().is_some_and(|(end, _)| *end <= now) {
                if let Some((_, handle)) = waiting.ends.pop_front()
                    && let Some(held) = waiting.remove(&handle)
                {
                    ended.push(held);
                }
            }
            ended
        };
        // Dropped outside the lock: each tells its server's asks that
        // nobody answered.
        drop(ended);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Holds, Most};
    use crate::relay::Held;

    const MOST: Most = Most {
        all: 8,
        per_principal: 6,
    };

    fn a_call() -> Held {
        let (_asks, asked) = tokio::sync::mpsc::unbounded_channel();
        Held::new(std::future::pending(), asked)
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_call_is_taken_within_its_wait_and_gone_after_it() {
        let holds: Holds = Holds::new(Duration::from_secs(60), MOST);
        let first = holds.hold(a_call(), "alice").expect("held");
        tokio::time::sleep(Duration::from_secs(30)).await;
        let second = holds.hold(a_call(), "alice").expect("held");
        assert!(holds.take(&first).is_some(), "taken within its wait");
        assert!(holds.take(&first).is_none(), "taken once");
        // Past the second's wait: gone, and the sweeper stops.
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert!(holds.take(&second).is_none(), "dropped when its wait ended");
        // Held again later: a new sweeper ends that wait too.
        let third = holds.hold(a_call(), "alice").expect("held");
        tokio::time::sleep(Duration::from_secs(59)).await;
        let fourth = holds.hold(a_call(), "alice").expect("held");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(holds.take(&third).is_none(), "its wait ended");
        assert!(holds.take(&fourth).is_some(), "its wait has not");
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_most_a_call_is_not_held_and_a_taken_one_makes_room() {
        let holds: Holds = Holds::new(Duration::from_secs(60), MOST);
        // One principal's share: 6 of the 8.
        let mut alices: Vec<String> = (0..MOST.per_principal)
            .map(|_| holds.hold(a_call(), "alice").expect("held"))
            .collect();
        let refused = holds.hold(a_call(), "alice").expect_err("refused");
        assert!(
            refused.message.contains("6 calls") && refused.message.contains("of one principal"),
            "{}",
            refused.message
        );
        // Another principal's calls are held meanwhile, up to the whole.
        let bobs: Vec<String> = (0..2)
            .map(|_| holds.hold(a_call(), "bob").expect("held"))
            .collect();
        let refused = holds.hold(a_call(), "carol").expect_err("refused");
        assert!(
            refused.message.contains("8 calls") && refused.message.contains("in all"),
            "{}",
            refused.message
        );
        assert!(holds.take(&bobs[0]).is_some());
        holds.hold(a_call(), "carol").expect("room again");
        assert!(holds.take(&alices.pop().expect("one")).is_some());
        holds.hold(a_call(), "alice").expect("alice's room again");
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_whose_wait_ended_is_no_longer_counted_for_its_principal() {
        let holds: Holds = Holds::new(Duration::from_secs(60), MOST);
        for _ in 0..MOST.per_principal {
            holds.hold(a_call(), "alice").expect("held");
        }
        holds
            .hold(a_call(), "alice")
            .expect_err("her share is held");
        tokio::time::sleep(Duration::from_secs(61)).await;
        holds
            .hold(a_call(), "alice")
            .expect("the ended ones are not counted");
    }
}
