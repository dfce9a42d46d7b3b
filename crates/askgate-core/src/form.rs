//! The declared ask: a form of typed fields, as written in JSON.
//!
//! A [`Form`] is what a person is asked: a message and a list of [`Field`]s.
//! It is plain data (serde) — the same JSON the CLI, the gateway config and
//! the inbox read. Nothing here is checked yet: [`Ask::new`](crate::Ask::new)
//! checks a form once and keeps the parsed result, so every later step works
//! on a form known to be sound.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

/// A form: a message and typed fields, some of them perhaps already known.
///
/// # Example
/// ```
/// use askgate_core::Form;
/// let form: Form = serde_json::from_str(r#"{
///   "message": "Deploy billing?",
///   "fields": [
///     {"id": "confirm", "title": "Deploy now", "type": "boolean", "default": true},
///     {"id": "env", "title": "Environment", "type": "choice",
///      "options": [{"value": "staging", "label": "Staging"},
///                  {"value": "prod", "label": "Production"}]}
///   ],
///   "supplied": {"env": "staging"}
/// }"#)?;
/// assert_eq!(form.fields.len(), 2);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Form {
    /// What the person is asked, in a sentence or two.
    pub message: String,
    /// The fields, in the order they are shown.
    pub fields: Vec<Field>,
    /// Values already known, by field id, in the field's JSON shape. A supplied
    /// field is never asked.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub supplied: Map<String, Json>,
}

/// One typed field of a form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    /// The field's id: the key of its value in the settled outcome.
    pub id: String,
    /// What the person reads as the field's name; refusal messages use it too.
    pub title: String,
    /// A longer explanation shown beside the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the field must be answered (default `true`).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub required: bool,
    /// A secret (password, token, key): never asked in form mode, only through
    /// a URL the person opens, and never echoed back.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sensitive: bool,
    /// The pre-picked value, in the field's JSON shape (see [`Value`](crate::Value)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Json>,
    /// The field's type and its constraints.
    #[serde(flatten)]
    pub kind: FieldKind,
}

/// A field's type, with the constraints that type takes.
///
/// In JSON the type is the `type` key of the field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FieldKind {
    /// Free text.
    Text(TextSpec),
    /// A number.
    Number(NumberSpec),
    /// A whole number.
    Integer(IntegerSpec),
    /// Yes or no.
    Boolean(BooleanSpec),
    /// One or several of the options on offer, perhaps with free entry.
    Choice(ChoiceSpec),
    /// A calendar date, `YYYY-MM-DD`.
    Date(DateSpec),
    /// A point in time: RFC 3339 with an offset, or a local time in the field's zone.
    Instant(InstantSpec),
    /// An IANA time zone name such as `Europe/Paris`.
    Zone(ZoneSpec),
    /// A half-open span of time: two instants, `from` before `to`.
    TimeRange(TimeRangeSpec),
}

impl FieldKind {
    /// The type's name as written in JSON (`"text"`, `"time_range"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            FieldKind::Text(_) => "text",
            FieldKind::Number(_) => "number",
            FieldKind::Integer(_) => "integer",
            FieldKind::Boolean(_) => "boolean",
            FieldKind::Choice(_) => "choice",
            FieldKind::Date(_) => "date",
            FieldKind::Instant(_) => "instant",
            FieldKind::Zone(_) => "zone",
            FieldKind::TimeRange(_) => "time_range",
        }
    }
}

/// Constraints of a `text` field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextSpec {
    /// The fewest characters accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u32>,
    /// The most characters accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u32>,
    /// A format the text must have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TextFormat>,
}

/// A format a `text` field can require.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextFormat {
    /// An email address, `name@example.com`.
    Email,
    /// An absolute URI with a scheme, `https://example.com/`.
    Uri,
}

/// Constraints of a `number` field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumberSpec {
    /// The smallest value accepted (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    /// The largest value accepted (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
    /// Choices cannot be carried for a number in MCP; a form with any is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ChoiceOption>,
}

/// Constraints of an `integer` field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntegerSpec {
    /// The smallest value accepted (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<i64>,
    /// The largest value accepted (inclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<i64>,
    /// Choices cannot be carried for an integer in MCP; a form with any is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ChoiceOption>,
}

/// Constraints of a `boolean` field (none but the refused `options`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BooleanSpec {
    /// Choices cannot be carried for a boolean in MCP; a form with any is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ChoiceOption>,
}

/// One option on offer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChoiceOption {
    /// What the answer holds when this option is picked.
    pub value: String,
    /// What the person reads.
    pub label: String,
    /// A one-character key that picks this option in the inbox and the terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hotkey: Option<char>,
}

/// Constraints of a `choice` field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChoiceSpec {
    /// The options on offer, in the order shown.
    pub options: Vec<ChoiceOption>,
    /// Whether several options may be picked.
    #[serde(default, skip_serializing_if = "is_false")]
    pub multiple: bool,
    /// With `multiple`: the fewest options picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u32>,
    /// With `multiple`: the most options picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u32>,
    /// `true` (the default): only the options on offer. `false`: the person may
    /// also type a value that is not on offer.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub strict: bool,
}

/// Constraints of a `date` field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DateSpec {}

/// Constraints of an `instant` field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstantSpec {
    /// The IANA zone local times are read in and shown in. Without it, an
    /// answer must carry its offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Suggested instants (values in RFC 3339), offered as choices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ChoiceOption>,
    /// With options: `true` accepts only the suggestions, `false` (the default)
    /// also any other instant.
    #[serde(default, skip_serializing_if = "is_false")]
    pub strict: bool,
}

/// Constraints of a `zone` field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    /// Suggested zones (values are IANA names), offered as choices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ChoiceOption>,
    /// With options: `true` accepts only the suggestions, `false` (the default)
    /// also any other IANA zone.
    #[serde(default, skip_serializing_if = "is_false")]
    pub strict: bool,
}

/// Constraints of a `time_range` field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeRangeSpec {
    /// The IANA zone local times are read in and shown in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

/// Whether `id` can be a field's id: 1 to 64 characters from A-Z a-z 0-9
/// `_` `-` `.`, which any MCP client carries as a property name.
pub(crate) fn usable_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn yes() -> bool {
    true
}

// serde's `skip_serializing_if` passes a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_true(value: &bool) -> bool {
    *value
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(value: &bool) -> bool {
    !*value
}
