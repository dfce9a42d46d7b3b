//! The gateway end to end: an rmcp client spawns `askgate gateway -- <the
//! example upstream>` and calls through it, as a desktop client would.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use askgate_store::{CallState, Decision, Store};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, CustomNotification,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value as Json, json};

const UPSTREAM: &str = "askgate-example-upstream";

/// The express lane beyond the happy path: upstream errors, cancels, an
/// upstream that dies, a large result.
#[path = "gateway/express_lane.rs"]
mod express_lane;

/// The example upstream (a binary of this package: cargo builds it for
/// these tests).
fn upstream() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_askgate-example-upstream"))
}

/// The trust rules end to end: a person's no, the caller's word, what no
/// person saw, a cancelled call.
#[path = "gateway/trust.rs"]
mod trust;

/// A person behind the client, answering from a script.
#[derive(Clone)]
struct Person {
    capabilities: Json,
    script: Arc<Mutex<VecDeque<ElicitResult>>>,
    asked: Arc<Mutex<Vec<Json>>>,
    told: Told,
    manner: Manner,
    /// Rung when an ask shown to this client is withdrawn.
    withdrawn: Arc<tokio::sync::Notify>,
}

/// How the client behind the gateway answers its asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Manner {
    /// As a person would: after reading it (a third of a second).
    Person,
    /// At once, as headless clients do (`claude -p`, `codex exec`).
    Headless,
    /// Not at all: the ask stays up until it is withdrawn.
    Away,
    /// With an error reply.
    Failing,
}

/// How long the person behind a test client takes to read an ask: longer
/// than the gateway's least time for a person's answer (250 ms).
const READING: std::time::Duration = std::time::Duration::from_millis(300);

/// The custom notifications a client was sent, as `{method, params}`.
#[derive(Clone, Default)]
struct Told {
    notifications: Arc<Mutex<Vec<Json>>>,
    arrived: Arc<tokio::sync::Notify>,
}

impl Told {
    /// The first notification, once one arrived (or the test's guard ends:
    /// then the test fails).
    async fn first(&self) -> Json {
        let wait = async {
            loop {
                let first = self
                    .notifications
                    .lock()
                    .expect("not poisoned")
                    .first()
                    .cloned();
                if let Some(first) = first {
                    return first;
                }
                self.arrived.notified().await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(60), wait)
            .await
            .expect("a notification arrives")
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(self.capabilities.clone()).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("person", "1.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked
            .lock()
            .expect("not poisoned")
            .push(serde_json::to_value(&request).expect("json"));
        match self.manner {
            Manner::Person => tokio::time::sleep(READING).await,
            Manner::Headless => {}
            Manner::Away => {
                cx.ct.cancelled().await;
                self.withdrawn.notify_one();
                return Err(ErrorData::internal_error("withdrawn", None));
            }
            Manner::Failing => {
                return Err(ErrorData::internal_error(
                    "the client could not show it",
                    None,
                ));
            }
        }
        Ok(self
            .script
            .lock()
            .expect("not poisoned")
            .pop_front()
            .unwrap_or_else(|| ElicitResult::new(ElicitationAction::Cancel)))
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _cx: NotificationContext<RoleClient>,
    ) {
        let told = json!({"method": notification.method, "params": notification.params});
        self.told
            .notifications
            .lock()
            .expect("not poisoned")
            .push(told);
        self.told.arrived.notify_one();
    }
}

struct Harness {
    client: RunningService<RoleClient, Person>,
    asked: Arc<Mutex<Vec<Json>>>,
    told: Told,
    withdrawn: Arc<tokio::sync::Notify>,
    store_url: String,
    _dir: Scratch,
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn gateway(capabilities: Json, script: Vec<ElicitResult>) -> Harness {
    gateway_with(capabilities, script, None).await
}

/// A gateway over the example upstream, with `config` (TOML, the upstream
/// `notes` and the store added) instead of the no-config default.
async fn gateway_with(
    capabilities: Json,
    script: Vec<ElicitResult>,
    config: Option<&str>,
) -> Harness {
    gateway_on(capabilities, script, config, "").await
}

/// [`gateway_with`], with `upstream` (TOML keys) added to the upstream's
/// table.
async fn gateway_on(
    capabilities: Json,
    script: Vec<ElicitResult>,
    config: Option<&str>,
    upstream: &str,
) -> Harness {
    let dir = scratch("askgate-gateway");
    let store_url = format!("sqlite://{}", dir.join("s.db").display());
    let transport = start_gateway(&dir, &store_url, config, upstream);
    connect(transport, capabilities, script, store_url, dir).await
}

/// A client of the gateway on `transport`, whose store is at `store_url`
/// in the scratch directory `dir`, answering as a person does.
async fn connect(
    transport: TokioChildProcess,
    capabilities: Json,
    script: Vec<ElicitResult>,
    store_url: String,
    dir: PathBuf,
) -> Harness {
    connect_as(
        Manner::Person,
        transport,
        capabilities,
        script,
        store_url,
        dir,
    )
    .await
}

/// [`connect`], answering in `manner`.
async fn connect_as(
    manner: Manner,
    transport: TokioChildProcess,
    capabilities: Json,
    script: Vec<ElicitResult>,
    store_url: String,
    dir: PathBuf,
) -> Harness {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let told = Told::default();
    let withdrawn = Arc::new(tokio::sync::Notify::new());
    let client = Person {
        capabilities,
        script: Arc::new(Mutex::new(script.into())),
        asked: asked.clone(),
        told: told.clone(),
        manner,
        withdrawn: withdrawn.clone(),
    }
    .serve(transport)
    .await
    .expect("the client connects to the gateway");
    Harness {
        client,
        asked,
        told,
        withdrawn,
        store_url,
        _dir: Scratch(dir),
    }
}

/// A new scratch directory named from `prefix`.
fn scratch(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond()
    ));
    std::fs::create_dir_all(&dir).expect("scratch");
    dir
}

/// Start a gateway over the example upstream, on the store at
/// `store_url`: with no config file, or with `config` (see
/// [`gateway_on`]) written into `dir`.
fn start_gateway(
    dir: &Path,
    store_url: &str,
    config: Option<&str>,
    upstream: &str,
) -> TokioChildProcess {
    let (transport, _) =
        TokioChildProcess::builder(gateway_command(dir, store_url, config, upstream))
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("the gateway starts");
    transport
}

/// The command [`start_gateway`] runs.
fn gateway_command(
    dir: &Path,
    store_url: &str,
    config: Option<&str>,
    upstream: &str,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_askgate"));
    match config {
        None => {
            command
                .args(["gateway", "--store", store_url, "--"])
                .arg(self::upstream());
        }
        Some(extra) => {
            let file = dir.join("askgate.toml");
            let text = format!(
                "store = {store_url:?}\n{extra}\n\n[[upstreams]]\nname = \"notes\"\ncommand = {:?}\n{upstream}\n",
                self::upstream().display().to_string()
            );
            std::fs::write(&file, text).expect("writes the config");
            command.args(["gateway", "--config"]).arg(&file);
        }
    }
    // Quiet unless a developer asks for more (ASKGATE_TEST_LOG=debug).
    command.env(
        "ASKGATE_LOG",
        std::env::var("ASKGATE_TEST_LOG").unwrap_or_else(|_| "warn".into()),
    );
    command
}

fn tool(name: &str) -> String {
    format!("{UPSTREAM}__{name}")
}

/// Kill process `pid` at once, as a crash would (the workspace forbids the
/// `unsafe` a signal call takes).
fn sigkill(pid: &str) {
    let killed = std::process::Command::new("kill")
        .args(["-9", pid])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "{pid} was killed");
}

async fn call(h: &Harness, name: &str, args: Json) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool(name));
    params.arguments = args.as_object().cloned();
    h.client.call_tool(params).await.expect("a result")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn accept(content: Json) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(content)
}

async fn store(h: &Harness) -> Store {
    Store::open(&h.store_url).await.expect("the store opens")
}

#[tokio::test]
async fn tools_are_listed_under_their_servers_name_with_their_risk() {
    let h = gateway(json!({"elicitation": {"form": {}}}), vec![]).await;
    let tools = h.client.list_all_tools().await.expect("tools");
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    for expected in [
        "read_note",
        "write_note",
        "delete_all_notes",
        "ask_name",
        "wait_for_note",
    ] {
        assert!(names.contains(&tool(expected)), "{expected} in {names:?}");
    }
    let delete = tools
        .iter()
        .find(|t| t.name == tool("delete_all_notes"))
        .expect("listed");
    assert!(
        delete.input_schema["properties"].get("confirm").is_none(),
        "by default only a person approves, so no confirm argument tempts the model"
    );
    assert!(
        delete
            .description
            .as_deref()
            .is_some_and(|d| d.contains("[askgate: risk destructive]")),
        "{:?}",
        delete.description
    );
}

#[tokio::test]
async fn a_confirmed_call_runs_once_and_is_audited_and_ledgered() {
    let h = gateway(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"confirm": true}))],
    )
    .await;
    let result = call(
        &h,
        "append_note",
        json!({"name": "todo", "text": "buy milk"}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let asked = h.asked.lock().expect("not poisoned").clone();
    assert_eq!(asked.len(), 1, "one confirmation");
    let message = asked[0]["message"].as_str().expect("a message");
    assert!(
        message.contains("append_note") && message.contains("medium write"),
        "{message}"
    );
    let store = store(&h).await;
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.decision, Decision::Elicited);
    assert_eq!(audit[0].entry.tool, "append_note");
    let raw = serde_json::to_string(&audit[0].entry).expect("json");
    assert!(!raw.contains("buy milk"), "no argument in the audit: {raw}");
    // Recorded as sent before it left; its end is recorded after the answer.
    assert!(
        matches!(ledger(&h).await.as_slice(), [state] if state == "sent" || state == "answered"),
        "the call is in the ledger when its answer arrives"
    );
    let stopped = stop(h).await;
    assert_eq!(
        ledger_at(&stopped.store_url).await,
        [CallState::Answered.as_str()]
    );
}

#[tokio::test]
async fn a_declined_call_never_reaches_the_upstream() {
    let h = gateway(
        json!({"elicitation": {"form": {}}}),
        vec![ElicitResult::new(ElicitationAction::Decline)],
    )
    .await;
    let result = call(&h, "delete_all_notes", json!({})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("final"), "{}", text(&result));
    let store = store(&h).await;
    assert_eq!(
        store.audit_entries().await.expect("audit")[0]
            .entry
            .decision,
        Decision::Blocked
    );
    assert!(ledger(&h).await.is_empty(), "nothing was sent upstream");
}

#[tokio::test]
async fn without_elicitation_the_ask_waits_in_the_inbox_whatever_the_caller_says() {
    let h = gateway(json!({}), vec![]).await;
    // Parked in the inbox: the result says where to answer, and nothing
    // that approves by itself.
    let parked = call(&h, "delete_all_notes", json!({})).await;
    assert_eq!(parked.is_error, Some(true));
    let said = text(&parked);
    assert!(said.contains("askgate inbox (http://"), "{said}");
    assert!(!said.contains("askgate asks"), "{said}");
    assert!(!said.contains("confirm: true"), "{said}");
    let store = store(&h).await;
    assert_eq!(
        store.pending(10, None).await.expect("pending").asks.len(),
        1
    );
    // By default the caller's confirm: true stands in for nobody.
    let result = call(&h, "delete_all_notes", json!({"confirm": true})).await;
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(
        audit.last().expect("an entry").entry.decision,
        Decision::Waiting
    );
    store.close().await;
    assert!(ledger(&h).await.is_empty(), "nothing was sent upstream");
}

#[tokio::test]
async fn the_upstreams_own_ask_reaches_the_person() {
    let h = gateway(
        json!({"elicitation": {"form": {}}}),
        vec![
            accept(json!({"confirm": true})),
            accept(json!({"name": "Ada"})),
        ],
    )
    .await;
    let result = call(&h, "ask_name", json!({})).await;
    assert!(text(&result).contains("Ada"), "{}", text(&result));
    let asked = h.asked.lock().expect("not poisoned").clone();
    assert_eq!(
        asked.len(),
        2,
        "the confirmation, then the server's own ask"
    );
    let stopped = stop(h).await;
    assert_eq!(ledger_at(&stopped.store_url).await, ["answered"]);
}

#[tokio::test]
async fn a_read_call_is_audited_and_ledgered_and_a_clean_stop_keeps_both() {
    let config = "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
    let h = gateway_with(json!({"elicitation": {"form": {}}}), vec![], Some(config)).await;
    let mut params = CallToolRequestParams::new("notes__read_note");
    params.arguments = json!({"name": "todo"}).as_object().cloned();
    h.client.call_tool(params).await.expect("a result");
    assert!(
        h.asked.lock().expect("not poisoned").is_empty(),
        "a read is not confirmed"
    );
    // The read did not wait for its records; a clean stop writes them.
    let stopped = stop(h).await;
    let store = Store::open(&stopped.store_url).await.expect("opens");
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.decision, Decision::NotRequired);
    assert_eq!(audit[0].entry.tool, "read_note");
    assert_eq!(audit[0].entry.risk, "read");
    assert_eq!(store.verify_audit().await.expect("verifies").broken, None);
    store.close().await;
    assert_eq!(ledger_at(&stopped.store_url).await, ["answered"]);
}

#[tokio::test]
async fn reads_called_side_by_side_keep_one_unbroken_audit_chain() {
    let config = "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
    let h = gateway_with(json!({"elicitation": {"form": {}}}), vec![], Some(config)).await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..20 {
        let mut params = CallToolRequestParams::new("notes__read_note");
        params.arguments = json!({"name": format!("n{i}")}).as_object().cloned();
        let peer = h.client.peer().clone();
        calls.spawn(async move { peer.call_tool(params).await });
    }
    while let Some(done) = calls.join_next().await {
        done.expect("the call's task ends").expect("a result");
    }
    let stopped = stop(h).await;
    let store = Store::open(&stopped.store_url).await.expect("opens");
    let verification = store.verify_audit().await.expect("verifies");
    assert_eq!(verification.entries, 20);
    assert_eq!(verification.broken, None);
    store.close().await;
    assert_eq!(ledger_at(&stopped.store_url).await, vec!["answered"; 20]);
}

#[tokio::test]
async fn with_durable_reads_a_read_is_recorded_before_its_answer() {
    let config = "durable_reads = true\n\n[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
    let h = gateway_with(json!({"elicitation": {"form": {}}}), vec![], Some(config)).await;
    let mut params = CallToolRequestParams::new("notes__read_note");
    params.arguments = json!({"name": "todo"}).as_object().cloned();
    h.client.call_tool(params).await.expect("a result");
    // Still running: what the answer waited for is in the store.
    let store = store(&h).await;
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.decision, Decision::NotRequired);
    store.close().await;
    assert!(
        matches!(ledger(&h).await.as_slice(), [state] if state == "sent" || state == "answered"),
        "the read is in the ledger when its answer arrives"
    );
}

/// A gateway stopped by its client (stdin closed, as a desktop client
/// quits): its store, and the scratch directory that holds it.
struct Stopped {
    store_url: String,
    _dir: Scratch,
}

/// Close the client's side and wait for the gateway to exit.
async fn stop(h: Harness) -> Stopped {
    let Harness {
        client,
        store_url,
        _dir,
        ..
    } = h;
    client.cancel().await.expect("the gateway stops");
    Stopped { store_url, _dir }
}

/// The ledger's states, oldest first.
async fn ledger(h: &Harness) -> Vec<String> {
    ledger_at(&h.store_url).await
}

/// The ledger's states in the store at `store_url`, oldest first.
async fn ledger_at(store_url: &str) -> Vec<String> {
    let pool = sqlx::sqlite::SqlitePool::connect(store_url)
        .await
        .expect("connects");
    let states: Vec<String> = sqlx::query_scalar("SELECT state FROM calls ORDER BY prepared_at")
        .fetch_all(&pool)
        .await
        .expect("reads the ledger");
    pool.close().await;
    states
}

/// `askgate tools --json`: one object per tool.
fn tools_json(extra: &[&str]) -> Vec<Json> {
    let dir = std::env::temp_dir().join(format!(
        "askgate-tools-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond()
    ));
    std::fs::create_dir_all(&dir).expect("scratch");
    let store = format!("sqlite://{}", dir.join("s.db").display());
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(["tools", "--json", "--store", &store])
        .args(extra)
        .arg("--")
        .arg(upstream())
        .env("ASKGATE_LOG", "warn")
        .output()
        .expect("askgate tools runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

fn row<'a>(rows: &'a [Json], name: &str) -> &'a Json {
    rows.iter()
        .find(|r| r["tool"] == tool(name))
        .unwrap_or_else(|| panic!("{name} listed in {rows:?}"))
}

#[test]
fn the_dry_run_names_each_tools_risk_rule_and_what_a_call_would_do() {
    let rows = tools_json(&[]);
    let delete = row(&rows, "delete_all_notes");
    assert_eq!(delete["risk"], "destructive");
    assert_eq!(delete["rule"], "annotations.destructiveHint");
    assert_eq!(delete["now"], "ask");
    // Without a rule, even a read-only tool fails closed.
    let read = row(&rows, "read_note");
    assert_eq!(read["risk"], "medium_write");
    assert_eq!(read["rule"], "default");
    assert_eq!(read["now"], "ask");

    let rows = tools_json(&["--auto-approve", "medium_write"]);
    assert_eq!(row(&rows, "read_note")["now"], "proceed (auto_approved)");
    assert_eq!(row(&rows, "delete_all_notes")["now"], "ask");
}

#[tokio::test]
async fn the_model_asks_the_person_through_the_ask_tool() {
    let h = gateway(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"env": "prod"}))],
    )
    .await;
    let tools = h.client.list_all_tools().await.expect("tools");
    assert!(
        tools.iter().any(|t| t.name == "ask"),
        "the ask tool is offered"
    );
    let mut params = CallToolRequestParams::new("ask");
    params.arguments = json!({"questions": [{
        "id": "env", "prompt": "Which environment?", "defaults": ["staging"],
        "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]
    }]})
    .as_object()
    .cloned();
    let result = h.client.call_tool(params).await.expect("a result");
    assert!(
        text(&result).contains("Which environment? → Production"),
        "{}",
        text(&result)
    );

    // A malformed set is a tool error addressed to the model.
    let mut params = CallToolRequestParams::new("ask");
    params.arguments = json!({"questions": []}).as_object().cloned();
    let result = h.client.call_tool(params).await.expect("a result");
    assert_eq!(result.is_error, Some(true));
    assert!(!text(&result).is_empty());
}

#[tokio::test]
async fn intake_questions_come_before_a_tools_first_call_only() {
    let config = r#"
[[rules]]
tool = "append_note"
risk = "read"

[[intake]]
tool = "append_note"
when = "once"
preamble = "Before the first note:"
questions = [{ id = "team", prompt = "Which team?", options = [{ value = "ops", label = "Ops" }, { value = "dev", label = "Dev" }], defaults = ["ops"] }]
"#;
    let h = gateway_with(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"team": "dev"}))],
        Some(config),
    )
    .await;
    let mut params = CallToolRequestParams::new("notes__append_note");
    params.arguments = json!({"name": "log", "text": "one"}).as_object().cloned();
    let first = h.client.call_tool(params.clone()).await.expect("a result");
    assert!(
        text(&first).contains("Which team? → Dev"),
        "{}",
        text(&first)
    );
    let second = h.client.call_tool(params).await.expect("a result");
    assert!(!text(&second).contains("Which team?"), "{}", text(&second));
    assert_eq!(
        h.asked.lock().expect("not poisoned").len(),
        1,
        "asked once; a read needs no confirmation"
    );
}

/// A client of 2026-07-28 driving the rounds by hand.
#[derive(Clone)]
struct RoundTripper;

impl ClientHandler for RoundTripper {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("round-tripper", "1.0"))
    }
}

#[tokio::test]
async fn a_gateway_killed_mid_ask_gives_the_retry_its_result_and_runs_the_call_once() {
    let dir = std::env::temp_dir().join(format!(
        "askgate-gateway-kill-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond()
    ));
    std::fs::create_dir_all(&dir).expect("scratch");
    let _cleanup = Scratch(dir.clone());
    let store_url = format!("sqlite://{}", dir.join("s.db").display());
    let start = || {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_askgate"));
        command
            .args(["gateway", "--store", &store_url, "--"])
            .arg(upstream())
            .env("ASKGATE_LOG", "warn");
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("the gateway starts");
        transport
    };
    let lifecycle = || rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    use rmcp::service::ClientServiceExt;
    let mut params = CallToolRequestParams::new(tool("append_note"));
    params.arguments = json!({"name": "log", "text": "once"}).as_object().cloned();

    let transport = start();
    let pid = transport.id().expect("a pid");
    let client = RoundTripper
        .serve_with_lifecycle(transport, lifecycle())
        .await
        .expect("discovers the gateway");
    let first = match client
        .call_tool_once(params.clone())
        .await
        .expect("a result")
    {
        rmcp::model::CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    };
    let state = first.request_state.clone().expect("a sealed state");
    // The gateway dies while the person decides.
    sigkill(&pid.to_string());
    drop(client);

    let client = RoundTripper
        .serve_with_lifecycle(start(), lifecycle())
        .await
        .expect("discovers the restarted gateway");
    // The person reads the confirmation before answering it.
    tokio::time::sleep(READING).await;
    let mut retry = params.clone();
    retry.input_responses = Some(
        serde_json::from_value(
            json!({"confirm": {"action": "accept", "content": {"confirm": true}}}),
        )
        .expect("responses"),
    );
    retry.request_state = Some(state);
    let done = match client
        .call_tool_once(retry.clone())
        .await
        .expect("a result")
    {
        rmcp::model::CallToolResponse::Complete(result) => result,
        other => panic!("expected the result, got {other:?}"),
    };
    assert_ne!(done.is_error, Some(true), "{}", text(&done));
    // The same retry again is refused: the state was used.
    match client.call_tool_once(retry).await {
        Err(rmcp::ServiceError::McpError(error)) => assert_eq!(error.code.0, -32602),
        other => panic!("a replay must be refused, got {other:?}"),
    }
    client.cancel().await.expect("the gateway stops");
    assert_eq!(
        ledger_at(&store_url).await,
        ["answered"],
        "the call ran exactly once"
    );
}

/// The input requests of an `InputRequiredResult`, as JSON by key.
fn input_requests(result: &rmcp::model::InputRequiredResult) -> serde_json::Map<String, Json> {
    serde_json::to_value(result.input_requests.clone().unwrap_or_default())
        .expect("json")
        .as_object()
        .cloned()
        .expect("a map")
}

#[tokio::test]
async fn the_upstreams_own_ask_reaches_a_2026_client_as_input_requests_and_its_answer_is_checked() {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_askgate"));
    let dir = std::env::temp_dir().join(format!(
        "askgate-gateway-mrtr-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond()
    ));
    std::fs::create_dir_all(&dir).expect("scratch");
    let _cleanup = Scratch(dir.clone());
    let store_url = format!("sqlite://{}", dir.join("s.db").display());
    command
        .args(["gateway", "--store", &store_url, "--"])
        .arg(upstream())
        .env("ASKGATE_LOG", "warn");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("the gateway starts");
    use rmcp::service::ClientServiceExt;
    let client = RoundTripper
        .serve_with_lifecycle(
            transport,
            rmcp::service::ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discovers the gateway");
    let params = CallToolRequestParams::new(tool("ask_name"));
    let mut call = params.clone();
    let mut asked_name = Vec::new();
    let mut states = Vec::new();
    let mut answers = [json!({"name": 42}), json!({"name": "Grace"})].into_iter();
    let done = loop {
        let needed = match client.call_tool_once(call.clone()).await.expect("a result") {
            rmcp::model::CallToolResponse::Complete(result) => break result,
            rmcp::model::CallToolResponse::InputRequired(needed) => needed,
            other => panic!("expected a result or input requests, got {other:?}"),
        };
        assert!(states.len() < 6, "too many rounds");
        let mut responses = serde_json::Map::new();
        for (key, request) in input_requests(&needed) {
            let message = request["params"]["message"].as_str().unwrap_or_default();
            let content = if key == "confirm" {
                // The person reads the confirmation before answering it.
                tokio::time::sleep(READING).await;
                json!({"confirm": true})
            } else {
                assert!(key.starts_with("upstream-"), "{key}");
                asked_name.push(message.to_owned());
                answers.next().expect("asked at most twice")
            };
            responses.insert(key, json!({"action": "accept", "content": content}));
        }
        let state = needed.request_state.clone().expect("a sealed state");
        states.push(state.clone());
        call = params.clone();
        call.input_responses =
            Some(serde_json::from_value(Json::Object(responses)).expect("responses"));
        call.request_state = Some(state);
    };
    assert!(text(&done).contains("Hello, Grace"), "{}", text(&done));
    assert_eq!(
        asked_name.len(),
        2,
        "asked, then asked again: {asked_name:?}"
    );
    assert_eq!(asked_name[0], "What is your name?");
    assert!(
        asked_name[1].contains("name") && asked_name[1].contains("What is your name?"),
        "the re-ask says what did not fit: {:?}",
        asked_name[1]
    );
    assert!(
        !asked_name[1].contains("42"),
        "the reason never echoes the value"
    );
    // A used state does not run anything again.
    let mut replay = params.clone();
    replay.request_state = states.last().cloned();
    replay.input_responses = Some(
        serde_json::from_value(
            json!({"upstream-2": {"action": "accept", "content": {"name": "Eve"}}}),
        )
        .expect("responses"),
    );
    match client.call_tool_once(replay).await {
        Err(rmcp::ServiceError::McpError(error)) => assert_eq!(error.code.0, -32602),
        other => panic!("a replay must be refused, got {other:?}"),
    }
    // A read's record is written as it ends: a clean stop keeps it.
    client.cancel().await.expect("the gateway stops");
    assert_eq!(
        ledger_at(&store_url).await,
        ["answered"],
        "the call ran once"
    );
}

#[tokio::test]
async fn an_upstream_on_2026_asks_a_classic_client_through_elicitation() {
    let h = gateway_on(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"name": ""})), accept(json!({"name": "Ada"}))],
        Some("[[rules]]\nserver = \"notes\"\ntool = \"ask_name\"\nrisk = \"read\""),
        "protocol = \"2026-07-28\"",
    )
    .await;
    let params = CallToolRequestParams::new("notes__ask_name");
    let result = h.client.call_tool(params).await.expect("a result");
    assert!(text(&result).contains("Hello, Ada"), "{}", text(&result));
    let asked = h.asked.lock().expect("not poisoned").clone();
    assert_eq!(
        asked.len(),
        2,
        "asked, then asked again after an empty name"
    );
    assert_eq!(asked[0]["message"], "What is your name?");
    let again = asked[1]["message"].as_str().unwrap_or_default();
    assert!(
        again.contains("name") && again.ends_with("What is your name?"),
        "the re-ask says why: {again:?}"
    );
    // A read's record is written as it ends, without the answer waiting:
    // a clean stop keeps it.
    let stopped = stop(h).await;
    assert_eq!(ledger_at(&stopped.store_url).await, ["answered"]);
}

#[tokio::test]
async fn a_parked_ask_is_posted_to_the_configured_webhook_without_arguments() {
    // A local receiver records what is posted to it.
    let posts: Arc<Mutex<Vec<Json>>> = Arc::new(Mutex::new(Vec::new()));
    let recorded = posts.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<Json>| {
            let recorded = recorded.clone();
            async move {
                recorded.lock().expect("not poisoned").push(body);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let config = format!("[notify]\nwebhook = \"http://{addr}/hook\"\n");
    let h = gateway_with(json!({}), vec![], Some(&config)).await;
    let mut params = CallToolRequestParams::new("notes__delete_all_notes");
    params.arguments = json!({"reason": "a-secret-argument"}).as_object().cloned();
    let parked = h.client.call_tool(params).await.expect("a result");
    assert_eq!(parked.is_error, Some(true), "parked: {}", text(&parked));
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = posts.lock().expect("not poisoned").clone();
        if !seen.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(seen.len(), 1, "one post for the parked ask: {seen:?}");
    let post = &seen[0];
    assert_eq!(post["event"], "parked");
    assert_eq!(
        (post["server"].as_str(), post["tool"].as_str()),
        (Some("notes"), Some("delete_all_notes"))
    );
    assert_eq!(post["risk"], "destructive");
    assert!(post["link"].as_str().is_some_and(|l| l.contains("/asks/")));
    assert!(
        !post.to_string().contains("a-secret-argument"),
        "no argument is posted: {post}"
    );
}

#[tokio::test]
async fn a_2026_upstreams_prompt_asks_a_classic_client_and_gets_its_checked_answer() {
    let h = gateway_on(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"name": ""})), accept(json!({"name": "Ada"}))],
        Some(""),
        "protocol = \"2026-07-28\"",
    )
    .await;
    let prompt = h
        .client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("notes__greet_me"))
        .await
        .expect("the prompt");
    let prompt = serde_json::to_value(&prompt).expect("json");
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "Greet Ada by name, warmly.",
        "the prompt the upstream built from the answer: {prompt}"
    );
    let asked = h.asked.lock().expect("not poisoned").clone();
    assert_eq!(
        asked.len(),
        2,
        "asked, then asked again after an empty name"
    );
    assert_eq!(asked[0]["message"], "What is your name?");
    let again = asked[1]["message"].as_str().unwrap_or_default();
    assert!(
        again.contains("name") && again.ends_with("What is your name?"),
        "the re-ask says why: {again:?}"
    );
}

#[tokio::test]
async fn a_2026_upstreams_resource_asks_a_2026_client_which_answers_on_its_retry() {
    let dir = scratch("askgate-gateway-read");
    let _cleanup = Scratch(dir.clone());
    let store_url = format!("sqlite://{}", dir.join("s.db").display());
    let transport = start_gateway(&dir, &store_url, Some(""), "protocol = \"2026-07-28\"");
    use rmcp::service::ClientServiceExt;
    let client = RoundTripper
        .serve_with_lifecycle(
            transport,
            rmcp::service::ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discovers the gateway");
    let params = rmcp::model::ReadResourceRequestParams::new("notes://owner");
    let mut read = params.clone();
    let mut asked = Vec::new();
    let mut answers = [json!({"name": 42}), json!({"name": "Grace"})].into_iter();
    let done = loop {
        let needed = match client
            .read_resource_once(read.clone())
            .await
            .expect("a result")
        {
            rmcp::model::ReadResourceResponse::Complete(result) => break result,
            rmcp::model::ReadResourceResponse::InputRequired(needed) => needed,
            other => panic!("expected a result or input requests, got {other:?}"),
        };
        assert!(asked.len() < 4, "too many rounds");
        let mut responses = serde_json::Map::new();
        for (key, request) in input_requests(&needed) {
            assert!(key.starts_with("upstream-"), "{key}");
            asked.push(request["params"]["message"].clone());
            let content = answers.next().expect("asked at most twice");
            responses.insert(key, json!({"action": "accept", "content": content}));
        }
        read = params.clone();
        read.input_responses =
            Some(serde_json::from_value(Json::Object(responses)).expect("responses"));
        read.request_state = Some(needed.request_state.clone().expect("a sealed state"));
    };
    let done = serde_json::to_value(&done).expect("json");
    assert_eq!(
        done["contents"][0]["text"], "These notes belong to Grace.",
        "the resource the upstream built from the answer: {done}"
    );
    assert_eq!(asked.len(), 2, "asked, then asked again: {asked:?}");
    let again = asked[1].as_str().unwrap_or_default();
    assert!(
        again.contains("name") && !again.contains("42"),
        "the re-ask says what did not fit, never the value: {again:?}"
    );
    client.cancel().await.expect("the gateway stops");
}

#[tokio::test]
async fn the_completion_of_a_url_mode_ask_reaches_the_classic_client_it_went_to() {
    let h = gateway_with(
        json!({"elicitation": {"form": {}, "url": {}}}),
        vec![ElicitResult::new(ElicitationAction::Accept)],
        Some("[[rules]]\nserver = \"notes\"\ntool = \"sign_in\"\nrisk = \"read\""),
    )
    .await;
    let result = h
        .client
        .call_tool(CallToolRequestParams::new("notes__sign_in"))
        .await
        .expect("a result");
    assert!(text(&result).starts_with("Signed in"), "{}", text(&result));
    let asked = h.asked.lock().expect("not poisoned").clone();
    assert_eq!(asked.len(), 1, "one ask: {asked:?}");
    assert_eq!(asked[0]["mode"], "url");
    let id = asked[0]["elicitationId"].clone();
    assert!(
        id.as_str().is_some_and(|id| id.starts_with("sign-in-")),
        "{id}"
    );
    let told = h.told.first().await;
    assert_eq!(told["method"], "notifications/elicitation/complete");
    assert_eq!(told["params"]["elicitationId"], id, "{told}");
}

#[tokio::test]
async fn a_2026_upstreams_ask_outlives_a_killed_gateway_and_the_retry_gets_the_result() {
    let dir = scratch("askgate-gateway-resume");
    let _cleanup = Scratch(dir.clone());
    let store_url = format!("sqlite://{}", dir.join("s.db").display());
    // ask_name, ruled high_write: the person confirms, then the server
    // asks in its own InputRequiredResult.
    let config = "[[rules]]\ntool = \"ask_name\"\nrisk = \"high_write\"";
    let start = || start_gateway(&dir, &store_url, Some(config), "protocol = \"2026-07-28\"");
    let lifecycle = || rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    use rmcp::service::ClientServiceExt;
    let params = CallToolRequestParams::new("notes__ask_name");
    let answer_all = |needed: &rmcp::model::InputRequiredResult, name: &str| {
        let mut responses = serde_json::Map::new();
        for (key, _) in input_requests(needed) {
            let content = if key == "confirm" {
                json!({"confirm": true})
            } else {
                json!({"name": name})
            };
            responses.insert(key, json!({"action": "accept", "content": content}));
        }
        let mut retry = params.clone();
        retry.input_responses =
            Some(serde_json::from_value(Json::Object(responses)).expect("responses"));
        retry.request_state = Some(needed.request_state.clone().expect("a sealed state"));
        retry
    };

    let transport = start();
    let pid = transport.id().expect("a pid");
    let client = RoundTripper
        .serve_with_lifecycle(transport, lifecycle())
        .await
        .expect("discovers the gateway");
    let confirm = match client
        .call_tool_once(params.clone())
        .await
        .expect("a result")
    {
        rmcp::model::CallToolResponse::InputRequired(needed) => needed,
        other => panic!("expected the confirmation, got {other:?}"),
    };
    // The person reads the confirmation before answering it.
    tokio::time::sleep(READING).await;
    let asked = match client
        .call_tool_once(answer_all(&confirm, "unused"))
        .await
        .expect("a result")
    {
        rmcp::model::CallToolResponse::InputRequired(needed) => needed,
        other => panic!("expected the server's own ask, got {other:?}"),
    };
    let keys: Vec<String> = input_requests(&asked).keys().cloned().collect();
    assert!(
        keys.iter().all(|k| k.starts_with("upstream-")),
        "the server's ask: {keys:?}"
    );
    // The gateway, and its upstream with it, die while the person types.
    sigkill(&pid.to_string());
    drop(client);

    let client = RoundTripper
        .serve_with_lifecycle(start(), lifecycle())
        .await
        .expect("discovers the restarted gateway");
    let retry = answer_all(&asked, "Ada");
    let done = match client
        .call_tool_once(retry.clone())
        .await
        .expect("a result")
    {
        rmcp::model::CallToolResponse::Complete(result) => result,
        other => panic!("expected the server's result, got {other:?}"),
    };
    assert!(text(&done).contains("Hello, Ada"), "{}", text(&done));
    // The same retry again is refused: its state was used.
    match client.call_tool_once(retry).await {
        Err(rmcp::ServiceError::McpError(error)) => assert_eq!(error.code.0, -32602),
        other => panic!("a replay must be refused, got {other:?}"),
    }
    client.cancel().await.expect("the gateway stops");
    let store = Store::open(&store_url).await.expect("opens");
    let decisions: Vec<String> = store
        .audit_entries()
        .await
        .expect("reads")
        .into_iter()
        .map(|r| format!("{} {:?}", r.entry.tool, r.entry.decision))
        .collect();
    assert_eq!(decisions.len(), 1, "decided once: {decisions:?}");
    // The round before the kill was answered with the server's ask; the
    // round after it, with the result.
    let states = ledger_at(&store_url).await;
    assert!(states.contains(&"answered".to_owned()), "{states:?}");
}

#[tokio::test]
async fn a_2026_upstreams_resource_ask_outlives_a_killed_gateway() {
    let dir = scratch("askgate-gateway-resume-read");
    let _cleanup = Scratch(dir.clone());
    let store_url = format!("sqlite://{}", dir.join("s.db").display());
    let start = || start_gateway(&dir, &store_url, Some(""), "protocol = \"2026-07-28\"");
    let lifecycle = || rmcp::service::ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    use rmcp::service::ClientServiceExt;
    let params = rmcp::model::ReadResourceRequestParams::new("notes://owner");
    let transport = start();
    let pid = transport.id().expect("a pid");
    let client = RoundTripper
        .serve_with_lifecycle(transport, lifecycle())
        .await
        .expect("discovers the gateway");
    let asked = match client
        .read_resource_once(params.clone())
        .await
        .expect("a result")
    {
        rmcp::model::ReadResourceResponse::InputRequired(needed) => needed,
        other => panic!("expected the server's ask, got {other:?}"),
    };
    sigkill(&pid.to_string());
    drop(client);

    let client = RoundTripper
        .serve_with_lifecycle(start(), lifecycle())
        .await
        .expect("discovers the restarted gateway");
    let mut responses = serde_json::Map::new();
    for (key, _) in input_requests(&asked) {
        responses.insert(key, json!({"action": "accept", "content": {"name": "Ada"}}));
    }
    let mut retry = params.clone();
    retry.input_responses =
        Some(serde_json::from_value(Json::Object(responses)).expect("responses"));
    retry.request_state = asked.request_state.clone();
    let done = match client.read_resource_once(retry).await.expect("a result") {
        rmcp::model::ReadResourceResponse::Complete(result) => result,
        other => panic!("expected the resource, got {other:?}"),
    };
    let text = serde_json::to_string(&done).expect("serializes");
    assert!(text.contains("These notes belong to Ada."), "{text}");
    client.cancel().await.expect("the gateway stops");
}

#[tokio::test]
async fn on_stdio_the_inbox_listener_serves_metrics_to_the_operator_only() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let config = format!(
        "[inbox]\nlisten = \"127.0.0.1:{port}\"\ntoken = \"metrics-operator-token\"\n\n\
         [[rules]]\ntool = \"read_note\"\nrisk = \"read\""
    );
    let h = gateway_on(json!({}), Vec::new(), Some(&config), "").await;
    let mut params = CallToolRequestParams::new("notes__read_note");
    params.arguments = json!({"name": "absent"}).as_object().cloned();
    let read = h.client.call_tool(params).await.expect("a result");
    assert!(text(&read).contains("no note named"), "{}", text(&read));
    let url = format!("http://127.0.0.1:{port}/metrics");
    let http = reqwest::Client::new();
    let anonymous = http.get(&url).send().await.expect("the inbox answers");
    assert_eq!(anonymous.status(), reqwest::StatusCode::UNAUTHORIZED);
    let wrong = http
        .get(&url)
        .bearer_auth("not-the-token")
        .send()
        .await
        .expect("the inbox answers");
    assert_eq!(wrong.status(), reqwest::StatusCode::UNAUTHORIZED);
    // The call is counted as its answer goes out: read until it shows (a
    // guard turns a hang into a failure).
    let counted = "askgate_upstream_calls_total{server=\"notes\",outcome=\"answered\"} 1";
    let scraped = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            let body = http
                .get(&url)
                .bearer_auth("metrics-operator-token")
                .send()
                .await
                .expect("the inbox answers")
                .text()
                .await
                .expect("a body");
            if body.contains(counted) {
                return body;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the read is counted");
    assert!(
        scraped.contains("askgate_decisions_total{method=\"not_required\"} 1"),
        "{scraped}"
    );
    assert!(scraped.contains("askgate_pending_asks 0"), "{scraped}");
    assert!(!scraped.contains("absent"), "no argument in the metrics");
    stop(h).await;
}
