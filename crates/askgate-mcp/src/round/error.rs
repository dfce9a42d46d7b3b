//! Why a round could not go on, and the JSON-RPC error the client gets.

use askgate_core::StateError;
use rmcp::ErrorData;
use rmcp::model::ClientCapabilities;
use serde_json::json;

use crate::ask::Unanswered;
use crate::inbox::Parked;
use crate::input::InputKind;
use crate::misuse::Misuse;

/// Why a round could not go on. Converts into the JSON-RPC error the client
/// gets (`?` in a handler).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoundError {
    /// The request state was refused.
    #[error(transparent)]
    State(#[from] StateError),
    /// The request state was used before.
    #[error(
        "requestState was already used: each state is good for one retry; call again without it to start over"
    )]
    Replayed,
    /// An answer is not what was asked for.
    #[error("inputResponses[{key:?}] is malformed: {detail}")]
    Malformed {
        /// The input request's key.
        key: String,
        /// What was wrong.
        detail: String,
    },
    /// The client did not declare the capability the input needs.
    #[error("the client did not declare the capability for {}", .0.method())]
    Missing(InputKind),
    /// No person could be asked (older revisions).
    #[error(transparent)]
    Unanswered(#[from] Unanswered),
    /// The ask waits in the inbox (a request whose answer cannot say so in
    /// a tool result, such as `prompts/get`).
    #[error("{}", .0.message())]
    Parked(Parked),
    /// [`Round::input_required`](crate::Round::input_required) with nothing to ask.
    #[error("input_required called with no input request queued")]
    NothingPending,
    /// The store failed.
    #[error("the ask store failed: {0}")]
    Store(String),
    /// The system's random source failed.
    #[error("cannot seal the request state: {0}")]
    Random(String),
    /// The rounds were set up in a way that cannot work (a sealed state's
    /// lifetime out of range): the server's bug, not the client's.
    #[error(transparent)]
    Misuse(#[from] Misuse),
}

impl RoundError {
    /// The capabilities the client lacks, as `requiredCapabilities` names
    /// them.
    pub fn required_capabilities(&self) -> Option<ClientCapabilities> {
        let key = match self {
            RoundError::Missing(InputKind::Elicitation)
            | RoundError::Unanswered(Unanswered::NoElicitation) => "elicitation",
            RoundError::Missing(InputKind::Sampling) => "sampling",
            RoundError::Missing(InputKind::Roots) => "roots",
            _ => return None,
        };
        serde_json::from_value(json!({ key: {} })).ok()
    }
}

impl From<RoundError> for ErrorData {
    fn from(error: RoundError) -> ErrorData {
        if let Some(capabilities) = error.required_capabilities() {
            let mut data = ErrorData::missing_required_client_capability(capabilities);
            data.message = error.to_string().into();
            return data;
        }
        match &error {
            RoundError::Parked(_) => ErrorData::invalid_request(error.to_string(), None),
            RoundError::State(_)
            | RoundError::Replayed
            | RoundError::Malformed { .. }
            | RoundError::Unanswered(Unanswered::OldRevision(_)) => {
                ErrorData::invalid_params(error.to_string(), None)
            }
            _ => ErrorData::internal_error(error.to_string(), None),
        }
    }
}
