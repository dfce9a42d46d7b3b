//! The crate's error, and the specific kinds it carries.
//!
//! A person's refusal, decline or cancel is never an error: those are
//! [`Outcome`](crate::Outcome)s and [`Problem`](crate::Problem)s. An [`Error`]
//! is about a form that cannot be asked as declared (the author's side), a
//! reply, link or state from a surface or peer that does not fit, or misuse
//! of the API (a bug in the calling code).

use std::fmt;

use crate::approval::PolicyError;
use crate::link::LinkError;
use crate::problem::Problem;
use crate::revision::UnknownRevision;
use crate::risk::UnknownRisk;
use crate::seal::StateError;
use crate::typed::ValuesMismatch;

/// Everything that can go wrong in askgate-core, one variant per kind.
///
/// Each variant carries the specific kind as its payload, so a caller that
/// must tell the cases apart matches the kind
/// (`Error::Form(FormError::UnknownZone { .. })`), and one that only reports
/// it shows the message. Functions whose failures are all of one kind return
/// that kind (a [`StateError`] from [`Sealer::open`](crate::Sealer::open), a
/// [`LinkError`] from [`LinkSigner::open`](crate::LinkSigner::open), ...);
/// each converts into this enum, so `?` works. [`Error::Misuse`] stands
/// apart: it is never caused by a person or a peer, only by the calling code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A form or question set cannot be asked as declared.
    #[error(transparent)]
    Form(#[from] FormError),
    /// A reply delivered by a surface does not fit its question set.
    #[error(transparent)]
    Reply(#[from] ReplyError),
    /// Answer text that is not one JSON object.
    #[error(transparent)]
    Content(#[from] ContentError),
    /// The model's `ask` input was not usable.
    #[error(transparent)]
    ModelInput(#[from] ModelInputError),
    /// An inbox link was refused.
    #[error(transparent)]
    Link(#[from] LinkError),
    /// A sealed `requestState` was refused.
    #[error(transparent)]
    State(#[from] StateError),
    /// A protocol revision name askgate does not know.
    #[error(transparent)]
    UnknownRevision(#[from] UnknownRevision),
    /// A risk level that is not one of the five.
    #[error(transparent)]
    UnknownRisk(#[from] UnknownRisk),
    /// An approval rule that cannot be applied as configured.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The API was used against its contract: a bug in the calling code,
    /// never something a person or a peer did.
    #[error(transparent)]
    Misuse(#[from] Misuse),
}

impl From<ValuesMismatch> for Error {
    fn from(mismatch: ValuesMismatch) -> Error {
        Error::Misuse(Misuse::Values(mismatch))
    }
}

/// A reply from a surface (the client, the inbox, the CLI, an approvals
/// channel) that does not fit the question set it answers. Nothing of it is
/// applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// A reply answers a question the set does not hold.
    #[error(
        "the reply answers {id:?}, which is not a question of this set; its questions are {}",
        expected.iter().map(|id| format!("{id:?}")).collect::<Vec<_>>().join(", ")
    )]
    UnknownQuestion {
        /// The id given.
        id: String,
        /// The ids of the set's questions.
        expected: Vec<String>,
    },
    /// Answers were delivered to a call that waits on a yes/no decision.
    #[error(
        "this call waits on a yes/no decision, and a set of answers was delivered; send approve or reject instead (the answers were not read as a rejection)"
    )]
    DeliveryMismatch,
}

/// Answer text (an `ElicitResult`'s `content`) that is not one JSON
/// object. It names where reading stopped and why, never the text: it may
/// hold an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the answer is not one JSON object: {reason} (line {line}, column {column}); expected {{\"<property>\": <value>, ...}}"
)]
#[non_exhaustive]
pub struct ContentError {
    /// Why reading stopped, in words.
    pub reason: &'static str,
    /// The line where it stopped, from 1.
    pub line: usize,
    /// The column where it stopped, from 1.
    pub column: usize,
}

impl From<serde_json::Error> for ContentError {
    fn from(error: serde_json::Error) -> ContentError {
        use serde_json::error::Category;
        let reason = match error.classify() {
            Category::Eof => "it ends before the object does",
            Category::Syntax => "it is not valid JSON, or has more after the object",
            Category::Data => "it is JSON, but not an object",
            Category::Io => "it could not be read",
        };
        ContentError {
            reason,
            line: error.line(),
            column: error.column(),
        }
    }
}

/// A use of the API against its contract. Each message names what to do
/// instead; fixing the calling code is the only remedy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// Every field is already settled; there is nothing to ask.
    #[error("nothing to ask: every field is supplied or answered; settle the ask instead")]
    NothingToAsk,
    /// The re-ask cap is zero.
    #[error("the re-ask cap must allow at least one attempt")]
    ZeroAttempts,
    /// Settled values read back as a typed form they were not settled
    /// from.
    #[error(transparent)]
    Values(#[from] ValuesMismatch),
}

/// Why a form or a question set cannot be asked as declared: the author's
/// side.
///
/// A form MCP cannot carry is refused, never widened into something looser.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FormError {
    /// The form has no fields.
    #[error("the form has no fields; expected at least one")]
    EmptyForm,
    /// A field id is empty or has characters MCP property names should not carry.
    #[error("field id {id:?} is not usable: expected 1 to 64 characters from A-Z a-z 0-9 _ - .")]
    BadId {
        /// The id.
        id: String,
    },
    /// Two fields share an id.
    #[error("two fields have the id {id:?}; ids must be unique")]
    DuplicateId {
        /// The id.
        id: String,
    },
    /// A field id equals a property name generated for another field.
    #[error(
        "field id {id:?} collides with the property askgate generates for field {owner:?}; rename one of them"
    )]
    IdCollision {
        /// The colliding name.
        id: String,
        /// The field whose generated property has that name.
        owner: String,
    },
    /// A number, integer or boolean field with options: MCP carries choices only as strings.
    #[error(
        "field {field:?} is a {kind} with options, which MCP cannot carry; use a choice field with string values"
    )]
    ChoicesOnScalar {
        /// The field id.
        field: String,
        /// `number`, `integer` or `boolean`.
        kind: &'static str,
    },
    /// A choice field without options.
    #[error("choice field {field:?} has no options; expected at least one")]
    NoOptions {
        /// The field id.
        field: String,
    },
    /// Two options of a field share a value, or a hotkey.
    #[error("field {field:?} offers {what} {value:?} twice; each must be unique")]
    DuplicateOption {
        /// The field id.
        field: String,
        /// `"the value"` or `"the hotkey"`.
        what: &'static str,
        /// The repeated value or hotkey.
        value: String,
    },
    /// An option value is empty or only spaces.
    #[error(
        "field {field:?} has an option with an empty value; a blank answer means \"left empty\""
    )]
    EmptyOption {
        /// The field id.
        field: String,
    },
    /// A constraint that cannot be met, such as a minimum above the maximum.
    #[error("field {field:?}: {reason}")]
    BadConstraint {
        /// The field id.
        field: String,
        /// What is wrong, in words.
        reason: String,
    },
    /// A zone named in the declaration is not in the time-zone database.
    #[error("field {field:?} names the zone {zone:?}, which is not an IANA time zone")]
    UnknownZone {
        /// The field id.
        field: String,
        /// The zone as written.
        zone: String,
    },
    /// An option of an instant or zone field is not a valid instant or zone.
    #[error("field {field:?} offers an option that is not valid: {problem}")]
    BadOption {
        /// The field id.
        field: String,
        /// Why the option value fails the field's own check.
        problem: Box<Problem>,
    },
    /// A default does not pass the field's own check.
    #[error("the default of field {field:?} is not valid: {problem}")]
    BadDefault {
        /// The field id.
        field: String,
        /// Why.
        problem: Box<Problem>,
    },
    /// A supplied value does not pass the field's own check.
    #[error("the supplied value of field {field:?} is not valid: {problem}")]
    BadSupplied {
        /// The field id.
        field: String,
        /// Why.
        problem: Box<Problem>,
    },
    /// A supplied value names no field of the form.
    #[error("a value is supplied for {id:?}, which is not a field of this form")]
    UnknownSupplied {
        /// The id given.
        id: String,
    },
    /// A sensitive field cannot be asked in form mode; it needs URL mode.
    #[error(
        "field {field:?} is sensitive: form mode must never ask for secrets; ask it through URL mode"
    )]
    SensitiveField {
        /// The field id.
        field: String,
    },
    /// A question set with no questions, or more than five.
    #[error("a question set holds 1 to 5 questions; this one has {given}")]
    QuestionCount {
        /// How many it has.
        given: usize,
    },
}

/// The model's input to the `ask` tool was not usable
/// ([`ask_tool::parse_input`](crate::ask_tool::parse_input)); the message
/// says what to fix. Converts into [`Error::ModelInput`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ModelInputError {
    /// One line per thing to fix, each starting with where it is.
    pub fixes: Vec<String>,
}

impl fmt::Display for ModelInputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "The `ask` call was not sent to the person. Fix these and call `ask` again:"
        )?;
        for fix in &self.fixes {
            writeln!(f, "- {fix}")?;
        }
        Ok(())
    }
}
