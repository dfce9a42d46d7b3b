//! Fuzz target `settle`: forms -> `Ask::new` -> `request` / `settle` (following
//! re-asks) -> `to_record` / `from_record` -> `content_for`, asserting the
//! invariants listed in `fuzz/README.md`. A panic is a bug in askgate-core
//! (or in an invariant written here); the panic message carries the decoded
//! form and responses as JSON.
//!
//! The input is read with `arbitrary`:
//! - one byte picks how the form is made: mostly a structured `FormDesc`
//!   (random kinds, ids, options, bounds, defaults, supplied values, zones
//!   from a small list or arbitrary strings) so most forms pass `Ask::new`;
//!   sometimes raw bytes parsed as form JSON; sometimes a structured form
//!   serialized to JSON and then spliced with byte edits before parsing;
//! - a revision from `Revision::ALL`, a max-attempts choice;
//! - 1..=4 responses (decline/cancel/accept; content keyed mostly by the
//!   form's property names `<id>`, `<id>.other`, `<id>.from`, `<id>.to`,
//!   `<id>.<option value>`, or built with `Ask::content_for`).
//!
//! `ASKGATE_FUZZ_ALLOW=name,name` turns the named invariants into no-ops, to
//! keep fuzzing past a bug that is already known.

#![no_main]

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Result, Unstructured};
use askgate_core::{
    Action, Ask, AskRecord, BooleanSpec, ChoiceOption, ChoiceSpec, DateSpec, Error, Field,
    FieldKind, Form, InstantSpec, IntegerSpec, Misuse, NumberSpec, Outcome, Provenance, Response,
    Revision, Step, TextFormat, TextSpec, TimeRangeSpec, Value, Values, ZoneSpec,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value as Json};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});

// ---------------------------------------------------------------------------
// Pools of interesting strings and numbers.

const TEXTS: &[&str] = &[
    "",
    " ",
    "a",
    "yes",
    "Deploy now",
    "name@example.com",
    "a@b",
    "a@b.",
    "@b.c",
    "a@-b.c",
    "a b@c.d",
    "https://example.com/",
    "mailto:x",
    "1http:x",
    "http:",
    "sk-abcdef",
    "ghp_1234567890abcdefghij",
    "abcd1234efgh5678",
    "true",
    "false",
    "3",
    " 3 ",
    "1e308",
    "1e309",
    "-0",
    "NaN",
    "inf",
    "9007199254740993",
    "0x10",
    "é",
    "\u{1F600}",
    "a\u{0301}",
    "line\nbreak",
    "\"quoted\"",
    "other",
    "from",
    "to",
    "staging",
    "prod",
];

const TITLES: &[&str] = &[
    "Environment",
    "When",
    "Replicas",
    "Password",
    "API key",
    "Your token",
    "",
    "Zone",
    "Window",
    "Ratio",
];

const IDS: &[&str] = &[
    "env",
    "at",
    "when",
    "a",
    "b",
    "n",
    "a.other",
    "a.from",
    "a.to",
    "a.staging",
    "f0.other",
    "f0.from",
    "f0.to",
    "f0.a",
    "f1.b",
    "x.y",
    "password",
    "api_key",
    "token",
    "A-b_c.d",
    "",
    " ",
    "é",
    "a/b",
    "0123456789012345678901234567890123456789012345678901234567890123",
    "01234567890123456789012345678901234567890123456789012345678901234",
];

const CHOICES: &[&str] = &[
    "staging",
    "prod",
    "dev",
    "a",
    "b",
    "c",
    "other",
    "from",
    "to",
    "yes",
    "no",
    "Staging",
    "Production",
    "x.y",
    " staging",
    "staging ",
    "",
    "é",
    "2026-07-01T09:30:00Z",
    "Europe/Paris",
];

const LABELS: &[&str] = &[
    "Staging",
    "Production",
    "Dev",
    "prod",
    "staging",
    "A",
    "B",
    "other",
    "",
    " ",
    "Europe/Paris",
    "UTC",
    "2026-07-01T09:30:00+02:00",
    "2026-07-01T07:30:00+00:00",
];

const ZONES: &[&str] = &[
    "Europe/Paris",
    "europe/paris",
    "EUROPE/PARIS",
    "UTC",
    "Etc/UTC",
    "Etc/GMT+5",
    "Etc/GMT-14",
    "America/New_York",
    "US/Eastern",
    "Asia/Kolkata",
    "Asia/Calcutta",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "Australia/Lord_Howe",
    "Antarctica/Troll",
    "Pacific/Apia",
    "America/St_Johns",
    "Europe/Dublin",
    "Africa/Casablanca",
    "Europe/Pairs",
    "paris",
    "Mars/Olympus",
    "",
    " Europe/Paris ",
    "Europe/Paris\u{0}",
    "Europe/../Paris",
    "+02:00",
    "Z",
    "EST5EDT",
    "Factory",
    "GMT",
];

const INSTANTS: &[&str] = &[
    "2026-07-01T09:30:00",
    "2026-07-01T09:30:00Z",
    "2026-07-01T09:30:00+02:00",
    "2026-07-01T07:30:00Z",
    "2026-07-01T07:30:00+00:00",
    "2026-07-01T10:30:00",
    "2026-07-01T09:30:00+02:00[Europe/Paris]",
    "2026-07-01T09:30:00+05:00[Europe/Paris]",
    "2026-07-01T09:30:00-04:00[America/New_York]",
    "2026-07-01T09:30:00[Europe/Paris]",
    "2026-07-01T09:30:00[America/New_York]",
    "2026-03-29T02:30:00",
    "2026-10-25T02:30:00",
    "2026-03-08T02:30:00",
    "2026-11-01T01:30:00",
    "2026-07-01T09:30:00-00:00",
    "2026-07-01t09:30:00z",
    "2026-07-01 09:30:00Z",
    "2026-07-01T09:30Z",
    "2026-07-01T09:30:00.123456789Z",
    "2026-07-01T24:00:00Z",
    "2026-07-01T23:59:60Z",
    "-009999-01-01T00:00:00Z",
    "+009999-12-31T23:59:59Z",
    "9999-12-31T23:59:59+00:00",
    "9999-12-31T23:59:59-25:59",
    "-009999-01-01T00:00:00+25:59",
    "2026-07-01",
    "2026-07-01T09:30:00[!Europe/Paris]",
    "2026-07-01T09:30:00+02:00[u-ca=iso8601]",
    "2026-07-01T09:30:00Z[Europe/Paris]",
    "2026-07-01T09:30:00+02:00[+02:00]",
    "2026-07-01T09:30:00[Mars/Base]",
    "20260701T093000Z",
    "  2026-07-01T09:30:00Z  ",
    "2026-07-01T09:30:00+0530",
    "2026-07-01T09:30:00+05:30:15",
    "2026-07-02T09:30:00",
    "2026-07-01T09:30:00+02:00[europe/paris]",
];

const DATES: &[&str] = &[
    "2026-07-01",
    "2024-02-29",
    "2026-02-29",
    "1900-02-29",
    "2000-02-29",
    "0000-01-01",
    "9999-12-31",
    "2026-13-01",
    "2026-00-10",
    "0000-00-00",
    "+2026-07-01",
    "2026-7-1",
    "2026-07-01T00:00",
    " 2026-07-01",
    "２０２６-07-01",
];

const NUMS: &[f64] = &[
    0.0,
    -0.0,
    0.1,
    0.5,
    1.0,
    -1.0,
    1e-300,
    5e-324,
    2.2250738585072014e-308,
    1e308,
    f64::MAX,
    f64::MIN,
    9007199254740992.0,
    9007199254740994.0,
    1e16,
    0.30000000000000004,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
];

const INTS: &[i64] = &[
    0,
    1,
    -1,
    5,
    i64::MIN,
    i64::MAX,
    1 << 53,
    (1 << 53) + 1,
    (1 << 53) - 1,
    -(1 << 53),
    -(1 << 53) - 1,
    (1 << 53) + 2,
    1_000_000,
    i32::MAX as i64,
    i32::MIN as i64,
];

const HOTKEYS: &[char] = &['a', 'A', 'b', 'B', '1', 'é', ' ', '\u{0}'];

fn pool<T: Clone>(items: &[T], index: u8) -> T {
    items[usize::from(index) % items.len()].clone()
}

fn spool(items: &[&str], index: u8) -> String {
    pool(items, index).to_owned()
}

// ---------------------------------------------------------------------------
// Descriptions (arbitrary-derived) and their realization.

/// Strings the form itself declares (ids, option values, labels), so content
/// and labels can refer to them.
#[derive(Default)]
struct Cx {
    strings: Vec<String>,
}

impl Cx {
    fn of(form: &Form) -> Cx {
        let mut strings = Vec::new();
        for field in &form.fields {
            strings.push(field.id.clone());
            strings.push(field.title.clone());
            for option in options_of(&field.kind) {
                strings.push(option.value.clone());
                strings.push(option.label.clone());
            }
        }
        Cx { strings }
    }

    fn form_string(&self, index: u8, fallback: &[&str]) -> String {
        if self.strings.is_empty() {
            spool(fallback, index)
        } else {
            pool(&self.strings, index)
        }
    }
}

#[derive(Arbitrary, Debug)]
enum StrPick {
    Text(u8),
    Instant(u8),
    Date(u8),
    Zone(u8),
    Choice(u8),
    Form(u8),
    Raw(String),
}

impl StrPick {
    /// The string, from the pool the variant names.
    fn get(&self, cx: &Cx) -> String {
        match self {
            StrPick::Text(i) => spool(TEXTS, *i),
            StrPick::Instant(i) => spool(INSTANTS, *i),
            StrPick::Date(i) => spool(DATES, *i),
            StrPick::Zone(i) => spool(ZONES, *i),
            StrPick::Choice(i) => {
                if i & 1 == 0 {
                    spool(CHOICES, i >> 1)
                } else {
                    spool(LABELS, i >> 1)
                }
            }
            StrPick::Form(i) => cx.form_string(*i, TEXTS),
            StrPick::Raw(s) => s.clone(),
        }
    }

    /// The string, from `preferred` unless the variant is raw or refers to the form.
    fn prefer(&self, cx: &Cx, preferred: &[&str]) -> String {
        match self {
            StrPick::Text(i)
            | StrPick::Instant(i)
            | StrPick::Date(i)
            | StrPick::Zone(i)
            | StrPick::Choice(i) => spool(preferred, *i),
            StrPick::Form(_) | StrPick::Raw(_) => self.get(cx),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum NumPick {
    Small(i8),
    Quarter(i16),
    Pool(u8),
    Raw(f64),
}

impl NumPick {
    fn get(&self) -> f64 {
        match self {
            NumPick::Small(n) => f64::from(*n),
            NumPick::Quarter(n) => f64::from(*n) / 4.0,
            NumPick::Pool(i) => pool(NUMS, *i),
            NumPick::Raw(f) => *f,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum IntPick {
    Small(i8),
    Pool(u8),
    Raw(i64),
}

impl IntPick {
    fn get(&self) -> i64 {
        match self {
            IntPick::Small(n) => i64::from(*n),
            IntPick::Pool(i) => pool(INTS, *i),
            IntPick::Raw(n) => *n,
        }
    }
}

/// Entropy for a value that fits its field (mostly).
#[derive(Arbitrary, Debug)]
struct FitDesc {
    pick: u8,
    a: StrPick,
    b: StrPick,
    n: NumPick,
    i: IntPick,
    items: Vec<u8>,
}

#[derive(Arbitrary, Debug)]
enum Leaf {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(StrPick),
}

impl Leaf {
    fn json(&self, cx: &Cx) -> Json {
        match self {
            Leaf::Null => Json::Null,
            Leaf::Bool(b) => Json::Bool(*b),
            Leaf::Int(n) => Json::from(*n),
            Leaf::UInt(n) => Json::from(*n),
            Leaf::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
            Leaf::Str(s) => Json::String(s.get(cx)),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum JsonDesc {
    Leaf(Leaf),
    Array(Vec<Leaf>),
    Object(Vec<(StrPick, Leaf)>),
}

impl JsonDesc {
    fn json(&self, cx: &Cx) -> Json {
        match self {
            JsonDesc::Leaf(leaf) => leaf.json(cx),
            JsonDesc::Array(items) => {
                Json::Array(items.iter().take(8).map(|l| l.json(cx)).collect())
            }
            JsonDesc::Object(entries) => Json::Object(
                entries
                    .iter()
                    .take(8)
                    .map(|(k, v)| (k.get(cx), v.json(cx)))
                    .collect(),
            ),
        }
    }
}

/// A JSON value: mostly one that fits its target, sometimes anything.
#[derive(Debug)]
enum ValueDesc {
    Fit(FitDesc),
    Str(StrPick),
    Num(NumPick),
    Int(IntPick),
    Bool(bool),
    Null,
    List(Vec<StrPick>),
    Range(Option<StrPick>, Option<StrPick>),
    Json(JsonDesc),
}

impl<'a> Arbitrary<'a> for ValueDesc {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let sel: u8 = u.arbitrary()?;
        Ok(if sel < 160 {
            ValueDesc::Fit(u.arbitrary()?)
        } else {
            match sel % 8 {
                0 => ValueDesc::Str(u.arbitrary()?),
                1 => ValueDesc::Num(u.arbitrary()?),
                2 => ValueDesc::Int(u.arbitrary()?),
                3 => ValueDesc::Bool(u.arbitrary()?),
                4 => ValueDesc::Null,
                5 => ValueDesc::List(u.arbitrary()?),
                6 => ValueDesc::Range(u.arbitrary()?, u.arbitrary()?),
                _ => ValueDesc::Json(u.arbitrary()?),
            }
        })
    }
}

/// What a value is for.
#[derive(Clone, Copy)]
enum Target<'f> {
    /// `<id>` of this field (or its default / supplied value).
    Main(&'f Field),
    /// `<id>.other`.
    Other(&'f Field),
    /// `<id>.from` / `<id>.to`.
    End,
    /// `<id>.<option value>`.
    PerOption,
    /// An unknown property.
    Unknown,
}

impl ValueDesc {
    fn json(&self, target: Target<'_>, cx: &Cx) -> Json {
        match self {
            ValueDesc::Fit(fit) => fit.json(target, cx),
            ValueDesc::Str(s) => Json::String(s.get(cx)),
            ValueDesc::Num(n) => {
                serde_json::Number::from_f64(n.get()).map_or(Json::Null, Json::Number)
            }
            ValueDesc::Int(n) => Json::from(n.get()),
            ValueDesc::Bool(b) => Json::Bool(*b),
            ValueDesc::Null => Json::Null,
            ValueDesc::List(items) => Json::Array(
                items
                    .iter()
                    .take(8)
                    .map(|s| Json::String(s.get(cx)))
                    .collect(),
            ),
            ValueDesc::Range(from, to) => {
                let mut ends = Map::new();
                if let Some(from) = from {
                    ends.insert("from".into(), Json::String(from.prefer(cx, INSTANTS)));
                }
                if let Some(to) = to {
                    ends.insert("to".into(), Json::String(to.prefer(cx, INSTANTS)));
                }
                Json::Object(ends)
            }
            ValueDesc::Json(desc) => desc.json(cx),
        }
    }
}

fn options_of(kind: &FieldKind) -> &[ChoiceOption] {
    match kind {
        FieldKind::Choice(spec) => &spec.options,
        FieldKind::Instant(spec) => &spec.options,
        FieldKind::Zone(spec) => &spec.options,
        FieldKind::Number(spec) => &spec.options,
        FieldKind::Integer(spec) => &spec.options,
        FieldKind::Boolean(spec) => &spec.options,
        _ => &[],
    }
}

impl FitDesc {
    /// An option's value (or, sometimes, its label), if the field has options.
    fn option(&self, field: &Field, index: u8) -> Option<String> {
        let options = options_of(&field.kind);
        if options.is_empty() {
            return None;
        }
        let option = &options[usize::from(index) % options.len()];
        Some(if self.pick & 0x40 != 0 {
            option.label.clone()
        } else {
            option.value.clone()
        })
    }

    fn json(&self, target: Target<'_>, cx: &Cx) -> Json {
        let pick = self.pick;
        match target {
            Target::Main(field) => self.fit(field, cx),
            Target::Other(field) => match self.option(field, pick) {
                Some(option) if pick % 4 == 0 => Json::String(option),
                _ => Json::String(self.a.get(cx)),
            },
            Target::End => Json::String(self.a.prefer(cx, INSTANTS)),
            Target::PerOption => match pick % 8 {
                0 => Json::String("true".into()),
                1 => Json::Null,
                _ => Json::Bool(pick & 0x10 != 0),
            },
            Target::Unknown => Json::String(self.a.get(cx)),
        }
    }

    /// A value in `field`'s JSON shape, mostly within its constraints.
    fn fit(&self, field: &Field, cx: &Cx) -> Json {
        let pick = self.pick;
        match &field.kind {
            FieldKind::Text(spec) => {
                if pick % 3 == 0 {
                    let min = spec.min_length.unwrap_or(0).min(200);
                    let max = spec.max_length.unwrap_or(min + 8).min(200).max(min);
                    let len = min + u32::from(pick) % (max - min + 1);
                    let unit = if pick & 0x80 != 0 { "é" } else { "x" };
                    Json::String(unit.repeat(len as usize))
                } else if spec.format == Some(TextFormat::Email) && pick % 3 == 1 {
                    Json::String(spool(
                        &["name@example.com", "a@b.c", "x@y", "a@b@c.d"],
                        pick,
                    ))
                } else if spec.format == Some(TextFormat::Uri) && pick % 3 == 1 {
                    Json::String(spool(
                        &["https://example.com/", "urn:x", "a+b:c", "1a:b"],
                        pick,
                    ))
                } else {
                    Json::String(self.a.get(cx))
                }
            }
            FieldKind::Number(spec) => {
                let mut x = self.n.get();
                if pick & 1 == 0 {
                    if let Some(min) = spec.minimum.filter(|m| m.is_finite()) {
                        x = x.max(min);
                    }
                    if let Some(max) = spec.maximum.filter(|m| m.is_finite()) {
                        x = x.min(max);
                    }
                }
                match pick % 6 {
                    2 => Json::String(format!("{x}")),
                    3 => Json::String(format!(" {x:e} ")),
                    _ => serde_json::Number::from_f64(x).map_or(Json::Null, Json::Number),
                }
            }
            FieldKind::Integer(spec) => {
                let mut x = self.i.get();
                if pick & 1 == 0 {
                    if let Some(min) = spec.minimum {
                        x = x.max(min);
                    }
                    if let Some(max) = spec.maximum {
                        x = x.min(max);
                    }
                }
                match pick % 8 {
                    2 => Json::String(format!("{x}")),
                    3 => Json::String(format!(" {x} ")),
                    4 => serde_json::Number::from_f64(x as f64).map_or(Json::Null, Json::Number),
                    5 => serde_json::Number::from_f64(x as f64 + 0.5)
                        .map_or(Json::Null, Json::Number),
                    6 if x >= 0 => Json::from(x as u64),
                    _ => Json::from(x),
                }
            }
            FieldKind::Boolean(_) => match pick % 5 {
                0 => Json::Bool(true),
                1 => Json::Bool(false),
                2 => Json::String("true".into()),
                3 => Json::String("false".into()),
                _ => Json::String("yes".into()),
            },
            FieldKind::Choice(spec) if spec.multiple => {
                if pick % 7 == 0 {
                    return Json::String(
                        self.option(field, self.items.first().copied().unwrap_or(0))
                            .unwrap_or_default(),
                    );
                }
                let mut items: Vec<Json> = self
                    .items
                    .iter()
                    .take(8)
                    .map(|&i| match self.option(field, i) {
                        Some(option) if i < 220 => Json::String(option),
                        _ => Json::String(self.b.get(cx)),
                    })
                    .collect();
                if pick % 5 == 1 {
                    items.push(Json::String(self.a.get(cx)));
                }
                Json::Array(items)
            }
            FieldKind::Choice(_) => match (pick % 5, self.option(field, pick >> 2)) {
                (0..=2, Some(option)) => Json::String(option),
                _ => Json::String(self.a.get(cx)),
            },
            FieldKind::Date(_) => Json::String(self.a.prefer(cx, DATES)),
            FieldKind::Instant(_) => match (pick % 3, self.option(field, pick >> 2)) {
                (0, Some(option)) => Json::String(option),
                _ => Json::String(self.a.prefer(cx, INSTANTS)),
            },
            FieldKind::Zone(_) => match (pick % 3, self.option(field, pick >> 2)) {
                (0, Some(option)) => Json::String(option),
                _ => Json::String(self.a.prefer(cx, ZONES)),
            },
            FieldKind::TimeRange(_) => {
                let mut ends = Map::new();
                if pick % 11 != 1 {
                    ends.insert("from".into(), Json::String(self.a.prefer(cx, INSTANTS)));
                }
                if pick % 11 != 2 {
                    ends.insert("to".into(), Json::String(self.b.prefer(cx, INSTANTS)));
                }
                Json::Object(ends)
            }
            _ => Json::Null,
        }
    }
}

#[derive(Debug)]
struct OptDesc {
    /// Index into the kind's pool, or a string of any kind.
    value: Either<u8, StrPick>,
    label: StrPick,
    hotkey: Option<char>,
}

/// One of two sources, chosen with a weighting of our own.
#[derive(Debug)]
enum Either<A, B> {
    Pool(A),
    Other(B),
}

impl<'a> Arbitrary<'a> for OptDesc {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let sel: u8 = u.arbitrary()?;
        let value = if sel < 200 {
            Either::Pool(u.arbitrary()?)
        } else {
            Either::Other(u.arbitrary()?)
        };
        let label = u.arbitrary()?;
        let hotkey = if sel & 0x0f == 0x0f {
            Some(pool(HOTKEYS, u.arbitrary()?))
        } else {
            None
        };
        Ok(OptDesc {
            value,
            label,
            hotkey,
        })
    }
}

impl OptDesc {
    fn option(&self, values: &[&str], cx: &mut Cx) -> ChoiceOption {
        let value = match &self.value {
            Either::Pool(i) => spool(values, *i),
            Either::Other(s) => s.get(cx),
        };
        cx.strings.push(value.clone());
        let label = match &self.label {
            StrPick::Text(i) => spool(LABELS, *i),
            other => other.get(cx),
        };
        ChoiceOption {
            value,
            label,
            hotkey: self.hotkey,
        }
    }
}

fn options(descs: &[OptDesc], values: &[&str], cx: &mut Cx) -> Vec<ChoiceOption> {
    descs.iter().take(6).map(|d| d.option(values, cx)).collect()
}

#[derive(Arbitrary, Debug)]
enum KindDesc {
    Text {
        min: Option<u8>,
        max: Option<u8>,
        format: u8,
    },
    Number {
        min: Option<NumPick>,
        max: Option<NumPick>,
        quirk: u8,
    },
    Integer {
        min: Option<IntPick>,
        max: Option<IntPick>,
        quirk: u8,
    },
    Boolean {
        quirk: u8,
    },
    Choice {
        options: Vec<OptDesc>,
        multiple: bool,
        min_items: Option<u8>,
        max_items: Option<u8>,
        lax: bool,
        quirk: u8,
    },
    Date,
    Instant {
        zone: Option<StrPick>,
        options: Vec<OptDesc>,
        strict: bool,
    },
    Zone {
        options: Vec<OptDesc>,
        strict: bool,
    },
    TimeRange {
        zone: Option<StrPick>,
    },
}

fn bogus_options(quirk: u8) -> Vec<ChoiceOption> {
    if quirk == 0xff {
        vec![ChoiceOption {
            value: "1".into(),
            label: "One".into(),
            hotkey: None,
        }]
    } else {
        Vec::new()
    }
}

impl KindDesc {
    fn kind(&self, cx: &mut Cx) -> FieldKind {
        match self {
            KindDesc::Text { min, max, format } => FieldKind::Text(TextSpec {
                min_length: min.map(|n| {
                    if n == 255 {
                        u32::MAX
                    } else {
                        u32::from(n) % 40
                    }
                }),
                max_length: max.map(|n| {
                    if n == 255 {
                        u32::MAX
                    } else {
                        u32::from(n) % 80
                    }
                }),
                format: match format % 6 {
                    0 => Some(TextFormat::Email),
                    1 => Some(TextFormat::Uri),
                    _ => None,
                },
            }),
            KindDesc::Number { min, max, quirk } => FieldKind::Number(NumberSpec {
                minimum: min.as_ref().map(NumPick::get),
                maximum: max.as_ref().map(NumPick::get),
                options: bogus_options(*quirk),
            }),
            KindDesc::Integer { min, max, quirk } => FieldKind::Integer(IntegerSpec {
                minimum: min.as_ref().map(IntPick::get),
                maximum: max.as_ref().map(IntPick::get),
                options: bogus_options(*quirk),
            }),
            KindDesc::Boolean { quirk } => FieldKind::Boolean(BooleanSpec {
                options: bogus_options(*quirk),
            }),
            KindDesc::Choice {
                options: descs,
                multiple,
                min_items,
                max_items,
                lax,
                quirk,
            } => {
                let mut opts = options(descs, CHOICES, cx);
                if opts.is_empty() && *quirk != 0xff {
                    opts.push(ChoiceOption {
                        value: "staging".into(),
                        label: "Staging".into(),
                        hotkey: None,
                    });
                    cx.strings.push("staging".into());
                }
                let items = *multiple || *quirk == 0xfe;
                FieldKind::Choice(ChoiceSpec {
                    options: opts,
                    multiple: *multiple,
                    min_items: min_items.filter(|_| items).map(|n| u32::from(n % 8)),
                    max_items: max_items.filter(|_| items).map(|n| u32::from(n % 8)),
                    strict: !*lax,
                })
            }
            KindDesc::Date => FieldKind::Date(DateSpec {}),
            KindDesc::Instant {
                zone,
                options: descs,
                strict,
            } => FieldKind::Instant(InstantSpec {
                zone: zone.as_ref().map(|z| z.prefer(cx, ZONES)),
                options: options(descs, INSTANTS, cx),
                strict: *strict,
            }),
            KindDesc::Zone {
                options: descs,
                strict,
            } => FieldKind::Zone(ZoneSpec {
                options: options(descs, ZONES, cx),
                strict: *strict,
            }),
            KindDesc::TimeRange { zone } => FieldKind::TimeRange(TimeRangeSpec {
                zone: zone.as_ref().map(|z| z.prefer(cx, ZONES)),
            }),
        }
    }
}

#[derive(Debug)]
struct FieldDesc {
    id: Either<u8, StrPick>,
    fresh_id: bool,
    title: StrPick,
    description: Option<StrPick>,
    required: bool,
    sensitive: bool,
    default: Option<ValueDesc>,
    kind: KindDesc,
}

impl<'a> Arbitrary<'a> for FieldDesc {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let flags: u8 = u.arbitrary()?;
        let id_sel: u8 = u.arbitrary()?;
        let (id, fresh_id) = match id_sel {
            0..=127 => (Either::Pool(0), true),
            128..=239 => (Either::Pool(u.arbitrary()?), false),
            _ => (Either::Other(u.arbitrary()?), false),
        };
        Ok(FieldDesc {
            id,
            fresh_id,
            title: u.arbitrary()?,
            description: if flags & 8 != 0 {
                Some(u.arbitrary()?)
            } else {
                None
            },
            required: flags & 1 == 0,
            sensitive: flags >= 0xf8,
            default: if flags & 6 == 6 {
                Some(u.arbitrary()?)
            } else {
                None
            },
            kind: u.arbitrary()?,
        })
    }
}

#[derive(Arbitrary, Debug)]
struct SuppliedDesc {
    field: u8,
    value: ValueDesc,
}

#[derive(Arbitrary, Debug)]
struct FormDesc {
    message: StrPick,
    fields: Vec<FieldDesc>,
    supplied: Vec<SuppliedDesc>,
}

impl FormDesc {
    fn form(&self) -> Form {
        let mut cx = Cx::default();
        let mut fields = Vec::new();
        for (index, desc) in self.fields.iter().take(6).enumerate() {
            let id = match &desc.id {
                _ if desc.fresh_id => format!("f{index}"),
                Either::Pool(i) => spool(IDS, *i),
                Either::Other(s) => s.get(&cx),
            };
            cx.strings.push(id.clone());
            let kind = desc.kind.kind(&mut cx);
            let title = match &desc.title {
                StrPick::Text(i) => spool(TITLES, *i),
                other => other.get(&cx),
            };
            let mut field = Field {
                id,
                title,
                description: desc.description.as_ref().map(|d| d.get(&cx)),
                required: desc.required,
                sensitive: desc.sensitive,
                default: None,
                kind,
            };
            field.default = desc
                .default
                .as_ref()
                .map(|d| d.json(Target::Main(&field), &cx));
            fields.push(field);
        }
        let mut supplied = Map::new();
        for desc in self.supplied.iter().take(2) {
            if fields.is_empty() {
                break;
            }
            let (id, json) = if desc.field < 240 {
                let field = &fields[usize::from(desc.field) % fields.len()];
                (field.id.clone(), desc.value.json(Target::Main(field), &cx))
            } else {
                ("nobody".to_owned(), desc.value.json(Target::Unknown, &cx))
            };
            supplied.insert(id, json);
        }
        Form {
            message: self.message.get(&cx),
            fields,
            supplied,
        }
    }
}

/// A byte edit of a form's JSON text.
#[derive(Arbitrary, Debug)]
struct Edit {
    at: u16,
    op: u8,
    bytes: Vec<u8>,
}

impl Edit {
    fn apply(&self, text: &mut Vec<u8>) {
        let at = usize::from(self.at) % (text.len() + 1);
        match self.op % 3 {
            0 => {
                let end = (at + usize::from(self.op >> 2) % 16).min(text.len());
                text.drain(at..end);
            }
            1 => {
                text.splice(at..at, self.bytes.iter().copied().take(32));
            }
            _ => {
                let end = (at + self.bytes.len().min(32)).min(text.len());
                text.splice(at..end, self.bytes.iter().copied().take(end - at));
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
enum KeyDesc {
    Main(u8),
    Main2(u8),
    Other(u8),
    From(u8),
    To(u8),
    PerOption(u8, u8),
    Suffix(u8, StrPick),
    Raw(StrPick),
}

impl KeyDesc {
    fn key<'f>(&self, form: &'f Form, cx: &Cx) -> (String, Target<'f>) {
        let field = |i: &u8| form.fields.get(usize::from(*i) % form.fields.len().max(1));
        match self {
            KeyDesc::Main(i) | KeyDesc::Main2(i) => match field(i) {
                Some(f) => (f.id.clone(), Target::Main(f)),
                None => ("x".into(), Target::Unknown),
            },
            KeyDesc::Other(i) => match field(i) {
                Some(f) => (format!("{}.other", f.id), Target::Other(f)),
                None => ("x.other".into(), Target::Unknown),
            },
            KeyDesc::From(i) | KeyDesc::To(i) => {
                let end = if matches!(self, KeyDesc::From(_)) {
                    "from"
                } else {
                    "to"
                };
                match field(i) {
                    Some(f) => (format!("{}.{end}", f.id), Target::End),
                    None => (format!("x.{end}"), Target::Unknown),
                }
            }
            KeyDesc::PerOption(i, o) => match field(i) {
                Some(f) => {
                    let options = options_of(&f.kind);
                    let value = if options.is_empty() {
                        spool(CHOICES, *o)
                    } else {
                        options[usize::from(*o) % options.len()].value.clone()
                    };
                    (format!("{}.{value}", f.id), Target::PerOption)
                }
                None => ("x.a".into(), Target::Unknown),
            },
            KeyDesc::Suffix(i, s) => match field(i) {
                Some(f) => (format!("{}.{}", f.id, s.get(cx)), Target::Unknown),
                None => (s.get(cx), Target::Unknown),
            },
            KeyDesc::Raw(s) => (s.get(cx), Target::Unknown),
        }
    }
}

#[derive(Debug)]
enum RespDesc {
    Decline {
        with_content: bool,
    },
    Cancel,
    AcceptNone,
    /// `content_for` of per-field values, then extra entries on top.
    ContentFor {
        values: Vec<(u8, FitDesc)>,
        extra: Vec<(KeyDesc, ValueDesc)>,
    },
    /// Content entries directly.
    Direct {
        entries: Vec<(KeyDesc, ValueDesc)>,
    },
}

impl<'a> Arbitrary<'a> for RespDesc {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let sel: u8 = u.arbitrary()?;
        Ok(match sel {
            0..=7 => RespDesc::Decline {
                with_content: sel & 1 == 1,
            },
            8..=13 => RespDesc::Cancel,
            14..=19 => RespDesc::AcceptNone,
            20..=109 => RespDesc::ContentFor {
                values: u.arbitrary()?,
                extra: if sel & 1 == 1 {
                    u.arbitrary()?
                } else {
                    Vec::new()
                },
            },
            _ => RespDesc::Direct {
                entries: u.arbitrary()?,
            },
        })
    }
}

impl RespDesc {
    fn response(&self, ask: &Ask, form: &Form, cx: &Cx, revision: Revision) -> Response {
        let entries = |entries: &[(KeyDesc, ValueDesc)], content: &mut Map<String, Json>| {
            for (key, value) in entries.iter().take(10) {
                let (name, target) = key.key(form, cx);
                content.insert(name, value.json(target, cx));
            }
        };
        match self {
            RespDesc::Decline { with_content } => Response {
                action: Action::Decline,
                content: with_content.then(Map::new),
            },
            RespDesc::Cancel => Response::cancel(),
            RespDesc::AcceptNone => Response {
                action: Action::Accept,
                content: None,
            },
            RespDesc::ContentFor { values, extra } => {
                let mut wanted = Map::new();
                for (index, fit) in values.iter().take(8) {
                    if let Some(field) = form
                        .fields
                        .get(usize::from(*index) % form.fields.len().max(1))
                    {
                        wanted.insert(field.id.clone(), fit.fit(field, cx));
                    }
                }
                let mut content = ask.content_for(revision, &wanted);
                entries(extra, &mut content);
                Response::accept(content)
            }
            RespDesc::Direct { entries: list } => {
                let mut content = Map::new();
                entries(list, &mut content);
                Response::accept(content)
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Driving the engine and checking invariants.

fn allowed(name: &str) -> bool {
    static ALLOW: OnceLock<Vec<String>> = OnceLock::new();
    ALLOW
        .get_or_init(|| {
            std::env::var("ASKGATE_FUZZ_ALLOW")
                .unwrap_or_default()
                .split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .iter()
        .any(|a| a == name)
}

/// What was fed to the engine so far, printed when an invariant fails.
struct Trail {
    form: String,
    revision: Revision,
    max_attempts: u32,
    responses: Vec<String>,
}

impl Trail {
    fn check(&self, name: &str, ok: bool, detail: impl FnOnce() -> String) {
        if ok || allowed(name) {
            return;
        }
        let mut text = format!(
            "invariant `{name}` violated: {}\n--- form: {}\n--- revision: {} (max_attempts {})\n",
            detail(),
            self.form,
            self.revision,
            self.max_attempts
        );
        for (i, response) in self.responses.iter().enumerate() {
            text.push_str(&format!("--- response #{}: {response}\n", i + 1));
        }
        panic!("{text}");
    }
}

/// Settled values as text.
fn values_text(values: &Values) -> String {
    format!("{values:?}")
}

/// Settled values as text, with or without provenance.
fn values_shown(values: &Values, with_source: bool) -> String {
    let shown: Vec<String> = values
        .iter()
        .map(|s| {
            if with_source {
                format!("{}={:?}/{:?}", s.id, s.value, s.source)
            } else {
                format!("{}={:?}", s.id, s.value)
            }
        })
        .collect();
    format!("{shown:?}")
}

fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Accepted { values } => format!("Accepted {}", values_text(values)),
        Outcome::GaveUp {
            attempts,
            problems,
            values,
        } => format!(
            "GaveUp attempts={attempts} problems={problems:?} values={}",
            values_text(values)
        ),
        other => format!("{other:?}"),
    }
}

/// Everything observable about an ask, part by part, comparable across
/// independently built asks (the `Debug` of an `Ask` holds a `HashMap`, whose
/// order differs between two maps built apart).
fn state(ask: &Ask) -> Vec<(&'static str, String)> {
    let mut parts = vec![
        ("attempt", ask.attempt().to_string()),
        ("max_attempts", ask.max_attempts().to_string()),
        ("reasons", format!("{:?}", ask.reasons())),
        ("values", values_text(&ask.values())),
        (
            "open",
            format!("{:?}", ask.open_fields().collect::<Vec<_>>()),
        ),
        ("needs_url_mode", ask.needs_url_mode().to_string()),
        (
            "settle_without_asking",
            format!(
                "{:?}",
                ask.settle_without_asking().as_ref().map(outcome_text)
            ),
        ),
        ("message", format!("{:?}", ask.message())),
        ("form", format!("{:?}", ask.form())),
    ];
    for (r, name) in Revision::ALL.iter().zip([
        "request 2025-06-18",
        "request 2025-11-25",
        "request 2026-07-28",
    ]) {
        let text = match ask.request(*r) {
            Ok(request) => request.to_json().to_string(),
            Err(e) => format!("error {e:?}"),
        };
        parts.push((name, text));
    }
    parts
}

fn fingerprint(step: &Step) -> Vec<(&'static str, String)> {
    match step {
        Step::Settled(outcome) => vec![("settled", outcome_text(outcome))],
        Step::ReAsk(next) => state(next),
    }
}

/// The parts where two states differ.
fn diff(a: &[(&'static str, String)], b: &[(&'static str, String)]) -> String {
    let mut text = String::new();
    if a.len() != b.len() {
        text.push_str(&format!(
            "  shape differs:
    {a:?}
  vs
    {b:?}
"
        ));
        return text;
    }
    for ((name, x), (_, y)) in a.iter().zip(b) {
        if x != y {
            text.push_str(&format!(
                "  {name}:
    {x}
  vs
    {y}
"
            ));
        }
    }
    text
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let mode: u8 = u.arbitrary()?;
    let form = match mode % 16 {
        0 => {
            let bytes: &[u8] = u.arbitrary()?;
            match serde_json::from_slice::<Form>(bytes) {
                Ok(form) => form,
                Err(_) => return Ok(()),
            }
        }
        1 => {
            let desc: FormDesc = u.arbitrary()?;
            let edits: Vec<Edit> = u.arbitrary()?;
            let mut text = serde_json::to_vec(&desc.form()).expect("a form serializes");
            for edit in edits.iter().take(4) {
                edit.apply(&mut text);
            }
            match serde_json::from_slice::<Form>(&text) {
                Ok(form) => form,
                Err(_) => return Ok(()),
            }
        }
        _ => u.arbitrary::<FormDesc>()?.form(),
    };
    let revision = pool(&Revision::ALL, u.arbitrary()?);
    let attempts: u8 = u.arbitrary()?;
    let steps = u.int_in_range(1..=4u8)?;
    let mut responses = Vec::new();
    for _ in 0..steps {
        responses.push(u.arbitrary::<RespDesc>()?);
    }
    drive(form, revision, attempts, &responses);
    Ok(())
}

fn drive(form: Form, revision: Revision, attempts: u8, responses: &[RespDesc]) {
    let cx = Cx::of(&form);
    let Ok(ask) = Ask::new(form.clone()) else {
        return;
    };
    let mut trail = Trail {
        form: serde_json::to_string(&form).unwrap_or_else(|e| format!("<unserializable: {e}>")),
        revision,
        max_attempts: ask.max_attempts(),
        responses: Vec::new(),
    };
    trail.check(
        "form-serialize",
        serde_json::to_string(&form).is_ok(),
        || "an accepted form does not serialize".into(),
    );
    let mut ask = match attempts {
        0 => {
            let refused = ask.clone().with_max_attempts(0);
            trail.check(
                "zero-attempts",
                matches!(refused, Err(Error::Misuse(Misuse::ZeroAttempts))),
                || format!("with_max_attempts(0) gave {refused:?}"),
            );
            ask
        }
        1..=5 => match ask.with_max_attempts(u32::from(attempts)) {
            Ok(ask) => ask,
            Err(e) => {
                trail.check("max-attempts", false, || {
                    format!("with_max_attempts({attempts}) failed: {e}")
                });
                return;
            }
        },
        _ => ask,
    };
    trail.max_attempts = ask.max_attempts();
    trail.check(
        "first-attempt",
        ask.attempt() == 1 && ask.reasons().is_empty(),
        || {
            format!(
                "a new ask is at attempt {} with reasons {:?}",
                ask.attempt(),
                ask.reasons()
            )
        },
    );
    check_values(&trail, &form, &ask.values(), None);

    for desc in responses {
        // Requests in every revision: errors (sensitive, nothing to ask) are fine.
        for r in Revision::ALL {
            if let Ok(request) = ask.request(r) {
                let json = request.to_json();
                trail.check("request-json", !json.is_null(), || {
                    format!("request for {r} is null")
                });
            }
        }
        let response = desc.response(&ask, &form, &cx, revision);
        trail.responses.push(
            serde_json::to_string(&response).unwrap_or_else(|e| format!("<unserializable: {e}>")),
        );
        let open: Vec<String> = ask.open_fields().map(str::to_owned).collect();

        let first = ask.settle(revision, &response);
        let second = ask.settle(revision, &response);
        let (a, b) = (format!("{first:?}"), format!("{second:?}"));
        trail.check("deterministic", a == b, || {
            format!("settling twice differs:\n{a}\nvs\n{b}")
        });

        check_record(&trail, &ask, revision, &response, &first);

        match first {
            Step::Settled(outcome) => {
                check_outcome(&trail, &form, &ask, &response, &open, &outcome);
                return;
            }
            Step::ReAsk(next) => {
                trail.check("reask-accept", response.action == Action::Accept, || {
                    format!("a {:?} response gave a re-ask", response.action)
                });
                trail.check("reask-attempt", next.attempt() == ask.attempt() + 1, || {
                    format!(
                        "re-ask attempt {} after attempt {}",
                        next.attempt(),
                        ask.attempt()
                    )
                });
                trail.check("reask-max", next.attempt() <= next.max_attempts(), || {
                    format!(
                        "re-ask attempt {} above max {}",
                        next.attempt(),
                        next.max_attempts()
                    )
                });
                trail.check(
                    "reask-max",
                    next.max_attempts() == ask.max_attempts(),
                    || {
                        format!(
                            "max_attempts changed {} -> {}",
                            ask.max_attempts(),
                            next.max_attempts()
                        )
                    },
                );
                trail.check("reask-reasons", !next.reasons().is_empty(), || {
                    "a re-ask without reasons".into()
                });
                let values = next.values();
                check_kept(&trail, &ask.values(), &values);
                check_values(&trail, &form, &values, Some((&response, &open)));
                check_resupply(&trail, &form, &values);
                ask = *next;
            }
        }
    }
}

/// `from_record(to_record(ask))` is the same ask and settles the same way;
/// the record survives JSON.
fn check_record(trail: &Trail, ask: &Ask, revision: Revision, response: &Response, step: &Step) {
    let record = ask.to_record();
    let restored = match Ask::from_record(record.clone()) {
        Ok(restored) => restored,
        Err(e) => {
            trail.check("record-roundtrip", false, || {
                format!("from_record(to_record(ask)) failed: {e}\nrecord: {record:?}")
            });
            return;
        }
    };
    let (before, after) = (state(ask), state(&restored));
    trail.check("record-state", before == after, || {
        format!(
            "restored ask differs:\n{}record: {record:?}",
            diff(&before, &after)
        )
    });
    let (a, b) = (
        fingerprint(step),
        fingerprint(&restored.settle(revision, response)),
    );
    trail.check("record-settle", a == b, || {
        format!(
            "restored ask settles differently:\n{}record: {record:?}",
            diff(&a, &b)
        )
    });
    match serde_json::to_string(&record) {
        Ok(text) => {
            let back = serde_json::from_str::<AskRecord>(&text);
            trail.check("record-json", back.is_ok(), || {
                format!("record JSON does not parse back: {back:?}\n{text}")
            });
        }
        Err(e) => trail.check("record-json", false, || {
            format!("record does not serialize: {e}")
        }),
    }
}

fn check_outcome(
    trail: &Trail,
    form: &Form,
    ask: &Ask,
    response: &Response,
    open: &[String],
    outcome: &Outcome,
) {
    let json = serde_json::to_string(outcome);
    trail.check("outcome-serialize", json.is_ok(), || {
        format!("{outcome:?} does not serialize: {json:?}")
    });
    match (response.action, outcome) {
        (Action::Decline, Outcome::Declined) | (Action::Cancel, Outcome::Cancelled) => {}
        (Action::Accept, Outcome::Accepted { values }) => {
            for field in form.fields.iter().filter(|f| f.required) {
                trail.check("accepted-required", values.get(&field.id).is_some(), || {
                    format!("required field {:?} has no value in {values:?}", field.id)
                });
            }
            check_kept(trail, &ask.values(), values);
            check_values(trail, form, values, Some((response, open)));
            check_resupply(trail, form, values);
        }
        (
            Action::Accept,
            Outcome::GaveUp {
                attempts,
                problems,
                values,
            },
        ) => {
            trail.check(
                "gave-up",
                *attempts == ask.attempt() && ask.attempt() >= ask.max_attempts(),
                || {
                    format!(
                        "gave up at {attempts}: ask attempt {} of {}",
                        ask.attempt(),
                        ask.max_attempts()
                    )
                },
            );
            trail.check("gave-up", !problems.is_empty(), || {
                "gave up without problems".into()
            });
            check_kept(trail, &ask.values(), values);
            check_values(trail, form, values, Some((response, open)));
            check_resupply(trail, form, values);
        }
        (action, outcome) => {
            trail.check("action", false, || {
                format!("{action:?} settled as {outcome:?}")
            });
        }
    }
}

/// Settled values in their JSON shape, given back to the same form as
/// `supplied`, are accepted and read back as the same values.
fn check_resupply(trail: &Trail, form: &Form, values: &Values) {
    let mut again = form.clone();
    for (id, json) in values.to_json() {
        again.supplied.insert(id, json);
    }
    match Ask::new(again) {
        Ok(ask) => {
            let (before, after) = (
                values_shown(values, false),
                values_shown(&ask.values(), false),
            );
            trail.check("outcome-resupply", before == after, || {
                format!("values supplied back read differently:\n  {before}\nvs\n  {after}\nsupplied: {:?}", values.to_json())
            });
        }
        Err(e) => trail.check("outcome-resupply", false, || {
            format!(
                "values supplied back are refused: {e}\nsupplied: {:?}",
                values.to_json()
            )
        }),
    }
}

/// Values settled before a settle are still there, unchanged.
fn check_kept(trail: &Trail, before: &Values, after: &Values) {
    for settled in before {
        trail.check("kept", after.get(&settled.id) == Some(settled), || {
            format!(
                "{settled:?} was settled but is now {:?}",
                after.get(&settled.id)
            )
        });
    }
}

/// Settled values belong to the form's fields, in form order, and meet their
/// field's declared constraints. An integer answered as a JSON integer (or a
/// string holding one) settles to exactly that integer.
fn check_values(
    trail: &Trail,
    form: &Form,
    values: &Values,
    answered: Option<(&Response, &[String])>,
) {
    let mut last = None;
    for settled in values {
        let position = form.fields.iter().position(|f| *f.id == *settled.id);
        trail.check(
            "values-order",
            position.is_some() && position > last,
            || format!("{:?} out of place in {values:?}", settled.id),
        );
        last = position;
        let Some(field) = position.map(|p| &form.fields[p]) else {
            continue;
        };
        let problem = constraint_problem(field, &settled.value);
        let name = format!("constraints-{}", field.kind.name());
        trail.check(&name, problem.is_none(), || {
            format!(
                "field {:?}: {} ({:?}, {:?})",
                field.id,
                problem.unwrap_or_default(),
                settled.value,
                settled.source
            )
        });
        if let (
            Some((response, open)),
            FieldKind::Integer(_),
            Value::Integer(got),
            Provenance::Answered,
        ) = (answered, &field.kind, &settled.value, settled.source)
        {
            if !open.contains(&field.id) {
                continue;
            }
            let given = response.content.as_ref().and_then(|c| c.get(&field.id));
            let exact: Option<i128> = match given {
                Some(Json::Number(n)) => n
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| n.as_u64().map(i128::from)),
                Some(Json::String(s)) => s.trim().parse::<i128>().ok(),
                _ => None,
            };
            if let Some(exact) = exact {
                trail.check("integer-fidelity", exact == i128::from(*got), || {
                    format!("field {:?} answered {exact} settled as {got}", field.id)
                });
            }
        }
    }
}

fn constraint_problem(field: &Field, value: &Value) -> Option<String> {
    let options = options_of(&field.kind);
    let offered = |v: &str| options.iter().any(|o| o.value == v);
    match (&field.kind, value) {
        (FieldKind::Text(spec), Value::Text(text)) => {
            let chars = text.chars().count() as u64;
            if spec.min_length.is_some_and(|min| chars < u64::from(min)) {
                return Some(format!("{chars} chars below min_length"));
            }
            if spec.max_length.is_some_and(|max| chars > u64::from(max)) {
                return Some(format!("{chars} chars above max_length"));
            }
            None
        }
        (FieldKind::Number(spec), Value::Number(n)) => {
            if !n.is_finite() {
                return Some("not finite".into());
            }
            if spec.minimum.is_some_and(|min| *n < min) || spec.maximum.is_some_and(|max| *n > max)
            {
                return Some(format!(
                    "{n} out of [{:?}, {:?}]",
                    spec.minimum, spec.maximum
                ));
            }
            None
        }
        (FieldKind::Integer(spec), Value::Integer(n)) => {
            if spec.minimum.is_some_and(|min| *n < min) || spec.maximum.is_some_and(|max| *n > max)
            {
                return Some(format!(
                    "{n} out of [{:?}, {:?}]",
                    spec.minimum, spec.maximum
                ));
            }
            None
        }
        (FieldKind::Boolean(_), Value::Boolean(_)) => None,
        (FieldKind::Choice(spec), Value::Choice(choice)) if !spec.multiple => {
            if spec.strict && !offered(choice) {
                return Some(format!("{choice:?} not on offer in a strict choice"));
            }
            if choice.trim().is_empty() {
                return Some("empty choice".into());
            }
            None
        }
        (FieldKind::Choice(spec), Value::Choices(choices)) if spec.multiple => {
            let count = choices.len() as u64;
            if spec.min_items.is_some_and(|min| count < u64::from(min))
                || spec.max_items.is_some_and(|max| count > u64::from(max))
            {
                return Some(format!(
                    "{count} picks out of [{:?}, {:?}]",
                    spec.min_items, spec.max_items
                ));
            }
            if spec.strict && choices.iter().any(|c| !offered(c)) {
                return Some(format!("{choices:?} not all on offer in a strict choice"));
            }
            for (i, c) in choices.iter().enumerate() {
                if choices[..i].contains(c) {
                    return Some(format!("{c:?} picked twice"));
                }
            }
            None
        }
        (FieldKind::Date(_), Value::Date(_)) => None,
        (FieldKind::Instant(_), Value::Instant(_)) => None,
        (FieldKind::Zone(spec), Value::Zone(zone)) => {
            if spec.strict
                && !spec.options.is_empty()
                && !spec
                    .options
                    .iter()
                    .any(|o| o.value.eq_ignore_ascii_case(zone))
            {
                return Some(format!("zone {zone:?} not on offer in a strict zone field"));
            }
            None
        }
        (FieldKind::TimeRange(_), Value::TimeRange { from, to }) => {
            (from.timestamp >= to.timestamp).then(|| format!("range {from} .. {to} not ordered"))
        }
        (kind, value) => Some(format!("a {} field holds {value:?}", kind.name())),
    }
}
