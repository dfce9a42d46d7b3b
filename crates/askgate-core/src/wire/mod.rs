//! The MCP wire form of an ask: `elicitation/create` params per revision, and
//! the `content` of an `ElicitResult` read back into field values.
//!
//! # How each field type is carried
//!
//! | field | 2025-06-18 | 2025-11-25 and 2026-07-28 |
//! |---|---|---|
//! | text, number, integer, boolean, date | one primitive (`format: date` for dates) | the same, with `default` |
//! | single choice | `enum` + `enumNames` | `oneOf` of `{const, title}` |
//! | single choice, every label its value | `enum` | `enum` |
//! | multiple choice | one boolean `<id>.<value>` per option | `type: array`, `items.anyOf` (`items.enum` when every label is its value), `minItems`/`maxItems` |
//! | choice with free entry | `<id>` plus a string `<id>.other` | the same |
//! | instant | a `date-time` string; suggestions as a choice, plus `<id>.other` unless strict | the same |
//! | zone | a string; suggestions as a choice, plus `<id>.other` unless strict | the same |
//! | time range | `<id>.from` and `<id>.to`, `date-time` strings | the same |
//!
//! 2025-06-18 carries `default` on booleans only. Every other default is
//! kept: it is named in the property's description, the property is not
//! required, and settling applies it when the person leaves the property
//! empty (provenance `defaulted`).

mod content;
mod request;
mod routed;
mod schema;

pub use schema::{
    ElicitRequest, Items, JsonType, Property, PropertySchema, RequestedSchema, Titled,
};

pub(crate) use content::{Gathered, Routes, encode, gather};
pub(crate) use request::build;
pub(crate) use routed::Routed;

use crate::field::CheckedField;
use crate::form::FieldKind;

/// The property names generated for one field, across all revisions.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    /// `<id>`: the field itself, or its list of options.
    pub(crate) main: String,
    /// `<id>.other`: free entry beside options.
    pub(crate) other: Option<String>,
    /// `<id>.from` and `<id>.to`: the ends of a time range.
    pub(crate) ends: Option<(String, String)>,
    /// `<id>.<value>`: one boolean per option of a 2025-06-18 multi-select.
    pub(crate) per_option: Vec<String>,
}

impl Names {
    pub(crate) fn of(field: &CheckedField) -> Names {
        let id = field.id();
        let other = field.has_free_entry().then(|| format!("{id}.other"));
        let ends = matches!(field.decl.kind, FieldKind::TimeRange(_))
            .then(|| (format!("{id}.from"), format!("{id}.to")));
        let per_option = if field.multiple() {
            field
                .options()
                .iter()
                .map(|option| format!("{id}.{}", option.value))
                .collect()
        } else {
            Vec::new()
        };
        Names {
            main: id.to_owned(),
            other,
            ends,
            per_option,
        }
    }

    /// Every name a client may answer with, in any revision.
    pub(crate) fn all(&self) -> impl Iterator<Item = &str> {
        let ends = self
            .ends
            .iter()
            .flat_map(|(from, to)| [from.as_str(), to.as_str()]);
        std::iter::once(self.main.as_str())
            .chain(self.other.as_deref())
            .chain(ends)
            .chain(self.per_option.iter().map(String::as_str))
    }

    /// The names other than the field's own id.
    pub(crate) fn generated(&self) -> impl Iterator<Item = &str> {
        self.all().filter(move |name| *name != self.main)
    }
}
