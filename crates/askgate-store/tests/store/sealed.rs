//! A parked call's arguments, kept sealed while its ask waits and erased
//! by every statement that settles or expires it.

use askgate_store::Store;
use askgate_testkit::TempStore;

use super::{answer, at, new_ask, stores};

/// The sealed arguments the store gives back for `id` while it waits.
async fn left_in(store: &Store, id: &str) -> Option<String> {
    store.sealed_arguments(id).await.expect("reads")
}

/// The `sealed_arguments` column of the ask `id`, read past askgate's own
/// statements, as a program with the database at hand would.
async fn column_of(store: &TempStore, id: &str) -> Option<String> {
    let sql = "SELECT sealed_arguments FROM asks WHERE id = $1";
    if store.url().starts_with("postgres") {
        let pool = sqlx::postgres::PgPool::connect(store.url())
            .await
            .expect("connects");
        sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(&pool)
            .await
            .expect("reads")
    } else {
        let pool = sqlx::sqlite::SqlitePool::connect(store.url())
            .await
            .expect("connects");
        sqlx::query_scalar(sql)
            .bind(id)
            .fetch_one(&pool)
            .await
            .expect("reads")
    }
}

#[tokio::test]
async fn sealed_arguments_are_kept_while_the_ask_waits_and_erased_when_it_settles_or_expires() {
    for store in stores().await {
        let name = store.name().to_owned();
        // Kept while pending; an ask parked without them has none.
        store
            .park_with_arguments(&new_ask("s1", 0, Some(3600)), Some("aa1.c2VhbGVk"))
            .await
            .expect("parks");
        store
            .park(&new_ask("s0", 0, Some(3600)))
            .await
            .expect("parks");
        assert_eq!(
            left_in(&store, "s1").await.as_deref(),
            Some("aa1.c2VhbGVk"),
            "{name}"
        );
        assert_eq!(left_in(&store, "s0").await, None, "{name}");
        assert_eq!(
            column_of(&store, "s1").await.as_deref(),
            Some("aa1.c2VhbGVk")
        );
        // Answered: erased in the same statement.
        store
            .settle("s1", &answer("ana"), at(1))
            .await
            .expect("settles");
        assert_eq!(left_in(&store, "s1").await, None, "{name}");
        // Expired by the sweep, and expired one by one.
        for (id, expires) in [("s2", Some(10)), ("s3", None)] {
            store
                .park_with_arguments(&new_ask(id, 0, expires), Some("aa1.c2VhbGVk"))
                .await
                .expect("parks");
        }
        store.expire_due(at(20)).await.expect("sweeps");
        store.expire("s3", at(20)).await.expect("expires");
        for id in ["s1", "s2", "s3"] {
            assert_eq!(
                column_of(&store, id).await,
                None,
                "{name}: {id} after it settled"
            );
        }
    }
}
