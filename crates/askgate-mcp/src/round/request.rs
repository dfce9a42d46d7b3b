//! The request a round belongs to.

use rmcp::model::{
    CallToolRequestParams, GetPromptRequestParams, InputResponses, JsonObject,
    ReadResourceRequestParams,
};
use serde_json::Value as Json;

/// The request a round belongs to: what sealed state is bound to, and the
/// answers the retry carries.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub(super) method: &'static str,
    pub(super) name: &'a str,
    pub(super) arguments: Json,
    pub(super) input_responses: Option<&'a InputResponses>,
    pub(super) request_state: Option<&'a str>,
    pub(super) principal: Option<String>,
}

impl<'a> Request<'a> {
    /// A `tools/call`.
    pub fn tool(params: &'a CallToolRequestParams) -> Request<'a> {
        Request {
            method: "tools/call",
            name: &params.name,
            arguments: object(params.arguments.as_ref()),
            input_responses: params.input_responses.as_ref(),
            request_state: params.request_state.as_deref(),
            principal: None,
        }
    }

    /// A `prompts/get`.
    pub fn prompt(params: &'a GetPromptRequestParams) -> Request<'a> {
        Request {
            method: "prompts/get",
            name: &params.name,
            arguments: object(params.arguments.as_ref()),
            input_responses: params.input_responses.as_ref(),
            request_state: params.request_state.as_deref(),
            principal: None,
        }
    }

    /// A `resources/read`.
    pub fn resource(params: &'a ReadResourceRequestParams) -> Request<'a> {
        Request {
            method: "resources/read",
            name: &params.uri,
            arguments: Json::Object(JsonObject::new()),
            input_responses: params.input_responses.as_ref(),
            request_state: params.request_state.as_deref(),
            principal: None,
        }
    }

    /// Bind the request (its sealed state, its parked asks, the audit's
    /// digest) to `arguments` instead of the request's own: the arguments
    /// that say which call this is — without a caller's `confirm`, say, so
    /// the call with and without it is one call.
    #[must_use]
    pub fn with_arguments(mut self, arguments: Json) -> Request<'a> {
        self.arguments = arguments;
        self
    }

    /// Bind sealed state to `principal` (default: the request's
    /// [`Principal`](crate::Principal) extension, else `anonymous`).
    #[must_use]
    pub fn for_principal(mut self, principal: impl Into<String>) -> Request<'a> {
        self.principal = Some(principal.into());
        self
    }
}

fn object(arguments: Option<&JsonObject>) -> Json {
    Json::Object(arguments.cloned().unwrap_or_default())
}
