//! `askgate asks ...` and `askgate audit ...` against a real SQLite store,
//! as a person runs them.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

use askgate_core::{Ask, Form, QuestionSet};
use askgate_store::{AskStatus, AuditEntry, Decision, NewAsk, Store};
use jiff::Timestamp;
use serde_json::{Value as Json, json};

static NEXT: AtomicU32 = AtomicU32::new(0);

fn store_url() -> String {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("askgate-cli-store-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    format!("sqlite://{}", dir.join("askgate.db").display())
}

fn askgate(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(args)
        .args(["--store", url])
        .output()
        .expect("askgate runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn form_request() -> Json {
    let form: Form = serde_json::from_value(json!({
        "message": "Delete 40 files?",
        "fields": [
            {"id": "confirm", "title": "Delete them", "type": "boolean"},
            {"id": "keep", "title": "Keep a backup for", "type": "integer", "minimum": 1, "maximum": 30, "default": 7}
        ]
    }))
    .expect("a form");
    json!({"kind": "form", "ask": Ask::new(form).expect("askable").to_record()})
}

fn set_request() -> Json {
    let set: QuestionSet = serde_json::from_value(json!({"source": "ask", "questions": [
        {"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
         "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]}]}))
    .expect("a set");
    json!({"kind": "question_set", "set": set})
}

async fn park(url: &str, id: &str, request: Json) -> Store {
    let store = Store::open(url).await.expect("opens");
    store
        .park(&NewAsk {
            id: id.into(),
            resume_key: format!("tool:run:{id}"),
            call_key: None,
            principal: "alice".into(),
            request,
            server: Some("files".into()),
            tool: Some("delete".into()),
            risk: Some("destructive".into()),
            created_at: Timestamp::from_second(1_800_000_000).expect("in range"),
            expires_at: None,
        })
        .await
        .expect("parks");
    store
}

#[tokio::test]
async fn a_parked_ask_is_listed_and_answered_through_the_same_checks() {
    let url = store_url();
    let store = park(&url, "a1", form_request()).await;

    let list = askgate(&url, &["asks", "list"]);
    assert_eq!(list.status.code(), Some(0), "{}", text(&list.stderr));
    assert!(text(&list.stdout).contains("a1") && text(&list.stdout).contains("files/delete"));
    let listed: Json =
        serde_json::from_slice(&askgate(&url, &["asks", "list", "--json"]).stdout).expect("JSON");
    assert_eq!(listed["asks"][0]["id"], "a1");

    let wrong = askgate(
        &url,
        &[
            "asks",
            "answer",
            "a1",
            "--content",
            r#"{"confirm": true, "keep": 90}"#,
        ],
    );
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        text(&wrong.stderr).contains("Keep a backup for: 90 is too large"),
        "{}",
        text(&wrong.stderr)
    );
    let row = store.ask("a1").await.expect("reads").expect("exists");
    assert_eq!(
        row.status,
        AskStatus::Pending,
        "a refused answer is not applied"
    );

    let right = askgate(
        &url,
        &[
            "asks",
            "answer",
            "a1",
            "--as",
            "bob",
            "--content",
            r#"{"confirm": true}"#,
        ],
    );
    assert_eq!(right.status.code(), Some(0), "{}", text(&right.stderr));
    let row = store.ask("a1").await.expect("reads").expect("exists");
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(
        (row.answered_by.as_deref(), row.answered_via.as_deref()),
        (Some("bob"), Some("cli"))
    );
    let outcome = row.outcome.expect("an outcome");
    assert_eq!(outcome["values"]["keep"]["source"], "defaulted");

    let again = askgate(&url, &["asks", "decline", "a1"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already answered"),
        "{}",
        text(&again.stderr)
    );

    // As the inbox lists them: settled ones, narrowed by server and risk.
    let pending: Json =
        serde_json::from_slice(&askgate(&url, &["asks", "list", "--json"]).stdout).expect("JSON");
    assert_eq!(pending["asks"], json!([]), "a1 is no longer pending");
    let settled: Json = serde_json::from_slice(
        &askgate(
            &url,
            &[
                "asks",
                "list",
                "--json",
                "--status",
                "settled",
                "--server",
                "files",
                "--risk",
                "destructive",
            ],
        )
        .stdout,
    )
    .expect("JSON");
    assert_eq!(settled["asks"][0]["id"], "a1");
    let elsewhere: Json = serde_json::from_slice(
        &askgate(
            &url,
            &[
                "asks", "list", "--json", "--status", "settled", "--server", "mail",
            ],
        )
        .stdout,
    )
    .expect("JSON");
    assert_eq!(elsewhere["asks"], json!([]));
    let bad = askgate(&url, &["asks", "list", "--status", "sometime"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("expected pending, settled"),
        "{}",
        text(&bad.stderr)
    );
    let shown: Json =
        serde_json::from_slice(&askgate(&url, &["asks", "show", "a1", "--json"]).stdout)
            .expect("JSON");
    assert_eq!(shown["status"], "answered");
    assert!(shown["audit"].is_array());
}

#[tokio::test]
async fn a_form_is_declined_and_only_a_question_set_is_skipped() {
    let url = store_url();
    let store = park(&url, "f1", form_request()).await;
    park(&url, "q1", set_request()).await;

    let skip_form = askgate(&url, &["asks", "skip", "f1"]);
    assert_eq!(skip_form.status.code(), Some(1));
    assert!(
        text(&skip_form.stderr).contains("skip is for question sets"),
        "{}",
        text(&skip_form.stderr)
    );
    assert_eq!(
        askgate(&url, &["asks", "decline", "f1"]).status.code(),
        Some(0)
    );
    assert_eq!(
        store
            .ask("f1")
            .await
            .expect("reads")
            .expect("exists")
            .status,
        AskStatus::Declined
    );

    assert_eq!(
        askgate(&url, &["asks", "skip", "q1"]).status.code(),
        Some(0)
    );
    let row = store.ask("q1").await.expect("reads").expect("exists");
    assert_eq!(row.status, AskStatus::Skipped);
    assert_eq!(row.outcome.expect("an outcome")["skipped"], true);
}

#[tokio::test]
async fn audit_verify_says_whether_the_chain_holds_and_where_it_breaks() {
    let url = store_url();
    let store = Store::open(&url).await.expect("opens");
    for tool in ["a", "b", "c"] {
        store
            .append_audit(&AuditEntry {
                at: Timestamp::from_second(1_800_000_000).expect("in range"),
                server: "files".into(),
                tool: tool.into(),
                risk: "destructive".into(),
                decision: Decision::Blocked,
                reason: "declined by a person".into(),
                answered_by: Some("alice".into()),
                principal: None,
                answered_via: Some("mcp".into()),
                arguments_digest: None,
                ask_id: None,
                decision_key: None,
            })
            .await
            .expect("appends");
    }
    let intact = askgate(&url, &["audit", "verify"]);
    assert_eq!(intact.status.code(), Some(0), "{}", text(&intact.stderr));
    assert!(
        text(&intact.stdout).contains("intact: 3 entries"),
        "{}",
        text(&intact.stdout)
    );
    let list = askgate(&url, &["audit", "list", "--json"]);
    let entries: Json = serde_json::from_slice(&list.stdout).expect("JSON");
    assert_eq!(entries.as_array().map(Vec::len), Some(3));

    let pool = sqlx::sqlite::SqlitePool::connect(&url)
        .await
        .expect("connects");
    sqlx::query(
        "UPDATE audit SET entry = replace(entry, 'blocked', 'auto_approved') WHERE seq = 2",
    )
    .execute(&pool)
    .await
    .expect("tampers");
    let broken = askgate(&url, &["audit", "verify"]);
    assert_eq!(broken.status.code(), Some(1));
    assert!(
        text(&broken.stdout).contains("entry 2 was edited"),
        "{}",
        text(&broken.stdout)
    );
}

#[test]
fn an_unknown_store_url_is_malformed_input() {
    let output = askgate("mysql://localhost/x", &["asks", "list"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("expected sqlite://PATH or postgres://"),
        "{}",
        text(&output.stderr)
    );
}
