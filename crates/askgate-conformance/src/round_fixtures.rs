//! The work of the fixture tools that ask through a [`Round`]: an
//! elicitation, a sampling, the roots, a sealed confirmation, several asks
//! in one round, two rounds, only what the client declared, and a refusal
//! of a client without sampling (-32021).

// Sampling and roots are deprecated in rmcp (SEP-2577); the suite still
// exercises both.
#![allow(deprecated)]

use askgate_core::{Ask, Outcome};
use askgate_mcp::input::InputKind;
use askgate_mcp::{Round, RoundError};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, CreateMessageRequestParams, SamplingCapability,
    SamplingMessage,
};
use serde_json::{Value as Json, json};

use crate::fixture::{Halt, form, given, text, value};
use crate::forms::{confirm_form, name_form};

/// How an outcome reads in a tool result: the action, and the settled
/// values of an accepted answer.
pub(crate) fn describe(outcome: &Outcome) -> (String, Json) {
    match outcome {
        Outcome::Accepted { values } => ("accept".into(), Json::Object(values.to_json())),
        Outcome::Declined => ("decline".into(), json!({})),
        Outcome::Cancelled => ("cancel".into(), json!({})),
        Outcome::GaveUp { attempts, .. } => {
            (format!("gave up after {attempts} attempts"), json!({}))
        }
        _ => ("unknown".into(), json!({})),
    }
}

/// A tool result that says how the outcome reads after `what`.
pub(crate) fn described(what: &str, outcome: &Outcome) -> CallToolResponse {
    let (action, content) = describe(outcome);
    text(format!("{what}: action={action}, content={content}"))
}

/// A round's one form under `key`, its outcome described after `what`.
pub(crate) async fn asked(
    round: &mut Round,
    key: &str,
    ask: Ask,
    what: &str,
) -> Result<CallToolResponse, Halt> {
    let outcome = given(round.ask(key, ask).await?)?;
    Ok(described(what, &outcome))
}

/// Asks the person's name; greets them.
pub(crate) async fn irr_elicitation(round: &mut Round) -> Result<CallToolResponse, Halt> {
    // The suite answers this tool before asking (ignore-extra-params):
    // a name is harmless to take unsealed.
    round.accept_unsealed(true);
    let outcome = given(
        round
            .ask("user_name", name_form("What is your name?")?)
            .await?,
    )?;
    Ok(match value(&outcome, "name") {
        Some(name) => text(format!("Hello, {name}!")),
        None => text(format!("No name given: {}", describe(&outcome).0)),
    })
}

/// Asks the client's model the capital of France.
pub(crate) async fn irr_sampling(round: &mut Round) -> Result<CallToolResponse, Halt> {
    let question = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text("What is the capital of France?")],
        100,
    );
    let answer = given(round.sample("capital_question", question).await?)?;
    Ok(text(format!("The model said: {}", said(&answer))))
}

/// Asks for the client's roots; lists their URIs.
pub(crate) async fn irr_roots(round: &mut Round) -> Result<CallToolResponse, Halt> {
    let roots = given(round.roots("client_roots").await?)?;
    let uris: Vec<&str> = roots.roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(text(format!("Roots: {}", uris.join(", "))))
}

/// A confirmation whose state is sealed; the retry must bring it back
/// intact (`request_state`, `tampered_state`).
pub(crate) async fn irr_confirm(round: &mut Round) -> Result<CallToolResponse, Halt> {
    if round.carried("progress").is_none() {
        round.carry("progress", json!("state-ok"));
    }
    let outcome = given(round.ask("confirm", confirm_form()?).await?)?;
    let progress = round
        .carried("progress")
        .and_then(Json::as_str)
        .unwrap_or("state-missing");
    Ok(text(format!(
        "Confirmed: action={}, {progress}",
        describe(&outcome).0
    )))
}

/// Asks a name, a greeting and the roots in one round.
pub(crate) async fn irr_multiple(round: &mut Round) -> Result<CallToolResponse, Halt> {
    let name = round
        .ask("user_name", name_form("What is your name?")?)
        .await?;
    let greeting = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text("Generate a greeting")],
        50,
    );
    let greeting = round.sample("greeting", greeting).await?;
    let roots = round.roots("client_roots").await?;
    // Every ask is queued before the round halts: one round asks all three.
    let (Some(name), Some(_greeting), Some(roots)) = (name, greeting, roots) else {
        return Err(Halt::Pending);
    };
    Ok(text(format!(
        "Got all three: name {}, a greeting, {} roots",
        value(&name, "name").unwrap_or_default(),
        roots.roots.len()
    )))
}

/// Asks a name, then a colour, one round each.
pub(crate) async fn irr_multi_round(round: &mut Round) -> Result<CallToolResponse, Halt> {
    let first = given(
        round
            .ask("step1", name_form("Step 1: What is your name?")?)
            .await?,
    )?;
    let color = form(json!({
        "message": "Step 2: What is your favorite color?",
        "fields": [{"id": "color", "title": "Color", "type": "text"}]
    }))?;
    let second = given(round.ask("step2", color).await?)?;
    Ok(text(format!(
        "{} likes {}",
        value(&first, "name").unwrap_or_default(),
        value(&second, "color").unwrap_or_default()
    )))
}

/// Asks only what the client declared: the person, else the model.
pub(crate) async fn irr_capabilities(round: &mut Round) -> Result<CallToolResponse, Halt> {
    if round.can(InputKind::Elicitation) {
        let outcome = given(
            round
                .ask("user_name", name_form("What is your name?")?)
                .await?,
        )?;
        return Ok(text(format!("Asked the person: {}", describe(&outcome).0)));
    }
    if round.can(InputKind::Sampling) {
        let request =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Sample request")], 50);
        given(round.sample("sample", request).await?)?;
        return Ok(text("Asked the model"));
    }
    Err(RoundError::Missing(InputKind::Elicitation).into())
}

/// Ask the model only when the client declared sampling; refuse a client
/// that did not (-32021, naming the capability).
pub(crate) async fn missing_capability(round: &mut Round) -> Result<CallToolResponse, Halt> {
    if !round.can(InputKind::Sampling) {
        let mut required = ClientCapabilities::default();
        required.sampling = Some(SamplingCapability::default());
        return Err(ErrorData::missing_required_client_capability(required).into());
    }
    let request = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Say hi")], 20);
    given(round.sample("hi", request).await?)?;
    Ok(text("The client's model answered"))
}

/// The model's text in a sampling answer.
pub(crate) fn said(answer: &rmcp::model::CreateMessageResult) -> String {
    answer
        .message
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}
