//! What the tests of writes on the store's own thread share: a store in a
//! scratch folder, its writer, its thread's count of jobs, and a call to
//! record with its decision's entry.

use std::sync::Arc;

use askgate_testkit::Scratch;
use jiff::Timestamp;
use sqlx::sqlite::SqliteConnection;

use crate::backend::{Store, Writer};
use crate::writer::GroupCommit;
use crate::{AuditEntry, Decision, NewCall, RecordedCall};

/// A new SQLite store in a scratch folder (kept while the folder is).
pub(crate) async fn scratch_store() -> (Scratch, Store) {
    let dir = Scratch::new();
    let store = Store::open(&dir.store_url()).await.expect("opens");
    (dir, store)
}

/// The store's sqlx writer.
pub(crate) fn sqlite_writer(store: &Store) -> &Arc<GroupCommit<SqliteConnection>> {
    match &store.writer {
        Writer::Sqlite(writer) => writer,
        Writer::Postgres { .. } => panic!("a SQLite store"),
    }
}

/// How many jobs the store's own thread has run.
pub(crate) fn jobs(store: &Store) -> u64 {
    store
        .direct
        .as_ref()
        .expect("a store file has its thread")
        .jobs_run()
}

/// The same store without its own thread: every write the sqlx way.
pub(crate) fn by_sqlx(store: &Store) -> Store {
    let mut store = store.clone();
    store.direct = None;
    store
}

/// A call `id` of alice's to `files`.
pub(crate) fn call(id: &str) -> NewCall {
    NewCall {
        id: id.to_owned(),
        owner: "gw-1".into(),
        server: "files".into(),
        tool: "delete".into(),
        arguments_digest: Some(format!("hmac-sha256:{id}")),
        principal: Some("alice".into()),
        request: Some(format!("req-{id}")),
        at: Timestamp::from_second(1_800_000_000).expect("an instant"),
    }
}

/// The entry of the decision that let `call` through, under
/// `decision_key`.
pub(crate) fn entry(call: &NewCall, decision_key: Option<&str>) -> AuditEntry {
    AuditEntry {
        at: call.at,
        server: call.server.clone(),
        tool: call.tool.clone(),
        risk: "destructive".into(),
        decision: Decision::Elicited,
        reason: format!("{} confirmed by a person", call.id),
        answered_by: Some("alice".into()),
        principal: call.principal.clone(),
        answered_via: Some("mcp".into()),
        arguments_digest: call.arguments_digest.clone(),
        ask_id: None,
        decision_key: decision_key.map(str::to_owned),
    }
}

/// Record the call `id` as sent, with its entry.
pub(crate) async fn record(store: &Store, id: &str, decision_key: Option<&str>) -> RecordedCall {
    let call = call(id);
    let entry = entry(&call, decision_key);
    store
        .record_sent_call(&entry, &call, &format!("m-{id}"), call.at)
        .await
        .expect("records")
}
