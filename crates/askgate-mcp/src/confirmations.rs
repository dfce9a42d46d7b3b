//! How confirmations are asked and trusted: the settings every round of a
//! server reads (a leaf: the rounds hold them, the confirmation reads
//! them).

use std::collections::BTreeMap;
use std::time::Duration;

use askgate_core::{Risk, Trust};

/// How confirmations are asked and trusted, for every request of a server
/// (see [`Rounds::with_confirmations`](crate::Rounds::with_confirmations)). The defaults: only a person
/// approves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmations {
    /// The highest risk at which the caller's `confirm: true` stands in for
    /// a person, when the client can show no ask at all; `None` (the
    /// default): never.
    pub caller_confirm: Option<Risk>,
    /// An answer from the client faster than this after the ask was sent
    /// was not read by a person: the ask moves to the inbox (default 250
    /// ms).
    pub min_answer: Duration,
    /// [`Confirmations::min_answer`] for clients by their name
    /// (`clientInfo.name`), instead of the default.
    pub min_answer_by_client: BTreeMap<String, Duration>,
    /// How long a call whose ask waits in the inbox waits for the answer
    /// before it returns saying so (default 0: at once). While it waits the
    /// client's request is kept alive with progress notifications, when it
    /// sent a progress token.
    pub inbox_wait: Duration,
    /// How often progress is sent while a call waits for the inbox
    /// (default 10 s).
    pub progress_every: Duration,
    /// How long a confirmation ask waits for a person — and a person's no
    /// to it stands for the same call (default 24 hours).
    pub ask_lifetime: Duration,
    /// How many asks of one principal may wait for a person at once
    /// (default [`Confirmations::MOST_PENDING`]); past it a call that needs
    /// a new ask is refused, saying so, and nothing runs. It bounds what a
    /// runaway agent can pile on the people's inbox. On several replicas
    /// two asks parked at the same instant may both pass the count.
    pub most_pending_per_principal: usize,
}

impl Default for Confirmations {
    fn default() -> Confirmations {
        Confirmations {
            caller_confirm: None,
            min_answer: Trust::DEFAULT.min_answer,
            min_answer_by_client: BTreeMap::new(),
            inbox_wait: Duration::ZERO,
            progress_every: Duration::from_secs(10),
            ask_lifetime: Duration::from_secs(24 * 60 * 60),
            most_pending_per_principal: Confirmations::MOST_PENDING,
        }
    }
}

impl Confirmations {
    /// How many asks of one principal may wait at once, by default.
    pub const MOST_PENDING: usize = 256;

    /// The shortest answer a person gives through the client named
    /// `client`.
    pub fn min_answer_for(&self, client: Option<&str>) -> Duration {
        client
            .and_then(|name| self.min_answer_by_client.get(name))
            .copied()
            .unwrap_or(self.min_answer)
    }
}
