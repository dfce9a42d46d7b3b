//! What every fixture tool builds: its forms, from JSON the suite's
//! scenarios spell, and its plain text results.

use askgate_core::{Ask, Form};
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
