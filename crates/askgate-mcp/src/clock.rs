//! The time askgate-mcp reads: from a [`Clock`] passed in, never from the
//! system directly, so expiry, lifetimes and leases can be tested — and
//! replayed — on a clock the test moves.
//!
//! Every type that reads the time holds a clock and defaults to
//! [`SystemClock`]: [`Rounds::with_clock`](crate::Rounds::with_clock) (sealed
//! state, parked asks, confirmations, the audit, and the [`Tasks`](crate::Tasks)
//! built on them) and
//! [`Parking::with_clock`](crate::client::Parking::with_clock). How long an
//! answer took within one request is measured on `tokio::time::Instant`
//! instead, so a test on paused tokio time drives it.
//!
//! ```
//! use std::sync::Arc;
//! use askgate_mcp::{Clock, SystemClock};
//!
//! let clock: Arc<dyn Clock> = Arc::new(SystemClock);
//! assert!(clock.now() > jiff::Timestamp::UNIX_EPOCH);
//! ```

use std::fmt;

use jiff::Timestamp;

/// Where askgate-mcp reads the current time.
///
/// Every type that reads the time holds a clock and defaults to
/// [`SystemClock`]: [`Rounds::with_clock`](crate::Rounds::with_clock)
/// (sealed state, parked asks, confirmations and how long a person's no
/// stands, the audit, and the [`Tasks`](crate::Tasks) built on those
/// rounds) and [`Parking::with_clock`](crate::client::Parking::with_clock).
/// How long an answer took within one request is measured on
/// `tokio::time::Instant` instead, so paused tokio time drives it.
///
/// Implement it to run askgate on a time of your choosing (a test's manual
/// clock, a simulation). It must be cheap: it is read on every ask and
/// every retry.
pub trait Clock: fmt::Debug + Send + Sync {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system's clock: [`Timestamp::now`]. The default everywhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}
