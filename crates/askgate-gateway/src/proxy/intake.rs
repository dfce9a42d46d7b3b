//! Intake: question sets configured before a tool's calls, due per
//! principal and session from what the store recorded — never from
//! process memory.

use askgate_mcp::Round;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::Timestamp;
use rmcp::ErrorData;

use super::Gateway;
use super::pipeline::Target;
use crate::questions::{self, Asked};

/// Where a call's intake got to.
#[derive(Debug)]
pub(crate) enum Intake {
    /// None is configured for the call, or it is not due.
    NotDue,
    /// It settled in this round: what the person said, for the result.
    Settled(String),
    /// The person has not answered yet: the round's response says so.
    Waiting,
}

impl Gateway {
    /// Put the intake configured before `target`'s calls to `principal` in
    /// `round`, when it is due.
    pub(crate) async fn intake(
        &self,
        round: &mut Round,
        target: &Target,
        principal: &str,
    ) -> Result<Intake, ErrorData> {
        let configured = &self.inner.settings.intake;
        let Some((which, intake)) =
            crate::config::intake_for(configured, &target.server, &target.tool.name)
        else {
            return Ok(Intake::NotDue);
        };
        if !self.intake_due(which, intake.when, principal).await? {
            return Ok(Intake::NotDue);
        }
        match questions::put(round, "intake", intake.questions.clone(), principal).await? {
            Asked::Settled(text) => {
                self.intake_settled(which, principal).await?;
                Ok(Intake::Settled(text))
            }
            Asked::Waiting => Ok(Intake::Waiting),
        }
    }

    /// Whether the intake `which` is due for `principal` in this session,
    /// from what the store recorded — never from process memory.
    async fn intake_due(
        &self,
        which: usize,
        when: askgate_core::IntakeWhen,
        principal: &str,
    ) -> Result<bool, ErrorData> {
        let settled = self
            .inner
            .settings
            .rounds
            .store()
            .token_consumed(&self.intake_token(which, principal))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the ask store failed: {e}"), None))?;
        // Every call of the tool is a turn.
        let thread = askgate_core::ThreadState {
            turn: 1,
            intake_settled_turn: settled.then_some(0),
            intake_pending: false,
        };
        Ok(when.is_due(thread))
    }

    /// Record that the intake `which` settled for `principal` in this
    /// session.
    async fn intake_settled(&self, which: usize, principal: &str) -> Result<(), ErrorData> {
        let now = self.now();
        let kept = now
            .checked_add(jiff::SignedDuration::from_hours(24 * 30))
            .unwrap_or(Timestamp::MAX);
        self.inner
            .settings
            .rounds
            .store()
            .consume_token(&self.intake_token(which, principal), kept, now)
            .await
            .map(|_| ())
            .map_err(|e| ErrorData::internal_error(format!("the ask store failed: {e}"), None))
    }

    /// The store's token that says an intake settled for a principal in
    /// this session.
    fn intake_token(&self, which: usize, principal: &str) -> String {
        use sha2::Digest;
        let principal = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(principal.as_bytes()));
        format!("intake:{which}:{principal}:{}", self.session())
    }
}
