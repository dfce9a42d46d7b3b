//! The gateway over Streamable HTTP: bearer tokens name the principal,
//! sessions belong to the principal that opened them, and asks are bound
//! to it.

use askgate_store::Store;
use askgate_testkit::gateway::{Listening, Setup, ledger};
use askgate_testkit::mcp::{cancel_once_asked, send_call};
use askgate_testkit::page::{hidden, set_cookie};
use askgate_testkit::person::accept;
use askgate_testkit::{Manner, Person, binaries};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

#[path = "../support/http_session.rs"]
mod http_session;
use http_session::HttpSession;

/// The express lane over HTTP: a call that needs no person answered as
/// JSON.
mod express;

/// A session's end.
mod sessions;

/// An upstream's ask outside any call, and an intake.
mod later;

/// Who approves what, where an agent acts for a person.
mod approvals;

/// MCP authorization: OAuth access tokens from a local authorization
/// server.
mod oauth;

/// Opaque tokens checked by the issuer, and principals named by scopes.
mod introspection;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";
/// What the example upstream writes once its ask outside any call ended
/// (`askgate_conformance::example_upstream::ASKED_LATER`).
const ASKED_LATER: &str = "askgate-example-upstream: ask_name_later:";
/// A person of the inbox (not an agent: no MCP token).
const CAROL: &str = "carol-token-0123456789";
/// An intake asked once per principal and session before `read_note`, a
/// read.
const INTAKE: &str = "[[intake]]\ntool = \"read_note\"\nwhen = \"once\"\n\
                      [[intake.questions]]\nid = \"env\"\nprompt = \"Which environment?\"\n\
                      defaults = [\"staging\"]\noptions = [{value = \"staging\", label = \"Staging\"}, \
                      {value = \"prod\", label = \"Production\"}]\n\n\
                      [[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
/// The inbox's operator, who alone reads `/metrics`.
const OPERATOR: &str = "operator-token-0123456789";

async fn start() -> Listening {
    start_with("").await
}

/// A gateway on a free loopback port with `extra` added to its config, the
/// principals alice and bob, and carol, who answers for everyone; its log
/// says each decision. Killed on drop.
async fn start_with(extra: &str) -> Listening {
    setup(extra).listen().await
}

/// How [`start_with`] starts the gateway, for a test to add to.
fn setup(extra: &str) -> Setup {
    Setup::new(binaries!())
        .config(extra)
        .tables(&format!(
            "[[principals]]\nname = \"alice\"\ntoken = {ALICE:?}\n\n\
             [[principals]]\nname = \"bob\"\ntoken = {BOB:?}\n\n\
             [[people]]\nname = \"carol\"\ntoken = {CAROL:?}\nanswers_for = [\"*\"]\n\n\
             [inbox]\nlisten = \"127.0.0.1:0\"\ntoken = {OPERATOR:?}\n"
        ))
        .logging("askgate_mcp=info")
}

/// A client of the gateway at `url` with the bearer `token`, for `person`.
async fn connect(url: &str, token: &str, person: &Person) -> RunningService<RoleClient, Person> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    person
        .clone()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("connects with a token")
}

/// A client that shows nothing.
fn no_asks() -> Person {
    Person::new(json!({})).named("http-test")
}

/// A person's client that shows forms and accepts each ask, after reading
/// it, with nothing changed (the pre-picked answers).
fn reader() -> Person {
    Person::with_forms()
        .named("http-reader")
        .in_manner(Manner::Person)
        .otherwise(accept(json!({})))
}

/// The gateway's metrics, as the operator reads them.
async fn metrics_of(http: &reqwest::Client, gateway: &Listening) -> String {
    http.get(gateway.url.replace("/mcp", "/metrics"))
        .bearer_auth(OPERATOR)
        .send()
        .await
        .expect("answers")
        .text()
        .await
        .expect("text")
}

#[tokio::test]
async fn tokens_name_the_principal_and_sessions_stay_with_it() {
    let gateway = start().await;
    let http = reqwest::Client::new();
    only_alices_token_opens_and_uses_her_session(&http, &gateway).await;

    // Through the rmcp client: Alice's parked ask is Alice's.
    let alice = connect(&gateway.url, ALICE, &no_asks()).await;
    let tools = alice.list_all_tools().await.expect("tools");
    assert!(tools.iter().any(|t| t.name == "delete_all_notes"));
    let result = alice
        .call_tool(CallToolRequestParams::new("delete_all_notes"))
        .await
        .expect("a result");
    assert_eq!(result.is_error, Some(true), "parked: no elicitation");
    let store = Store::open(gateway.store_url()).await.expect("opens");
    let pending = store.pending(10, None).await.expect("pending");
    assert_eq!(pending.asks.len(), 1);
    assert_eq!(pending.asks[0].ask.principal, "alice");

    metrics_behind_the_token_show_the_pending_ask(&http, &gateway).await;

    // The caller's confirm: true does not stand in (only a person
    // approves); a person answers the ask in the inbox, and the retry runs:
    // one decision, one answered upstream call.
    let mut params = CallToolRequestParams::new("delete_all_notes");
    params.arguments = json!({"confirm": true}).as_object().cloned();
    let waiting = alice.call_tool(params.clone()).await.expect("a result");
    assert_eq!(waiting.is_error, Some(true), "still waiting for a person");
    let answered = gateway.as_person(
        CAROL,
        &[
            "answer",
            &pending.asks[0].ask.id,
            "--content",
            r#"{"confirm": true}"#,
        ],
    );
    assert!(answered.status.success(), "{answered:?}");
    let result = alice.call_tool(params).await.expect("a result");
    assert_ne!(result.is_error, Some(true));
    let metrics = metrics_of(&http, &gateway).await;
    assert!(
        metrics.contains(r#"askgate_decisions_total{method="elicited"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"askgate_upstream_calls_total{server="notes",outcome="answered"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains("askgate_upstream_latency_seconds_count"),
        "{metrics}"
    );
    // The ask carol answered waited for her: its wait is observed once,
    // when the retry heard of it.
    assert!(
        metrics.contains(r#"askgate_ask_wait_seconds_count{outcome="answered"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_call_cancelled_over_http_while_the_person_is_asked_is_never_sent() {
    let gateway = start().await;
    let away = Person::with_forms()
        .named("http-away")
        .in_manner(Manner::Away);
    let client = connect(&gateway.url, ALICE, &away).await;
    let mut params = CallToolRequestParams::new("delete_all_notes");
    params.arguments = json!({"confirm": true}).as_object().cloned();
    let handle = send_call(client.peer(), params).await;
    // Stopped while the person is asked: the gateway withdraws its ask.
    cancel_once_asked(&away, handle, Some("stopped".into())).await;
    // The decision is in the audit once the gateway's handler says so.
    gateway.log().line_with(&["call decided", "blocked"]).await;
    let store = Store::open(gateway.store_url()).await.expect("opens");
    let entry = askgate_testkit::last_audited(&store).await;
    assert_eq!(entry.decision, askgate_store::Decision::Blocked);
    assert!(
        entry.reason.contains("cancelled by the caller"),
        "{}",
        entry.reason
    );
    assert_eq!(entry.principal.as_deref(), Some("alice"));
    let calls = ledger(gateway.store_url()).await.len();
    assert_eq!(calls, 0, "nothing was sent upstream");
    let metrics = metrics_of(&reqwest::Client::new(), &gateway).await;
    assert!(
        metrics.contains(r#"askgate_cancelled_calls_total{server="notes"} 1"#),
        "{metrics}"
    );
}

/// The gateway's count of its `--listen` sessions in `state` (awake,
/// resting), once it is `count`: the metrics, read until then.
async fn sessions_come_to(gateway: &Listening, state: &str, count: u64) {
    let http = reqwest::Client::new();
    let line = format!("askgate_http_sessions{{state=\"{state}\"}} {count}");
    askgate_testkit::within(&format!("{count} {state} sessions"), async {
        while !metrics_of(&http, gateway).await.lines().any(|l| l == line) {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
}

/// No token, or a wrong one: 401, and nothing served. Alice opens a
/// session; Bob cannot use it.
async fn only_alices_token_opens_and_uses_her_session(http: &reqwest::Client, gateway: &Listening) {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    for token in [None, Some("not-a-token-at-all-000")] {
        let mut request = http
            .post(&gateway.url)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("answers");
        assert_eq!(response.status(), 401, "{token:?}");
        assert!(response.headers().contains_key("www-authenticate"));
    }

    let opened = http
        .post(&gateway.url)
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(ALICE)
        .json(&initialize)
        .send()
        .await
        .expect("answers");
    assert!(opened.status().is_success(), "{}", opened.status());
    let session = opened
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .expect("text")
        .to_owned();
    let hijack = http
        .post(&gateway.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .bearer_auth(BOB)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .expect("answers");
    assert_eq!(hijack.status(), 404);
}

/// Metrics: behind the operator's token, not a principal's; one pending
/// ask, and no upstream call.
async fn metrics_behind_the_token_show_the_pending_ask(
    http: &reqwest::Client,
    gateway: &Listening,
) {
    let metrics = gateway.url.replace("/mcp", "/metrics");
    let unauthorized = http.get(&metrics).send().await.expect("answers");
    assert_eq!(unauthorized.status(), 401);
    let principal = http
        .get(&metrics)
        .bearer_auth(ALICE)
        .send()
        .await
        .expect("answers");
    assert_eq!(principal.status(), 401, "a principal read the metrics");
    let scraped = http
        .get(&metrics)
        .bearer_auth(OPERATOR)
        .send()
        .await
        .expect("answers");
    assert_eq!(
        scraped.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let metrics = scraped.text().await.expect("text");
    assert!(metrics.contains("askgate_pending_asks 1"), "{metrics}");
    assert!(
        !metrics.contains("askgate_upstream_calls_total{"),
        "nothing was sent: {metrics}"
    );
    let build = format!(
        "askgate_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    assert!(metrics.contains(&build), "{metrics}");
    assert!(metrics.ends_with("# EOF\n"), "{metrics}");
    // Its upstream listed its tools: alive and ready, on both listeners,
    // without a token; the inbox's serves the same metrics to the same one.
    let inbox = inbox_of(gateway).await;
    for base in [gateway.url.replace("/mcp", "/"), inbox.clone()] {
        assert_eq!(
            health(http, &format!("{base}healthz")).await,
            (200, "ok\n".into())
        );
        assert_eq!(
            health(http, &format!("{base}readyz")).await,
            (200, "ready\n".into())
        );
    }
    let beside = http
        .get(format!("{inbox}metrics"))
        .send()
        .await
        .expect("answers");
    assert_eq!(beside.status(), 401);
    let beside = http
        .get(format!("{inbox}metrics"))
        .bearer_auth(OPERATOR)
        .send()
        .await
        .expect("answers");
    assert_eq!(beside.status(), 200);
    assert!(beside.text().await.expect("text").contains(&build));
}

/// Where the gateway serves its inbox, as it says at its start.
async fn inbox_of(gateway: &Listening) -> String {
    let said = "wait in the inbox at ";
    let line = gateway.log().line_with(&[said]).await;
    let after = line.split(said).nth(1).unwrap_or_default();
    after
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// A probe's status and body, without a token.
async fn health(http: &reqwest::Client, url: &str) -> (u16, String) {
    let response = http.get(url).send().await.expect("answers");
    let status = response.status().as_u16();
    (status, response.text().await.expect("text"))
}

#[tokio::test]
async fn a_gateway_with_an_upstream_not_started_is_alive_and_not_ready() {
    // `true` exits at once: that upstream never answers its handshake, and
    // is tried again and again; notes starts.
    let gateway = Setup::new(binaries!())
        .config("")
        .tables(
            "[[upstreams]]\nname = \"gone\"\ncommand = \"true\"\n\n\
             [inbox]\nlisten = \"127.0.0.1:0\"\n",
        )
        .listen()
        .await;
    let http = reqwest::Client::new();
    let base = gateway.url.replace("/mcp", "/");
    assert_eq!(
        health(&http, &format!("{base}healthz")).await,
        (200, "ok\n".into())
    );
    let (status, body) = health(&http, &format!("{base}readyz")).await;
    assert_eq!(
        (status, body.as_str()),
        (503, "not ready: 1 of 2 upstreams has not started\n")
    );
}

#[tokio::test]
async fn an_ask_a_person_declines_on_the_inbox_page_shows_in_its_wait() {
    let gateway = setup("")
        .logging("askgate_mcp=info,askgate_gateway::metrics=debug")
        .listen()
        .await;
    let alice = connect(&gateway.url, ALICE, &no_asks()).await;
    let parked = alice
        .call_tool(CallToolRequestParams::new("delete_all_notes"))
        .await
        .expect("a result");
    assert_eq!(parked.is_error, Some(true), "parked: no elicitation");
    let store = Store::open(gateway.store_url()).await.expect("opens");
    let id = store.pending(10, None).await.expect("pending").asks[0]
        .ask
        .id
        .clone();
    // Carol says no on the page the gateway serves: it hears so at once,
    // with no retry of the call.
    let inbox = inbox_of(&gateway).await;
    // As a browser's, but showing each redirect.
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let session = sign_in(&http, &inbox, CAROL).await;
    let page = http
        .get(format!("{inbox}asks/{id}"))
        .header("cookie", &session)
        .send()
        .await
        .expect("the ask's page");
    let csrf = hidden(&page.text().await.expect("html"), "csrf");
    let declined = http
        .post(format!("{inbox}asks/{id}"))
        .header("cookie", &session)
        .header("origin", inbox.trim_end_matches('/'))
        .form(&[("csrf", csrf.as_str()), ("action", "decline")])
        .send()
        .await
        .expect("an answer");
    assert_eq!(declined.status(), 303);
    gateway
        .log()
        .line_with(&["an ask's wait for a person observed", &id])
        .await;
    let metrics = metrics_of(&http, &gateway).await;
    assert!(
        metrics.contains(r#"askgate_ask_wait_seconds_count{outcome="declined"} 1"#),
        "{metrics}"
    );
}

/// Sign in to the inbox at `inbox` with `token`, as a browser does: the
/// session cookie.
async fn sign_in(http: &reqwest::Client, inbox: &str, token: &str) -> String {
    let page = http
        .get(format!("{inbox}login"))
        .send()
        .await
        .expect("the sign-in page");
    let login = set_cookie(page.headers(), "askgate_login").expect("a sign-in cookie");
    let csrf = hidden(&page.text().await.expect("html"), "csrf");
    let signed = http
        .post(format!("{inbox}login"))
        .header("cookie", &login)
        .header("origin", inbox.trim_end_matches('/'))
        .form(&[("csrf", csrf.as_str()), ("token", token), ("next", "/")])
        .send()
        .await
        .expect("a sign-in post");
    assert_eq!(signed.status(), 303);
    set_cookie(signed.headers(), "askgate_session").expect("a session cookie")
}

#[tokio::test]
async fn a_webhook_post_to_a_closed_port_is_counted_as_failed() {
    // A loopback port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port");
    let gateway = start_with(&format!("[notify]\nwebhook = \"http://{closed}/hook\"\n")).await;
    let alice = connect(&gateway.url, ALICE, &no_asks()).await;
    let parked = alice
        .call_tool(CallToolRequestParams::new("delete_all_notes"))
        .await
        .expect("a result");
    assert_eq!(parked.is_error, Some(true), "parked: no elicitation");
    // Counted before it is logged.
    gateway.log().line_with(&["the webhook post failed"]).await;
    let metrics = metrics_of(&reqwest::Client::new(), &gateway).await;
    assert!(
        metrics.contains(r#"askgate_webhook_failures_total{event="parked"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_browser_page_of_another_origin_is_refused_and_the_allowed_ones_are_served() {
    let gateway = start_with(
        "[listen]\naddr = \"127.0.0.1:0\"\nallowed_origins = [\"https://app.example.com:*\"]",
    )
    .await;
    let http = reqwest::Client::new();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "page", "version": "1"}}
    });
    let status_from = async |origin: Option<&str>| {
        let mut request = http
            .post(&gateway.url)
            .bearer_auth(ALICE)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send().await.expect("answers").status().as_u16()
    };
    // A page elsewhere, even with a token the page got hold of.
    assert_eq!(status_from(Some("https://evil.example")).await, 403);
    assert_eq!(status_from(Some("null")).await, 403);
    // This machine's pages, the configured origin, and no browser at all.
    assert_eq!(status_from(Some("http://localhost:6274")).await, 200);
    assert_eq!(status_from(Some("https://app.example.com")).await, 200);
    assert_eq!(status_from(None).await, 200);
}

#[tokio::test]
async fn a_request_that_does_not_fit_is_answered_with_its_id_over_http_too() {
    let gateway = start().await;
    let session = HttpSession::open(&gateway.url, ALICE, "2025-11-25", json!({})).await;
    // Params of the wrong type: rmcp answered "method not found".
    let said: serde_json::Value = session
        .post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": 5}}))
        .await
        .json()
        .await
        .expect("a JSON answer");
    assert_eq!(said["id"], 5, "{said}");
    assert_eq!(said["error"]["code"], -32602, "{said}");
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("invalid params for tools/call:"),
        "{said}"
    );
    // Params that are no object: rmcp answered without the id.
    let said: serde_json::Value = session
        .post(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": "x"}))
        .await
        .json()
        .await
        .expect("a JSON answer");
    assert_eq!(said["id"], 6, "{said}");
    assert_eq!(said["error"]["code"], -32600, "{said}");
}

#[tokio::test]
async fn a_connection_past_the_listeners_cap_is_turned_away_and_the_log_says_so() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // Two connections at most; a client slow with its headers keeps one.
    let gateway = start_with("[limits]\nconnections = 2\nheader_timeout = \"5m\"\n").await;
    let addr = gateway
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connects");
        stream
            .write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
            .await
            .expect("writes");
        held.push(stream);
    }
    // Accepted after those two: past the cap.
    let mut third = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connects");
    let mut answer = String::new();
    askgate_testkit::within(
        "the answer to a connection past the cap",
        third.read_to_string(&mut answer),
    )
    .await
    .expect("reads");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let said = gateway
        .log()
        .line_with(&["the gateway serves as many connections as it may"])
        .await;
    assert!(said.contains("most=2"), "{said}");
    drop(held);
}
