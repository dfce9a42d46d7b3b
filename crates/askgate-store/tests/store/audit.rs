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
    tampered(sql, None).await
}

/// [`broken_after`], on a store that signs its head record with `key`
/// when one is given.
async fn tampered(sql: &str, key: Option<&[u8]>) -> Option<ChainBreak> {
    let store = TempStore::open().await;
    if let Some(key) = key {
        store.sign_audit_head(key);
    }
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

#[tokio::test]
async fn a_call_recorded_with_a_decision_already_audited_keeps_its_entry() {
    for store in stores().await {
        let mut decided = entry("deploy");
        decided.decision_key = Some("request-7:confirm".into());
        let first = store.append_audit(&decided).await.expect("appends");
        // The handler ran again on a retry: a new call, the same decision.
        let again = store
            .record_sent_call(&decided, &super::call("c2", "gw-1"), "m-2", super::at(1))
            .await
            .expect("records");
        assert_eq!(
            (
                again.audit.seq,
                &again.audit.hash,
                again.call.call.id.as_str()
            ),
            (first.seq, &first.hash, "c2"),
            "{}",
            store.name()
        );
        // The next call's entry links to the chain's head.
        let next = store
            .record_sent_call(
                &entry("next"),
                &super::call("c3", "gw-1"),
                "m-3",
                super::at(2),
            )
            .await
            .expect("records");
        assert_eq!(
            (next.audit.seq, &next.audit.prev_hash),
            (first.seq + 1, &first.hash)
        );
        let verified = store.verify_audit().await.expect("verifies");
        assert_eq!((verified.entries, verified.broken), (2, None));
    }
}

/// The deployment key the signed stores here are given.
const KEY: [u8; 32] = [5; 32];

/// [`broken_after`], on a store that signs its head record.
async fn broken_after_signed(sql: &str) -> Option<ChainBreak> {
    tampered(sql, Some(&KEY)).await
}

#[tokio::test]
async fn verify_names_the_newest_entries_deleted_and_all_of_them() {
    assert_eq!(
        broken_after("DELETE FROM audit WHERE seq >= 3").await,
        Some(ChainBreak::Cut {
            ends_at: 2,
            head: 4
        })
    );
    assert_eq!(
        broken_after("DELETE FROM audit").await,
        Some(ChainBreak::Cut {
            ends_at: 0,
            head: 4
        })
    );
    assert_eq!(
        broken_after("DELETE FROM audit WHERE seq = 4; DELETE FROM audit_head").await,
        Some(ChainBreak::HeadMissing)
    );
    assert_eq!(
        broken_after("DELETE FROM audit; DELETE FROM audit_head").await,
        Some(ChainBreak::HeadMissing),
        "emptied, head and all"
    );
}

#[tokio::test]
async fn a_signed_head_moved_back_by_hand_is_named_altered() {
    let moved_back = "DELETE FROM audit WHERE seq = 4; \
                      UPDATE audit_head SET seq = 3, hash = (SELECT hash FROM audit WHERE seq = 3)";
    assert_eq!(
        broken_after_signed(moved_back).await,
        Some(ChainBreak::HeadAltered)
    );
    // Unsigned, a head moved back with the chain holds together: what an
    // exported checkpoint, kept elsewhere, is for.
    assert_eq!(broken_after(moved_back).await, None);
}

#[tokio::test]
async fn every_write_that_appends_moves_the_signed_head_on_every_backend() {
    for store in stores().await {
        store.sign_audit_head(&KEY);
        store.append_audit(&entry("one")).await.expect("appends");
        store
            .record_sent_call(
                &entry("two"),
                &super::call("c1", "gw-1"),
                "m-1",
                super::at(1),
            )
            .await
            .expect("records");
        let ended: Vec<askgate_store::EndedCall> = (0..2)
            .map(|i| askgate_store::EndedCall {
                entry: entry(&format!("read-{i}")),
                call: super::call(&format!("r{i}"), "gw-1"),
                marker: format!("m-r{i}"),
                sent_at: super::at(2),
                end: askgate_store::CallEnd {
                    outcome: askgate_store::CallOutcome::Answered,
                    result: serde_json::json!({"blocks": 1}),
                    at: super::at(3),
                },
            })
            .collect();
        store.record_ended_calls(ended).await.expect("records");
        let verified = store.verify_audit().await.expect("verifies");
        assert_eq!(
            (verified.entries, verified.broken),
            (4, None),
            "{}",
            store.name()
        );
        // As the CLI checks it, with the deployment's keys: the current
        // one and the one rotated out.
        let signed = store
            .verify_audit_signed(&[vec![1; 32], KEY.to_vec()])
            .await
            .expect("verifies");
        assert_eq!(signed.broken, None);
        let other = store
            .verify_audit_signed(&[vec![1; 32]])
            .await
            .expect("verifies");
        assert_eq!(other.broken, Some(ChainBreak::HeadAltered), "another key's");
        store.close().await;
    }
}

#[tokio::test]
async fn a_head_signed_again_under_a_new_key_verifies_with_it_alone_and_a_forged_one_is_not() {
    for store in stores().await {
        store.sign_audit_head(&KEY);
        store.append_audit(&entry("one")).await.expect("appends");
        let next = [6u8; 32];
        // Not signed by the key named: left as it is.
        assert!(
            !store
                .resign_audit_head(&[vec![1; 32]], &next)
                .await
                .expect("reads")
        );
        assert!(
            store
                .resign_audit_head(&[vec![1; 32], KEY.to_vec()], &next)
                .await
                .expect("signs")
        );
        let verified = store
            .verify_audit_signed(&[next.to_vec()])
            .await
            .expect("verifies");
        assert_eq!(verified.broken, None, "{}", store.name());
        let old = store
            .verify_audit_signed(&[KEY.to_vec()])
            .await
            .expect("verifies");
        assert_eq!(
            old.broken,
            Some(ChainBreak::HeadAltered),
            "{}",
            store.name()
        );
        store.close().await;
    }
}

#[tokio::test]
async fn an_unsigned_head_is_named_where_the_key_is_known_but_the_one_this_process_recorded() {
    for store in stores().await {
        // Made here: the head this process's migration recorded is its
        // own, not signed yet; once a key is known it is signed.
        let fresh = store
            .verify_audit_signed(&[KEY.to_vec()])
            .await
            .expect("verifies");
        assert_eq!(fresh.broken, None, "{}", store.name());
        assert!(store.sign_seeded_audit_head(&KEY).await.expect("signs"));
        assert!(!store.sign_seeded_audit_head(&KEY).await.expect("once"));
        let signed = store
            .verify_audit_signed(&[KEY.to_vec()])
            .await
            .expect("verifies");
        assert_eq!(signed.broken, None, "{}", store.name());
        store.close().await;
    }
    // Unsigned by hand, where the key is known: named.
    assert_eq!(
        tampered("UPDATE audit_head SET tag = NULL", Some(&KEY)).await,
        Some(ChainBreak::HeadUnsigned)
    );
    // With no key, the head is held to the chain only.
    assert_eq!(broken_after("UPDATE audit_head SET tag = NULL").await, None);
}

/// A gateway records its calls while another process on the same store
/// (the inbox, a replica, the CLI) appends between them. Each record lands
/// at the chain's end, says where it landed, keeps an entry the other
/// process audited first under the same decision key, and the chain
/// stays one.
#[tokio::test]
async fn records_and_another_process_appends_keep_one_chain_each_record_where_it_says() {
    for url in super::urls().await {
        let gateway = Store::open(&url).await.expect("opens");
        let other = Store::open(&url).await.expect("opens again");
        let record = |id: &str, tool: &str| {
            let (gateway, id, tool) = (gateway.clone(), id.to_owned(), tool.to_owned());
            async move {
                gateway
                    .record_sent_call(&entry(&tool), &super::call(&id, "gw-1"), "m", super::at(1))
                    .await
                    .expect("records")
            }
        };
        let mut said = vec![record("c1", "one").await, record("c2", "two").await];
        other
            .append_audit(&entry("elsewhere"))
            .await
            .expect("appends");
        said.push(record("c3", "three").await);
        said.push(record("c4", "four").await);
        // A decision the other process audited first: the record keeps it.
        let mut decided = entry("decided");
        decided.decision_key = Some("request-9:confirm".into());
        let first = other.append_audit(&decided).await.expect("appends");
        let again = gateway
            .record_sent_call(&decided, &super::call("c5", "gw-1"), "m", super::at(1))
            .await
            .expect("records");
        assert_eq!(
            (again.audit.seq, &again.audit.hash),
            (first.seq, &first.hash)
        );
        said.push(record("c6", "six").await);

        let chain = other.audit_entries().await.expect("reads");
        let tools: Vec<&str> = chain.iter().map(|r| r.entry.tool.as_str()).collect();
        assert_eq!(
            tools,
            ["one", "two", "elsewhere", "three", "four", "decided", "six"],
            "{url}"
        );
        for record in &said {
            let stored = &chain[usize::try_from(record.audit.seq - 1).expect("from 1")];
            assert_eq!(
                (&stored.hash, &stored.prev_hash, &stored.entry),
                (
                    &record.audit.hash,
                    &record.audit.prev_hash,
                    &record.audit.entry
                ),
                "{url}: the record says where its entry is"
            );
        }
        let verified = other.verify_audit().await.expect("verifies");
        assert_eq!((verified.entries, verified.broken), (7, None), "{url}");
        for id in ["c1", "c2", "c3", "c4", "c5", "c6"] {
            assert!(
                other.call(id).await.expect("reads").is_some(),
                "{url}: {id} is recorded"
            );
        }
    }
}
