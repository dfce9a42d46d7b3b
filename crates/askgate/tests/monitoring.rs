//! What an operator's monitoring reads where no MCP client speaks HTTP:
//! the metrics of a gateway on stdio, served beside its inbox page (what
//! the express lane does is counted as the rmcp path's is), and the probes
//! of `askgate inbox` on its own.

use std::process::{Command, Stdio};

use askgate_testkit::gateway::Setup;
use askgate_testkit::mcp::send_call;
use askgate_testkit::process::Process;
use askgate_testkit::{Person, Scratch, binaries};
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use serde_json::json;

/// The inbox's operator, who alone reads `/metrics`.
const OPERATOR: &str = "operator-token-0123456789";

#[tokio::test]
async fn a_read_its_client_cancels_on_the_express_lane_is_counted_as_cancelled() {
    // A read: it needs no person, so it takes the lane.
    let h = Setup::new(binaries!())
        .config("[[rules]]\ntool = \"wait_for_note\"\nrisk = \"read\"\n")
        .tables(&format!(
            "[inbox]\nlisten = \"127.0.0.1:0\"\ntoken = {OPERATOR:?}\n"
        ))
        .logging("askgate_gateway::express=debug")
        .connect(Person::new(json!({})).speaking(ProtocolVersion::V_2025_11_25))
        .await;
    let mut waiting = CallToolRequestParams::new("wait_for_note");
    waiting.arguments = json!({"name": "never", "wait_ms": 3_600_000})
        .as_object()
        .cloned();
    let handle = send_call(h.client.peer(), waiting).await;
    h.log
        .line_with(&["on the express lane", "wait_for_note"])
        .await;
    h.log
        .line_with(&["askgate-example-upstream: call wait_for_note"])
        .await;
    handle.cancel(None).await.expect("the cancel is sent");
    // Counted before its upstream is told.
    h.log
        .line_with(&["askgate-example-upstream: wait_for_note cancelled"])
        .await;
    let said = "wait in the inbox at ";
    let line = h.log.line_with(&[said]).await;
    let inbox = line
        .split(said)
        .nth(1)
        .and_then(|after| after.split_whitespace().next())
        .unwrap_or_default()
        .to_owned();
    let metrics = reqwest::Client::new()
        .get(format!("{inbox}metrics"))
        .bearer_auth(OPERATOR)
        .send()
        .await
        .expect("answers")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.contains(r#"askgate_cancelled_calls_total{server="notes"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn the_inbox_on_its_own_is_alive_and_ready_while_its_store_answers() {
    let dir = Scratch::new();
    let config = dir.write(
        "askgate.toml",
        &format!(
            "store = {:?}\n\n[inbox]\nlisten = \"127.0.0.1:0\"\n\n\
             [[upstreams]]\nname = \"none\"\ncommand = \"true\"\n",
            dir.store_url()
        ),
    );
    let mut command = Command::new(binaries!().askgate);
    command
        .args(["inbox", "--config"])
        .arg(&config)
        .env("ASKGATE_LOG", "warn")
        .stdout(Stdio::null());
    let inbox = Process::spawn(command);
    let said = "askgate inbox: serving ";
    let line = inbox.log.line_with(&[said]).await;
    let base = line
        .split(said)
        .nth(1)
        .and_then(|after| after.split_whitespace().next())
        .unwrap_or_default()
        .to_owned();
    let http = reqwest::Client::new();
    // No token: a probe's answer says nothing of what the inbox holds.
    for (path, said) in [("healthz", "ok\n"), ("readyz", "ready\n")] {
        let response = http
            .get(format!("{base}{path}"))
            .send()
            .await
            .expect("answers");
        let status = response.status().as_u16();
        let body = response.text().await.expect("text");
        assert_eq!((status, body.as_str()), (200, said), "{path}");
    }
}

#[tokio::test]
async fn a_metrics_token_reads_the_metrics_beside_the_operators() {
    const METRICS: &str = "metrics-scraper-token-0123";
    let h = Setup::new(binaries!())
        .config("")
        .tables(&format!(
            "[inbox]\nlisten = \"127.0.0.1:0\"\ntoken = {OPERATOR:?}\nmetrics_token = {METRICS:?}\n"
        ))
        .connect(Person::new(json!({})).speaking(ProtocolVersion::V_2025_11_25))
        .await;
    let said = "wait in the inbox at ";
    let line = h.log.line_with(&[said]).await;
    let inbox = line
        .split(said)
        .nth(1)
        .and_then(|after| after.split_whitespace().next())
        .unwrap_or_default()
        .to_owned();
    let http = reqwest::Client::new();
    let scraped = http
        .get(format!("{inbox}metrics"))
        .bearer_auth(METRICS)
        .send()
        .await
        .expect("answers");
    assert_eq!(scraped.status(), reqwest::StatusCode::OK);
    let text = scraped.text().await.expect("text");
    assert!(text.contains("askgate_build_info"), "{text}");
    // The operator's still does; another token does not.
    for (token, status) in [(OPERATOR, 200), ("metrics-scraper-token-0124", 401)] {
        let answered = http
            .get(format!("{inbox}metrics"))
            .bearer_auth(token)
            .send()
            .await
            .expect("answers");
        assert_eq!(answered.status().as_u16(), status);
    }
}
