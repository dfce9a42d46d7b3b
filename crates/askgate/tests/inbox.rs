//! The inbox page, as a browser uses it: `askgate inbox` over a real
//! SQLite store, driven over HTTP — sign-in (people only, never an agent's
//! token), CSRF and Origin checks, a form answered with a wrong value
//! (inline error, nothing stored) then a right one (settled once, via web,
//! by the person), visibility by whose asks a person answers, signed
//! single-use links bound to their principal, the generated operator token
//! kept in a private file, and live events.

use std::process::{Command, Stdio};
use std::time::Duration;

use askgate_core::{Ask, Form, LinkSigner};
use askgate_store::{AskRow, AskStatus, Decision, NewAsk, Store};
use askgate_testkit::page::{field_error, hidden, set_cookie};
use askgate_testkit::process::Process;
use askgate_testkit::{Scratch, binaries};
use jiff::Timestamp;
use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, ORIGIN};
use serde_json::{Value as Json, json};

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

#[tokio::test]
async fn a_person_signs_in_and_answers_an_ask_with_the_same_checks_as_mcp() {
    let server = start().await;
    let store = park(&server, "ask_deploy", "alice").await;

    let anonymous = server
        .http
        .get(format!("{}/", server.base))
        .send()
        .await
        .expect("a page");
    assert_eq!(
        anonymous.status(),
        StatusCode::SEE_OTHER,
        "signed out: to the sign-in page"
    );
    assert!(
        anonymous.headers()[LOCATION]
            .to_str()
            .expect("text")
            .starts_with("/login")
    );

    // A wrong token signs nobody in.
    let refused = post_sign_in(&server, "not-a-token-at-all-000000").await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(cookie(&refused, "askgate_session").is_none());

    let session = sign_in(&server, ALICE).await;
    let (status, list) = get(&server, &session, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        list.contains("Deploy web to production?") && list.contains("ask_deploy"),
        "{list}"
    );

    let (status, page) = get(&server, &session, "/asks/ask_deploy").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("type=\"number\"")
            && page.contains("min=\"1\"")
            && page.contains("max=\"5\"")
    );
    assert!(page.contains("value=\"2\""), "the default is filled in");
    assert!(page.contains("data-hotkey=\"p\"") && page.contains("Production"));
    assert!(page.contains("Europe/Paris") && page.contains("type=\"datetime-local\""));
    assert!(page.contains("deployer") && page.contains("high_write"));
    let csrf = hidden(&page, "csrf");
    let answer = [
        ("csrf", csrf.as_str()),
        ("action", "accept"),
        ("f.replicas", "9"),
        ("f.env", "prod"),
        ("f.window.from", "2026-12-01T09:00"),
        ("f.window.to", "2026-12-01T17:00"),
    ];

    // Without the CSRF token, or from another origin: refused, nothing stored.
    let without: Vec<_> = answer
        .iter()
        .copied()
        .filter(|(k, _)| *k != "csrf")
        .collect();
    let (status, _) = post_answer(&server, &session, "ask_deploy", &without).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let mut wrong = answer.to_vec();
    wrong[0] = ("csrf", "forged-token");
    let (status, _) = post_answer(&server, &session, "ask_deploy", &wrong).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = post(
        &server,
        &session,
        "/asks/ask_deploy",
        Some("https://evil.example"),
        &answer,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // A value out of range: the form again, the error beside the field.
    let (status, page) = post_answer(&server, &session, "ask_deploy", &answer).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let error = field_error(&page, "replicas");
    assert!(
        error.contains("Replicas"),
        "the error names the field: {error}"
    );
    assert!(
        page.contains("value=\"9\""),
        "what the person typed is kept"
    );
    let row = row_of(&store, "ask_deploy").await;
    assert_eq!(
        row.status,
        AskStatus::Pending,
        "a refused answer stores nothing"
    );

    let mut right = answer.to_vec();
    right[2] = ("f.replicas", "3");
    let (status, _) = post_answer(&server, &session, "ask_deploy", &right).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let row = row_of(&store, "ask_deploy").await;
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(row.answered_via.as_deref(), Some("web"));
    assert_eq!(row.answered_by.as_deref(), Some("alice"));
    let outcome = askgate_mcp::stored::form_outcome(&row.ask.request, row.reply.as_ref())
        .expect("readable")
        .expect("settled");
    let values = match outcome {
        askgate_core::Outcome::Accepted { values } => values,
        other => panic!("expected accepted, got {other:?}"),
    };
    let json: Json = serde_json::to_value(&values).expect("json");
    assert_eq!(json["replicas"]["value"], json!(3));
    assert_eq!(json["env"]["value"], json!("prod"));
    assert_eq!(
        json["window"]["value"]["from"],
        json!("2026-12-01T09:00:00+01:00")
    );

    // Settled: the page shows the outcome; a second answer does not apply.
    let (status, page) = get(&server, &session, "/asks/ask_deploy").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("answered") && page.contains("alice"),
        "{page}"
    );
    let (status, _) = post_answer(&server, &session, "ask_deploy", &right).await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn an_agents_token_does_not_sign_in_to_the_inbox() {
    let server = start().await;
    park(&server, "ask_agent", "ci-agent").await;
    let refused = post_sign_in(&server, AGENT).await;
    assert_eq!(
        refused.status(),
        StatusCode::UNAUTHORIZED,
        "refused exactly like an unknown token"
    );
    assert!(cookie(&refused, "askgate_session").is_none());
    let page = refused.text().await.expect("html");
    assert!(page.contains("That token signs nobody in."), "{page}");
}

#[tokio::test]
async fn a_person_sees_only_the_asks_of_the_principals_they_answer_for() {
    let server = start().await;
    park(&server, "ask_alice", "alice").await;
    park(&server, "ask_bob", "bob").await;
    park(&server, "ask_agent", "ci-agent").await;
    let carol = sign_in(&server, CAROL).await;
    let (_, list) = get(&server, &carol, "/").await;
    assert!(
        list.contains("ask_alice") && list.contains("ask_agent") && !list.contains("ask_bob"),
        "{list}"
    );
    assert!(
        list.contains("carol"),
        "the page says who is signed in: {list}"
    );
    let (status, _) = get(&server, &carol, "/asks/ask_agent").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get(&server, &carol, "/asks/ask_bob").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_listing_of_several_principals_pages_through_all_of_them_once() {
    let server = start().await;
    let store = Store::open(&server.store_url).await.expect("opens");
    let start = Timestamp::now();
    let ask = Ask::new(form()).expect("askable");
    // 60 asks, alternating between carol's two principals, and bob's
    // between them: 50 on the first page, 10 on the second.
    for n in 0..90u32 {
        let principal = ["alice", "ci-agent", "bob"][n as usize % 3];
        let request = json!({"kind": "form", "ask": ask.to_record()});
        let at = start + Duration::from_secs(u64::from(n));
        let asked = asked_of(&format!("ask_{n:03}"), principal, request, at);
        store.park(&asked).await.expect("parks");
    }
    let carol = sign_in(&server, CAROL).await;
    let ids = |html: &str| -> Vec<String> {
        html.split("href=\"/asks/")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .map(str::to_owned)
            .collect()
    };
    let (_, first) = get(&server, &carol, "/").await;
    let first_ids = ids(&first);
    assert_eq!(first_ids.len(), 50, "{first_ids:?}");
    let next = first
        .split("class=\"next\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a link to the older asks")
        .replace("&amp;", "&");
    let (_, second) = get(&server, &carol, &next).await;
    let second_ids = ids(&second);
    assert_eq!(second_ids.len(), 10, "{second_ids:?}");
    assert!(!second.contains("class=\"next\""), "the last page");
    let mut seen: Vec<String> = first_ids.into_iter().chain(second_ids).collect();
    let newest_first = seen.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 60, "each of carol's asks once");
    let expected: Vec<String> = (0..90u32)
        .rev()
        .filter(|n| n % 3 != 2)
        .map(|n| format!("ask_{n:03}"))
        .collect();
    assert_eq!(newest_first, expected, "newest first, none of bob's");
}

#[tokio::test]
async fn the_generated_operator_token_is_in_a_file_only_its_owner_reads_and_never_on_stderr() {
    let server = start().await;
    assert_eq!(
        server.operator_file,
        std::path::PathBuf::from(format!(
            "{}.key.operator-token",
            server.store_url.trim_start_matches("sqlite://")
        )),
        "beside the key"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&server.operator_file)
            .expect("the file")
            .permissions()
            .mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "readable and writable by its owner only"
        );
    }
    assert!(server.operator_token.len() >= 32);
    let operator = sign_in(&server, &server.operator_token.clone()).await;
    let (status, page) = get(&server, &operator, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("(operator)"), "{page}");
    let said = server.process.log.all().join("\n");
    assert!(
        !said.contains(&server.operator_token),
        "the token reached stderr: {said}"
    );
}

#[tokio::test]
async fn a_person_sees_only_their_own_asks_and_the_operator_sees_all() {
    let server = start().await;
    park(&server, "ask_alice", "alice").await;
    park(&server, "ask_bob", "bob").await;
    let bob = sign_in(&server, BOB).await;
    let (_, list) = get(&server, &bob, "/").await;
    assert!(
        list.contains("ask_bob") && !list.contains("ask_alice"),
        "{list}"
    );
    let (status, _) = get(&server, &bob, "/asks/ask_alice").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another's ask is not shown, nor said to exist"
    );
    let operator = sign_in(&server, &server.operator_token.clone()).await;
    let (_, list) = get(&server, &operator, "/").await;
    assert!(
        list.contains("ask_bob") && list.contains("ask_alice"),
        "{list}"
    );
    let (_, filtered) = get(&server, &operator, "/?server=nowhere").await;
    assert!(!filtered.contains("ask_bob"), "filtered by server");
}

#[tokio::test]
async fn a_signed_link_opens_its_ask_once_for_its_person_only() {
    let server = start().await;
    let store = park(&server, "ask_link", "alice").await;
    let key = std::fs::read(format!(
        "{}.key",
        server.store_url.trim_start_matches("sqlite://")
    ))
    .expect("the key the inbox made");
    let signer = LinkSigner::new(key);
    let expires = Timestamp::now() + Duration::from_secs(600);
    let link = |nonce: &str| {
        format!(
            "{}/asks/ask_link?link={}",
            server.base,
            signer.sign("ask_link", expires, nonce)
        )
    };

    // Not signed in: the link opens that ask, and only that ask.
    let first = link("nonce-one");
    let opened = server.http.get(&first).send().await.expect("opens");
    assert_eq!(opened.status(), StatusCode::SEE_OTHER);
    let session = cookie(&opened, "askgate_session").expect("a session for the ask");
    let (status, page) = get(&server, &session, "/asks/ask_link").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Deploy web to production?"));
    assert!(
        page.contains("<strong>link:alice</strong>"),
        "the link's session is a person of its own, for alice's ask: {page}"
    );
    let (status, _) = get(&server, &session, "/").await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "a link's session sees its ask only"
    );

    // Used once: refused after.
    let again = server.http.get(&first).send().await.expect("a page");
    assert_eq!(again.status(), StatusCode::GONE);

    // Altered: refused.
    let altered = first.replace("nonce-one", "nonce-two");
    let refused = server.http.get(&altered).send().await.expect("a page");
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);

    // Opened by someone signed in as another principal: refused, audited.
    let bob = sign_in(&server, BOB).await;
    let mismatch = server
        .http
        .get(link("nonce-three"))
        .header(COOKIE, &bob)
        .send()
        .await
        .expect("a page");
    assert_eq!(mismatch.status(), StatusCode::FORBIDDEN);
    let audit = store.audit_of_ask("ask_link").await.expect("reads");
    assert_eq!(audit.len(), 1, "the refused opening is audited");
    assert_eq!(audit[0].entry.decision, Decision::Blocked);
    assert_eq!(audit[0].entry.answered_by.as_deref(), Some("bob"));
}

#[tokio::test]
async fn an_open_listing_hears_of_a_new_ask() {
    let server = start().await;
    let store = park(&server, "ask_first", "alice").await;
    let session = sign_in(&server, ALICE).await;
    let mut events = server
        .http
        .get(format!("{}/events", server.base))
        .header(COOKIE, &session)
        .send()
        .await
        .expect("the event stream");
    assert_eq!(events.status(), StatusCode::OK);
    assert!(
        events.headers()["content-type"]
            .to_str()
            .expect("text")
            .starts_with("text/event-stream")
    );
    drop(store);
    park(&server, "ask_second", "alice").await;
    let mut seen = String::new();
    let heard = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(chunk) = events.chunk().await.expect("a chunk") {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("event: changed") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(heard, Ok(true), "no change event: {seen:?}");
}

#[tokio::test]
async fn a_question_set_is_answered_or_skipped_on_the_page() {
    let server = start().await;
    let store = park_request(&server, "ask_set", "alice", question_set()).await;
    park_request(&server, "ask_skip", "alice", question_set()).await;
    let session = sign_in(&server, ALICE).await;

    let (status, page) = get(&server, &session, "/asks/ask_set").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Before the deploy:") && page.contains("Which regions?"));
    assert!(page.contains("type=\"checkbox\"") && page.contains("data-hotkey=\"p\""));
    assert!(
        page.contains("value=\"skip\""),
        "a question set can be skipped"
    );
    let csrf = hidden(&page, "csrf");
    let answer = [
        ("csrf", csrf.as_str()),
        ("action", "accept"),
        ("q.env", "prod"),
        ("q.regions", "us"),
        ("q.regions.other", "apac"),
    ];
    let (status, _) = post_answer(&server, &session, "ask_set", &answer).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let row = row_of(&store, "ask_set").await;
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(row.answered_via.as_deref(), Some("web"));
    let answers = &row.outcome.expect("an outcome")["answers"];
    let values = |i: usize| -> Vec<Json> {
        answers[i]["chosen"]
            .as_array()
            .expect("chosen")
            .iter()
            .map(|c| c["value"].clone())
            .collect()
    };
    assert_eq!(values(0), [json!("prod")]);
    assert_eq!(values(1), [json!("us"), json!("apac")]);
    let (_, settled) = get(&server, &session, "/asks/ask_set").await;
    assert!(
        settled.contains("Americas, apac"),
        "the settled page shows the answers as the person read them: {settled}"
    );

    let (_, page) = get(&server, &session, "/asks/ask_skip").await;
    let csrf = hidden(&page, "csrf");
    let skip = [("csrf", csrf.as_str()), ("action", "skip")];
    let (status, _) = post_answer(&server, &session, "ask_skip", &skip).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let row = row_of(&store, "ask_skip").await;
    assert_eq!(row.status, AskStatus::Skipped);
    let answers = &row.outcome.expect("an outcome")["answers"];
    assert_eq!(
        answers[0]["chosen"][0]["value"], "staging",
        "the pre-picked answers stand"
    );
}
