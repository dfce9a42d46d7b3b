//! What askgate parks in the store as an ask's request, how any surface
//! (the CLI, the inbox) settles an answer to it — through the same checks
//! as an MCP answer — and how the asker reads the settled outcome back.

use std::collections::BTreeMap;

use askgate_core::{
    Ask, AskRecord, Outcome, QuestionSet, Reply, Response, Revision, Step, Surface,
};
use askgate_store::{AskStatus, Settlement};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

/// An ask's request as stored: a form (with its progress) or a question set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StoredRequest {
    /// A form of typed fields.
    Form {
        /// The form and what is settled so far.
        ask: AskRecord,
    },
    /// A question set with pre-picked answers.
    QuestionSet {
        /// The questions.
        set: QuestionSet,
    },
}

/// What a person does from the CLI.
#[derive(Debug, Clone)]
pub enum Act {
    /// Answer with content: form properties, or question id -> values.
    Answer(Map<String, Json>),
    /// Decline.
    Decline,
    /// Skip (question sets only): proceed on the pre-picked answers.
    Skip,
}

/// Why an answer was refused: what a person reads, and the field it is
/// about, when it is about one (an inbox shows it beside that field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// The field's id (a question's id in a question set), if the reason
    /// is about one.
    pub field: Option<String>,
    /// What was wrong and what was expected.
    pub message: String,
}

impl From<String> for Reason {
    fn from(message: String) -> Reason {
        Reason {
            field: None,
            message,
        }
    }
}

/// An answer to a stored ask its checks refused: every reason, each
/// naming what was wrong and what was expected (never the value given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the answer was not applied: {}", messages(.reasons))]
pub struct Refused {
    /// Why, one reason per problem, tied to its field where it has one.
    pub reasons: Vec<Reason>,
}

fn messages(reasons: &[Reason]) -> String {
    reasons
        .iter()
        .map(|reason| reason.message.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why a stored ask cannot be read back as a form's outcome: the row is
/// not one askgate wrote (or it was edited by hand).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoredError {
    /// The stored request is not an askgate request.
    #[error("the stored request is not one askgate can read: {0}")]
    Request(#[source] serde_json::Error),
    /// The stored request is a question set, where a form was expected.
    #[error("the stored request is a question set, not a form")]
    NotAForm,
    /// The stored form cannot be asked (askgate-core refuses it).
    #[error("the stored form cannot be asked: {0}")]
    Form(#[from] askgate_core::Error),
    /// The stored reply is not a response to a form.
    #[error("the stored reply is not a response: {0}")]
    Reply(#[source] serde_json::Error),
    /// The stored reply does not settle its form (its checks refuse it).
    #[error("the stored reply does not settle its form")]
    Unsettled,
}

/// The settlement to store, or why the answer was refused.
///
/// # Errors
/// [`Refused`], with every reason.
pub fn settle(
    request: &Json,
    act: Act,
    answered_by: &str,
    via: Surface,
) -> Result<Settlement, Refused> {
    settle_explained(request, act, answered_by, via).map_err(|reasons| Refused { reasons })
}

/// [`settle`], with each reason tied to its field where it has one.
///
/// # Errors
/// The reasons, each naming what was wrong.
pub fn settle_explained(
    request: &Json,
    act: Act,
    answered_by: &str,
    via: Surface,
) -> Result<Settlement, Vec<Reason>> {
    let general =
        |messages: Vec<String>| -> Vec<Reason> { messages.into_iter().map(Reason::from).collect() };
    let request: StoredRequest = serde_json::from_value(request.clone()).map_err(|e| {
        general(vec![format!(
            "the stored request is not one askgate can answer: {e}"
        )])
    })?;
    let by = Some(answered_by.to_owned());
    let via_text = via.to_string();
    match request {
        StoredRequest::Form { ask } => {
            let ask = Ask::from_record(ask).map_err(|e| general(vec![e.to_string()]))?;
            let response = match act {
                Act::Answer(content) => Response::accept(content),
                Act::Decline => Response::decline(),
                Act::Skip => {
                    return Err(general(vec![
                        "skip is for question sets; decline this form instead".into(),
                    ]));
                }
            };
            match ask.settle(Revision::V2025_11_25, &response) {
                Step::Settled(outcome) => {
                    let status = match &outcome {
                        Outcome::Declined => AskStatus::Declined,
                        Outcome::Cancelled => AskStatus::Cancelled,
                        _ => AskStatus::Answered,
                    };
                    Ok(Settlement {
                        status,
                        reply: json_of(&response),
                        outcome: json_of(&outcome),
                        answered_by: by,
                        answered_via: via_text,
                    })
                }
                Step::ReAsk(next) => Err(next
                    .problems()
                    .iter()
                    .map(|problem| Reason {
                        field: (!problem.title.is_empty()).then(|| problem.field.clone()),
                        message: problem.message(),
                    })
                    .collect()),
            }
        }
        StoredRequest::QuestionSet { set } => {
            let checked = set.prepare().map_err(|e| general(vec![e.to_string()]))?;
            let mut reply = Reply::new(via);
            reply.answered_by = by.clone();
            match act {
                Act::Answer(content) => reply.answers = answers(content).map_err(general)?,
                Act::Skip | Act::Decline => reply.skipped = true,
            }
            let outcome = checked
                .settle(&reply)
                .map_err(|e| general(vec![e.to_string()]))?;
            Ok(Settlement {
                status: if reply.skipped {
                    AskStatus::Skipped
                } else {
                    AskStatus::Answered
                },
                reply: json_of(&reply),
                outcome: json_of(&outcome),
                answered_by: by,
                answered_via: via_text,
            })
        }
    }
}

/// `{"question": ["value", ...]}` (a single string counts as one value).
fn answers(content: Map<String, Json>) -> Result<BTreeMap<String, Vec<String>>, Vec<String>> {
    let mut answers = BTreeMap::new();
    for (id, value) in content {
        let values = match value {
            Json::String(one) => vec![one],
            Json::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Json::String(text) => Ok(text),
                    _ => Err(vec![format!("{id}: expected a list of strings")]),
                })
                .collect::<Result<_, _>>()?,
            _ => {
                return Err(vec![format!(
                    "{id}: expected a string or a list of strings"
                )]);
            }
        };
        answers.insert(id, values);
    }
    Ok(answers)
}

fn json_of(value: &impl Serialize) -> Json {
    // Outcomes, replies and responses are plain data: serializing cannot fail.
    serde_json::to_value(value).unwrap_or(Json::Null)
}

impl StoredRequest {
    /// A form ask as parked.
    pub fn form(ask: &Ask) -> StoredRequest {
        StoredRequest::Form {
            ask: ask.to_record(),
        }
    }

    /// The request as stored JSON.
    pub fn to_json(&self) -> Json {
        json_of(self)
    }
}

/// The outcome of a settled form ask, replayed from its stored request and
/// reply (checked again, so a row edited by hand cannot smuggle a value
/// past the form). `None` while it is pending, or for an ask that expired
/// unanswered.
///
/// # Errors
/// [`StoredError`] when the stored request or reply is not askgate's.
pub fn form_outcome(request: &Json, reply: Option<&Json>) -> Result<Option<Outcome>, StoredError> {
    let Some(reply) = reply else {
        return Ok(None);
    };
    let StoredRequest::Form { ask } =
        serde_json::from_value(request.clone()).map_err(StoredError::Request)?
    else {
        return Err(StoredError::NotAForm);
    };
    let ask = Ask::from_record(ask)?;
    let response: Response = serde_json::from_value(reply.clone()).map_err(StoredError::Reply)?;
    match ask.settle(Revision::V2025_11_25, &response) {
        Step::Settled(outcome) => Ok(Some(outcome)),
        Step::ReAsk(_) => Err(StoredError::Unsettled),
    }
}
