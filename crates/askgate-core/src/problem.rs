//! Why an answer was refused: one [`Problem`] per field, in words a person
//! can act on.
//!
//! Messages name the field by its title and say what was expected. They echo
//! the person's value only when it is short and does not look like a secret
//! (see [`Echo`]).

use std::fmt;

use serde::{Serialize, Serializer};

/// What was wrong with the answer to one field.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The field's id, or the unknown property's name for [`ProblemKind::UnknownProperty`].
    pub field: String,
    /// The field's title as the person read it (empty for an unknown property).
    pub title: String,
    /// What was wrong.
    pub kind: ProblemKind,
}

impl Problem {
    /// The message a person reads, naming the field by its title.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ProblemKind::UnknownProperty { expected } => {
                write!(
                    f,
                    "The answer has a property {:?} that this form does not ask for; ",
                    Shown(&self.field)
                )?;
                match expected.as_slice() {
                    [] => f.write_str("it asks for nothing more."),
                    [one] => write!(f, "it asks for {:?}.", Shown(one)),
                    [rest @ .., last] => {
                        f.write_str("it asks for ")?;
                        for (i, name) in rest.iter().enumerate() {
                            if i > 0 {
                                f.write_str(", ")?;
                            }
                            write!(f, "{:?}", Shown(name))?;
                        }
                        write!(f, " and {:?}.", Shown(last))
                    }
                }
            }
            kind => write!(f, "{}: {kind}", self.title),
        }
    }
}

impl Serialize for Problem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("Problem", 3)?;
        out.serialize_field("field", &self.field)?;
        out.serialize_field("code", self.kind.code())?;
        out.serialize_field("message", &self.message())?;
        out.end()
    }
}

/// A value as it may be shown back to the person: the value itself when it is
/// short and does not look like a secret, otherwise nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Echo(Option<(String, bool)>);

impl Echo {
    /// The longest value echoed back, in characters.
    pub const MAX_CHARS: usize = 24;

    /// Nothing is echoed.
    pub fn none() -> Echo {
        Echo(None)
    }

    /// Echo `value` unless the field is secret or the value looks like one.
    pub fn of(value: &str, secret_field: bool) -> Echo {
        if secret_field || value.chars().count() > Echo::MAX_CHARS || looks_secret(value) {
            Echo(None)
        } else {
            Echo(Some((value.to_owned(), true)))
        }
    }

    /// Echo a number as written (unquoted) unless the field is secret.
    pub fn number(shown: &str, secret_field: bool) -> Echo {
        match Echo::of(shown, secret_field) {
            Echo(Some((value, _))) => Echo(Some((value, false))),
            none => none,
        }
    }

    fn write_prefix(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some((value, true)) => write!(f, "{value:?} "),
            Some((value, false)) => write!(f, "{value} "),
            None => f.write_str("the value "),
        }
    }
}

/// Whether a value looks like a credential: a known token prefix, a PEM
/// block, or a long run mixing letters and digits with no spaces.
pub fn looks_secret(value: &str) -> bool {
    const PREFIXES: [&str; 9] = [
        "sk-",
        "sk_",
        "ghp_",
        "gho_",
        "github_pat_",
        "xox",
        "AKIA",
        "eyJ",
        "-----BEGIN",
    ];
    if PREFIXES.iter().any(|prefix| value.starts_with(prefix)) {
        return true;
    }
    // A long run from a token alphabet (hex, base64, base64url) that mixes
    // letters and digits. Dates, emails and URIs carry other punctuation or
    // too few letters to match.
    let token_alphabet = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '='));
    let letters = value.chars().filter(char::is_ascii_alphabetic).count();
    let digits = value.chars().filter(char::is_ascii_digit).count();
    value.len() >= 16 && token_alphabet && letters >= 4 && digits >= 4
}

/// Whether a field's title or id (or an argument's key) says it holds a
/// secret.
pub fn names_secret(name: &str) -> bool {
    const WORDS: [&str; 8] = [
        "password",
        "passphrase",
        "secret",
        "token",
        "api key",
        "api_key",
        "apikey",
        "credential",
    ];
    let name = name.to_ascii_lowercase();
    WORDS.iter().any(|word| name.contains(word))
}

/// A name shown in a message, cut to a readable length.
struct Shown<'a>(&'a str);

impl fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cut: String = self.0.chars().take(40).collect();
        fmt::Debug::fmt(&cut, f)
    }
}

/// What was wrong with one field's answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ProblemKind {
    /// A required field got no answer.
    Missing,
    /// The answer has the wrong JSON type.
    WrongType {
        /// What the field takes, in words ("a number", "true or false").
        expected: &'static str,
    },
    /// Text shorter than allowed.
    TooShort {
        /// The fewest characters.
        min: u32,
    },
    /// Text longer than allowed.
    TooLong {
        /// The most characters.
        max: u32,
    },
    /// Not an email address.
    NotEmail(Echo),
    /// Not an absolute URI.
    NotUri(Echo),
    /// A number with a fraction where a whole number is needed.
    NotWhole(Echo),
    /// Below the minimum.
    BelowMinimum {
        /// The answer.
        given: Echo,
        /// The smallest value accepted.
        min: String,
    },
    /// Above the maximum.
    AboveMaximum {
        /// The answer.
        given: Echo,
        /// The largest value accepted.
        max: String,
    },
    /// A value that is not one of the options.
    NotOnOffer {
        /// The answer.
        given: Echo,
        /// The labels on offer.
        offered: Vec<String>,
    },
    /// Fewer options picked than needed.
    TooFewItems {
        /// The fewest.
        min: u32,
    },
    /// More options picked than allowed.
    TooManyItems {
        /// The most.
        max: u32,
    },
    /// Both a listed option and a typed value for a single choice.
    ChoiceAndOther,
    /// Not a `YYYY-MM-DD` date.
    NotDate(Echo),
    /// A well-formed date that is not on the calendar (2025-02-29).
    NoSuchDate(Echo),
    /// Not an RFC 3339 instant.
    NotInstant(Echo),
    /// A local time (no offset) where the field has no zone to read it in.
    NoOffset(Echo),
    /// A local time skipped by a clock change in the zone.
    SkippedLocalTime {
        /// The local time.
        given: Echo,
        /// The zone.
        zone: String,
        /// The offset before the change.
        before: String,
        /// The offset after the change.
        after: String,
    },
    /// A local time that happens twice in the zone.
    AmbiguousLocalTime {
        /// The local time.
        given: Echo,
        /// The zone.
        zone: String,
        /// The offset the first time round.
        first: String,
        /// The offset the second time round.
        second: String,
    },
    /// An instant whose offset does not match the zone it names.
    OffsetMismatch {
        /// The zone named in the instant.
        zone: String,
    },
    /// Not a zone in the IANA time-zone database.
    UnknownZone {
        /// The answer.
        given: Echo,
        /// The closest known zone name, if one is close.
        suggestion: Option<String>,
    },
    /// A range whose start is not before its end.
    RangeOrder,
    /// A range with one end missing.
    HalfRange {
        /// `"from"` or `"to"`: the end that is missing.
        missing: &'static str,
    },
    /// The answer has a property the form does not ask for: the whole
    /// answer is refused.
    UnknownProperty {
        /// The property names the form asks for in this attempt.
        expected: Vec<String>,
    },
    /// One end of a time range is wrong.
    RangeEnd {
        /// `"from"` or `"to"`.
        end: &'static str,
        /// What is wrong with it.
        problem: Box<ProblemKind>,
    },
}

impl ProblemKind {
    /// A stable machine-readable code for this kind of problem.
    pub fn code(&self) -> &'static str {
        match self {
            ProblemKind::Missing => "missing",
            ProblemKind::WrongType { .. } => "wrong_type",
            ProblemKind::TooShort { .. } => "too_short",
            ProblemKind::TooLong { .. } => "too_long",
            ProblemKind::NotEmail(_) => "not_email",
            ProblemKind::NotUri(_) => "not_uri",
            ProblemKind::NotWhole(_) => "not_whole",
            ProblemKind::BelowMinimum { .. } => "below_minimum",
            ProblemKind::AboveMaximum { .. } => "above_maximum",
            ProblemKind::NotOnOffer { .. } => "not_on_offer",
            ProblemKind::TooFewItems { .. } => "too_few_items",
            ProblemKind::TooManyItems { .. } => "too_many_items",
            ProblemKind::ChoiceAndOther => "choice_and_other",
            ProblemKind::NotDate(_) => "not_date",
            ProblemKind::NoSuchDate(_) => "no_such_date",
            ProblemKind::NotInstant(_) => "not_instant",
            ProblemKind::NoOffset(_) => "no_offset",
            ProblemKind::SkippedLocalTime { .. } => "skipped_local_time",
            ProblemKind::AmbiguousLocalTime { .. } => "ambiguous_local_time",
            ProblemKind::OffsetMismatch { .. } => "offset_mismatch",
            ProblemKind::UnknownZone { .. } => "unknown_zone",
            ProblemKind::RangeOrder => "range_order",
            ProblemKind::HalfRange { .. } => "half_range",
            ProblemKind::UnknownProperty { .. } => "unknown_property",
            ProblemKind::RangeEnd { problem, .. } => problem.code(),
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProblemKind::Missing => f.write_str("an answer is required."),
            ProblemKind::WrongType { expected } => write!(f, "expected {expected}."),
            ProblemKind::TooShort { min } => {
                write!(f, "expected at least {min} character{}.", plural(*min))
            }
            ProblemKind::TooLong { max } => {
                write!(f, "expected at most {max} character{}.", plural(*max))
            }
            ProblemKind::NotEmail(given) => {
                given.write_prefix(f)?;
                f.write_str("is not an email address; expected the form name@example.com.")
            }
            ProblemKind::NotUri(given) => {
                given.write_prefix(f)?;
                f.write_str(
                    "is not an absolute URI; expected a scheme, as in https://example.com/.",
                )
            }
            ProblemKind::NotWhole(given) => {
                given.write_prefix(f)?;
                f.write_str("is not a whole number; expected an integer such as 3.")
            }
            ProblemKind::BelowMinimum { given, min } => {
                given.write_prefix(f)?;
                write!(f, "is too small; expected {min} or more.")
            }
            ProblemKind::AboveMaximum { given, max } => {
                given.write_prefix(f)?;
                write!(f, "is too large; expected {max} or less.")
            }
            ProblemKind::NotOnOffer { given, offered } => {
                given.write_prefix(f)?;
                write!(
                    f,
                    "is not on offer; expected one of: {}.",
                    offered.join(", ")
                )
            }
            ProblemKind::TooFewItems { min } => {
                write!(f, "pick at least {min} option{}.", plural(*min))
            }
            ProblemKind::TooManyItems { max } => {
                write!(f, "pick at most {max} option{}.", plural(*max))
            }
            ProblemKind::ChoiceAndOther => {
                f.write_str("pick an option or type another value, not both.")
            }
            ProblemKind::NotDate(given) => {
                given.write_prefix(f)?;
                f.write_str("is not a date; expected YYYY-MM-DD, as in 2026-03-29.")
            }
            ProblemKind::NoSuchDate(given) => {
                given.write_prefix(f)?;
                f.write_str("is not on the calendar; check the month and the day.")
            }
            ProblemKind::NotInstant(given) => {
                given.write_prefix(f)?;
                f.write_str(
                    "is not a date and time; expected RFC 3339 with an offset, as in 2026-03-29T09:30:00+02:00.",
                )
            }
            ProblemKind::NoOffset(given) => {
                given.write_prefix(f)?;
                f.write_str(
                    "has no UTC offset; expected one, as in 2026-03-29T09:30:00+02:00 or 2026-03-29T07:30:00Z.",
                )
            }
            ProblemKind::SkippedLocalTime {
                given,
                zone,
                before,
                after,
            } => {
                given.write_prefix(f)?;
                write!(
                    f,
                    "does not exist in {zone}: the clocks skip it when the offset changes from {before} to {after}; pick a time outside the gap or give an offset."
                )
            }
            ProblemKind::AmbiguousLocalTime {
                given,
                zone,
                first,
                second,
            } => {
                given.write_prefix(f)?;
                write!(
                    f,
                    "happens twice in {zone} (at {first}, then at {second}) when the clocks go back; add the offset you mean."
                )
            }
            ProblemKind::OffsetMismatch { zone } => write!(
                f,
                "the offset does not match {zone} at that time; give the offset {zone} has then, or leave the zone out."
            ),
            ProblemKind::UnknownZone { given, suggestion } => {
                given.write_prefix(f)?;
                f.write_str("is not an IANA time zone")?;
                match suggestion {
                    Some(zone) => write!(f, "; did you mean {zone}?"),
                    None => {
                        f.write_str("; expected a name such as Europe/Paris or America/New_York.")
                    }
                }
            }
            ProblemKind::RangeOrder => {
                f.write_str("the start must be before the end (the end is not included).")
            }
            ProblemKind::HalfRange { missing } => {
                write!(f, "both ends are needed; \"{missing}\" is missing.")
            }
            ProblemKind::UnknownProperty { .. } => f.write_str("not asked for."),
            ProblemKind::RangeEnd { end, problem } => write!(f, "{end}: {problem}"),
        }
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}
