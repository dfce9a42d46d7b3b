//! The inbox page, as a browser uses it: `askgate inbox` over a real
//! SQLite store, driven over HTTP — sign-in (people only, never an agent's
//! token), CSRF and Origin checks, a form answered with a wrong value
//! (inline error, nothing stored) then a right one (settled once, via web,
//! by the person), visibility by whose asks a person answers, signed
//! single-use links bound to their principal, the generated operator token
//! kept in a private file, and live events.

use std::process::{Command, Stdio};

use askgate_core::{Ask, Form};
use askgate_store::{AskRow, NewAsk, Store};
use askgate_testkit::page::{hidden, set_cookie};
use askgate_testkit::process::Process;
use askgate_testkit::{Scratch, binaries};
use jiff::Timestamp;
use reqwest::StatusCode;
use reqwest::header::{COOKIE, ORIGIN};
use serde_json::{Value as Json, json};

/// Asks a team's rule decides, answered on their pages.
mod approvals;
mod arguments;
mod pages;
mod signing_in;
mod visibility;

/// `askgate inbox` on a free port; killed on drop.
struct Server {
    process: Process,
    base: String,
    /// The generated operator token, read from the file stderr named.
    operator_token: String,
    /// That file.
    operator_file: std::path::PathBuf,
    store_url: String,
    http: reqwest::Client,
    _dir: Scratch,
}

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef00";
const CAROL: &str = "carol-token-0123456789abcdef";
/// The agent's MCP bearer token.
const AGENT: &str = "ci-agent-token-0123456789abcd";

/// `askgate inbox` on a free port, over a fresh store, with an agent
/// (principal `ci-agent`) and people alice and bob (each answering for the
/// principal of their name) and carol (for alice and ci-agent); the
/// operator token is generated, in the file it names.
async fn start() -> Server {
    let dir = Scratch::new();
    let store_url = dir.store_url();
    let config = dir.write(
        "askgate.toml",
        &format!(
            "store = {store_url:?}\n\n[inbox]\nlisten = \"127.0.0.1:0\"\n\n\
             [[upstreams]]\nname = \"none\"\ncommand = \"true\"\n\n\
             [[principals]]\nname = \"ci-agent\"\ntoken = {AGENT:?}\n\n\
             [[people]]\nname = \"alice\"\ntoken = {ALICE:?}\nanswers_for = [\"alice\"]\n\n\
             [[people]]\nname = \"bob\"\ntoken = {BOB:?}\nanswers_for = [\"bob\"]\n\n\
             [[people]]\nname = \"carol\"\ntoken = {CAROL:?}\n\
             answers_for = [\"alice\", \"ci-agent\"]\n"
        ),
    );
    let mut command = Command::new(binaries!().askgate);
    command
        .args(["inbox", "--config"])
        .arg(&config)
        .env("ASKGATE_LOG", "warn")
        .stdout(Stdio::null());
    let process = Process::spawn(command);
    let said = process
        .log
        .line_with(&["askgate: the inbox's operator token is in "])
        .await;
    let operator_file = said
        .strip_prefix("askgate: the inbox's operator token is in ")
        .and_then(|rest| rest.strip_suffix(" (readable by you only)"))
        .map(std::path::PathBuf::from)
        .expect("the operator token's file");
    let serving = process.log.line_with(&["askgate inbox: serving "]).await;
    let base = serving
        .strip_prefix("askgate inbox: serving ")
        .and_then(|rest| rest.split_whitespace().next())
        .map(|b| b.trim_end_matches('/').to_owned())
        .expect("a base");
    let token = std::fs::read_to_string(&operator_file).expect("the operator token's file reads");
    Server {
        process,
        base,
        operator_token: token.trim().to_owned(),
        operator_file,
        store_url,
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client"),
        _dir: dir,
    }
}

fn form() -> Form {
    serde_json::from_value(json!({
        "message": "Deploy web to production?",
        "fields": [
            {"id": "replicas", "title": "Replicas", "type": "integer", "minimum": 1, "maximum": 5, "default": 2},
            {"id": "env", "title": "Environment", "type": "choice",
             "options": [{"value": "staging", "label": "Staging", "hotkey": "s"},
                         {"value": "prod", "label": "Production", "hotkey": "p"}]},
            {"id": "window", "title": "Window", "type": "time_range", "zone": "Europe/Paris"}
        ]
    }))
    .expect("a form")
}

async fn park(server: &Server, id: &str, principal: &str) -> Store {
    let ask = Ask::new(form()).expect("askable");
    park_request(
        server,
        id,
        principal,
        json!({"kind": "form", "ask": ask.to_record()}),
    )
    .await
}

/// A question set: which environment (pre-picked staging), and which
/// regions (several, free entry allowed).
fn question_set() -> Json {
    json!({"kind": "question_set", "set": {"source": "ask", "preamble": "Before the deploy:", "questions": [
        {"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
         "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production", "hotkey": "p"}]},
        {"id": "regions", "prompt": "Which regions?", "multiple": true, "allow_free_text": true, "defaults": ["eu"],
         "options": [{"value": "eu", "label": "Europe"}, {"value": "us", "label": "Americas"}]}
    ]}})
}

async fn park_request(server: &Server, id: &str, principal: &str, request: Json) -> Store {
    let store = Store::open(&server.store_url).await.expect("opens");
    store
        .park(&asked_of(id, principal, request, Timestamp::now()))
        .await
        .expect("parks");
    store
}

/// The deployer's ask `id` of `principal`, parked at `at`.
fn asked_of(id: &str, principal: &str, request: Json, at: Timestamp) -> NewAsk {
    NewAsk {
        server: Some("deployer".into()),
        tool: Some("deploy".into()),
        risk: Some("high_write".into()),
        ..askgate_testkit::new_ask(id, principal, request, at)
    }
}

/// The ask `id` as the store has it.
async fn row_of(store: &Store, id: &str) -> AskRow {
    store.ask(id).await.expect("reads").expect("there")
}

/// The `name=value` of a `Set-Cookie` named `name`.
fn cookie(response: &reqwest::Response, name: &str) -> Option<String> {
    set_cookie(response.headers(), name)
}

/// Post the sign-in form with `token`, as a browser does: the sign-in
/// page's cookie and CSRF token, from the inbox's origin.
async fn post_sign_in(server: &Server, token: &str) -> reqwest::Response {
    let page = server
        .http
        .get(format!("{}/login", server.base))
        .send()
        .await
        .expect("the sign-in page");
    let login = cookie(&page, "askgate_login").expect("a sign-in cookie");
    let csrf = hidden(&page.text().await.expect("html"), "csrf");
    server
        .http
        .post(format!("{}/login", server.base))
        .header(COOKIE, &login)
        .header(ORIGIN, &server.base)
        .form(&[("csrf", csrf.as_str()), ("token", token), ("next", "/")])
        .send()
        .await
        .expect("a sign-in post")
}

/// Sign in with `token`: the session cookie.
async fn sign_in(server: &Server, token: &str) -> String {
    let signed = post_sign_in(server, token).await;
    assert_eq!(signed.status(), StatusCode::SEE_OTHER);
    cookie(&signed, "askgate_session").expect("a session cookie")
}

async fn get(server: &Server, session: &str, path: &str) -> (StatusCode, String) {
    let response = server
        .http
        .get(format!("{}{path}", server.base))
        .header(COOKIE, session)
        .send()
        .await
        .expect("a page");
    (response.status(), response.text().await.expect("html"))
}

/// Post `form` to the page of the ask `id`, from the inbox's own origin.
async fn post_answer(
    server: &Server,
    session: &str,
    id: &str,
    form: &[(&str, &str)],
) -> (StatusCode, String) {
    let path = format!("/asks/{id}");
    post(server, session, &path, Some(&server.base), form).await
}

async fn post(
    server: &Server,
    session: &str,
    path: &str,
    origin: Option<&str>,
    form: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut request = server
        .http
        .post(format!("{}{path}", server.base))
        .header(COOKIE, session)
        .form(form);
    if let Some(origin) = origin {
        request = request.header(ORIGIN, origin);
    }
    let response = request.send().await.expect("a post");
    (response.status(), response.text().await.expect("html"))
}
