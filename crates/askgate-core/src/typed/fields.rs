//! Which Rust types are which fields: the [`AskField`] implementations for
//! std and jiff types.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ZonedDateTime};
use serde_json::Value as Json;

use super::{AskChoice, AskField, TimeRange};
use crate::form::{
    BooleanSpec, ChoiceSpec, DateSpec, FieldKind, InstantSpec, IntegerSpec, NumberSpec, TextSpec,
    TimeRangeSpec, ZoneSpec,
};
use crate::value::{Instant, Value};

impl AskField for String {
    type Default = String;

    fn kind() -> FieldKind {
        FieldKind::Text(TextSpec::default())
    }

    fn from_value(value: &Value, _zone: Option<&TimeZone>) -> Option<String> {
        match value {
            Value::Text(text) => Some(text.clone()),
            _ => None,
        }
    }

    fn default_json(default: String) -> Json {
        Json::String(default)
    }
}

impl AskField for bool {
    type Default = bool;

    fn kind() -> FieldKind {
        FieldKind::Boolean(BooleanSpec::default())
    }

    fn from_value(value: &Value, _zone: Option<&TimeZone>) -> Option<bool> {
        match value {
            Value::Boolean(b) => Some(*b),
            _ => None,
        }
    }

    fn default_json(default: bool) -> Json {
        Json::Bool(default)
    }
}

impl AskField for f64 {
    type Default = f64;

    fn kind() -> FieldKind {
        FieldKind::Number(NumberSpec::default())
    }

    fn from_value(value: &Value, _zone: Option<&TimeZone>) -> Option<f64> {
        match value {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    fn default_json(default: f64) -> Json {
        serde_json::Number::from_f64(default).map_or(Json::Null, Json::Number)
    }
}

impl AskField for f32 {
    type Default = f32;

    fn kind() -> FieldKind {
        FieldKind::Number(NumberSpec {
            minimum: Some(f64::from(f32::MIN)),
            maximum: Some(f64::from(f32::MAX)),
            options: Vec::new(),
        })
    }

    fn from_value(value: &Value, _zone: Option<&TimeZone>) -> Option<f32> {
        match value {
            // Within f32's finite range (the field's bounds): the cast
            // rounds to the nearest f32, it cannot overflow.
            Value::Number(n) if n.abs() <= f64::from(f32::MAX) => Some(*n as f32),
            _ => None,
        }
    }

    fn default_json(default: f32) -> Json {
        f64::default_json(f64::from(default))
    }
}

/// Integers: an `integer` field within the type's range (askgate-core caps
/// every integer at ±(2^53 − 1), so wider types keep that cap).
macro_rules! integer_fields {
    ($($ty:ty),*) => {$(
        impl AskField for $ty {
            type Default = $ty;

            fn kind() -> FieldKind {
                FieldKind::Integer(IntegerSpec {
                    minimum: i64::try_from(<$ty>::MIN).ok(),
                    maximum: i64::try_from(<$ty>::MAX).ok(),
                    options: Vec::new(),
                })
            }

            fn from_value(value: &Value, _zone: Option<&TimeZone>) -> Option<$ty> {
                match value {
                    Value::Integer(n) => <$ty>::try_from(*n).ok(),
                    _ => None,
                }
            }

            fn default_json(default: $ty) -> Json {
                Json::from(default)
            }
        }
    )*};
}

integer_fields!(i8, i16, i32, i64, u8, u16, u32, u64, usize);

impl AskField for Date {
    type Default = Date;

    fn kind() -> FieldKind {
        FieldKind::Date(DateSpec::default())
    }

    fn from_value(value: &Value, _zone: Option<&TimeZone>) -> Option<Date> {
        match value {
            Value::Date(date) => Some(*date),
            _ => None,
        }
    }

    fn default_json(default: Date) -> Json {
        Json::String(default.to_string())
    }
}

impl AskField for Timestamp {
    type Default = Timestamp;

    fn kind() -> FieldKind {
        FieldKind::Instant(InstantSpec::default())
    }

    fn from_value(value: &Value, _zone: Option<&TimeZone>) -> Option<Timestamp> {
        match value {
            Value::Instant(instant) => Some(instant.timestamp),
            _ => None,
        }
    }

    fn default_json(default: Timestamp) -> Json {
        Json::String(default.to_string())
    }
}

impl AskField for ZonedDateTime {
    type Default = ZonedDateTime;

    fn kind() -> FieldKind {
        FieldKind::Instant(InstantSpec::default())
    }

    fn from_value(value: &Value, zone: Option<&TimeZone>) -> Option<ZonedDateTime> {
        match value {
            Value::Instant(instant) => Some(zoned_at(instant, zone)),
            _ => None,
        }
    }

    fn default_json(default: ZonedDateTime) -> Json {
        Json::String(instant_text(&default))
    }
}

impl AskField for TimeZone {
    /// An IANA name such as `"Europe/Paris"`.
    type Default = String;

    fn kind() -> FieldKind {
        FieldKind::Zone(ZoneSpec::default())
    }

    fn from_value(value: &Value, _zone: Option<&TimeZone>) -> Option<TimeZone> {
        match value {
            Value::Zone(name) => crate::time::zone(name),
            _ => None,
        }
    }

    fn default_json(default: String) -> Json {
        Json::String(default)
    }
}

impl AskField for TimeRange {
    type Default = TimeRange;

    fn kind() -> FieldKind {
        FieldKind::TimeRange(TimeRangeSpec::default())
    }

    fn from_value(value: &Value, zone: Option<&TimeZone>) -> Option<TimeRange> {
        match value {
            Value::TimeRange { from, to } => Some(TimeRange {
                from: zoned_at(from, zone),
                to: zoned_at(to, zone),
            }),
            _ => None,
        }
    }

    fn default_json(default: TimeRange) -> Json {
        serde_json::json!({
            "from": instant_text(&default.from),
            "to": instant_text(&default.to),
        })
    }
}

impl<T: AskChoice> AskField for Vec<T> {
    type Default = Vec<T>;

    /// Nothing picked is an empty list; `#[ask(min_items = 1)]` makes the
    /// person pick.
    const REQUIRED: bool = false;

    fn kind() -> FieldKind {
        FieldKind::Choice(ChoiceSpec {
            options: T::options(),
            multiple: true,
            min_items: None,
            max_items: None,
            strict: true,
        })
    }

    fn from_value(value: &Value, _zone: Option<&TimeZone>) -> Option<Vec<T>> {
        match value {
            Value::Choices(values) => values.iter().map(|v| T::from_choice(v)).collect(),
            _ => None,
        }
    }

    fn absent() -> Option<Vec<T>> {
        Some(Vec::new())
    }

    fn default_json(default: Vec<T>) -> Json {
        Json::Array(
            default
                .iter()
                .map(|choice| Json::from(choice.value()))
                .collect(),
        )
    }
}

impl<T: AskField> AskField for Option<T> {
    type Default = T::Default;

    const REQUIRED: bool = false;

    fn kind() -> FieldKind {
        T::kind()
    }

    fn from_value(value: &Value, zone: Option<&TimeZone>) -> Option<Option<T>> {
        T::from_value(value, zone).map(Some)
    }

    fn absent() -> Option<Option<T>> {
        Some(None)
    }

    fn default_json(default: T::Default) -> Json {
        T::default_json(default)
    }
}

/// An instant in the field's zone, or at the offset it was settled with.
fn zoned_at(instant: &Instant, zone: Option<&TimeZone>) -> ZonedDateTime {
    let zone = zone
        .cloned()
        .unwrap_or_else(|| TimeZone::fixed(instant.offset));
    instant.timestamp.to_zoned_datetime(zone)
}

/// A zoned time as an instant's RFC 3339 text, at its offset.
fn instant_text(zoned: &ZonedDateTime) -> String {
    Instant {
        timestamp: zoned.timestamp(),
        offset: zoned.offset(),
    }
    .to_string()
}
