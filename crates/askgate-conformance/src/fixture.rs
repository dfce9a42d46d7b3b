//! What every fixture tool builds: its forms, from JSON the suite's
//! scenarios spell, its plain text results, the text an answer holds, and
//! the end of a round that still awaits answers.

use askgate_core::{Ask, Form, Outcome};
use askgate_mcp::{Round, RoundError};
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, InputRequiredResult};
use serde_json::Value as Json;

/// Why a fixture's work in a round stopped short of its result.
pub(crate) enum Halt {
    /// The round awaits answers: it ends with its input requests (or, on
    /// older revisions, the ask was sent and is waited on elsewhere).
    Pending,
    /// The call fails.
    Failed(ErrorData),
}

impl From<ErrorData> for Halt {
    fn from(error: ErrorData) -> Halt {
        Halt::Failed(error)
    }
}

impl From<RoundError> for Halt {
    fn from(error: RoundError) -> Halt {
        Halt::Failed(error.into())
    }
}

/// The answer a round has, or [`Halt::Pending`] while it is awaited.
pub(crate) fn given<T>(answer: Option<T>) -> Result<T, Halt> {
    answer.ok_or(Halt::Pending)
}

/// Run `work` in `round`: its result, or, when it halted pending, the
/// round's input requests.
pub(crate) async fn finish<R: From<InputRequiredResult>>(
    mut round: Round,
    work: impl AsyncFnOnce(&mut Round) -> Result<R, Halt>,
) -> Result<R, ErrorData> {
    match work(&mut round).await {
        Ok(result) => Ok(result),
        Err(Halt::Pending) => Ok(round.input_required()?.into()),
        Err(Halt::Failed(error)) => Err(error),
    }
}

/// A tool's input schema from its JSON object (anything else: no
/// properties).
pub(crate) fn schema(json: Json) -> std::sync::Arc<serde_json::Map<String, Json>> {
    std::sync::Arc::new(match json {
        Json::Object(map) => map,
        _ => serde_json::Map::new(),
    })
}

/// The error for a call of a tool or prompt this server does not have:
/// `unknown <what> "<name>"; <known>`.
pub(crate) fn unknown(what: &str, name: &str, known: impl std::fmt::Display) -> ErrorData {
    ErrorData::invalid_params(format!("unknown {what} {name:?}; {known}"), None)
}

/// The string argument `name` of a call, if it has one.
pub(crate) fn argument<'a>(
    arguments: Option<&'a serde_json::Map<String, Json>>,
    name: &str,
) -> Option<&'a str> {
    arguments?.get(name)?.as_str()
}

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
