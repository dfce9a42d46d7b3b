//! Risk-gated confirmation of a tool call, decided by askgate-core's rules
//! and recorded in the audit chain.
//!
//! 1. At or below the auto-approve threshold: proceed (`auto_approved`);
//!    `read` and `low_write` never prompt (`not_required`).
//! 2. Otherwise a person is asked, whatever the client can do (a form, the
//!    multi round-trip model, a task, or the inbox), with one `confirm`
//!    checkbox ticked by default.
//! 3. Accepted and ticked: proceed (`elicited`). Unticked, declined or
//!    cancelled: blocked, final. No person reachable, asking failed, or an
//!    accept without the checkbox (a client that never showed the prompt):
//!    blocked unless the caller passed `confirm: true` (`caller_confirmed`).
//!
//! Every decision is appended to the audit chain once — a handler run
//! again on a retry finds its decision already recorded.

use askgate_core::{
    Ask, CONFIRM_FIELD, Call, Gate, Heard, Method, Outcome, Provenance, Risk, Unavailable,
    UnknownRisk, Verdict, confirmation_form, decide, gate, threshold,
};
use askgate_store::{AuditEntry, Decision};
use jiff::Timestamp;
use rmcp::ErrorData;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value as Json;

use crate::ask::Unanswered;
use crate::input::InputKind;
use crate::round::{Round, RoundError, Rounds};

/// The HTTP header a session sets its auto-approve threshold with (a risk
/// level, or `none`).
pub const THRESHOLD_HEADER: &str = "askgate-auto-approve-risk";

/// The auto-approve threshold for this request: the configured one, or the
/// session's [`THRESHOLD_HEADER`] — the more restrictive of the two unless
/// `allow_raise`.
///
/// # Errors
/// `-32602` naming the header and the accepted levels when its value is not
/// a risk level.
pub fn session_threshold(
    cx: &RequestContext<RoleServer>,
    configured: Option<Risk>,
    allow_raise: bool,
) -> Result<Option<Risk>, ErrorData> {
    let Some(parts) = cx.extensions.get::<http::request::Parts>() else {
        return Ok(configured);
    };
    let Some(value) = parts.headers.get(THRESHOLD_HEADER) else {
        return Ok(configured);
    };
    let text = value.to_str().unwrap_or("").trim();
    let requested = if text.eq_ignore_ascii_case("none") {
        None
    } else {
        Some(text.parse::<Risk>().map_err(|UnknownRisk(given)| {
            ErrorData::invalid_params(
                format!(
                    "header {THRESHOLD_HEADER}: {given:?} is not a risk level; expected none, read, \
                     low_write, medium_write, high_write or destructive"
                ),
                None,
            )
        })?)
    };
    Ok(match requested {
        Some(_) => threshold(configured, requested, allow_raise),
        // "none" asks for every call to be confirmed: always allowed.
        None => None,
    })
}

/// What a call's confirmation needs to know besides the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The auto-approve threshold for this request.
    pub threshold: Option<Risk>,
    /// Whether the caller passed `confirm: true` (it stands in only where
    /// no person could be asked).
    pub caller_confirmed: bool,
}

impl Round {
    /// Confirm `call` under `policy`, asking under `key` when a person must
    /// decide. `Some(verdict)` once decided (and audited); `None` while the
    /// person's answer is awaited — end the round with
    /// [`Round::respond`].
    ///
    /// # Errors
    /// A refused request state or retry (`-32602`), a store failure. A
    /// person's no, or no person to ask, is a verdict, not an error.
    pub async fn confirm(
        &mut self,
        key: &str,
        call: &Call<'_>,
        policy: Policy,
    ) -> Result<Option<Verdict>, RoundError> {
        let Some(decided) = self.decide(key, call, policy).await? else {
            return Ok(None);
        };
        decided.audit(self).await?;
        Ok(Some(decided.verdict))
    }

    /// [`Round::confirm`] without the audit: the verdict and the entry to
    /// append, for a caller that records the entry together with what it
    /// does next (a call ledgered as sent, in the same write) or later.
    /// Record it with [`Decided::audit`], or as
    /// [`Decided::entry`] through the store.
    ///
    /// # Errors
    /// As [`Round::confirm`], but never a store failure of the audit.
    pub async fn decide(
        &mut self,
        key: &str,
        call: &Call<'_>,
        policy: Policy,
    ) -> Result<Option<Decided>, RoundError> {
        let verdict = match unattended(call, policy.threshold) {
            Some(verdict) => verdict,
            None => {
                self.about(call.server, call.tool, call.risk.as_str());
                let ask = Ask::new(confirmation_form(call))
                    .map_err(|e| RoundError::Unanswered(Unanswered::Unsendable(e.to_string())))?;
                // A client that cannot show the form, with the caller's own
                // confirmation: that stands in, rather than parking the ask.
                let caller_stands_in = policy.caller_confirmed && !self.can(InputKind::Elicitation);
                let asked = if caller_stands_in {
                    Err(RoundError::Missing(InputKind::Elicitation))
                } else {
                    self.ask(key, ask).await
                };
                let heard = match asked {
                    Ok(None) => return Ok(None),
                    Ok(Some(outcome)) => heard(&outcome),
                    Err(RoundError::Missing(InputKind::Elicitation))
                    | Err(RoundError::Unanswered(Unanswered::NoElicitation)) => {
                        Heard::Unavailable(Unavailable::NoElicitation)
                    }
                    Err(RoundError::Unanswered(unanswered)) => {
                        Heard::Unavailable(Unavailable::Failed(unanswered.to_string()))
                    }
                    Err(other) => return Err(other),
                };
                decide(call, &heard, policy.caller_confirmed)
            }
        };
        let entry = self.entry(key, call, &verdict);
        Ok(Some(Decided { verdict, entry }))
    }

    /// The decision's audit entry, keyed once per request and key.
    fn entry(&self, key: &str, call: &Call<'_>, verdict: &Verdict) -> AuditEntry {
        let inbox = self.answered_in_inbox(key);
        let asked = verdict.method == Method::Elicited
            || (verdict.method == Method::Blocked && verdict.final_no);
        let (answered_by, answered_via) = match (&inbox, asked) {
            (Some(answer), _) => (answer.by.clone(), answer.via.clone()),
            (None, true) => (
                Some(self.binding().principal.clone()),
                Some("mcp".to_owned()),
            ),
            (None, false) => (None, None),
        };
        AuditEntry {
            at: Timestamp::now(),
            server: call.server.to_owned(),
            tool: call.tool.to_owned(),
            risk: call.risk.as_str().to_owned(),
            decision: decision(verdict.method),
            reason: verdict.for_audit.clone(),
            answered_by,
            answered_via,
            arguments_digest: Some(self.binding().arguments.clone()),
            ask_id: inbox.map(|answer| answer.ask_id),
            decision_key: self.decision_key(key),
        }
    }
}

/// The verdict on `call` when no person needs to decide it: its risk needs
/// no confirmation, or is within `threshold` (rule 1); `None` when a person
/// must be asked.
fn unattended(call: &Call<'_>, threshold: Option<Risk>) -> Option<Verdict> {
    let Gate::Proceed(method) = gate(call.risk, threshold) else {
        return None;
    };
    Some(Verdict {
        proceed: true,
        method,
        final_no: false,
        for_model: String::new(),
        for_audit: match method {
            Method::AutoApproved => format!(
                "risk {} is within the auto-approve threshold {}",
                call.risk,
                threshold.map_or("none", Risk::as_str)
            ),
            _ => format!("risk {} needs no confirmation", call.risk),
        },
    })
}

impl Rounds {
    /// The decision on `call`, with its audit entry, when no person needs
    /// to make it (rule 1) — without a round, for a caller that relays the
    /// call without rmcp's request handling (the gateway's express lane).
    /// `None` when a person must be asked: begin a round and
    /// [`Round::decide`]. The entry is the one [`Round::decide`] makes for
    /// the same call and `arguments` on a classic revision.
    pub fn decide_unattended(
        &self,
        call: &Call<'_>,
        threshold: Option<Risk>,
        arguments: &Json,
    ) -> Option<Decided> {
        let verdict = unattended(call, threshold)?;
        let entry = AuditEntry {
            at: Timestamp::now(),
            server: call.server.to_owned(),
            tool: call.tool.to_owned(),
            risk: call.risk.as_str().to_owned(),
            decision: decision(verdict.method),
            reason: verdict.for_audit.clone(),
            answered_by: None,
            answered_via: None,
            arguments_digest: Some(self.arguments_digest(arguments)),
            ask_id: None,
            decision_key: None,
        };
        Some(Decided { verdict, entry })
    }
}

/// A call's confirmation, decided and not yet audited (see
/// [`Round::decide`]).
#[derive(Debug, Clone)]
pub struct Decided {
    /// The verdict.
    pub verdict: Verdict,
    /// Its audit entry (with the call's risk, server and tool; never its
    /// arguments), to append once — appending it again under its
    /// `decision_key` returns the entry recorded first.
    pub entry: AuditEntry,
}

impl Decided {
    /// Append the entry to the round's store, and log the decision.
    ///
    /// # Errors
    /// A store failure.
    pub async fn audit(&self, round: &Round) -> Result<(), RoundError> {
        round
            .rounds()
            .store()
            .append_audit(&self.entry)
            .await
            .map_err(|e| RoundError::Store(e.to_string()))?;
        self.log();
        Ok(())
    }

    /// Log the decision (names, risk and method; never arguments).
    pub fn log(&self) {
        tracing::info!(
            server = %self.entry.server,
            tool = %self.entry.tool,
            risk = %self.entry.risk,
            decision = self.verdict.method.as_str(),
            "call decided"
        );
    }
}

/// What the confirmation's outcome says. A `confirm` the client did not
/// send (filled from its default) means nobody saw the prompt.
fn heard(outcome: &Outcome) -> Heard {
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
        _ => Heard::Unavailable(Unavailable::Failed(
            "the confirmation could not be read after the last attempt".into(),
        )),
    }
}

fn decision(method: Method) -> Decision {
    match method {
        Method::Elicited => Decision::Elicited,
        Method::CallerConfirmed => Decision::CallerConfirmed,
        Method::AutoApproved => Decision::AutoApproved,
        Method::NotRequired => Decision::NotRequired,
        _ => Decision::Blocked,
    }
}
