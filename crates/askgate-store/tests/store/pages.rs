//! What a call's writes cost SQLite: the pages each commit writes to the
//! WAL and syncs. A confirmed call waits on its record's commit, and every
//! page of it is a frame written and synced; these counts are the cost's
//! measure that does not depend on the machine.

use std::path::Path;
use std::time::Duration;

use askgate_store::{CallOutcome, CallState, Store};
use askgate_testkit::Scratch;
use serde_json::json;
use sqlx::sqlite::SqlitePool;

use super::{at, call, entry, retry_of};

/// The frames `store.db`'s WAL holds, by its length: a 32-byte header,
/// then a 24-byte header and a page for each frame.
fn wal_frames(db: &Path, page_size: u64) -> u64 {
    let wal = db.with_extension("db-wal");
    let len = std::fs::metadata(wal).map_or(0, |m| m.len());
    len.saturating_sub(32) / (page_size + 24)
}

/// `sql` on the file of `url`, as another program would; its rows'
/// first column as integers.
async fn side(url: &str, sql: &str) -> Vec<i64> {
    let pool = SqlitePool::connect(url).await.expect("connects");
    let rows: Vec<(i64,)> = sqlx::query_as(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_all(&pool)
        .await
        .expect("runs");
    pool.close().await;
    rows.into_iter().map(|(n,)| n).collect()
}

/// The pages each of `n` confirmed calls' records wrote, and each of their
/// ends, recorded as the gateway records them (the record with a keyed
/// entry, then the end), the WAL emptied first so that none of it is
/// checkpointed and begun again meanwhile.
async fn pages_a_call(store: &Store, url: &str, db: &Path, n: usize) -> (Vec<u64>, Vec<u64>) {
    let page_size = side(url, "PRAGMA page_size").await[0] as u64;
    let busy = side(url, "PRAGMA wal_checkpoint(TRUNCATE)").await[0];
    assert_eq!(busy, 0, "the WAL emptied");
    let (mut records, mut ends) = (Vec::new(), Vec::new());
    for i in 0..n {
        let mut keyed = entry("delete");
        keyed.decision_key = Some(format!("elicited:{i}"));
        let mut confirmed = call(&format!("call-{i:04}"), "gw-1");
        confirmed.arguments_digest = Some(format!("hmac-sha256:{i:04}"));
        let before = wal_frames(db, page_size);
        store
            .record_sent_call(&keyed, &confirmed, "m-1", at(1))
            .await
            .expect("records");
        let recorded = wal_frames(db, page_size);
        store
            .finish_call(&confirmed.id, CallOutcome::Answered, &json!({}), at(2))
            .await
            .expect("ends");
        let ended = wal_frames(db, page_size);
        records.push(recorded - before);
        ends.push(ended - recorded);
    }
    assert!(
        records.iter().chain(&ends).all(|&pages| pages > 0),
        "every commit appended to the WAL: {records:?} {ends:?}"
    );
    (records, ends)
}

fn median(pages: &[u64]) -> u64 {
    let mut sorted = pages.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

/// A confirmed call's record changes five B-trees — its row, the index of
/// open calls, the audit entry, its decision key's index, the chain's
/// head — and its end two: its row, and the open calls'. Eight and three
/// when a call's and an entry's keys were B-trees of their own and open
/// calls had two indexes.
async fn assert_few_pages(store: &Store, url: &str, db: &Path) {
    let (records, ends) = pages_a_call(store, url, db, 25).await;
    assert!(
        median(&records) <= 5,
        "a record writes five pages: {records:?}"
    );
    assert!(median(&ends) <= 2, "an end writes two pages: {ends:?}");
}

#[tokio::test]
async fn a_confirmed_calls_record_writes_five_pages_and_its_end_two() {
    let dir = Scratch::new();
    let url = dir.store_url();
    let store = Store::open(&url).await.expect("opens");
    assert_few_pages(&store, &url, &dir.join("s.db")).await;
    store.close().await;
}

/// The tables as an askgate before v19 made them: a call's id and an
/// entry's position keyed apart from their rows, two indexes of open
/// calls.
const BEFORE_V19: &str = "
CREATE TABLE calls_old (id TEXT PRIMARY KEY, owner TEXT NOT NULL, server TEXT NOT NULL,
    tool TEXT NOT NULL, arguments_digest TEXT, state TEXT NOT NULL, marker TEXT,
    prepared_at BIGINT NOT NULL, sent_at BIGINT, finished_at BIGINT, result TEXT,
    principal TEXT, request TEXT, told_at BIGINT);
INSERT INTO calls_old SELECT id, owner, server, tool, arguments_digest, state, marker,
    prepared_at, sent_at, finished_at, result, principal, request, told_at FROM calls;
DROP TABLE calls;
ALTER TABLE calls_old RENAME TO calls;
CREATE INDEX calls_sent ON calls (owner) WHERE state = 'sent';
CREATE INDEX calls_in_doubt ON calls (arguments_digest) WHERE state IN ('sent', 'may_have_run');
CREATE INDEX calls_request ON calls (request) WHERE request IS NOT NULL;
CREATE TABLE audit_old (seq BIGINT PRIMARY KEY, entry TEXT NOT NULL, prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL, decision_key TEXT);
INSERT INTO audit_old SELECT seq, entry, prev_hash, hash, decision_key FROM audit;
DROP TABLE audit;
ALTER TABLE audit_old RENAME TO audit;
CREATE UNIQUE INDEX audit_decision_key ON audit (decision_key) WHERE decision_key IS NOT NULL;
UPDATE askgate_schema SET version = 18;
";

/// A store an askgate before v19 wrote is migrated on open with every
/// call and every entry as it was: the chain verifies, a call in flight
/// is recovered as one that may have run and a retry finds it, an ended
/// call keeps its end, an entry its decision key — and its next calls
/// are recorded in the fewer pages.
#[tokio::test]
async fn a_store_from_before_v19_keeps_its_calls_and_its_chain_and_records_in_fewer_pages() {
    let dir = Scratch::new();
    let url = dir.store_url();
    let store = Store::open(&url).await.expect("opens");
    let mut keyed = entry("delete");
    keyed.decision_key = Some("elicited:sent".into());
    let mut in_flight = call("c1", "gw-1");
    in_flight.request = Some("req-1".into());
    store
        .record_sent_call(&keyed, &in_flight, "m-1", at(1))
        .await
        .expect("records");
    let mut ended = call("c2", "gw-1");
    ended.arguments_digest = Some("hmac-sha256:c2".into());
    store
        .record_sent_call(&entry("delete"), &ended, "m-2", at(1))
        .await
        .expect("records");
    store
        .finish_call(
            "c2",
            CallOutcome::Answered,
            &json!({"is_error": false}),
            at(2),
        )
        .await
        .expect("ends");
    store.append_audit(&entry("read")).await.expect("appends");
    let chain = store.verify_audit().await.expect("verifies");
    store.close().await;
    let pool = SqlitePool::connect(&url).await.expect("connects");
    sqlx::raw_sql(BEFORE_V19)
        .execute(&pool)
        .await
        .expect("taken back");
    pool.close().await;

    let store = Store::open(&url).await.expect("migrates");
    assert_eq!(store.verify_audit().await.expect("verifies"), chain);
    assert!(chain.broken.is_none() && chain.entries == 3, "{chain:?}");
    let again = store.append_audit(&keyed).await.expect("appends");
    assert_eq!(again.seq, 1, "the decision key still holds its entry");
    let c2 = store.call("c2").await.expect("reads").expect("kept");
    assert_eq!(
        (c2.state, c2.result),
        (CallState::Answered, Some(json!({"is_error": false})))
    );
    let recovered = store
        .recover_lapsed(at(100), Duration::from_secs(10))
        .await
        .expect("recovers");
    assert_eq!(
        recovered
            .iter()
            .map(|c| c.call.id.as_str())
            .collect::<Vec<_>>(),
        ["c1"],
        "the call in flight may have run; the ended one not"
    );
    let digest = in_flight.arguments_digest.clone().expect("a digest");
    let retry = retry_of(&digest);
    let found = store
        .may_have_run(&retry, at(0), "gw-2")
        .await
        .expect("reads")
        .expect("the call that may have run");
    assert_eq!(
        (found.call.call.id.as_str(), found.call.marker.as_deref()),
        ("c1", Some("m-1"))
    );
    assert_eq!(
        store
            .call_of_request("req-1")
            .await
            .expect("reads")
            .map(|c| c.call.id),
        Some("c1".to_owned())
    );
    assert_few_pages(&store, &url, &dir.join("s.db")).await;
    store.close().await;
}
