//! Signed links to one ask (URL mode): checked, consumed once in the
//! store, and bound to the principal the ask is for. A person signed in
//! who may not answer for that principal is refused, and the attempt is
//! audited; someone not signed in gets a session for that ask only, as the
//! person `link:<principal>` who answers for that principal alone.

use askgate_store::{AuditEntry, Decision};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use jiff::Timestamp;

use super::Inbox;
use super::auth::{self, Person, SESSION_COOKIE};
use super::pages;

pub(super) async fn open(inbox: &Inbox, headers: &HeaderMap, id: &str, token: &str) -> Response {
    let now = Timestamp::now();
    let session = inbox.inner.sessions.of(headers);
    let refuse = |status: StatusCode, message: &str| -> Response {
        (
            status,
            pages::notice("Link refused", session.as_ref(), message),
        )
            .into_response()
    };
    let opened = match inbox.inner.links.open(id, token, now) {
        Ok(opened) => opened,
        Err(error) => {
            tracing::warn!(ask = %id, "inbox: a link was refused: {error}");
            return refuse(StatusCode::FORBIDDEN, &error.to_string());
        }
    };
    let row = match inbox.store().ask(id).await {
        Ok(Some(row)) => row,
        Ok(None) => return refuse(StatusCode::NOT_FOUND, &format!("No ask {id}.")),
        Err(error) => {
            tracing::error!(%error, "inbox: the store failed");
            return refuse(StatusCode::SERVICE_UNAVAILABLE, &error.to_string());
        }
    };
    match inbox
        .store()
        .consume_token(
            &format!("inbox-link:{}", opened.nonce),
            opened.expires_at,
            now,
        )
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(ask = %id, "inbox: a used link was opened again and refused");
            return refuse(
                StatusCode::GONE,
                "This link was already used: each link opens its ask once. Sign in to the inbox to see the ask.",
            );
        }
        Err(error) => return refuse(StatusCode::SERVICE_UNAVAILABLE, &error.to_string()),
    }
    if let Some(session) = &session {
        if session.may_see(id, &row.ask.principal) {
            return Redirect::to(&format!("/asks/{id}")).into_response();
        }
        // A link's session for another ask of the same principal gets a
        // session for this one instead; anyone else is refused.
        if session.only_ask.is_none() || !session.person.may_see(&row.ask.principal) {
            audit_mismatch(inbox, &row, &session.person.name).await;
            return refuse(
                StatusCode::FORBIDDEN,
                "This link is for an ask of another person. It was not opened, and the attempt was recorded.",
            );
        }
    }
    let person = Person {
        name: format!("link:{}", row.ask.principal),
        answers_for: vec![row.ask.principal.clone()],
        operator: false,
    };
    match inbox.inner.sessions.start(person, Some(id.to_owned())) {
        Ok(session) => {
            tracing::info!(ask = %id, "inbox: opened by its link");
            let cookie = auth::set_cookie(SESSION_COOKIE, &session, inbox.inner.secure, None);
            (
                [(header::SET_COOKIE, cookie)],
                Redirect::to(&format!("/asks/{id}")),
            )
                .into_response()
        }
        Err(problem) => refuse(StatusCode::INTERNAL_SERVER_ERROR, &problem),
    }
}

/// Record that `who` opened a link to an ask of someone else.
async fn audit_mismatch(inbox: &Inbox, row: &askgate_store::AskRow, who: &str) {
    let entry = AuditEntry {
        at: Timestamp::now(),
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
