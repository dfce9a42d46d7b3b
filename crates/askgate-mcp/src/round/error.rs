//! Why a round could not go on, and the JSON-RPC error the client gets.

use askgate_core::StateError;
use rmcp::ErrorData;
use rmcp::model::ClientCapabilities;
use serde_json::json;

use crate::ask::{Unanswered, Unsendable};
use crate::inbox::Parked;
use crate::input::InputKind;
use crate::misuse::Misuse;

/// Why a round could not go on. Converts into the JSON-RPC error the client
/// gets (`?` in a handler).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RoundError {
    /// The request state was refused.
    #[error(transparent)]
    State(#[from] StateError),
    /// The request state was used before: what the retry was for may
    /// have happened with its first use (see [`Round::request_id`]).
    ///
    /// [`Round::request_id`]: crate::Round::request_id
    #[error(
        "requestState was already used: each state is good for one retry; call again without it to start over"
    )]
    Replayed {
        /// The request the state was sealed in, when it names one.
        request: Option<String>,
    },
    /// An answer is not what was asked for.
    #[error("inputResponses[{key:?}] is malformed: {source}")]
    Malformed {
        /// The input request's key.
        key: String,
        /// What was wrong.
        #[source]
        source: crate::input::InputError,
    },
    /// A request to relay is of no kind a client answers.
    #[error("inputResponses[{key:?}] is malformed: not an elicitation, sampling or roots request")]
    NotInput {
        /// The input request's key.
        key: String,
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
    Store(#[from] askgate_store::Error),
    /// A parked ask was gone from the store when the call came back for it.
    #[error("the ask store failed: the parked ask {id} vanished")]
    Vanished {
        /// The parked ask's id.
        id: String,
    },
    /// A parked ask was neither pending nor settled when the call came back
    /// for it.
    #[error("the ask store failed: the parked ask {id} is neither pending nor settled")]
    Unsettled {
        /// The parked ask's id.
        id: String,
    },
    /// A tool's confirmation kept being answered and used by other calls
    /// while this one tried to settle it; calling again starts over.
    #[error(
        "the ask store failed: the confirmation of {tool} on {server} kept changing under askgate (answered and used by other calls); call again"
    )]
    Contended {
        /// The tool.
        tool: String,
        /// Its server.
        server: String,
    },
    /// As many asks of this principal wait for a person as may
    /// ([`Confirmations::most_pending_per_principal`]): nothing was asked,
    /// and nothing ran.
    ///
    /// [`Confirmations::most_pending_per_principal`]: crate::Confirmations::most_pending_per_principal
    #[error(
        "{principal} has {most} asks waiting for a person, the most askgate keeps for one principal; \
         nothing was asked and nothing ran: once some are answered or have expired, call again"
    )]
    TooManyPending {
        /// Whose asks they are.
        principal: String,
        /// The most that may wait.
        most: usize,
    },
    /// The system's random source failed.
    #[error("cannot seal the request state: {0}")]
    Random(#[source] getrandom::Error),
    /// The rounds were set up in a way that cannot work (a sealed state's
    /// lifetime out of range): the server's bug, not the client's.
    #[error(transparent)]
    Misuse(#[from] Misuse),
}

impl RoundError {
    /// [`Unanswered::Unsendable`], from any reason a form cannot be sent.
    pub(crate) fn unsendable(why: impl Into<Unsendable>) -> RoundError {
        RoundError::Unanswered(Unanswered::unsendable(why))
    }

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
            | RoundError::Replayed { .. }
            | RoundError::Malformed { .. }
            | RoundError::NotInput { .. }
            | RoundError::Unanswered(Unanswered::OldRevision(_)) => {
                ErrorData::invalid_params(error.to_string(), None)
            }
            _ => ErrorData::internal_error(error.to_string(), None),
        }
    }
}
