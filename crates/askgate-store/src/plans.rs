//! How the store's lookups on a call's way are planned on SQLite: each by
//! an index, never by reading every row a table holds, and in the order
//! the index keeps, never sorted again at each read.

use sqlx::Row;

use crate::Store;
use crate::asks::BY_CALL_KEY;
use crate::backend::Pool;
use crate::ledger::{OF_REQUEST, RECOVER_LAPSED, may_have_run_sql};

/// What SQLite's planner says it does for `sql` on `store`: one line a
/// step.
async fn plan(store: &Store, sql: &str) -> Vec<String> {
    explained(store, "EXPLAIN QUERY PLAN", sql, "detail").await
}

/// The opcodes SQLite compiles `sql` to on `store`.
async fn opcodes(store: &Store, sql: &str) -> Vec<String> {
    explained(store, "EXPLAIN", sql, "opcode").await
}

/// The `column` of each row of `explain` `sql` on `store`.
async fn explained(store: &Store, explain: &str, sql: &str, column: &str) -> Vec<String> {
    let Pool::Sqlite(pool) = &store.pool else {
        panic!("a SQLite store");
    };
    // `EXPLAIN` runs nothing, so it would plan with whatever schema the
    // connection last read (one opened while the store's migrations ran
    // knows indexes they dropped since): a statement that runs first
    // reads the schema as it stands.
    let mut connection = pool.acquire().await.expect("a connection");
    sqlx::query("SELECT count(*) FROM sqlite_schema")
        .fetch_one(&mut *connection)
        .await
        .expect("reads the schema");
    let explain = sqlx::AssertSqlSafe(format!("{explain} {sql}"));
    sqlx::query(explain)
        .fetch_all(&mut *connection)
        .await
        .expect("explained")
        .iter()
        .map(|row| row.get::<String, _>(column))
        .collect()
}

/// A fresh SQLite store in a scratch folder of its own, and that folder.
async fn scratch_store(name: &str) -> (Store, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("askgate-plan-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let url = format!("sqlite://{}/store.db", dir.display());
    (Store::open(&url).await.expect("opens"), dir)
}

/// Recovery, run with every beat, and a retry's look for a call that may
/// have run each search the index of open calls for the states they
/// want; neither scans the ledger.
#[tokio::test]
async fn recovery_and_a_retry_find_open_calls_by_their_index_not_by_reading_the_ledger() {
    let (store, dir) = scratch_store("open").await;
    for (what, sql) in [
        ("recovery", RECOVER_LAPSED.to_owned()),
        ("a retry's look", may_have_run_sql(2)),
    ] {
        let steps = plan(&store, &sql).await;
        let calls: Vec<&String> = steps
            .iter()
            .filter(|step| step.contains("calls") && !step.contains("owners"))
            .collect();
        assert!(
            !calls.is_empty()
                && calls
                    .iter()
                    .all(|step| step.starts_with("SEARCH calls USING INDEX calls_open (state=?")),
            "{what} searches the open calls by state: {steps:?}"
        );
    }
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A call's asks, read newest first before its person is asked, and a
/// request's newest call, read by a retry that carries its request's
/// state, come out of their index in the order asked for. Before schema
/// v20 their indexes lacked the order's last column, and SQLite sorted
/// the rows it found in a temporary B-tree at every read (`USE TEMP
/// B-TREE FOR LAST TERM OF ORDER BY`), which cost more than the search.
#[tokio::test]
async fn a_calls_asks_and_a_requests_newest_call_are_read_in_their_indexs_order_unsorted() {
    let (store, dir) = scratch_store("order").await;
    for (what, sql, search) in [
        (
            "a call's asks",
            BY_CALL_KEY,
            "SEARCH asks USING INDEX asks_of_call (call_key=?)",
        ),
        (
            "a request's newest call",
            OF_REQUEST,
            "SEARCH calls USING INDEX calls_of_request (request=?)",
        ),
        ("a retry's look", &may_have_run_sql(2), "SEARCH calls"),
        ("recovery", RECOVER_LAPSED, "SEARCH calls"),
    ] {
        let steps = plan(&store, sql).await;
        assert!(
            steps.iter().any(|step| step.starts_with(search))
                && !steps.iter().any(|step| step.contains("TEMP B-TREE")),
            "{what}: `{search}`, and no sort of its own: {steps:?}"
        );
    }
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A confirmed call's look for an earlier try, by the digest in use and
/// any earlier ones, builds no temporary B-tree: before, its `state IN`
/// list of two states and its list of digests were each one SQLite made
/// at every run, to search the index once for each of their values.
#[tokio::test]
async fn a_retrys_look_builds_no_temporary_list() {
    let (store, dir) = scratch_store("list").await;
    for earlier in [0, 1, 2] {
        let ops = opcodes(&store, &may_have_run_sql(earlier)).await;
        assert!(
            ops.iter().any(|op| op == "OpenRead") && !ops.iter().any(|op| op == "OpenEphemeral"),
            "{earlier} earlier digests: {ops:?}"
        );
    }
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
