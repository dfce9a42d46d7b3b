//! Question sets: up to five questions, each with a pre-picked answer, so
//! that confirming is enough.
//!
//! A question set is asked through the same form mapping as any ask
//! ([`QuestionSet::to_form`]); there is no second wire mapping.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::error::{Error, FormError};
use crate::form::{ChoiceOption, ChoiceSpec, Field, FieldKind, Form, TextSpec};

/// The most questions a set may hold: a form a person must scroll is a form
/// they skip.
pub const MAX_QUESTIONS: usize = 5;

/// Who put the questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Configured, asked before work starts.
    Intake,
    /// The model asked, through the `ask` tool.
    Ask,
}

/// A set of 1 to 5 questions with pre-picked answers.
///
/// # Example
/// ```
/// use askgate_core::{QuestionSet, Reply, Surface};
/// let set: QuestionSet = serde_json::from_str(r#"{
///   "source": "ask",
///   "questions": [{"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
///     "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]}]
/// }"#)?;
/// set.check()?;
/// let outcome = set.settle(&Reply::new(Surface::Cli))?;
/// assert!(outcome.answers[0].defaulted);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionSet {
    /// Said before the questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preamble: Option<String>,
    /// The questions, in the order asked.
    pub questions: Vec<Question>,
    /// Who put them (recorded for audit; settling is the same either way).
    pub source: Source,
}

/// One question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// Unique within the set.
    pub id: String,
    /// What is asked.
    pub prompt: String,
    /// More detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The options on offer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<ChoiceOption>,
    /// A typed input instead of (or, for zones and instants, beside) options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<FieldKind>,
    /// Whether several options may be picked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multiple: bool,
    /// The pre-picked answer: option values (or typed values as text).
    #[serde(default)]
    pub defaults: Vec<String>,
    /// Whether the person may type an answer that is not on offer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_free_text: bool,
}

impl QuestionSet {
    /// Check the set: 1 to 5 questions, unique ids, and each question askable
    /// as a form field.
    ///
    /// # Errors
    /// [`FormError::QuestionCount`], or the form error of the offending question.
    pub fn check(&self) -> Result<(), Error> {
        if self.questions.is_empty() || self.questions.len() > MAX_QUESTIONS {
            return Err(FormError::QuestionCount {
                given: self.questions.len(),
            }
            .into());
        }
        crate::Ask::new(self.to_form()).map(|_| ())
    }

    /// The set as a form: one field per question, every field optional (a
    /// question left unanswered takes its defaults), defaults pre-filled.
    pub fn to_form(&self) -> Form {
        Form {
            message: self
                .preamble
                .clone()
                .unwrap_or_else(|| "A few questions before going on.".into()),
            fields: self.questions.iter().map(Question::to_field).collect(),
            supplied: serde_json::Map::new(),
        }
    }
}

impl Question {
    fn to_field(&self) -> Field {
        let kind = match &self.input {
            Some(kind) => with_options(kind.clone(), &self.options, self.allow_free_text),
            None if self.options.is_empty() => FieldKind::Text(TextSpec::default()),
            None => FieldKind::Choice(ChoiceSpec {
                options: self.options.clone(),
                multiple: self.multiple,
                min_items: None,
                max_items: None,
                strict: !self.allow_free_text,
            }),
        };
        let default = match (&kind, self.defaults.as_slice()) {
            (_, []) => None,
            (FieldKind::Choice(spec), values) if spec.multiple => Some(Json::Array(
                values.iter().cloned().map(Json::String).collect(),
            )),
            (kind, [first, ..]) => Some(typed_default(kind, first)),
        };
        Field {
            id: self.id.clone(),
            title: self.prompt.clone(),
            description: self.description.clone(),
            required: false,
            sensitive: false,
            default,
            kind,
        }
    }
}

/// Options a question offers beside a typed input, where the type takes them.
fn with_options(kind: FieldKind, options: &[ChoiceOption], free: bool) -> FieldKind {
    match kind {
        FieldKind::Zone(mut spec) if !options.is_empty() => {
            spec.options = options.to_vec();
            spec.strict = !free;
            FieldKind::Zone(spec)
        }
        FieldKind::Instant(mut spec) if !options.is_empty() => {
            spec.options = options.to_vec();
            spec.strict = !free;
            FieldKind::Instant(spec)
        }
        other => other,
    }
}

/// A default given as text, in the field's JSON shape.
pub(crate) fn typed_default(kind: &FieldKind, text: &str) -> Json {
    match kind {
        FieldKind::Number(_) | FieldKind::Integer(_) => text
            .trim()
            .parse::<serde_json::Number>()
            .map_or_else(|_| Json::String(text.into()), Json::Number),
        FieldKind::Boolean(_) => match text {
            "true" => Json::Bool(true),
            "false" => Json::Bool(false),
            other => Json::String(other.into()),
        },
        FieldKind::TimeRange(_) => match text.split_once('/') {
            Some((from, to)) => serde_json::json!({"from": from, "to": to}),
            None => Json::String(text.into()),
        },
        _ => Json::String(text.into()),
    }
}
