//! A classic client asked what a server asks, every answer checked
//! before the server gets it.

use askgate_mcp::RoundError;
use askgate_mcp::client::{Elicitation, Requested};
use askgate_mcp::input;
use rmcp::model::{
    CallToolResponse, ElicitRequestParams, ElicitationAction, InputRequest, ResultType,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value as Json, json};

use super::{MOST_ASKS, as_written};

pub(crate) fn refusal(error: &RoundError) -> String {
    format!("the client behind askgate cannot answer it: {error}")
}

/// Ask a classic client for `request`: checked against what the client
/// declared, and, for a form, the answer checked against the form — asked
/// again with the reason when it does not fit, at most [`MOST_ASKS`] times,
/// then cancelled.
///
/// # Errors
/// Why the client could not be asked, in words for the server.
pub(crate) async fn ask_peer(
    peer: &Peer<RoleServer>,
    request: &InputRequest,
) -> Result<Json, String> {
    let declared = peer.peer_info().map(|info| info.capabilities.clone());
    let lacks = |what: &str| format!("the client behind askgate did not declare {what}");
    match request {
        InputRequest::Elicitation(asked) => {
            let elicitation = declared.as_ref().and_then(|c| c.elicitation.as_ref());
            let Some(elicitation) = elicitation else {
                return Err(lacks("elicitation"));
            };
            let url = matches!(
                asked.params,
                ElicitRequestParams::UrlElicitationParams { .. }
            );
            if url && elicitation.url.is_none() {
                return Err(lacks("URL-mode elicitation"));
            }
            if !url && elicitation.url.is_some() && elicitation.form.is_none() {
                return Err(lacks("form-mode elicitation"));
            }
            let mut params = asked.params.clone();
            for _ in 0..MOST_ASKS {
                // The server's own `_meta` goes with it: the task it asks
                // for (2025-11-25's related-task), say.
                let meta = asked.extensions.get::<rmcp::model::RequestMetaObject>();
                let answer = as_written::elicit(peer, &params, meta).await?;
                match check(request, &answer) {
                    Ok(answer) => return Ok(answer),
                    Err(why) => params = reasoned(&asked.params, &why),
                }
            }
            Ok(json!({"action": "cancel"}))
        }
        InputRequest::CreateMessage(asked) => {
            if declared.as_ref().is_none_or(|c| c.sampling.is_none()) {
                return Err(lacks("sampling"));
            }
            as_written::sample(peer, &asked.params).await
        }
        InputRequest::ListRoots(_) => {
            if declared.as_ref().is_none_or(|c| c.roots.is_none()) {
                return Err(lacks("roots"));
            }
            let result = peer
                .list_roots()
                .await
                .map_err(|e| format!("the client could not list its roots: {e}"))?;
            serde_json::to_value(&result).map_err(|e| e.to_string())
        }
        _ => Err("an input request of a kind askgate does not know".into()),
    }
}

/// Check an answer to `request` before the server gets it: the shape of
/// the result, and for an accepted form every value against its property —
/// nothing unasked, nothing required missing. Returns the answer with
/// values in their canonical form.
///
/// # Errors
/// Why it does not fit, naming the property, never the value.
pub(crate) fn check(request: &InputRequest, answer: &Json) -> Result<Json, String> {
    let malformed = |e: input::InputError| e.to_string();
    match request {
        InputRequest::Elicitation(asked) => {
            let mut result = input::read_elicitation(answer).map_err(malformed)?;
            if result.action != ElicitationAction::Accept {
                result.content = None;
                return serde_json::to_value(&result).map_err(|e| e.to_string());
            }
            let Ok(Elicitation::Form(form)) = Elicitation::read(&asked.params) else {
                // URL mode (no content), or a form askgate cannot read —
                // the server checks that one itself.
                return Ok(answer.clone());
            };
            let content = match result.content.take() {
                Some(Json::Object(content)) => content,
                None => Map::new(),
                Some(_) => return Err("the answer's content is not an object".into()),
            };
            result.content = Some(Json::Object(checked(&form, content)?));
            serde_json::to_value(&result).map_err(|e| e.to_string())
        }
        InputRequest::CreateMessage(_) => {
            input::read_sampling(answer).map_err(malformed)?;
            Ok(answer.clone())
        }
        InputRequest::ListRoots(_) => {
            input::read_roots(answer).map_err(malformed)?;
            Ok(answer.clone())
        }
        _ => Err("an input request of a kind askgate does not know".into()),
    }
}

fn checked(form: &Requested, mut content: Map<String, Json>) -> Result<Map<String, Json>, String> {
    if let Some(name) = content
        .keys()
        .find(|name| !form.properties.iter().any(|p| &p.name == *name))
    {
        return Err(format!("{name:?} was not asked for"));
    }
    let mut out = Map::new();
    for property in &form.properties {
        match content.remove(&property.name) {
            Some(value) => {
                let value = property
                    .check(&value)
                    .map_err(|why| format!("{}: {why}", property.name))?;
                out.insert(property.name.clone(), value);
            }
            None if property.required => return Err(format!("{} is required", property.name)),
            None => {}
        }
    }
    Ok(out)
}

/// The form's params with the reason the last answer did not fit before
/// its message.
fn reasoned(params: &ElicitRequestParams, why: &str) -> ElicitRequestParams {
    let mut params = params.clone();
    if let ElicitRequestParams::FormElicitationParams { message, .. } = &mut params {
        *message = format!("The last answer did not fit ({why}).\n\n{message}");
    }
    params
}

pub(crate) fn with_reason(request: &InputRequest, why: &str) -> InputRequest {
    match request {
        InputRequest::Elicitation(asked) => {
            let mut asked = asked.clone();
            asked.params = reasoned(&asked.params, why);
            InputRequest::Elicitation(asked)
        }
        other => other.clone(),
    }
}

/// A result from an older upstream has no `resultType`; a 2026-07-28
/// client needs one (rmcp strips it for older ones).
pub(crate) fn complete(mut result: rmcp::model::CallToolResult) -> CallToolResponse {
    result.result_type.get_or_insert(ResultType::COMPLETE);
    result.into()
}
