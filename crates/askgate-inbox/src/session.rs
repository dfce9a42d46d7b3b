//! Who a request is from, as extractors: [`Session`] (the session cookie
//! of a person signed in to the page) and [`Operator`] (an operator's
//! token as a bearer token, for what a program scrapes) — and whether a
//! signed-in person's post came from the inbox's own form.

use std::convert::Infallible;

use axum::extract::{FromRef, FromRequestParts, OptionalFromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};

use crate::Inbox;
use crate::auth::{self, Person, Session};
use crate::rejection::{OperatorRejection, PostRejection, SessionRejection};

impl<S> FromRequestParts<S> for Session
where
    Inbox: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = SessionRejection;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Session, Self::Rejection> {
        let inbox = Inbox::from_ref(state);
        inbox
            .inner
            .sessions
            .of(&parts.headers)
            .ok_or_else(|| SessionRejection::sign_in(parts.uri.path()))
    }
}

impl<S> OptionalFromRequestParts<S> for Session
where
    Inbox: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &S,
    ) -> Result<Option<Session>, Self::Rejection> {
        Ok(Inbox::from_ref(state).inner.sessions.of(&parts.headers))
    }
}

impl Session {
    /// Whether a post of this session may be acted on: from the inbox's
    /// origin, carrying this session's CSRF token (`csrf`, as posted).
    ///
    /// # Errors
    /// [`PostRejection`] (403) when it is from another origin or without
    /// this session's token.
    pub(crate) fn check_post(
        &self,
        inbox: &Inbox,
        headers: &HeaderMap,
        csrf: Option<&str>,
    ) -> Result<(), PostRejection> {
        if let Some(problem) = auth::origin_problem(headers, &inbox.inner.origin) {
            tracing::warn!("inbox: a post from another origin was refused");
            return Err(PostRejection::cross_origin(self, problem));
        }
        if !auth::csrf_ok(self, csrf) {
            tracing::warn!("inbox: a post without this session's CSRF token was refused");
            return Err(PostRejection::csrf(self));
        }
        Ok(())
    }
}

/// An operator, signed in with their token as `Authorization: Bearer
/// <token>` (how a scraper of `/metrics` beside the inbox signs in): an
/// extractor for a route of a router whose state gives the [`Inbox`];
/// anyone else is refused with [`OperatorRejection`] (401).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator(pub Person);

impl<S> FromRequestParts<S> for Operator
where
    Inbox: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = OperatorRejection;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Operator, Self::Rejection> {
        bearer_operator(&Inbox::from_ref(state), &parts.headers)
            .map(Operator)
            .ok_or(OperatorRejection)
    }
}

/// The operator whose token `headers` carry as a bearer token, if any.
pub(crate) fn bearer_operator(inbox: &Inbox, headers: &HeaderMap) -> Option<Person> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|token| inbox.inner.people.find(token.trim()))
        .filter(|person| person.operator)
        .cloned()
}
