//! A `tools/call` through a round: threshold, intake, the person's
//! decision (askgate-mcp's round, under askgate-core's `rule`), the
//! record, the upstream, the answer. The express lane takes the same
//! decisions for the calls nobody need be asked about (see
//! [`super::pipeline`]).

use askgate_core::{Gate, Method, gate};
use askgate_mcp::{Policy, Request, RoundError, session_threshold};
use askgate_store::RetryOf;
use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ContentBlock};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value as Json;

use super::Gateway;
use super::forward::Approved;
use super::intake::Intake;
use super::pipeline::Target;
use super::preview::preview;
use super::retries::unread;
use crate::holds::HELD;
use crate::lifecycle::{Decision, Lifecycle};
use crate::questions;

/// The key a call's confirmation is asked under.
pub(super) const CONFIRM: &str = "confirm";

impl Gateway {
    /// Call `target` for `principal`, the client's call being `params`.
    ///
    /// # Errors
    /// A bad threshold header, a refused retry, a store that failed, the
    /// upstream's failure — each saying what happened to the call.
    pub(crate) async fn call(
        &self,
        target: Target,
        params: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
        principal: &str,
    ) -> Result<CallToolResponse, ErrorData> {
        let settings = &self.inner.settings;
        let threshold = session_threshold(cx, settings.threshold, settings.allow_raise)?;
        // The call with and without the caller's confirm is one call: its
        // asks, a person's answer to them and its sealed state are bound to
        // the arguments without it.
        let request = Request::tool(params).with_arguments(Json::Object(target.arguments.clone()));
        let mut round = match settings.rounds.begin(cx, request).await {
            // Its state was used: the call made with it answers.
            Err(RoundError::Replayed { request: Some(id) }) => {
                return self.replayed(&id, &params.name).await;
            }
            begun => begun?,
        };
        let mut resumed = None;
        if let Some(Json::String(handle)) = round.carried(HELD).cloned() {
            // Approved and sent in an earlier round; its server waits on
            // answers this retry brings.
            if let Some(held) = self.inner.held.take(&handle) {
                return self.follow(held, round, cx).await;
            }
            // No longer held (a restart), its server's round carried:
            // decide again (the decision is recorded once, under its key)
            // and send that round again with this retry's answers. Not
            // carried, the call may have run: the ledger says.
            match Self::resumable(&round, &params.name) {
                Ok(resumable) => resumed = Some(resumable),
                Err(error) => match round.request_id() {
                    Some(id) => return self.replayed(id, &params.name).await,
                    None => return Err(error),
                },
            }
        }
        // The same call may have run before askgate stopped: the person
        // is told, or it is not sent again. When a person may decide, the
        // call's asks are read with the ledger: one visit to the store for
        // both (on SQLite one trip to its thread).
        let asked = !matches!(gate(target.risk, threshold), Gate::Proceed(_));
        let earlier = match resumed {
            None if asked => {
                let retry = self.retry_of(&target, principal);
                let (store, owner, ledger) = (self.store(), &settings.owner, retry.as_ref());
                let found = round
                    .look_ahead_with(CONFIRM, |asks, limit| async move {
                        let of = ledger.map(|asked| RetryOf {
                            retry: asked.retry(),
                            since: asked.since,
                            me: owner,
                        });
                        store.tries_of_call(of, &asks, limit).await
                    })
                    .await
                    .map_err(|e| match &retry {
                        Some(_) => unread(&target, &e),
                        // Only the call's asks were read.
                        None => RoundError::Store(e).into(),
                    })?;
                match &retry {
                    Some(asked) => {
                        self.earlier_found(&target, asked, found, cx.ct.cancelled())
                            .await?
                    }
                    None => None,
                }
            }
            None => {
                self.earlier_run(&target, principal, cx.ct.cancelled())
                    .await?
            }
            Some(_) => None,
        };
        let intake = match self.intake(&mut round, &target, principal).await? {
            Intake::Waiting => return Ok(round.respond()?),
            Intake::Settled(text) => Some(text),
            Intake::NotDue => None,
        };
        let shown = preview(&target.arguments);
        let why = target.rule.for_people();
        let mut call = target.call((!shown.is_empty()).then_some(shown.as_str()), Some(&why));
        call.may_have_run = earlier.as_ref().map(|earlier| earlier.at);
        let approval = settings.approvals.for_call(
            &target.server,
            &target.tool.name,
            target.risk,
            &target.arguments,
            principal,
        );
        // A request may raise its own threshold (allow_session_raise), but
        // never past a rule that names who must approve: the agent does not
        // choose to skip its approvers.
        let threshold = match &approval {
            Some(_) => threshold.min(settings.threshold),
            None => threshold,
        };
        let policy = Policy {
            threshold,
            caller_confirmed: target.caller_confirmed,
            approval,
            // Kept sealed with the ask if it is parked: its page shows them.
            arguments: Some(serde_json::Value::Object(target.arguments.clone())),
        };
        let Some(decided) = round.decide(CONFIRM, &call, policy).await? else {
            return Ok(round.respond()?);
        };
        // Where the gateway hears that an ask it parked settled (its wait
        // observed, see `metrics`), and that the client cancelled.
        if let Some(ask) = &decided.entry.ask_id {
            settings.metrics.decided_on(ask, self.store()).await;
        }
        if round.is_cancelled() {
            settings.metrics.cancelled(&target.server);
        }
        // Told: the person answered a confirmation that said so, or the
        // model reads that it was not sent again.
        if let Some(earlier) = &earlier
            && decided.verdict.method != Method::Waiting
            && !round.is_cancelled()
        {
            self.told(earlier).await;
        }
        let mut life = Lifecycle::new();
        life.handle_decided(Decision {
            method: decided.verdict.method,
            proceeds: decided.verdict.proceed,
            recorded: self.when_recorded(&target, &decided),
            // Cancelled while it was being decided: it is not sent.
            cancelled: round.is_cancelled(),
        });
        let approved = Approved {
            index: target.index,
            tool: &target.tool.name,
            arguments: target.arguments.clone(),
            principal,
            decided,
            resumed,
            request: round.request_id().map(str::to_owned),
        };
        let response = self.drive(life, approved, round, &call, cx).await?;
        Ok(with_intake(intake, response))
    }

    /// A call of the `ask` tool: the model's questions, put to the person.
    pub(crate) async fn ask_tool(
        &self,
        params: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
        principal: &str,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut round = self
            .inner
            .settings
            .rounds
            .begin(cx, Request::tool(params))
            .await?;
        let arguments = params.arguments.clone().unwrap_or_default();
        match questions::ask(&mut round, &arguments, principal).await? {
            Some(result) => Ok(result.into()),
            None => Ok(round.respond()?),
        }
    }
}

/// `response`, its content led by the intake's `text` when there is one.
fn with_intake(text: Option<String>, response: CallToolResponse) -> CallToolResponse {
    match (text, response) {
        (Some(text), CallToolResponse::Complete(mut result)) => {
            result.content.insert(0, ContentBlock::text(text));
            result.into()
        }
        (_, response) => response,
    }
}
