//! The input requests of the multi round-trip model (MCP 2026-07-28): a
//! server answers a request with `InputRequiredResult`, whose
//! `inputRequests` ask the client for an elicitation, a sampled message or
//! its roots; the retry carries the answers in `inputResponses`.
//!
//! Each kind has a builder (checked: a URL-mode elicitation needs an id and
//! an absolute URL) and a reader of its answer, JSON in and out, so a server
//! can ask for any of them and read what came back.

// rmcp marks sampling and roots deprecated (SEP-2577, a future revision);
// 2026-07-28 still carries both, and upstream servers still send them.
#![allow(deprecated)]

use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, InputRequest, ListRootsRequest, ListRootsResult,
};
use serde_json::Value as Json;

/// The three kinds of input request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputKind {
    /// `elicitation/create`: ask the person.
    Elicitation,
    /// `sampling/createMessage`: ask the client's model.
    Sampling,
    /// `roots/list`: ask for the client's roots.
    Roots,
}

impl InputKind {
    /// Every kind.
    pub const ALL: [InputKind; 3] = [
        InputKind::Elicitation,
        InputKind::Sampling,
        InputKind::Roots,
    ];

    /// The request's method name.
    pub fn method(self) -> &'static str {
        match self {
            InputKind::Elicitation => "elicitation/create",
            InputKind::Sampling => "sampling/createMessage",
            InputKind::Roots => "roots/list",
        }
    }

    /// The kind a method name asks for.
    ///
    /// # Errors
    /// [`InputError::UnknownMethod`] for any other method.
    pub fn from_method(method: &str) -> Result<InputKind, InputError> {
        InputKind::ALL
            .into_iter()
            .find(|kind| kind.method() == method)
            .ok_or_else(|| InputError::UnknownMethod(method.to_owned()))
    }

    /// The kind of a built request.
    pub fn of(request: &InputRequest) -> Option<InputKind> {
        match request {
            InputRequest::Elicitation(_) => Some(InputKind::Elicitation),
            InputRequest::CreateMessage(_) => Some(InputKind::Sampling),
            InputRequest::ListRoots(_) => Some(InputKind::Roots),
            _ => None,
        }
    }
}

/// A request or an answer that could not be built or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// Not one of the three input request methods.
    #[error(
        "unknown input request method {0:?}; expected elicitation/create, sampling/createMessage or roots/list"
    )]
    UnknownMethod(String),
    /// A URL-mode elicitation with an empty id.
    #[error("a URL-mode elicitation needs a non-empty elicitationId")]
    EmptyElicitationId,
    /// A URL-mode elicitation whose URL is not absolute.
    #[error("a URL-mode elicitation needs an absolute URL (scheme and host), got {0:?}")]
    RelativeUrl(String),
    /// The JSON is not a request or answer of that kind.
    #[error("not a valid {what}: {source}")]
    Malformed {
        /// What was expected.
        what: &'static str,
        /// What did not fit, as serde says.
        #[source]
        source: serde_json::Error,
    },
    /// An input request with no `method` string.
    #[error("not a valid input request: it has no \"method\" string")]
    NoMethod,
}

/// An `elicitation/create` in form mode, from the params askgate-core maps a
/// form to for the client's revision.
///
/// # Errors
/// [`InputError::Malformed`] when the params are not a form elicitation rmcp
/// can carry (a bug in the mapping, never the person's doing).
pub fn elicit_form(params: &askgate_core::wire::ElicitRequest) -> Result<InputRequest, InputError> {
    let params = elicit_params(params.to_json())?;
    Ok(InputRequest::Elicitation(ElicitRequest::new(params)))
}

/// The rmcp params of an elicitation from its JSON.
pub(crate) fn elicit_params(params: Json) -> Result<ElicitRequestParams, InputError> {
    serde_json::from_value(params).map_err(|source| InputError::Malformed {
        what: "elicitation",
        source,
    })
}

/// An `elicitation/create` in URL mode: the person opens `url` (absolute)
/// to answer; `elicitation_id` (non-empty) names it.
///
/// # Errors
/// [`InputError::EmptyElicitationId`], [`InputError::RelativeUrl`].
pub fn elicit_url(
    message: &str,
    url: &str,
    elicitation_id: &str,
) -> Result<InputRequest, InputError> {
    if elicitation_id.trim().is_empty() {
        return Err(InputError::EmptyElicitationId);
    }
    match url::Url::parse(url) {
        Ok(parsed) if parsed.has_host() => {}
        _ => return Err(InputError::RelativeUrl(url.to_owned())),
    }
    Ok(InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: message.to_owned(),
            url: url.to_owned(),
            elicitation_id: elicitation_id.to_owned(),
        },
    )))
}

/// A `sampling/createMessage`.
pub fn sample(params: CreateMessageRequestParams) -> InputRequest {
    InputRequest::CreateMessage(CreateMessageRequest::new(params))
}

/// A `roots/list`.
pub fn list_roots() -> InputRequest {
    InputRequest::ListRoots(ListRootsRequest::default())
}

/// A request as it goes in `inputRequests`: `{"method": ..., "params": ...}`.
pub fn to_json(request: &InputRequest) -> Json {
    serde_json::to_value(request).unwrap_or(Json::Null)
}

/// A request read from `inputRequests` (for example an upstream server's).
///
/// # Errors
/// [`InputError::UnknownMethod`], [`InputError::NoMethod`] or
/// [`InputError::Malformed`]; a URL-mode
/// elicitation is checked as [`elicit_url`] checks it.
pub fn from_json(json: &Json) -> Result<InputRequest, InputError> {
    let method = json
        .get("method")
        .and_then(Json::as_str)
        .ok_or(InputError::NoMethod)?;
    let kind = InputKind::from_method(method)?;
    let malformed = |source: serde_json::Error| InputError::Malformed {
        what: kind.method(),
        source,
    };
    let request = match kind {
        InputKind::Elicitation => {
            let request: ElicitRequest = serde_json::from_value(json.clone()).map_err(malformed)?;
            if let ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } = &request.params
            {
                return elicit_url(message, url, elicitation_id);
            }
            InputRequest::Elicitation(request)
        }
        InputKind::Sampling => {
            InputRequest::CreateMessage(serde_json::from_value(json.clone()).map_err(malformed)?)
        }
        InputKind::Roots => {
            InputRequest::ListRoots(serde_json::from_value(json.clone()).map_err(malformed)?)
        }
    };
    Ok(request)
}

fn read<T: serde::de::DeserializeOwned>(what: &'static str, json: &Json) -> Result<T, InputError> {
    serde_json::from_value(json.clone()).map_err(|source| InputError::Malformed { what, source })
}

/// The answer to an `elicitation/create`.
///
/// # Errors
/// [`InputError::Malformed`] when it is not an `ElicitResult`.
pub fn read_elicitation(json: &Json) -> Result<ElicitResult, InputError> {
    read("elicitation result", json)
}

/// The answer to a `sampling/createMessage`.
///
/// # Errors
/// [`InputError::Malformed`] when it is not a `CreateMessageResult`.
pub fn read_sampling(json: &Json) -> Result<CreateMessageResult, InputError> {
    read("sampling result", json)
}

/// The answer to a `roots/list`.
///
/// # Errors
/// [`InputError::Malformed`] when it is not a `ListRootsResult`.
pub fn read_roots(json: &Json) -> Result<ListRootsResult, InputError> {
    read("roots result", json)
}
