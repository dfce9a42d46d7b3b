//! A field checked once, and the check every value of it goes through.
//!
//! Answers, defaults and supplied values all pass [`CheckedField::check`]:
//! one code path decides what a valid value of a field is.

use std::sync::Arc;

use serde_json::Value as Json;

use crate::error::Error;
use crate::form::{ChoiceOption, ChoiceSpec, Field, FieldKind, TextFormat};
use crate::problem::{Echo, Problem, ProblemKind, names_secret};
use crate::time::{self, NamedZone};
use crate::value::{Instant, Value};

/// A declared field that passed its checks, with its zone resolved and its
/// default parsed.
#[derive(Debug, Clone)]
pub(crate) struct CheckedField {
    pub(crate) decl: Field,
    /// The id, shared by every settled value of the field.
    pub(crate) key: Arc<str>,
    /// Sensitive, or named like a secret: values are never echoed.
    pub(crate) secret: bool,
    pub(crate) default: Option<Value>,
    /// The zone local times are read in (instant and time range fields).
    pub(crate) zone: Option<NamedZone>,
    /// For instant options: the parsed instants, in option order.
    pub(crate) instants: Vec<Instant>,
}

impl CheckedField {
    /// Check a declaration: constraints that can be met, options that are
    /// unique and valid, a zone that exists, a default that passes.
    pub(crate) fn new(decl: Field) -> Result<CheckedField, Error> {
        let id = decl.id.clone();
        check_id(&id)?;
        let bad = |reason: String| Error::BadConstraint {
            field: id.clone(),
            reason,
        };
        let secret = decl.sensitive || names_secret(&decl.id) || names_secret(&decl.title);
        let mut zone = None;
        match &decl.kind {
            FieldKind::Text(spec) => {
                if let (Some(min), Some(max)) = (spec.min_length, spec.max_length)
                    && min > max
                {
                    return Err(bad(format!("min_length {min} is above max_length {max}")));
                }
            }
            FieldKind::Number(spec) => {
                scalar_without_options(&id, "number", &spec.options)?;
                for bound in [spec.minimum, spec.maximum].into_iter().flatten() {
                    if !bound.is_finite() {
                        return Err(bad("bounds must be finite numbers".into()));
                    }
                }
                if let (Some(min), Some(max)) = (spec.minimum, spec.maximum)
                    && min > max
                {
                    return Err(bad(format!("minimum {min} is above maximum {max}")));
                }
            }
            FieldKind::Integer(spec) => {
                scalar_without_options(&id, "integer", &spec.options)?;
                if let (Some(min), Some(max)) = (spec.minimum, spec.maximum)
                    && min > max
                {
                    return Err(bad(format!("minimum {min} is above maximum {max}")));
                }
            }
            FieldKind::Boolean(spec) => scalar_without_options(&id, "boolean", &spec.options)?,
            FieldKind::Choice(spec) => check_choice(&id, spec)?,
            FieldKind::Date(_) => {}
            FieldKind::Instant(spec) => {
                zone = spec
                    .zone
                    .as_deref()
                    .map(|name| named_zone(&id, name))
                    .transpose()?;
                check_options(&id, &spec.options)?;
            }
            FieldKind::Zone(spec) => check_options(&id, &spec.options)?,
            FieldKind::TimeRange(spec) => {
                zone = spec
                    .zone
                    .as_deref()
                    .map(|name| named_zone(&id, name))
                    .transpose()?;
            }
        }
        let mut field = CheckedField {
            key: Arc::from(decl.id.as_str()),
            decl,
            secret,
            default: None,
            zone,
            instants: Vec::new(),
        };
        field.check_option_values()?;
        if let Some(default) = &field.decl.default {
            let value = field.check(default).map_err(|kind| Error::BadDefault {
                field: id.clone(),
                problem: Box::new(field.problem(kind)),
            })?;
            field.default = Some(value);
        }
        Ok(field)
    }

    pub(crate) fn id(&self) -> &str {
        &self.decl.id
    }

    pub(crate) fn problem(&self, kind: ProblemKind) -> Problem {
        Problem {
            field: self.decl.id.clone(),
            title: self.decl.title.clone(),
            kind,
        }
    }

    /// The options of a field that offers any (choice, zone and instant suggestions).
    pub(crate) fn options(&self) -> &[ChoiceOption] {
        match &self.decl.kind {
            FieldKind::Choice(spec) => &spec.options,
            FieldKind::Instant(spec) => &spec.options,
            FieldKind::Zone(spec) => &spec.options,
            _ => &[],
        }
    }

    /// Whether only the options on offer are accepted.
    pub(crate) fn strict(&self) -> bool {
        match &self.decl.kind {
            FieldKind::Choice(spec) => spec.strict,
            FieldKind::Instant(spec) => spec.strict,
            FieldKind::Zone(spec) => spec.strict,
            _ => false,
        }
    }

    /// Whether the person may type a value beside the options on offer.
    pub(crate) fn has_free_entry(&self) -> bool {
        !self.options().is_empty() && !self.strict()
    }

    /// Whether several options may be picked.
    pub(crate) fn multiple(&self) -> bool {
        matches!(&self.decl.kind, FieldKind::Choice(spec) if spec.multiple)
    }

    fn check_option_values(&mut self) -> Result<(), Error> {
        match &self.decl.kind {
            FieldKind::Instant(_) => {
                let mut instants = Vec::with_capacity(self.options().len());
                for option in self.options() {
                    let instant = time::read_instant(&option.value, self.zone.as_ref(), false)
                        .map_err(|kind| self.bad_option(kind))?;
                    instants.push(instant);
                }
                self.instants = instants;
            }
            FieldKind::Zone(_) => {
                for option in self.options() {
                    if time::zone(&option.value).is_none() {
                        return Err(self.bad_option(ProblemKind::UnknownZone {
                            given: Echo::of(&option.value, false),
                            suggestion: time::suggest(&option.value),
                        }));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn bad_option(&self, kind: ProblemKind) -> Error {
        Error::BadOption {
            field: self.decl.id.clone(),
            problem: Box::new(self.problem(kind)),
        }
    }

    /// Check a value in the field's JSON shape.
    pub(crate) fn check(&self, json: &Json) -> Result<Value, ProblemKind> {
        match &self.decl.kind {
            FieldKind::Text(spec) => {
                let text = string(json, "text")?;
                let chars = text.chars().count();
                if let Some(min) = spec.min_length
                    && chars < min as usize
                {
                    return Err(ProblemKind::TooShort { min });
                }
                if let Some(max) = spec.max_length
                    && chars > max as usize
                {
                    return Err(ProblemKind::TooLong { max });
                }
                match spec.format {
                    Some(TextFormat::Email) if !is_email(text) => {
                        Err(ProblemKind::NotEmail(self.echo(text)))
                    }
                    Some(TextFormat::Uri) if !is_absolute_uri(text) => {
                        Err(ProblemKind::NotUri(self.echo(text)))
                    }
                    _ => Ok(Value::Text(text.to_owned())),
                }
            }
            FieldKind::Number(spec) => {
                let number = number(json)?;
                self.in_bounds(number, spec.minimum, spec.maximum, json)?;
                Ok(Value::Number(number))
            }
            FieldKind::Integer(spec) => {
                let whole = integer(json)?;
                let echo = || Echo::number(&shown(json), self.secret);
                // Integers stay within what every JSON peer reads exactly
                // (I-JSON, RFC 7493: ±(2^53 - 1)).
                let min = spec.minimum.unwrap_or(-SAFE_INTEGER).max(-SAFE_INTEGER);
                let max = spec.maximum.unwrap_or(SAFE_INTEGER).min(SAFE_INTEGER);
                let value = match whole {
                    Whole::Exact(value) => value,
                    Whole::Fraction => return Err(ProblemKind::NotWhole(echo())),
                    Whole::TooSmall => i64::MIN,
                    Whole::TooLarge => i64::MAX,
                };
                if value < min {
                    return Err(ProblemKind::BelowMinimum {
                        given: echo(),
                        min: min.to_string(),
                    });
                }
                if value > max {
                    return Err(ProblemKind::AboveMaximum {
                        given: echo(),
                        max: max.to_string(),
                    });
                }
                Ok(Value::Integer(value))
            }
            FieldKind::Boolean(_) => match json {
                Json::Bool(b) => Ok(Value::Boolean(*b)),
                Json::String(s) if s == "true" => Ok(Value::Boolean(true)),
                Json::String(s) if s == "false" => Ok(Value::Boolean(false)),
                _ => Err(ProblemKind::WrongType {
                    expected: "true or false",
                }),
            },
            FieldKind::Choice(spec) if spec.multiple => self.check_choices(spec, json),
            FieldKind::Choice(_) => {
                let given = string(json, "one of the options as text")?;
                self.pick(given).map(Value::Choice)
            }
            FieldKind::Date(_) => {
                let text = string(json, "a date as text, YYYY-MM-DD")?;
                read_date(text, || self.echo(text)).map(Value::Date)
            }
            FieldKind::Instant(_) => {
                let text = string(json, "a date and time as text")?;
                // An instant first; an option's label only for text that is none.
                let instant = match time::read_instant(text, self.zone.as_ref(), self.secret) {
                    Ok(instant) => instant,
                    Err(problem) => match self.options().iter().position(|o| o.label == text) {
                        Some(index) => self.instants[index],
                        None => return Err(problem),
                    },
                };
                match self
                    .instants
                    .iter()
                    .find(|i| i.timestamp == instant.timestamp)
                {
                    Some(offered) => Ok(Value::Instant(*offered)),
                    None if self.strict() && !self.options().is_empty() => {
                        Err(self.not_on_offer(text))
                    }
                    None => Ok(Value::Instant(instant)),
                }
            }
            FieldKind::Zone(_) => {
                let text = string(json, "an IANA time zone name as text")?;
                // A zone name first; an option's label only for text that is none.
                let name = match self.options().iter().position(|o| o.label == text) {
                    Some(index) if time::zone(text.trim()).is_none() => {
                        &self.options()[index].value
                    }
                    _ => text.trim(),
                };
                let Some(tz) = time::zone(name) else {
                    return Err(ProblemKind::UnknownZone {
                        given: self.echo(name),
                        suggestion: time::suggest(name),
                    });
                };
                let canonical = time::canonical_name(&tz, name);
                let offered = self
                    .options()
                    .iter()
                    .any(|o| o.value.eq_ignore_ascii_case(&canonical));
                if self.strict() && !self.options().is_empty() && !offered {
                    return Err(self.not_on_offer(text));
                }
                Ok(Value::Zone(canonical))
            }
            FieldKind::TimeRange(_) => {
                let Json::Object(ends) = json else {
                    return Err(ProblemKind::WrongType {
                        expected: "an object with \"from\" and \"to\"",
                    });
                };
                let end = |name: &'static str| match ends.get(name) {
                    None | Some(Json::Null) => Err(ProblemKind::HalfRange { missing: name }),
                    Some(json) => Ok(json),
                };
                self.check_range(end("from")?, end("to")?)
            }
        }
    }

    /// Check the two ends of a time range.
    pub(crate) fn check_range(&self, from: &Json, to: &Json) -> Result<Value, ProblemKind> {
        let end = |name: &'static str, json: &Json| -> Result<Instant, ProblemKind> {
            let text = string(json, "a date and time as text")?;
            time::read_instant(text, self.zone.as_ref(), self.secret).map_err(|problem| {
                ProblemKind::RangeEnd {
                    end: name,
                    problem: Box::new(problem),
                }
            })
        };
        let from = end("from", from)?;
        let to = end("to", to)?;
        if from.timestamp >= to.timestamp {
            return Err(ProblemKind::RangeOrder);
        }
        Ok(Value::TimeRange { from, to })
    }

    fn check_choices(&self, spec: &ChoiceSpec, json: &Json) -> Result<Value, ProblemKind> {
        let wrong = ProblemKind::WrongType {
            expected: "a list of options",
        };
        let items: Vec<&str> = match json {
            Json::Array(items) => items
                .iter()
                .map(|item| item.as_str().ok_or(wrong.clone()))
                .collect::<Result<_, _>>()?,
            Json::String(one) => vec![one.as_str()],
            _ => return Err(wrong),
        };
        let mut picked = vec![false; spec.options.len()];
        let mut free: Vec<String> = Vec::new();
        for item in items {
            if item.trim().is_empty() {
                continue;
            }
            match self.option_index(item) {
                Some(index) => picked[index] = true,
                None if !spec.strict => match self.option_index(item.trim()) {
                    Some(index) => picked[index] = true,
                    None => {
                        let item = item.trim().to_owned();
                        if !free.contains(&item) {
                            free.push(item);
                        }
                    }
                },
                None => return Err(self.not_on_offer(item)),
            }
        }
        let mut values: Vec<String> = spec
            .options
            .iter()
            .zip(&picked)
            .filter(|(_, picked)| **picked)
            .map(|(option, _)| option.value.clone())
            .collect();
        values.extend(free);
        let count = values.len() as u64;
        if let Some(min) = spec.min_items
            && count < u64::from(min)
        {
            return Err(ProblemKind::TooFewItems { min });
        }
        if let Some(max) = spec.max_items
            && count > u64::from(max)
        {
            return Err(ProblemKind::TooManyItems { max });
        }
        Ok(Value::Choices(values))
    }

    /// A single choice: an option by value (or, failing that, by label), or a
    /// free entry when the field takes one.
    fn pick(&self, given: &str) -> Result<String, ProblemKind> {
        if let Some(index) = self.option_index(given) {
            return Ok(self.options()[index].value.clone());
        }
        let free = given.trim();
        if let Some(index) = self.option_index(free) {
            return Ok(self.options()[index].value.clone());
        }
        if !self.strict() && !free.is_empty() {
            return Ok(free.to_owned());
        }
        Err(self.not_on_offer(given))
    }

    /// The option a string names: by value first, then by label.
    fn option_index(&self, given: &str) -> Option<usize> {
        let options = self.options();
        options
            .iter()
            .position(|o| o.value == given)
            .or_else(|| options.iter().position(|o| o.label == given))
    }

    fn not_on_offer(&self, given: &str) -> ProblemKind {
        ProblemKind::NotOnOffer {
            given: self.echo(given),
            offered: self.options().iter().map(|o| o.label.clone()).collect(),
        }
    }

    fn in_bounds(
        &self,
        number: f64,
        min: Option<f64>,
        max: Option<f64>,
        json: &Json,
    ) -> Result<(), ProblemKind> {
        if let Some(min) = min
            && number < min
        {
            return Err(ProblemKind::BelowMinimum {
                given: Echo::number(&shown(json), self.secret),
                min: min.to_string(),
            });
        }
        if let Some(max) = max
            && number > max
        {
            return Err(ProblemKind::AboveMaximum {
                given: Echo::number(&shown(json), self.secret),
                max: max.to_string(),
            });
        }
        Ok(())
    }

    fn echo(&self, value: &str) -> Echo {
        Echo::of(value, self.secret)
    }
}

fn check_id(id: &str) -> Result<(), Error> {
    let usable = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if usable {
        Ok(())
    } else {
        Err(Error::BadId {
            id: id.chars().take(64).collect(),
        })
    }
}

fn scalar_without_options(
    id: &str,
    kind: &'static str,
    options: &[ChoiceOption],
) -> Result<(), Error> {
    if options.is_empty() {
        Ok(())
    } else {
        Err(Error::ChoicesOnScalar {
            field: id.to_owned(),
            kind,
        })
    }
}

fn check_choice(id: &str, spec: &ChoiceSpec) -> Result<(), Error> {
    if spec.options.is_empty() {
        return Err(Error::NoOptions {
            field: id.to_owned(),
        });
    }
    check_options(id, &spec.options)?;
    let bad = |reason: String| Error::BadConstraint {
        field: id.to_owned(),
        reason,
    };
    if !spec.multiple && (spec.min_items.is_some() || spec.max_items.is_some()) {
        return Err(bad("min_items and max_items need \"multiple\": true".into()));
    }
    if let (Some(min), Some(max)) = (spec.min_items, spec.max_items)
        && min > max
    {
        return Err(bad(format!("min_items {min} is above max_items {max}")));
    }
    if let Some(min) = spec.min_items
        && spec.strict
        && min as usize > spec.options.len()
    {
        let offered = spec.options.len();
        let options = if offered == 1 { "option" } else { "options" };
        return Err(bad(format!(
            "min_items {min} is more than the {offered} {options} on offer"
        )));
    }
    Ok(())
}

fn check_options(id: &str, options: &[ChoiceOption]) -> Result<(), Error> {
    for (i, option) in options.iter().enumerate() {
        if option.value.trim().is_empty() {
            return Err(Error::EmptyOption {
                field: id.to_owned(),
            });
        }
        let earlier = &options[..i];
        if earlier.iter().any(|o| o.value == option.value) {
            return Err(Error::DuplicateOption {
                field: id.to_owned(),
                what: "the value",
                value: option.value.clone(),
            });
        }
        if let Some(key) = option.hotkey
            && earlier
                .iter()
                .any(|o| o.hotkey.is_some_and(|k| k.eq_ignore_ascii_case(&key)))
        {
            return Err(Error::DuplicateOption {
                field: id.to_owned(),
                what: "the hotkey",
                value: key.to_string(),
            });
        }
    }
    Ok(())
}

fn named_zone(id: &str, name: &str) -> Result<NamedZone, Error> {
    let tz = time::zone(name).ok_or_else(|| Error::UnknownZone {
        field: id.to_owned(),
        zone: name.chars().take(64).collect(),
    })?;
    Ok(NamedZone {
        name: time::canonical_name(&tz, name),
        tz,
    })
}

fn string<'a>(json: &'a Json, expected: &'static str) -> Result<&'a str, ProblemKind> {
    json.as_str().ok_or(ProblemKind::WrongType { expected })
}

/// The largest integer every JSON peer reads exactly: 2^53 - 1.
const SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// A whole number read exactly, never through a float that could round it.
enum Whole {
    Exact(i64),
    Fraction,
    TooSmall,
    TooLarge,
}

/// An integer from a JSON number or a string holding one.
fn integer(json: &Json) -> Result<Whole, ProblemKind> {
    let wrong = ProblemKind::WrongType {
        expected: "a whole number",
    };
    if let Json::Number(n) = json
        && let Some(exact) = n.as_i64()
    {
        return Ok(Whole::Exact(exact));
    }
    let text = match json {
        Json::Number(n) => n.to_string(),
        Json::String(s) => s.trim().to_owned(),
        _ => return Err(wrong),
    };
    if let Ok(exact) = text.parse::<i64>() {
        return Ok(Whole::Exact(exact));
    }
    if text.parse::<i128>().is_ok() {
        return Ok(if text.starts_with('-') {
            Whole::TooSmall
        } else {
            Whole::TooLarge
        });
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && f.fract() != 0.0 => Ok(Whole::Fraction),
        Ok(f) if f.is_finite() && f < i64::MIN as f64 => Ok(Whole::TooSmall),
        Ok(f) if f.is_finite() && f > i64::MAX as f64 => Ok(Whole::TooLarge),
        // Whole and within 2^53 (e.g. `3.0` or `3e2`): the cast is exact.
        Ok(f) if f.is_finite() && f.abs() <= 9_007_199_254_740_992.0 => Ok(Whole::Exact(f as i64)),
        // A whole float past 2^53 cannot say which integer it means.
        Ok(f) if f.is_finite() => Ok(Whole::Fraction),
        _ => Err(wrong),
    }
}

/// A number as the person wrote it, for messages.
fn shown(json: &Json) -> String {
    match json {
        Json::Number(n) => n.to_string(),
        Json::String(s) => s.trim().to_owned(),
        other => other.to_string(),
    }
}

/// A JSON number, or a string holding one (web forms and terminals send text).
fn number(json: &Json) -> Result<f64, ProblemKind> {
    let wrong = ProblemKind::WrongType {
        expected: "a number",
    };
    match json {
        Json::Number(n) => n.as_f64().ok_or(wrong),
        Json::String(s) => match s.trim().parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(f),
            _ => Err(wrong),
        },
        _ => Err(wrong),
    }
}

fn read_date(text: &str, echo: impl Fn() -> Echo) -> Result<jiff::civil::Date, ProblemKind> {
    let bytes = text.as_bytes();
    let shaped = bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit());
    if !shaped {
        return Err(ProblemKind::NotDate(echo()));
    }
    let part = |range: std::ops::Range<usize>| -> i16 {
        // Shaped above: every byte in these ranges is an ASCII digit.
        text[range].parse().unwrap_or(0)
    };
    let (year, month, day) = (part(0..4), part(5..7), part(8..10));
    jiff::civil::Date::new(year, month as i8, day as i8)
        .map_err(|_| ProblemKind::NoSuchDate(echo()))
}

/// `local@domain.tld`: one `@`, no spaces, a dot in the domain, no empty
/// or hyphen-edged domain label.
fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    let bytes = domain.as_bytes();
    !local.is_empty()
        && !has_whitespace(text)
        && !bytes.contains(&b'@')
        && bytes.contains(&b'.')
        && bytes.split(|b| *b == b'.').all(|label| {
            !label.is_empty() && label.first() != Some(&b'-') && label.last() != Some(&b'-')
        })
}

/// `scheme:rest` per RFC 3986: a letter, then letters, digits, `+ - .`; no spaces.
fn is_absolute_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !has_whitespace(text)
}

/// Whether `text` holds a Unicode white space character; ASCII text (the
/// usual case) is scanned byte by byte.
fn has_whitespace(text: &str) -> bool {
    if text.is_ascii() {
        // The ASCII characters `char::is_whitespace` accepts: tab, line feed,
        // vertical tab, form feed, carriage return and space.
        text.bytes().any(|b| matches!(b, b'\t'..=b'\r' | b' '))
    } else {
        text.contains(char::is_whitespace)
    }
}
