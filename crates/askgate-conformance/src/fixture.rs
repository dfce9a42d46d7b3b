//! What every fixture tool builds: its forms, from JSON the suite's
//! scenarios spell, its plain text results, and the text an answer holds.

use askgate_core::{Ask, Form, Outcome};
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use serde_json::Value as Json;

/// A fixture's form from its JSON; a form the suite's fixtures spell wrong
/// is the server's own error.
pub(crate) fn form(json: Json) -> Result<Ask, ErrorData> {
    let form: Form = serde_json::from_value(json)
        .map_err(|e| ErrorData::internal_error(format!("fixture form: {e}"), None))?;
    Ask::new(form).map_err(|e| ErrorData::internal_error(format!("fixture form: {e}"), None))
}

/// A successful tool result of one text.
pub(crate) fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text.into())]).into()
}

/// A text value of an accepted outcome.
pub(crate) fn value(outcome: &Outcome, id: &str) -> Option<String> {
    let Outcome::Accepted { values } = outcome else {
        return None;
    };
    values.get(id).map(|v| match v.value.to_json() {
        Json::String(s) => s,
        other => other.to_string(),
    })
}
