//! Asks the client cannot show: parked in the store, answered in the
//! inbox (web page or CLI).
//!
//! - **URL mode**, when the client offers only that, or when a field is a
//!   secret: the ask is parked and the client is sent the URL of its inbox
//!   page. On 2025-11-25 the request waits until the person answers there,
//!   then `notifications/elicitation/complete` tells the client; on
//!   2026-07-28 the URL goes out as an input request and the retry finds
//!   the answer in the store.
//! - **No elicitation at all**: the ask is parked and the call is answered
//!   with where to answer it (the inbox link and the CLI command) and how
//!   to retry — or blocked, per [`Fallback`].
//!
//! A retry of the same call (same principal, request, arguments and key)
//! finds the same parked ask, so an answer given in the inbox settles it —
//! once, and through the same checks as any answer.

use std::time::Duration;

use askgate_core::{Ask, Outcome};
use askgate_store::{AskRow, AskStatus, NewAsk, Settlement};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::Timestamp;
use rmcp::model::{
    CustomNotification, ElicitRequestParams, ElicitResult, ElicitationAction, ServerNotification,
};
use sha2::{Digest, Sha256};

use crate::Misuse;
use crate::approvals::Approving;
use crate::ask::Unanswered;
use crate::inbox::{Fallback, InboxLinks, LinkFailed, Parked};
use crate::input;
use crate::round::{Round, RoundError};
use crate::stored::{StoredRequest, form_outcome};

/// How long a URL-mode ask on a revision that sends requests waits for the
/// person before the request gives up (the ask stays parked).
const URL_WAIT: Duration = Duration::from_secs(3600);

/// How many of a call's asks are read to learn where it stands: the newest
/// decides, and a call is rarely asked more often than this in an ask's
/// lifetime.
pub(crate) const ASKS_OF_A_CALL: u32 = 16;

impl Round {
    /// The key of the call `key`'s asks are about: the same for every try
    /// of the same call (principal, request, arguments) — what the store
    /// finds earlier asks of the same call by.
    pub(crate) fn call_key(&self, key: &str) -> String {
        let binding = self.binding();
        let mut hash = Sha256::new();
        for part in [
            binding.principal.as_str(),
            binding.method.as_str(),
            binding.name.as_str(),
            binding.arguments.as_str(),
        ] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        format!("mcp:{}:{key}", URL_SAFE_NO_PAD.encode(hash.finalize()))
    }

    /// The asks of the call `key` is about, newest first.
    pub(crate) async fn asks_of_call(&self, key: &str) -> Result<Vec<AskRow>, RoundError> {
        self.rounds()
            .store()
            .asks_of_call(&self.call_key(key), ASKS_OF_A_CALL)
            .await
            .map_err(RoundError::Store)
    }

    /// Find the ask parked for `key` by an earlier try of this call, or
    /// park `ask` now. An inbox answer lets exactly one call through: once
    /// a call went on with it, the next identical call parks a new ask.
    async fn park_or_find(&self, key: &str, ask: &Ask) -> Result<AskRow, RoundError> {
        let asks = self.asks_of_call(key).await?;
        match asks.first() {
            Some(row) if row.status == AskStatus::Pending => return Ok(row.clone()),
            Some(row) if self.claim(&row.ask.id).await? => return Ok(row.clone()),
            // Answered, and already used by another call: ask anew.
            _ => {}
        }
        self.park_new(key, asks.len(), ask, None).await
    }

    /// Whether this request may go on with the settled ask `id`: the first
    /// request to claim it, and that request on every later round.
    pub(crate) async fn claim(&self, id: &str) -> Result<bool, RoundError> {
        let store = self.rounds().store();
        let forever = Timestamp::MAX;
        let now = self.rounds().now();
        let mine = self
            .request_id()
            .map(|rid| format!("inbox-used:{id}:{rid}"));
        if store
            .consume_token(&format!("inbox-used:{id}"), forever, now)
            .await
            .map_err(RoundError::Store)?
        {
            if let Some(mine) = &mine {
                store
                    .consume_token(mine, forever, now)
                    .await
                    .map_err(RoundError::Store)?;
            }
            return Ok(true);
        }
        match &mine {
            Some(mine) => store.token_consumed(mine).await.map_err(RoundError::Store),
            None => Ok(false),
        }
    }

    /// Park `ask` as the ask after the `earlier` asks of the call `key` is
    /// about, expiring at `expires_at` if ever. Another try of the same
    /// call parking at the same moment finds the same ask.
    pub(crate) async fn park_new(
        &self,
        key: &str,
        earlier: usize,
        ask: &Ask,
        expires_at: Option<Timestamp>,
    ) -> Result<AskRow, RoundError> {
        let store = self.rounds().store();
        let mut id = [0u8; 12];
        getrandom::fill(&mut id).map_err(RoundError::Random)?;
        let binding = self.binding();
        let (server, tool, risk) = match self.origin() {
            Some((server, tool, risk)) => (Some(server.clone()), tool.clone(), Some(risk.clone())),
            None => (None, binding.name.clone(), None),
        };
        let most = self.rounds().confirmations().most_pending_per_principal;
        let pending = store
            .pending_count_of(&binding.principal, self.rounds().now())
            .await
            .map_err(RoundError::Store)?;
        if usize::try_from(pending).is_ok_and(|pending| pending >= most) {
            tracing::warn!(
                most,
                "an ask was not parked: its principal has as many waiting as it may"
            );
            return Err(RoundError::TooManyPending {
                principal: binding.principal.clone(),
                most,
            });
        }
        let call_key = self.call_key(key);
        let resume_key = match earlier {
            0 => call_key.clone(),
            n => format!("{call_key}#{}", n + 1),
        };
        let ask_id = format!("ask_{}", URL_SAFE_NO_PAD.encode(id));
        let sealed = self
            .arguments()
            .map(|arguments| self.rounds().seal_arguments(&ask_id, arguments))
            .transpose()
            .map_err(RoundError::Random)?;
        let row = store
            .park_with_arguments(
                &NewAsk {
                    id: ask_id.clone(),
                    resume_key,
                    call_key: Some(call_key),
                    principal: binding.principal.clone(),
                    request: StoredRequest::form(ask).to_json(),
                    server,
                    tool: Some(tool),
                    risk,
                    created_at: self.rounds().now(),
                    expires_at,
                    panel: self.approving().map(Approving::kept),
                },
                sealed.as_deref(),
            )
            .await
            .map_err(RoundError::Store)?;
        tracing::info!(ask = %row.ask.id, "ask parked in the inbox");
        // Parked now (not found parked by another try of the call).
        if earlier > 0 && row.ask.panel.is_some() && row.ask.id == ask_id {
            // The call was asked before (its ask withdrawn): a person's no
            // counts whatever it was asked with, and is not lost.
            let carried = crate::approvals::carry_noes(store, &row, self.rounds().now())
                .await
                .map_err(RoundError::Store)?;
            return Ok(carried.unwrap_or(row));
        }
        Ok(row)
    }

    /// The outcome of a parked ask, once settled.
    fn outcome_of(row: &AskRow) -> Result<Option<Outcome>, RoundError> {
        match row.status {
            AskStatus::Pending => Ok(None),
            AskStatus::Expired => Err(RoundError::Unanswered(Unanswered::Expired {
                id: row.ask.id.clone(),
            })),
            _ => form_outcome(&row.ask.request, row.reply.as_ref())
                .map_err(|e| RoundError::Unanswered(Unanswered::Unreadable(e))),
        }
    }

    /// Ask through the inbox because the client cannot show the form: park
    /// it (or find it parked), and answer with its outcome once settled.
    pub(crate) async fn ask_in_inbox(
        &mut self,
        key: &str,
        ask: &Ask,
        by_url: bool,
    ) -> Result<Option<Outcome>, RoundError> {
        let Some(inbox) = self.rounds().inbox().cloned() else {
            return Err(if by_url {
                RoundError::Unanswered(Unanswered::NeedsUrlMode)
            } else {
                RoundError::Missing(input::InputKind::Elicitation)
            });
        };
        // No page to send a client to: the ask is parked for the CLI.
        let by_url = by_url && inbox.has_page();
        if !by_url && inbox.fallback == Fallback::Block {
            return Err(RoundError::Missing(input::InputKind::Elicitation));
        }
        let row = self.park_or_find(key, ask).await?;
        if let Some(outcome) = Self::outcome_of(&row)? {
            return Ok(Some(outcome));
        }
        let parked = Parked {
            url: inbox.page(&row.ask.id),
            id: row.ask.id.clone(),
            name: self.binding().name.clone(),
        };
        if !by_url {
            self.park_note(parked);
            return Ok(None);
        }
        let (parked, message) = self.link_to(&inbox, ask, &row)?;
        if let Some(cx) = self.context().cloned() {
            let (outcome, _) = self.ask_by_url_and_wait(&cx, &message, &parked).await?;
            return Ok(Some(outcome));
        }
        // Multi round-trip: the URL is an input request; a retry whose
        // answer is an accept looks in the store again.
        if let Some(given) = self.take_answer(key) {
            let result =
                input::read_elicitation(&given).map_err(|source| RoundError::Malformed {
                    key: key.to_owned(),
                    source,
                })?;
            match result.action {
                ElicitationAction::Accept => {}
                action => {
                    let (outcome, _) = self.close_parked(&row.ask.id, action).await?;
                    return Ok(Some(outcome));
                }
            }
        }
        self.queue_link(key, &message, &parked)?;
        Ok(None)
    }

    /// The parked ask `row` as a URL-mode client gets it: its page with a
    /// signed, single-use link, and the message that carries it.
    ///
    /// # Errors
    /// When the system's random source fails (no nonce for the link).
    pub(crate) fn link_to(
        &self,
        inbox: &InboxLinks,
        ask: &Ask,
        row: &AskRow,
    ) -> Result<(Parked, String), RoundError> {
        let link = inbox
            .link(&row.ask.id, self.rounds().now())
            .map_err(RoundError::unsendable)?;
        let message = format!("{}\n\nAnswer it here: {link}", ask.message());
        let parked = Parked {
            url: Some(link),
            id: row.ask.id.clone(),
            name: self.binding().name.clone(),
        };
        Ok((parked, message))
    }

    /// Multi round-trip: queue the link as this round's input request.
    ///
    /// # Errors
    /// When the request cannot be built (a bug).
    pub(crate) fn queue_link(
        &mut self,
        key: &str,
        message: &str,
        parked: &Parked,
    ) -> Result<(), RoundError> {
        let url = parked
            .url
            .as_deref()
            .ok_or(LinkFailed::Misuse(Misuse::NoInboxPage))
            .map_err(RoundError::unsendable)?;
        let request =
            input::elicit_url(message, url, &parked.id).map_err(RoundError::unsendable)?;
        self.queue_timed(key, request);
        Ok(())
    }

    /// URL mode on a revision that sends requests: send the URL, wait for
    /// the answer in the store, tell the client it is complete.
    async fn ask_by_url_and_wait(
        &self,
        cx: &rmcp::service::RequestContext<rmcp::service::RoleServer>,
        message: &str,
        parked: &Parked,
    ) -> Result<(Outcome, AskRow), RoundError> {
        let (result, _) = self.send_link(cx, message, parked).await?;
        if result.action != ElicitationAction::Accept {
            return self.close_parked(&parked.id, result.action).await;
        }
        let row = self.await_link_answer(cx, &parked.id).await?;
        let outcome = Self::outcome_of(&row)?.ok_or(RoundError::Unanswered(Unanswered::NoReply))?;
        // This call goes on with the answer: nobody else may.
        self.claim(&row.ask.id).await?;
        Ok((outcome, row))
    }

    /// Send the link to the client (URL mode, 2025-11-25), and how long it
    /// took the client to answer (accept: the person went to it).
    ///
    /// # Errors
    /// The revision has no URL mode; the request failed, was cancelled
    /// (and withdrawn) or timed out.
    pub(crate) async fn send_link(
        &self,
        cx: &rmcp::service::RequestContext<rmcp::service::RoleServer>,
        message: &str,
        parked: &Parked,
    ) -> Result<(ElicitResult, Duration), RoundError> {
        if self.revision() < askgate_core::Revision::V2025_11_25 {
            return Err(RoundError::Unanswered(Unanswered::NeedsUrlMode));
        }
        let url = parked
            .url
            .clone()
            .ok_or(LinkFailed::Misuse(Misuse::NoInboxPage))
            .map_err(RoundError::unsendable)?;
        let params = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: message.to_owned(),
            url,
            elicitation_id: parked.id.clone(),
        };
        let params = serde_json::to_value(&params).map_err(RoundError::unsendable)?;
        let started = tokio::time::Instant::now();
        let result = crate::ask::elicit(cx, params, None).await?;
        Ok((result, started.elapsed()))
    }

    /// The person went to the link of the ask `id`: wait for their answer
    /// in the store, then tell the client the ask is complete.
    ///
    /// # Errors
    /// Nobody answered within the wait; the request was cancelled; the
    /// store failed.
    pub(crate) async fn await_link_answer(
        &self,
        cx: &rmcp::service::RequestContext<rmcp::service::RoleServer>,
        id: &str,
    ) -> Result<AskRow, RoundError> {
        let store = self.rounds().store();
        let settled = tokio::select! {
            settled = store.wait_settled(id, URL_WAIT) => settled.map_err(RoundError::Store)?,
            () = cx.ct.cancelled() => return Err(RoundError::Unanswered(Unanswered::RequestCancelled)),
        };
        let Some(row) = settled else {
            return Err(RoundError::Unanswered(Unanswered::TimedOut(URL_WAIT)));
        };
        // 2025-11-25 has the completion notice; rmcp 3 has no helper for it.
        let notice = CustomNotification::new(
            "notifications/elicitation/complete",
            Some(serde_json::json!({"elicitationId": id})),
        );
        if let Err(error) = cx
            .peer
            .send_notification(ServerNotification::CustomNotification(notice))
            .await
        {
            tracing::warn!(ask = %id, %error, "could not tell the client the URL ask is complete");
        }
        Ok(row)
    }

    /// The person declined or dismissed the URL: settle the parked ask so,
    /// and return that outcome.
    async fn close_parked(
        &self,
        id: &str,
        action: ElicitationAction,
    ) -> Result<(Outcome, AskRow), RoundError> {
        let (status, outcome, reply) = match action {
            ElicitationAction::Decline => (
                AskStatus::Declined,
                Outcome::Declined,
                serde_json::json!({"action": "decline"}),
            ),
            _ => (
                AskStatus::Cancelled,
                Outcome::Cancelled,
                serde_json::json!({"action": "cancel"}),
            ),
        };
        let settlement = Settlement {
            status,
            reply,
            outcome: serde_json::to_value(&outcome).unwrap_or_default(),
            answered_by: None,
            answered_via: "mcp".into(),
        };
        match self
            .rounds()
            .store()
            .settle(id, &settlement, self.rounds().now())
            .await
        {
            Ok(row) => {
                self.claim(id).await?;
                Ok((outcome, row))
            }
            // Answered in the inbox meanwhile: that answer stands.
            Err(_) => {
                let row = self
                    .rounds()
                    .store()
                    .ask(id)
                    .await
                    .map_err(RoundError::Store)?
                    .ok_or_else(|| RoundError::Vanished { id: id.to_owned() })?;
                let outcome = Self::outcome_of(&row)?
                    .ok_or_else(|| RoundError::Unsettled { id: id.to_owned() })?;
                Ok((outcome, row))
            }
        }
    }
}
