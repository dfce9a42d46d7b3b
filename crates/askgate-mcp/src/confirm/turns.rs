//! One turn of a confirmation: what the trust rules ruled, carried out —
//! the decision made, the person asked (a form, a link), the inbox waited
//! on — and whether the rule must look again at what came back.

use askgate_core::{Answered, Ask, Call, Channel, Earlier, Verdict, Waiting, withdrawn};
use askgate_store::{AskRow, AskStatus, SettleError, Settlement};

use super::asking::{self, Link};
use super::standing::{Standing, Waited};
use super::{Answerer, Decided};
use crate::ask::Unanswered;
use crate::confirmations::Confirmations;
use crate::round::{Round, RoundError};

/// What the decision knows so far: where the call stands in the store, and
/// what came back from asking through the client this request.
pub(super) struct Found {
    /// What earlier tries of the call left.
    pub(super) standing: Standing,
    /// What the client brought back, if it was asked.
    pub(super) answered: Option<Answered>,
}

/// What one turn came to.
pub(super) enum Turn {
    /// Decided (not yet audited).
    Decided(Box<Decided>),
    /// The person's answer is awaited: end the round.
    Awaited,
    /// The facts changed: rule again.
    Again,
    /// The client's answer was counted as its person's, toward the call's
    /// approval rule: rule again, without asking the client again.
    Counted,
}

impl Round {
    /// The rule let the call through: by an inbox approval (used now, for
    /// this one call), the person behind the client, or nobody.
    pub(super) async fn proceed(
        &self,
        key: &str,
        call: &Call<'_>,
        ask: &Ask,
        verdict: Verdict,
        found: &mut Found,
    ) -> Result<Turn, RoundError> {
        if found.answered.is_some()
            && let Some(person) = self.client_person()
        {
            return self.count_client(key, ask, found, &person, true).await;
        }
        let standing = &found.standing;
        let answerer = match (&found.answered, &standing.earlier, standing.row.clone()) {
            (None, Earlier::Approved { .. }, Some(row)) => {
                // One approval lets one call through.
                if !self.claim(&row.ask.id).await? {
                    found.standing = self.standing(key, ask).await?;
                    return Ok(Turn::Again);
                }
                Answerer::Inbox(row)
            }
            (Some(_), _, _) => Answerer::Client(None),
            _ => Answerer::Nobody,
        };
        Ok(self.turn_decided(key, call, verdict, answerer))
    }

    /// The rule blocked the call: a person's no given through the client is
    /// remembered for the same call; one given in the inbox is named.
    pub(super) async fn block(
        &self,
        key: &str,
        call: &Call<'_>,
        ask: &Ask,
        verdict: Verdict,
        found: &mut Found,
    ) -> Result<Turn, RoundError> {
        if found.answered.is_some()
            && verdict.final_no
            && let Some(person) = self.client_person()
        {
            return self.count_client(key, ask, found, &person, false).await;
        }
        let standing = &found.standing;
        let answerer = match (&found.answered, &standing.earlier, standing.row.clone()) {
            (Some(given), _, _) if verdict.final_no => {
                match self.remember_no(key, ask, standing, given).await? {
                    Some(row) => Answerer::Client(Some(row)),
                    // Answered in the inbox meanwhile: that stands.
                    None => {
                        found.standing = self.standing(key, ask).await?;
                        found.answered = None;
                        return Ok(Turn::Again);
                    }
                }
            }
            (None, Earlier::Refused { .. }, Some(row)) => Answerer::Inbox(row),
            _ => Answerer::Nobody,
        };
        Ok(self.turn_decided(key, call, verdict, answerer))
    }

    /// Ask the person through `channel`: the client's form, or a link to
    /// the inbox (URL mode, the ask parked first); keep what came back for
    /// the rule to read.
    pub(super) async fn ask_on(
        &mut self,
        channel: Channel,
        key: &str,
        call: &Call<'_>,
        ask: &Ask,
        found: &mut Found,
    ) -> Result<Turn, RoundError> {
        let asked = match channel {
            Channel::Form => self.ask_timed(key, ask.clone()).await,
            Channel::Url => {
                let row = self.pending_or_park(key, ask, &mut found.standing).await?;
                return match self.ask_by_link(key, ask, &row).await? {
                    Link::Queued => Ok(Turn::Awaited),
                    Link::Answered(given) => {
                        found.answered = Some(given);
                        Ok(Turn::Again)
                    }
                    Link::Settled => self.settled_meanwhile(key, ask, found).await,
                    Link::Cancelled => self.withdrawn_turn(key, call, found).await,
                };
            }
        };
        match asked {
            Ok(None) => Ok(Turn::Awaited),
            Ok(Some((outcome, after))) => {
                found.answered = Some(Answered {
                    heard: asking::heard(&outcome),
                    after,
                });
                Ok(Turn::Again)
            }
            Err(RoundError::Unanswered(Unanswered::RequestCancelled)) => {
                self.withdrawn_turn(key, call, found).await
            }
            Err(RoundError::Unanswered(unanswered)) => {
                found.answered = Some(asking::unanswered(&unanswered));
                Ok(Turn::Again)
            }
            Err(other) => Err(other),
        }
    }

    /// The parked ask settled meanwhile: decide again from where the call
    /// stands now — read again, so that an ask withdrawn by another try
    /// (its question changed) is not taken for this one's answer.
    async fn settled_meanwhile(
        &self,
        key: &str,
        ask: &Ask,
        found: &mut Found,
    ) -> Result<Turn, RoundError> {
        found.standing = self.standing(key, ask).await?;
        found.answered = None;
        Ok(Turn::Again)
    }

    /// The caller cancelled the call while its ask waited, before the call
    /// was sent: its pending ask is withdrawn (settled `cancelled` by the
    /// caller, never read as a person's no).
    async fn withdrawn_turn(
        &self,
        key: &str,
        call: &Call<'_>,
        found: &Found,
    ) -> Result<Turn, RoundError> {
        let answerer = match self.withdraw_pending(&found.standing).await? {
            Some(row) => Answerer::Parked(row),
            None => Answerer::Nobody,
        };
        tracing::info!(
            server = call.server,
            tool = call.tool,
            "the caller cancelled the call before it was sent; not sent"
        );
        Ok(self.turn_decided(key, call, withdrawn(call), answerer))
    }

    /// Park the ask (or find it parked) and wait for the inbox as long as
    /// the settings say; still unanswered, the call is decided as waiting.
    pub(super) async fn wait(
        &self,
        key: &str,
        call: &Call<'_>,
        ask: &Ask,
        waiting: &Waiting,
        settings: &Confirmations,
        found: &mut Found,
    ) -> Result<Turn, RoundError> {
        let row = self.pending_or_park(key, ask, &mut found.standing).await?;
        match self.wait_in_inbox(&row, settings).await? {
            Waited::Settled => self.settled_meanwhile(key, ask, found).await,
            Waited::Cancelled => self.withdrawn_turn(key, call, found).await,
            Waited::Still => {
                let place = self.page_of(&row);
                let name = self.binding().name.clone();
                let mut verdict = waiting.verdict(call, &place, &name);
                if let Some(needed) = self.approvals_needed(&row).await? {
                    let s = if needed == 1 { "" } else { "s" };
                    verdict.for_model.push_str(&format!(
                        " Its approval rule needs {needed} more approval{s} from the people it names before it runs."
                    ));
                }
                Ok(self.turn_decided(key, call, verdict, Answerer::Parked(row)))
            }
        }
    }

    /// How many more acceptances the parked ask `row` waits for, when a
    /// panel decides it (never who: the model is not told names).
    async fn approvals_needed(&self, row: &AskRow) -> Result<Option<u16>, RoundError> {
        let Ok(Some(panel)) = crate::approvals::panel_of(row) else {
            return Ok(None);
        };
        let answers = self
            .rounds()
            .store()
            .answers(&row.ask.id)
            .await
            .map_err(RoundError::Store)?;
        let now = self.rounds().now();
        Ok(
            match crate::approvals::progress_of(&panel, row, &answers, now) {
                askgate_core::approval::Progress::Waiting { accepts_needed, .. } => {
                    Some(accepts_needed)
                }
                _ => None,
            },
        )
    }

    /// The person the client's answer counts as, when the call is under an
    /// approval rule that lets it count.
    fn client_person(&self) -> Option<String> {
        self.approving()
            .and_then(|approving| approving.client_person())
            .map(str::to_owned)
    }

    /// The client's answer (`accepted` or not), counted as `person`'s
    /// toward the call's approval rule: its ask parked if it was not, the
    /// answer recorded (a second one of the same person, or one to an ask
    /// settled meanwhile, changes nothing), and where the call stands read
    /// again.
    async fn count_client(
        &self,
        key: &str,
        ask: &Ask,
        found: &mut Found,
        person: &str,
        accepted: bool,
    ) -> Result<Turn, RoundError> {
        let row = self.pending_or_park(key, ask, &mut found.standing).await?;
        let (status, reply) = if accepted {
            let content = serde_json::json!({askgate_core::CONFIRM_FIELD: true});
            (
                AskStatus::Answered,
                serde_json::json!({"action": "accept", "content": content}),
            )
        } else {
            (
                AskStatus::Declined,
                serde_json::json!({"action": "decline"}),
            )
        };
        let settlement = Settlement {
            status,
            reply,
            outcome: serde_json::Value::Null,
            answered_by: Some(person.to_owned()),
            answered_via: "mcp".to_owned(),
        };
        let store = self.rounds().store();
        let now = self.rounds().now();
        match crate::approvals::settle_as_person(store, &row, &settlement, person, &[], now).await {
            Ok(row) => {
                tracing::info!(ask = %row.ask.id, person, status = row.status.as_str(), "the client's answer counted toward the call's approval rule");
            }
            Err(SettleError::Store(error)) => return Err(RoundError::Store(error)),
            Err(refused) => {
                tracing::info!(ask = %row.ask.id, person, %refused, "the client's answer did not count");
            }
        }
        found.standing = self.standing(key, ask).await?;
        found.answered = None;
        Ok(Turn::Counted)
    }

    fn turn_decided(&self, key: &str, call: &Call<'_>, verdict: Verdict, by: Answerer) -> Turn {
        Turn::Decided(Box::new(self.decided(key, call, verdict, by)))
    }
}
