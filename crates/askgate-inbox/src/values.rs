//! The values a settled ask's page shows: every value of a form field
//! that is not sensitive (a sensitive one as "(hidden)"), or a question
//! set's chosen answers, as the person read them.

use askgate_core::Field;
use askgate_mcp::stored::{self, StoredRequest};
use askgate_store::AskRow;
use serde_json::Value as Json;

/// One value shown: what was asked, and what was settled, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shown {
    /// The field's title, or the question's prompt.
    pub(crate) name: String,
    /// The value.
    pub(crate) value: String,
}

/// The settled values of `row` to show.
pub(crate) fn of(row: &AskRow) -> Vec<Shown> {
    match serde_json::from_value::<StoredRequest>(row.ask.request.clone()) {
        Ok(StoredRequest::Form { ask }) => form_values(row, &ask.form.fields),
        Ok(StoredRequest::QuestionSet { .. }) => answers(row),
        Err(_) => Vec::new(),
    }
}

/// An accepted form's values, by field.
fn form_values(row: &AskRow, fields: &[Field]) -> Vec<Shown> {
    let Ok(Some(askgate_core::Outcome::Accepted { values })) =
        stored::form_outcome(&row.ask.request, row.reply.as_ref())
    else {
        return Vec::new();
    };
    values
        .iter()
        .filter_map(|settled| {
            let field = fields.iter().find(|f| f.id == *settled.id)?;
            let value = if field.sensitive {
                "(hidden)".to_owned()
            } else {
                text_of(settled.value.to_json())
            };
            Some(Shown {
                name: field.title.clone(),
                value,
            })
        })
        .collect()
}

/// A field's value as a person reads it.
fn text_of(value: Json) -> String {
    match value {
        Json::String(text) => text,
        Json::Array(items) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        Json::Object(range) => match (range.get("from"), range.get("to")) {
            (Some(Json::String(from)), Some(Json::String(to))) => format!("from {from} to {to}"),
            _ => Json::Object(range).to_string(),
        },
        other => other.to_string(),
    }
}

/// A question set's chosen answers, by prompt.
fn answers(row: &AskRow) -> Vec<Shown> {
    row.outcome
        .as_ref()
        .and_then(|o| o.get("answers"))
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|answer| {
            let prompt = answer.get("prompt")?.as_str()?.to_owned();
            let chosen = answer.get("chosen")?;
            // Each choice as the person read it: its label, or what
            // they typed.
            let text = chosen
                .as_array()
                .into_iter()
                .flatten()
                .map(|choice| {
                    choice
                        .get("label")
                        .or_else(|| choice.get("value"))
                        .and_then(Json::as_str)
                        .map_or_else(|| choice.to_string(), str::to_owned)
                })
                .collect::<Vec<_>>()
                .join(", ");
            Some(Shown {
                name: prompt,
                value: text,
            })
        })
        .collect()
}
