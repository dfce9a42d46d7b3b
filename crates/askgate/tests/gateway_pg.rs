//! Two gateway processes on one PostgreSQL store: an ask held by one
//! gateway (a URL-mode call waiting on the person) is answered from another
//! process (`askgate asks answer`, as the inbox would), and the waiting call
//! resumes through PostgreSQL's notifications. Runs when
//! `ASKGATE_TEST_POSTGRES_URL` is set (`.ci/run` sets it).

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Value as Json, json};

/// The example upstream (a binary of this package: cargo builds it for
/// these tests).
fn upstream() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_askgate-example-upstream"))
}

/// A client whose person opens URL-mode pages (accepting at once); the
/// ids it was sent are kept.
#[derive(Clone)]
struct OpensLinks {
    ids: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for OpensLinks {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"url": {}}})).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("opens-links", "1.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let json: Json = serde_json::to_value(&request).expect("json");
        if let Some(id) = json["elicitationId"].as_str() {
            self.ids.lock().expect("not poisoned").push(id.to_owned());
        }
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }
}

/// A fresh schema of its own on the test database (its name, and the URL
/// that uses it).
async fn schema_url(base: &str) -> (String, String) {
    let schema = format!(
        "askgate_gw_{}_{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond()
    );
    let admin = sqlx::postgres::PgPool::connect(base)
        .await
        .expect("PostgreSQL is reachable");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await
        .expect("creates a schema");
    admin.close().await;
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
    (schema, url)
}

#[tokio::test]
async fn an_answer_from_another_process_resumes_the_call_a_gateway_holds() {
    let Ok(base) = std::env::var("ASKGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "notice: ASKGATE_TEST_POSTGRES_URL is not set; the two-gateway PostgreSQL test is skipped"
        );
        return;
    };
    let (schema, store) = schema_url(&base).await;
    let spawn = || {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_askgate"));
        command
            .args(["gateway", "--store", &store, "--"])
            .arg(upstream())
            .env("ASKGATE_LOG", "warn");
        TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("a gateway starts")
            .0
    };
    let ids = Arc::new(Mutex::new(Vec::new()));
    // Two replicas; the client talks to the first one.
    let first = OpensLinks { ids: ids.clone() }
        .serve(spawn())
        .await
        .expect("connects to the first gateway");
    let second = OpensLinks {
        ids: Arc::new(Mutex::new(Vec::new())),
    }
    .serve(spawn())
    .await
    .expect("connects to the second gateway");
    assert!(!second.list_all_tools().await.expect("tools").is_empty());

    let call = tokio::spawn(async move {
        let result = first
            .call_tool(CallToolRequestParams::new(
                "askgate-example-upstream__delete_all_notes",
            ))
            .await;
        (first, result)
    });
    // The person was sent the inbox page; the call waits on the store.
    let mut id = None;
    for _ in 0..100 {
        id = ids.lock().expect("not poisoned").first().cloned();
        if id.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let id = id.expect("a URL-mode ask was sent");
    assert!(!call.is_finished(), "the call waits for the person");

    // Answered from another process, as the inbox does, by a person of
    // the config.
    let config = std::env::temp_dir().join(format!("askgate-gw-pg-{schema}.toml"));
    std::fs::write(
        &config,
        format!(
            "store = {store:?}\n\n[[upstreams]]\nname = \"none\"\ncommand = \"true\"\n\n\
             [[people]]\nname = \"alice\"\ntoken = \"alice-person-token-0123456789\"\n\
             answers_for = [\"*\"]\n"
        ),
    )
    .expect("writes the config");
    let answered = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(["asks", "--config"])
        .arg(&config)
        .args(["answer", &id, "--content", r#"{"confirm": true}"#])
        .env("ASKGATE_TOKEN", "alice-person-token-0123456789")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the CLI runs");
    assert!(
        answered.status.success(),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );
    let (_first, result) = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the held call resumes")
        .expect("joins");
    let result = result.expect("a result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text = result.content[0].as_text().expect("text").text.clone();
    assert!(text.to_lowercase().contains("deleted"), "{text}");

    let admin = sqlx::postgres::PgPool::connect(&base)
        .await
        .expect("reachable");
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(&admin)
        .await;
}
