//! What `askgate asks show` leaves out: the value of every sensitive
//! field (a token, a password), in the reply, the outcome and whatever
//! the request holds of earlier answers. The operator reads the rest; the
//! one who asked gets the value from `askgate ask --wait`.

use askgate_mcp::stored::StoredRequest;
use askgate_store::AskRow;
use serde_json::Value as Json;

/// What stands in for a sensitive value.
const HIDDEN: &str = "(hidden)";

/// `row` with its sensitive fields' values hidden.
pub(super) fn hide_sensitive(mut row: AskRow) -> AskRow {
    let Ok(StoredRequest::Form { ask }) = serde_json::from_value(row.ask.request.clone()) else {
        return row;
    };
    let sensitive: Vec<String> = ask
        .form
        .fields
        .iter()
        .filter(|field| field.sensitive)
        .map(|field| field.id.clone())
        .collect();
    if sensitive.is_empty() {
        return row;
    }
    for value in [row.reply.as_mut(), row.outcome.as_mut()]
        .into_iter()
        .flatten()
    {
        hide_by_key(value, &sensitive);
    }
    hide_by_id(&mut row.ask.request, &sensitive);
    row
}

/// Every value under a sensitive field's id, at any depth (a reply's
/// `content`, an outcome's `values`).
fn hide_by_key(value: &mut Json, sensitive: &[String]) {
    match value {
        Json::Object(map) => {
            for (key, value) in map.iter_mut() {
                if sensitive.contains(key) {
                    *value = Json::from(HIDDEN);
                } else {
                    hide_by_key(value, sensitive);
                }
            }
        }
        Json::Array(items) => items
            .iter_mut()
            .for_each(|item| hide_by_key(item, sensitive)),
        _ => {}
    }
}

/// The `value` and `default` of every object naming a sensitive field by
/// its `id` (a field), and the values by id of the request's `answered`
/// (settled in earlier attempts) and `supplied` (given by the asker), at
/// any depth.
fn hide_by_id(value: &mut Json, sensitive: &[String]) {
    match value {
        Json::Object(map) => {
            let named = map
                .get("id")
                .and_then(Json::as_str)
                .is_some_and(|id| sensitive.iter().any(|s| s == id));
            for (key, value) in map.iter_mut() {
                if named && (key == "value" || key == "default") {
                    *value = Json::from(HIDDEN);
                } else if key == "answered" || key == "supplied" {
                    hide_by_key(value, sensitive);
                } else {
                    hide_by_id(value, sensitive);
                }
            }
        }
        Json::Array(items) => items
            .iter_mut()
            .for_each(|item| hide_by_id(item, sensitive)),
        _ => {}
    }
}
