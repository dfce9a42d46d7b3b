//! What came back from asking through the client, as the trust rules read
//! it: the confirmation's outcome as [`Heard`], a failure to ask as an
//! answer nobody saw, and a link (URL mode) sent and followed to the inbox.

use std::time::Duration;

use askgate_core::{Answered, Ask, CONFIRM_FIELD, Heard, Outcome, Provenance};
use askgate_store::AskRow;
use rmcp::model::ElicitationAction;
use serde_json::Value as Json;

use crate::ask::Unanswered;
use crate::input;
use crate::round::{Round, RoundError};

/// What sending the ask's link came to.
pub(super) enum Link {
    /// Multi round-trip: the link is this round's input request.
    Queued,
    /// The client declined or dismissed the link (or failed to show it),
    /// this fast: for the rules to read.
    Answered(Answered),
    /// The ask behind the link settled (the person answered it, or it was
    /// withdrawn): where the call stands is read again.
    Settled,
    /// The caller cancelled the call meanwhile.
    Cancelled,
}

/// What the confirmation's outcome says. A `confirm` the client did not
/// send (filled from its default) means nobody saw the prompt.
pub(super) fn heard(outcome: &Outcome) -> Heard {
    match outcome {
        Outcome::Accepted { values } => Heard::Accepted {
            confirm: values
                .get(CONFIRM_FIELD)
                .filter(|settled| settled.source != Provenance::Defaulted)
                .and_then(|settled| match settled.value.to_json() {
                    Json::Bool(ticked) => Some(ticked),
                    _ => None,
                }),
        },
        Outcome::Declined => Heard::Declined,
        Outcome::Cancelled => Heard::Cancelled,
        // `Outcome` may grow: what is not an answer above was not read.
        _ => Heard::GaveUp,
    }
}

/// Asking through the client failed: what the rules read of it (never a
/// person's answer).
pub(super) fn unanswered(why: &Unanswered) -> Answered {
    let heard = match why {
        Unanswered::TimedOut(after) => Heard::TimedOut(*after),
        other => Heard::Failed(other.to_string()),
    };
    Answered { heard, after: None }
}

impl Round {
    /// Send the parked ask `row`'s link to the client (URL mode) and follow
    /// it: on 2025-11-25, wait for the person's answer in the inbox; on
    /// 2026-07-28, queue the link and read the retry.
    ///
    /// # Errors
    /// A store failure, a malformed retry.
    pub(super) async fn ask_by_link(
        &mut self,
        key: &str,
        ask: &Ask,
        row: &AskRow,
    ) -> Result<Link, RoundError> {
        let Some(inbox) = self.rounds().inbox().cloned() else {
            return Ok(Link::Answered(unanswered(&Unanswered::NeedsUrlMode)));
        };
        let (parked, message) = self.link_to(&inbox, ask, row)?;
        if let Some(cx) = self.context().cloned() {
            let (result, took) = match self.send_link(&cx, &message, &parked).await {
                Ok(sent) => sent,
                Err(RoundError::Unanswered(Unanswered::RequestCancelled)) => {
                    return Ok(Link::Cancelled);
                }
                Err(RoundError::Unanswered(why)) => return Ok(Link::Answered(unanswered(&why))),
                Err(other) => return Err(other),
            };
            if result.action != ElicitationAction::Accept {
                return Ok(Link::Answered(declined(result.action, Some(took))));
            }
            return match self.await_link_answer(&cx, &row.ask.id).await {
                Ok(_) => Ok(Link::Settled),
                Err(RoundError::Unanswered(Unanswered::RequestCancelled)) => Ok(Link::Cancelled),
                Err(RoundError::Unanswered(why)) => Ok(Link::Answered(unanswered(&why))),
                Err(other) => Err(other),
            };
        }
        // Multi round-trip: the retry says whether the person went to the
        // link; what they answered there is in the store.
        if let Some(given) = self.take_answer(key) {
            let result =
                input::read_elicitation(&given).map_err(|source| RoundError::Malformed {
                    key: key.to_owned(),
                    source,
                })?;
            if result.action != ElicitationAction::Accept {
                return Ok(Link::Answered(declined(
                    result.action,
                    self.since_asked(key),
                )));
            }
            let now = self
                .rounds()
                .store()
                .ask(&row.ask.id)
                .await
                .map_err(RoundError::Store)?;
            if now.is_some_and(|now| now.status != askgate_store::AskStatus::Pending) {
                return Ok(Link::Settled);
            }
        }
        self.queue_link(key, &message, &parked)?;
        Ok(Link::Queued)
    }
}

/// A link the client declined or dismissed, `after` this long.
fn declined(action: ElicitationAction, after: Option<Duration>) -> Answered {
    let heard = match action {
        ElicitationAction::Decline => Heard::Declined,
        _ => Heard::Cancelled,
    };
    Answered { heard, after }
}
