//! Where a call stands in the store: what earlier tries of the same call
//! (same principal, tool and arguments) left — an ask waiting, a person's
//! answer still in force — and the writes that change it: parking the
//! confirmation, remembering a person's no, withdrawing a cancelled call's
//! ask, waiting for the inbox's answer.

use std::time::Duration;

use askgate_core::{Answered, Ask, Earlier, Heard, Outcome, Said};
use askgate_store::{AskRow, AskStatus, Settlement};
use rmcp::model::ProgressNotificationParam;
use serde_json::{Value as Json, json};

use crate::confirmations::Confirmations;
use crate::round::{Round, RoundError};
use crate::stored::{StoredRequest, form_outcome};

/// Who withdraws a cancelled call's ask, as recorded in `answered_via`:
/// not a person, so never read as one's no.
pub(super) const WITHDRAWN_VIA: &str = "caller";

/// What the store knows of a call.
#[derive(Debug, Clone)]
pub(super) struct Standing {
    /// What earlier tries left, as the trust rules read it.
    pub(super) earlier: Earlier,
    /// The ask that says so (the newest of the call's asks that counts).
    pub(super) row: Option<AskRow>,
    /// How many asks the call has had: the next one's place.
    pub(super) asks: usize,
}

/// How a wait for the inbox ended.
pub(super) enum Waited {
    /// The ask settled (a person answered, or it was withdrawn): where the
    /// call stands is read again.
    Settled,
    /// The caller cancelled the call.
    Cancelled,
    /// Nobody answered within the wait.
    Still,
}

impl Round {
    /// Where the call `key` confirms stands, asked with `ask` now. A yes
    /// (or an ask still pending) given to another question — the ask
    /// changed since: a "may have run" note came up — does not count: the
    /// pending one is withdrawn, and the person is asked again. A no
    /// counts whatever it was asked with.
    ///
    /// # Errors
    /// A store failure.
    pub(super) async fn standing(&self, key: &str, ask: &Ask) -> Result<Standing, RoundError> {
        let asks = self.asks_of_call(key).await?;
        self.standing_of(asks, ask).await
    }

    /// [`Round::standing`] at the decision's first look: from the asks
    /// read ahead, if they were.
    pub(super) async fn first_standing(
        &mut self,
        key: &str,
        ask: &Ask,
    ) -> Result<Standing, RoundError> {
        let asks = self.asks_looked_ahead(key).await?;
        self.standing_of(asks, ask).await
    }

    /// Where a call stands, its asks (newest first) being `asks`.
    async fn standing_of(&self, asks: Vec<AskRow>, ask: &Ask) -> Result<Standing, RoundError> {
        let count = asks.len();
        let Some(mut newest) = asks.into_iter().next() else {
            return Ok(Standing {
                earlier: Earlier::Nothing,
                row: None,
                asks: 0,
            });
        };
        let now = self.rounds().now();
        if newest.status == AskStatus::Pending && !same_question(&newest, ask) {
            // It shows the person another question: withdrawn, so that the
            // answer comes to the one asked now. Answered meanwhile, that
            // answer is read as any (a no stands).
            let store = self.rounds().store();
            if let Some(settled) = store
                .expire(&newest.ask.id, now)
                .await
                .map_err(RoundError::Store)?
            {
                tracing::info!(ask = %newest.ask.id, status = settled.status.as_str(), "the call's question changed while its ask was pending; asked again");
                newest = settled;
            }
        }
        let live = newest.ask.expires_at.is_none_or(|at| at > now);
        if newest.status == AskStatus::Pending && !live {
            // Past its time: record it so, and ask anew.
            if let Err(error) = self.rounds().store().expire(&newest.ask.id, now).await {
                tracing::warn!(ask = %newest.ask.id, %error, "could not mark an ask expired");
            }
        }
        let earlier = if live {
            self.earlier_of(&newest, ask).await?
        } else {
            Earlier::Nothing
        };
        Ok(Standing {
            row: (earlier != Earlier::Nothing).then_some(newest),
            earlier,
            asks: count,
        })
    }

    /// What the newest ask of a call, still live, says of it, now that
    /// the call is asked with `ask`.
    async fn earlier_of(&self, row: &AskRow, ask: &Ask) -> Result<Earlier, RoundError> {
        if row.status == AskStatus::Pending {
            return Ok(Earlier::Pending);
        }
        if let Some(said) = person_said(row) {
            return Ok(Earlier::Refused {
                said,
                by: row.answered_by.clone(),
                via: via(row),
            });
        }
        if row.status != AskStatus::Answered || !same_question(row, ask) {
            return Ok(Earlier::Nothing);
        }
        // Approved: for one call only — not if another call used it.
        let used = self
            .rounds()
            .store()
            .token_consumed(&format!("inbox-used:{}", row.ask.id))
            .await
            .map_err(RoundError::Store)?;
        let mine = match self.request_id() {
            Some(rid) => self
                .rounds()
                .store()
                .token_consumed(&format!("inbox-used:{}:{rid}", row.ask.id))
                .await
                .map_err(RoundError::Store)?,
            None => false,
        };
        Ok(if used && !mine {
            Earlier::Nothing
        } else {
            Earlier::Approved {
                by: row.answered_by.clone(),
                via: via(row),
            }
        })
    }

    /// The call's pending ask, or the confirmation `ask` parked now (for
    /// the ask's lifetime) — kept in `standing`.
    ///
    /// # Errors
    /// A store failure.
    pub(super) async fn pending_or_park(
        &self,
        key: &str,
        ask: &Ask,
        standing: &mut Standing,
    ) -> Result<AskRow, RoundError> {
        if let Some(row) = &standing.row
            && row.status == AskStatus::Pending
        {
            return Ok(row.clone());
        }
        let lifetime = self
            .approving()
            .and_then(|approving| approving.expires)
            .unwrap_or(self.rounds().confirmations().ask_lifetime);
        let expires_at = self.rounds().now().checked_add(lifetime).ok();
        let row = self.park_new(key, standing.asks, ask, expires_at).await?;
        standing.asks += 1;
        standing.row = Some(row.clone());
        Ok(row)
    }

    /// Remember a person's no given through the client, so the same call is
    /// refused with it for the ask's lifetime: the call's pending ask (a
    /// link's) settles with it, or a settled ask is recorded. `None` when
    /// the pending ask was answered in the inbox meanwhile (that answer
    /// stands).
    ///
    /// # Errors
    /// A store failure.
    pub(super) async fn remember_no(
        &self,
        key: &str,
        ask: &Ask,
        standing: &Standing,
        answered: &Answered,
    ) -> Result<Option<AskRow>, RoundError> {
        let (status, reply) = match answered.heard {
            Heard::Declined => (AskStatus::Declined, json!({"action": "decline"})),
            Heard::Cancelled => (AskStatus::Cancelled, json!({"action": "cancel"})),
            _ => (
                AskStatus::Answered,
                json!({"action": "accept", "content": {askgate_core::CONFIRM_FIELD: false}}),
            ),
        };
        let row = match &standing.row {
            Some(row) if row.status == AskStatus::Pending => row.clone(),
            _ => {
                let mut standing = standing.clone();
                standing.row = None;
                self.pending_or_park(key, ask, &mut standing).await?
            }
        };
        let outcome = form_outcome(&row.ask.request, Some(&reply))
            .ok()
            .flatten()
            .map_or(Json::Null, |outcome: Outcome| {
                serde_json::to_value(outcome).unwrap_or(Json::Null)
            });
        let settlement = Settlement {
            status,
            reply,
            outcome,
            answered_by: Some(self.binding().principal.clone()),
            answered_via: "mcp".into(),
        };
        self.settle(&row, &settlement).await
    }

    /// Settle the ask `row` with `settlement`: the ask as settled, or
    /// `None` when it was answered (or expired) meanwhile.
    async fn settle(
        &self,
        row: &AskRow,
        settlement: &Settlement,
    ) -> Result<Option<AskRow>, RoundError> {
        match self
            .rounds()
            .store()
            .settle(&row.ask.id, settlement, self.rounds().now())
            .await
        {
            Ok(row) => Ok(Some(row)),
            Err(askgate_store::SettleError::Store(error)) => Err(RoundError::Store(error)),
            Err(_) => Ok(None),
        }
    }

    /// Withdraw the call's pending ask, if it has one: settled `cancelled`
    /// by the caller. The ask withdrawn, when there was one.
    ///
    /// # Errors
    /// A store failure.
    pub(super) async fn withdraw_pending(
        &self,
        standing: &Standing,
    ) -> Result<Option<AskRow>, RoundError> {
        let Some(row) = standing
            .row
            .as_ref()
            .filter(|row| row.status == AskStatus::Pending)
        else {
            return Ok(None);
        };
        let settlement = Settlement {
            status: AskStatus::Cancelled,
            reply: json!({"action": "cancel"}),
            outcome: serde_json::to_value(Outcome::Cancelled).unwrap_or(Json::Null),
            answered_by: None,
            answered_via: WITHDRAWN_VIA.into(),
        };
        // Answered meanwhile: the answer stands; this call still stops.
        Ok(Some(
            self.settle(row, &settlement)
                .await?
                .unwrap_or_else(|| row.clone()),
        ))
    }

    /// Wait up to `settings.inbox_wait` for a person to answer the parked
    /// ask `row`, keeping the client's request alive with progress
    /// notifications when it sent a progress token.
    ///
    /// # Errors
    /// A store failure.
    pub(super) async fn wait_in_inbox(
        &self,
        row: &AskRow,
        settings: &Confirmations,
    ) -> Result<Waited, RoundError> {
        let Some(cx) = self.waits() else {
            return Ok(Waited::Still);
        };
        if cx.ct.is_cancelled() {
            return Ok(Waited::Cancelled);
        }
        if settings.inbox_wait.is_zero() {
            return Ok(Waited::Still);
        }
        let token = cx.meta.get_progress_token();
        let deadline = tokio::time::Instant::now() + settings.inbox_wait;
        let mut beats = 0u32;
        loop {
            if let Some(token) = &token {
                beats += 1;
                let mut progress = ProgressNotificationParam::new(token.clone(), f64::from(beats));
                progress.message = Some(format!(
                    "waiting for a person to answer {} in the askgate inbox",
                    row.ask.id
                ));
                if let Err(error) = cx.peer.notify_progress(progress).await {
                    tracing::debug!(%error, "could not send progress while waiting for the inbox");
                }
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(Waited::Still);
            }
            let slice = left.min(settings.progress_every.max(Duration::from_millis(100)));
            tokio::select! {
                settled = self.rounds().store().wait_settled(&row.ask.id, slice) => {
                    if settled.map_err(RoundError::Store)?.is_some() {
                        return Ok(Waited::Settled);
                    }
                }
                () = cx.ct.cancelled() => return Ok(Waited::Cancelled),
            }
        }
    }
}

/// How a person said no in a settled ask, if they did: a decline, a
/// cancel (not a caller's withdrawal), an unticked confirmation.
fn person_said(row: &AskRow) -> Option<Said> {
    match row.status {
        AskStatus::Declined => Some(Said::Declined),
        AskStatus::Cancelled if row.answered_via.as_deref() != Some(WITHDRAWN_VIA) => {
            Some(Said::Cancelled)
        }
        AskStatus::Answered => {
            let outcome = form_outcome(&row.ask.request, row.reply.as_ref()).ok()??;
            let Outcome::Accepted { values } = outcome else {
                return None;
            };
            let ticked = values
                .get(askgate_core::CONFIRM_FIELD)
                .map(|settled| settled.value.to_json());
            (ticked == Some(Json::Bool(false))).then_some(Said::Unticked)
        }
        _ => None,
    }
}

fn via(row: &AskRow) -> String {
    row.answered_via.clone().unwrap_or_else(|| "inbox".into())
}

/// Whether the ask `row` put the question `ask` asks now.
fn same_question(row: &AskRow, ask: &Ask) -> bool {
    row.ask.request == StoredRequest::form(ask).to_json()
}
