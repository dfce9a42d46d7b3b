//! Calls through the gateway: listing, confirming, declining, reads, the dry
//! run and the operator's metrics.

use askgate_store::{CallState, Decision, Store};
use askgate_testkit::binaries;
use askgate_testkit::gateway::ledger;
use askgate_testkit::mcp::text;
use askgate_testkit::person::accept;
use rmcp::model::{CallToolRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Value as Json, json};

use super::{call, gateway, gateway_on, gateway_with, in_process_on, tool};

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
    let asked = h.person.messages();
    assert_eq!(asked.len(), 1, "one confirmation");
    let message = &asked[0];
    assert!(
        message.contains("append_note") && message.contains("medium write"),
        "{message}"
    );
    // The person is told what gave the call its risk.
    assert!(message.contains("\nRisk from: "), "{message}");
    let store = h.store().await;
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.decision, Decision::Elicited);
    assert_eq!(audit[0].entry.tool, "append_note");
    let raw = serde_json::to_string(&audit[0].entry).expect("json");
    assert!(!raw.contains("buy milk"), "no argument in the audit: {raw}");
    // Recorded as sent before it left; its end is recorded after the answer.
    assert!(
        matches!(h.ledger().await.as_slice(), [state] if state == "sent" || state == "answered"),
        "the call is in the ledger when its answer arrives"
    );
    let stopped = h.stop().await;
    assert_eq!(
        ledger(stopped.store_url()).await,
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
    let store = h.store().await;
    assert_eq!(
        store.audit_entries().await.expect("audit")[0]
            .entry
            .decision,
        Decision::Blocked
    );
    assert!(h.ledger().await.is_empty(), "nothing was sent upstream");
}

#[tokio::test]
async fn without_elicitation_the_ask_waits_in_the_inbox_whatever_the_caller_says() {
    // An inbox of its own (the default address may be another test's).
    let h = gateway_with(json!({}), vec![], "[inbox]\nlisten = \"127.0.0.1:0\"").await;
    // Parked in the inbox: the result says where to answer, and nothing
    // that approves by itself.
    let parked = call(&h, "delete_all_notes", json!({})).await;
    assert_eq!(parked.is_error, Some(true));
    let said = text(&parked);
    assert!(said.contains("askgate inbox (http://"), "{said}");
    assert!(!said.contains("askgate asks"), "{said}");
    assert!(!said.contains("confirm: true"), "{said}");
    let store = h.store().await;
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
    assert!(h.ledger().await.is_empty(), "nothing was sent upstream");
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
    let asked = h.person.asked.all();
    assert_eq!(
        asked.len(),
        2,
        "the confirmation, then the server's own ask"
    );
    let stopped = h.stop().await;
    assert_eq!(ledger(stopped.store_url()).await, ["answered"]);
}

#[tokio::test]
async fn a_read_call_is_audited_and_ledgered_and_a_clean_stop_keeps_both() {
    let config = "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
    let h = gateway_with(json!({"elicitation": {"form": {}}}), vec![], config).await;
    let mut params = CallToolRequestParams::new("read_note");
    params.arguments = json!({"name": "todo"}).as_object().cloned();
    h.client.call_tool(params).await.expect("a result");
    assert!(h.person.asked.is_empty(), "a read is not confirmed");
    // The read did not wait for its records; a clean stop writes them.
    let stopped = h.stop().await;
    let store = Store::open(stopped.store_url()).await.expect("opens");
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.decision, Decision::NotRequired);
    assert_eq!(audit[0].entry.tool, "read_note");
    assert_eq!(audit[0].entry.risk, "read");
    assert_eq!(store.verify_audit().await.expect("verifies").broken, None);
    store.close().await;
    assert_eq!(ledger(stopped.store_url()).await, ["answered"]);
}

#[tokio::test]
async fn reads_called_side_by_side_keep_one_unbroken_audit_chain() {
    let config = "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
    let h = gateway_with(json!({"elicitation": {"form": {}}}), vec![], config).await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..20 {
        let mut params = CallToolRequestParams::new("read_note");
        params.arguments = json!({"name": format!("n{i}")}).as_object().cloned();
        let peer = h.client.peer().clone();
        calls.spawn(async move { peer.call_tool(params).await });
    }
    while let Some(done) = calls.join_next().await {
        done.expect("the call's task ends").expect("a result");
    }
    let stopped = h.stop().await;
    let store = Store::open(stopped.store_url()).await.expect("opens");
    let verification = store.verify_audit().await.expect("verifies");
    assert_eq!(verification.entries, 20);
    assert_eq!(verification.broken, None);
    store.close().await;
    assert_eq!(ledger(stopped.store_url()).await, vec!["answered"; 20]);
}

#[tokio::test]
async fn with_durable_reads_a_read_is_recorded_before_its_answer() {
    let config = "durable_reads = true\n\n[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n";
    let h = gateway_with(json!({"elicitation": {"form": {}}}), vec![], config).await;
    let mut params = CallToolRequestParams::new("read_note");
    params.arguments = json!({"name": "todo"}).as_object().cloned();
    h.client.call_tool(params).await.expect("a result");
    // Still running: what the answer waited for is in the store.
    let store = h.store().await;
    let audit = store.audit_entries().await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].entry.decision, Decision::NotRequired);
    store.close().await;
    assert!(
        matches!(h.ledger().await.as_slice(), [state] if state == "sent" || state == "answered"),
        "the read is in the ledger when its answer arrives"
    );
}

/// `askgate tools --json`: one object per tool.
fn tools_json(extra: &[&str]) -> Vec<Json> {
    tools_of(&binaries!().upstream, extra)
}

/// `askgate tools --json EXTRA -- UPSTREAM`, with no config.
fn tools_of(upstream: &std::path::Path, extra: &[&str]) -> Vec<Json> {
    let bins = binaries!();
    let dir = askgate_testkit::Scratch::new();
    let output = std::process::Command::new(&bins.askgate)
        .args(["tools", "--json", "--store", &dir.store_url()])
        .args(extra)
        .arg("--")
        .arg(upstream)
        .env("ASKGATE_LOG", "warn")
        .output()
        .expect("askgate tools runs");
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

#[test]
fn without_a_config_the_server_is_named_by_its_handshake_or_by_name() {
    // The example upstream under a script's file name: it was named `index`
    // after the file; its handshake says askgate-example-upstream.
    let dir = askgate_testkit::Scratch::new();
    let index = dir.join("index");
    std::fs::copy(binaries!().upstream, &index).expect("copies the upstream");
    let servers = |rows: Vec<Json>| -> Vec<String> {
        rows.iter()
            .filter_map(|r| r["server"].as_str().map(str::to_owned))
            .collect()
    };
    let named = servers(tools_of(&index, &[]));
    assert!(
        !named.is_empty() && named.iter().all(|n| n == "askgate-example-upstream"),
        "{named:?}"
    );
    // --name is the operator's word over both.
    let named = servers(tools_of(&index, &["--name", "notes"]));
    assert!(
        !named.is_empty() && named.iter().all(|n| n == "notes"),
        "{named:?}"
    );
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
    let h = gateway_on(json!({}), Vec::new(), &config, "").await;
    let mut params = CallToolRequestParams::new("read_note");
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
    // The call and its decision were counted before its answer went out.
    let counted = "askgate_upstream_calls_total{server=\"notes\",outcome=\"answered\"} 1";
    let scraped = http
        .get(&url)
        .bearer_auth("metrics-operator-token")
        .send()
        .await
        .expect("the inbox answers")
        .text()
        .await
        .expect("a body");
    assert!(scraped.contains(counted), "{scraped}");
    assert!(
        scraped.contains("askgate_decisions_total{method=\"not_required\"} 1"),
        "{scraped}"
    );
    assert!(scraped.contains("askgate_pending_asks 0"), "{scraped}");
    assert!(!scraped.contains("absent"), "no argument in the metrics");
    h.stop().await;
}

#[tokio::test]
async fn the_gateway_names_itself_in_the_handshake_and_passes_on_the_upstreams_instructions() {
    // The binary on stdio, as a desktop client starts it, and the library
    // in-process: both say askgate and its version, so a client labels the
    // calls with askgate's name (it said "rmcp").
    let on_stdio = gateway_with(json!({}), vec![], "").await;
    let in_process = in_process_on(json!({}), vec![], "", "").await;
    for info in [on_stdio.client.peer_info(), in_process.client.peer_info()] {
        let info = info.expect("the server's initialize result");
        let server = info.server_info.clone().expect("it names the server");
        assert_eq!(
            (server.name.as_str(), server.version.as_str()),
            ("askgate", env!("CARGO_PKG_VERSION"))
        );
        // The upstream's own instructions reach the client, under its
        // name, after askgate's line.
        let instructions = info.instructions.clone().unwrap_or_default();
        assert!(
            instructions.starts_with("askgate: ")
                && instructions.contains(
                    "\n\nnotes: askgate example upstream: notes, a deploy and a question"
                ),
            "{instructions}"
        );
    }
}

#[tokio::test]
async fn a_client_from_before_elicitation_has_its_call_parked_and_run_once_a_person_approves() {
    for version in [
        rmcp::model::ProtocolVersion::V_2024_11_05,
        rmcp::model::ProtocolVersion::V_2025_03_26,
    ] {
        // Whatever it declares: its revision has no elicitation.
        let person = askgate_testkit::Person::new(json!({"elicitation": {}}))
            .speaking(version.clone())
            .in_manner(askgate_testkit::Manner::Person);
        let h = super::setup()
            .config("[inbox]\nlisten = \"127.0.0.1:0\"")
            .connect(person)
            .await;
        let parked = call(&h, "delete_all_notes", json!({})).await;
        let said = text(&parked);
        assert_eq!(parked.is_error, Some(true), "{version}: {said}");
        assert!(said.contains("askgate inbox (http://"), "{version}: {said}");
        assert!(
            h.person.messages().is_empty(),
            "never asked through the client"
        );
        let store = h.store().await;
        let pending = store.pending(10, None).await.expect("pending").asks;
        assert_eq!(pending.len(), 1, "{version}");
        askgate_testkit::answer_in_inbox(
            &store,
            &pending[0].ask.id,
            askgate_testkit::answer(json!({"confirm": true})),
            "ada",
            askgate_core::Surface::Web,
        )
        .await;
        let ran = call(&h, "delete_all_notes", json!({})).await;
        assert_ne!(ran.is_error, Some(true), "{version}: {}", text(&ran));
        store.close().await;
        let stopped = h.stop().await;
        assert_eq!(ledger(stopped.store_url()).await, ["answered"], "{version}");
    }
}
