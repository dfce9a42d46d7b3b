//! Strategies: random forms, and valid, wrong and arbitrary answers.

use askgate_core::{Instant, Value};
use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use proptest::prelude::*;
use proptest::sample::{Index, select, subsequence};
use serde_json::{Value as Json, json};

use super::model::*;

/// A free entry: never an option's value (no spaces) nor its label (capitalised).
pub(crate) fn free_entry() -> impl Strategy<Value = String> {
    "[a-z]{1,5} [a-z]{1,5}"
}

pub(crate) fn text_value(
    min: Option<u32>,
    max: Option<u32>,
    format: Option<Format>,
) -> BoxedStrategy<Sample> {
    let floor = match format {
        Some(Format::Email) => 6,
        Some(Format::Uri) => 3,
        None => 1,
    };
    let lo = min.unwrap_or(0).max(floor) as usize;
    let hi = max.map_or(lo + 12, |max| max as usize);
    let chars: Vec<char> = "abcdefghijklmnopqrstuvwxyzAZ0189 -.,éß日🙂"
        .chars()
        .collect();
    let letters: Vec<char> = ('a'..='z').collect();
    (lo..=hi)
        .prop_flat_map(move |len| {
            (
                proptest::collection::vec(select(chars.clone()), len),
                proptest::collection::vec(select(letters.clone()), len),
            )
        })
        .prop_map(move |(mut chars, letters)| {
            let len = chars.len();
            let word = |n: usize| letters[..n].iter().collect::<String>();
            let text = match format {
                Some(Format::Email) => format!("{}@{}.{}", word(len - 5), letters[0], word(2)),
                Some(Format::Uri) => format!("{}:{}", letters[1], word(len - 2)),
                None => {
                    // No leading or trailing space: text is kept as typed.
                    for end in [0, len - 1] {
                        if chars[end] == ' ' {
                            chars[end] = 'q';
                        }
                    }
                    chars.into_iter().collect()
                }
            };
            Sample {
                expect: Value::Text(text.clone()).to_json(),
                send: text.into(),
            }
        })
        .boxed()
}

pub(crate) fn number_value(min: Option<f64>, max: Option<f64>) -> BoxedStrategy<Sample> {
    let (lo, hi) = (min.unwrap_or(-1e6), max.unwrap_or(1e6));
    let quarters = ((lo * 4.0) as i64..=(hi * 4.0) as i64).prop_map(|q| q as f64 / 4.0);
    let extreme: BoxedStrategy<f64> = match (min, max) {
        (None, None) => proptest::num::f64::NORMAL.boxed(),
        _ => select(vec![lo, hi]).boxed(),
    };
    (prop_oneof![3 => quarters, 1 => extreme], 0u8..3)
        .prop_map(|(n, shape)| {
            let send = match shape {
                0 => json!(n.to_string()),
                1 if n.fract() == 0.0 && n.abs() < 1e15 => json!(n as i64),
                _ => json!(n),
            };
            Sample {
                send,
                expect: Value::Number(n).to_json(),
            }
        })
        .boxed()
}

pub(crate) fn integer_value(min: Option<i64>, max: Option<i64>) -> BoxedStrategy<Sample> {
    const EXACT: i64 = (1 << 53) - 1;
    let (lo, hi) = (min.unwrap_or(-EXACT), max.unwrap_or(EXACT));
    let near = (-1000i64).clamp(lo, hi)..=1000i64.clamp(lo, hi);
    (prop_oneof![lo..=hi, near, select(vec![lo, hi])], 0u8..3)
        .prop_map(|(n, shape)| {
            let send = match shape {
                0 => json!(n.to_string()),
                1 => json!(n as f64),
                _ => json!(n),
            };
            Sample {
                send,
                expect: Value::Integer(n).to_json(),
            }
        })
        .boxed()
}

/// A boolean, sent as itself or as text.
pub(crate) fn boolean_value() -> BoxedStrategy<Sample> {
    (any::<bool>(), any::<bool>())
        .prop_map(|(b, as_text)| Sample {
            send: if as_text {
                b.to_string().into()
            } else {
                b.into()
            },
            expect: Value::Boolean(b).to_json(),
        })
        .boxed()
}

/// A single choice: an option by value or by label, or (not `strict`) a
/// free entry.
pub(crate) fn single_value(options: Vec<Opt>, strict: bool) -> BoxedStrategy<Sample> {
    let n = options.len();
    let listed = (0..n, any::<bool>()).prop_map(move |(k, by_label)| {
        let option = &options[k];
        let send = if by_label {
            &option.label
        } else {
            &option.value
        };
        Sample {
            send: send.clone().into(),
            expect: Value::Choice(option.value.clone()).to_json(),
        }
    });
    let free = free_entry().prop_map(|text| Sample {
        send: text.clone().into(),
        expect: Value::Choice(text).to_json(),
    });
    if strict {
        listed.boxed()
    } else {
        prop_oneof![listed, free].boxed()
    }
}

pub(crate) fn multi_value(
    options: Vec<Opt>,
    min: Option<u32>,
    max: Option<u32>,
    strict: bool,
    required: bool,
) -> BoxedStrategy<Sample> {
    let n = options.len();
    let lo = min.unwrap_or(0).max(u32::from(required)) as usize;
    let hi = max.map_or(usize::MAX, |max| max as usize);
    (any::<bool>(), free_entry())
        .prop_flat_map(move |(want_free, free)| {
            // lo <= n, lo <= hi and hi >= 1 by construction, so both ranges are non-empty.
            let with_free = want_free && !strict;
            let (picks_lo, picks_hi) = if with_free {
                (lo.saturating_sub(1), hi.saturating_sub(1).min(n))
            } else {
                (lo, hi.min(n))
            };
            let free = with_free.then_some(free);
            (
                subsequence((0..n).collect::<Vec<_>>(), picks_lo..=picks_hi).prop_shuffle(),
                Just(free),
            )
        })
        .prop_map(move |(picked, free)| {
            let mut in_order = picked.clone();
            in_order.sort_unstable();
            let mut expect: Vec<String> =
                in_order.iter().map(|&k| options[k].value.clone()).collect();
            let mut send: Vec<Json> = picked
                .iter()
                .map(|&k| options[k].value.clone().into())
                .collect();
            if let Some(free) = free {
                expect.push(free.clone());
                send.push(free.into());
            }
            Sample {
                send: send.into(),
                expect: Value::Choices(expect).to_json(),
            }
        })
        .boxed()
}

pub(crate) fn instant_value(
    zone: Option<&'static str>,
    options: Vec<Suggestion>,
    strict: bool,
) -> BoxedStrategy<Sample> {
    let suggestions = options.clone();
    let free = (timestamp(), how()).prop_map(move |(moment, how)| {
        let (text, parsed) = render(moment, zone, how);
        match suggestions.iter().find(|o| o.parsed.timestamp == moment) {
            Some(offered) => on_offer(offered, text, parsed),
            None => Sample {
                send: text.into(),
                expect: Value::Instant(parsed).to_json(),
            },
        }
    });
    if options.is_empty() {
        return free.boxed();
    }
    let n = options.len();
    let pick = (0..n, 0u8..3, how()).prop_map(move |(k, shape, how)| {
        let option = &options[k];
        match shape {
            0 => on_offer(option, option.written.clone(), option.parsed),
            1 => on_offer(option, option.label.clone(), option.parsed),
            _ => {
                let (text, parsed) = render(option.parsed.timestamp, zone, how);
                on_offer(option, text, parsed)
            }
        }
    });
    if strict {
        pick.boxed()
    } else {
        prop_oneof![pick, free].boxed()
    }
}

/// An answer naming the moment of a suggestion. Written with another offset,
/// a default keeps that offset while an answer through `content_for` takes the
/// suggestion's (it is sent as the option): both are right, so such answers
/// are written as the suggestion is.
pub(crate) fn on_offer(option: &Suggestion, text: String, parsed: Instant) -> Sample {
    let send = if parsed == option.parsed {
        text
    } else {
        option.written.clone()
    };
    Sample {
        send: send.into(),
        expect: Value::Instant(option.parsed).to_json(),
    }
}

pub(crate) fn zone_value(options: Vec<&'static str>, strict: bool) -> BoxedStrategy<Sample> {
    let all: Vec<&'static str> = ZONES.iter().chain(&MORE_ZONES).copied().collect();
    let spelled = |name: &str, shape: u8| match shape {
        0 => name.to_owned(),
        1 => name.to_ascii_lowercase(),
        _ => format!(" {name} "),
    };
    let any_zone = (select(all), 0u8..3).prop_map(move |(name, shape)| Sample {
        send: spelled(name, shape).into(),
        expect: Value::Zone(name.to_owned()).to_json(),
    });
    if options.is_empty() {
        return any_zone.boxed();
    }
    let n = options.len();
    let pick = (0..n, 0u8..3).prop_map(move |(k, shape)| Sample {
        send: if shape == 2 {
            format!("Zone {k}")
        } else {
            spelled(options[k], shape)
        }
        .into(),
        expect: Value::Zone(options[k].to_owned()).to_json(),
    });
    if strict {
        pick.boxed()
    } else {
        prop_oneof![pick, any_zone].boxed()
    }
}

/// A date from 1900 to 2100, any day of its month.
pub(crate) fn date_value() -> BoxedStrategy<Sample> {
    (1900i16..=2100, 1i8..=12, 1i8..=31)
        .prop_map(|(year, month, day)| {
            let first = Date::new(year, month, 1).expect("the first of a month is a date");
            let date = Date::new(year, month, day.min(first.days_in_month()))
                .expect("the day is clamped to the month");
            Sample {
                send: date.to_string().into(),
                expect: Value::Date(date).to_json(),
            }
        })
        .boxed()
}

/// A time range up to 30 days long, each end written its own way.
pub(crate) fn range_value(zone: Option<&'static str>) -> BoxedStrategy<Sample> {
    (timestamp(), 1i64..=30 * 86_400, how(), how())
        .prop_map(move |(from, length, how_from, how_to)| {
            let to = Timestamp::new(from.as_second() + length, from.subsec_nanosecond())
                .expect("the end is within jiff's range");
            let (from_text, from) = render(from, zone, how_from);
            let (to_text, to) = render(to, zone, how_to);
            Sample {
                send: json!({"from": from_text, "to": to_text}),
                expect: Value::TimeRange { from, to }.to_json(),
            }
        })
        .boxed()
}

/// A moment between 1970 and 2100, whole seconds or milliseconds.
pub(crate) fn timestamp() -> impl Strategy<Value = Timestamp> {
    (
        0i64..4_102_444_800,
        prop_oneof![Just(0), (0i32..1000).prop_map(|ms| ms * 1_000_000)],
    )
        .prop_map(|(second, nanos)| Timestamp::new(second, nanos).expect("within jiff's range"))
}

/// How a moment is written in an answer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum How {
    /// With a numeric offset, in minutes.
    Offset(i32),
    /// In UTC, with `Z`.
    Zulu,
    /// As a local time in the field's zone (when it has one and the time is unambiguous).
    Local,
    /// With an offset and an RFC 9557 zone annotation that agrees with it.
    Annotated(&'static str),
}

pub(crate) fn how() -> impl Strategy<Value = How> {
    let offset =
        (any::<bool>(), 0i32..=14, select(vec![0, 30, 45])).prop_map(|(west, hours, minutes)| {
            How::Offset(if west { -1 } else { 1 } * (hours * 60 + minutes))
        });
    prop_oneof![
        offset,
        Just(How::Zulu),
        Just(How::Local),
        select(ZONES.to_vec()).prop_map(How::Annotated)
    ]
}

pub(crate) fn tz(name: &str) -> TimeZone {
    TimeZone::get(name).expect("the zones used here are in the bundled database")
}

/// The text of a moment written `how`, and the instant a field with `zone`
/// reads from it: always the field zone's offset; without a field zone, the
/// offset written (or the annotated zone's).
pub(crate) fn render(moment: Timestamp, zone: Option<&str>, how: How) -> (String, Instant) {
    let zone_offset = zone.map(|zone| tz(zone).to_offset(moment));
    let read = |given: Offset| Instant {
        timestamp: moment,
        offset: zone_offset.unwrap_or(given),
    };
    match how {
        How::Offset(minutes) => {
            let offset = Offset::from_seconds(minutes * 60).expect("offsets here are within a day");
            (moment.display_with_offset(offset).to_string(), read(offset))
        }
        How::Zulu => (
            format!("{}Z", Offset::UTC.to_datetime(moment)),
            read(Offset::UTC),
        ),
        How::Local => match (zone, zone_offset) {
            (Some(zone), Some(offset)) => {
                let local = offset.to_datetime(moment);
                match tz(zone).to_ambiguous_timestamp(local).offset() {
                    AmbiguousOffset::Unambiguous { .. } => (local.to_string(), read(offset)),
                    _ => render(moment, Some(zone), How::Offset(offset.seconds() / 60)),
                }
            }
            _ => render(moment, zone, How::Zulu),
        },
        How::Annotated(name) => {
            let offset = tz(name).to_offset(moment);
            let text = format!("{}[{name}]", moment.display_with_offset(offset));
            (text, read(offset))
        }
    }
}

pub(crate) fn text_spec() -> impl Strategy<Value = Spec> {
    let format = prop_oneof![
        Just(None),
        Just(Some(Format::Email)),
        Just(Some(Format::Uri))
    ];
    (
        format,
        proptest::option::of(0u32..4),
        proptest::option::of(0u32..16),
    )
        .prop_map(|(format, min, extra)| {
            let floor = match format {
                Some(Format::Email) => 6,
                Some(Format::Uri) => 3,
                None => 1,
            };
            let max = extra.map(|extra| min.unwrap_or(0).max(floor) + extra);
            Spec::Text { min, max, format }
        })
}

pub(crate) fn number_spec() -> impl Strategy<Value = Spec> {
    let bound = || proptest::option::of((-4000i32..4000).prop_map(|q| f64::from(q) / 4.0));
    (bound(), bound()).prop_map(|(a, b)| {
        let (min, max) = ordered(a, b);
        Spec::Number { min, max }
    })
}

pub(crate) fn integer_spec() -> impl Strategy<Value = Spec> {
    let bound = || proptest::option::of(-1_000_000i64..1_000_000);
    (bound(), bound()).prop_map(|(a, b)| {
        let (min, max) = ordered(a, b);
        Spec::Integer { min, max }
    })
}

/// Two optional bounds as a minimum and a maximum: the smaller first when
/// both are drawn.
fn ordered<T: PartialOrd>(a: Option<T>, b: Option<T>) -> (Option<T>, Option<T>) {
    match (a, b) {
        (Some(a), Some(b)) if b < a => (Some(b), Some(a)),
        other => other,
    }
}

pub(crate) fn choice_spec() -> impl Strategy<Value = Spec> {
    let values = proptest::collection::btree_set("[a-z][a-z0-9_.-]{0,5}", 1..=5);
    let labels = proptest::collection::vec("[A-Z][a-z]{0,6}", 5);
    (values, labels, any::<bool>(), any::<bool>()).prop_flat_map(
        |(values, labels, multiple, strict)| {
            // `<id>.other` is the free-entry property: an option named so is refused.
            let mut values: Vec<String> = values.into_iter().filter(|v| v != "other").collect();
            if values.is_empty() {
                values.push("yes".into());
            }
            let n = values.len() as u32;
            let options: Vec<Opt> = (values.into_iter().zip(labels).enumerate())
                .map(|(i, (value, label))| Opt {
                    value,
                    label: format!("{label} {i}"),
                })
                .collect();
            let items = (proptest::option::of(0..=n), proptest::option::of(0..=n + 1));
            (Just(options), items).prop_map(move |(options, (min, max))| {
                let (min, max) = if multiple {
                    let min = min.map(|min| min.min(n));
                    (min, max.map(|max| max.max(1).max(min.unwrap_or(0))))
                } else {
                    (None, None)
                };
                Spec::Choice {
                    options,
                    multiple,
                    min,
                    max,
                    strict,
                }
            })
        },
    )
}

pub(crate) fn instant_spec() -> impl Strategy<Value = Spec> {
    let zone = proptest::option::of(select(ZONES.to_vec()));
    (
        zone,
        proptest::collection::vec((timestamp(), how()), 0..=3),
        any::<bool>(),
    )
        .prop_map(|(zone, picks, strict)| {
            let mut options: Vec<Suggestion> = Vec::new();
            for (moment, how) in picks {
                if options.iter().all(|o| o.parsed.timestamp != moment) {
                    let (written, parsed) = render(moment, zone, how);
                    options.push(Suggestion {
                        written,
                        parsed,
                        label: format!("Slot {}", options.len()),
                    });
                }
            }
            Spec::Instant {
                zone,
                options,
                strict,
            }
        })
}

pub(crate) fn zone_spec() -> impl Strategy<Value = Spec> {
    (subsequence(ZONES.to_vec(), 0..=4), any::<bool>())
        // A strict zone field without options refuses every answer: see
        // `a_strict_zone_field_without_options_is_refused_or_answerable` below.
        .prop_map(|(options, strict)| Spec::Zone {
            strict: strict && !options.is_empty(),
            options,
        })
}

pub(crate) fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        text_spec(),
        number_spec(),
        integer_spec(),
        Just(Spec::Boolean),
        choice_spec(),
        Just(Spec::Date),
        instant_spec(),
        zone_spec(),
        proptest::option::of(select(ZONES.to_vec())).prop_map(|zone| Spec::TimeRange { zone }),
    ]
}

pub(crate) fn field_case() -> impl Strategy<Value = FieldCase> {
    (spec(), any::<bool>()).prop_flat_map(|(spec, required)| {
        let valid = spec.valid(required);
        (
            proptest::option::weighted(0.4, valid.clone()),
            proptest::option::weighted(0.2, valid.clone()),
            valid,
            any::<bool>(),
            spec.invalid(),
        )
            .prop_map(
                move |(default, supplied, answer, answered, bad)| FieldCase {
                    spec: spec.clone(),
                    required,
                    default,
                    supplied,
                    answer,
                    answered,
                    bad,
                },
            )
    })
}

pub(crate) fn form_case() -> impl Strategy<Value = FormCase> {
    proptest::collection::vec(field_case(), 1..=6).prop_map(|fields| FormCase { fields })
}

/// A form with at least one open field, and one of its open fields to get wrong.
pub(crate) fn wrong_case() -> impl Strategy<Value = (FormCase, usize)> {
    (form_case(), any::<Index>())
        .prop_filter("a field is open", |(case, _)| !case.open().is_empty())
        .prop_map(|(case, pick)| {
            let open = case.open();
            let target = open[pick.index(open.len())];
            (case, target)
        })
}

/// Any JSON, with strings that come close to valid answers.
pub(crate) fn arbitrary_json() -> impl Strategy<Value = Json> {
    let near = [
        "",
        " ",
        "true",
        "2025-07-01",
        "2025-02-30",
        "2025-07-01T10:00:00Z",
        "2025-07-01T10:00:00",
        "2025-03-30T02:30:00",
        "Europe/Paris",
        "europe/pairs",
        "1e400",
        "NaN",
        "-0",
        "9007199254740993",
    ];
    let leaf = prop_oneof![
        Just(Json::Null),
        any::<bool>().prop_map(Json::Bool),
        any::<i64>().prop_map(Json::from),
        any::<u64>().prop_map(Json::from),
        any::<f64>().prop_map(Json::from),
        ".{0,12}".prop_map(Json::String),
        select(near.to_vec()).prop_map(Json::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        let key = prop_oneof![Just("from".to_owned()), Just("to".to_owned()), ".{0,6}"];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Json::Array),
            proptest::collection::vec((key, inner), 0..4)
                .prop_map(|entries| Json::Object(entries.into_iter().collect())),
        ]
    })
}
