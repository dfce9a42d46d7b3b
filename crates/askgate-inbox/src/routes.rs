//! The inbox's routes and what each does.

use askgate_core::{Ask, Revision, Surface};
use askgate_mcp::stored::{self, Act, Reason, StoredRequest};
use askgate_store::{AskFilter, AskRow, AskStatus, SettleError};
use axum::Router;
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use maud::Markup;
use serde::Deserialize;

use super::Inbox;
use super::auth::Session;
use super::fields::{self, Posted};
use super::pages::{self, Answering, ListQuery};
use super::rejection::{AnswerRejection, AskRejection, InboxRejection, StoreRejection};
use super::{signin, values};

/// How many asks a page lists.
const PAGE: u32 = 50;

pub(super) fn router(inbox: Inbox) -> Router {
    Router::new()
        .route("/", get(list))
        .route("/login", get(signin::page).post(signin::post))
        .route("/login/oidc", get(super::oidc::start))
        .route(super::oidc::CALLBACK, get(super::oidc::callback))
        .route("/logout", axum::routing::post(signin::sign_out))
        .route("/asks/{id}", get(ask_page).post(answer))
        .route("/events", get(super::events::stream))
        .route("/static/inbox.css", get(style))
        .route("/static/inbox.js", get(script))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route(super::deployment::PATH, get(deployment))
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

/// `GET /askgate/deployment`: the fingerprint of this inbox's key, so a
/// gateway over the same store can tell it is its own (see
/// [`crate::deployment`]).
async fn deployment(State(inbox): State<Inbox>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        inbox.fingerprint(),
    )
        .into_response()
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

/// `GET /`: the asks this person may answer, pending (or settled), newest
/// first, a page at a time; a link's session goes to its one ask.
async fn list(
    State(inbox): State<Inbox>,
    session: Session,
    Query(query): Query<ListQuery>,
) -> Result<Response, StoreRejection> {
    if let Some(only) = &session.only_ask {
        return Ok(Redirect::to(&format!("/asks/{only}")).into_response());
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
    let listing = super::listed::asks_for(
        inbox.store(),
        &session.person,
        &filter,
        PAGE,
        query.after.as_deref(),
    )
    .await
    .map_err(|error| StoreRejection::new(Some(&session), error))?;
    Ok(match query.partial {
        Some(_) => page(StatusCode::OK, pages::table(&query, &listing)),
        None => page(StatusCode::OK, pages::list(&session, &query, &listing)),
    })
}

#[derive(Debug, Deserialize)]
struct AskQuery {
    /// A signed link's token.
    link: Option<String>,
}

/// `GET /asks/{id}`: an ask's page — its form while pending, its outcome
/// once settled; with `?link=`, a signed link opening it.
async fn ask_page(
    State(inbox): State<Inbox>,
    session: Option<Session>,
    Path(id): Path<String>,
    Query(query): Query<AskQuery>,
) -> Result<Response, InboxRejection> {
    if let Some(token) = &query.link {
        return Ok(super::link::open(&inbox, session, &id, token).await?);
    }
    let Some(session) = session else {
        return Err(crate::rejection::SessionRejection::sign_in(&format!("/asks/{id}")).into());
    };
    let row = visible(&inbox, &session, &id).await?;
    let markup = show(&inbox, &session, &row, &no_answer()).await?;
    Ok(page(StatusCode::OK, markup))
}

/// The ask `id`, if this session may see it (else: not found — whether it
/// exists for someone else is not said).
async fn visible(inbox: &Inbox, session: &Session, id: &str) -> Result<AskRow, InboxRejection> {
    match inbox.store().ask(id).await {
        Ok(Some(row)) if session.may_see(id, &row.ask.principal) => expired_if_overdue(inbox, row)
            .await
            .map_err(|error| StoreRejection::new(Some(session), error).into()),
        Ok(_) => Err(AskRejection::not_found(session, id).into()),
        Err(error) => Err(StoreRejection::new(Some(session), error).into()),
    }
}

/// `row`, expired in the store first when it is pending past its expiry
/// (the sweep had not come to it yet): nobody is shown a form for it.
async fn expired_if_overdue(inbox: &Inbox, row: AskRow) -> Result<AskRow, askgate_store::Error> {
    let now = inbox.now();
    let overdue =
        row.status == AskStatus::Pending && row.ask.expires_at.is_some_and(|at| at <= now);
    if !overdue {
        return Ok(row);
    }
    Ok(inbox.store().expire(&row.ask.id, now).await?.unwrap_or(row))
}

/// An ask's page: its form while pending (with what was posted and why
/// it was refused, if it was), its outcome and audit once settled.
async fn show(
    inbox: &Inbox,
    session: &Session,
    row: &AskRow,
    answering: &Answering<'_>,
) -> Result<Markup, InboxRejection> {
    if row.status != AskStatus::Pending {
        let audit = inbox
            .store()
            .audit_of_ask(&row.ask.id)
            .await
            .map_err(|error| StoreRejection::new(Some(session), error))?;
        let erased = crate::arguments::were_erased(inbox, row)
            .await
            .map_err(|error| StoreRejection::new(Some(session), error))?;
        return Ok(pages::settled(
            session,
            row,
            &values::of(row),
            &audit,
            answering,
            erased,
        ));
    }
    let unreadable = |detail: String| AskRejection::unreadable(session, detail);
    match serde_json::from_value::<StoredRequest>(row.ask.request.clone()) {
        Ok(StoredRequest::Form { ask }) => match Ask::from_record(ask) {
            Ok(ask) => {
                let standing = askgate_mcp::approvals::standing(inbox.store(), row, inbox.now())
                    .await
                    .map_err(|error| StoreRejection::new(Some(session), error))?;
                let arguments = crate::arguments::opened(inbox, session, row)
                    .await
                    .map_err(|error| StoreRejection::new(Some(session), error))?;
                Ok(pages::form_ask(
                    session,
                    row,
                    &ask,
                    answering,
                    &pages::Context {
                        standing: standing.as_ref(),
                        arguments: arguments.as_ref(),
                    },
                ))
            }
            Err(error) => Err(unreadable(error.to_string()).into()),
        },
        Ok(StoredRequest::QuestionSet { set }) => {
            Ok(pages::question_ask(session, row, &set, answering))
        }
        Err(error) => Err(unreadable(error.to_string()).into()),
    }
}

/// `POST /asks/{id}`: a person's answer (or decline, or skip), checked as
/// an MCP answer is, applied once: the first answer stands. A store that
/// fails meanwhile keeps the answer in its page, to be sent again.
async fn answer(
    State(inbox): State<Inbox>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(posted): Form<Posted>,
) -> Result<Response, InboxRejection> {
    session.check_post(&inbox, &headers, posted.one("csrf"))?;
    match apply(&inbox, &session, &id, &posted).await {
        Err(InboxRejection::Store(failed)) => Err(failed.of_answer(&id, &posted).into()),
        done => done,
    }
}

/// The answer `posted` to the ask `id`, applied once.
async fn apply(
    inbox: &Inbox,
    session: &Session,
    id: &str,
    posted: &Posted,
) -> Result<Response, InboxRejection> {
    let row = visible(inbox, session, id).await?;
    if row.status != AskStatus::Pending {
        return Err(settled(inbox, session, &row, &[], Some(posted)).await);
    }
    let settlement = read_act(&row, posted).and_then(|act| {
        stored::settle_explained(&row.ask.request, act, &session.person.name, Surface::Web)
    });
    let settlement = match settlement {
        Ok(settlement) => settlement,
        Err(reasons) => return Err(again(inbox, session, &row, posted, &reasons).await),
    };
    let (person, groups) = (&session.person.name, &session.person.groups);
    let now = inbox.now();
    let store = inbox.store();
    match askgate_mcp::approvals::settle_as_person(store, &row, &settlement, person, groups, now)
        .await
    {
        Ok(settled) => {
            tracing::info!(ask = %id, status = settled.status.as_str(), person = %session.person.name, "inbox: an answer was applied");
            Ok(Redirect::to(&format!("/asks/{id}")).into_response())
        }
        Err(SettleError::Store(error)) => Err(StoreRejection::new(Some(session), error).into()),
        Err(SettleError::NotFound { .. }) => Err(AskRejection::not_found(session, id).into()),
        // Settled or expired meanwhile: the first answer stands.
        Err(refusal) => {
            let reasons = [Reason::from(refusal.to_string())];
            match inbox.store().ask(id).await {
                Ok(Some(row)) => {
                    let row = expired_if_overdue(inbox, row)
                        .await
                        .map_err(|error| StoreRejection::new(Some(session), error))?;
                    Err(settled(inbox, session, &row, &reasons, Some(posted)).await)
                }
                Ok(None) => Err(AskRejection::not_found(session, id).into()),
                Err(error) => Err(StoreRejection::new(Some(session), error).into()),
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

/// The refusal of an answer to an ask already settled (409): its page,
/// with `reasons` (why this answer came too late) and what the person
/// `typed`, so that it is not lost.
async fn settled(
    inbox: &Inbox,
    session: &Session,
    row: &AskRow,
    reasons: &[Reason],
    typed: Option<&Posted>,
) -> InboxRejection {
    let answering = Answering {
        posted: typed,
        reasons,
    };
    match show(inbox, session, row, &answering).await {
        Ok(markup) => AnswerRejection::settled(&row.ask.id, row.status, markup).into(),
        Err(rejection) => rejection,
    }
}

/// The refusal of an answer its checks refused (422): the form again,
/// with what was wrong beside each field.
async fn again(
    inbox: &Inbox,
    session: &Session,
    row: &AskRow,
    posted: &Posted,
    reasons: &[Reason],
) -> InboxRejection {
    tracing::info!(ask = %row.ask.id, problems = reasons.len(), "inbox: an answer was refused; asked again");
    let answering = Answering {
        posted: Some(posted),
        reasons,
    };
    let fields = reasons.iter().filter_map(|r| r.field.clone()).collect();
    match show(inbox, session, row, &answering).await {
        Ok(markup) => AnswerRejection::invalid(fields, reasons.len(), markup).into(),
        Err(rejection) => rejection,
    }
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
        Some(_) => Err(vec![Reason::from(
            "this form's action is not one the inbox knows: expected accept, decline or skip"
                .to_owned(),
        )]),
    }
}
