//! How an upstream call's end is told: to the ledger, to the metrics and
//! to the client — spelled once, for the rmcp path and the express lane
//! alike.
//!
//! A call above `read` (or one a person decided) is durable before it is
//! sent: its end is queued in the store's next batch ([`End::Queue`]). A
//! `read` that proceeds without a person is sent first and recorded when
//! it ends, decision and all, in one write ([`End::Record`]); if it never
//! ends — the client went away, the gateway stopped — it is recorded as
//! `sent` when its record is dropped, so no path loses it.

use std::sync::Arc;

use askgate_mcp::Clock;
use askgate_store::{AuditEntry, CallEnd, CallOutcome, EndedCall, LedgerError, NewCall, Store};
use jiff::Timestamp;
use rmcp::ErrorData;
use rmcp::model::ErrorCode;
use serde_json::{Value as Json, json};

use super::background::Background;
use super::metrics::Metrics;

/// How an upstream call ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ended {
    /// Its server answered (an error result is an answer).
    Answered {
        /// Whether the result says `isError`.
        is_error: bool,
        /// How many content blocks it has.
        blocks: usize,
    },
    /// The transport or the upstream failed; why, for the client.
    Failed(String),
    /// Its server answered with a JSON-RPC error: the client gets it as
    /// the server gave it (code, message, data), as it would directly.
    Refused(ErrorData),
    /// Its server asked for input that could not be had; why.
    InputNotGiven(String),
    /// Its server kept asking for input, past the rounds askgate allows.
    KeptAsking,
    /// Its server answered with a task (`CreateTaskResult`), which runs on
    /// upstream: the client follows it (`tasks/get`) there, through the
    /// gateway; the task's id.
    Task(String),
    /// It was never sent; why: the replay contract's refusal.
    NotSent(String),
    /// Its caller cancelled it before it was sent: it never ran.
    Cancelled,
    /// Its server's connection had closed before it was sent: it never
    /// left the gateway.
    Unreachable,
}

/// Why a call the caller cancelled was not sent, as the ledger says it.
const CANCELLED: &str = "cancelled by the caller";

/// Why a call its client cancelled once it was sent ended with no answer
/// ([`Ended::Failed`]: it may have run), on every path.
pub(crate) const CANCELLED_WHILE_RUNNING: &str =
    "its client cancelled it while its server worked on it";

/// What the gateway logs (at info) of such a call, on every path: its
/// server was told.
pub(crate) const CANCELLED_WHILE_RUNNING_LOG: &str =
    "cancelled by its client while its server worked on it; its server was told";

impl Ended {
    /// Whether the server answered.
    pub(crate) fn answered(&self) -> bool {
        matches!(self, Ended::Answered { .. } | Ended::Task(_))
    }

    /// How the ledger says it ended.
    pub(crate) fn ledger_outcome(&self) -> CallOutcome {
        match self {
            Ended::Answered { .. } | Ended::Task(_) => CallOutcome::Answered,
            Ended::Cancelled => CallOutcome::Cancelled,
            // Sent, and no answer: it may have run.
            Ended::Failed(_) => CallOutcome::Unanswered,
            _ => CallOutcome::Failed,
        }
    }

    /// The `outcome` label of `askgate_upstream_calls_total`.
    pub(crate) fn outcome(&self) -> &'static str {
        match self {
            Ended::Answered { .. } => "answered",
            Ended::Task(_) => "task",
            Ended::NotSent(_) | Ended::Cancelled | Ended::Unreachable => "not_sent",
            Ended::Failed(_) | Ended::Refused(_) | Ended::InputNotGiven(_) | Ended::KeptAsking => {
                "failed"
            }
        }
    }

    /// What the ledger keeps of the end: never a value the call carried.
    pub(crate) fn summary(&self) -> Json {
        match self {
            Ended::Answered { is_error, blocks } => json!({"is_error": is_error, "blocks": blocks}),
            Ended::Failed(_) => json!({"failure": "transport or upstream error"}),
            // The code only: the message may echo the arguments.
            Ended::Refused(error) => {
                json!({"failure": "the upstream answered with an error", "code": error.code.0})
            }
            Ended::InputNotGiven(_) => {
                json!({"failure": "an input its server asked for was not given"})
            }
            Ended::KeptAsking => json!({"failure": "the server kept asking for input"}),
            Ended::Task(task) => json!({"task": task}),
            Ended::NotSent(why) => json!({"not_sent": why}),
            Ended::Cancelled => json!({"not_sent": CANCELLED}),
            Ended::Unreachable => json!({"not_sent": crate::upstream::UNREACHABLE}),
        }
    }

    /// The error the client gets for a call of `tool` on `server` that
    /// ended so; `None` when its server answered.
    pub(crate) fn client_error(&self, server: &str, tool: &str) -> Option<ErrorData> {
        Some(match self {
            Ended::Answered { .. } | Ended::Task(_) => return None,
            Ended::Cancelled => ErrorData::invalid_request(
                format!("the call to {tool} on {server} was cancelled before it was sent"),
                None,
            ),
            Ended::Failed(why) => ErrorData::internal_error(
                format!(
                    "{}; it was sent and no answer came back, so it may have run",
                    failed_on(server, tool, why)
                ),
                None,
            ),
            Ended::Refused(error) => error.clone(),
            Ended::Unreachable => ErrorData::internal_error(
                failed_on(server, tool, crate::upstream::UNREACHABLE),
                None,
            ),
            Ended::InputNotGiven(why) => ErrorData::invalid_request(
                format!(
                    "{server} asked for input to run {tool}, and askgate could not get it: {why}; the call did not complete"
                ),
                None,
            ),
            Ended::KeptAsking => ErrorData::internal_error(
                format!(
                    "{server} kept asking for input to run {tool}, past {} rounds; askgate stopped",
                    askgate_mcp::client::MAX_ROUNDS
                ),
                None,
            ),
            Ended::NotSent(reason) => ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "ERR_MCP_REPLAY_UNAVAILABLE ({reason}): the call to {tool} on {server} could not be watched, so it was not sent"
                ),
                Some(
                    json!({"code": "ERR_MCP_REPLAY_UNAVAILABLE", "reason": reason,
                            "server": server, "tool": tool, "sent": false}),
                ),
            ),
        })
    }
}

/// The client's text for a call of `tool` that `server` failed on.
pub(crate) fn failed_on(server: &str, tool: &str, why: impl std::fmt::Display) -> String {
    format!("{server} failed on {tool}: {why}")
}

/// An upstream call on its way: its ledger id, and how its end is told
/// (once, by [`Ending::ended`]; dropped unended, a read is recorded as
/// `sent`).
pub(crate) struct Ending {
    clock: Arc<dyn Clock>,
    id: String,
    server: String,
    metrics: Metrics,
    background: Background,
    end: Option<End>,
    started: tokio::time::Instant,
}

impl Ending {
    /// Call `id` to `server`, sent now, its end recorded by `end` and
    /// dated on `clock`.
    pub(crate) fn new(
        clock: Arc<dyn Clock>,
        id: String,
        server: String,
        metrics: Metrics,
        background: Background,
        end: End,
    ) -> Ending {
        Ending {
            clock,
            id,
            server,
            metrics,
            background,
            end: Some(end),
            started: tokio::time::Instant::now(),
        }
    }

    /// The ledger's id of the call.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The name of the upstream it was sent to.
    pub(crate) fn server(&self) -> &str {
        &self.server
    }

    /// The call ended so: count it and record its end without waiting for
    /// the store. Only the first end counts.
    pub(crate) fn ended(&mut self, ended: &Ended) {
        let Some(end) = self.end.take() else {
            return;
        };
        self.metrics
            .call(&self.server, ended.outcome(), self.started.elapsed());
        let at = self.clock.now();
        end.finish(&self.background, &self.id, ended, at);
    }
}

/// How the end of a call reaches the ledger.
pub(crate) enum End {
    /// Its record is durable: queue the end in the store's next batch.
    Queue(Store),
    /// Nothing is recorded yet (a read): record the call as it ended, with
    /// its decision, in one write.
    Record(Box<Unrecorded>),
}

impl End {
    /// A read's record, written when it ends: `entry` and `call`, whose
    /// marker is `marker`.
    pub(crate) fn unrecorded(
        store: &Store,
        background: &Background,
        entry: AuditEntry,
        call: NewCall,
        marker: String,
    ) -> End {
        End::Record(Box::new(Unrecorded {
            store: store.clone(),
            background: background.clone(),
            unwritten: Some((entry, call)),
            marker,
        }))
    }

    /// Record that call `id` ended so at `at`, without waiting for it.
    fn finish(self, background: &Background, id: &str, ended: &Ended, at: Timestamp) {
        let (outcome, result) = (ended.ledger_outcome(), ended.summary());
        match self {
            End::Queue(store) => {
                let finishing = store.queue_finish_call(id, outcome, &result, at);
                let id = id.to_owned();
                background.spawn(async move {
                    let mut outcome_of = finishing.await;
                    let mut backoff = askgate_store::Backoff::new();
                    // The store is down: the end is written once it is back.
                    while let Err(LedgerError::Store(error)) = &outcome_of
                        && error.is_outage()
                    {
                        tracing::warn!(call = %id, %error, "the ledger is unreachable; the end of the call is written once it is back");
                        tokio::time::sleep(backoff.next_wait()).await;
                        outcome_of = store.queue_finish_call(&id, outcome, &result, at).await;
                    }
                    match outcome_of {
                        Ok(_) => {}
                        // Written by an attempt whose answer was lost.
                        Err(LedgerError::Illegal { state, .. }) if state == outcome.state().as_str() => {}
                        Err(error) => {
                            tracing::warn!(call = %id, %error, "the ledger did not record the end of a call");
                        }
                    }
                });
            }
            End::Record(unrecorded) => unrecorded.ended(outcome, result, at),
        }
    }
}

/// A read call sent before its audit entry and ledger record were written:
/// they are written when it ends, in one write — or, if the call is
/// dropped before it ends (the client went away), as `sent`.
pub(crate) struct Unrecorded {
    store: Store,
    background: Background,
    /// Its audit entry and ledger call; `None` once handed to the write.
    unwritten: Option<(AuditEntry, NewCall)>,
    marker: String,
}

impl Unrecorded {
    fn ended(mut self, outcome: CallOutcome, result: Json, at: Timestamp) {
        self.write(Some(CallEnd {
            outcome,
            result,
            at,
        }));
    }

    fn write(&mut self, end: Option<CallEnd>) {
        let Some((entry, call)) = self.unwritten.take() else {
            return;
        };
        let marker = std::mem::take(&mut self.marker);
        if let Some(end) = end {
            let sent_at = call.at;
            let ended = EndedCall {
                entry,
                call,
                marker,
                sent_at,
                end,
            };
            self.background.record_ended(&self.store, ended);
            return;
        }
        let store = self.store.clone();
        self.background.spawn(async move {
            if let Err(error) = store.record_sent_call(&entry, &call, &marker, call.at).await {
                tracing::warn!(call = %call.id, %error, "the audit entry and ledger record of a read call were not written");
            }
        });
    }
}

/// Dropped unended (the client went away, the gateway stopped): the read
/// is recorded as `sent` — it may have run.
impl Drop for Unrecorded {
    fn drop(&mut self) {
        self.write(None);
    }
}

#[cfg(test)]
mod tests {
    use super::Ended;

    #[test]
    fn every_end_is_labelled_for_the_metrics_and_the_ledger_without_values() {
        let answered = Ended::Answered {
            is_error: true,
            blocks: 2,
        };
        assert!(answered.answered());
        assert_eq!(answered.outcome(), "answered");
        assert_eq!(answered.summary()["blocks"], 2);
        assert!(answered.client_error("s", "t").is_none());
        let failed = Ended::Failed("connection reset with secret=hunter2".into());
        assert_eq!(failed.outcome(), "failed");
        assert!(!failed.summary().to_string().contains("hunter2"));
        let refused = Ended::NotSent("request-unmatched".into());
        assert_eq!(refused.outcome(), "not_sent");
        let error = refused.client_error("notes", "delete").expect("an error");
        assert!(
            error
                .message
                .starts_with("ERR_MCP_REPLAY_UNAVAILABLE (request-unmatched)")
        );
        assert_eq!(error.data.expect("data")["sent"], false);
    }
}
