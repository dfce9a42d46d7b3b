//! Question sets through the gateway: the `ask` tool the model may call,
//! and intake questions asked before a configured tool's first call.
//! Either way the questions go to the person like any ask (a form, the
//! multi round-trip model, or the inbox), and come back as one outcome the
//! model reads, every value saying where it came from.

use askgate_core::{QuestionSet, ask_tool};
use askgate_mcp::Round;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::Value as Json;

/// The `ask` tool as listed.
pub(crate) fn ask_tool() -> Option<Tool> {
    serde_json::from_value(ask_tool::definition()).ok()
}

/// What asking a question set came to.
pub(crate) enum Asked {
    /// The rendered outcome, for the model.
    Settled(String),
    /// Waiting on the person: end the round.
    Waiting,
}

/// Put `set` to the person under `key`.
///
/// # Errors
/// A set askgate-core refuses (a bug in a configured intake, or a model's
/// set that passed the tool's checks but not the set's), or a round error.
pub(crate) async fn put(
    round: &mut Round,
    key: &str,
    set: QuestionSet,
    answered_by: &str,
) -> Result<Asked, ErrorData> {
    let checked = set.prepare().map_err(|e| {
        ErrorData::invalid_params(format!("the questions cannot be asked: {e}"), None)
    })?;
    let Some(outcome) = round.ask(key, checked.ask().clone()).await? else {
        return Ok(Asked::Waiting);
    };
    let reply = checked.reply_from_elicitation(&outcome, Some(answered_by.to_owned()));
    let settled = checked
        .settle(&reply)
        .map_err(|e| ErrorData::internal_error(format!("the answers did not settle: {e}"), None))?;
    Ok(Asked::Settled(settled.render()))
}

/// The model's `ask` call: its questions checked (a mistake is a tool
/// error addressed to the model), then put to the person.
///
/// # Errors
/// As [`put`].
pub(crate) async fn ask(
    round: &mut Round,
    arguments: &JsonObject,
    answered_by: &str,
) -> Result<Option<CallToolResult>, ErrorData> {
    let set = match ask_tool::parse_input(&Json::Object(arguments.clone())) {
        Ok(set) => set,
        Err(mistake) => {
            return Ok(Some(CallToolResult::error(vec![ContentBlock::text(
                mistake.to_string(),
            )])));
        }
    };
    Ok(match put(round, "ask", set, answered_by).await? {
        Asked::Settled(text) => Some(CallToolResult::success(vec![ContentBlock::text(text)])),
        Asked::Waiting => None,
    })
}
