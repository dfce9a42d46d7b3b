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
    /// Both ends of a time range, still to be checked.
    Range(&'a Json, &'a Json),
    /// The properties contradict each other or are incomplete.
    Wrong(ProblemKind),
}

/// The content's properties of one field, routed by name in one pass over
/// the content (see [`Routes`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Props<'s, 'a> {
    main: Option<&'a Json>,
    other: Option<&'a Json>,
    from: Option<&'a Json>,
    to: Option<&'a Json>,
    per_option: &'s [Option<&'a Json>],
}

impl<'s, 'a> Props<'s, 'a> {
    /// Split a field's slots in the order of [`Names::all`].
    fn new(names: &Names, slots: &'s [Option<&'a Json>]) -> Props<'s, 'a> {
        let mut next = 1;
        let mut take = || {
            let slot = slots[next];
            next += 1;
            slot
        };
        let other = if names.other.is_some() { take() } else { None };
        let (from, to) = if names.ends.is_some() {
            (take(), take())
        } else {
            (None, None)
        };
        Props {
            main: slots[0],
            other,
            from,
            to,
            per_option: &slots[next..],
        }
    }
}

/// Where each property name goes: names grouped by length, and where each
/// field's slots start.
///
/// A property is routed by its length first (an index into `by_length`),
/// then by comparing bytes with the few names of that length: no hashing,
/// and most names are told apart before a byte is compared.
#[derive(Debug, Clone)]
pub(crate) struct Routes {
    /// Every name with its slot, ordered by length.
    table: Vec<(Box<str>, usize)>,
    /// For each length, the range of `table` holding the names of that length.
    by_length: Vec<(usize, usize)>,
    starts: Vec<usize>,
}

impl Routes {
    pub(crate) fn new(names: &[Names]) -> Routes {
        let mut table: Vec<(Box<str>, usize)> = Vec::new();
        let mut starts = Vec::with_capacity(names.len() + 1);
        for field_names in names {
            starts.push(table.len());
            for name in field_names.all() {
                let slot = table.len();
                table.push((name.into(), slot));
            }
        }
        starts.push(table.len());
        table.sort_by_key(|(name, _)| name.len());
        let longest = table.last().map_or(0, |(name, _)| name.len());
        let mut by_length = vec![(0, 0); longest + 1];
        for (position, (name, _)) in table.iter().enumerate() {
            let range = &mut by_length[name.len()];
            if range.0 == range.1 {
                *range = (position, position);
            }
            range.1 = position + 1;
        }
        Routes {
            table,
            by_length,
            starts,
        }
    }

    /// How many slots there are: one per name.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// The slot of a property name, if a field owns it.
    pub(crate) fn slot(&self, key: &str) -> Option<usize> {
        let &(start, end) = self.by_length.get(key.len())?;
        self.table[start..end]
            .iter()
            .find(|(name, _)| name.as_bytes() == key.as_bytes())
            .map(|&(_, slot)| slot)
    }

    /// Put each property of the content in its slot; names no field owns are
    /// returned, in content order.
    pub(crate) fn route<'c>(
        &self,
        content: &'c Map<String, Json>,
    ) -> (Vec<Option<&'c Json>>, Vec<&'c str>) {
        let mut slots = vec![None; self.table.len()];
        let mut unknown = Vec::new();
        for (key, value) in content {
            match self.slot(key) {
                Some(slot) => slots[slot] = Some(value),
                None => unknown.push(key.as_str()),
            }
        }
        (slots, unknown)
    }

    /// The slots of field `index`.
    pub(crate) fn props<'s, 'a>(
        &self,
        index: usize,
        names: &Names,
        slots: &'s [Option<&'a Json>],
    ) -> Props<'s, 'a> {
        Props::new(names, &slots[self.starts[index]..self.starts[index + 1]])
    }
}

/// Collect the properties of one field into its JSON shape.
pub(crate) fn gather<'a>(field: &CheckedField, props: Props<'_, 'a>) -> Gathered<'a> {
    let present = |json: Option<&'a Json>| json.filter(|json| !is_blank(json));
    if matches!(field.decl.kind, FieldKind::TimeRange(_)) {
        if let Some(whole) = present(props.main) {
            return Gathered::Given(Cow::Borrowed(whole));
        }
        return match (present(props.from), present(props.to)) {
            (None, None) => Gathered::Absent,
            (Some(_), None) => Gathered::Wrong(ProblemKind::HalfRange { missing: "to" }),
            (None, Some(_)) => Gathered::Wrong(ProblemKind::HalfRange { missing: "from" }),
            (Some(from), Some(to)) => Gathered::Range(from, to),
        };
    }
    let other = present(props.other);
    if field.multiple() {
        return gather_multiple(field, props, other);
    }
    match (present(props.main), other) {
        (Some(_), Some(_)) => Gathered::Wrong(ProblemKind::ChoiceAndOther),
        (Some(main), None) => Gathered::Given(Cow::Borrowed(main)),
        (None, Some(other)) => Gathered::Given(Cow::Borrowed(other)),
        (None, None) => Gathered::Absent,
    }
}

fn gather_multiple<'a>(
    field: &CheckedField,
    props: Props<'_, 'a>,
    other: Option<&'a Json>,
) -> Gathered<'a> {
    let checkboxes = props.per_option.iter().any(Option::is_some);
    match (props.main, checkboxes, other) {
        // The common case: a list, and nothing else to merge into it.
        (Some(list @ Json::Array(_)), false, None) => return Gathered::Given(Cow::Borrowed(list)),
        (None, false, None) => return Gathered::Absent,
        _ => {}
    }
    // An explicit empty list is an answer ("none of these"), not a blank.
    let mut items: Vec<Json> = match props.main {
        Some(Json::Array(items)) => items.clone(),
        Some(Json::Null) | None => Vec::new(),
        Some(Json::String(s)) if s.trim().is_empty() => Vec::new(),
        Some(other) => return Gathered::Given(Cow::Borrowed(other)),
    };
    let mut seen = props.main.is_some();
    for (option, slot) in field.options().iter().zip(props.per_option) {
        match slot {
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
