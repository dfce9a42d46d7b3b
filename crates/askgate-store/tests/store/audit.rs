//! The audit chain: what verify names once someone tampered with it, and
//! a decision reached twice audited once.

use askgate_store::{ChainBreak, Store};
use askgate_testkit::TempStore;

use super::{entry, stores};

async fn chain(store: &Store) {
    for tool in ["one", "two", "three", "four"] {
        store.append_audit(&entry(tool)).await.expect("appends");
    }
    let ok = store.verify_audit().await.expect("verifies");
    assert_eq!((ok.entries, ok.broken), (4, None), "{}", store.name());
}

/// Where a chain of four entries breaks once someone with the database
/// (a SQLite file, at hand) ran `sql` on it.
async fn broken_after(sql: &str) -> Option<ChainBreak> {
    let store = TempStore::open().await;
    chain(&store).await;
    let pool = sqlx::sqlite::SqlitePool::connect(store.url())
        .await
        .expect("connects");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&pool)
        .await
        .expect("tampers");
    store.verify_audit().await.expect("verifies").broken
}

#[tokio::test]
async fn verify_names_an_edited_entry() {
    let edited =
        "UPDATE audit SET entry = replace(entry, 'elicited', 'auto_approved') WHERE seq = 2";
    assert_eq!(
        broken_after(edited).await,
        Some(ChainBreak::Edited { seq: 2 })
    );
}

#[tokio::test]
async fn verify_names_a_deleted_entry() {
    assert_eq!(
        broken_after("DELETE FROM audit WHERE seq = 2").await,
        Some(ChainBreak::Missing { expected: 2 })
    );
}

#[tokio::test]
async fn verify_names_reordered_entries() {
    let reordered = "UPDATE audit SET seq = 100 WHERE seq = 2; UPDATE audit SET seq = 2 WHERE seq = 3; \
                     UPDATE audit SET seq = 3 WHERE seq = 100";
    assert_eq!(
        broken_after(reordered).await,
        Some(ChainBreak::Reordered {
            seq: 2,
            written_at: 3
        })
    );
}

#[tokio::test]
async fn verify_names_an_inserted_entry() {
    // A forged entry at the end that does not follow the real last one.
    let inserted = "INSERT INTO audit (seq, entry, prev_hash, hash) SELECT 5, entry, hash, hash FROM audit WHERE seq = 1";
    let broken = broken_after(inserted).await;
    assert!(
        matches!(
            broken,
            Some(ChainBreak::Edited { seq: 5 } | ChainBreak::Unlinked { seq: 5 })
        ),
        "{broken:?}"
    );
}

#[tokio::test]
async fn a_decision_reached_twice_is_audited_once() {
    for store in stores().await {
        let mut first = entry("deploy");
        first.decision_key = Some("call-1:confirm".into());
        let recorded = store.append_audit(&first).await.expect("appends");
        let mut again = entry("deploy");
        again.decision_key = Some("call-1:confirm".into());
        again.reason = "decided again on a retry".into();
        let same = store.append_audit(&again).await.expect("recognised");
        assert_eq!(same.seq, recorded.seq);
        assert_eq!(same.hash, recorded.hash);
        store.append_audit(&entry("other")).await.expect("appends");
        let entries = store.audit_entries().await.expect("reads");
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].entry.reason, first.reason, "the first stands");
        assert!(
            store
                .verify_audit()
                .await
                .expect("verifies")
                .broken
                .is_none()
        );
    }
}
