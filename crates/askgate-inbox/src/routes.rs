//! The inbox's routes and what each does.

use askgate_core::{Ask, Revision, Surface};
use askgate_mcp::stored::{self, Act, Reason, StoredRequest};
use askgate_store::{AskFilter, AskRow, AskStatus, SettleError};
use axum::Router;
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{AppendHeaders, IntoResponse, Redirect, Response};
use axum::routing::get;
use jiff::Timestamp;
use maud::Markup;
use serde::Deserialize;
use serde_json::Value as Json;

use super::Inbox;
use super::auth::{self, LOGIN_COOKIE, SESSION_COOKIE, Session};
use super::fields::{self, Posted};
use super::pages::{self, Answering, ListQuery};

/// How many asks a page lists.
const PAGE: u32 = 50;

pub(super) fn router(inbox: Inbox) -> Router {
    Router::new()
        .route("/", get(list))
        .route("/login", get(login_page).post(login))
        .route("/logout", axum::routing::post(logout))
        .route("/asks/{id}", get(ask_page).post(answer))
        .route("/events", get(super::events::stream))
        .route("/static/inbox.css", get(style))
        .route("/static/inbox.js", get(script))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .with_state(inbox)
        .layer(axum::middleware::map_response(harden))
}

/// Headers on every response: no framing, no sniffing, no referrer, only
/// this origin's scripts and styles, forms only to this origin.
async fn harden(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

async fn style() -> Response {
    static_file("text/css; charset=utf-8", pages::STYLE)
}

async fn script() -> Response {
    static_file("text/javascript; charset=utf-8", pages::SCRIPT)
}

fn static_file(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// A page with a status.
fn page(status: StatusCode, markup: Markup) -> Response {
    (status, markup).into_response()
}

/// To the sign-in page, coming back to `next` after.
fn sign_in(next: &str) -> Response {
    let next: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
    Redirect::to(&format!("/login?next={next}")).into_response()
}

/// The refusal of a post that does not come from the inbox's own form, if
/// it does not.
fn refused_post(
    inbox: &Inbox,
    headers: &HeaderMap,
    session: &Session,
    csrf: Option<&str>,
) -> Option<Response> {
    if let Some(problem) = auth::origin_problem(headers, &inbox.inner.origin) {
        tracing::warn!("inbox: a post from another origin was refused");
        return Some(page(
            StatusCode::FORBIDDEN,
            pages::notice("Refused", Some(session), &problem),
        ));
    }
    if !auth::csrf_ok(session, csrf) {
        tracing::warn!("inbox: a post without this session's CSRF token was refused");
        return Some(page(
            StatusCode::FORBIDDEN,
            pages::notice(
                "Refused",
                Some(session),
                "This form did not carry this session's security token (it is missing, or from another session). Reload the page and try again.",
            ),
        ));
    }
    None
}

async fn list(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Query(query): Query<ListQuery>,
) -> Response {
    let Some(session) = inbox.inner.sessions.of(&headers) else {
        return sign_in("/");
    };
    if let Some(only) = &session.only_ask {
        return Redirect::to(&format!("/asks/{only}")).into_response();
    }
    let nonempty = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
    let filter = AskFilter {
        statuses: if query.settled() {
            vec![
                AskStatus::Answered,
                AskStatus::Declined,
                AskStatus::Cancelled,
                AskStatus::Skipped,
                AskStatus::Expired,
            ]
        } else {
            Vec::new()
        },
        principal: None,
        server: nonempty(&query.server),
        tool: nonempty(&query.tool),
        risk: nonempty(&query.risk),
    };
    match super::listed::asks_for(
        inbox.store(),
        &session.person,
        &filter,
        PAGE,
        query.after.as_deref(),
    )
    .await
    {
        Ok(listing) if query.partial.is_some() => {
            page(StatusCode::OK, pages::table(&query, &listing))
        }
        Ok(listing) => page(StatusCode::OK, pages::list(&session, &query, &listing)),
        Err(error) => store_failed(Some(&session), &error),
    }
}

fn store_failed(session: Option<&Session>, error: &askgate_store::Error) -> Response {
    tracing::error!(%error, "inbox: the store failed");
    page(
        StatusCode::SERVICE_UNAVAILABLE,
        pages::notice(
            "The store failed",
            session,
            &format!("{error}. Nothing was changed; try again."),
        ),
    )
}

#[derive(Debug, Deserialize)]
struct Next {
    next: Option<String>,
}

/// Only a path of this site: never another host.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(next) if next.starts_with('/') && !next.starts_with("//") && !next.contains('\\') => {
            next.to_owned()
        }
        _ => "/".to_owned(),
    }
}

async fn login_page(State(inbox): State<Inbox>, Query(next): Query<Next>) -> Response {
    login_form(
        &inbox,
        StatusCode::OK,
        &safe_next(next.next.as_deref()),
        None,
    )
}

/// The sign-in form with a fresh CSRF token (and its cookie), and why the
/// last try was refused, if it was.
fn login_form(inbox: &Inbox, status: StatusCode, next: &str, problem: Option<&str>) -> Response {
    let Ok(csrf) = auth::random() else {
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            pages::notice("Unavailable", None, "No randomness for a security token."),
        );
    };
    let cookie = auth::set_cookie(LOGIN_COOKIE, &csrf, inbox.inner.secure, Some(600));
    (
        status,
        [(header::SET_COOKIE, cookie)],
        pages::login(&csrf, next, problem),
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
struct LoginForm {
    csrf: Option<String>,
    next: Option<String>,
    token: Option<String>,
}

async fn login(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let next = safe_next(form.next.as_deref());
    let again =
        |status: StatusCode, problem: &str| login_form(&inbox, status, &next, Some(problem));
    if let Some(problem) = auth::origin_problem(&headers, &inbox.inner.origin) {
        return again(StatusCode::FORBIDDEN, &problem);
    }
    let expected = auth::cookie(&headers, LOGIN_COOKIE);
    if !auth::login_csrf_ok(expected.as_deref(), form.csrf.as_deref()) {
        return again(
            StatusCode::FORBIDDEN,
            "The sign-in form's security token did not match; this form has a fresh one.",
        );
    }
    let Some(person) = form
        .token
        .as_deref()
        .and_then(|token| inbox.inner.people.find(token.trim()))
        .cloned()
    else {
        tracing::warn!("inbox: a sign-in with an unknown token was refused");
        return again(StatusCode::UNAUTHORIZED, "That token signs nobody in.");
    };
    match inbox.inner.sessions.start(person.clone(), None) {
        Ok(id) => {
            tracing::info!(person = %person.name, "inbox: signed in");
            let session = auth::set_cookie(SESSION_COOKIE, &id, inbox.inner.secure, None);
            let clear = auth::set_cookie(LOGIN_COOKIE, "", inbox.inner.secure, Some(0));
            (
                AppendHeaders([(header::SET_COOKIE, session), (header::SET_COOKIE, clear)]),
                Redirect::to(&next),
            )
                .into_response()
        }
        Err(problem) => again(StatusCode::INTERNAL_SERVER_ERROR, &problem),
    }
}

#[derive(Debug, Deserialize)]
struct CsrfOnly {
    csrf: Option<String>,
}

async fn logout(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Form(form): Form<CsrfOnly>,
) -> Response {
    let Some(session) = inbox.inner.sessions.of(&headers) else {
        return Redirect::to("/login").into_response();
    };
    if let Some(refused) = refused_post(&inbox, &headers, &session, form.csrf.as_deref()) {
        return refused;
    }
    inbox.inner.sessions.end(&headers);
    let clear = auth::set_cookie(SESSION_COOKIE, "", inbox.inner.secure, Some(0));
    ([(header::SET_COOKIE, clear)], Redirect::to("/login")).into_response()
}

#[derive(Debug, Deserialize)]
struct AskQuery {
    /// A signed link's token.
    link: Option<String>,
}

async fn ask_page(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<AskQuery>,
) -> Response {
    if let Some(token) = &query.link {
        return super::link::open(&inbox, &headers, &id, token).await;
    }
    let Some(session) = inbox.inner.sessions.of(&headers) else {
        return sign_in(&format!("/asks/{id}"));
    };
    let row = match visible(&inbox, &session, &id).await {
        Ok(row) => row,
        Err(response) => return response,
    };
    show(
        &inbox,
        &session,
        &row,
        &Answering {
            posted: None,
            reasons: &[],
        },
        StatusCode::OK,
    )
    .await
}

/// The ask `id`, if this session may see it (else: not found — whether it
/// exists for someone else is not said).
async fn visible(inbox: &Inbox, session: &Session, id: &str) -> Result<AskRow, Response> {
    match inbox.store().ask(id).await {
        Ok(Some(row)) if session.may_see(id, &row.ask.principal) => Ok(row),
        Ok(_) => Err(page(
            StatusCode::NOT_FOUND,
            pages::notice("Not found", Some(session), &format!("No ask {id} for you.")),
        )),
        Err(error) => Err(store_failed(Some(session), &error)),
    }
}

/// An ask's page: its form while pending, its outcome once settled.
async fn show(
    inbox: &Inbox,
    session: &Session,
    row: &AskRow,
    answering: &Answering<'_>,
    status: StatusCode,
) -> Response {
    if row.status != AskStatus::Pending {
        let audit = match inbox.store().audit_of_ask(&row.ask.id).await {
            Ok(audit) => audit,
            Err(error) => return store_failed(Some(session), &error),
        };
        return page(
            status,
            pages::settled(session, row, &shown_values(row), &audit),
        );
    }
    match serde_json::from_value::<StoredRequest>(row.ask.request.clone()) {
        Ok(StoredRequest::Form { ask }) => match Ask::from_record(ask) {
            Ok(ask) => page(status, pages::form_ask(session, row, &ask, answering)),
            Err(error) => unreadable(session, &error.to_string()),
        },
        Ok(StoredRequest::QuestionSet { set }) => {
            page(status, pages::question_ask(session, row, &set, answering))
        }
        Err(error) => unreadable(session, &error.to_string()),
    }
}

fn unreadable(session: &Session, detail: &str) -> Response {
    page(
        StatusCode::UNPROCESSABLE_ENTITY,
        pages::notice(
            "Cannot show this ask",
            Some(session),
            &format!("Its request is not one the inbox can show: {detail}"),
        ),
    )
}

/// The settled values to show: every value of a form field that is not
/// sensitive, or a question set's chosen answers.
fn shown_values(row: &AskRow) -> Vec<(String, String)> {
    let Ok(request) = serde_json::from_value::<StoredRequest>(row.ask.request.clone()) else {
        return Vec::new();
    };
    match request {
        StoredRequest::Form { ask } => {
            let fields = ask.form.fields.clone();
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
                        match settled.value.to_json() {
                            Json::String(text) => text,
                            Json::Array(items) => items
                                .iter()
                                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                                .collect::<Vec<_>>()
                                .join(", "),
                            Json::Object(range) => match (range.get("from"), range.get("to")) {
                                (Some(Json::String(from)), Some(Json::String(to))) => {
                                    format!("from {from} to {to}")
                                }
                                _ => Json::Object(range).to_string(),
                            },
                            other => other.to_string(),
                        }
                    };
                    Some((field.title.clone(), value))
                })
                .collect()
        }
        StoredRequest::QuestionSet { .. } => row
            .outcome
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
                Some((prompt, text))
            })
            .collect(),
    }
}

async fn answer(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Response {
    let Some(session) = inbox.inner.sessions.of(&headers) else {
        return sign_in(&format!("/asks/{id}"));
    };
    let posted = Posted::new(pairs);
    if let Some(refused) = refused_post(&inbox, &headers, &session, posted.one("csrf")) {
        return refused;
    }
    let row = match visible(&inbox, &session, &id).await {
        Ok(row) => row,
        Err(response) => return response,
    };
    if row.status != AskStatus::Pending {
        return show(&inbox, &session, &row, &no_answer(), StatusCode::CONFLICT).await;
    }
    let act = match read_act(&row, &posted) {
        Ok(act) => act,
        Err(reasons) => return again(&inbox, &session, &row, &posted, &reasons).await,
    };
    let settlement =
        match stored::settle_explained(&row.ask.request, act, &session.person.name, Surface::Web) {
            Ok(settlement) => settlement,
            Err(reasons) => return again(&inbox, &session, &row, &posted, &reasons).await,
        };
    match inbox
        .store()
        .settle(&id, &settlement, Timestamp::now())
        .await
    {
        Ok(settled) => {
            tracing::info!(ask = %id, status = settled.status.as_str(), person = %session.person.name, "inbox: an ask was settled");
            Redirect::to(&format!("/asks/{id}")).into_response()
        }
        Err(SettleError::Store(error)) => store_failed(Some(&session), &error),
        Err(refusal) => {
            // Settled or expired meanwhile: the first answer stands.
            let reasons = [Reason::from(refusal.to_string())];
            match inbox.store().ask(&id).await {
                Ok(Some(row)) => {
                    show(
                        &inbox,
                        &session,
                        &row,
                        &Answering {
                            posted: None,
                            reasons: &reasons,
                        },
                        StatusCode::CONFLICT,
                    )
                    .await
                }
                Ok(None) => page(
                    StatusCode::NOT_FOUND,
                    pages::notice("Not found", Some(&session), &refusal.to_string()),
                ),
                Err(error) => store_failed(Some(&session), &error),
            }
        }
    }
}

fn no_answer() -> Answering<'static> {
    Answering {
        posted: None,
        reasons: &[],
    }
}

/// The form again, with what was wrong beside each field.
async fn again(
    inbox: &Inbox,
    session: &Session,
    row: &AskRow,
    posted: &Posted,
    reasons: &[Reason],
) -> Response {
    tracing::info!(ask = %row.ask.id, problems = reasons.len(), "inbox: an answer was refused; asked again");
    show(
        inbox,
        session,
        row,
        &Answering {
            posted: Some(posted),
            reasons,
        },
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await
}

/// What the person did, read from the posted form.
fn read_act(row: &AskRow, posted: &Posted) -> Result<Act, Vec<Reason>> {
    let request: StoredRequest = serde_json::from_value(row.ask.request.clone()).map_err(|e| {
        vec![Reason::from(format!(
            "this ask cannot be answered here: {e}"
        ))]
    })?;
    match posted.one("action") {
        Some("decline") => Ok(Act::Decline),
        Some("skip") => Ok(Act::Skip),
        Some("accept") | None => match request {
            StoredRequest::Form { ask } => {
                let ask = Ask::from_record(ask).map_err(|e| vec![Reason::from(e.to_string())])?;
                let open: Vec<&askgate_core::Field> = ask
                    .open_fields()
                    .filter_map(|id| ask.form().fields.iter().find(|f| f.id == id))
                    .collect();
                let values = fields::read_form(&open, posted);
                Ok(Act::Answer(ask.content_for(Revision::V2025_11_25, &values)))
            }
            StoredRequest::QuestionSet { set } => {
                Ok(Act::Answer(fields::read_questions(&set, posted)))
            }
        },
        Some(other) => Err(vec![Reason::from(format!(
            "unknown action {other:?}: expected accept, decline or skip"
        ))]),
    }
}
