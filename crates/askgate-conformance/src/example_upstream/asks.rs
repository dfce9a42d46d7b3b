//! What the example upstream asks the person, for the gateway to relay:
//! their name (the `ask_name` tool, the [`PROMPT_ASKING`](super::PROMPT_ASKING)
//! prompt and the [`RESOURCE_ASKING`](super::RESOURCE_ASKING) resource), and
//! a sign-in through a link (the `sign_in` tool).
//!
//! On 2025-11-25 and older a name is asked through `elicitation/create`, a
//! request the server waits on; on 2026-07-28 through the input requests of
//! an `InputRequiredResult` (key `name`), the answer coming on the retry.
//! `sign_in` is a URL-mode elicitation (2025-11-25), followed by
//! `notifications/elicitation/complete` naming its `elicitationId` once the
//! (stand-in) sign-in page is done.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ClientCapabilities, ClientResult, CustomNotification, ElicitRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, ElicitationSchema, InputRequest,
    InputRequiredResult, InputResponses, ProtocolVersion, ServerNotification, ServerRequest,
};
use rmcp::service::{ElicitationMode, PeerRequestOptions, RequestContext, RoleServer};
use serde_json::{Map, Value as Json, json};

use super::{failure, success};

/// Whether `cx`'s client speaks 2026-07-28, where asks go in
/// `InputRequiredResult`s.
pub(super) fn in_rounds(cx: &RequestContext<RoleServer>) -> bool {
    cx.protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// What `ask_name` asks.
fn name_request() -> Result<ElicitRequestParams, ErrorData> {
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {"name": {"type": "string", "title": "Your name", "minLength": 1}},
        "required": ["name"]
    }))
    .map_err(|e| ErrorData::internal_error(format!("the ask_name schema: {e}"), None))?;
    serde_json::from_value(json!({
        "message": "What is your name?",
        "requestedSchema": schema
    }))
    .map_err(|e| ErrorData::internal_error(format!("the ask_name request: {e}"), None))
}

/// The name asked for as the input request `name` (2026-07-28).
fn name_input_required() -> Result<InputRequiredResult, ErrorData> {
    let request = InputRequest::Elicitation(ElicitRequest::new(name_request()?));
    let requests = BTreeMap::from([("name".to_owned(), request)]);
    Ok(InputRequiredResult::new(Some(requests), None))
}

/// The answer a retry carries under `name`, if any.
fn name_answer(responses: Option<&InputResponses>) -> Result<Option<ElicitResult>, ErrorData> {
    let Some(answer) = responses.and_then(|r| r.get("name")) else {
        return Ok(None);
    };
    serde_json::from_value(answer.clone())
        .map(Some)
        .map_err(|e| {
            ErrorData::invalid_params(
                format!("inputResponses.name is not an ElicitResult: {e}"),
                None,
            )
        })
}

/// Ask the person their name through `elicitation/create` (2025-11-25 and
/// older: a request to the client, waited on).
pub(super) async fn ask_name(cx: &RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
    if cx.peer.supported_elicitation_modes().is_empty() {
        return Ok(failure(
            "this client cannot show a question (it declared no elicitation capability)",
        ));
    }
    let result = match cx.peer.create_elicitation(name_request()?).await {
        Ok(result) => result,
        Err(e) => return Ok(failure(format!("asking failed: {e}"))),
    };
    Ok(greeting(&result))
}

/// `ask_name_later`'s arguments: `after_ms`, optional.
pub(super) fn later_schema() -> Arc<Map<String, Json>> {
    let schema = json!({
        "type": "object",
        "properties": {
            "after_ms": {
                "type": "integer",
                "minimum": 0,
                "maximum": 60_000,
                "description": "How long after its answer to ask, in milliseconds (default 200)",
            },
        },
    });
    match schema {
        Json::Object(object) => Arc::new(object),
        _ => unreachable!("a JSON object literal is an object"),
    }
}

/// Answer at once, and a moment later (`after_ms`, an integer; default
/// 200) ask the person's name through `elicitation/create` — outside any
/// call, as a server that asks on its own does. How it ended goes to
/// stderr ([`super::ASKED_LATER`]).
pub(super) fn ask_name_later(
    args: &Map<String, Json>,
    cx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let after = match args.get("after_ms") {
        None => 200,
        Some(after) => after.as_u64().filter(|ms| *ms <= 60_000).ok_or_else(|| {
            ErrorData::invalid_params("\"after_ms\" must be an integer from 0 to 60000", None)
        })?,
    };
    let request = name_request()?;
    let peer = cx.peer.clone();
    tokio::spawn(async move {
        // After the call's answer has reached the client.
        tokio::time::sleep(std::time::Duration::from_millis(after)).await;
        let ended = match peer.create_elicitation(request).await {
            Ok(result) => match result.action {
                ElicitationAction::Accept => "answered".to_owned(),
                ElicitationAction::Decline => "declined".to_owned(),
                _ => "cancelled".to_owned(),
            },
            Err(error) => format!("refused: {error}"),
        };
        eprintln!("{} {ended}", super::ASKED_LATER);
    });
    Ok(success("I will ask your name in a moment"))
}

/// Ask the person their name through `elicitation/create`, and withdraw
/// the question (`notifications/cancelled`) when no answer came within
/// `within_ms` (a string of digits; default 300) milliseconds.
pub(super) async fn ask_name_then_withdraw(
    args: &serde_json::Map<String, Json>,
    cx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let within = args
        .get("within_ms")
        .and_then(|v| {
            v.as_str()
                .map(str::to_owned)
                .or_else(|| v.as_u64().map(|n| n.to_string()))
        })
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(300);
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(name_request()?));
    let handle = cx
        .peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .map_err(|e| ErrorData::internal_error(format!("asking failed: {e}"), None))?;
    let waited = std::time::Duration::from_millis(within);
    let mut rx = handle.rx;
    match tokio::time::timeout(waited, &mut rx).await {
        Ok(Ok(Ok(ClientResult::ElicitResult(result)))) => Ok(greeting(&result)),
        Ok(Ok(Ok(_))) => Ok(failure("the answer was not an elicitation result")),
        Ok(Ok(Err(e))) => Ok(failure(format!("asking failed: {e}"))),
        Ok(Err(_)) => Ok(failure("asking failed: the connection closed")),
        Err(_) => {
            let cancelled = CancelledNotificationParam::new(
                Some(handle.id),
                Some("no answer in time".to_owned()),
            );
            cx.peer
                .notify_cancelled(cancelled)
                .await
                .map_err(|e| ErrorData::internal_error(format!("withdrawing failed: {e}"), None))?;
            eprintln!("askgate-example-upstream: {WITHDRAWN}");
            Ok(success(
                "No answer came in time; the question was withdrawn.",
            ))
        }
    }
}

/// What the example upstream writes to stderr when it withdraws a question.
pub(super) const WITHDRAWN: &str = "ask_name_then_withdraw: withdrew the question";

/// `ask_name` on 2026-07-28: an `InputRequiredResult` asking for the name,
/// and on the retry the answer it carries (an answer given before it was
/// asked is taken too). A request whose client declared no form-mode
/// elicitation is refused `-32021`, naming it: the server cannot ask.
pub(super) fn ask_name_in_rounds(
    params: &CallToolRequestParams,
    cx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    if let Some(result) = name_answer(params.input_responses.as_ref())? {
        return Ok(greeting(&result).into());
    }
    let declared = cx.client_capabilities().and_then(|c| c.elicitation);
    if declared.is_none_or(|e| e.form.is_none() && e.url.is_some()) {
        let mut required = ClientCapabilities::default();
        required.elicitation = Some(ElicitationCapability::new().with_form(Default::default()));
        return Err(ErrorData::missing_required_client_capability(required));
    }
    Ok(name_input_required()?.into())
}

/// The name in an accepted answer, trimmed, if there is one.
fn given_name(result: &ElicitResult) -> Option<&str> {
    if result.action != ElicitationAction::Accept {
        return None;
    }
    result
        .content
        .as_ref()
        .and_then(|c| c.get("name"))
        .and_then(Json::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
}

/// The answer to `ask_name`'s question, as its result.
fn greeting(result: &ElicitResult) -> CallToolResult {
    eprintln!("askgate-example-upstream: ask_name: {:?}", result.action);
    match (given_name(result), &result.action) {
        (Some(name), _) => success(format!("Hello, {name}")),
        (None, ElicitationAction::Accept) => failure("the answer came back without a name"),
        (None, ElicitationAction::Decline) => success("The person declined to give their name."),
        (None, _) => success("The person dismissed the question."),
    }
}

/// What a prompt or a resource has of the person's name.
enum Named {
    /// Their name.
    Given(String),
    /// Not asked yet (2026-07-28): the input requests to answer with.
    Ask(InputRequiredResult),
    /// No name, and why (declined, dismissed, no way to ask).
    Without(String),
}

/// The person's name: from a 2026-07-28 retry's `inputResponses` (asked
/// for when it is not there), or asked through `elicitation/create`.
async fn named(
    responses: Option<&InputResponses>,
    cx: &RequestContext<RoleServer>,
) -> Result<Named, ErrorData> {
    let result = if in_rounds(cx) {
        match name_answer(responses)? {
            Some(result) => result,
            None => return Ok(Named::Ask(name_input_required()?)),
        }
    } else if cx.peer.supported_elicitation_modes().is_empty() {
        return Ok(Named::Without("the client cannot ask".into()));
    } else {
        match cx.peer.create_elicitation(name_request()?).await {
            Ok(result) => result,
            Err(e) => return Ok(Named::Without(format!("asking failed: {e}"))),
        }
    };
    eprintln!("askgate-example-upstream: a name: {:?}", result.action);
    Ok(match given_name(&result) {
        Some(name) => Named::Given(name.to_owned()),
        None => Named::Without(format!("no name was given ({:?})", result.action)),
    })
}

/// What a prompt or a resource says of the person.
pub(super) struct About {
    /// With their name, which `{name}` stands for.
    given: &'static str,
    /// Without it, and why (`{why}`).
    without: &'static str,
}

/// What the greeting prompt says.
pub(super) const GREETING: About = About {
    given: "Greet {name} by name, warmly.",
    without: "Greet the person; their name is not known: {why}.",
};

/// What the owner resource says.
pub(super) const OWNER: About = About {
    given: "These notes belong to {name}.",
    without: "Whose notes these are is not known: {why}.",
};

/// What `about` says of the person by the name they give (asked first),
/// as `answer` puts it; or, not asked yet, the input requests that ask it.
pub(super) async fn say<R: From<InputRequiredResult>>(
    about: &About,
    responses: Option<&InputResponses>,
    cx: &RequestContext<RoleServer>,
    answer: impl FnOnce(String) -> R,
) -> Result<R, ErrorData> {
    Ok(match named(responses, cx).await? {
        Named::Ask(needed) => needed.into(),
        Named::Given(name) => answer(about.given.replace("{name}", &name)),
        Named::Without(why) => answer(about.without.replace("{why}", &why)),
    })
}

/// Sign-ins started by this process: each ask gets its own id.
static SIGN_INS: AtomicU64 = AtomicU64::new(0);

/// Send the person to a (stand-in) sign-in page through URL-mode
/// elicitation; once they accepted, the page is done at once and the client
/// is told so with `notifications/elicitation/complete`.
pub(super) async fn sign_in(cx: &RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
    if !cx
        .peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Url)
    {
        return Ok(failure(
            "this client cannot open a link (it declared no URL-mode elicitation)",
        ));
    }
    let id = format!(
        "sign-in-{}-{}",
        std::process::id(),
        SIGN_INS.fetch_add(1, Ordering::Relaxed)
    );
    let params = ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message: "Sign in to the notes service.".into(),
        url: format!("https://notes.example/sign-in?session={id}"),
        elicitation_id: id.clone(),
    };
    let result = match cx.peer.create_elicitation(params).await {
        Ok(result) => result,
        Err(e) => return Ok(failure(format!("asking failed: {e}"))),
    };
    eprintln!("askgate-example-upstream: sign_in: {:?}", result.action);
    if result.action != ElicitationAction::Accept {
        return Ok(success("The person did not sign in."));
    }
    let done = CustomNotification::new(
        "notifications/elicitation/complete",
        Some(json!({"elicitationId": id})),
    );
    cx.peer
        .send_notification(ServerNotification::CustomNotification(done))
        .await
        .map_err(|e| ErrorData::internal_error(format!("telling the client: {e}"), None))?;
    Ok(success(format!("Signed in ({id}).")))
}
