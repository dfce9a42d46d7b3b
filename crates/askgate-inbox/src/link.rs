//! Signed links to one ask (URL mode): checked, consumed once in the
//! store, and bound to the principal the ask is for. A person signed in
//! who may not answer for that principal is refused, and the attempt is
//! audited; someone not signed in gets a session for that ask only, as the
//! person `link:<principal>` who answers for that principal alone.

use askgate_store::{AskRow, AuditEntry, Decision};
use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};

use super::Inbox;
use super::auth::{self, Person, SESSION_COOKIE, Session};
use super::rejection::{LinkProblem, LinkRejection};

/// Open the ask `id` with the link token `token`, for `session` (whoever
/// is signed in, if anyone): to the ask's page, with a session for it
/// alone when nobody was signed in.
///
/// # Errors
/// [`LinkRejection`] when the link does not open the ask, saying why.
pub(super) async fn open(
    inbox: &Inbox,
    session: Option<Session>,
    id: &str,
    token: &str,
) -> Result<Response, LinkRejection> {
    let now = inbox.now();
    let refuse = |problem: LinkProblem| LinkRejection::new(problem, session.as_ref());
    let opened = inbox.inner.links.open(id, token, now).map_err(|error| {
        tracing::warn!(ask = %id, "inbox: a link was refused: {error}");
        refuse(LinkProblem::Refused(error))
    })?;
    let row = match inbox.store().ask(id).await {
        Ok(Some(row)) => row,
        Ok(None) => return Err(refuse(LinkProblem::NoAsk { id: id.to_owned() })),
        Err(error) => return Err(refuse(LinkProblem::Store(error))),
    };
    let claim = format!("inbox-link:{}", opened.nonce);
    match inbox
        .store()
        .consume_token(&claim, opened.expires_at, now)
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(ask = %id, "inbox: a used link was opened again and refused");
            return Err(refuse(LinkProblem::Used));
        }
        Err(error) => return Err(refuse(LinkProblem::Store(error))),
    }
    if let Some(session) = &session {
        if session.may_see(id, &row.ask.principal) {
            return Ok(Redirect::to(&format!("/asks/{id}")).into_response());
        }
        // A link's session for another ask of the same principal gets a
        // session for this one instead; anyone else is refused.
        if session.only_ask.is_none() || !session.person.may_see(&row.ask.principal) {
            audit_mismatch(inbox, &row, &session.person.name).await;
            return Err(refuse(LinkProblem::ForAnother));
        }
    }
    let opened = start_for(inbox, &row).map_err(|()| refuse(LinkProblem::NoRandomness))?;
    tracing::info!(ask = %id, "inbox: opened by its link");
    Ok(opened)
}

/// A session for the ask of `row` alone, as the person `link:<principal>`
/// who answers for its principal: its cookie, and to its page.
fn start_for(inbox: &Inbox, row: &AskRow) -> Result<Response, ()> {
    let person = Person {
        name: format!("link:{}", row.ask.principal),
        answers_for: vec![row.ask.principal.clone()],
        operator: false,
        groups: Vec::new(),
    };
    let id = &row.ask.id;
    let session = inbox
        .inner
        .sessions
        .start(person, Some(id.clone()))
        .map_err(|_| ())?;
    let cookie = auth::set_cookie(SESSION_COOKIE, &session, inbox.inner.secure, None);
    Ok((
        [(header::SET_COOKIE, cookie)],
        Redirect::to(&format!("/asks/{id}")),
    )
        .into_response())
}

/// Record that `who` opened a link to an ask of someone else.
async fn audit_mismatch(inbox: &Inbox, row: &AskRow, who: &str) {
    let entry = AuditEntry {
        at: inbox.now(),
        server: row.ask.server.clone().unwrap_or_default(),
        tool: row.ask.tool.clone().unwrap_or_default(),
        risk: row.ask.risk.clone().unwrap_or_default(),
        decision: Decision::Blocked,
        reason: "an inbox link to this ask was opened by a person signed in who may not answer for its principal; refused".into(),
        answered_by: Some(who.to_owned()),
        principal: None,
        answered_via: Some("web".into()),
        arguments_digest: None,
        ask_id: Some(row.ask.id.clone()),
        decision_key: None,
    };
    if let Err(error) = inbox.store().append_audit(&entry).await {
        tracing::error!(ask = %row.ask.id, %error, "inbox: the refused link could not be audited");
    }
}
