//! The check every value of a field goes through: answers, defaults and
//! supplied values alike.

use serde_json::Value as Json;

use super::CheckedField;
use super::read::{
    SAFE_INTEGER, Whole, integer, is_absolute_uri, is_email, number, read_date, shown, string,
};
use crate::form::{ChoiceSpec, FieldKind, IntegerSpec, TextFormat, TextSpec};
use crate::problem::{Echo, ProblemKind};
use crate::time;
use crate::value::{Instant, Value};

impl CheckedField {
    /// Check a value in the field's JSON shape.
    pub(crate) fn check(&self, json: &Json) -> Result<Value, ProblemKind> {
        match &self.decl.kind {
            FieldKind::Text(spec) => self.check_text(spec, json),
            FieldKind::Number(spec) => {
                let number = number(json)?;
                self.in_bounds(number, spec.minimum, spec.maximum, json)?;
                Ok(Value::Number(number))
            }
            FieldKind::Integer(spec) => self.check_integer(spec, json),
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
            FieldKind::Instant(_) => self.check_instant(string(json, "a date and time as text")?),
            FieldKind::Zone(_) => self.check_zone(string(json, "an IANA time zone name as text")?),
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

    fn check_text(&self, spec: &TextSpec, json: &Json) -> Result<Value, ProblemKind> {
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

    fn check_integer(&self, spec: &IntegerSpec, json: &Json) -> Result<Value, ProblemKind> {
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

    fn check_instant(&self, text: &str) -> Result<Value, ProblemKind> {
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
            None if self.strict() && !self.options().is_empty() => Err(self.not_on_offer(text)),
            None => Ok(Value::Instant(instant)),
        }
    }

    fn check_zone(&self, text: &str) -> Result<Value, ProblemKind> {
        // A zone name first; an option's label only for text that is none.
        let name = match self.options().iter().position(|o| o.label == text) {
            Some(index) if time::zone(text.trim()).is_none() => &self.options()[index].value,
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
