//! `ElicitResult.content` read from JSON text straight into routed slots.
//!
//! Parsing the content into a `serde_json::Map` first allocates every
//! property name and hashes it into the map, only for settling to look each
//! name up again. Here each name is routed (see [`Routes`]) as the parser
//! reads it: a name a field owns never becomes a `String`. The result is
//! what routing the parsed map gives: a later duplicate replaces an earlier
//! value, and each unknown name is reported once, where it first appears.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value as Json;

use super::Routes;

/// The content's values in their slots, and the names no field owns.
#[derive(Debug)]
pub(crate) struct Routed {
    pub(crate) slots: Vec<Option<Json>>,
    pub(crate) unknown: Vec<String>,
}

impl Routed {
    /// Read `text`, a JSON object, routing its properties by name.
    ///
    /// # Errors
    /// When `text` is not one JSON object (and nothing after it).
    pub(crate) fn read(routes: &Routes, text: &str) -> Result<Routed, serde_json::Error> {
        let mut parser = serde_json::Deserializer::from_str(text);
        let routed = parser.deserialize_map(Content(routes))?;
        parser.end()?;
        Ok(routed)
    }

    /// The slots as routing a parsed map fills them.
    pub(crate) fn borrowed(&self) -> Vec<Option<&Json>> {
        self.slots.iter().map(Option::as_ref).collect()
    }
}

/// Reads the content object.
struct Content<'r>(&'r Routes);

impl<'de> Visitor<'de> for Content<'_> {
    type Value = Routed;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the content of an answer: a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Routed, A::Error> {
        let mut slots = vec![None; self.0.len()];
        let mut unknown: Vec<String> = Vec::new();
        while let Some(name) = map.next_key_seed(NameSeed(self.0))? {
            let value: Json = map.next_value()?;
            match name {
                Name::Slot(slot) => slots[slot] = Some(value),
                Name::Unknown(name) => {
                    if !unknown.contains(&name) {
                        unknown.push(name);
                    }
                }
            }
        }
        Ok(Routed { slots, unknown })
    }
}

/// A property name, routed as it is read.
enum Name {
    /// Owned by a field: its slot.
    Slot(usize),
    /// Owned by no field.
    Unknown(String),
}

/// Reads one property name and routes it.
struct NameSeed<'r>(&'r Routes);

impl<'de> DeserializeSeed<'de> for NameSeed<'_> {
    type Value = Name;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Name, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for NameSeed<'_> {
    type Value = Name;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a property name")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Name, E> {
        Ok(match self.0.slot(name) {
            Some(slot) => Name::Slot(slot),
            None => Name::Unknown(name.to_owned()),
        })
    }
}
