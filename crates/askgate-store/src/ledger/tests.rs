//! How the ledger's lookups of open calls are planned on SQLite: by the
//! index of open calls, never by reading every call the ledger holds.

use sqlx::Row;

use super::owners::RECOVER_LAPSED;
use super::retries::may_have_run_sql;
use crate::Store;
use crate::backend::Pool;

/// What SQLite's planner says it does for `sql` on `store`: one line a
/// step.
async fn plan(store: &Store, sql: &str) -> Vec<String> {
    let Pool::Sqlite(pool) = &store.pool else {
        panic!("a SQLite store");
    };
    let explain = sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}"));
    sqlx::query(explain)
        .fetch_all(pool)
        .await
        .expect("planned")
        .iter()
        .map(|row| row.get::<String, _>("detail"))
        .collect()
}

/// Recovery, run with every beat, and a retry's look for a call that may
/// have run each search the index of open calls for the states they
/// want; neither scans the ledger.
#[tokio::test]
async fn recovery_and_a_retry_find_open_calls_by_their_index_not_by_reading_the_ledger() {
    let dir = std::env::temp_dir().join(format!("askgate-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let url = format!("sqlite://{}/store.db", dir.display());
    let store = Store::open(&url).await.expect("opens");
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
