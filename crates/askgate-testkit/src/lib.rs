//! What askgate's tests share, so that each is written once: a clock
//! the test moves ([`clock`]), scratch
//! directories and SQLite stores ([`scratch`]), a fresh PostgreSQL schema
//! when one is configured ([`postgres`]), a PostgreSQL server of a test's
//! own that it stops and starts ([`own_postgres`]), a scripted person behind an MCP
//! client ([`person`]), an in-process client and server ([`mcp`]), waits
//! on news rather than sleeps ([`wait`]), processes whose stderr a test
//! reads ([`process`]), the `askgate gateway` harness ([`gateway`]) and,
//! with the `in-process` feature, the gateway in the test's own process
//! over a `tokio::io::duplex` (`in_process`), a
//! webhook receiver ([`webhook`]), the inbox's pages read as a browser
//! would ([`page`]), a person's answer given in the inbox
//! ([`answer_in_inbox`]) and random ids ([`unique`]).
//!
//! A dev-dependency only. Nothing here sleeps to wait for something: a
//! wait ends on the news it waits for, and fails the test — naming what
//! it waited for — if that news does not come within [`wait::PATIENCE`].

pub mod approvals;
pub mod clock;
pub mod gateway;
#[cfg(feature = "in-process")]
pub mod in_process;
pub mod issuer;
pub mod mcp;
pub mod own_postgres;
pub mod page;
pub mod person;
pub mod postgres;
pub mod process;
pub mod scratch;
pub mod terminal;
pub mod wait;
pub mod webhook;

use askgate_core::Surface;
use askgate_mcp::stored::{self, Act};
use askgate_store::{AskRow, AuditEntry, Decision, NewAsk, Store};

pub use person::{Manner, Person};
pub use scratch::{Fresh, Scratch, TempStore};
pub use wait::{Seen, within};

/// `prefix` and 16 random hex digits: an id no other test, and no other
/// run, uses.
///
/// # Example
/// ```
/// let id = askgate_testkit::unique("ask_");
/// assert!(id.starts_with("ask_") && id.len() == 20);
/// ```
pub fn unique(prefix: &str) -> String {
    let mut bytes = [0u8; 8];
    // The system's randomness is there on every platform the tests run
    // on; without it no test could make a name.
    getrandom::fill(&mut bytes).expect("the system gives random bytes");
    format!("{prefix}{}", hex::encode(bytes))
}

/// A person, `by`, answers the pending ask `id` through `via` (the inbox
/// page, the CLI) with `act`: the same checks as there, then the store.
/// The ask as it settled.
pub async fn answer_in_inbox(store: &Store, id: &str, act: Act, by: &str, via: Surface) -> AskRow {
    let row = store
        .ask(id)
        .await
        .expect("the store reads")
        .expect("the ask is parked");
    let settlement = stored::settle(&row.ask.request, act, by, via).expect("a valid answer");
    store
        .settle(id, &settlement, jiff::Timestamp::now())
        .await
        .expect("the first answer settles")
}

/// An answer with `content` (a JSON object), as a form filled in.
pub fn answer(content: serde_json::Value) -> Act {
    Act::Answer(content.as_object().cloned().expect("an object"))
}

/// A new ask `id` of `principal`, asking `request`, parked at `at`: of
/// no server, tool or risk, and never expiring (set those with struct
/// update syntax).
pub fn new_ask(
    id: &str,
    principal: &str,
    request: serde_json::Value,
    at: jiff::Timestamp,
) -> NewAsk {
    NewAsk {
        id: id.to_owned(),
        resume_key: format!("tool:run:{id}"),
        call_key: None,
        principal: principal.to_owned(),
        request,
        server: None,
        tool: None,
        risk: None,
        created_at: at,
        expires_at: None,
        panel: None,
    }
}

/// An audit entry of `decision` on `server`'s `tool` (risk destructive)
/// at `at`, answered by nobody, of no principal, ask or arguments (set
/// those with struct update syntax).
pub fn audit_entry(
    at: jiff::Timestamp,
    server: &str,
    tool: &str,
    decision: Decision,
) -> AuditEntry {
    AuditEntry {
        at,
        server: server.to_owned(),
        tool: tool.to_owned(),
        risk: "destructive".to_owned(),
        decision,
        reason: "declined by a person".to_owned(),
        answered_by: None,
        principal: None,
        answered_via: None,
        arguments_digest: None,
        ask_id: None,
        decision_key: None,
    }
}

/// The audit chain of `store`, oldest first.
pub async fn audited(store: &Store) -> Vec<AuditEntry> {
    let records = store.audit_entries().await.expect("the audit reads");
    records.into_iter().map(|record| record.entry).collect()
}

/// The newest audit entry of `store`.
pub async fn last_audited(store: &Store) -> AuditEntry {
    audited(store).await.pop().expect("an audit entry")
}

/// The one value `sql` reads from the SQLite store at `url` (as someone
/// with the file at hand would).
pub async fn sqlite_value<T>(url: &str, sql: &str) -> T
where
    T: for<'r> sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite> + Send + Unpin,
{
    let pool = sqlx::sqlite::SqlitePool::connect(url)
        .await
        .expect("the file opens");
    let value = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(&pool)
        .await
        .expect("the query reads");
    pool.close().await;
    value
}

/// The deploy form of the MCP tests: "Deploy billing?", the environment
/// (staging or production) and then `fields` (a JSON array).
pub fn deploy_form(fields: serde_json::Value) -> askgate_core::Form {
    let mut all = vec![
        serde_json::json!({"id": "env", "title": "Environment", "type": "choice",
        "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]}),
    ];
    all.extend(fields.as_array().cloned().unwrap_or_default());
    serde_json::from_value(serde_json::json!({"message": "Deploy billing?", "fields": all}))
        .expect("a form")
}
