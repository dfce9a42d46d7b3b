//! Settled values and where each one came from.

use std::fmt;
use std::sync::Arc;

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::Offset;
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::Value as Json;

/// A checked value of one field.
///
/// Its JSON shape (used for defaults, supplied values and settled outcomes)
/// is the one a person would write: text, dates, zones, instants and single
/// choices are strings; numbers are numbers; booleans are booleans; a
/// multiple choice is a list of strings; a time range is
/// `{"from": "...", "to": "..."}`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// A `text` answer.
    Text(String),
    /// A `number` answer.
    Number(f64),
    /// An `integer` answer.
    Integer(i64),
    /// A `boolean` answer.
    Boolean(bool),
    /// A single `choice`: the option's value, or the free entry.
    Choice(String),
    /// A multiple `choice`: values in the order offered, free entries last.
    Choices(Vec<String>),
    /// A `date`.
    Date(Date),
    /// An `instant`.
    Instant(Instant),
    /// A `zone`: the IANA name as the time-zone database spells it.
    Zone(String),
    /// A `time_range`: `from` inclusive, `to` exclusive, `from < to`.
    TimeRange {
        /// The start, inclusive.
        from: Instant,
        /// The end, exclusive.
        to: Instant,
    },
}

/// A point in time with the offset it is shown in.
///
/// Two instants are equal when they name the same moment with the same offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instant {
    /// The moment.
    pub timestamp: Timestamp,
    /// The UTC offset it was given in, or the field's zone's offset at that moment.
    pub offset: Offset,
}

impl fmt::Display for Instant {
    /// RFC 3339, with the instant's offset; in UTC when the offset is not a
    /// whole number of minutes (historic local mean times), which RFC 3339
    /// cannot write.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let offset = if self.offset.seconds() % 60 == 0 {
            self.offset
        } else {
            Offset::UTC
        };
        fmt::Display::fmt(&self.timestamp.display_with_offset(offset), f)
    }
}

impl Value {
    /// The value in its JSON shape.
    pub fn to_json(&self) -> Json {
        match self {
            Value::Text(s) | Value::Choice(s) | Value::Zone(s) => Json::String(s.clone()),
            Value::Number(n) => serde_json::Number::from_f64(*n).map_or(Json::Null, Json::Number),
            Value::Integer(n) => Json::from(*n),
            Value::Boolean(b) => Json::Bool(*b),
            Value::Choices(values) => {
                Json::Array(values.iter().cloned().map(Json::String).collect())
            }
            Value::Date(date) => Json::String(date.to_string()),
            Value::Instant(instant) => Json::String(instant.to_string()),
            Value::TimeRange { from, to } => serde_json::json!({
                "from": from.to_string(),
                "to": to.to_string(),
            }),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Text(s) | Value::Choice(s) | Value::Zone(s) => serializer.serialize_str(s),
            Value::Number(n) => serializer.serialize_f64(*n),
            Value::Integer(n) => serializer.serialize_i64(*n),
            Value::Boolean(b) => serializer.serialize_bool(*b),
            Value::Choices(values) => values.serialize(serializer),
            Value::Date(date) => serializer.collect_str(date),
            Value::Instant(instant) => serializer.collect_str(instant),
            Value::TimeRange { from, to } => {
                let mut range = serializer.serialize_struct("TimeRange", 2)?;
                range.serialize_field("from", &from.to_string())?;
                range.serialize_field("to", &to.to_string())?;
                range.end()
            }
        }
    }
}

/// Where a settled value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// Known before the ask (the form's `supplied`); never asked.
    Supplied,
    /// The field's pre-picked default, taken because the person left it.
    Defaulted,
    /// Given by the person.
    Answered,
}

/// One settled field: its value and where the value came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// The field's id (shared with the form: cloning it is cheap).
    pub id: Arc<str>,
    /// The value.
    pub value: Value,
    /// Where it came from.
    pub source: Provenance,
}

/// Settled values in form order; serialized as a JSON object
/// `{id: {"value": ..., "source": ...}}` that keeps that order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Values(pub(crate) Vec<Settled>);

impl Values {
    /// The settled value of a field, if it has one.
    pub fn get(&self, id: &str) -> Option<&Settled> {
        self.0.iter().find(|settled| &*settled.id == id)
    }

    /// Every settled field, in form order.
    pub fn iter(&self) -> std::slice::Iter<'_, Settled> {
        self.0.iter()
    }

    /// How many fields are settled.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no field is settled.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Just the values, by id, in their JSON shape.
    pub fn to_json(&self) -> serde_json::Map<String, Json> {
        self.0
            .iter()
            .map(|settled| (settled.id.to_string(), settled.value.to_json()))
            .collect()
    }
}

impl<'a> IntoIterator for &'a Values {
    type Item = &'a Settled;
    type IntoIter = std::slice::Iter<'a, Settled>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl Serialize for Values {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Entry<'a> {
            value: &'a Value,
            source: Provenance,
        }
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for settled in &self.0 {
            map.serialize_entry(
                &*settled.id,
                &Entry {
                    value: &settled.value,
                    source: settled.source,
                },
            )?;
        }
        map.end()
    }
}
