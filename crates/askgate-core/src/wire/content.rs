//! `ElicitResult.content` <-> field values.
//!
//! Reading is lenient about shape where the meaning is plain (a 2025-11-25
//! array for a 2025-06-18 multi-select, an option's label instead of its
//! value) and strict about meaning (a value and a free entry for one single
//! choice, half a time range).

use std::borrow::Cow;

use serde_json::{Map, Value as Json};

use super::Names;
use crate::field::CheckedField;
use crate::form::FieldKind;
use crate::problem::ProblemKind;
use crate::revision::Revision;

/// What the content says about one field.
#[derive(Debug)]
pub(crate) enum Gathered<'a> {
    /// Nothing: the field was left empty.
    Absent,
    /// A value in the field's JSON shape, still to be checked.
    Given(Cow<'a, Json>),
    /// The properties contradict each other or are incomplete.
    Wrong(ProblemKind),
}

/// Collect the properties of one field into its JSON shape.
pub(crate) fn gather<'a>(
    field: &CheckedField,
    names: &Names,
    content: &'a Map<String, Json>,
) -> Gathered<'a> {
    let present = |name: &str| content.get(name).filter(|json| !is_blank(json));
    if let Some((from_name, to_name)) = &names.ends {
        if let Some(whole) = present(&names.main) {
            return Gathered::Given(Cow::Borrowed(whole));
        }
        return match (present(from_name), present(to_name)) {
            (None, None) => Gathered::Absent,
            (Some(_), None) => Gathered::Wrong(ProblemKind::HalfRange { missing: "to" }),
            (None, Some(_)) => Gathered::Wrong(ProblemKind::HalfRange { missing: "from" }),
            (Some(from), Some(to)) => {
                let mut ends = Map::new();
                ends.insert("from".into(), from.clone());
                ends.insert("to".into(), to.clone());
                Gathered::Given(Cow::Owned(Json::Object(ends)))
            }
        };
    }
    let other = names.other.as_deref().and_then(present);
    if field.multiple() {
        return gather_multiple(field, names, content, other);
    }
    match (
        content.get(&names.main).filter(|json| !is_blank(json)),
        other,
    ) {
        (Some(_), Some(_)) => Gathered::Wrong(ProblemKind::ChoiceAndOther),
        (Some(main), None) => Gathered::Given(Cow::Borrowed(main)),
        (None, Some(other)) => Gathered::Given(Cow::Borrowed(other)),
        (None, None) => Gathered::Absent,
    }
}

fn gather_multiple<'a>(
    field: &CheckedField,
    names: &Names,
    content: &'a Map<String, Json>,
    other: Option<&Json>,
) -> Gathered<'a> {
    // An explicit empty list is an answer ("none of these"), not a blank.
    let mut items: Vec<Json> = match content.get(&names.main) {
        Some(Json::Array(items)) => items.clone(),
        Some(Json::Null) | None => Vec::new(),
        Some(Json::String(s)) if s.trim().is_empty() => Vec::new(),
        Some(other) => return Gathered::Given(Cow::Borrowed(other)),
    };
    let mut seen = content.contains_key(&names.main);
    for (option, name) in field.options().iter().zip(&names.per_option) {
        match content.get(name) {
            None | Some(Json::Null) => {}
            Some(Json::Bool(picked)) => {
                seen = true;
                if *picked {
                    items.push(Json::String(option.value.clone()));
                }
            }
            Some(_) => {
                return Gathered::Wrong(ProblemKind::WrongType {
                    expected: "true or false for each option",
                });
            }
        }
    }
    if let Some(other) = other {
        seen = true;
        items.push(other.clone());
    }
    if seen {
        Gathered::Given(Cow::Owned(Json::Array(items)))
    } else {
        Gathered::Absent
    }
}

/// Null, an empty string, or only spaces: the person left it empty.
fn is_blank(json: &Json) -> bool {
    match json {
        Json::Null => true,
        Json::String(s) => s.trim().is_empty(),
        _ => false,
    }
}

/// Write a field's value (in its JSON shape) as the content properties a
/// client of `revision` would send. A multi-select carries at most one free
/// entry (MCP has a single `.other` string for it).
pub(crate) fn encode(
    field: &CheckedField,
    names: &Names,
    value: &Json,
    revision: Revision,
    content: &mut Map<String, Json>,
) {
    let options = field.options();
    let offered = |text: &str| options.iter().any(|o| o.value == text);
    match (&field.decl.kind, value) {
        (FieldKind::TimeRange(_), Json::Object(ends)) => {
            if let Some((from, to)) = &names.ends {
                for (name, end) in [(from, "from"), (to, "to")] {
                    if let Some(json) = ends.get(end) {
                        content.insert(name.clone(), json.clone());
                    }
                }
            }
        }
        (FieldKind::Choice(_), Json::Array(items)) => {
            let (listed, free): (Vec<&Json>, Vec<&Json>) = items
                .iter()
                .partition(|item| item.as_str().is_some_and(offered));
            if revision.has_rich_enums() {
                content.insert(
                    names.main.clone(),
                    Json::Array(listed.into_iter().cloned().collect()),
                );
            } else {
                for (option, name) in options.iter().zip(&names.per_option) {
                    let picked = listed
                        .iter()
                        .any(|item| item.as_str() == Some(&option.value));
                    content.insert(name.clone(), Json::Bool(picked));
                }
            }
            if let (Some(name), Some(first)) = (&names.other, free.first()) {
                content.insert(name.clone(), (*first).clone());
            }
        }
        (_, Json::String(text)) if names.other.is_some() && !options.is_empty() => {
            let on_offer = offered(text) || option_instant(field, text).is_some();
            match (on_offer, &names.other) {
                (false, Some(other)) => content.insert(other.clone(), value.clone()),
                _ => content.insert(
                    names.main.clone(),
                    Json::String(option_instant(field, text).unwrap_or_else(|| text.clone())),
                ),
            };
        }
        (FieldKind::Instant(_), Json::String(text)) if !options.is_empty() => {
            let text = option_instant(field, text).unwrap_or_else(|| text.clone());
            content.insert(names.main.clone(), Json::String(text));
        }
        _ => {
            content.insert(names.main.clone(), value.clone());
        }
    }
}

/// The option value naming the same moment as `text`, for instant fields.
fn option_instant(field: &CheckedField, text: &str) -> Option<String> {
    if !matches!(field.decl.kind, FieldKind::Instant(_)) {
        return None;
    }
    let instant = crate::time::read_instant(text, field.zone.as_ref(), false).ok()?;
    let index = field
        .instants
        .iter()
        .position(|i| i.timestamp == instant.timestamp)?;
    Some(field.options()[index].value.clone())
}
