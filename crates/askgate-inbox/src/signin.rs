//! Signing in and out: the sign-in page, its post (a person's token, from
//! the inbox's own form), and signing out.

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{AppendHeaders, IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::Inbox;
use crate::auth::{self, LOGIN_COOKIE, SESSION_COOKIE, Session};
use crate::pages;
use crate::rejection::{InboxRejection, SignInRejection};

/// Where to go after signing in.
#[derive(Debug, Deserialize)]
pub(crate) struct Next {
    next: Option<String>,
}

/// Only a path of this site: never another host. A path starts with one
/// `/` and holds printable ASCII only, no `\`: browsers drop tabs and
/// line breaks from a URL and read `\` as `/`, so `/<tab>/evil.example`
/// would lead to another host.
pub(crate) fn safe_next(next: Option<&str>) -> String {
    let printable = |c: char| c.is_ascii_graphic() && c != '\\';
    match next {
        Some(next)
            if next.starts_with('/') && !next.starts_with("//") && next.chars().all(printable) =>
        {
            next.to_owned()
        }
        _ => "/".to_owned(),
    }
}

/// `GET /login`: the sign-in form.
pub(crate) async fn page(State(inbox): State<Inbox>, Query(next): Query<Next>) -> Response {
    pages::sign_in_form(
        inbox.sign_in_page(),
        StatusCode::OK,
        &safe_next(next.next.as_deref()),
        None,
    )
}

/// The sign-in form as posted.
#[derive(Debug, Deserialize)]
pub(crate) struct SignInForm {
    csrf: Option<String>,
    next: Option<String>,
    token: Option<String>,
}

/// `POST /login`: a person's token signs them in (a session cookie), back
/// to where they were going.
///
/// # Errors
/// [`SignInRejection`]: the form again, saying why.
pub(crate) async fn post(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> Result<Response, SignInRejection> {
    let next = safe_next(form.next.as_deref());
    let secure = inbox.inner.secure;
    let page = inbox.sign_in_page();
    if let Some(problem) = auth::origin_problem(&headers, &inbox.inner.origin) {
        return Err(SignInRejection::cross_origin(problem, &next, page));
    }
    let expected = auth::cookie(&headers, LOGIN_COOKIE);
    if !auth::login_csrf_ok(expected.as_deref(), form.csrf.as_deref()) {
        return Err(SignInRejection::csrf(&next, page));
    }
    let Some(person) = form
        .token
        .as_deref()
        .and_then(|token| inbox.inner.people.find(token.trim()))
        .cloned()
    else {
        tracing::warn!("inbox: a sign-in with an unknown token was refused");
        return Err(SignInRejection::unknown_token(&next, page));
    };
    let name = person.name.clone();
    let Ok(id) = inbox.inner.sessions.start(person, None) else {
        return Err(SignInRejection::no_randomness(&next, page));
    };
    tracing::info!(person = %name, "inbox: signed in");
    let session = auth::set_cookie(SESSION_COOKIE, &id, secure, None);
    let clear = auth::set_cookie(LOGIN_COOKIE, "", secure, Some(0));
    Ok((
        AppendHeaders([(header::SET_COOKIE, session), (header::SET_COOKIE, clear)]),
        Redirect::to(&next),
    )
        .into_response())
}

/// A form that carries only its CSRF token.
#[derive(Debug, Deserialize)]
pub(crate) struct CsrfOnly {
    csrf: Option<String>,
}

/// `POST /logout`: the session ends (someone not signed in is sent to the
/// sign-in page).
///
/// # Errors
/// [`PostRejection`](crate::rejection::PostRejection) for a post not from
/// the inbox's own form.
pub(crate) async fn sign_out(
    State(inbox): State<Inbox>,
    session: Option<Session>,
    headers: HeaderMap,
    Form(form): Form<CsrfOnly>,
) -> Result<Response, InboxRejection> {
    let Some(session) = session else {
        return Ok(Redirect::to("/login").into_response());
    };
    session.check_post(&inbox, &headers, form.csrf.as_deref())?;
    inbox.inner.sessions.end(&headers);
    let clear = auth::set_cookie(SESSION_COOKIE, "", inbox.inner.secure, Some(0));
    Ok(([(header::SET_COOKIE, clear)], Redirect::to("/login")).into_response())
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn only_a_path_of_this_site_is_gone_to_after_signing_in() {
        for kept in ["/", "/asks/a-1?tab=2", "/asks/%2F"] {
            assert_eq!(safe_next(Some(kept)), kept);
        }
        // Each of these a browser reads as another host (or worse).
        for other in [
            "//evil.example",
            "/\t/evil.example",
            "/\n/evil.example",
            "/\\evil.example",
            "https://evil.example",
            "/ /evil.example",
            "/\u{0}x",
            "/é",
            "",
        ] {
            assert_eq!(safe_next(Some(other)), "/", "{other:?}");
        }
        assert_eq!(safe_next(None), "/");
    }
}
