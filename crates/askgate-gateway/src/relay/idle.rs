//! How long a request upstream has gone without a sign of life: what its
//! `call_timeout` counts.
//!
//! A server at work on a call shows it by telling of progress; a server
//! that asked the person something (a relayed elicitation) is waiting on
//! that person, not idle. So the clock starts again at each progress
//! notification, stops while one of the server's own asks waits on a
//! person, and starts again when the answer is in. A call is given up only
//! when its server has been idle for the whole limit.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// The idle clock of one request upstream (or of the asks of one upstream
/// that name no call). Cheap to clone: clones share the clock.
#[derive(Debug, Clone)]
pub(crate) struct Idle {
    clock: Arc<watch::Sender<State>>,
}

/// Where the clock stands.
#[derive(Debug, Clone, Copy)]
struct State {
    /// The server's asks waiting on a person now: while any does, the
    /// clock stands still.
    asking: usize,
    /// When the last sign of life came (the send, a progress
    /// notification, an answered ask).
    since: Instant,
}

impl Default for Idle {
    fn default() -> Idle {
        Idle::new()
    }
}

impl Idle {
    /// A clock started now.
    pub(crate) fn new() -> Idle {
        let (clock, _) = watch::channel(State {
            asking: 0,
            since: Instant::now(),
        });
        Idle {
            clock: Arc::new(clock),
        }
    }

    /// A sign of life (a progress notification): the clock starts again.
    pub(crate) fn touch(&self) {
        self.clock.send_modify(|state| state.since = Instant::now());
    }

    /// One of the server's asks waits on a person until the guard drops:
    /// the clock stands still until then, and starts again from then.
    pub(crate) fn asking(&self) -> Asking {
        self.clock.send_modify(|state| state.asking += 1);
        Asking { idle: self.clone() }
    }

    /// Whether, at `now`, the server has been idle for `limit`: no ask of
    /// its waits, and its last sign of life is that long ago.
    pub(crate) fn is_idle_for(&self, limit: Duration, now: Instant) -> bool {
        let state = *self.clock.borrow();
        state.asking == 0 && now.saturating_duration_since(state.since) >= limit
    }

    /// Ends once the server has been idle for `limit`.
    pub(crate) async fn idle_for(&self, limit: Duration) {
        let mut seen = self.clock.subscribe();
        loop {
            let state = *seen.borrow_and_update();
            if state.asking > 0 {
                // Stands still: only a change can end the wait.
                if seen.changed().await.is_err() {
                    return;
                }
                continue;
            }
            tokio::select! {
                // Looked at again: the clock may have changed while this
                // wait was not polled (a caller busy with the person's
                // answer), and a clock that stood still has not run out.
                () = tokio::time::sleep_until(state.since + limit) => {
                    if self.is_idle_for(limit, Instant::now()) {
                        return;
                    }
                }
                changed = seen.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// One of the server's asks waiting on a person (see [`Idle::asking`]).
#[derive(Debug)]
pub(crate) struct Asking {
    idle: Idle,
}

impl Drop for Asking {
    fn drop(&mut self) {
        self.idle.clock.send_modify(|state| {
            state.asking = state.asking.saturating_sub(1);
            state.since = Instant::now();
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn a_quiet_server_is_idle_at_its_limit() {
        let idle = Idle::new();
        let started = Instant::now();
        idle.idle_for(LIMIT).await;
        assert_eq!(started.elapsed(), LIMIT);
    }

    #[tokio::test(start_paused = true)]
    async fn progress_starts_the_clock_again() {
        let idle = Idle::new();
        let started = Instant::now();
        let touching = idle.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(6)).await;
            touching.touch();
        });
        idle.idle_for(LIMIT).await;
        assert_eq!(started.elapsed(), Duration::from_secs(16));
    }

    #[tokio::test(start_paused = true)]
    async fn the_clock_stands_still_while_a_person_is_asked_and_starts_again_after() {
        let idle = Idle::new();
        let started = Instant::now();
        let asked = idle.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let asking = asked.asking();
            // An hour for the person, far past the limit.
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(asking);
        });
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(!idle.is_idle_for(LIMIT, Instant::now() + LIMIT * 100));
        idle.idle_for(LIMIT).await;
        assert_eq!(started.elapsed(), Duration::from_secs(2 + 3600 + 10));
        assert!(idle.is_idle_for(LIMIT, Instant::now()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_not_polled_while_the_person_was_asked_does_not_run_out_for_it() {
        // Several times: which of the wait's branches is polled first is
        // drawn at random.
        for _ in 0..16 {
            let idle = Idle::new();
            let mut waiting = Box::pin(idle.idle_for(LIMIT));
            // Polled once, then left: its caller is busy with the ask.
            assert!(futures_poll_once(waiting.as_mut()).await.is_pending());
            let asking = idle.asking();
            tokio::time::sleep(LIMIT * 3).await;
            // Polled while the person is still asked, past its first
            // deadline.
            assert!(futures_poll_once(waiting.as_mut()).await.is_pending());
            drop(asking);
            let answered = Instant::now();
            waiting.await;
            assert_eq!(answered.elapsed(), LIMIT);
        }
    }

    /// Poll `future` once.
    async fn futures_poll_once<F: std::future::Future + Unpin>(
        future: F,
    ) -> std::task::Poll<F::Output> {
        let mut future = future;
        std::future::poll_fn(|cx| std::task::Poll::Ready(std::pin::Pin::new(&mut future).poll(cx)))
            .await
    }
}
