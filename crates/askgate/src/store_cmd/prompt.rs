//! Answering an ask at a terminal (`askgate asks answer ID` without
//! `--content`): each open field prompted by its type, checked as typed,
//! as the gateway's terminal client does (`askgate_mcp::client::Terminal`);
//! and what `asks approve|deny` answer a confirmation with.

use std::io::IsTerminal;

use askgate_core::{Ask, CONFIRM_FIELD, Revision};
use askgate_mcp::client::{Elicitation, Requested, Terminal};
use askgate_mcp::stored::{Act, StoredRequest};
use askgate_store::AskRow;
use rmcp::model::ElicitationAction;
use serde_json::{Map, Value as Json};

use super::REFUSED;
use crate::failure::{Failure, MALFORMED};

/// The form of `row`, when it is one.
fn form_of(row: &AskRow) -> Result<Option<Ask>, Failure> {
    match serde_json::from_value::<StoredRequest>(row.ask.request.clone()) {
        Ok(StoredRequest::Form { ask }) => Ask::from_record(ask)
            .map(Some)
            .map_err(|e| Failure::malformed(format!("ask {}: {e}", row.ask.id))),
        Ok(StoredRequest::QuestionSet { .. }) => Ok(None),
        Err(e) => Err(Failure::malformed(format!(
            "ask {}: its request cannot be read: {e}",
            row.ask.id
        ))),
    }
}

/// What `asks approve` (`run`) or `asks deny` answers the confirmation
/// `row` with: refused for an ask that is not a confirmation.
pub(super) fn confirmation(row: &AskRow, run: bool) -> Result<Act, Failure> {
    let id = &row.ask.id;
    let confirms = form_of(row)?.is_some_and(|ask| {
        let fields = &ask.form().fields;
        fields.len() == 1 && fields[0].id == CONFIRM_FIELD
    });
    if !confirms {
        let verb = if run { "approve" } else { "deny" };
        return Err(Failure::new(
            REFUSED,
            format!(
                "ask {id} is not a confirmation, so there is nothing to {verb}: answer its fields \
                 with `askgate asks answer {id}`, or `askgate asks decline {id}`; nothing was \
                 changed"
            ),
        ));
    }
    Ok(if run {
        let mut content = Map::new();
        content.insert(CONFIRM_FIELD.into(), Json::Bool(true));
        Act::Answer(content)
    } else {
        Act::Decline
    })
}

/// The answer a person types at the terminal for `row`: its open fields
/// prompted one by one on stderr. `!decline` declines; `!cancel`, or the
/// end of the input, changes nothing.
pub(super) async fn at_terminal(row: &AskRow) -> Result<Act, Failure> {
    let id = &row.ask.id;
    if !std::io::stdin().is_terminal() {
        return Err(Failure::new(
            MALFORMED,
            format!(
                "ask {id}: --content is needed when stdin is not a terminal (a JSON object of the \
                 answer), e.g. --content '{{\"confirm\": true}}'"
            ),
        ));
    }
    let Some(ask) = form_of(row)? else {
        return Err(Failure::new(
            MALFORMED,
            format!(
                "ask {id} is a question set: give its answers with --content '{{\"QUESTION\": \
                 [\"VALUE\"]}}', or `askgate asks skip {id}` to take the pre-picked ones"
            ),
        ));
    };
    let request = ask.request(Revision::V2025_11_25).map_err(|e| {
        Failure::new(
            REFUSED,
            format!("ask {id} cannot be answered at a terminal ({e}); answer it in the inbox"),
        )
    })?;
    let params = request.to_json();
    let requested = Requested::from_json(&request.message, &params["requestedSchema"])
        .map_err(|e| Failure::malformed(format!("ask {id}: {e}")))?;
    let origin = row.ask.server.as_deref().unwrap_or("askgate");
    let result = Terminal::stdio()
        .answer(&Elicitation::Form(requested), origin)
        .await
        .map_err(|e| Failure::malformed(format!("the terminal: {e}")))?;
    match result.action {
        ElicitationAction::Accept => Ok(Act::Answer(
            result
                .content
                .and_then(|content| content.as_object().cloned())
                .unwrap_or_default(),
        )),
        ElicitationAction::Decline => Ok(Act::Decline),
        _ => Err(Failure::new(
            REFUSED,
            format!("ask {id}: cancelled; nothing was changed"),
        )),
    }
}
