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

/// The fields of one Rust type each: its kind, the value that reads as it
/// (and what the value becomes), and how a default is written as JSON.
macro_rules! fields {
    ($(
        $ty:ty {
            $(#[$default_doc:meta])*
            Default = $default:ty,
            kind: $kind:expr,
            from($zone:ident): $pat:pat $(if $guard:expr)? => $from:expr,
            json($d:ident): $json:expr $(,)?
        }
    )*) => {$(
        impl AskField for $ty {
            $(#[$default_doc])*
            type Default = $default;

            fn kind() -> FieldKind {
                $kind
            }

            fn from_value(value: &Value, $zone: Option<&TimeZone>) -> Option<$ty> {
                match value {
                    $pat $(if $guard)? => $from,
                    _ => None,
                }
            }

            fn default_json($d: $default) -> Json {
                $json
            }
        }
    )*};
}

fields! {
    String {
        Default = String,
        kind: FieldKind::Text(TextSpec::default()),
        from(_zone): Value::Text(text) => Some(text.clone()),
        json(default): Json::String(default),
    }
    bool {
        Default = bool,
        kind: FieldKind::Boolean(BooleanSpec::default()),
        from(_zone): Value::Boolean(b) => Some(*b),
        json(default): Json::Bool(default),
    }
    f64 {
        Default = f64,
        kind: FieldKind::Number(NumberSpec::default()),
        from(_zone): Value::Number(n) => Some(*n),
        json(default): serde_json::Number::from_f64(default).map_or(Json::Null, Json::Number),
    }
    f32 {
        Default = f32,
        kind: FieldKind::Number(NumberSpec {
            minimum: Some(f64::from(f32::MIN)),
            maximum: Some(f64::from(f32::MAX)),
            options: Vec::new(),
        }),
        // Within f32's finite range (the field's bounds): the cast rounds
        // to the nearest f32, it cannot overflow.
        from(_zone): Value::Number(n) if n.abs() <= f64::from(f32::MAX) => Some(*n as f32),
        json(default): f64::default_json(f64::from(default)),
    }
    Date {
        Default = Date,
        kind: FieldKind::Date(DateSpec::default()),
        from(_zone): Value::Date(date) => Some(*date),
        json(default): Json::String(default.to_string()),
    }
    Timestamp {
        Default = Timestamp,
        kind: FieldKind::Instant(InstantSpec::default()),
        from(_zone): Value::Instant(instant) => Some(instant.timestamp),
        json(default): Json::String(default.to_string()),
    }
    ZonedDateTime {
        Default = ZonedDateTime,
        kind: FieldKind::Instant(InstantSpec::default()),
        from(zone): Value::Instant(instant) => Some(zoned_at(instant, zone)),
        json(default): Json::String(instant_text(&default)),
    }
    TimeZone {
        /// An IANA name such as `"Europe/Paris"`.
        Default = String,
        kind: FieldKind::Zone(ZoneSpec::default()),
        from(_zone): Value::Zone(name) => crate::time::zone(name),
        json(default): Json::String(default),
    }
    TimeRange {
        Default = TimeRange,
        kind: FieldKind::TimeRange(TimeRangeSpec::default()),
        from(zone): Value::TimeRange { from, to } => Some(TimeRange {
            from: zoned_at(from, zone),
            to: zoned_at(to, zone),
        }),
        json(default): serde_json::json!({
            "from": instant_text(&default.from),
            "to": instant_text(&default.to),
        }),
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
