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
    arguments.remove("confirm") == Some(Json::Bool(true))
}

/// A short view of the arguments for the person: values cut short, and
/// values of secret-sounding keys hidden.
pub(crate) fn preview(arguments: &JsonObject) -> String {
    const SECRET: [&str; 6] = ["token", "secret", "password", "key", "credential", "auth"];
    let mut parts = Vec::new();
    for (key, value) in arguments {
        let lower = key.to_ascii_lowercase();
        let shown = if SECRET.iter().any(|s| lower.contains(s)) {
            "[hidden]".to_owned()
        } else {
            let text = match value {
                Json::String(s) => format!("{s:?}"),
                other => other.to_string(),
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
