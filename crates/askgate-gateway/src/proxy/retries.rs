//! The truth for a retry (see the store's ledger `retries`): a call that
//! may have run is never sent again silently.
//!
//! - A retry whose sealed `requestState` was used already, or whose held
//!   call askgate no longer holds, is answered with what the ledger says of
//!   the call made in its request ([`Gateway::replayed`]): its recorded
//!   outcome, or that it may have run — never "start over" for a call that
//!   ran.
//! - Any other call above `read` that is the same as one that may have run
//!   within `retry_window` ([`Gateway::earlier_run`]) is that call's retry:
//!   the person's confirmation says so, and where no person would be asked
//!   it is not sent again (askgate-core's trust rule 4). Once told, a
//!   further call goes as any call.

use std::time::Duration;

use askgate_core::{Risk, may_have_run_note};
use askgate_store::{CallRow, CallState, Retried, Retry};
use jiff::Timestamp;
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use serde_json::Value as Json;

use super::pipeline::Target;
use super::{BEAT, Gateway};

/// How long after its last beat the process that sent a call is taken for
/// alive: a beat is due every [`BEAT`]; two of them, and room for a slow
/// write, before it counts as gone.
const ALIVE: Duration = Duration::from_secs(2 * BEAT.as_secs() + 2);

/// How long a retry waits for the records under way before it reads that
/// no call was made in its request.
const RECORDS_LAND: Duration = Duration::from_secs(2);

/// An earlier try of a call, which may have run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EarlierRun {
    /// Its ledger id.
    id: String,
    /// When it was sent.
    pub(crate) at: Timestamp,
}

/// What the ledger is asked of an earlier try of a call (see
/// [`Gateway::retry_of`]).
pub(crate) struct RetryAsked<'a> {
    target: &'a Target,
    principal: &'a str,
    /// The arguments' digest under the key in use.
    digest: String,
    /// Under the keys in use before it.
    earlier_digests: Vec<String>,
    /// The start of the retry window.
    pub(crate) since: Timestamp,
}

impl RetryAsked<'_> {
    /// The call, as the ledger's retry names it.
    pub(crate) fn retry(&self) -> Retry<'_> {
        Retry {
            principal: self.principal,
            server: &self.target.server,
            tool: &self.target.tool.name,
            arguments_digest: &self.digest,
            earlier_digests: &self.earlier_digests,
        }
    }
}

/// The error for a call whose earlier tries could not be read: not sent.
pub(crate) fn unread(target: &Target, e: &askgate_store::Error) -> ErrorData {
    ErrorData::internal_error(
        format!(
            "the ledger could not be read for an earlier try of the call to {} on {}: {e}; the call was not sent",
            target.tool.name, target.server
        ),
        None,
    )
}

impl Gateway {
    /// The earlier try of `target` by `principal` that may have run and
    /// whose retry was not told so yet, within `retry_window`: a call left
    /// `may_have_run`, or one `sent` by a process whose beats stopped. For
    /// a call `sent` by a process that beat lately, this waits until that
    /// process is due to beat again: beating, the call is its own, in
    /// flight, and `target` another call.
    ///
    /// # Errors
    /// The store failed: the call is not sent.
    pub(crate) async fn earlier_run(
        &self,
        target: &Target,
        principal: &str,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Option<EarlierRun>, ErrorData> {
        let Some(asked) = self.retry_of(target, principal) else {
            return Ok(None);
        };
        let found = self
            .store()
            .may_have_run(&asked.retry(), asked.since, &self.inner.settings.owner)
            .await
            .map_err(|e| unread(target, &e))?;
        self.earlier_found(target, &asked, found, cancelled).await
    }

    /// What the ledger is asked of an earlier try of `target` by
    /// `principal` ([`Gateway::earlier_run`]); `None` when none matters: a
    /// read runs again harmlessly, and a `retry_window` of zero looks for
    /// none.
    pub(crate) fn retry_of<'a>(
        &self,
        target: &'a Target,
        principal: &'a str,
    ) -> Option<RetryAsked<'a>> {
        let settings = &self.inner.settings;
        if target.risk <= Risk::Read || settings.retry_window.is_zero() {
            return None;
        }
        let window = jiff::SignedDuration::try_from(settings.retry_window)
            .unwrap_or(jiff::SignedDuration::MAX);
        // Under the key in use, or (a call sent before the last rotation)
        // one before it: one query.
        let mut digests = settings.ledger.digests(&target.arguments).into_iter();
        Some(RetryAsked {
            target,
            principal,
            digest: digests.next()?,
            earlier_digests: digests.collect(),
            since: self.now().checked_sub(window).unwrap_or(Timestamp::MIN),
        })
    }

    /// [`Gateway::earlier_run`] once the ledger answered `asked` with
    /// `found`: a call `sent` by a process that beat lately is waited on
    /// until that process is due to beat again.
    ///
    /// # Errors
    /// The store failed: the call is not sent.
    pub(crate) async fn earlier_found(
        &self,
        target: &Target,
        asked: &RetryAsked<'_>,
        found: Option<Retried>,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Option<EarlierRun>, ErrorData> {
        let Some(found) = found else {
            return Ok(None);
        };
        let (store, owner) = (self.store(), &self.inner.settings.owner);
        let retry = asked.retry();
        let since = asked.since;
        let unread = |e: askgate_store::Error| unread(target, &e);
        let beat = found
            .owner_beat
            .filter(|_| found.call.state == CallState::Sent);
        if let Some(beat) = beat
            && let Some(wait) = until_due(beat, self.now())
        {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                // Cancelled, or the gateway stops: nothing is sent.
                () = cancelled => return Ok(None),
            }
            let again = store
                .may_have_run(&retry, since, owner)
                .await
                .map_err(unread)?;
            let Some(again) = again else {
                // It ended meanwhile: its process lives.
                return Ok(None);
            };
            // The same call, and its process did not beat again: it died.
            // Another: in doubt only if nothing beats for it.
            let beat_since = if again.call.call.id == found.call.call.id {
                again.owner_beat.is_some_and(|again| again > beat)
            } else {
                again.owner_beat.is_some()
            };
            if again.call.state == CallState::Sent && beat_since {
                // Its process beats: the call is in flight there.
                return Ok(None);
            }
            return Ok(Some(self.in_doubt(target, again.call)));
        }
        Ok(Some(self.in_doubt(target, found.call)))
    }

    /// `call`, in doubt, as the earlier run of `target`.
    fn in_doubt(&self, target: &Target, call: CallRow) -> EarlierRun {
        tracing::info!(
            call = %call.call.id,
            server = %target.server,
            tool = %target.tool.name,
            "the same call may already have run (it was sent and its answer never came); a person decides, or it is not sent again"
        );
        EarlierRun {
            at: sent_at(&call),
            id: call.call.id,
        }
    }

    /// The retry of `earlier` was told it may have run: a further call the
    /// same as it goes as any call.
    pub(crate) async fn told(&self, earlier: &EarlierRun) {
        if let Err(error) = self.store().tell_retry(&earlier.id, self.now()).await {
            tracing::warn!(call = %earlier.id, %error, "the ledger did not record that a retry was told its call may have run");
        }
    }

    /// The answer to a retry of `tool` whose sealed state was used already,
    /// or whose held call askgate no longer holds: what the ledger says of
    /// the call made in the client's `request`. Nothing is sent.
    ///
    /// # Errors
    /// `-32602` when no call was made in that request (nothing ran: the
    /// client starts over); `-32603` when the store failed.
    pub(crate) async fn replayed(
        &self,
        request: &str,
        tool: &str,
    ) -> Result<CallToolResponse, ErrorData> {
        let read = || async {
            self.store().call_of_request(request).await.map_err(|e| {
                ErrorData::internal_error(
                    format!("the ledger could not be read for the call to {tool} this retry is for: {e}; nothing was sent"),
                    None,
                )
            })
        };
        let mut row = read().await?;
        if row.is_none() {
            // A read is recorded as it ends, beside its answer: let the
            // records under way land first.
            let background = &self.inner.settings.background;
            let _ = tokio::time::timeout(RECORDS_LAND, background.idle()).await;
            row = read().await?;
        }
        let Some(row) = row else {
            return Err(ErrorData::invalid_params(
                format!(
                    "requestState was already used, and askgate's ledger has no call to {tool} sent in its request: call again without requestState to start over"
                ),
                None,
            ));
        };
        tracing::info!(call = %row.call.id, server = %row.call.server, tool = %row.call.tool, state = row.state.as_str(), "a retry of a call made already: answered from the ledger, not sent again");
        let at = |t: Option<Timestamp>| t.map_or_else(|| "an unknown time".to_owned(), stamp);
        let result = row.result.clone().unwrap_or(Json::Null);
        let (text, is_error) = match row.state {
            CallState::Answered => {
                if let Some(task) = result.get("task").and_then(Json::as_str) {
                    (
                        format!(
                            "This call to {tool} already ran: its server answered at {} with the task {task}. Follow that task (tasks/get); the call was not sent again.",
                            at(row.finished_at)
                        ),
                        false,
                    )
                } else {
                    let is_error = result.get("is_error").and_then(Json::as_bool) == Some(true);
                    (
                        format!(
                            "This call to {tool} already ran: its server answered at {}{}. askgate keeps no tool results, so that answer cannot be given again, and the call was not sent again. Do not call it again for its answer unless running it twice is harmless.",
                            at(row.finished_at),
                            if is_error {
                                " with an error result"
                            } else {
                                ""
                            }
                        ),
                        is_error,
                    )
                }
            }
            CallState::Failed if result.get("not_sent").is_some() => (
                format!(
                    "This call to {tool} was not sent ({}); it did not run. Call again without requestState to start over.",
                    result["not_sent"].as_str().unwrap_or("refused")
                ),
                true,
            ),
            CallState::Failed => (
                format!(
                    "This call to {tool} already ended at {} without an answer ({}). It was not sent again; whether it took effect upstream is not known.",
                    at(row.finished_at),
                    result
                        .get("failure")
                        .and_then(Json::as_str)
                        .unwrap_or("it failed")
                ),
                true,
            ),
            CallState::Cancelled => (
                format!(
                    "This call to {tool} was cancelled before it was sent; it did not run. Call again without requestState to start over."
                ),
                true,
            ),
            CallState::Prepared => (
                format!(
                    "This call to {tool} was never sent; it did not run. Call again without requestState to start over."
                ),
                true,
            ),
            CallState::Sent | CallState::MayHaveRun => {
                let running =
                    row.state == CallState::Sent && row.call.owner == self.inner.settings.owner;
                let note = if running {
                    format!(
                        "This call to {tool} is still running (sent at {}).",
                        at(row.sent_at)
                    )
                } else {
                    if let Err(error) = self.store().tell_retry(&row.call.id, self.now()).await {
                        tracing::warn!(call = %row.call.id, %error, "the ledger did not record that a retry was told its call may have run");
                    }
                    may_have_run_note(sent_at(&row))
                };
                (
                    format!(
                        "{note} It was not sent again. Check whether it took effect before going on; if it must run again, call it again without requestState."
                    ),
                    true,
                )
            }
        };
        let content = vec![ContentBlock::text(text)];
        Ok(if is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }
}

/// How long until a process that last beat at `beat` is due to beat
/// again, from `now`; `None` when it is overdue.
fn until_due(beat: Timestamp, now: Timestamp) -> Option<Duration> {
    let due = beat
        .checked_add(jiff::SignedDuration::try_from(ALIVE).ok()?)
        .ok()?;
    let left = now.duration_until(due);
    Duration::try_from(left).ok().filter(|left| !left.is_zero())
}

/// When `call` was sent (when it was prepared, if the ledger has no time).
fn sent_at(call: &CallRow) -> Timestamp {
    call.sent_at.unwrap_or(call.call.at)
}

/// `at` as the person and the model read it.
fn stamp(at: Timestamp) -> String {
    at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}
