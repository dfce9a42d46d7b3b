//! The inbox page in process: its router called as a service
//! (`tower::ServiceExt::oneshot`), no port and no process, over a scratch
//! SQLite store — sign-in, whose asks a person sees, answering (checked,
//! applied once), a decline recorded as the person's answer, signed links,
//! and the status each refusal carries.

use std::time::Duration;

use askgate_core::{Ask, LinkSigner};
use askgate_inbox::{Inbox, Operator, People, Person};
use askgate_store::{AskRow, AskStatus, NewAsk};
use askgate_testkit::TempStore;
use askgate_testkit::page::{field_error, hidden, set_cookie};
use axum::body::Body;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE, LOCATION, ORIGIN, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, Method, Request, StatusCode};
use jiff::Timestamp;
use serde_json::json;
use tower::ServiceExt;

mod arguments;

/// Where the inbox is served from, as its pages' posts say.
const BASE: &str = "http://127.0.0.1:7878";
const OPERATOR: &str = "operator-token-0123456789abcdef";
const ALICE: &str = "alice-token-0123456789abcdef";
const CAROL: &str = "carol-token-0123456789abcdef";
/// The key links are signed with.
const KEY: &[u8] = b"a link key of 32 bytes, for tests";

/// The inbox over a fresh store, for the operator, alice (answering for
/// the principal alice) and carol (for alice and ci-agent).
struct Page {
    inbox: Inbox,
    store: TempStore,
}

/// A response, read.
struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Reply {
    fn location(&self) -> &str {
        self.headers
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }
}

impl Page {
    async fn new() -> Page {
        let store = TempStore::open().await;
        let people = People::default()
            .with_token(OPERATOR, Person::operator("ops"))
            .with_token(ALICE, answering_for("alice", &["alice"]))
            .with_token(CAROL, answering_for("carol", &["alice", "ci-agent"]));
        let inbox = Inbox::new(
            store.store().clone(),
            people,
            LinkSigner::new(KEY),
            &format!("{BASE}/"),
        )
        .expect("an inbox");
        Page { inbox, store }
    }

    /// `request`, through the inbox's router.
    async fn send(&self, request: Request<Body>) -> Reply {
        let response = self
            .inbox
            .router()
            .oneshot(request)
            .await
            .expect("the router answers");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("a body");
        Reply {
            status,
            headers,
            body: String::from_utf8(bytes.to_vec()).expect("text"),
        }
    }

    /// GET `path` with the cookie `session` (`name=value`), if any.
    async fn get(&self, session: Option<&str>, path: &str) -> Reply {
        let mut request = Request::get(path);
        if let Some(session) = session {
            request = request.header(COOKIE, session);
        }
        self.send(request.body(Body::empty()).expect("a request"))
            .await
    }

    /// POST `form` to `path` with the cookie `session`, from `origin`.
    async fn post(&self, session: &str, origin: &str, path: &str, form: &[(&str, &str)]) -> Reply {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(COOKIE, session)
            .header(ORIGIN, origin)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .expect("a request");
        self.send(request).await
    }

    /// Post the sign-in form with `token` as a browser does: with the
    /// sign-in page's cookie and CSRF token, from `origin`.
    async fn sign_in_from(&self, origin: &str, token: &str) -> Reply {
        let form = self.get(None, "/login").await;
        let login = set_cookie(&form.headers, "askgate_login").expect("a sign-in cookie");
        let csrf = hidden(&form.body, "csrf");
        let fields = [("csrf", csrf.as_str()), ("token", token), ("next", "/")];
        self.post(&login, origin, "/login", &fields).await
    }

    /// Sign in with `token`: the session cookie.
    async fn sign_in(&self, token: &str) -> String {
        let signed = self.sign_in_from(BASE, token).await;
        assert_eq!(signed.status, StatusCode::SEE_OTHER, "{}", signed.body);
        set_cookie(&signed.headers, "askgate_session").expect("a session cookie")
    }

    /// A page with the deploy ask `ask_deploy` parked for alice, and alice
    /// signed in: the page and her session cookie.
    async fn with_alices_deploy() -> (Page, String) {
        let page = Page::new().await;
        page.park("ask_deploy", "alice").await;
        let alice = page.sign_in(ALICE).await;
        (page, alice)
    }

    /// Park the deploy ask `id` for `principal`.
    async fn park(&self, id: &str, principal: &str) {
        let ask = Ask::new(deploy_form()).expect("askable");
        let request = json!({"kind": "form", "ask": ask.to_record()});
        self.store
            .park(&asked(id, principal, request))
            .await
            .expect("parks");
    }

    async fn row(&self, id: &str) -> AskRow {
        self.store.ask(id).await.expect("reads").expect("there")
    }

    /// Post `fields` as the answer to `id`, with the CSRF token of its
    /// page.
    async fn answer(&self, session: &str, id: &str, fields: &[(&str, &str)]) -> Reply {
        let path = format!("/asks/{id}");
        let page = self.get(Some(session), &path).await;
        let csrf = hidden(&page.body, "csrf");
        let mut form = vec![("csrf", csrf.as_str())];
        form.extend_from_slice(fields);
        self.post(session, BASE, &path, &form).await
    }
}

fn answering_for(name: &str, principals: &[&str]) -> Person {
    Person {
        name: name.to_owned(),
        answers_for: principals.iter().map(|p| (*p).to_owned()).collect(),
        operator: false,
        groups: Vec::new(),
    }
}

fn deploy_form() -> askgate_core::Form {
    serde_json::from_value(json!({
        "message": "Deploy web to production?",
        "fields": [
            {"id": "replicas", "title": "Replicas", "type": "integer", "minimum": 1, "maximum": 5, "default": 2},
            {"id": "env", "title": "Environment", "type": "choice",
             "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]}
        ]
    }))
    .expect("a form")
}

/// The deployer's ask `id` of `principal`, parked now.
fn asked(id: &str, principal: &str, request: serde_json::Value) -> NewAsk {
    NewAsk {
        server: Some("deployer".into()),
        tool: Some("deploy".into()),
        risk: Some("high_write".into()),
        ..askgate_testkit::new_ask(id, principal, request, Timestamp::now())
    }
}

#[tokio::test]
async fn signed_out_a_page_sends_its_reader_to_sign_in_and_the_event_stream_is_refused() {
    let page = Page::new().await;
    let listing = page.get(None, "/").await;
    assert_eq!(listing.status, StatusCode::SEE_OTHER);
    assert_eq!(listing.location(), "/login?next=%2F");
    let ask = page.get(None, "/asks/ask_x").await;
    assert_eq!(ask.status, StatusCode::SEE_OTHER);
    assert_eq!(
        ask.location(),
        "/login?next=%2Fasks%2Fask_x",
        "back to the ask after"
    );
    let events = page.get(None, "/events").await;
    assert_eq!(events.status, StatusCode::UNAUTHORIZED);
    assert!(events.body.contains("sign in"), "{}", events.body);
}

#[tokio::test]
async fn a_persons_token_signs_in_and_any_other_is_refused_with_401() {
    let page = Page::new().await;
    let refused = page.sign_in_from(BASE, "not-a-token-at-all-000000").await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(set_cookie(&refused.headers, "askgate_session").is_none());
    assert!(refused.body.contains("That token signs nobody in."));
    assert!(
        !refused.body.contains("not-a-token-at-all"),
        "the token is never shown back"
    );
    assert!(
        set_cookie(&refused.headers, "askgate_login").is_some(),
        "the form again, with a fresh token"
    );

    let signed = page.sign_in_from(BASE, ALICE).await;
    assert_eq!(signed.status, StatusCode::SEE_OTHER);
    assert_eq!(signed.location(), "/");
    let session = set_cookie(&signed.headers, "askgate_session").expect("a session");
    let listing = page.get(Some(&session), "/").await;
    assert_eq!(listing.status, StatusCode::OK);
    assert!(listing.body.contains("Signed in as <strong>alice</strong>"));
}

#[tokio::test]
async fn a_sign_in_from_another_origin_is_refused_with_403() {
    let page = Page::new().await;
    let refused = page.sign_in_from("https://evil.example", ALICE).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(set_cookie(&refused.headers, "askgate_session").is_none());
    assert!(
        refused.body.contains("posted from https://evil.example"),
        "{}",
        refused.body
    );
}

#[tokio::test]
async fn a_sign_in_without_its_forms_token_is_refused_with_403() {
    let page = Page::new().await;
    let form = page.get(None, "/login").await;
    let login = set_cookie(&form.headers, "askgate_login").expect("a sign-in cookie");
    let fields = [("csrf", "another-forms-token"), ("token", ALICE)];
    let refused = page.post(&login, BASE, "/login", &fields).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.body.contains("security token did not match"));
}

#[tokio::test]
async fn the_listing_holds_only_the_pending_asks_of_the_persons_principals() {
    let page = Page::new().await;
    page.park("ask_alice", "alice").await;
    page.park("ask_agent", "ci-agent").await;
    page.park("ask_bob", "bob").await;
    page.park("ask_done", "alice").await;
    let alice = page.sign_in(ALICE).await;
    let declined = page
        .answer(&alice, "ask_done", &[("action", "decline")])
        .await;
    assert_eq!(declined.status, StatusCode::SEE_OTHER);

    let listed = page.get(Some(&alice), "/").await.body;
    assert!(listed.contains("ask_alice"), "{listed}");
    for other in ["ask_agent", "ask_bob", "ask_done"] {
        assert!(!listed.contains(other), "alice does not see {other}");
    }
    let carol = page.sign_in(CAROL).await;
    let listed = page.get(Some(&carol), "/").await.body;
    assert!(listed.contains("ask_alice") && listed.contains("ask_agent"));
    assert!(!listed.contains("ask_bob") && !listed.contains("ask_done"));
    let operator = page.sign_in(OPERATOR).await;
    let listed = page.get(Some(&operator), "/").await.body;
    assert!(listed.contains("ask_bob") && listed.contains("ask_agent"));
    let settled = page.get(Some(&alice), "/?status=settled").await.body;
    assert!(settled.contains("ask_done") && !settled.contains("ask_alice"));
}

#[tokio::test]
async fn an_ask_of_a_principal_the_person_does_not_answer_for_is_not_found() {
    let page = Page::new().await;
    page.park("ask_bob", "bob").await;
    let alice = page.sign_in(ALICE).await;
    let shown = page.get(Some(&alice), "/asks/ask_bob").await;
    assert_eq!(shown.status, StatusCode::NOT_FOUND);
    assert!(shown.body.contains("No ask ask_bob for you."));
    let alices_csrf = hidden(&page.get(Some(&alice), "/").await.body, "csrf");
    let form = [("csrf", alices_csrf.as_str()), ("action", "decline")];
    let answered = page.post(&alice, BASE, "/asks/ask_bob", &form).await;
    assert_eq!(answered.status, StatusCode::NOT_FOUND);
    assert_eq!(page.row("ask_bob").await.status, AskStatus::Pending);
}

#[tokio::test]
async fn a_wrong_answer_is_refused_with_422_naming_the_field_and_stores_nothing() {
    let (page, alice) = Page::with_alices_deploy().await;
    let fields = [("action", "accept"), ("f.replicas", "9"), ("f.env", "prod")];
    let refused = page.answer(&alice, "ask_deploy", &fields).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    let error = field_error(&refused.body, "replicas");
    assert!(
        error.contains("Replicas"),
        "the error names the field: {error}"
    );
    assert!(
        field_error(&refused.body, "env").is_empty(),
        "only the wrong field has an error"
    );
    assert!(
        refused.body.contains("value=\"9\""),
        "what was typed is kept"
    );
    assert_eq!(page.row("ask_deploy").await.status, AskStatus::Pending);
}

#[tokio::test]
async fn an_answer_is_applied_once_and_a_second_is_refused_with_409() {
    let (page, alice) = Page::with_alices_deploy().await;
    let first = [("action", "accept"), ("f.replicas", "3"), ("f.env", "prod")];
    let answered = page.answer(&alice, "ask_deploy", &first).await;
    assert_eq!(answered.status, StatusCode::SEE_OTHER);
    assert_eq!(answered.location(), "/asks/ask_deploy");
    let row = page.row("ask_deploy").await;
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(row.answered_by.as_deref(), Some("alice"));
    assert_eq!(row.answered_via.as_deref(), Some("web"));

    let carol = page.sign_in(CAROL).await;
    let second = [
        ("action", "accept"),
        ("f.replicas", "5"),
        ("f.env", "staging"),
    ];
    let refused = page.answer(&carol, "ask_deploy", &second).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert!(
        refused
            .body
            .contains("This ask is <strong>answered</strong>, by alice"),
        "{}",
        refused.body
    );
    let after = page.row("ask_deploy").await;
    assert_eq!(after.answered_by.as_deref(), Some("alice"));
    assert_eq!(after.reply, row.reply, "the first answer stands");
}

#[tokio::test]
async fn a_decline_settles_the_ask_as_the_persons_answer() {
    let (page, alice) = Page::with_alices_deploy().await;
    // Nothing else filled in: a decline needs no valid field.
    let declined = page
        .answer(
            &alice,
            "ask_deploy",
            &[("action", "decline"), ("f.replicas", "9")],
        )
        .await;
    assert_eq!(declined.status, StatusCode::SEE_OTHER);
    let row = page.row("ask_deploy").await;
    assert_eq!(row.status, AskStatus::Declined);
    assert_eq!(row.answered_by.as_deref(), Some("alice"));
    let shown = page.get(Some(&alice), "/asks/ask_deploy").await;
    assert_eq!(shown.status, StatusCode::OK);
    assert!(
        shown
            .body
            .contains("This ask is <strong>declined</strong>, by alice")
    );
}

#[tokio::test]
async fn an_unknown_action_is_refused_with_422_and_stores_nothing() {
    let (page, alice) = Page::with_alices_deploy().await;
    let refused = page
        .answer(&alice, "ask_deploy", &[("action", "approve-all")])
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.body.contains("expected accept, decline or skip"));
    assert!(
        !refused.body.contains("approve-all"),
        "the value is not echoed"
    );
    assert_eq!(page.row("ask_deploy").await.status, AskStatus::Pending);
}

#[tokio::test]
async fn an_answer_without_the_sessions_token_or_from_another_origin_is_refused_with_403() {
    let (page, alice) = Page::with_alices_deploy().await;
    let path = "/asks/ask_deploy";
    let csrf = hidden(&page.get(Some(&alice), path).await.body, "csrf");
    let without = page
        .post(&alice, BASE, path, &[("action", "decline")])
        .await;
    assert_eq!(without.status, StatusCode::FORBIDDEN);
    assert!(without.body.contains("security token"), "{}", without.body);
    let forged = [("csrf", "forged-token"), ("action", "decline")];
    let forged = page.post(&alice, BASE, path, &forged).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let form = [("csrf", csrf.as_str()), ("action", "decline")];
    let elsewhere = page.post(&alice, "https://evil.example", path, &form).await;
    assert_eq!(elsewhere.status, StatusCode::FORBIDDEN);
    assert!(elsewhere.body.contains("posted from https://evil.example"));
    assert_eq!(page.row("ask_deploy").await.status, AskStatus::Pending);
}

#[tokio::test]
async fn signing_out_ends_the_session() {
    let page = Page::new().await;
    let alice = page.sign_in(ALICE).await;
    let csrf = hidden(&page.get(Some(&alice), "/").await.body, "csrf");
    let out = page
        .post(&alice, BASE, "/logout", &[("csrf", csrf.as_str())])
        .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert_eq!(out.location(), "/login");
    let after = page.get(Some(&alice), "/").await;
    assert_eq!(after.status, StatusCode::SEE_OTHER, "signed out");
}

#[tokio::test]
async fn a_signed_link_opens_its_ask_once() {
    let page = Page::new().await;
    page.park("ask_link", "alice").await;
    let signer = LinkSigner::new(KEY);
    let expires = Timestamp::now() + Duration::from_secs(600);
    let link = format!(
        "/asks/ask_link?link={}",
        signer.sign("ask_link", expires, "nonce-one")
    );
    let opened = page.get(None, &link).await;
    assert_eq!(opened.status, StatusCode::SEE_OTHER);
    assert_eq!(opened.location(), "/asks/ask_link");
    let session = set_cookie(&opened.headers, "askgate_session").expect("a session");
    let shown = page.get(Some(&session), "/asks/ask_link").await;
    assert_eq!(shown.status, StatusCode::OK);
    assert!(shown.body.contains("<strong>link:alice</strong>"));

    let again = page.get(None, &link).await;
    assert_eq!(again.status, StatusCode::GONE);
    assert!(again.body.contains("already used"));
    let altered = page
        .get(None, &link.replace("nonce-one", "nonce-two"))
        .await;
    assert_eq!(altered.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn the_operator_extractor_takes_an_operators_bearer_token_only() {
    let page = Page::new().await;
    let app = axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(|Operator(person): Operator| async move { person.name }),
        )
        .with_state(page.inbox.clone());
    let scrape = |token: Option<&str>| {
        let mut request = Request::get("/metrics");
        if let Some(token) = token {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        app.clone()
            .oneshot(request.body(Body::empty()).expect("a request"))
    };
    let anonymous = scrape(None).await.expect("answers");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(anonymous.headers()[WWW_AUTHENTICATE], "Bearer");
    let alice = scrape(Some(ALICE)).await.expect("answers");
    assert_eq!(
        alice.status(),
        StatusCode::UNAUTHORIZED,
        "a person who is no operator"
    );
    let operator = scrape(Some(OPERATOR)).await.expect("answers");
    assert_eq!(operator.status(), StatusCode::OK);
}

#[tokio::test]
async fn an_inbox_url_that_is_not_http_is_refused_naming_its_scheme() {
    let store = TempStore::open().await;
    let made = Inbox::new(
        store.store().clone(),
        People::default(),
        LinkSigner::new(KEY),
        "ftp://inbox.example/",
    );
    let error = made.expect_err("not http").to_string();
    assert_eq!(
        error,
        "the inbox URL \"ftp://inbox.example/\" is ftp:, expected http: or https:"
    );
}

#[tokio::test]
async fn an_answer_is_dated_on_the_inbox_clock_not_the_systems() {
    let mut page = Page::new().await;
    // A minute ahead of the system's time, within the ask's life.
    let at = Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(60))
        .expect("in range");
    let at = Timestamp::from_second(at.as_second()).expect("whole seconds");
    page.inbox = page
        .inbox
        .clone()
        .with_clock(askgate_testkit::clock::ManualClock::starting_at(at));
    page.park("ask_deploy", "alice").await;
    let alice = page.sign_in(ALICE).await;
    let answer = [("action", "accept"), ("f.replicas", "3"), ("f.env", "prod")];
    let answered = page.answer(&alice, "ask_deploy", &answer).await;
    assert_eq!(answered.status, StatusCode::SEE_OTHER);
    assert_eq!(page.row("ask_deploy").await.settled_at, Some(at));
}

#[tokio::test]
async fn an_answer_the_store_fails_to_apply_is_kept_in_its_page_and_sent_again_from_it() {
    let (page, alice) = Page::with_alices_deploy().await;
    // The store refuses every change of an ask, as one out of reach does.
    let pool = sqlx::sqlite::SqlitePool::connect(page.store.url())
        .await
        .expect("connects");
    sqlx::query(
        "CREATE TRIGGER out_of_reach BEFORE UPDATE ON asks \
         BEGIN SELECT RAISE(ABORT, 'the store is out of reach'); END",
    )
    .execute(&pool)
    .await
    .expect("breaks the store");
    let typed = [
        ("action", "accept"),
        ("f.replicas", "4"),
        ("f.env", "staging"),
    ];
    let failed = page.answer(&alice, "ask_deploy", &typed).await;
    assert_eq!(failed.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        failed.body.contains("Your answer was not applied")
            && failed.body.contains("Send my answer again"),
        "{}",
        failed.body
    );
    assert_eq!(page.row("ask_deploy").await.status, AskStatus::Pending);

    // What was typed is in the page, to be sent again as it was.
    let kept: Vec<(&str, String)> = ["csrf", "action", "f.replicas", "f.env"]
        .into_iter()
        .map(|name| (name, hidden(&failed.body, name)))
        .collect();
    assert_eq!(kept[2].1, "4");
    assert_eq!(kept[3].1, "staging");
    sqlx::query("DROP TRIGGER out_of_reach")
        .execute(&pool)
        .await
        .expect("mends the store");
    let form: Vec<(&str, &str)> = kept.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let sent = page.post(&alice, BASE, "/asks/ask_deploy", &form).await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.body);
    let row = page.row("ask_deploy").await;
    assert_eq!(row.status, AskStatus::Answered);
    let reply = serde_json::to_string(&row.reply).expect("JSON");
    assert!(
        reply.contains("staging"),
        "the answer typed before: {reply}"
    );
}

#[tokio::test]
async fn the_sweep_forgets_spent_tokens_past_their_expiry_and_keeps_the_others() {
    let store = TempStore::open().await;
    let start = Timestamp::from_second(1_800_000_000).expect("in range");
    let later = |s: i64| {
        start
            .checked_add(jiff::SignedDuration::from_secs(s))
            .expect("in range")
    };
    for (nonce, expires) in [("spent", later(60)), ("live", later(3600))] {
        assert!(
            store
                .consume_token(nonce, expires, start)
                .await
                .expect("consumes")
        );
    }
    let clock = askgate_testkit::clock::ManualClock::starting_at(later(120));
    let sweeping = tokio::spawn(askgate_inbox::expiry::sweep(store.store().clone(), clock));
    askgate_testkit::within("the spent token to be forgotten", async {
        while store.token_consumed("spent").await.expect("reads") {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        store.token_consumed("live").await.expect("reads"),
        "still good: kept"
    );
    sweeping.abort();
}

#[tokio::test]
async fn live_pages_are_served_up_to_their_cap_and_one_that_closes_makes_room() {
    let page = Page::new().await;
    let session = page.sign_in(ALICE).await;
    let open = |session: String| {
        let router = page.inbox.router();
        async move {
            let request = Request::get("/events")
                .header(COOKIE, session)
                .body(Body::empty())
                .expect("a request");
            router.oneshot(request).await.expect("the router answers")
        }
    };
    // Each response kept is a page still open.
    let mut pages = Vec::new();
    for _ in 0..askgate_inbox::MOST_LIVE_PAGES {
        let response = open(session.clone()).await;
        assert_eq!(response.status(), StatusCode::OK);
        pages.push(response);
    }
    let refused = open(session.clone()).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().contains_key("retry-after"));
    // A page closes: its stream ends, and another may open.
    drop(pages.pop());
    let again = askgate_testkit::within("room for a page", async {
        loop {
            let response = open(session.clone()).await;
            if response.status() == StatusCode::OK {
                return response;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    pages.push(again);
}
