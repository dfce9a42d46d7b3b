//! What an ask comes to, and the person's response it is settled from.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::problem::Problem;
use crate::value::Values;

/// What the person did with an ask, as in `ElicitResult.action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Answered.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// A person's response to an ask: the `ElicitResult` of MCP, or the same
/// from the inbox or the terminal.
///
/// # Example
/// ```
/// use askgate_core::{Action, Response};
/// let response: Response = serde_json::from_str(r#"{"action": "accept", "content": {"env": "prod"}}"#)?;
/// assert_eq!(response.action, Action::Accept);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Accept, decline or cancel.
    pub action: Action,
    /// The answered properties (with `accept`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Json>>,
}

impl Response {
    /// An `accept` with the given content.
    pub fn accept(content: Map<String, Json>) -> Response {
        Response {
            action: Action::Accept,
            content: Some(content),
        }
    }

    /// A `decline`.
    pub fn decline() -> Response {
        Response {
            action: Action::Decline,
            content: None,
        }
    }

    /// A `cancel`.
    pub fn cancel() -> Response {
        Response {
            action: Action::Cancel,
            content: None,
        }
    }
}

/// How an ask settled. Declining and cancelling are outcomes, not errors.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// Every field has a valid value (or none, for optional fields left empty).
    Accepted {
        /// The values, in form order, each with its provenance.
        values: Values,
    },
    /// The person said no.
    Declined,
    /// The person dismissed the ask.
    Cancelled,
    /// The answer was still wrong after the last allowed attempt.
    GaveUp {
        /// How many times the person was asked.
        attempts: u32,
        /// What was still wrong.
        problems: Vec<Problem>,
        /// The values that were valid, with provenance.
        values: Values,
    },
}
