//! What the person is shown of a call's arguments, and the caller's
//! `confirm` taken out of them.

use rmcp::model::{JsonObject, Tool};
use serde_json::Value as Json;

/// The caller's `confirm: true`, taken out of the arguments unless the
/// tool has a `confirm` argument of its own.
pub(crate) fn take_confirm(tool: &Tool, arguments: &mut JsonObject) -> bool {
    let own = tool
        .input_schema
        .get("properties")
        .and_then(Json::as_object)
        .is_some_and(|p| p.contains_key("confirm"));
    if own {
        return false;
    }
    // Its place taken out, the others keep their order.
    arguments.shift_remove("confirm") == Some(Json::Bool(true))
}

/// A short view of the arguments for the person: values cut short, and
/// values of secret-sounding keys hidden. Keys in sorted order at every
/// level: the same call, its keys sent in another order, reads the same —
/// the question a person answered is the question asked again.
pub(crate) fn preview(arguments: &JsonObject) -> String {
    const SECRET: [&str; 6] = ["token", "secret", "password", "key", "credential", "auth"];
    let mut parts = Vec::new();
    let mut keys: Vec<&String> = arguments.keys().collect();
    keys.sort();
    for (key, value) in keys.into_iter().map(|key| (key, &arguments[key.as_str()])) {
        let lower = key.to_ascii_lowercase();
        let shown = if SECRET.iter().any(|s| lower.contains(s)) {
            "[hidden]".to_owned()
        } else {
            let text = match value {
                Json::String(s) => format!("{s:?}"),
                other => askgate_core::canonical_json(other),
            };
            if text.chars().count() > 80 {
                format!("{}…", text.chars().take(80).collect::<String>())
            } else {
                text
            }
        };
        parts.push(format!("{key}: {shown}"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(json: Json) -> JsonObject {
        json.as_object().cloned().expect("an object")
    }

    #[test]
    fn the_same_arguments_in_another_order_read_the_same() {
        let sent = object(serde_json::json!({"path": "/srv", "opts": {"b": 1, "a": [2]}, "n": 3}));
        let again = object(serde_json::json!({"n": 3, "opts": {"a": [2], "b": 1}, "path": "/srv"}));
        assert_eq!(preview(&sent), preview(&again));
        assert_eq!(
            preview(&sent),
            r#"n: 3, opts: {"a":[2],"b":1}, path: "/srv""#
        );
    }

    #[test]
    fn the_callers_confirm_taken_out_leaves_the_rest_as_it_was() {
        let tool = Tool::new("t", "", std::sync::Arc::new(JsonObject::new()));
        let mut with = object(serde_json::json!({"confirm": true, "a": 1, "b": 2, "c": 3}));
        assert!(take_confirm(&tool, &mut with));
        assert_eq!(with.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    }
}
