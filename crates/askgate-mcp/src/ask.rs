//! Asking a person from inside a request handler.

use std::time::Duration;

use askgate_core::{Action, Ask, Outcome, Response, Revision, Step};
use rmcp::ServiceError;
use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientResult, ElicitRequest, ElicitResult,
    ElicitationAction, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RoleServer};
use serde_json::{Map, Value as Json};

use crate::direct::DirectAsks;
use crate::inbox::LinkFailed;
use crate::input::{InputError, elicit_params};
use crate::revision::revision_of;
use crate::stored::StoredError;

/// How to ask.
#[derive(Debug, Clone)]
pub struct AskOptions {
    /// How long to wait for each answer; `None` waits as long as the client
    /// keeps the request open.
    pub timeout: Option<Duration>,
}

impl Default for AskOptions {
    fn default() -> AskOptions {
        AskOptions {
            timeout: Some(Duration::from_secs(600)),
        }
    }
}

/// Why no person answered. A decline or a cancel is not here: those are
/// [`Outcome`]s.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unanswered {
    /// The client did not declare form elicitation.
    #[error("the client cannot show a form (it did not declare the elicitation capability)")]
    NoElicitation,
    /// The client's revision carries asks as multi round-trip input
    /// requests, which a handler returns rather than awaits.
    #[error(
        "the client speaks {0}, where a server asks by returning InputRequiredResult, not by a request"
    )]
    NeedsInputRequired(Revision),
    /// The client's revision has no elicitation at all.
    #[error("the client's protocol revision {0} has no elicitation")]
    OldRevision(String),
    /// The form has a field only URL mode may ask (a secret).
    #[error("the form asks for a secret, which only URL mode may ask")]
    NeedsUrlMode,
    /// The request was cancelled (`notifications/cancelled`) while waiting;
    /// the ask was withdrawn from the client.
    #[error("the request was cancelled while waiting for the person")]
    RequestCancelled,
    /// Nobody answered within the wait; the ask was withdrawn from the
    /// client.
    #[error("nobody answered within {} s", .0.as_secs())]
    TimedOut(Duration),
    /// The client failed to answer: a transport error, an error reply.
    /// Never a person's decision.
    #[error("asking failed: {0}")]
    Failed(#[source] ServiceError),
    /// The client answered with another kind of result than the one asked
    /// for.
    #[error("asking failed: the client answered with another kind of result")]
    WrongResult,
    /// The ask parked in the inbox expired before anybody answered it.
    #[error("asking failed: the parked ask {id} expired unanswered")]
    Expired {
        /// The parked ask's id.
        id: String,
    },
    /// The ask parked in the inbox settled without a reply to read.
    #[error("asking failed: the ask settled without a reply")]
    NoReply,
    /// The answer stored for a parked ask cannot be read back.
    #[error("asking failed: {0}")]
    Unreadable(#[source] StoredError),
    /// The form could not be put on the wire (a bug, not the person's doing).
    #[error("the form cannot be sent: {0}")]
    Unsendable(#[source] Unsendable),
}

/// Why a form could not be put on the wire: a bug in the form or in its
/// mapping, never the person's doing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unsendable {
    /// askgate-core refused the form, or its mapping for the revision.
    #[error(transparent)]
    Form(#[from] askgate_core::Error),
    /// The mapped request is not one rmcp can carry.
    #[error(transparent)]
    Input(#[from] InputError),
    /// No link to the inbox could be made for it.
    #[error(transparent)]
    Link(#[from] LinkFailed),
    /// The state carried across the round trip cannot be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl Unanswered {
    /// [`Unanswered::Unsendable`], from any reason a form cannot be sent.
    pub(crate) fn unsendable(why: impl Into<Unsendable>) -> Unanswered {
        Unanswered::Unsendable(why.into())
    }
}

/// The elicitation modes the client declared for this request: `(form,
/// url)`. A bare `elicitation: {}` means form only.
pub fn elicitation_modes(cx: &RequestContext<RoleServer>) -> (bool, bool) {
    modes(cx.client_capabilities().as_ref())
}

/// The elicitation modes declared in `capabilities`: `(form, url)`.
pub(crate) fn modes(capabilities: Option<&ClientCapabilities>) -> (bool, bool) {
    let Some(elicitation) = capabilities.and_then(|c| c.elicitation.as_ref()) else {
        return (false, false);
    };
    match (elicitation.form.is_some(), elicitation.url.is_some()) {
        (false, false) => (true, false),
        modes => modes,
    }
}

/// Ask a person and wait for the settled outcome: `elicitation/create` with
/// the mapping of the client's revision, every answer checked, a re-ask of
/// only what is open or wrong on refusal, up to the ask's cap (then
/// [`Outcome::GaveUp`]).
///
/// # Errors
/// [`Unanswered`] when no person could be asked — never for a decline or a
/// cancel, which are outcomes.
pub async fn ask_person(
    cx: &RequestContext<RoleServer>,
    ask: Ask,
    options: &AskOptions,
) -> Result<Outcome, Unanswered> {
    ask_person_timed(cx, ask, options)
        .await
        .map(|(outcome, _)| outcome)
}

/// [`ask_person`], and how long the client took to give the answer that
/// settled it (from sending that ask to its answer): an answer faster than
/// a person can read is not a person's.
pub(crate) async fn ask_person_timed(
    cx: &RequestContext<RoleServer>,
    ask: Ask,
    options: &AskOptions,
) -> Result<(Outcome, Option<Duration>), Unanswered> {
    if let Some(outcome) = ask.settle_without_asking() {
        return Ok((outcome, None));
    }
    let version = cx
        .protocol_version()
        .ok_or_else(|| Unanswered::OldRevision("(not negotiated)".into()))?;
    let revision =
        revision_of(&version).ok_or_else(|| Unanswered::OldRevision(version.as_str().into()))?;
    if revision >= Revision::V2026_07_28 {
        return Err(Unanswered::NeedsInputRequired(revision));
    }
    if !elicitation_modes(cx).0 {
        return Err(Unanswered::NoElicitation);
    }
    if ask.needs_url_mode() {
        return Err(Unanswered::NeedsUrlMode);
    }
    let mut ask = ask;
    loop {
        let params = ask.request(revision).map_err(Unanswered::unsendable)?;
        let started = tokio::time::Instant::now();
        let result = elicit(cx, params.to_json(), options.timeout).await?;
        let took = started.elapsed();
        match ask.settle(revision, &response_of(result)) {
            Step::Settled(outcome) => return Ok((outcome, Some(took))),
            Step::ReAsk(next) => ask = *next,
        }
    }
}

/// Send `elicitation/create` with `params` (a JSON object, as askgate-core
/// maps a form for the client's revision, or a link's) and wait for its
/// answer, or for the request it was for to be cancelled — then the ask is withdrawn from the client
/// (`notifications/cancelled` for it), so no dialog stays up whose answer
/// nobody reads. A timeout withdraws it too (rmcp sends that notice).
///
/// # Errors
/// [`Unanswered::RequestCancelled`], [`Unanswered::TimedOut`], or
/// [`Unanswered::Failed`] for a transport error or an error reply;
/// [`Unanswered::Unsendable`] for params rmcp cannot carry (a bug in their
/// mapping).
pub(crate) async fn elicit(
    cx: &RequestContext<RoleServer>,
    params: Json,
    timeout: Option<Duration>,
) -> Result<ElicitResult, Unanswered> {
    if let Some(direct) = cx.extensions.get::<DirectAsks>() {
        return crate::direct::elicit(&*direct.0, params, timeout, cx.ct.cancelled()).await;
    }
    let params = elicit_params(params).map_err(Unanswered::unsendable)?;
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    let mut options = PeerRequestOptions::no_options();
    options.timeout = timeout;
    let handle = cx
        .peer
        .send_request_with_option(request, options)
        .await
        .map_err(Unanswered::Failed)?;
    let id = handle.id.clone();
    tokio::select! {
        result = handle.await_response() => match result {
            Ok(ClientResult::ElicitResult(result)) => Ok(result),
            Ok(_) => Err(Unanswered::WrongResult),
            Err(ServiceError::Timeout { timeout }) => Err(Unanswered::TimedOut(timeout)),
            Err(error) => Err(Unanswered::Failed(error)),
        },
        () = cx.ct.cancelled() => {
            let notice = CancelledNotificationParam::new(Some(id), Some(WITHDRAWN.into()));
            if let Err(error) = cx.peer.notify_cancelled(notice).await {
                tracing::debug!(%error, "could not withdraw an ask from the client");
            }
            Err(Unanswered::RequestCancelled)
        }
    }
}

/// Why an ask is withdrawn from the client when its request is cancelled.
pub(crate) const WITHDRAWN: &str = "the request this ask was for was cancelled";

/// The person's response as askgate-core reads it. Content that is not an
/// object is passed on as an empty answer, so the ask's checks refuse it and
/// re-ask, rather than failing the whole ask.
pub(crate) fn response_of(result: ElicitResult) -> Response {
    let action = match result.action {
        ElicitationAction::Accept => Action::Accept,
        ElicitationAction::Decline => Action::Decline,
        _ => Action::Cancel,
    };
    let content = match result.content {
        Some(Json::Object(map)) => Some(map),
        Some(_) => Some(Map::new()),
        None => None,
    };
    Response { action, content }
}
