//! A clock that moves only when the test says: handed to the rounds, the
//! inbox or the webhooks in place of the system's, so a test lets an hour
//! pass in a line instead of waiting it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;

/// A clock a test sets and moves.
///
/// # Example
/// ```
/// use askgate_mcp::Clock;
/// use askgate_testkit::clock::ManualClock;
///
/// let start = jiff::Timestamp::from_second(1_800_000_000).unwrap();
/// let clock = ManualClock::starting_at(start);
/// clock.advance(std::time::Duration::from_secs(60));
/// assert_eq!(clock.now().as_second(), 1_800_000_060);
/// ```
#[derive(Debug)]
pub struct ManualClock(Mutex<Timestamp>);

impl ManualClock {
    /// A clock reading `start` until moved.
    pub fn starting_at(start: Timestamp) -> Arc<ManualClock> {
        Arc::new(ManualClock(Mutex::new(start)))
    }

    /// Move the clock on by `by`.
    ///
    /// # Panics
    /// When that passes the end of jiff's range.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().expect("the clock's lock");
        *now = now.checked_add(by).expect("within jiff's range");
    }
}

impl askgate_mcp::Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().expect("the clock's lock")
    }
}
