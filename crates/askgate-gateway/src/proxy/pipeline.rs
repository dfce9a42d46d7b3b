//! The gateway's part of every call's decision, the same on every path
//! (the rmcp path, the express lane): the call found and judged
//! ([`Target`]), and when its record is written ([`when_recorded`]). The
//! person's part — whether anyone is asked, and what an answer means — is
//! askgate-core's `rule`, through askgate-mcp's rounds; the express lane
//! takes only what that rule lets proceed with nobody asked
//! ([`Gateway::unattended`]).

use std::sync::Arc;

use askgate_core::{Call, Risk};
use askgate_mcp::Decided;
use rmcp::ErrorData;
use rmcp::model::{JsonObject, Tool};

use super::Gateway;
use super::catalogue::Found;
use super::preview::take_confirm;
use crate::lifecycle::{Decision, Effect, Lifecycle, Recorded, when_recorded};
use crate::record::{End, Ending};
use crate::rules::{Judged, RuleRef};

/// A `tools/call` found in the catalogue and judged: what every path
/// decides on.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The upstream, by index.
    pub(crate) index: usize,
    /// The upstream's name.
    pub(crate) server: String,
    /// The tool as its upstream lists it.
    pub(crate) tool: Arc<Tool>,
    /// The arguments to send: the caller's `confirm` taken out (a call is
    /// one call with or without it).
    pub(crate) arguments: JsonObject,
    /// Whether the caller said `confirm: true`.
    pub(crate) caller_confirmed: bool,
    /// The call's risk.
    pub(crate) risk: Risk,
    /// What gave it that risk.
    pub(crate) rule: RuleRef,
}

impl Target {
    /// The call as the person's ask and the audit see it, with `preview`
    /// of its arguments (see [`super::preview::preview`]) and `why` it has
    /// its risk (see [`RuleRef::for_people`]).
    pub(crate) fn call<'a>(&'a self, preview: Option<&'a str>, why: Option<&'a str>) -> Call<'a> {
        Call {
            server: &self.server,
            tool: &self.tool.name,
            risk: self.risk,
            why,
            preview,
            may_have_run: None,
        }
    }
}

/// A call the express lane may take: nobody need be asked, and nothing
/// waits for its record.
pub(crate) struct Plan {
    /// The upstream, by index.
    pub(crate) index: usize,
    /// The upstream's name.
    pub(crate) server: String,
    /// The tool, by its upstream name.
    pub(crate) tool: String,
    /// The arguments to send (the caller's `confirm` taken out).
    pub(crate) arguments: JsonObject,
    /// Whose call it is: the authenticated principal, or the anonymous
    /// one (stdio).
    pub(crate) principal: String,
    /// The decision, and its audit entry.
    pub(crate) decided: Decided,
}

impl Gateway {
    /// The call of `found` with `arguments`, judged.
    pub(crate) fn target(&self, found: Found, mut arguments: JsonObject) -> Target {
        let server = self.upstream_name(found.index);
        let caller_confirmed = take_confirm(&found.tool, &mut arguments);
        let Judged { risk, rule } =
            self.inner
                .settings
                .judge
                .judge(&server, &found.tool, &arguments);
        tracing::debug!(server = %server, tool = %found.tool.name, risk = risk.as_str(), rule = %rule, "judged");
        Target {
            index: found.index,
            server,
            tool: found.tool,
            arguments,
            caller_confirmed,
            risk,
            rule,
        }
    }

    /// When the call of `target`, decided so, is recorded.
    pub(crate) fn when_recorded(&self, target: &Target, decided: &Decided) -> Recorded {
        let durable_reads = self.inner.settings.durable_reads;
        when_recorded(target.risk, decided.verdict.method, durable_reads)
    }

    /// The plan for `principal`'s call of `name` with `arguments`, under
    /// the auto-approve `threshold` of its request, when its upstream's
    /// express lane is open, nobody need be asked and nothing waits for
    /// its record (see [`crate::express`]): `None` for any call that must
    /// go through a round.
    pub(crate) fn unattended(
        &self,
        name: &str,
        arguments: JsonObject,
        principal: &str,
        threshold: Option<Risk>,
    ) -> Option<Plan> {
        let settings = &self.inner.settings;
        if name == askgate_core::ask_tool::NAME && self.offers_ask_tool() {
            return None;
        }
        // Stopping: refused on rmcp's path, with the reason.
        if self.inner.stopping.is_stopping() {
            return None;
        }
        let found = self.listed_tool(name)?;
        // First what is cheap to check: a lane to an upstream that answers
        // on a classic revision, room for one more record; then no intake.
        if !self.lane(found.index).is_some_and(|lane| lane.is_open()) {
            return None;
        }
        if !settings.background.has_room() {
            return None;
        }
        let target = self.target(found, arguments);
        if crate::config::intake_for(&settings.intake, &target.server, &target.tool.name).is_some()
        {
            return None;
        }
        // A raised threshold never skips the approvers a rule names (see
        // `call`).
        let governed = settings
            .approvals
            .for_call(
                &target.server,
                &target.tool.name,
                target.risk,
                &target.arguments,
                principal,
            )
            .is_some();
        let threshold = if governed {
            threshold.min(settings.threshold)
        } else {
            threshold
        };
        let decided = settings.rounds.decide_unattended(
            &target.call(None, None),
            threshold,
            principal,
            &target.arguments,
        )?;
        if self.when_recorded(&target, &decided) == Recorded::BeforeSent {
            return None;
        }
        Some(Plan {
            index: target.index,
            server: target.server,
            tool: target.tool.name.to_string(),
            arguments: target.arguments,
            principal: principal.to_owned(),
            decided,
        })
    }

    /// The ledger call of `plan`, about to be sent on the express lane:
    /// its life (at "sent"), how its end is told (with its decision, in one
    /// write, when it ends), and its marker. Logs and counts the decision.
    ///
    /// # Errors
    /// The system's random source failed, or the plan is not one the lane
    /// may take (then nothing is recorded).
    pub(crate) fn express_record(&self, plan: Plan) -> Result<LaneCall, ErrorData> {
        let settings = &self.inner.settings;
        let Plan {
            index,
            server,
            tool,
            arguments,
            principal,
            decided,
        } = plan;
        let mut life = Lifecycle::new();
        life.handle_decided(Decision {
            method: decided.verdict.method,
            proceeds: decided.verdict.proceed,
            recorded: Recorded::WhenEnded,
            cancelled: false,
        });
        if let Some(Effect::CountDecision(method)) = life.poll() {
            settings.metrics.decision(method.as_str());
        }
        if life.poll() != Some(Effect::Send) {
            return Err(ErrorData::internal_error(
                "a call planned for the express lane is not one it may send",
                None,
            ));
        }
        let (call, marker) = self.new_call(index, &tool, &arguments, &principal, None)?;
        decided.log();
        let id = call.id.clone();
        let end = End::unrecorded(
            settings.rounds.store(),
            &settings.background,
            decided.entry,
            call,
            marker.clone(),
        );
        let ending = Ending::new(
            Arc::clone(settings.rounds.clock()),
            id,
            server,
            settings.metrics.clone(),
            settings.background.clone(),
            end,
        );
        Ok(LaneCall {
            life,
            ending,
            marker,
            tool,
            arguments,
        })
    }
}

/// A call about to be sent on the express lane.
pub(crate) struct LaneCall {
    /// Its life, at "sent".
    pub(crate) life: Lifecycle,
    /// How its end is told.
    pub(crate) ending: Ending,
    /// The replay contract's marker it carries.
    pub(crate) marker: String,
    /// The tool, by its upstream name.
    pub(crate) tool: String,
    /// The arguments to send.
    pub(crate) arguments: JsonObject,
}
