//! The model: a field's declaration, and samples of its values.

use askgate_core::{Form, Instant};
use jiff::Timestamp;
use proptest::prelude::*;
use proptest::sample::select;
use serde::Serialize;
use serde_json::{Map, Value as Json, json};

use super::strategies::*;

/// Zones for instants, time ranges and zone options: DST in both
/// hemispheres, a 30-minute DST shift, quarter-hour offsets, none at all.
pub(crate) const ZONES: [&str; 8] = [
    "Europe/Paris",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Asia/Tokyo",
    "UTC",
];

/// Zones a zone field may be answered with besides its options.
pub(crate) const MORE_ZONES: [&str; 3] = [
    "Pacific/Chatham",
    "Africa/Abidjan",
    "America/Argentina/Buenos_Aires",
];

/// A value in its JSON shape as sent, and the settled value's JSON expected back.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub(crate) send: Json,
    pub(crate) expect: Json,
}

/// Properties that make an answer to one field wrong: (suffix, value), the
/// suffix appended to the field's id after a dot, or the id itself when empty.
pub(crate) type Bad = Vec<(String, Json)>;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Format {
    Email,
    Uri,
}

#[derive(Debug, Clone)]
pub(crate) struct Opt {
    pub(crate) value: String,
    pub(crate) label: String,
}

/// A suggested instant: as written in the form, and as the field reads it.
#[derive(Debug, Clone)]
pub(crate) struct Suggestion {
    pub(crate) written: String,
    pub(crate) parsed: Instant,
    pub(crate) label: String,
}

#[derive(Debug, Clone)]
pub(crate) enum Spec {
    Text {
        min: Option<u32>,
        max: Option<u32>,
        format: Option<Format>,
    },
    Number {
        min: Option<f64>,
        max: Option<f64>,
    },
    Integer {
        min: Option<i64>,
        max: Option<i64>,
    },
    Boolean,
    Choice {
        options: Vec<Opt>,
        multiple: bool,
        min: Option<u32>,
        max: Option<u32>,
        strict: bool,
    },
    Date,
    Instant {
        zone: Option<&'static str>,
        options: Vec<Suggestion>,
        strict: bool,
    },
    Zone {
        options: Vec<&'static str>,
        strict: bool,
    },
    TimeRange {
        zone: Option<&'static str>,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct FieldCase {
    pub(crate) spec: Spec,
    pub(crate) required: bool,
    pub(crate) default: Option<Sample>,
    pub(crate) supplied: Option<Sample>,
    /// A valid answer, sent when the field is open and `answered` (or must be).
    pub(crate) answer: Sample,
    pub(crate) answered: bool,
    pub(crate) bad: Bad,
}

impl FieldCase {
    /// Whether the person answers this field in a valid response.
    pub(crate) fn answers(&self) -> bool {
        self.supplied.is_none() && (self.answered || (self.required && self.default.is_none()))
    }

    /// An open field the valid response leaves open: optional, no default, unanswered.
    pub(crate) fn stays_open(&self) -> bool {
        self.supplied.is_none() && !self.answers() && self.default.is_none()
    }
}

#[derive(Debug, Clone)]
pub(crate) struct FormCase {
    pub(crate) fields: Vec<FieldCase>,
}

pub(crate) fn id(index: usize) -> String {
    format!("f{index}")
}

/// Titles that are not substrings of each other and name no secret.
pub(crate) fn title(index: usize) -> String {
    format!("Question {}", char::from(b'A' + index as u8))
}

/// Whether a property name belongs to the field `id` (ids are `f0`..`f5`).
pub(crate) fn belongs(name: &str, id: &str) -> bool {
    name == id
        || name
            .strip_prefix(id)
            .is_some_and(|rest| rest.starts_with('.'))
}

impl FormCase {
    pub(crate) fn form(&self) -> Form {
        let mut fields = Vec::new();
        let mut supplied = Map::new();
        for (i, case) in self.fields.iter().enumerate() {
            let mut field = case.spec.decl();
            field.insert("id".into(), id(i).into());
            field.insert("title".into(), title(i).into());
            field.insert("required".into(), case.required.into());
            if let Some(default) = &case.default {
                field.insert("default".into(), default.send.clone());
            }
            fields.push(Json::Object(field));
            if let Some(value) = &case.supplied {
                supplied.insert(id(i), value.send.clone());
            }
        }
        let form = json!({"message": "Please answer.", "fields": fields, "supplied": supplied});
        serde_json::from_value(form).expect("the generated form is well-formed JSON for a Form")
    }

    /// The valid answers, by field id, in their JSON shape.
    pub(crate) fn answers(&self) -> Map<String, Json> {
        (self.fields.iter().enumerate())
            .filter(|(_, case)| case.answers())
            .map(|(i, case)| (id(i), case.answer.send.clone()))
            .collect()
    }

    pub(crate) fn open(&self) -> Vec<usize> {
        (0..self.fields.len())
            .filter(|&i| self.fields[i].supplied.is_none())
            .collect()
    }

    /// Every property name the form may be answered with, in any revision.
    pub(crate) fn property_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for (i, case) in self.fields.iter().enumerate() {
            let id = id(i);
            for suffix in ["", "other", "from", "to"] {
                names.push(if suffix.is_empty() {
                    id.clone()
                } else {
                    format!("{id}.{suffix}")
                });
            }
            if let Spec::Choice { options, .. } = &case.spec {
                names.extend(options.iter().map(|o| format!("{id}.{}", o.value)));
            }
        }
        names
    }
}

/// Options as declared: one `{"value", "label"}` object each.
fn declared_options<V: Serialize, L: Serialize>(options: impl Iterator<Item = (V, L)>) -> Json {
    options
        .map(|(value, label)| json!({"value": value, "label": label}))
        .collect()
}

impl Spec {
    /// The field's type and constraints, as declared in JSON.
    pub(crate) fn decl(&self) -> Map<String, Json> {
        let mut decl = Map::new();
        let mut set = |key: &str, value: Json| {
            if !value.is_null() {
                decl.insert(key.into(), value);
            }
        };
        match self {
            Spec::Text { min, max, format } => {
                set("type", "text".into());
                set("min_length", json!(min));
                set("max_length", json!(max));
                let format = format.map(|f| match f {
                    Format::Email => "email",
                    Format::Uri => "uri",
                });
                set("format", json!(format));
            }
            Spec::Number { min, max } => {
                set("type", "number".into());
                set("minimum", json!(min));
                set("maximum", json!(max));
            }
            Spec::Integer { min, max } => {
                set("type", "integer".into());
                set("minimum", json!(min));
                set("maximum", json!(max));
            }
            Spec::Boolean => set("type", "boolean".into()),
            Spec::Choice {
                options,
                multiple,
                min,
                max,
                strict,
            } => {
                set("type", "choice".into());
                set(
                    "options",
                    declared_options(options.iter().map(|o| (&o.value, &o.label))),
                );
                set("multiple", (*multiple).into());
                set("min_items", json!(min));
                set("max_items", json!(max));
                set("strict", (*strict).into());
            }
            Spec::Date => set("type", "date".into()),
            Spec::Instant {
                zone,
                options,
                strict,
            } => {
                set("type", "instant".into());
                set("zone", json!(zone));
                set(
                    "options",
                    declared_options(options.iter().map(|o| (&o.written, &o.label))),
                );
                set("strict", (*strict).into());
            }
            Spec::Zone { options, strict } => {
                set("type", "zone".into());
                let labelled = options.iter().enumerate();
                set(
                    "options",
                    declared_options(labelled.map(|(i, zone)| (zone, format!("Zone {i}")))),
                );
                set("strict", (*strict).into());
            }
            Spec::TimeRange { zone } => {
                set("type", "time_range".into());
                set("zone", json!(zone));
            }
        }
        decl
    }

    /// Valid values of the field, each with the value settling must give back.
    pub(crate) fn valid(&self, required: bool) -> BoxedStrategy<Sample> {
        match self.clone() {
            Spec::Text { min, max, format } => text_value(min, max, format),
            Spec::Number { min, max } => number_value(min, max),
            Spec::Integer { min, max } => integer_value(min, max),
            Spec::Boolean => boolean_value(),
            Spec::Choice {
                options,
                multiple: false,
                strict,
                ..
            } => single_value(options, strict),
            Spec::Choice {
                options,
                min,
                max,
                strict,
                ..
            } => multi_value(options, min, max, strict, required),
            Spec::Date => date_value(),
            Spec::Instant {
                zone,
                options,
                strict,
            } => instant_value(zone, options, strict),
            Spec::Zone { options, strict } => zone_value(options, strict),
            Spec::TimeRange { zone } => range_value(zone),
        }
    }

    /// Answers the field must refuse (never blank: a blank is a field left empty).
    pub(crate) fn invalid(&self) -> BoxedStrategy<Bad> {
        let mut props = self.wrong_properties();
        let main = |json: Json| vec![(String::new(), json)];
        props.extend(self.wrong_values().into_iter().map(main));
        select(props).boxed()
    }

    /// Wrong answers spread over several properties, or on one of a
    /// field's generated properties.
    fn wrong_properties(&self) -> Vec<Bad> {
        match self {
            Spec::Choice {
                options,
                multiple: false,
                strict: false,
                ..
            } => {
                // An option and a typed value at once.
                vec![vec![
                    (String::new(), options[0].value.clone().into()),
                    ("other".into(), "zz top".into()),
                ]]
            }
            Spec::Choice {
                options,
                multiple: true,
                ..
            } => vec![vec![(options[0].value.clone(), "yes".into())]],
            Spec::TimeRange { .. } => vec![
                vec![("from".into(), LATE.into()), ("to".into(), EARLY.into())],
                vec![("from".into(), EARLY.into())],
                vec![("to".into(), LATE.into())],
            ],
            _ => Vec::new(),
        }
    }

    /// Wrong values of the field's own property.
    fn wrong_values(&self) -> Vec<Json> {
        let mut bad: Vec<Json> = Vec::new();
        match self {
            Spec::Text { min, max, format } => {
                bad.extend(list(json!([7, true, ["a"], {"a": "b"}])));
                if let Some(max) = max {
                    bad.push("x".repeat(*max as usize + 1).into());
                }
                if let Some(min) = min.filter(|min| *min >= 2) {
                    bad.push("x".repeat(min as usize - 1).into());
                }
                match format {
                    Some(Format::Email) => bad.push("no-at-sign".into()),
                    Some(Format::Uri) => bad.push("no scheme".into()),
                    None => {}
                }
            }
            Spec::Number { min, max } => {
                bad.extend(list(json!(["abc", "NaN", "inf", true, [1]])));
                bad.extend(min.map(|min| json!(min - 1.0)));
                bad.extend(max.map(|max| json!(max + 1.0)));
            }
            Spec::Integer { min, max } => {
                bad.extend(list(json!(["abc", 1.5, "2.5", true, 1u64 << 60])));
                bad.extend(min.map(|min| json!(min - 1)));
                bad.extend(max.map(|max| json!(max + 1)));
            }
            Spec::Boolean => bad.extend(list(json!(["yes", 1, [true]]))),
            Spec::Choice {
                multiple: false,
                strict,
                ..
            } => {
                bad.extend(list(json!([7, true, {"a": "b"}])));
                if *strict {
                    bad.push("zz top".into());
                }
            }
            Spec::Choice {
                options,
                min,
                max,
                strict,
                ..
            } => bad.extend(wrong_picks(options, *min, *max, *strict)),
            Spec::Date => bad.extend(list(json!([
                "2025-02-30",
                "2023-02-29",
                "2025-13-01",
                "2025-2-3",
                "31/12/2025",
                20_250_101
            ]))),
            Spec::Instant {
                zone,
                options,
                strict,
            } => bad.extend(wrong_instants(*zone, options, *strict)),
            Spec::Zone { options, strict } => {
                bad.extend(list(json!(["Mars/Olympus_Mons", "Europe/Pairs", 7])));
                if *strict {
                    let elsewhere = ZONES
                        .iter()
                        .chain(&MORE_ZONES)
                        .find(|z| !options.contains(z));
                    bad.extend(elsewhere.map(|z| Json::from(*z)));
                }
            }
            Spec::TimeRange { zone } => {
                bad.extend(list(json!([
                    7, EARLY, {"from": EARLY, "to": EARLY}, {"from": "nope", "to": LATE}
                ])));
                if zone.is_none() {
                    bad.push(json!({"from": "2025-07-01T10:00:00", "to": LATE}));
                }
            }
        }
        bad
    }
}

/// The two ends of a range's wrong answers, `EARLY` before `LATE`.
const EARLY: &str = "2025-07-01T10:00:00Z";
const LATE: &str = "2025-07-01T12:00:00Z";

/// Wrong picks of a multiple choice: not lists of options, options not on
/// offer (`strict`), too many or too few.
fn wrong_picks(options: &[Opt], min: Option<u32>, max: Option<u32>, strict: bool) -> Vec<Json> {
    let mut bad = list(json!([7, {"a": "b"}, [7]]));
    if strict {
        bad.extend(list(json!([["zz top"], "zz top"])));
    }
    let mut all: Vec<Json> = options.iter().map(|o| o.value.clone().into()).collect();
    if !strict {
        all.push("zz top".into());
    }
    if max.is_some_and(|max| (max as usize) < all.len()) {
        bad.push(all.into());
    }
    if min.is_some_and(|min| min >= 1) {
        bad.push(json!([]));
    }
    bad
}

/// Wrong instants: not instants, not valid, a wrong zone, a local time
/// without a zone to read it in or one the clock skips or repeats, and
/// (`strict`) one not on offer.
fn wrong_instants(zone: Option<&str>, options: &[Suggestion], strict: bool) -> Vec<Json> {
    let mut bad = list(json!([
        "not a time",
        "2025-02-30T10:00:00Z",
        "2025-07-01",
        7,
        "2025-07-01T10:00:00+05:00[Europe/Paris]",
        "2025-07-01T10:00:00+02:00[Mars/Base]"
    ]));
    match zone {
        None => bad.push("2025-07-01T10:00:00".into()),
        Some(zone) => bad.extend(clock_change(zone).into_iter().map(Json::from)),
    }
    if strict && !options.is_empty() {
        let last = options.iter().map(|o| o.parsed.timestamp.as_second()).max();
        let later = Timestamp::from_second(last.unwrap_or(0) + 3600).expect("in range");
        bad.push(render(later, None, How::Zulu).0.into());
    }
    bad
}

/// The items of a JSON array.
pub(crate) fn list(json: Json) -> Vec<Json> {
    match json {
        Json::Array(items) => items,
        other => vec![other],
    }
}

/// Local times skipped or repeated by a clock change in the zone, if it has any.
pub(crate) fn clock_change(zone: &str) -> Vec<&'static str> {
    match zone {
        "Europe/Paris" => vec!["2025-03-30T02:30:00", "2025-10-26T02:30:00"],
        "America/New_York" => vec!["2025-03-09T02:30:00", "2025-11-02T01:30:00"],
        "Australia/Lord_Howe" => vec!["2025-10-05T02:15:00", "2026-04-05T01:45:00"],
        _ => Vec::new(),
    }
}
