//! The top level of a JSON object as written: its keys in order, with
//! duplicates, each marked when it was written with escapes, and each
//! value as its text.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The longest `id` an [`crate::lines::Envelope`] keeps (its
/// `LONGEST_ID`).
const LONGEST_ID: usize = 256;

/// A top-level key, and whether it was written without escapes.
struct Key {
    text: String,
    literal: bool,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        struct Read;
        impl<'de> Visitor<'de> for Read {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            // serde_json lends a string that had no escapes.
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Key, E> {
                Ok(Key {
                    text: text.to_owned(),
                    literal: true,
                })
            }
            fn visit_str<E>(self, text: &str) -> Result<Key, E> {
                Ok(Key {
                    text: text.to_owned(),
                    literal: false,
                })
            }
        }
        deserializer.deserialize_str(Read)
    }
}

/// The entries of a JSON object's top level, in order, duplicates kept.
pub(super) struct TopLevel<'a> {
    entries: Vec<(Key, &'a RawValue)>,
}

impl<'a> TopLevel<'a> {
    /// `line`'s top level, when it is one JSON object.
    pub(super) fn of(line: &'a [u8]) -> Option<TopLevel<'a>> {
        serde_json::from_slice(line).ok()
    }

    /// The value of the last key `name` written without escapes.
    pub(super) fn literal(&self, name: &str) -> Option<&'a RawValue> {
        self.entries
            .iter()
            .rev()
            .find(|(key, _)| key.literal && key.text == name)
            .map(|(_, value)| *value)
    }

    /// The id an envelope keeps of `line` (this top level's): the last
    /// `id` written without escapes, unless null, or longer, with the
    /// blanks around it, than an envelope keeps.
    pub(super) fn envelope_id(&self, line: &[u8]) -> Option<String> {
        let id = self.literal("id")?.get();
        if id == "null" {
            return None;
        }
        // The value is a slice of `line`: where it starts tells its blanks.
        let start = (id.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
        let end = start + id.len();
        let blank = |b: &&u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        let before = line.get(..start)?.iter().rev().take_while(blank).count();
        let after = line.get(end..)?.iter().take_while(blank).count();
        (before + id.len() + after <= LONGEST_ID).then(|| id.to_owned())
    }
}

impl<'de> Deserialize<'de> for TopLevel<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<TopLevel<'de>, D::Error> {
        struct Read;
        impl<'de> Visitor<'de> for Read {
            type Value = TopLevel<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<TopLevel<'de>, M::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<Key>()? {
                    entries.push((key, map.next_value::<&'de RawValue>()?));
                }
                Ok(TopLevel { entries })
            }
        }
        deserializer.deserialize_map(Read)
    }
}
