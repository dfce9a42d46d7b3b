//! The 2025-11-25 task fields carried through rmcp ([`crate::legacy_tasks`]):
//! whatever a line says, carrying it changes nothing but what is carried.

use serde_json::Value as Json;

use super::check;
use crate::legacy_tasks::{as_written, inbound, restore_frame, stow_answer};

/// `line` as JSON, if it is.
fn parsed(line: &[u8]) -> Option<Json> {
    serde_json::from_slice(line).ok()
}

/// A client's line renamed for askgate keeps everything but its method; an
/// upstream's answer carried through rmcp comes back as it was written; a
/// frame with nothing carried is written as it is.
pub fn carried_line(line: &[u8]) {
    super::checking(line);
    if let Some(renamed) = inbound(line, |_| true) {
        let (before, after) = (parsed(line), parsed(&renamed));
        let same_but_method = match (before, after) {
            (Some(Json::Object(mut before)), Some(Json::Object(mut after))) => {
                before.remove("method");
                after.remove("method");
                before == after
            }
            _ => false,
        };
        check("carry-rename", same_but_method, || {
            format!("renamed into {}", String::from_utf8_lossy(&renamed))
        });
    }
    if let Some(stowed) = stow_answer(line) {
        let back = restore_frame(&stowed).into_owned();
        let back = parsed(&back).map(|mut message| {
            if let Some(result) = message.get_mut("result") {
                *result = as_written(result.take());
            }
            message
        });
        let (back, before) = (back.map(without_empty), parsed(line).map(without_empty));
        check("carry-round-trip", back.is_some() && back == before, || {
            format!("carried as {}", String::from_utf8_lossy(&stowed))
        });
    }
    let untouched = !line
        .windows(b"io.askgate/".len())
        .any(|window| window == b"io.askgate/");
    if untouched {
        let written = restore_frame(line);
        check("carry-nothing", written.as_ref() == line, || {
            format!("written as {}", String::from_utf8_lossy(&written))
        });
    }
}

/// `value` without empty `_meta` and `experimental` objects: carrying puts
/// one back only when it holds something, and an empty one says nothing.
fn without_empty(value: Json) -> Json {
    match value {
        Json::Object(object) => Json::Object(
            object
                .into_iter()
                .filter(|(key, value)| {
                    !(matches!(key.as_str(), "_meta" | "experimental")
                        && value.as_object().is_some_and(serde_json::Map::is_empty))
                })
                .map(|(key, value)| (key, without_empty(value)))
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.into_iter().map(without_empty).collect()),
        other => other,
    }
}
