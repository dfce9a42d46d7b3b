//! Risk levels, the auto-approve threshold, and the confirmation a person
//! is asked for.
//!
//! Which calls need a person at all is [`gate`]: at or below the
//! auto-approve threshold, proceed (`auto_approved`); `read` and
//! `low_write` never prompt (`not_required`); anything else asks a person
//! with [`confirmation_form`]. What a person's answer — or the lack of one —
//! decides is the trust rules' job (see [`crate::rule`]).

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

/// A risk level that is not one of the five. Converts into
/// [`Error::UnknownRisk`](crate::Error::UnknownRisk).
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
    /// Not run: a person said no, the caller cancelled, or no person can
    /// be asked.
    Blocked,
    /// Not run yet: the ask waits for a person in the inbox.
    Waiting,
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
            Method::Waiting => "waiting",
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
    /// What gave it that risk, in words (`rules[0]: tool = "delete_*"`),
    /// if the caller says: the person sees why they are asked.
    pub why: Option<&'a str>,
    /// A redacted preview of the arguments, if the caller has one (never
    /// secrets: this is shown to the person).
    pub preview: Option<&'a str>,
    /// When this exact call may already have run: an earlier try of it was
    /// sent at this time and never answered (askgate stopped while it was
    /// in flight), so whether it ran is not known. The person's
    /// confirmation says so, and nothing but a person lets it run again
    /// (see [`rule`](crate::rule)).
    pub may_have_run: Option<jiff::Timestamp>,
}

/// The words for a person and a model about a call that may already have
/// run at `at` (see [`Call::may_have_run`]).
///
/// ```
/// let at: jiff::Timestamp = "2026-12-02T10:31:07Z".parse().unwrap();
/// assert_eq!(
///     askgate_core::may_have_run_note(at),
///     "This exact call may already have run at 2026-12-02 10:31:07 UTC (it was sent and \
///      its answer never came: askgate or its server stopped while it was in flight, so \
///      whether it ran is not known)."
/// );
/// ```
pub fn may_have_run_note(at: jiff::Timestamp) -> String {
    format!(
        "This exact call may already have run at {} (it was sent and its answer never came: \
         askgate or its server stopped while it was in flight, so whether it ran is not known).",
        at.strftime("%Y-%m-%d %H:%M:%S UTC")
    )
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
    if let Some(why) = call.why {
        message.push_str("\nRisk from: ");
        message.push_str(why);
        message.push('.');
    }
    if let Some(preview) = call.preview {
        message.push_str("\nArguments: ");
        message.push_str(preview);
    }
    if let Some(at) = call.may_have_run {
        message.push('\n');
        message.push_str(&may_have_run_note(at));
        message.push_str(" Run it again?");
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
