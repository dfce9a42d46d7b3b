//! A webhook post's title: askgate's own words about an ask, built from
//! the fields askgate sets — its kind, server, tool and risk — and never
//! from the text a model, an upstream or a script wrote (a form's message,
//! a question set's preamble or prompts), which could mention a channel,
//! fake a link or shout "URGENT" in a person's notifications.

use askgate_core::{CONFIRM_FIELD, FieldKind, Form, Source};
use askgate_mcp::stored::StoredRequest;
use askgate_store::NewAsk;
use serde::Deserialize;

/// The longest name (server, tool, risk) quoted in a title, in
/// characters: names are configured and checked, but an ask parked by a
/// library client may carry the name a server gave itself.
const MAX_NAME: usize = 64;

/// What the ask is, as far as its title says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// askgate's confirmation of a risky call.
    Confirmation,
    /// Any other form: a server's (or a script's) own ask.
    Form,
    /// Questions configured to be asked before work starts.
    Intake,
    /// Questions asked through the `ask` tool or `askgate ask`.
    Questions,
    /// A request that is neither (not one this askgate reads).
    Unknown,
}

/// The title of `ask`, in askgate's words: `Confirm <tool> on <server>
/// (risk: <risk>)`, `<server> asks for input (<tool>)`, `Questions before
/// <server>/<tool>`, `<server> asks questions (<tool>)`, or `An ask`.
///
/// The names are quoted as stored, with control characters made spaces
/// and cut at [`MAX_NAME`] characters (an empty one is left out); the Slack preset escapes the title
/// as it escapes everything it posts.
pub(crate) fn of(ask: &NewAsk) -> String {
    let named = |text: Option<&str>| text.map(name).filter(|n| !n.is_empty());
    let server = named(ask.server.as_deref());
    let tool = named(ask.tool.as_deref());
    let risk = named(ask.risk.as_deref()).map(|r| r.replace('_', " "));
    match (kind(&ask.request), server, tool) {
        (Kind::Confirmation, Some(server), Some(tool)) => match risk {
            Some(risk) => format!("Confirm {tool} on {server} (risk: {risk})"),
            None => format!("Confirm {tool} on {server}"),
        },
        (Kind::Confirmation, None, Some(tool)) => format!("Confirm {tool}"),
        (Kind::Form, Some(server), Some(tool)) => format!("{server} asks for input ({tool})"),
        (Kind::Form | Kind::Confirmation, Some(server), None) => {
            format!("{server} asks for input")
        }
        (Kind::Form, None, Some(tool)) => format!("Input needed for {tool}"),
        (Kind::Intake, Some(server), Some(tool)) => format!("Questions before {server}/{tool}"),
        (Kind::Intake, Some(one), None) | (Kind::Intake, None, Some(one)) => {
            format!("Questions before {one}")
        }
        (Kind::Intake, None, None) => "Questions before work starts".to_owned(),
        (Kind::Questions, Some(server), Some(tool)) => {
            format!("{server} asks questions ({tool})")
        }
        (Kind::Questions, Some(server), None) => format!("{server} asks questions"),
        (Kind::Questions, None, Some(tool)) => format!("Questions from {tool}"),
        (Kind::Questions, None, None) => "Questions for a person".to_owned(),
        (Kind::Form | Kind::Confirmation | Kind::Unknown, _, _) => "An ask".to_owned(),
    }
}

/// The kind of the stored `request`.
fn kind(request: &serde_json::Value) -> Kind {
    match StoredRequest::deserialize(request).ok() {
        Some(StoredRequest::Form { ask }) if is_confirmation(&ask.form) => Kind::Confirmation,
        Some(StoredRequest::Form { .. }) => Kind::Form,
        Some(StoredRequest::QuestionSet { set }) => match set.source {
            Source::Intake => Kind::Intake,
            Source::Ask => Kind::Questions,
        },
        None => Kind::Unknown,
    }
}

/// Whether `form` has the shape of askgate's confirmation: one boolean
/// field, `confirm`.
fn is_confirmation(form: &Form) -> bool {
    matches!(
        form.fields.as_slice(),
        [field] if field.id == CONFIRM_FIELD && matches!(field.kind, FieldKind::Boolean(_))
    )
}

/// `text` fit to quote in a title: on one line, at most [`MAX_NAME`]
/// characters.
fn name(text: &str) -> String {
    let line: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.chars().count() > MAX_NAME {
        let cut: String = line.chars().take(MAX_NAME - 1).collect();
        format!("{cut}…")
    } else {
        line
    }
}
