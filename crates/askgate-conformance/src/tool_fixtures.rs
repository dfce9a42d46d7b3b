//! The suite's tools that ask nothing: each content type (text, image,
//! audio, embedded resource, several at once), an error result, log
//! messages and progress during a call, a JSON Schema 2020-12 input schema
//! kept as written, a parameter mirrored in an `Mcp-Param-*` header
//! (SEP-2243), and a call whose response stream closes mid-call (SEP-1699).

// Logging is deprecated in rmcp (SEP-2577); the suite still exercises it.
#![allow(deprecated)]

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, LoggingLevel,
    ProgressNotificationParam, ResourceContents, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value as Json, json};

use crate::fixture::{schema, text};
use crate::logs::Logs;
use crate::streams::{CloseError, RECONNECTION_TOOL, Sessions};

/// A 1×1 red PNG, base64.
pub(crate) const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// Eight samples of 8-bit mono silence at 8 kHz, a WAV file, base64.
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The pause between a call's log messages or progress steps: long enough
/// for the client to see them arrive one by one.
const STEP: Duration = Duration::from_millis(50);

/// The tools without an argument, each with its description.
const PLAIN: [(&str, &str); 10] = [
    ("test_simple_text", "Returns one text"),
    ("test_image_content", "Returns a PNG image"),
    ("test_audio_content", "Returns a WAV sound"),
    (
        "test_embedded_resource",
        "Returns an embedded text resource",
    ),
    (
        "test_multiple_content_types",
        "Returns a text, an image and an embedded resource",
    ),
    (
        "test_tool_with_logging",
        "Sends three log messages while it runs",
    ),
    ("test_error_handling", "Always fails, with an error result"),
    (
        "test_tool_with_progress",
        "Reports its progress in three steps when given a progress token",
    ),
    ("test_logging_tool", "Sends one log message at info level"),
    (
        RECONNECTION_TOOL,
        "Closes its response stream before it answers; the answer waits for the client to reconnect",
    ),
];

/// The JSON Schema 2020-12 tool's name.
const SCHEMA_TOOL: &str = "json_schema_2020_12_tool";

/// The tool whose argument is mirrored in an `Mcp-Param-Region` header.
const HEADER_TOOL: &str = "test_header_param";

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    let mut tools: Vec<Tool> = PLAIN
        .iter()
        .map(|(name, description)| Tool::new(*name, *description, schema(empty.clone())))
        .collect();
    tools.push(Tool::new(
        SCHEMA_TOOL,
        "Tool with JSON Schema 2020-12 features",
        schema(schema_2020_12()),
    ));
    tools.push(Tool::new(
        HEADER_TOOL,
        "Takes a region, sent in the Mcp-Param-Region header as well",
        schema(json!({
            "type": "object",
            "properties": {"region": {"type": "string", "description": "A region", "x-mcp-header": "Region"}},
            "required": ["region"]
        })),
    ));
    tools
}

/// Whether `name` is one of this module's tools.
pub(crate) fn has(name: &str) -> bool {
    name == SCHEMA_TOOL || name == HEADER_TOOL || PLAIN.iter().any(|(tool, _)| *tool == name)
}

/// The input schema of SEP-1613 and SEP-2106: `$schema`, `$defs` with an
/// `$anchor`, a `$ref`, `allOf`/`anyOf`, `if`/`then`/`else` and
/// `additionalProperties`.
fn schema_2020_12() -> Json {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// A result of `content`.
fn content(content: Vec<ContentBlock>) -> CallToolResponse {
    CallToolResult::success(content).into()
}

/// An embedded resource of `text` at `uri`, typed `mime`.
fn embedded(uri: &str, mime: &str, text: &str) -> ContentBlock {
    ContentBlock::resource(ResourceContents::text(text, uri).with_mime_type(mime))
}

/// Call the tool `params` names (one of [`has`]).
pub(crate) async fn call(
    params: &CallToolRequestParams,
    cx: &RequestContext<RoleServer>,
    logs: &Logs,
    sessions: Option<&Sessions>,
) -> Result<CallToolResponse, ErrorData> {
    Ok(match &*params.name {
        "test_simple_text" => text("This is a simple text response for testing."),
        "test_image_content" => content(vec![ContentBlock::image(PNG, "image/png")]),
        "test_audio_content" => content(vec![ContentBlock::audio(WAV, "audio/wav")]),
        "test_embedded_resource" => content(vec![embedded(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        )]),
        "test_multiple_content_types" => content(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG, "image/png"),
            embedded(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            ),
        ]),
        "test_error_handling" => CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )])
        .into(),
        "test_tool_with_logging" => {
            for (i, step) in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ]
            .into_iter()
            .enumerate()
            {
                if i > 0 {
                    tokio::time::sleep(STEP).await;
                }
                logs.log(cx, LoggingLevel::Info, step).await;
            }
            text("Tool with logging executed successfully")
        }
        "test_logging_tool" => {
            logs.log(cx, LoggingLevel::Info, "test_logging_tool ran")
                .await;
            text("Logged at info level (when the client asked for it)")
        }
        "test_tool_with_progress" => progress(cx).await,
        SCHEMA_TOOL => text("JSON Schema 2020-12 tool called"),
        HEADER_TOOL => text("The region arrived in the body and the header alike"),
        RECONNECTION_TOOL => reconnection(cx, sessions).await?,
        other => {
            return Err(crate::fixture::unknown(
                "tool",
                other,
                "tools/list names the fixtures",
            ));
        }
    })
}

/// Progress 0, 50 and 100 of 100 for the call's progress token, a step
/// apart (just the steps without a token).
async fn progress(cx: &RequestContext<RoleServer>) -> CallToolResponse {
    let token = cx.meta.get_progress_token();
    for (i, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(STEP).await;
        }
        if let Some(token) = &token {
            let mut step = ProgressNotificationParam::new(token.clone(), done);
            step.total = Some(100.0);
            let _ = cx.peer.notify_progress(step).await;
        }
    }
    text("Tool with progress executed successfully")
}

/// Close the call's response stream, then answer: the answer reaches the
/// client when it reconnects with `Last-Event-ID`. Without a session (a
/// 2026-07-28 request) there is no stream to resume: it just answers.
async fn reconnection(
    cx: &RequestContext<RoleServer>,
    sessions: Option<&Sessions>,
) -> Result<CallToolResponse, ErrorData> {
    let Some(sessions) = sessions else {
        return Ok(text("Reconnection test completed"));
    };
    match sessions.close_stream(cx).await {
        Ok(()) => tokio::time::sleep(crate::streams::ANSWER_AFTER).await,
        Err(CloseError::NoSession) => {}
        Err(e) => {
            return Err(ErrorData::internal_error(
                format!("test_reconnection: {e}"),
                None,
            ));
        }
    }
    Ok(text("Reconnection test completed"))
}
