//! Readers of the JSON and text a value arrives as.

use serde_json::Value as Json;

use crate::problem::{Echo, ProblemKind};

pub(super) fn string<'a>(json: &'a Json, expected: &'static str) -> Result<&'a str, ProblemKind> {
    json.as_str().ok_or(ProblemKind::WrongType { expected })
}

/// The largest integer every JSON peer reads exactly: 2^53 - 1.
pub(super) const SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// A whole number read exactly, never through a float that could round it.
pub(super) enum Whole {
    Exact(i64),
    Fraction,
    TooSmall,
    TooLarge,
}

/// An integer from a JSON number or a string holding one.
pub(super) fn integer(json: &Json) -> Result<Whole, ProblemKind> {
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
pub(super) fn shown(json: &Json) -> String {
    match json {
        Json::Number(n) => n.to_string(),
        Json::String(s) => s.trim().to_owned(),
        other => other.to_string(),
    }
}

/// A JSON number, or a string holding one (web forms and terminals send text).
pub(super) fn number(json: &Json) -> Result<f64, ProblemKind> {
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

pub(super) fn read_date(
    text: &str,
    echo: impl Fn() -> Echo,
) -> Result<jiff::civil::Date, ProblemKind> {
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
pub(super) fn is_email(text: &str) -> bool {
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
pub(super) fn is_absolute_uri(text: &str) -> bool {
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
