//! What the client sends that rmcp would misread, answered or mended
//! before rmcp sees it.
//!
//! rmcp reads each message into its model. When a message does not fit,
//! it does not always say so to the one waiting: a request whose params
//! have the wrong shape (`"name": 5` in a `tools/call`) is read as a method
//! nobody serves (`-32601`), one it cannot read at all (params that are a
//! string, arguments nested past serde's depth limit) gets an error without
//! its id, and an answer it cannot read (an elicitation answered with an
//! `error` that is not an error object) is dropped — and the call that
//! asked waits for ever. So each line rmcp would read is read here first:
//!
//! - a request of an MCP method whose params do not fit is answered
//!   `-32602`, naming the method and what was wrong;
//! - a request that cannot be read is answered `-32600` with its id (found
//!   by [`Envelope`], which reads the top level at any depth);
//! - an answer that cannot be read reaches rmcp as a JSON-RPC error with
//!   its id, so that the request it answers ends.
//!
//! Everything else passes as it is. The same [`verdict`] screens each
//! message POSTed on `--listen` (see `listen/screening.rs`).

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use serde_json::{Value as Json, json};

use crate::lines::{Envelope, Offered, Out};

/// The methods a client sends that rmcp's model knows: a request of one of
/// them that rmcp read as a method of its own had params that do not fit.
const MCP_METHODS: [&str; 21] = [
    "ping",
    "initialize",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "subscriptions/listen",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
    "resources/directory/read",
];

/// What the screen makes of a message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// rmcp reads it as it is.
    Pass,
    /// A request answered here, with this JSON-RPC error (its id, one
    /// line of JSON, no newline).
    Answer(String),
    /// An answer rmcp could not read: this JSON-RPC error with its id
    /// goes to rmcp instead.
    Mend(Vec<u8>),
}

/// Look at `line` before rmcp reads it: answer it on `reply`, mend it, or
/// pass it.
pub(crate) fn screen(line: &[u8], reply: &std::sync::Arc<Out>) -> Offered {
    match verdict(line) {
        Verdict::Pass => Offered::Passed,
        Verdict::Answer(error) => {
            if let Err(error) = reply.send(format!("{error}\n").as_bytes()) {
                tracing::debug!(%error, "the client went away before its error");
            }
            Offered::Taken
        }
        Verdict::Mend(instead) => Offered::Instead(instead),
    }
}

/// What to do with `message` (a line on stdio, a POST's body over HTTP)
/// before rmcp reads it.
pub(crate) fn verdict(message: &[u8]) -> Verdict {
    // rmcp strips a byte order mark before it reads a line: so does this.
    let line = message.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(message);
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(JsonRpcMessage::Request(request)) => match &request.request {
            ClientRequest::CustomRequest(custom)
                if MCP_METHODS.contains(&custom.method.as_str()) =>
            {
                let id = serde_json::to_string(&request.id).unwrap_or_else(|_| "null".into());
                Verdict::Answer(answer(
                    &id,
                    -32602,
                    &format!(
                        "invalid params for {}: {}",
                        custom.method,
                        misfit(&custom.method, custom.params.as_ref())
                    ),
                ))
            }
            _ => Verdict::Pass,
        },
        Ok(_) => Verdict::Pass,
        Err(error) => {
            let mut envelope = Envelope::default();
            envelope.feed(line);
            // An id that is no JSON value (`"id":1 2`) cannot be written
            // back: what is answered with it would not be JSON either.
            let Some(id) = envelope
                .id()
                .filter(|id| serde_json::from_str::<serde::de::IgnoredAny>(id).is_ok())
            else {
                return Verdict::Pass;
            };
            if envelope.is_request() {
                Verdict::Answer(answer(id, -32600, &format!("invalid request: {error}")))
            } else if envelope.is_answer() {
                let error = json!({
                    "code": -32603,
                    "message": format!("the client's answer could not be read: {error}"),
                });
                Verdict::Mend(
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#).into_bytes(),
                )
            } else {
                Verdict::Pass
            }
        }
    }
}

/// What is wrong with `params` for `method`, as far as the params' own
/// type says.
fn misfit(method: &str, params: Option<&Json>) -> String {
    use rmcp::model::{
        CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams,
        InitializeRequestParams, ReadResourceRequestParams,
    };
    fn why<T: serde::de::DeserializeOwned>(params: Option<&Json>) -> Option<String> {
        serde_json::from_value::<T>(params.cloned().unwrap_or(Json::Null))
            .err()
            .map(|e| e.to_string())
    }
    let said = match method {
        "tools/call" => why::<CallToolRequestParams>(params),
        "prompts/get" => why::<GetPromptRequestParams>(params),
        "resources/read" => why::<ReadResourceRequestParams>(params),
        "completion/complete" => why::<CompleteRequestParams>(params),
        "initialize" => why::<InitializeRequestParams>(params),
        _ => None,
    };
    said.unwrap_or_else(|| "they do not have the shape the protocol gives them".to_owned())
}

/// The JSON-RPC error `code`, `message` for request `id` (as written).
fn answer(id: &str, code: i64, message: &str) -> String {
    let error = json!({"code": code, "message": message});
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}")
}
