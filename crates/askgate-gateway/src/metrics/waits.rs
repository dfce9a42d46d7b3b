//! How long asks wait for a person (`askgate_ask_wait_seconds`): each ask
//! this process parked, from its parking to its settlement, by how it
//! settled (`answered`, `declined`, `cancelled`, `skipped`, `expired`).
//!
//! The gateway hears that an ask it parked settled in one of two ways:
//! the store's news (an ask settled in this process — the inbox page
//! beside it, the expiry sweep, the caller's withdrawal — or, on
//! PostgreSQL, in any process), or the decision of its call's retry, which
//! names the ask (on SQLite, an answer given in another process —
//! `askgate asks answer`, `askgate inbox` — is heard only so). Both end in
//! [`Waits::settled`], which observes each ask once: whichever takes it
//! first from the asks parked here.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use askgate_store::{AskRow, AskStatus};
use jiff::Timestamp;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// How many asks parked here are remembered at most, the newest: one
/// parked before that many more is not observed (nor kept in memory)
/// when it settles.
const MOST_REMEMBERED: usize = 16_384;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

/// The histogram, and the asks parked here that have not settled yet.
pub(super) struct Waits {
    histogram: Family<OutcomeLabels, Histogram>,
    parked: Mutex<Parked>,
}

/// Asks parked here, unsettled as far as this process knows.
#[derive(Default)]
struct Parked {
    /// When each was parked.
    at: HashMap<Arc<str>, Timestamp>,
    /// Their ids, oldest first (one settled meanwhile stays until its
    /// turn comes to leave).
    order: VecDeque<Arc<str>>,
}

impl Waits {
    /// The histogram, registered in `registry`: buckets from 1 s,
    /// doubling, to about a day and a half.
    pub(super) fn new(registry: &mut Registry) -> Waits {
        let histogram = Family::<OutcomeLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(1.0, 2.0, 18))
        });
        registry.register(
            "ask_wait_seconds",
            "How long asks this gateway parked waited for a person, from parking to settling, \
             by outcome (answered, declined, cancelled, skipped, expired)",
            histogram.clone(),
        );
        Waits {
            histogram,
            parked: Mutex::new(Parked::default()),
        }
    }

    /// The ask `id` was parked here at `at`.
    pub(super) fn parked(&self, id: Arc<str>, at: Timestamp) {
        let mut parked = self.lock();
        if parked.at.insert(Arc::clone(&id), at).is_none() {
            parked.order.push_back(id);
        }
        while parked.order.len() > MOST_REMEMBERED {
            if let Some(oldest) = parked.order.pop_front() {
                parked.at.remove(&oldest);
            }
        }
    }

    /// Whether `id` is an ask parked here whose settling is not observed
    /// yet.
    pub(super) fn is_parked_here(&self, id: &str) -> bool {
        self.lock().at.contains_key(id)
    }

    /// Observe `row`'s wait, once settled, if it was parked here and not
    /// observed yet.
    pub(super) fn settled(&self, row: &AskRow) {
        if row.status == AskStatus::Pending {
            return;
        }
        if self.lock().at.remove(row.ask.id.as_str()).is_none() {
            return;
        }
        let settled_at = row.settled_at.unwrap_or_else(Timestamp::now);
        let waited = settled_at
            .duration_since(row.ask.created_at)
            .as_secs_f64()
            .max(0.0);
        let outcome = row.status.as_str();
        self.histogram
            .get_or_create(&OutcomeLabels {
                outcome: outcome.to_owned(),
            })
            .observe(waited);
        tracing::debug!(ask = %row.ask.id, outcome, waited, "an ask's wait for a person observed");
    }

    fn lock(&self) -> MutexGuard<'_, Parked> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use askgate_store::{AskRow, AskStatus, NewAsk};
    use jiff::{SignedDuration, Timestamp};
    use prometheus_client::encoding::text::encode;
    use prometheus_client::registry::Registry;

    use super::{MOST_REMEMBERED, Waits};

    fn row(id: &str, status: AskStatus, parked: Timestamp, waited: SignedDuration) -> AskRow {
        AskRow {
            ask: NewAsk {
                id: id.to_owned(),
                resume_key: format!("test:{id}"),
                call_key: None,
                principal: "alice".into(),
                request: serde_json::json!({}),
                server: Some("notes".into()),
                tool: Some("delete_all_notes".into()),
                risk: Some("destructive".into()),
                created_at: parked,
                expires_at: None,
                panel: None,
            },
            status,
            reply: None,
            outcome: None,
            answered_by: None,
            answered_via: None,
            settled_at: (status != AskStatus::Pending).then(|| parked + waited),
        }
    }

    fn exposition(registry: &Registry) -> String {
        let mut text = String::new();
        encode(&mut text, registry).expect("encodes");
        text
    }

    #[test]
    fn an_ask_parked_here_is_observed_once_by_how_it_settled() {
        let mut registry = Registry::with_prefix("askgate");
        let waits = Waits::new(&mut registry);
        let parked = Timestamp::UNIX_EPOCH;
        waits.parked(Arc::from("ask_1"), parked);
        let pending = row("ask_1", AskStatus::Pending, parked, SignedDuration::ZERO);
        waits.settled(&pending);
        assert!(waits.is_parked_here("ask_1"), "still waiting");
        let declined = row(
            "ask_1",
            AskStatus::Declined,
            parked,
            SignedDuration::from_secs(90),
        );
        // Heard twice (the news, then the retry): observed once.
        waits.settled(&declined);
        waits.settled(&declined);
        let text = exposition(&registry);
        assert!(
            text.contains(r#"askgate_ask_wait_seconds_count{outcome="declined"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"askgate_ask_wait_seconds_bucket{le="128.0",outcome="declined"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"askgate_ask_wait_seconds_bucket{le="64.0",outcome="declined"} 0"#),
            "{text}"
        );
    }

    #[test]
    fn an_ask_parked_elsewhere_is_not_observed() {
        let mut registry = Registry::with_prefix("askgate");
        let waits = Waits::new(&mut registry);
        let answered = row(
            "ask_2",
            AskStatus::Answered,
            Timestamp::UNIX_EPOCH,
            SignedDuration::from_secs(5),
        );
        waits.settled(&answered);
        let text = exposition(&registry);
        assert!(!text.contains("askgate_ask_wait_seconds_count"), "{text}");
    }

    #[test]
    fn only_the_newest_asks_parked_are_remembered() {
        let mut registry = Registry::with_prefix("askgate");
        let waits = Waits::new(&mut registry);
        for n in 0..=MOST_REMEMBERED {
            waits.parked(Arc::from(format!("ask_{n}")), Timestamp::UNIX_EPOCH);
        }
        assert!(!waits.is_parked_here("ask_0"), "the oldest was let go");
        assert!(waits.is_parked_here(&format!("ask_{MOST_REMEMBERED}")));
    }
}
