//! `wait_for_note`: a read that takes a while. It answers a note's text as
//! soon as the note exists, waiting for it at most `wait_ms` milliseconds —
//! a long poll, the kind of read a client may give up on. When its call is
//! cancelled (`notifications/cancelled`, or the server stopping) it stops
//! waiting at once and says so on stderr, naming the tool only (the line
//! [`WAIT_CANCELLED`](super::WAIT_CANCELLED)).

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::CallToolResult;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value as Json, json};

use super::{Notes, WAIT_CANCELLED, failure, note_name, success};

/// The tool's name.
pub(super) const NAME: &str = "wait_for_note";

/// The longest wait a call may ask for: an hour.
const MAX_WAIT_MS: u64 = 60 * 60 * 1000;

/// How often the shelf is looked at while waiting (a note may be written
/// by another call, or by another process in the notes directory).
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// The tool's input: the note's name and the longest wait.
pub(super) fn schema() -> Arc<Map<String, Json>> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The note's name: A-Z, a-z, 0-9, _ and -"},
            "wait_ms": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_WAIT_MS,
                "description": "How long to wait for the note at most, in milliseconds",
            },
        },
        "required": ["name", "wait_ms"],
    });
    match schema {
        Json::Object(object) => Arc::new(object),
        _ => unreachable!("a JSON object literal is an object"),
    }
}

/// Answer the note's text once it exists; a failure result if it still
/// does not after `wait_ms`; an error if the call is cancelled first.
pub(super) async fn wait_for_note(
    notes: &Notes,
    args: &Map<String, Json>,
    cx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let name = note_name(args)?;
    let wait_ms = args
        .get("wait_ms")
        .and_then(Json::as_u64)
        .filter(|ms| *ms <= MAX_WAIT_MS)
        .ok_or_else(|| {
            ErrorData::invalid_params(
                format!("\"wait_ms\" must be an integer from 0 to {MAX_WAIT_MS}"),
                None,
            )
        })?;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(wait_ms);
    loop {
        if let Some(text) = notes.read(name)? {
            return Ok(success(text));
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(failure(format!(
                "no note named {name:?} after {wait_ms} ms"
            )));
        }
        tokio::select! {
            () = cx.ct.cancelled() => {
                eprintln!("{WAIT_CANCELLED}");
                return Err(ErrorData::internal_error("the wait was cancelled", None));
            }
            () = tokio::time::sleep_until(deadline.min(now + LOOK_EVERY)) => {}
        }
    }
}
