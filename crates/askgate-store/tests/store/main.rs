//! One suite, run against every backend: SQLite always, PostgreSQL when
//! `ASKGATE_TEST_POSTGRES_URL` is set (`.ci/run` sets it).

use askgate_store::{AskStatus, AuditEntry, Decision, NewAsk, NewCall, Retry, Settlement};
use askgate_testkit::{Fresh, TempStore};
use jiff::Timestamp;
use serde_json::json;

mod asks;
mod audit;
mod ledger;
mod opening;
mod outage;
mod pages;
mod panels;
mod sealed;
mod tasks;
mod tries;

/// What these tests say when PostgreSQL is not configured.
const POSTGRES_HALF: &str = "the PostgreSQL half of these tests";

/// The stores to run a test against: a fresh SQLite file, and a fresh
/// PostgreSQL schema when the database is configured.
async fn stores() -> Vec<TempStore> {
    TempStore::every(POSTGRES_HALF).await
}

/// URLs of fresh stores: a SQLite file, and a PostgreSQL schema when
/// `ASKGATE_TEST_POSTGRES_URL` is set.
async fn urls() -> Vec<Fresh> {
    Fresh::every(POSTGRES_HALF).await
}

/// A fresh PostgreSQL store's URL, when the database is configured.
async fn postgres() -> Option<Fresh> {
    urls().await.into_iter().find(|u| u.starts_with("postgres"))
}

/// `sql` run on `store` as another program would, past askgate's own
/// statements: the error it gets, if any.
async fn raw(store: &TempStore, sql: &str) -> Option<String> {
    let sql = sqlx::AssertSqlSafe(sql.to_owned());
    let done = if store.url().starts_with("postgres") {
        let pool = sqlx::postgres::PgPool::connect(store.url())
            .await
            .expect("connects");
        sqlx::raw_sql(sql).execute(&pool).await.map(drop)
    } else {
        let pool = sqlx::sqlite::SqlitePool::connect(store.url())
            .await
            .expect("connects");
        sqlx::raw_sql(sql).execute(&pool).await.map(drop)
    };
    done.err().map(|e| e.to_string())
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).expect("in range")
}

fn new_ask(id: &str, created: i64, expires: Option<i64>) -> NewAsk {
    NewAsk {
        id: id.to_owned(),
        resume_key: format!("tool:run-1:{id}"),
        call_key: None,
        principal: "alice".into(),
        request: json!({"message": "Deploy?", "fields": []}),
        server: Some("deploy".into()),
        tool: Some("ship".into()),
        risk: Some("high_write".into()),
        created_at: at(created),
        expires_at: expires.map(at),
        panel: None,
    }
}

fn answer(by: &str) -> Settlement {
    Settlement {
        status: AskStatus::Answered,
        reply: json!({"action": "accept", "content": {"confirm": true}}),
        outcome: json!({"outcome": "accepted"}),
        answered_by: Some(by.into()),
        answered_via: "web".into(),
    }
}

fn entry(tool: &str) -> AuditEntry {
    AuditEntry {
        at: at(1),
        server: "files".into(),
        tool: tool.into(),
        risk: "destructive".into(),
        decision: Decision::Elicited,
        reason: "confirmed by a person".into(),
        answered_by: Some("alice".into()),
        principal: None,
        answered_via: Some("mcp".into()),
        arguments_digest: Some("hmac-sha256:ab12".into()),
        ask_id: Some("a1".into()),
        decision_key: None,
    }
}

/// A retry of [`call`]'s call (its principal, server and tool) with
/// arguments of `digest`.
fn retry_of(digest: &str) -> Retry<'_> {
    Retry {
        principal: "anonymous",
        server: "files",
        tool: "delete",
        arguments_digest: digest,
        earlier_digests: &[],
    }
}

fn call(id: &str, owner: &str) -> NewCall {
    NewCall {
        id: id.into(),
        owner: owner.into(),
        server: "files".into(),
        tool: "delete".into(),
        arguments_digest: Some("hmac-sha256:cd34".into()),
        principal: Some("anonymous".into()),
        request: None,
        at: at(0),
    }
}
