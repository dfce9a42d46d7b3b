//! The gateway over Streamable HTTP: bearer tokens name the principal,
//! sessions belong to the principal that opened them, and asks are bound
//! to it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use askgate_store::Store;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::json;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";
/// What the example upstream writes once its ask outside any call ended
/// (`askgate_conformance::example_upstream::ASKED_LATER`).
const ASKED_LATER: &str = "askgate-example-upstream: ask_name_later:";
/// A person of the inbox (not an agent: no MCP token).
const CAROL: &str = "carol-token-0123456789";

/// The example upstream (a binary of this package: cargo builds it for
/// these tests).
fn upstream() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_askgate-example-upstream"))
}

/// A gateway on a free loopback port; killed on drop.
struct Running {
    child: Child,
    url: String,
    store: String,
    dir: PathBuf,
    /// What it (and its upstream) wrote to stderr.
    said: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Running {
    /// The first line of stderr that contains `text`, once written.
    async fn line_with(&self, text: &str) -> String {
        let found = async {
            loop {
                let said = self.said.lock().expect("not poisoned").clone();
                if let Some(line) = said.into_iter().find(|l| l.contains(text)) {
                    return line;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), found)
            .await
            .expect("the line is written")
    }

    /// `askgate asks ARGS` as carol, a person, with the gateway's config.
    fn as_carol(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_askgate"))
            .arg("asks")
            .args(args)
            .arg("--config")
            .arg(self.dir.join("askgate.toml"))
            .env("ASKGATE_TOKEN", CAROL)
            .output()
            .expect("askgate runs")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start() -> Running {
    start_with("")
}

/// A gateway with `extra` added to its config.
fn start_with(extra: &str) -> Running {
    let dir = std::env::temp_dir().join(format!(
        "askgate-http-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond()
    ));
    std::fs::create_dir_all(&dir).expect("scratch");
    let store = format!("sqlite://{}", dir.join("s.db").display());
    let config = dir.join("askgate.toml");
    std::fs::write(
        &config,
        format!(
            "store = {store:?}\n{extra}\n\n[[upstreams]]\nname = \"notes\"\ncommand = {:?}\n\n\
             [[principals]]\nname = \"alice\"\ntoken = {ALICE:?}\n\n\
             [[principals]]\nname = \"bob\"\ntoken = {BOB:?}\n\n\
             [[people]]\nname = \"carol\"\ntoken = {CAROL:?}\nanswers_for = [\"*\"]\n",
            upstream().display().to_string()
        ),
    )
    .expect("writes the config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(["gateway", "--config"])
        .arg(&config)
        .args(["--listen", "127.0.0.1:0"])
        .env("ASKGATE_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the gateway starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("the gateway says where it listens")
            .expect("a line");
        if let Some(url) = line.split("Streamable HTTP at ").nth(1) {
            break url.trim().to_owned();
        }
    };
    // Keep draining stderr so the gateway never blocks on it.
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = said.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            kept.lock().expect("not poisoned").push(line);
        }
    });
    Running {
        child,
        url,
        store,
        dir,
        said,
    }
}

#[derive(Clone)]
struct NoAsks;

impl ClientHandler for NoAsks {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("http-test", "1.0"),
        )
    }
}

async fn connect(
    url: &str,
    token: &str,
) -> rmcp::service::RunningService<rmcp::service::RoleClient, NoAsks> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    NoAsks
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("connects with a token")
}

#[tokio::test]
async fn tokens_name_the_principal_and_sessions_stay_with_it() {
    let gateway = start();
    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});

    // No token, or a wrong one: 401, and nothing served.
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

    // Alice opens a session; Bob cannot use it.
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

    // Through the rmcp client: Alice's parked ask is Alice's.
    let alice = connect(&gateway.url, ALICE).await;
    let tools = alice.list_all_tools().await.expect("tools");
    assert!(tools.iter().any(|t| t.name == "notes__delete_all_notes"));
    let result = alice
        .call_tool(CallToolRequestParams::new("notes__delete_all_notes"))
        .await
        .expect("a result");
    assert_eq!(result.is_error, Some(true), "parked: no elicitation");
    let store = Store::open(&gateway.store).await.expect("opens");
    let pending = store.pending(10, None).await.expect("pending");
    assert_eq!(pending.asks.len(), 1);
    assert_eq!(pending.asks[0].ask.principal, "alice");

    // Metrics: behind the same token; the pending ask and no upstream call.
    let unauthorized = http
        .get(gateway.url.replace("/mcp", "/metrics"))
        .send()
        .await
        .expect("answers");
    assert_eq!(unauthorized.status(), 401);
    let metrics = http
        .get(gateway.url.replace("/mcp", "/metrics"))
        .bearer_auth(ALICE)
        .send()
        .await
        .expect("answers")
        .text()
        .await
        .expect("text");
    assert!(metrics.contains("askgate_pending_asks 1"), "{metrics}");
    assert!(
        !metrics.contains("askgate_upstream_calls_total{"),
        "nothing was sent: {metrics}"
    );

    // The caller's confirm: true does not stand in (only a person
    // approves); a person answers the ask in the inbox, and the retry runs:
    // one decision, one answered upstream call.
    let mut params = CallToolRequestParams::new("notes__delete_all_notes");
    params.arguments = json!({"confirm": true}).as_object().cloned();
    let waiting = alice.call_tool(params.clone()).await.expect("a result");
    assert_eq!(waiting.is_error, Some(true), "still waiting for a person");
    let answered = gateway.as_carol(&[
        "answer",
        &pending.asks[0].ask.id,
        "--content",
        r#"{"confirm": true}"#,
    ]);
    assert!(answered.status.success(), "{answered:?}");
    let result = alice.call_tool(params).await.expect("a result");
    assert_ne!(result.is_error, Some(true));
    let metrics = http
        .get(gateway.url.replace("/mcp", "/metrics"))
        .bearer_auth(ALICE)
        .send()
        .await
        .expect("answers")
        .text()
        .await
        .expect("text");
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
}

/// A client that shows forms and never answers: notes when the gateway
/// withdraws what it showed.
#[derive(Clone, Default)]
struct Away {
    asked: std::sync::Arc<tokio::sync::Notify>,
    withdrawn: std::sync::Arc<tokio::sync::Notify>,
}

impl ClientHandler for Away {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("http-away", "1.0"))
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        cx: rmcp::service::RequestContext<rmcp::service::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.asked.notify_one();
        cx.ct.cancelled().await;
        self.withdrawn.notify_one();
        Err(rmcp::ErrorData::internal_error("withdrawn", None))
    }
}

#[tokio::test]
async fn a_call_cancelled_over_http_while_the_person_is_asked_is_never_sent() {
    let gateway = start();
    let away = Away::default();
    let config = StreamableHttpClientTransportConfig::with_uri(gateway.url.clone())
        .auth_header(ALICE.to_owned());
    let client = away
        .clone()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("connects");
    let mut params = CallToolRequestParams::new("notes__delete_all_notes");
    params.arguments = json!({"confirm": true}).as_object().cloned();
    let handle = client
        .peer()
        .send_request_with_option(
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params)),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .expect("sent");
    let wait = std::time::Duration::from_secs(30);
    tokio::time::timeout(wait, away.asked.notified())
        .await
        .expect("the person is asked");
    handle
        .cancel(Some("stopped".into()))
        .await
        .expect("cancels");
    tokio::time::timeout(wait, away.withdrawn.notified())
        .await
        .expect("the gateway withdraws its ask");
    let store = Store::open(&gateway.store).await.expect("opens");
    let audited = async {
        loop {
            if let Some(record) = store.audit_entries().await.expect("audit").pop() {
                return record.entry;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    let entry = tokio::time::timeout(wait, audited).await.expect("audited");
    assert_eq!(entry.decision, askgate_store::Decision::Blocked);
    assert!(
        entry.reason.contains("cancelled by the caller"),
        "{}",
        entry.reason
    );
    assert_eq!(entry.principal.as_deref(), Some("alice"));
    let pool = sqlx::sqlite::SqlitePool::connect(&gateway.store)
        .await
        .expect("connects");
    let calls: i64 = sqlx::query_scalar("SELECT count(*) FROM calls")
        .fetch_one(&pool)
        .await
        .expect("counts");
    assert_eq!(calls, 0, "nothing was sent upstream");
}

/// A person's client that shows forms: counts the asks shown to it and
/// accepts each, after reading it, with nothing changed (the pre-picked
/// answers).
#[derive(Clone, Default)]
struct Reader {
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ClientHandler for Reader {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("http-reader", "1.0"))
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _cx: rmcp::service::RequestContext<rmcp::service::RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let message = serde_json::to_value(&request).expect("json")["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.asked.lock().expect("not poisoned").push(message);
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        Ok(
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({})),
        )
    }
}

impl Reader {
    fn asked(&self) -> Vec<String> {
        self.asked.lock().expect("not poisoned").clone()
    }
}

async fn connect_reader(
    url: &str,
    token: &str,
    reader: &Reader,
) -> rmcp::service::RunningService<rmcp::service::RoleClient, Reader> {
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    reader
        .clone()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("connects with a token")
}

#[tokio::test]
async fn an_upstreams_ask_outside_any_call_reaches_only_a_lone_principal() {
    // ask_name_later says it only reads: taken at its word here.
    let gateway = start_with("trust_read_only_hints = true");
    let (alice, bob) = (Reader::default(), Reader::default());
    let alice_client = connect_reader(&gateway.url, ALICE, &alice).await;
    let bob_client = connect_reader(&gateway.url, BOB, &bob).await;
    // Two principals connected: the upstream's ask, after its call ended,
    // says nothing of whose it is — refused, shown to neither.
    let said = alice_client
        .call_tool(CallToolRequestParams::new("notes__ask_name_later"))
        .await
        .expect("a result");
    assert_ne!(said.is_error, Some(true), "{said:?}");
    let ended = gateway.line_with(ASKED_LATER).await;
    assert!(ended.contains("refused"), "{ended}");
    assert!(ended.contains("2 principals"), "{ended}");
    assert!(alice.asked().is_empty() && bob.asked().is_empty());
    // With bob gone, alice is the one principal: the ask reaches her.
    bob_client.cancel().await.expect("bob leaves");
    gateway.said.lock().expect("not poisoned").clear();
    let _ = alice_client
        .call_tool(CallToolRequestParams::new("notes__ask_name_later"))
        .await
        .expect("a result");
    let ended = gateway.line_with(ASKED_LATER).await;
    assert!(!ended.contains("refused"), "{ended}");
    assert_eq!(
        alice.asked().first().map(String::as_str),
        Some("What is your name?")
    );
}

#[tokio::test]
async fn an_intake_asked_once_is_once_per_principal_and_session() {
    let intake = "[[intake]]\ntool = \"read_note\"\nwhen = \"once\"\n\
                  [[intake.questions]]\nid = \"env\"\nprompt = \"Which environment?\"\n\
                  defaults = [\"staging\"]\noptions = [{value = \"staging\", label = \"Staging\"}, \
                  {value = \"prod\", label = \"Production\"}]\n\n\
                  [[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
    let gateway = start_with(intake);
    let read = || {
        let mut params = CallToolRequestParams::new("notes__read_note");
        params.arguments = json!({"name": "todo"}).as_object().cloned();
        params
    };
    let (alice, bob) = (Reader::default(), Reader::default());
    let alice_client = connect_reader(&gateway.url, ALICE, &alice).await;
    for _ in 0..2 {
        alice_client.call_tool(read()).await.expect("a result");
    }
    assert_eq!(
        alice.asked().len(),
        1,
        "once for alice: {:?}",
        alice.asked()
    );
    // Another principal, another session: asked once too.
    let bob_client = connect_reader(&gateway.url, BOB, &bob).await;
    for _ in 0..2 {
        bob_client.call_tool(read()).await.expect("a result");
    }
    assert_eq!(bob.asked().len(), 1, "once for bob: {:?}", bob.asked());
    assert_eq!(alice.asked().len(), 1, "alice is not asked for bob");
    // A new session of alice's is a new start.
    let again = Reader::default();
    let alice_again = connect_reader(&gateway.url, ALICE, &again).await;
    alice_again.call_tool(read()).await.expect("a result");
    assert_eq!(again.asked().len(), 1);
}
