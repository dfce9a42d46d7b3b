//! Zones and instants: IANA names checked against the bundled time-zone
//! database, and instants read from RFC 3339 or from a local time in a zone.
//!
//! The database ships inside the binary (jiff's `tzdb-bundle-always`), so a
//! zone check gives the same answer on every host, with no network and no
//! system tzdata.

use jiff::civil::DateTime;
use jiff::fmt::temporal::{Pieces, PiecesOffset, TimeZoneAnnotationKind};
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};

use crate::problem::{Echo, ProblemKind};
use crate::value::Instant;

/// Find a zone by IANA name (case-insensitive) in the bundled database.
pub(crate) fn zone(name: &str) -> Option<TimeZone> {
    if name.is_empty() || name.len() > 64 {
        return None;
    }
    jiff::tz::db().get(name).ok()
}

/// The IANA name of a zone found by [`zone`], as the database spells it.
pub(crate) fn canonical_name(zone: &TimeZone, asked: &str) -> String {
    zone.iana_name().unwrap_or(asked).to_owned()
}

/// The known zone closest to a name that is not one: same name in another
/// case or with spaces for underscores, the same city, or a small typo.
pub(crate) fn suggest(name: &str) -> Option<String> {
    let wanted = name.trim().replace(' ', "_").to_ascii_lowercase();
    if wanted.is_empty() || wanted.len() > 64 {
        return None;
    }
    let mut best: Option<(usize, String)> = None;
    for known in jiff::tz::db().available() {
        let known = known.as_str();
        let lower = known.to_ascii_lowercase();
        let city = lower.rsplit('/').next().unwrap_or(&lower);
        let distance = if lower == wanted || city == wanted {
            0
        } else {
            edit_distance(&wanted, &lower)
        };
        let better = match &best {
            Some((d, _)) => distance < *d,
            None => true,
        };
        if better && distance <= 2 + wanted.len() / 8 {
            best = Some((distance, known.to_owned()));
        }
    }
    best.map(|(_, name)| name)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// A zone given with its name, for reading local times.
#[derive(Debug, Clone)]
pub(crate) struct NamedZone {
    pub(crate) name: String,
    pub(crate) tz: TimeZone,
}

/// Read an instant: RFC 3339 with an offset (an RFC 9557 zone annotation, if
/// present, must agree with the offset), or — when the field has a zone — a
/// local date and time read in that zone, refused when the clocks skip it or
/// pass it twice.
pub(crate) fn read_instant(
    input: &str,
    zone: Option<&NamedZone>,
    secret: bool,
) -> Result<Instant, ProblemKind> {
    let (instant, read_in) = read_moment(input, zone, secret)?;
    // A field with a zone shows every instant in that zone, however it was
    // written, so a settled value reads back as itself. A local time read in
    // the field's own zone already carries that zone's offset.
    Ok(match (zone, read_in) {
        (Some(zone), ReadIn::Given) => Instant {
            timestamp: instant.timestamp,
            offset: zone.tz.to_offset(instant.timestamp),
        },
        (Some(_), ReadIn::FieldZone) | (None, _) => instant,
    })
}

/// Which offset an instant was read with.
enum ReadIn {
    /// The one written in the text, or its zone annotation's.
    Given,
    /// The field's zone's, for a local time with neither offset nor annotation.
    FieldZone,
}

fn read_moment(
    input: &str,
    zone: Option<&NamedZone>,
    secret: bool,
) -> Result<(Instant, ReadIn), ProblemKind> {
    let input = input.trim();
    let echo = || Echo::of(input, secret);
    let pieces = Pieces::parse(input).map_err(|_| ProblemKind::NotInstant(echo()))?;
    let Some(time) = pieces.time() else {
        return Err(ProblemKind::NotInstant(echo()));
    };
    let local = DateTime::from_parts(pieces.date(), time);
    let annotated = match pieces.time_zone_annotation().map(|a| a.kind()) {
        Some(TimeZoneAnnotationKind::Named(name)) => {
            let name = name.as_str();
            let tz = self::zone(name).ok_or_else(|| ProblemKind::UnknownZone {
                given: Echo::of(name, secret),
                suggestion: suggest(name),
            })?;
            Some(NamedZone {
                name: canonical_name(&tz, name),
                tz,
            })
        }
        _ => None,
    };
    match pieces.offset() {
        Some(offset) => {
            let offset = match offset {
                PiecesOffset::Zulu => Offset::UTC,
                // RFC 3339 offsets are whole minutes; `+05:30:15` is not one.
                PiecesOffset::Numeric(numeric) if numeric.offset().seconds() % 60 == 0 => {
                    numeric.offset()
                }
                _ => return Err(ProblemKind::NotInstant(echo())),
            };
            let timestamp = offset
                .to_timestamp(local)
                .map_err(|_| ProblemKind::NotInstant(echo()))?;
            if let Some(named) = &annotated
                && named.tz.to_offset(timestamp) != offset
            {
                return Err(ProblemKind::OffsetMismatch {
                    zone: named.name.clone(),
                });
            }
            Ok((Instant { timestamp, offset }, ReadIn::Given))
        }
        None => match (&annotated, zone) {
            (Some(annotated), _) => {
                resolve_local(local, annotated, input, secret).map(|i| (i, ReadIn::Given))
            }
            (None, Some(zone)) => {
                resolve_local(local, zone, input, secret).map(|i| (i, ReadIn::FieldZone))
            }
            (None, None) => Err(ProblemKind::NoOffset(echo())),
        },
    }
}

fn resolve_local(
    local: DateTime,
    zone: &NamedZone,
    input: &str,
    secret: bool,
) -> Result<Instant, ProblemKind> {
    let ambiguous = zone.tz.to_ambiguous_timestamp(local);
    match ambiguous.offset() {
        AmbiguousOffset::Unambiguous { offset } => {
            let timestamp = offset
                .to_timestamp(local)
                .map_err(|_| ProblemKind::NotInstant(Echo::of(input, secret)))?;
            Ok(Instant { timestamp, offset })
        }
        AmbiguousOffset::Gap { before, after } => Err(ProblemKind::SkippedLocalTime {
            given: Echo::of(input, secret),
            zone: zone.name.clone(),
            before: offset_text(before),
            after: offset_text(after),
        }),
        AmbiguousOffset::Fold { before, after } => Err(ProblemKind::AmbiguousLocalTime {
            given: Echo::of(input, secret),
            zone: zone.name.clone(),
            first: offset_text(before),
            second: offset_text(after),
        }),
    }
}

/// An offset as people write it in RFC 3339: `+02:00`, `-05:00`, `+05:45`.
pub(crate) fn offset_text(offset: Offset) -> String {
    let seconds = offset.seconds();
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelled_city_suggests_the_zone() {
        assert_eq!(suggest("Europe/Pairs").as_deref(), Some("Europe/Paris"));
        assert_eq!(suggest("paris").as_deref(), Some("Europe/Paris"));
        assert_eq!(
            suggest("america/new york").as_deref(),
            Some("America/New_York")
        );
    }

    #[test]
    fn nothing_is_suggested_for_a_name_far_from_any_zone() {
        assert_eq!(suggest("Mars/Olympus_Mons_Base"), None);
    }
}
