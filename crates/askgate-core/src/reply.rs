//! Replies to question sets, from any surface, settled into one
//! deterministic outcome.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::ask::Ask;
use crate::error::{Error, ReplyError};
use crate::field::CheckedField;
use crate::form::FieldKind;
use crate::outcome::Outcome;
use crate::question::{QuestionSet, Source, typed_default};
use crate::value::{Provenance, Value};

/// Where an answer came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Surface {
    /// The MCP client, through elicitation.
    Mcp,
    /// The web inbox.
    Web,
    /// The command line.
    Cli,
    /// An approvals channel (yes/no).
    Approvals,
}

impl fmt::Display for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Surface::Mcp => "mcp",
            Surface::Web => "web",
            Surface::Cli => "cli",
            Surface::Approvals => "approvals",
        })
    }
}

/// A person's reply to a question set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Values by question id. A question left out takes its defaults; an
    /// empty list is an explicit "none".
    #[serde(default)]
    pub answers: BTreeMap<String, Vec<String>>,
    /// "Proceed on your own assumptions": the defaults stand, marked skipped.
    #[serde(default)]
    pub skipped: bool,
    /// Who answered, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// Through which surface.
    pub answered_via: Surface,
}

impl Reply {
    /// An empty reply (every question keeps its defaults) from a surface.
    pub fn new(via: Surface) -> Reply {
        Reply {
            answers: BTreeMap::new(),
            skipped: false,
            answered_by: None,
            answered_via: via,
        }
    }
}

/// A yes/no from an approvals surface: approve keeps the pre-picked
/// defaults, reject skips.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// Yes or no.
    pub approve: bool,
    /// Who decided, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// Through which surface.
    pub answered_via: Surface,
}

/// What a surface delivers: answers, or a yes/no.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Delivery {
    /// Answers to the questions.
    Reply(Reply),
    /// A yes/no decision.
    Decision(Decision),
}

/// What a waiting call expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Awaiting {
    /// Answers (a yes/no is also taken: approve keeps defaults, reject skips).
    Answers,
    /// Only a yes/no; answers delivered here are a mismatch, never a rejection.
    Decision,
}

/// How a question set settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuestionOutcome {
    /// Who put the questions.
    pub source: Source,
    /// Whether the person skipped (the defaults stand as assumptions).
    pub skipped: bool,
    /// Who answered, when known.
    pub answered_by: Option<String>,
    /// Through which surface.
    pub answered_via: Surface,
    /// Every question, in the order asked.
    pub answers: Vec<QuestionAnswer>,
}

/// The settled answer to one question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuestionAnswer {
    /// The question's id.
    pub id: String,
    /// The question as asked.
    pub prompt: String,
    /// What was chosen, in order.
    pub chosen: Vec<Chosen>,
    /// Whether these are the pre-picked defaults (left out, approved, or skipped).
    pub defaulted: bool,
}

/// One chosen value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chosen {
    /// The value.
    pub value: String,
    /// What the person read: the option's label, or the value itself.
    pub label: String,
    /// Typed by the person rather than picked from the options.
    pub free: bool,
}

/// A question set checked once, ready to settle replies.
#[derive(Debug, Clone)]
pub struct CheckedSet {
    set: QuestionSet,
    ask: Ask,
}

impl QuestionSet {
    /// Check the set and keep the result for settling.
    ///
    /// # Errors
    /// As [`QuestionSet::check`].
    pub fn prepare(self) -> Result<CheckedSet, Error> {
        self.check()?;
        let ask = Ask::new(self.to_form())?;
        Ok(CheckedSet { set: self, ask })
    }

    /// Check and settle in one step.
    ///
    /// # Errors
    /// As [`QuestionSet::check`] and [`CheckedSet::settle`].
    pub fn settle(&self, reply: &Reply) -> Result<QuestionOutcome, Error> {
        self.clone().prepare()?.settle(reply)
    }
}

impl CheckedSet {
    /// The question set.
    pub fn set(&self) -> &QuestionSet {
        &self.set
    }

    /// The ask that puts the set to a person through MCP elicitation.
    pub fn ask(&self) -> &Ask {
        &self.ask
    }

    /// Settle a reply. Pure and deterministic: the same set and reply give a
    /// byte-identical outcome.
    ///
    /// A question absent from the answers takes its defaults; an empty list
    /// is an explicit none; values not on offer are dropped unless free text
    /// is allowed (typed inputs drop values that fail their check); a single
    /// choice keeps its first valid value.
    ///
    /// # Errors
    /// [`ReplyError::UnknownQuestion`] when the reply answers a question the set
    /// does not hold.
    pub fn settle(&self, reply: &Reply) -> Result<QuestionOutcome, Error> {
        if let Some(id) = reply
            .answers
            .keys()
            .find(|id| !self.set.questions.iter().any(|q| &q.id == *id))
        {
            return Err(ReplyError::UnknownQuestion {
                id: id.clone(),
                expected: self.set.questions.iter().map(|q| q.id.clone()).collect(),
            }
            .into());
        }
        let answers = self
            .set
            .questions
            .iter()
            .zip(self.ask.checked_fields())
            .map(|(question, field)| {
                let given = if reply.skipped {
                    None
                } else {
                    reply.answers.get(&question.id)
                };
                let (values, defaulted) = match given {
                    None => (question.defaults.as_slice(), true),
                    Some(values) => (values.as_slice(), false),
                };
                QuestionAnswer {
                    id: question.id.clone(),
                    prompt: question.prompt.clone(),
                    chosen: choose(field, values),
                    defaulted,
                }
            })
            .collect();
        Ok(QuestionOutcome {
            source: self.set.source,
            skipped: reply.skipped,
            answered_by: reply.answered_by.clone(),
            answered_via: reply.answered_via.clone(),
            answers,
        })
    }

    /// Settle what a surface delivered to a call awaiting `awaiting`.
    ///
    /// # Errors
    /// [`ReplyError::DeliveryMismatch`] when answers reach a call that waits on a
    /// yes/no — refused, never read as a rejection; otherwise as
    /// [`CheckedSet::settle`].
    pub fn settle_delivery(
        &self,
        awaiting: Awaiting,
        delivery: &Delivery,
    ) -> Result<QuestionOutcome, Error> {
        match (awaiting, delivery) {
            (Awaiting::Decision, Delivery::Reply(_)) => Err(ReplyError::DeliveryMismatch.into()),
            (_, Delivery::Reply(reply)) => self.settle(reply),
            (_, Delivery::Decision(decision)) => self.settle(&Reply {
                answers: BTreeMap::new(),
                skipped: !decision.approve,
                answered_by: decision.answered_by.clone(),
                answered_via: decision.answered_via.clone(),
            }),
        }
    }

    /// The reply an elicitation outcome amounts to: answered values as
    /// answers; a field left to its default is left out (so it takes the
    /// question's defaults); a decline, a cancel or giving up is a skip.
    pub fn reply_from_elicitation(&self, outcome: &Outcome, answered_by: Option<String>) -> Reply {
        let mut reply = Reply {
            answered_by,
            ..Reply::new(Surface::Mcp)
        };
        match outcome {
            Outcome::Accepted { values } => {
                for settled in values.iter().filter(|s| s.source == Provenance::Answered) {
                    reply
                        .answers
                        .insert(settled.id.to_string(), texts(&settled.value));
                }
            }
            _ => reply.skipped = true,
        }
        reply
    }
}

/// Keep the values a question takes, in order, without repeats.
fn choose(field: &CheckedField, values: &[String]) -> Vec<Chosen> {
    let mut chosen: Vec<Chosen> = Vec::new();
    for text in values {
        let Some(value) = accept(field, text) else {
            continue;
        };
        if chosen.iter().any(|c| c.value == value) {
            continue;
        }
        let option = field.options().iter().find(|o| o.value == value);
        chosen.push(Chosen {
            label: option.map_or_else(|| value.clone(), |o| o.label.clone()),
            free: option.is_none() && !field.options().is_empty(),
            value,
        });
        if !field.multiple() {
            break;
        }
    }
    chosen
}

/// One value as the question takes it, or `None` to drop it.
fn accept(field: &CheckedField, text: &str) -> Option<String> {
    let json = match &field.decl.kind {
        FieldKind::Choice(_) => Json::String(text.to_owned()),
        kind => typed_default(kind, text),
    };
    match field.check(&json).ok()? {
        Value::Choices(mut values) => values.pop(),
        value => texts(&value).pop(),
    }
}

/// A value as the text(s) a reply carries.
fn texts(value: &Value) -> Vec<String> {
    match value {
        Value::Choices(values) => values.clone(),
        Value::TimeRange { from, to } => vec![format!("{from}/{to}")],
        other => match other.to_json() {
            Json::String(text) => vec![text],
            json => vec![json.to_string()],
        },
    }
}
