//! The inbox's pages, as HTML.

use askgate_core::{Ask, Field, QuestionSet};
use askgate_mcp::stored::Reason;
use askgate_store::{AskRow, AskStatus, AuditRecord, Page};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use super::auth::{self, LOGIN_COOKIE, Session};
use super::fields::{self, Posted};
use super::values::Shown;

/// The inbox's style sheet, served at `/static/inbox.css`.
pub(crate) const STYLE: &str = include_str!("inbox.css");
/// The inbox's script, served at `/static/inbox.js`.
pub(crate) const SCRIPT: &str = include_str!("inbox.js");

/// A page around `body`.
pub(crate) fn layout(title: &str, session: Option<&Session>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (title) " — askgate inbox" }
                link rel="stylesheet" href="/static/inbox.css";
            }
            body {
                header {
                    a.home href="/" { "askgate inbox" }
                    @if let Some(session) = session {
                        span.who {
                            "Signed in as " strong { (session.person.name) }
                            @if session.person.operator { " (operator)" }
                        }
                        form.logout method="post" action="/logout" {
                            input type="hidden" name="csrf" value=(session.csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
                script src="/static/inbox.js" defer {}
            }
        }
    }
}

/// The sign-in page.
pub(crate) fn login(csrf: &str, next: &str, problem: Option<&str>, oidc: bool) -> Markup {
    layout(
        "Sign in",
        None,
        html! {
            h1 { "Sign in" }
            p { "Paste your inbox token: the operator's (in the file askgate named when it first started, or set in the config), or your own, from the config's [[people]]. An agent's token does not sign in." }
            @if let Some(problem) = problem { p.error.banner role="alert" { (problem) } }
            @if oidc {
                p.provider {
                    a.button href=(format!("/login/oidc?next={}", url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>())) {
                        "Sign in with your organization's account"
                    }
                }
                p { "Or with a token:" }
            }
            form method="post" action="/login" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="next" value=(next);
                label for="token" { "Token" }
                input id="token" type="password" name="token" autocomplete="current-password" required autofocus;
                button type="submit" { "Sign in" }
            }
        },
    )
}

/// What the sign-in page offers: the inbox is served over https (its
/// cookies are `Secure`), and people may sign in with an OpenID provider.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SignInPage {
    pub(crate) secure: bool,
    pub(crate) oidc: bool,
}

/// The sign-in page as a response: with `status`, a fresh CSRF token (and
/// its cookie, `Secure` when `secure`), coming back to `next`, and why the
/// last try was refused, if it was.
pub(crate) fn sign_in_form(
    page: SignInPage,
    status: StatusCode,
    next: &str,
    problem: Option<&str>,
) -> Response {
    let Ok(csrf) = auth::random() else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            notice("Unavailable", None, "No randomness for a security token."),
        )
            .into_response();
    };
    let cookie = auth::set_cookie(LOGIN_COOKIE, &csrf, page.secure, Some(600));
    (
        status,
        [(header::SET_COOKIE, cookie)],
        login(&csrf, next, problem, page.oidc),
    )
        .into_response()
}

/// A page that only says something (refused, not found, gone).
pub(crate) fn notice(title: &str, session: Option<&Session>, message: &str) -> Markup {
    layout(
        title,
        session,
        html! {
            h1 { (title) }
            p.banner role="alert" { (message) }
            p { a href="/" { "Back to the inbox" } }
        },
    )
}

/// A store failure that cut off a person's answer to the ask `id`: the
/// answer is kept in the page (not shown; a sensitive field's value is
/// left out, to be typed again) and its one button sends it again.
pub(crate) fn answer_kept(
    session: Option<&Session>,
    message: &str,
    id: &str,
    posted: &Posted,
) -> Markup {
    layout(
        "Your answer was not applied",
        session,
        html! {
            h1 { "Your answer was not applied" }
            p.banner role="alert" { (message) }
            form.kept method="post" action=(format!("/asks/{}", url::form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>())) {
                @for (name, value) in posted.pairs_but_secrets() {
                    input type="hidden" name=(name) value=(value);
                }
                p { "What you entered is kept in this page. Once the store is back, send it again:" }
                @if posted.has_secrets() {
                    p { "A secret you typed is not kept here: you will be asked to type it again." }
                }
                button type="submit" { "Send my answer again" }
            }
            p { a href="/" { "Back to the inbox" } }
        },
    )
}

/// What a listing shows, for its links and its filter form.
#[derive(Debug, Default, Clone, serde::Deserialize)]
pub(crate) struct ListQuery {
    pub(crate) server: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) risk: Option<String>,
    /// `pending` (the default) or `settled`.
    pub(crate) status: Option<String>,
    pub(crate) after: Option<String>,
    /// Only the table, for live updates.
    pub(crate) partial: Option<String>,
}

impl ListQuery {
    pub(crate) fn settled(&self) -> bool {
        self.status.as_deref() == Some("settled")
    }

    fn with_after(&self, after: &str) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (key, value) in [
            ("server", &self.server),
            ("tool", &self.tool),
            ("risk", &self.risk),
            ("status", &self.status),
        ] {
            if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
                query.append_pair(key, value);
            }
        }
        query.append_pair("after", after);
        format!("/?{}", query.finish())
    }
}

/// The list of asks, with its filters.
pub(crate) fn list(session: &Session, query: &ListQuery, page: &Page) -> Markup {
    let settled = query.settled();
    layout(
        "Asks",
        Some(session),
        html! {
            h1 { @if settled { "Settled asks" } @else { "Pending asks" } }
            nav.tabs {
                a href="/" aria-current=[(!settled).then_some("page")] { "Pending" }
                a href="/?status=settled" aria-current=[settled.then_some("page")] { "Settled" }
            }
            form.filters method="get" action="/" aria-label="Filters" {
                @if settled { input type="hidden" name="status" value="settled"; }
                label { "Server " input type="text" name="server" value=[query.server.as_deref()]; }
                label { "Tool " input type="text" name="tool" value=[query.tool.as_deref()]; }
                label { "Risk "
                    select name="risk" {
                        option value="" { "any" }
                        @for risk in ["read", "low_write", "medium_write", "high_write", "destructive"] {
                            option value=(risk) selected[query.risk.as_deref() == Some(risk)] { (risk) }
                        }
                    }
                }
                button type="submit" { "Filter" }
            }
            (table(query, page))
        },
    )
}

/// The table of a listing (also sent alone for live updates).
pub(crate) fn table(query: &ListQuery, page: &Page) -> Markup {
    html! {
        div #asks data-live=(if query.after.is_none() { "1" } else { "0" }) {
            @if page.asks.is_empty() {
                p.empty {
                    @if query.settled() { "No settled asks yet." } @else { "No pending asks: nothing waits for a person." }
                }
            } @else {
                div.table-wrap { table {
                    thead { tr { th { "Asked" } th { "What" } th { "From" } th { "Risk" } th { "For" } th { "Status" } } }
                    tbody {
                        @for row in &page.asks {
                            tr data-ask=(row.ask.id) {
                                td { time datetime=(row.ask.created_at.to_string()) { (short_time(row.ask.created_at)) } }
                                td { a href=(format!("/asks/{}", row.ask.id)) { (title_of(row)) } }
                                td { (origin(row)) }
                                td { span class=(format!("risk {}", row.ask.risk.as_deref().unwrap_or("none"))) { (row.ask.risk.as_deref().unwrap_or("—")) } }
                                td { (row.ask.principal) }
                                td { (row.status.as_str()) }
                            }
                        }
                    }
                } }
            }
            @if let Some(next) = &page.next {
                p { a.next href=(query.with_after(next)) { "Older asks →" } }
            }
        }
    }
}

fn short_time(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}

fn origin(row: &AskRow) -> String {
    match (&row.ask.server, &row.ask.tool) {
        (Some(server), Some(tool)) => format!("{server} / {tool}"),
        (Some(server), None) => server.clone(),
        _ => "—".into(),
    }
}

/// What an ask is about, in a line: its form's message or the preamble.
pub(crate) fn title_of(row: &AskRow) -> String {
    let request = &row.ask.request;
    let text = request
        .pointer("/ask/form/message")
        .or_else(|| request.pointer("/set/preamble"))
        .and_then(|m| m.as_str())
        .or_else(|| {
            request
                .pointer("/set/questions/0/prompt")
                .and_then(|p| p.as_str())
        })
        .unwrap_or("An ask");
    let line = text.lines().next().unwrap_or(text);
    if line.chars().count() > 100 {
        format!("{}…", line.chars().take(100).collect::<String>())
    } else {
        line.to_owned()
    }
}

/// What the person may do with an ask, and what was wrong last time.
pub(crate) struct Answering<'a> {
    pub(crate) posted: Option<&'a Posted>,
    pub(crate) reasons: &'a [Reason],
}

impl Answering<'_> {
    /// What was wrong with the field or question `id`, if anything.
    fn error_of(&self, id: &str) -> Option<&str> {
        self.reasons
            .iter()
            .find(|r| r.field.as_deref() == Some(id))
            .map(|r| r.message.as_str())
    }

    /// What was wrong with the answer as a whole, shown above the form.
    fn banner(&self) -> Markup {
        let general: Vec<&Reason> = self.reasons.iter().filter(|r| r.field.is_none()).collect();
        html! {
            @if !general.is_empty() {
                ul.error.banner role="alert" { @for reason in &general { li { (reason.message) } } }
            }
        }
    }
}

/// What a pending ask's page shows besides its form.
#[derive(Default)]
pub(crate) struct Context<'a> {
    /// Where a rule's ask stands.
    pub(crate) standing: Option<&'a askgate_mcp::approvals::Standing>,
    /// The call's arguments in full, for someone who may answer.
    pub(crate) arguments: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// An ask with a form of typed fields, to answer.
pub(crate) fn form_ask(
    session: &Session,
    row: &AskRow,
    ask: &Ask,
    answering: &Answering<'_>,
    context: &Context<'_>,
) -> Markup {
    let standing = context.standing;
    let open: Vec<&Field> = ask
        .open_fields()
        .filter_map(|id| ask.form().fields.iter().find(|f| f.id == id))
        .collect();
    // A person answers a rule's ask once: theirs is counted, the form is
    // for the others.
    let mine = standing.and_then(|standing| {
        standing
            .answers
            .iter()
            .find(|(person, _)| *person == session.person.name)
            .map(|(_, approved)| *approved)
    });
    layout(
        &title_of(row),
        Some(session),
        html! {
            (heading(row))
            // The first line is the heading already.
            @for line in ask.form().message.lines().skip(1) { p.message { (line) } }
            (answering.banner())
            @if let Some(arguments) = context.arguments { (crate::arguments::section(arguments)) }
            @if let Some(standing) = standing { (crate::approvals::section(standing)) }
            @if let Some(approved) = mine {
                p.yours { "You " (if approved { "approved" } else { "declined" }) " this ask; your answer is counted. It waits for the others." }
            } @else if crate::decision::is_confirmation(ask) {
                (crate::decision::form(session, row))
            } @else {
                form.answer method="post" action=(format!("/asks/{}", row.ask.id)) novalidate {
                    input type="hidden" name="csrf" value=(session.csrf);
                    @for field in &open { (fields::field(field, answering.posted, answering.error_of(&field.id))) }
                    div.actions {
                        button type="submit" name="action" value="accept" { "Accept" }
                        button type="submit" name="action" value="decline" formnovalidate { "Decline" }
                    }
                    p.hint { "Enter in a field sends the form as Accept; a choice's key picks it." }
                }
            }
            (zones())
        },
    )
}

/// A question set, to answer or skip.
pub(crate) fn question_ask(
    session: &Session,
    row: &AskRow,
    set: &QuestionSet,
    answering: &Answering<'_>,
) -> Markup {
    layout(
        &title_of(row),
        Some(session),
        html! {
            (heading(row))
            @if let Some(preamble) = &set.preamble { p.message { (preamble) } }
            (answering.banner())
            form.answer method="post" action=(format!("/asks/{}", row.ask.id)) {
                input type="hidden" name="csrf" value=(session.csrf);
                @for question in &set.questions { (fields::question(question, answering.posted, answering.error_of(&question.id))) }
                div.actions {
                    button type="submit" name="action" value="accept" { "Answer" }
                    button type="submit" name="action" value="skip" { "Skip (keep the pre-picked answers)" }
                }
            }
            (zones())
        },
    )
}

/// A settled ask: its outcome and its audit entries, and, when its call's
/// arguments were `erased` as it ended, that they were.
pub(crate) fn settled(
    session: &Session,
    row: &AskRow,
    shown: &[Shown],
    audit: &[AuditRecord],
    answering: &Answering<'_>,
    erased: bool,
) -> Markup {
    let typed: Vec<(&str, &str)> = answering.posted.map(Posted::typed).unwrap_or_default();
    layout(
        &title_of(row),
        Some(session),
        html! {
            (heading(row))
            (answering.banner())
            @if !typed.is_empty() {
                div.typed role="status" {
                    p {
                        "Your answer was not applied: this ask is already "
                        strong { (row.status.as_str()) } ". What you typed is kept here:"
                    }
                    dl.values { @for (name, value) in &typed { dt { (name) } dd { (value) } } }
                }
            }
            p.outcome {
                "This ask is " strong { (row.status.as_str()) }
                @if let Some(by) = &row.answered_by { ", by " (by) }
                @if let Some(via) = &row.answered_via { " via " (via) }
                @if let Some(at) = row.settled_at { ", at " (short_time(at)) }
                "."
            }
            @if row.status == AskStatus::Expired { p { "Nobody answered in time; no default was applied." } }
            @if row.ask.server.is_some() {
                @for line in asked_lines(row) { p.message { (line) } }
            }
            @if erased { (crate::arguments::erased()) }
            @if !shown.is_empty() {
                dl.values { @for shown in shown { dt { (shown.name) } dd { (shown.value) } } }
            }
            h2 { "Audit" }
            @if audit.is_empty() {
                p.empty { "No audit entry names this ask." }
            } @else {
                table.audit {
                    thead { tr { th { "#" } th { "When" } th { "Decision" } th { "Why" } th { "By" } } }
                    tbody {
                        @for record in audit {
                            tr {
                                td { (record.seq) }
                                td { (short_time(record.entry.at)) }
                                td { (serde_json::to_value(record.entry.decision).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()) }
                                td { (record.entry.reason) }
                                td { (record.entry.answered_by.as_deref().unwrap_or("—")) " " (record.entry.answered_via.as_deref().unwrap_or("")) }
                            }
                        }
                    }
                }
            }
            p { a href="/" { "Back to the inbox" } }
        },
    )
}

/// What a call's confirmation said, past its first line (the title):
/// the arguments' preview and where the risk came from, as the person was
/// asked.
fn asked_lines(row: &AskRow) -> Vec<String> {
    let Ok(askgate_mcp::stored::StoredRequest::Form { ask }) =
        serde_json::from_value(row.ask.request.clone())
    else {
        return Vec::new();
    };
    Ask::from_record(ask)
        .map(|ask| {
            ask.form()
                .message
                .lines()
                .skip(1)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Who and what an ask is about: server, tool, risk, for whom, expiry.
fn heading(row: &AskRow) -> Markup {
    html! {
        h1 class=(format!("title {}", crate::decision::risk_class(row))) { (title_of(row)) }
        dl.about {
            @if let Some(server) = &row.ask.server { dt { "Server" } dd { (server) } }
            @if let Some(tool) = &row.ask.tool { dt { "Tool" } dd { (tool) } }
            @if let Some(risk) = &row.ask.risk { dt { "Risk" } dd { span class=(format!("risk {risk}")) { (risk) } } }
            dt { "For" } dd { (row.ask.principal) }
            dt { "Asked" } dd { (short_time(row.ask.created_at)) }
            @if let Some(expires) = row.ask.expires_at { dt { "Expires" } dd { (short_time(expires)) } }
        }
    }
}

/// Every IANA zone, for the searchable zone inputs.
fn zones() -> Markup {
    html! {
        datalist #zones {
            @for name in jiff::tz::db().available() { option value=(name.as_str()) {} }
        }
    }
}
