//! The forms the suite's elicitation scenarios ask: a name, a
//! confirmation, `test_elicitation`'s username and email, SEP-1034's
//! defaults and SEP-1330's enums (with the legacy shape asked as a
//! 2025-06-18 client would see it).

use askgate_core::{Action, Ask, Outcome, Response, Revision, Step};
use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, ElicitRequestParams, ElicitationAction};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value as Json, json};

use crate::fixture::{argument, form};

/// A form asking `message`, for a name.
pub(crate) fn name_form(message: &str) -> Result<Ask, ErrorData> {
    form(json!({
        "message": message,
        "fields": [{"id": "name", "title": "Name", "type": "text"}]
    }))
}

/// A yes-or-no confirmation.
pub(crate) fn confirm_form() -> Result<Ask, ErrorData> {
    form(json!({
        "message": "Please confirm",
        "fields": [{"id": "ok", "title": "OK", "type": "boolean"}]
    }))
}

/// `test_elicitation`'s form: the message given, for a username and an
/// email.
pub(crate) fn elicitation_form(params: &CallToolRequestParams) -> Result<Ask, ErrorData> {
    let message = argument(params.arguments.as_ref(), "message").ok_or_else(|| {
        ErrorData::invalid_params("test_elicitation needs a string argument \"message\"", None)
    })?;
    form(json!({
        "message": message,
        "fields": [
            {"id": "username", "title": "Username", "description": "User's response", "type": "text"},
            {"id": "email", "title": "Email", "description": "User's email address", "type": "text", "format": "email"}
        ]
    }))
}

/// SEP-1034's form: every field has a default.
pub(crate) fn defaults_form() -> Result<Ask, ErrorData> {
    form(json!({
        "message": "Please review and update the form fields with defaults",
        "fields": [
            {"id": "name", "title": "Name", "description": "User name", "type": "text", "default": "John Doe", "required": false},
            {"id": "age", "title": "Age", "description": "User age", "type": "integer", "default": 30, "required": false},
            {"id": "score", "title": "Score", "description": "User score", "type": "number", "default": 95.5, "required": false},
            {"id": "status", "title": "Status", "description": "User status", "type": "choice", "default": "active", "required": false,
             "options": [{"value": "active", "label": "active"}, {"value": "inactive", "label": "inactive"},
                         {"value": "pending", "label": "pending"}]},
            {"id": "verified", "title": "Verified", "description": "Verification status", "type": "boolean", "default": true, "required": false}
        ]
    }))
}

/// SEP-1330's form: every kind of enum field.
pub(crate) fn enums_form() -> Result<Ask, ErrorData> {
    let untitled = |values: &[&str]| -> Json {
        values
            .iter()
            .map(|v| json!({"value": v, "label": v}))
            .collect()
    };
    let titled = |pairs: &[(&str, &str)]| -> Json {
        pairs
            .iter()
            .map(|(v, l)| json!({"value": v, "label": l}))
            .collect()
    };
    form(json!({
        "message": "Please select options from the enum fields",
        "fields": [
            {"id": "untitledSingle", "title": "Untitled single", "description": "Select one option",
             "type": "choice", "required": false, "options": untitled(&["option1", "option2", "option3"])},
            {"id": "titledSingle", "title": "Titled single", "description": "Select one option with titles",
             "type": "choice", "required": false,
             "options": titled(&[("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")])},
            {"id": "legacyEnum", "title": "Legacy", "description": "Select one option (legacy)",
             "type": "choice", "required": false,
             "options": titled(&[("opt1", "Option One"), ("opt2", "Option Two"), ("opt3", "Option Three")])},
            {"id": "untitledMulti", "title": "Untitled multi", "description": "Select multiple options",
             "type": "choice", "multiple": true, "min_items": 1, "max_items": 3, "required": false,
             "options": untitled(&["option1", "option2", "option3"])},
            {"id": "titledMulti", "title": "Titled multi", "description": "Select multiple options with titles",
             "type": "choice", "multiple": true, "min_items": 1, "max_items": 3, "required": false,
             "options": titled(&[("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")])}
        ]
    }))
}

/// SEP-1330 also checks the legacy `enum` + `enumNames` shape, which
/// askgate writes only for 2025-06-18 clients (2025-11-25 deprecates it):
/// this asks the form as 2025-11-25 maps it, except `legacy`, which is
/// mapped as a 2025-06-18 client would see it. The answer is settled by
/// the same ask.
pub(crate) async fn ask_with_legacy_enum(
    cx: &RequestContext<RoleServer>,
    ask: Ask,
    legacy: &str,
) -> Result<Outcome, ErrorData> {
    let unsendable = |e: String| ErrorData::internal_error(format!("fixture form: {e}"), None);
    let mut params = ask
        .request(Revision::V2025_11_25)
        .map_err(|e| unsendable(e.to_string()))?;
    let old = ask
        .request(Revision::V2025_06_18)
        .map_err(|e| unsendable(e.to_string()))?;
    if let (Some(slot), Some(property)) = (
        params
            .requested_schema
            .properties
            .iter_mut()
            .find(|slot| slot.name == legacy),
        old.requested_schema.property(legacy),
    ) {
        slot.schema = property.clone();
    }
    let request: ElicitRequestParams =
        serde_json::from_value(params.to_json()).map_err(|e| unsendable(e.to_string()))?;
    let result = cx
        .peer
        .create_elicitation(request)
        .await
        .map_err(|e| ErrorData::internal_error(format!("elicitation failed: {e}"), None))?;
    let response = Response {
        action: match result.action {
            ElicitationAction::Accept => Action::Accept,
            ElicitationAction::Decline => Action::Decline,
            _ => Action::Cancel,
        },
        content: result.content.and_then(|c| c.as_object().cloned()),
    };
    match ask.settle(Revision::V2025_11_25, &response) {
        Step::Settled(outcome) => Ok(outcome),
        Step::ReAsk(_) => Err(ErrorData::invalid_params(
            "the SEP-1330 answer did not settle the form",
            None,
        )),
    }
}
