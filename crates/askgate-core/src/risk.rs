//! Risk-gated confirmation: which tool calls proceed, which ask a person,
//! and what a person's answer — or the lack of one — decides.
//!
//! The rules, in the order they apply:
//! 1. At or below the auto-approve threshold: proceed (`auto_approved`).
//! 2. `read` and `low_write` never prompt: proceed (`not_required`).
//! 3. Otherwise ask, with a `confirm` checkbox that defaults to true.
//!    - Accepted with `confirm: true`: proceed (`elicited`).
//!    - Accepted with `confirm: false`, declined or cancelled: blocked. A
//!      person said no; that is final, and a caller's `confirm: true` does
//!      not override it.
//!    - No person could be asked (the client has no elicitation, the ask
//!      failed), or the answer came back without its `confirm` field (the
//!      client never showed the prompt): blocked — unless the caller passed
//!      `confirm: true`, which stands in only here (`caller_confirmed`).
//!
//! Every verdict carries two texts: one for the model, with the way to
//! recover, and one for the audit log, which never calls a client's failure
//! a person's decline.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::form::{BooleanSpec, Field, FieldKind, Form};

/// How much harm a tool call can do, from least to most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads only.
    Read,
    /// Writes that are easy to undo.
    LowWrite,
    /// Writes that take effort to undo. Unknown tools are treated as this.
    MediumWrite,
    /// Writes that are hard to undo.
    HighWrite,
    /// Deletes or overwrites for good.
    Destructive,
}

impl Risk {
    /// Every level, from least to most.
    pub const ALL: [Risk; 5] = [
        Risk::Read,
        Risk::LowWrite,
        Risk::MediumWrite,
        Risk::HighWrite,
        Risk::Destructive,
    ];

    /// The level as written in config and audit entries.
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Read => "read",
            Risk::LowWrite => "low_write",
            Risk::MediumWrite => "medium_write",
            Risk::HighWrite => "high_write",
            Risk::Destructive => "destructive",
        }
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A risk level that is not one of the five.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown risk {0:?}; expected one of read, low_write, medium_write, high_write, destructive"
)]
pub struct UnknownRisk(pub String);

impl FromStr for Risk {
    type Err = UnknownRisk;

    fn from_str(text: &str) -> Result<Risk, UnknownRisk> {
        Risk::ALL
            .into_iter()
            .find(|risk| risk.as_str() == text)
            .ok_or_else(|| UnknownRisk(text.to_owned()))
    }
}

/// The auto-approve threshold in force: calls at or below it proceed
/// without asking. `None` approves nothing by itself.
///
/// `configured` is the operator's; `requested` comes from a session (a
/// header, an environment variable). The more restrictive of the two wins,
/// unless the configuration allows a session to raise it.
///
/// # Example
/// ```
/// use askgate_core::{Risk, threshold};
/// // A session cannot raise the operator's threshold...
/// assert_eq!(threshold(Some(Risk::LowWrite), Some(Risk::Destructive), false), Some(Risk::LowWrite));
/// // ...but can always lower it.
/// assert_eq!(threshold(Some(Risk::HighWrite), Some(Risk::Read), false), Some(Risk::Read));
/// assert_eq!(threshold(Some(Risk::LowWrite), Some(Risk::HighWrite), true), Some(Risk::HighWrite));
/// ```
pub fn threshold(
    configured: Option<Risk>,
    requested: Option<Risk>,
    allow_raise: bool,
) -> Option<Risk> {
    match requested {
        None => configured,
        Some(requested) if allow_raise => Some(requested),
        // `None < Some(_)`: approving nothing is the most restrictive.
        Some(requested) => configured.min(Some(requested)),
    }
}

/// How a call was decided, as the audit log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// A person was asked and confirmed.
    Elicited,
    /// No person could be asked; the caller passed `confirm: true`.
    CallerConfirmed,
    /// At or below the auto-approve threshold.
    AutoApproved,
    /// A read or a low-risk write: no confirmation needed.
    NotRequired,
    /// Declined, cancelled, or no way to confirm.
    Blocked,
}

impl Method {
    /// The method as the audit log writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Elicited => "elicited",
            Method::CallerConfirmed => "caller_confirmed",
            Method::AutoApproved => "auto_approved",
            Method::NotRequired => "not_required",
            Method::Blocked => "blocked",
        }
    }
}

/// What to do with a call before anyone is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Proceed without asking (`auto_approved` or `not_required`).
    Proceed(Method),
    /// Ask a person to confirm.
    Ask,
}

/// Rules 1 and 2: proceed without asking, or ask.
///
/// # Example
/// ```
/// use askgate_core::{Gate, Method, Risk, gate};
/// assert_eq!(gate(Risk::Read, None), Gate::Proceed(Method::NotRequired));
/// assert_eq!(gate(Risk::MediumWrite, Some(Risk::MediumWrite)), Gate::Proceed(Method::AutoApproved));
/// assert_eq!(gate(Risk::Destructive, Some(Risk::HighWrite)), Gate::Ask);
/// ```
pub fn gate(risk: Risk, threshold: Option<Risk>) -> Gate {
    if threshold.is_some_and(|threshold| risk <= threshold) {
        Gate::Proceed(Method::AutoApproved)
    } else if risk <= Risk::LowWrite {
        Gate::Proceed(Method::NotRequired)
    } else {
        Gate::Ask
    }
}

/// The id of the confirmation checkbox.
pub const CONFIRM_FIELD: &str = "confirm";

/// The call a confirmation is about, as shown to the person and the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call<'a> {
    /// The upstream server.
    pub server: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// Its risk.
    pub risk: Risk,
    /// A redacted preview of the arguments, if the caller has one (never
    /// secrets: this is shown to the person).
    pub preview: Option<&'a str>,
}

/// The form that asks a person to confirm `call`: one `confirm` checkbox,
/// pre-ticked, so accepting is enough.
pub fn confirmation_form(call: &Call<'_>) -> Form {
    let mut message = format!(
        "Allow {} to run {}? Risk: {}.",
        call.server,
        call.tool,
        call.risk.as_str().replace('_', " ")
    );
    if let Some(preview) = call.preview {
        message.push_str("\nArguments: ");
        message.push_str(preview);
    }
    Form {
        message,
        fields: vec![Field {
            id: CONFIRM_FIELD.to_owned(),
            title: format!("Run {}", call.tool),
            description: Some(format!(
                "Untick, or decline, to stop this call to {}.",
                call.server
            )),
            required: true,
            sensitive: false,
            default: Some(Json::Bool(true)),
            kind: FieldKind::Boolean(BooleanSpec::default()),
        }],
        supplied: Map::new(),
    }
}

/// What came back when a person was asked to confirm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// Accepted; the `confirm` field's value, `None` when it is missing (the
    /// client never showed the prompt).
    Accepted {
        /// The checkbox.
        confirm: Option<bool>,
    },
    /// The person declined.
    Declined,
    /// The person cancelled (dismissed the prompt).
    Cancelled,
    /// No person could be asked.
    Unavailable(Unavailable),
}

/// Why no person could be asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// The client cannot show an ask (no elicitation capability).
    NoElicitation,
    /// Asking failed (transport error, timeout, a malformed reply). The text
    /// names what failed, never an answer's values.
    Failed(String),
}

/// The decision on a call that needed confirmation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the call goes ahead.
    pub proceed: bool,
    /// How it was decided.
    pub method: Method,
    /// Whether the decision is a person's "no" (final: not to be retried or
    /// overridden).
    pub final_no: bool,
    /// For the model: what happened and how to recover. Empty when the call
    /// proceeds.
    pub for_model: String,
    /// For the audit log: why, in words that never call a client's failure a
    /// person's decline.
    pub for_audit: String,
}

/// Rule 3: what the answer (or its absence) decides. `caller_confirmed` is
/// the caller's `confirm: true`, which stands in only where no person could
/// be asked.
pub fn decide(call: &Call<'_>, heard: &Heard, caller_confirmed: bool) -> Verdict {
    let person_said_no = |what: &str| Verdict {
        proceed: false,
        method: Method::Blocked,
        final_no: true,
        for_model: format!(
            "The person {what} the call to {} on {}. This is final: do not retry it, \
             and do not pass confirm: true to get around it. Ask the user how to go on.",
            call.tool, call.server
        ),
        for_audit: format!("the person {what}"),
    };
    let nobody_asked = |why: String| {
        if caller_confirmed {
            Verdict {
                proceed: true,
                method: Method::CallerConfirmed,
                final_no: false,
                for_model: String::new(),
                for_audit: format!("{why}; the caller passed confirm: true"),
            }
        } else {
            Verdict {
                proceed: false,
                method: Method::Blocked,
                final_no: false,
                for_model: format!(
                    "The call to {} on {} needs a person's confirmation (risk: {}), and {why}. \
                     If the user has already confirmed this exact call in the conversation, \
                     call it again with confirm: true; otherwise ask the user first.",
                    call.tool, call.server, call.risk
                ),
                for_audit: format!("{why}; no confirmation from the caller"),
            }
        }
    };
    match heard {
        Heard::Accepted {
            confirm: Some(true),
        } => Verdict {
            proceed: true,
            method: Method::Elicited,
            final_no: false,
            for_model: String::new(),
            for_audit: "the person confirmed".into(),
        },
        Heard::Accepted {
            confirm: Some(false),
        } => person_said_no("unticked the confirmation of"),
        Heard::Declined => person_said_no("declined"),
        Heard::Cancelled => person_said_no("cancelled"),
        Heard::Accepted { confirm: None } => nobody_asked(
            "the client accepted without the confirm field, so no person saw the prompt".into(),
        ),
        Heard::Unavailable(Unavailable::NoElicitation) => {
            nobody_asked("the client cannot show a confirmation (no elicitation)".into())
        }
        Heard::Unavailable(Unavailable::Failed(what)) => {
            nobody_asked(format!("asking for confirmation failed ({what})"))
        }
    }
}
