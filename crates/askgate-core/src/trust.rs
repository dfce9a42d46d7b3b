//! The trust rules: who may approve a call, and what counts as a person's
//! answer. One pure function, [`rule`], decides every call that needs more
//! than the risk gate — before anyone is asked, and again with what came
//! back — so every path (classic elicitation, multi round-trip, URL mode,
//! the inbox, the gateway's express lane) obeys the same decision.
//!
//! 1. **A person's answer is binding, whatever channel it came from.** A
//!    decline, a cancel in the dialog, an unticked confirmation: blocked,
//!    final. While that ask lives, the same call (same principal, tool and
//!    arguments) is refused with the person's decision — never let through
//!    on the caller's word ([`Earlier::Refused`]).
//! 2. **The caller's `confirm: true` stands in for a person only when**
//!    the client can show no ask at all (no form, no URL mode), the risk is
//!    at or below the operator's `caller_confirm` ([`Trust`]), and no ask
//!    for the same call is pending or was declined. Otherwise the ask waits
//!    for a person.
//! 3. **Nothing a client did not show counts as a person's answer.** An
//!    accept without the `confirm` field, an error or a timeout, a give-up
//!    after re-asks, and an answer faster than a person could have read the
//!    ask ([`Trust::min_answer`]) are *not shown*: the ask moves to the
//!    inbox, and the audit says so in those words.
//!
//! 4. **A call that may already have run goes again only on a person's
//!    word.** When an earlier try of this exact call was in flight as
//!    askgate stopped ([`Call::may_have_run`]), the person's confirmation
//!    says so; where no person would be asked (the risk gate, the caller's
//!    `confirm: true`), it is not sent again, and the model is told why.
//!
//! What the caller does around the rule — park an ask, withdraw it when the
//! call is cancelled ([`withdrawn`]), wait for the inbox — is IO, and lives
//! in askgate-mcp; the rule itself has no clock: how long an answer took is
//! passed in.

use std::time::Duration;

use crate::risk::{Call, Gate, Method, Risk, gate, may_have_run_note};

mod heard;

use heard::heard;

/// What the client can show a person, as it declared, and whether an inbox
/// is there to wait in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    /// The client shows forms (`elicitation` with `form`, or bare).
    pub form: bool,
    /// The client opens links (`elicitation.url`): URL mode.
    pub url: bool,
    /// An inbox (web page and CLI) where a person can answer.
    pub inbox: bool,
}

impl Reach {
    /// Whether the client can show no ask at all.
    pub fn shows_nothing(self) -> bool {
        !self.form && !self.url
    }
}

/// How a person said no.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    /// Declined.
    Declined,
    /// Cancelled (dismissed) the ask.
    Cancelled,
    /// Accepted with the confirmation unticked.
    Unticked,
}

impl Said {
    /// The words before "the call": "declined", "unticked the
    /// confirmation of".
    fn words(self) -> &'static str {
        match self {
            Said::Declined => "declined",
            Said::Cancelled => "cancelled",
            Said::Unticked => "unticked the confirmation of",
        }
    }

    /// The words on their own: "declined", "unticked the confirmation".
    fn alone(self) -> &'static str {
        match self {
            Said::Unticked => "unticked the confirmation",
            said => said.words(),
        }
    }
}

/// What the store knows of this exact call — the same principal, tool and
/// arguments — from earlier tries, within the lifetime of their asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Earlier {
    /// Nothing: no ask for it, or only ones that expired or were used.
    Nothing,
    /// An ask for it waits for a person.
    Pending,
    /// A person said no to it, and that answer still stands.
    Refused {
        /// How.
        said: Said,
        /// Who, when known.
        by: Option<String>,
        /// Through which surface (`mcp`, `web`, `cli`).
        via: String,
    },
    /// A person approved it (in the inbox), and no call has gone on with
    /// that approval yet.
    Approved {
        /// Who, when known.
        by: Option<String>,
        /// Through which surface.
        via: String,
    },
}

/// What came back when the client was asked to show the confirmation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// Accepted; the `confirm` field's value, `None` when it is missing (the
    /// client never showed the prompt).
    Accepted {
        /// The checkbox.
        confirm: Option<bool>,
    },
    /// Declined.
    Declined,
    /// Cancelled (dismissed).
    Cancelled,
    /// The answer could not be read after the last re-ask.
    GaveUp,
    /// Asking failed: a transport error, an error reply. The text names
    /// what failed, never an answer's values.
    Failed(String),
    /// Nobody answered within the wait.
    TimedOut(Duration),
}

/// What came back, and how long after the ask was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// What came back.
    pub heard: Heard,
    /// How long after asking it came; `None` when that is not known (a
    /// task's answer, given through `tasks/update`), and then no answer is
    /// taken for too fast.
    pub after: Option<Duration>,
}

/// The operator's trust settings for confirmations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trust {
    /// The auto-approve threshold in force for this call.
    pub threshold: Option<Risk>,
    /// The highest risk at which the caller's `confirm: true` may stand in
    /// for a person, when the client can show no ask; `None` (the default):
    /// never, only a person approves.
    pub caller_confirm: Option<Risk>,
    /// An answer faster than this was not read by a person (default 250
    /// ms).
    pub min_answer: Duration,
}

impl Trust {
    /// The defaults: nothing auto-approved, the caller never stands in, an
    /// answer in under 250 ms is not a person's.
    pub const DEFAULT: Trust = Trust {
        threshold: None,
        caller_confirm: None,
        min_answer: Duration::from_millis(250),
    };
}

impl Default for Trust {
    fn default() -> Trust {
        Trust::DEFAULT
    }
}

/// Everything [`rule`] decides on.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The call.
    pub call: &'a Call<'a>,
    /// The operator's settings.
    pub trust: Trust,
    /// What the client can show.
    pub reach: Reach,
    /// Whether the caller passed `confirm: true`.
    pub caller_confirmed: bool,
    /// What earlier tries of the same call left.
    pub earlier: &'a Earlier,
    /// What came back from asking through the client in this round, if the
    /// client was asked.
    pub answered: Option<&'a Answered>,
}

/// How to ask a person through the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// A form with the confirmation checkbox (`elicitation/create`, or an
    /// input request on 2026-07-28).
    Form,
    /// A link to the ask's inbox page (URL mode): the answer is given
    /// there.
    Url,
}

/// What [`rule`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ruling {
    /// The call goes ahead.
    Proceed(Verdict),
    /// The call does not run; the verdict says why, and whether it is a
    /// person's final no.
    Block(Verdict),
    /// Ask a person through the client this way, then call [`rule`] again
    /// with what came back.
    Ask(Channel),
    /// The ask waits for a person in the inbox (parked now, or already);
    /// the call has not run.
    Wait(Waiting),
}

/// Why a call waits for the inbox, before the caller knows where the ask
/// is (see [`Waiting::verdict`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// Why no person answered through the client, in words for the audit
    /// and the model.
    pub why: String,
    /// Whether no person saw the ask (rule 3), as opposed to a client that
    /// cannot show one or an ask already waiting.
    pub not_shown: bool,
    /// Why the caller's `confirm: true` did not stand in, when it was
    /// passed.
    pub caller_refused: Option<&'static str>,
}

/// The decision on a call that needed more than the risk gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the call goes ahead.
    pub proceed: bool,
    /// How it was decided.
    pub method: Method,
    /// Whether the decision is a person's "no" (final: not to be retried or
    /// overridden).
    pub final_no: bool,
    /// For the model: what happened and how to go on. Empty when the call
    /// proceeds.
    pub for_model: String,
    /// For the audit log: why, in words that never call a client's doing a
    /// person's decision.
    pub for_audit: String,
}

impl Verdict {
    fn proceed(method: Method, for_audit: String) -> Verdict {
        Verdict {
            proceed: true,
            method,
            final_no: false,
            for_model: String::new(),
            for_audit,
        }
    }
}

/// Decide a call: the risk gate, then the trust rules over what the client
/// can show, what the caller said, what earlier tries left, and — once the
/// client was asked — what came back.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use askgate_core::{Answered, Call, Channel, Earlier, Facts, Heard, Reach, Risk, Ruling, Trust, rule};
///
/// let call = Call { server: "files", tool: "delete_tree", risk: Risk::Destructive, why: None, preview: None, may_have_run: None };
/// let reach = Reach { form: true, url: false, inbox: true };
/// let mut facts = Facts {
///     call: &call, trust: Trust::DEFAULT, reach, caller_confirmed: true,
///     earlier: &Earlier::Nothing, answered: None,
/// };
/// // The client shows forms: a person is asked, whatever the caller said.
/// assert_eq!(rule(&facts), Ruling::Ask(Channel::Form));
///
/// // The client declined 3 ms later: nobody read it; the ask goes to the inbox.
/// let answered = Answered { heard: Heard::Declined, after: Some(Duration::from_millis(3)) };
/// facts.answered = Some(&answered);
/// let Ruling::Wait(waiting) = rule(&facts) else { panic!("not a person's answer") };
/// assert_eq!(waiting.why, "the client declined 3 ms after asking, before a person could have read it");
///
/// // A person declined after reading: blocked, and final.
/// let answered = Answered { heard: Heard::Declined, after: Some(Duration::from_secs(4)) };
/// facts.answered = Some(&answered);
/// let Ruling::Block(verdict) = rule(&facts) else { panic!("a person said no") };
/// assert!(verdict.final_no);
/// ```
pub fn rule(facts: &Facts<'_>) -> Ruling {
    let call = facts.call;
    let trust = facts.trust;
    if let Gate::Proceed(method) = gate(call.risk, trust.threshold) {
        if let Some(at) = call.may_have_run {
            return Ruling::Block(not_sent_again(call, at));
        }
        return Ruling::Proceed(unattended(call, method, trust.threshold));
    }
    if let Some(answered) = facts.answered {
        return heard(facts, answered);
    }
    match facts.earlier {
        Earlier::Refused { said, by, via } => {
            return Ruling::Block(Verdict {
                proceed: false,
                method: Method::Blocked,
                final_no: true,
                for_model: format!(
                    "A person already {} this exact call to {} on {}. That answer is final: do \
                     not retry it, and do not pass confirm: true to get around it. Ask the user \
                     how to go on.",
                    said.words(),
                    call.tool,
                    call.server
                ),
                for_audit: format!(
                    "{} {} this exact call earlier (via {via}); that answer stands until its ask \
                     expires",
                    who(by.as_deref()),
                    said.words()
                ),
            });
        }
        Earlier::Approved { by, via } => {
            return Ruling::Proceed(Verdict::proceed(
                Method::Elicited,
                format!("{} confirmed (via {via})", who(by.as_deref())),
            ));
        }
        Earlier::Pending => {
            return wait(
                facts,
                "an ask for this exact call already waits for a person".into(),
                false,
            );
        }
        Earlier::Nothing => {}
    }
    if caller_may_stand_in(facts) {
        return Ruling::Proceed(Verdict::proceed(
            Method::CallerConfirmed,
            format!(
                "the client can show no ask, and the caller passed confirm: true (allowed up to \
                 {})",
                trust.caller_confirm.map_or("none", Risk::as_str)
            ),
        ));
    }
    let reach = facts.reach;
    if reach.form {
        Ruling::Ask(Channel::Form)
    } else if reach.url && reach.inbox {
        Ruling::Ask(Channel::Url)
    } else {
        wait(
            facts,
            "this client cannot show a confirmation (it declared no elicitation)".into(),
            false,
        )
    }
}

/// The verdict on a call that may already have run at `at` when nobody
/// would be asked before it runs again: not sent. Not a person's no: a
/// further call goes as any call.
fn not_sent_again(call: &Call<'_>, at: jiff::Timestamp) -> Verdict {
    Verdict {
        proceed: false,
        method: Method::Blocked,
        final_no: false,
        for_model: format!(
            "{} The call to {} on {} was not sent again. Check whether it took effect before \
             going on; if it must run again, call it again.",
            may_have_run_note(at),
            call.tool,
            call.server
        ),
        for_audit: format!(
            "this exact call may already have run (sent at {at}, never answered); not sent again"
        ),
    }
}

/// The verdict on a call cancelled by its caller before it was sent: it
/// never runs, and the ask for it (if any) is withdrawn. Not a person's no.
pub fn withdrawn(call: &Call<'_>) -> Verdict {
    Verdict {
        proceed: false,
        method: Method::Blocked,
        final_no: false,
        for_model: format!(
            "The call to {} on {} was cancelled before it was sent; it did not run.",
            call.tool, call.server
        ),
        for_audit: "cancelled by the caller before it was sent; its ask was withdrawn".into(),
    }
}

impl Waiting {
    /// The verdict once the ask waits at `place` (its inbox page, or its id
    /// for the CLI) — never a command or link that approves anything by
    /// itself — and the model is to call `retry_as` again.
    pub fn verdict(&self, call: &Call<'_>, place: &str, retry_as: &str) -> Verdict {
        let mut for_audit = if self.not_shown {
            format!("not shown: {}; the ask waits in the inbox", self.why)
        } else {
            format!("{}; the ask waits in the inbox", self.why)
        };
        if let Some(refused) = self.caller_refused {
            for_audit.push_str("; the caller's confirm: true was not taken: ");
            for_audit.push_str(refused);
        }
        Verdict {
            proceed: false,
            method: Method::Waiting,
            final_no: false,
            for_model: format!(
                "The call to {tool} on {server} needs a person's approval (risk: {risk}), and \
                 {why}. It has not run. The ask waits in the askgate inbox ({place}): ask the \
                 user to answer it there, then call {retry_as} again with the same arguments.",
                tool = call.tool,
                server = call.server,
                risk = call.risk,
                why = self.why,
            ),
            for_audit,
        }
    }
}

/// The verdict when the gate lets the call through unattended.
fn unattended(call: &Call<'_>, method: Method, threshold: Option<Risk>) -> Verdict {
    let for_audit = match method {
        Method::AutoApproved => format!(
            "risk {} is within the auto-approve threshold {}",
            call.risk,
            threshold.map_or("none", Risk::as_str)
        ),
        _ => format!("risk {} needs no confirmation", call.risk),
    };
    Verdict::proceed(method, for_audit)
}

/// The call waits in the inbox, or — with no inbox — is blocked (not a
/// person's no).
fn wait(facts: &Facts<'_>, why: String, not_shown: bool) -> Ruling {
    let call = facts.call;
    let caller_refused = facts.caller_confirmed.then(|| caller_refusal(facts));
    if facts.reach.inbox {
        return Ruling::Wait(Waiting {
            why,
            not_shown,
            caller_refused,
        });
    }
    let hint = if caller_would_stand_in(facts) {
        " If the user has already confirmed this exact call in the conversation, call it again \
         with confirm: true; otherwise ask the user first."
    } else {
        ""
    };
    Ruling::Block(Verdict {
        proceed: false,
        method: Method::Blocked,
        final_no: false,
        for_model: format!(
            "The call to {} on {} needs a person's confirmation (risk: {}), and {why}, and there \
             is no inbox to ask in. It has not run.{hint}{ran}",
            call.tool,
            call.server,
            call.risk,
            ran = call
                .may_have_run
                .map(|at| format!(" {}", may_have_run_note(at)))
                .unwrap_or_default()
        ),
        for_audit: if not_shown {
            format!("not shown: {why}; no inbox to wait in")
        } else {
            format!("{why}; no inbox to wait in")
        },
    })
}

/// Rule 2: the caller's `confirm: true` stands in.
fn caller_may_stand_in(facts: &Facts<'_>) -> bool {
    facts.caller_confirmed && caller_would_stand_in(facts)
}

/// Whether the caller's `confirm: true` would stand in, were it passed.
fn caller_would_stand_in(facts: &Facts<'_>) -> bool {
    facts.call.may_have_run.is_none()
        && facts.reach.shows_nothing()
        && facts.answered.is_none()
        && *facts.earlier == Earlier::Nothing
        && facts
            .trust
            .caller_confirm
            .is_some_and(|most| facts.call.risk <= most)
}

/// Why the caller's `confirm: true` did not stand in.
fn caller_refusal(facts: &Facts<'_>) -> &'static str {
    if facts.call.may_have_run.is_some() {
        "this exact call may already have run, so only a person lets it run again"
    } else if !facts.reach.shows_nothing() {
        "the client can show asks, so a person is asked"
    } else if *facts.earlier != Earlier::Nothing {
        "an ask for this exact call is already waiting"
    } else if facts.trust.caller_confirm.is_none() {
        "caller_confirm is none, so only a person approves"
    } else {
        "the call's risk is above caller_confirm"
    }
}

fn who(by: Option<&str>) -> String {
    by.map_or_else(|| "a person".to_owned(), str::to_owned)
}
