//! Risk-gated confirmation of a tool call: askgate-core's trust rules
//! ([`askgate_core::rule`]) driven over the store and the client, every
//! decision recorded in the audit chain.
//!
//! 1. At or below the auto-approve threshold: proceed (`auto_approved`);
//!    `read` and `low_write` never prompt (`not_required`).
//! 2. Otherwise a person decides. What earlier tries of the same call left
//!    (same principal, tool and arguments) comes first: a person's no
//!    stands (blocked, final), an inbox approval not yet used lets this one
//!    call through, an ask already waiting is waited on.
//! 3. With none of those: the caller's `confirm: true` stands in only where
//!    the client can show no ask and the operator allows it for this risk
//!    ([`Confirmations::caller_confirm`](crate::Confirmations::caller_confirm)); otherwise the person is asked —
//!    a form, a link (URL mode), or the inbox.
//! 4. What the client brings back is a person's answer only if the client
//!    showed it: an accept without the checkbox, an error, a timeout, a
//!    give-up, or an answer faster than a person reads
//!    ([`Confirmations::min_answer`](crate::Confirmations::min_answer)) moves the ask to the inbox.
//! 5. A call its client cancels never runs: its ask is withdrawn, the
//!    client's dialog for it too.
//!
//! Every decision is appended to the audit chain once — a handler run
//! again on a retry finds its decision already recorded.

mod asking;
mod standing;
mod turns;

use askgate_core::{
    Answered, Ask, Call, Earlier, Facts, Gate, Method, Reach, Risk, Ruling, Trust, UnknownRisk,
    Verdict, confirmation_form, gate, rule, threshold, withdrawn,
};
use askgate_store::{AskRow, AuditEntry, Decision};
use jiff::Timestamp;
use rmcp::ErrorData;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value as Json;

use crate::approvals::Approving;
use crate::inbox::{Fallback, InboxLinks};
use crate::round::{Round, RoundError, Rounds};
use turns::{Found, Turn};

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
    match cx.extensions.get::<http::request::Parts>() {
        Some(parts) => threshold_in(&parts.headers, configured, allow_raise),
        None => Ok(configured),
    }
}

/// The auto-approve threshold for a request with `headers`: as
/// [`session_threshold`], for a request read before rmcp (the gateway's
/// express lane on Streamable HTTP).
///
/// # Errors
/// As [`session_threshold`].
pub fn threshold_in(
    headers: &http::HeaderMap,
    configured: Option<Risk>,
    allow_raise: bool,
) -> Result<Option<Risk>, ErrorData> {
    let Some(value) = headers.get(THRESHOLD_HEADER) else {
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// The auto-approve threshold for this request.
    pub threshold: Option<Risk>,
    /// Whether the caller passed `confirm: true` (it stands in only where
    /// no ask can be shown, and the operator allows it).
    pub caller_confirmed: bool,
    /// The team's approval rule for the call, when one matches: then its
    /// ask is parked with the rule's panel and settles only when the
    /// panel's people's answers say so; the caller's `confirm` never
    /// stands in, and the client is asked only where its answer counts as
    /// a person's (see [`Approving`]).
    pub approval: Option<Approving>,
    /// The call's arguments, when its ask, if parked, is to keep them
    /// sealed for its page (the people who may answer it see what they
    /// approve; erased when it settles).
    pub arguments: Option<Json>,
}

/// How many turns of the rule one decision may take (ask, wait, find an
/// approval already used, look again...) before it gives up.
const MOST_TURNS: usize = 8;

/// Who answered, for the audit entry.
enum Answerer {
    /// Nobody: the gate, the caller, or a block before asking.
    Nobody,
    /// The person behind the client; the ask that remembers their no, if
    /// one was recorded.
    Client(Option<AskRow>),
    /// A person in the inbox (web, CLI, a link), who settled this ask.
    Inbox(AskRow),
    /// Nobody yet: the ask waits in the inbox (or was withdrawn).
    Parked(AskRow),
}

impl Round {
    /// Confirm `call` under `policy`, asking under `key` when a person must
    /// decide. `Some(verdict)` once decided (and audited); `None` while the
    /// person's answer is awaited — end the round with
    /// [`Round::respond`].
    ///
    /// # Errors
    /// A refused request state or retry (`-32602`), a store failure. A
    /// person's no, an ask waiting in the inbox, or no person to ask is a
    /// verdict, not an error.
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
    /// Record it with [`Decided::audit`], or as [`Decided::entry`] through
    /// the store.
    ///
    /// # Errors
    /// As [`Round::confirm`], but never a store failure of the audit.
    pub async fn decide(
        &mut self,
        key: &str,
        call: &Call<'_>,
        policy: Policy,
    ) -> Result<Option<Decided>, RoundError> {
        let settings = self.rounds().confirmations().clone();
        let governed = policy.approval.is_some();
        let trust = Trust {
            threshold: policy.threshold,
            // No caller stands in for a team's approval.
            caller_confirm: settings.caller_confirm.filter(|_| !governed),
            min_answer: settings.min_answer_for(self.client()),
        };
        let mut reach = self.reach();
        if let Some(approving) = &policy.approval
            && approving.client_person().is_none()
        {
            // The client's answer would be nobody's the rule names: the
            // ask waits for them in the inbox (its page is named in the
            // waiting text), where each signs in as themselves.
            reach.form = false;
            reach.url = false;
        }
        self.set_approving(policy.approval.clone());
        self.set_arguments(match &policy.arguments {
            Some(Json::Object(arguments)) => Some(arguments.clone()),
            _ => None,
        });
        let judge = |earlier: &Earlier, answered: Option<&Answered>, reach: Reach| {
            rule(&Facts {
                call,
                trust,
                reach,
                caller_confirmed: policy.caller_confirmed,
                earlier,
                answered,
            })
        };
        // No person needed: no store, no ask.
        if let Gate::Proceed(_) = gate(call.risk, trust.threshold)
            && let Ruling::Proceed(verdict) = judge(&Earlier::Nothing, None, reach)
        {
            return Ok(Some(self.decided(key, call, verdict, Answerer::Nobody)));
        }
        // A rule nobody's answers could satisfy: refused before anyone is
        // asked, saying why (it is the config's to change, not a person's).
        if let Some(why) = policy
            .approval
            .as_ref()
            .and_then(|approving| approving.panel.unanswerable())
        {
            let verdict = unanswerable(call, &why);
            return Ok(Some(self.decided(key, call, verdict, Answerer::Nobody)));
        }
        self.about(call.server, call.tool, call.risk.as_str());
        let ask = Ask::new(confirmation_form(call)).map_err(RoundError::unsendable)?;
        let mut found = Found {
            standing: self.first_standing(key, &ask).await?,
            answered: None,
        };
        for _ in 0..MOST_TURNS {
            let turn = match judge(&found.standing.earlier, found.answered.as_ref(), reach) {
                Ruling::Proceed(verdict) => {
                    self.proceed(key, call, &ask, verdict, &mut found).await?
                }
                Ruling::Block(verdict) => self.block(key, call, &ask, verdict, &mut found).await?,
                Ruling::Ask(channel) => self.ask_on(channel, key, call, &ask, &mut found).await?,
                Ruling::Wait(waiting) => {
                    self.wait(key, call, &ask, &waiting, &settings, &mut found)
                        .await?
                }
            };
            match turn {
                Turn::Decided(decided) => return Ok(Some(*decided)),
                Turn::Awaited => return Ok(None),
                Turn::Again => {}
                // Counted as its person's: the client is not asked again.
                Turn::Counted => reach.form = false,
            }
        }
        Err(RoundError::Contended {
            tool: call.tool.to_owned(),
            server: call.server.to_owned(),
        })
    }

    /// Whether the client cancelled this request (`notifications/cancelled`):
    /// a call it was for must not be sent.
    pub fn is_cancelled(&self) -> bool {
        self.waits().is_some_and(|cx| cx.ct.is_cancelled())
    }

    /// The decision on `call` when its caller cancelled it after it was
    /// decided and before it was sent (see [`Round::is_cancelled`]): it
    /// does not run; audit it in place of the decision that let it through.
    pub fn cancelled(&self, key: &str, call: &Call<'_>) -> Decided {
        self.decided(key, call, withdrawn(call), Answerer::Nobody)
    }

    /// What this request's client can show, and whether the inbox is there
    /// to wait in.
    fn reach(&self) -> Reach {
        let (form, url) = crate::ask::modes(self.capabilities());
        // A link needs a page to lead to.
        let url = url && self.rounds().inbox().is_some_and(InboxLinks::has_page);
        let inbox = self
            .rounds()
            .inbox()
            .is_some_and(|inbox| inbox.fallback == Fallback::Park);
        Reach { form, url, inbox }
    }

    /// The page of the parked ask `row` in the inbox (its id, and how to
    /// answer it from the CLI, when no page is served).
    fn page_of(&self, row: &AskRow) -> String {
        let id = &row.ask.id;
        self.rounds()
            .inbox()
            .and_then(|inbox| inbox.page(id))
            .unwrap_or_else(|| {
                format!(
                    "{id}; no inbox page is served here: the user answers it with `askgate asks \
                     answer {id}` under their own credential"
                )
            })
    }

    /// The decision and its audit entry, keyed once per request and key.
    fn decided(&self, key: &str, call: &Call<'_>, verdict: Verdict, by: Answerer) -> Decided {
        let principal = self.binding().principal.clone();
        let (answered_by, answered_via, ask_id) = match by {
            Answerer::Nobody => (None, None, None),
            Answerer::Client(row) => (
                Some(principal.clone()),
                Some("mcp".to_owned()),
                row.map(|row| row.ask.id),
            ),
            Answerer::Inbox(row) => (row.answered_by, row.answered_via, Some(row.ask.id)),
            Answerer::Parked(row) => (None, None, Some(row.ask.id)),
        };
        let entry = audit_entry(
            self.rounds().now(),
            call,
            &verdict,
            Who {
                principal,
                answered_by,
                answered_via,
                ask_id,
            },
            self.binding().arguments.clone(),
            self.decision_key(key),
        );
        Decided { verdict, entry }
    }
}

impl Rounds {
    /// The decision on `call` for `principal`, with its audit entry, when
    /// no person needs to make it (the risk gate) — without a round, for a
    /// caller that relays the call without rmcp's request handling (the
    /// gateway's express lane). `None` when a person must be asked: begin
    /// a round and [`Round::decide`]. The entry is the one
    /// [`Round::decide`] makes for the same call and `arguments` on a
    /// classic revision.
    pub fn decide_unattended(
        &self,
        call: &Call<'_>,
        threshold: Option<Risk>,
        principal: &str,
        arguments: &serde_json::Map<String, Json>,
    ) -> Option<Decided> {
        let nobody = Reach {
            form: false,
            url: false,
            inbox: false,
        };
        let ruling = rule(&Facts {
            call,
            trust: Trust {
                threshold,
                caller_confirm: None,
                min_answer: self.confirmations().min_answer,
            },
            reach: nobody,
            caller_confirmed: false,
            earlier: &Earlier::Nothing,
            answered: None,
        });
        let Ruling::Proceed(verdict) = ruling else {
            return None;
        };
        let who = Who {
            principal: principal.to_owned(),
            answered_by: None,
            answered_via: None,
            ask_id: None,
        };
        let entry = audit_entry(
            self.now(),
            call,
            &verdict,
            who,
            self.object_digest(arguments),
            None,
        );
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
            .map_err(RoundError::Store)?;
        self.log();
        Ok(())
    }

    /// Log the decision (names, risk, method and the ask's id; never
    /// arguments): at INFO when a person (or the caller in their place)
    /// decided, or the call was blocked or waits; at DEBUG when it needed
    /// no one — most calls an agent makes, each of which would otherwise
    /// cost a line (the audit records every one either way).
    pub fn log(&self) {
        macro_rules! decided {
            ($level:expr) => {
                tracing::event!(
                    $level,
                    server = %self.entry.server,
                    tool = %self.entry.tool,
                    risk = %self.entry.risk,
                    decision = self.verdict.method.as_str(),
                    ask = self.entry.ask_id.as_deref().unwrap_or("-"),
                    "call decided"
                )
            };
        }
        match self.verdict.method {
            Method::AutoApproved | Method::NotRequired => decided!(tracing::Level::DEBUG),
            _ => decided!(tracing::Level::INFO),
        }
    }
}

/// Who a decision is about and who made it, for its audit entry.
struct Who {
    /// The principal the call was for.
    principal: String,
    /// The person who answered, if one did.
    answered_by: Option<String>,
    /// Through which surface.
    answered_via: Option<String>,
    /// The ask that decided it, if any.
    ask_id: Option<String>,
}

/// The audit entry of `verdict` on `call` at `at` (its arguments only as
/// their keyed digest).
fn audit_entry(
    at: Timestamp,
    call: &Call<'_>,
    verdict: &Verdict,
    who: Who,
    arguments_digest: String,
    decision_key: Option<String>,
) -> AuditEntry {
    AuditEntry {
        at,
        server: call.server.to_owned(),
        tool: call.tool.to_owned(),
        risk: call.risk.as_str().to_owned(),
        decision: decision(verdict.method),
        reason: verdict.for_audit.clone(),
        answered_by: who.answered_by,
        principal: Some(who.principal),
        answered_via: who.answered_via,
        arguments_digest: Some(arguments_digest),
        ask_id: who.ask_id,
        decision_key,
    }
}

fn decision(method: Method) -> Decision {
    match method {
        Method::Elicited => Decision::Elicited,
        Method::CallerConfirmed => Decision::CallerConfirmed,
        Method::AutoApproved => Decision::AutoApproved,
        Method::NotRequired => Decision::NotRequired,
        Method::Blocked => Decision::Blocked,
        Method::Waiting => Decision::Waiting,
    }
}

/// The verdict on `call` when no answers could approve it under its rule
/// (`why`): not run, and not a person's no — the operator can change it.
fn unanswerable(call: &Call<'_>, why: &askgate_core::approval::Unanswerable) -> Verdict {
    Verdict {
        proceed: false,
        method: Method::Blocked,
        final_no: false,
        for_model: format!(
            "Not run: nobody may approve this call to {} on {} as askgate is configured ({why}). \
             Do not retry it; tell the user, whose operator can change the approval rule.",
            call.tool, call.server
        ),
        for_audit: format!("no approval possible: {why}"),
    }
}
