//! Typed asks: a Rust struct as a [`Form`], and the settled [`Values`] back
//! as that struct.
//!
//! [`AskForm`] is the struct's side, [`AskField`] the side of each field's
//! type, [`AskChoice`] the side of an enum whose variants are the options of
//! a choice. All three are usually derived (`#[derive(AskForm)]`,
//! `#[derive(AskChoice)]` from askgate-derive, re-exported by askgate-mcp);
//! the traits are here so the engine, which knows every [`FieldKind`], also
//! decides which Rust types map onto which kind.
//!
//! | Rust type | field |
//! |---|---|
//! | `String` | `text` |
//! | `f64`, `f32` | `number` (an `f32` within its finite range) |
//! | `i8` … `i64`, `u8` … `u64`, `usize` | `integer`, within the type's range |
//! | `bool` | `boolean` |
//! | an `#[derive(AskChoice)]` enum | single `choice` |
//! | `Vec` of one | multiple `choice`; nothing picked is an empty `Vec` |
//! | `jiff::civil::Date` | `date` |
//! | `jiff::Timestamp`, `jiff::ZonedDateTime` | `instant` |
//! | `jiff::tz::TimeZone` | `zone` |
//! | [`TimeRange`] | `time_range` |
//! | `Option<T>` | as `T`, not required: `None` when left empty |
//!
//! Anything else — a nested struct, a map, a tuple, a list of anything but
//! choices — has no place in MCP's flat `requestedSchema`, and is refused at
//! compile time with a message that says so.

use std::any::type_name;

use jiff::ZonedDateTime;
use jiff::tz::TimeZone;
use serde_json::Value as Json;

use crate::form::{ChoiceOption, FieldKind, Form};
use crate::value::{Value, Values};

mod fields;
#[doc(hidden)]
pub mod private;

/// A struct asked of a person as one form, and read back from its settled
/// values.
///
/// Derive it (`#[derive(AskForm)]`, see askgate-derive) on a struct with
/// named fields whose types implement [`AskField`]. The derived
/// [`form`](AskForm::form) is checked only by [`Ask::new`](crate::Ask::new)
/// (a zone that does not exist, a default outside the bounds): a test that
/// calls `Ask::new(T::form())` once keeps such mistakes out of a release.
///
/// # Example
/// A hand-written implementation, as the derive would write it:
/// ```
/// use askgate_core::{Ask, AskForm, Form, Outcome, Response, Revision, Step, Values, ValuesMismatch};
///
/// struct Replicas {
///     count: u8,
/// }
///
/// impl AskForm for Replicas {
///     fn form() -> Form {
///         serde_json::from_value(serde_json::json!({
///             "message": "How many replicas?",
///             "fields": [{"id": "count", "title": "Count", "type": "integer", "minimum": 1, "maximum": 5}]
///         })).expect("a well-formed form")
///     }
///
///     fn from_values(values: &Values) -> Result<Replicas, ValuesMismatch> {
///         Ok(Replicas { count: askgate_core::AskField::read(values, "count", None)? })
///     }
/// }
///
/// let ask = Ask::new(Replicas::form())?;
/// let response: Response = serde_json::from_str(r#"{"action": "accept", "content": {"count": 3}}"#)?;
/// let Step::Settled(Outcome::Accepted { values }) = ask.settle(Revision::V2025_11_25, &response)
/// else { panic!("3 is within the bounds") };
/// assert_eq!(Replicas::from_values(&values)?.count, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait AskForm: Sized {
    /// The form: the struct's message and one field per struct field, in
    /// declaration order.
    fn form() -> Form;

    /// The struct from the values of an accepted [`Outcome`](crate::Outcome)
    /// of an ask about [`form`](AskForm::form).
    ///
    /// # Errors
    /// [`ValuesMismatch`] when the values were not settled from this form: a
    /// required field has no value, or a value does not fit its field's
    /// type. Values settled from `Self::form()` always fit.
    fn from_values(values: &Values) -> Result<Self, ValuesMismatch>;
}

/// A Rust type that can be one field of a form.
///
/// Implemented here for text, numbers, integers, booleans, jiff's dates,
/// instants and zones, [`TimeRange`], `Vec` of an [`AskChoice`], and
/// `Option` of any of these; `#[derive(AskChoice)]` implements it for the
/// enum. Implement it for a type of your own (say, a newtype around
/// `String`) to use that type as a field.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of an MCP form",
    label = "not a type MCP elicitation can carry",
    note = "MCP elicitation carries only flat primitive fields: text (`String`), numbers (`f64`, `f32`), integers (`i8`..`i64`, `u8`..`u64`, `usize`), `bool`, a `#[derive(AskChoice)]` enum or a `Vec` of one, `jiff::civil::Date`, `jiff::Timestamp`, `jiff::ZonedDateTime`, `jiff::tz::TimeZone`, `askgate_core::TimeRange`, or an `Option` of any of these",
    note = "a nested struct, a map, a tuple or a list of anything but choices has no place in the flat `requestedSchema`: flatten it into fields of this struct, or derive `AskChoice` on a fieldless enum"
)]
pub trait AskField: Sized {
    /// What `#[ask(default = ...)]` takes for a field of this type (the
    /// type itself for most; a `String` for text and zone names).
    type Default;

    /// Whether the person must answer (`false` for `Option` and `Vec`).
    const REQUIRED: bool = true;

    /// The field's type with its natural constraints (a `u8` is an integer
    /// from 0 to 255).
    fn kind() -> FieldKind;

    /// The value as this type, or `None` when it is not a value of this
    /// type's kind (or does not fit it). `zone` is the field's declared
    /// zone, in which instants are shown.
    fn from_value(value: &Value, zone: Option<&TimeZone>) -> Option<Self>;

    /// The value of a field that settled with none (left empty): `None`
    /// when the field must have one, `Some(None)` for an `Option`, an empty
    /// `Vec` for a multiple choice.
    fn absent() -> Option<Self> {
        None
    }

    /// A default in the field's JSON shape (see [`Value`]).
    fn default_json(default: Self::Default) -> Json;

    /// Read the field `id` of settled values as this type; `zone` is the
    /// field's declared zone, if any.
    ///
    /// # Errors
    /// [`ValuesMismatch`] when a required field has no value, or its value
    /// does not fit this type.
    fn read(values: &Values, id: &str, zone: Option<&str>) -> Result<Self, ValuesMismatch> {
        match values.get(id) {
            Some(settled) => {
                let zone = zone.and_then(crate::time::zone);
                Self::from_value(&settled.value, zone.as_ref()).ok_or_else(|| {
                    ValuesMismatch::Unfit {
                        field: id.to_owned(),
                        kind: value_kind(&settled.value),
                        rust_type: type_name::<Self>(),
                    }
                })
            }
            None => Self::absent().ok_or_else(|| ValuesMismatch::Missing {
                field: id.to_owned(),
            }),
        }
    }
}

/// A fieldless enum whose variants are the options of a choice: MCP choices
/// are strings, so each variant has a string value and a label.
///
/// Derive it (`#[derive(AskChoice)]`): the value is the variant's name in
/// snake case, the label its words (`BlueGreen` is `blue_green`, "Blue
/// green"), both changed with `#[ask(value = "...", label = "...")]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a choice: derive `AskChoice` on a fieldless enum",
    label = "not an `#[derive(AskChoice)]` enum",
    note = "MCP carries a choice, and a list of choices, only as strings from a fixed set: a `Vec` field is a multiple choice, and its items must be an `#[derive(AskChoice)]` enum"
)]
pub trait AskChoice: Sized + 'static {
    /// Every option, one per variant, in declaration order.
    fn options() -> Vec<ChoiceOption>;

    /// The variant whose value is `value`.
    fn from_choice(value: &str) -> Option<Self>;

    /// The variant's value, as the answer holds it.
    fn value(&self) -> &'static str;
}

/// A span of time as a `time_range` field settles it: `from` inclusive,
/// `to` exclusive, `from` before `to`.
///
/// Both ends are in the field's zone when it has one (`#[ask(zone = ...)]`),
/// otherwise at the offset they were given with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeRange {
    /// The start, inclusive.
    pub from: ZonedDateTime,
    /// The end, exclusive.
    pub to: ZonedDateTime,
}

/// Why settled values could not be read back as a typed form: they were not
/// settled from that form. A caller's mistake, never the person's: values
/// settled from the type's own form always fit.
///
/// The messages name the field and the kinds involved, never the value.
/// Converts into [`Error::Misuse`](crate::Error::Misuse)
/// ([`Misuse::Values`](crate::Misuse::Values)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValuesMismatch {
    /// A field that must have a value has none.
    #[error(
        "field {field:?} must have a value and the settled values hold none; read values settled from this type's own form"
    )]
    Missing {
        /// The field id.
        field: String,
    },
    /// A value is of another kind than the field's type, or out of its range.
    #[error(
        "field {field:?} holds a {kind} value that does not fit `{rust_type}`; read values settled from this type's own form"
    )]
    Unfit {
        /// The field id.
        field: String,
        /// The kind of the value held (`"text"`, `"integer"`, ...).
        kind: &'static str,
        /// The Rust type it was read as.
        rust_type: &'static str,
    },
}

/// The kind of a value, for messages that must not show the value itself.
fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::Text(_) => "text",
        Value::Number(_) => "number",
        Value::Integer(_) => "integer",
        Value::Boolean(_) => "boolean",
        Value::Choice(_) => "choice",
        Value::Choices(_) => "multiple choice",
        Value::Date(_) => "date",
        Value::Instant(_) => "instant",
        Value::Zone(_) => "zone",
        Value::TimeRange { .. } => "time range",
    }
}
