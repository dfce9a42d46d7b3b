//! A parked call's arguments, kept sealed while its ask waits and erased
//! by the store as the ask ends — whichever statement ends it, askgate's
//! or an older askgate's — leaving a mark that it had some.

use askgate_store::{SealedArguments, Store};
use askgate_testkit::TempStore;

use super::panels::{TWO_OF_SRE, answer_as, governed};
use super::{answer, at, new_ask, raw, stores};

/// Sealed text, as the gateway would keep it (the store never opens it).
const SEALED: &str = "aa1.c2VhbGVk";

/// What the store says of the arguments kept with `id`.
async fn left_in(store: &Store, id: &str) -> SealedArguments {
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

/// Assert that the ask `id` of `store` had arguments and they are gone:
/// nothing of the sealed text is left in its row, and the store says so.
async fn assert_erased(store: &TempStore, id: &str) {
    let name = store.name();
    assert_eq!(
        column_of(store, id).await.as_deref(),
        Some(""),
        "{name}: {id}"
    );
    assert_eq!(
        left_in(store, id).await,
        SealedArguments::Erased,
        "{name}: {id}"
    );
}

#[tokio::test]
async fn sealed_arguments_are_held_while_the_ask_waits_and_erased_when_it_settles_or_expires() {
    for store in stores().await {
        let name = store.name().to_owned();
        store
            .park_with_arguments(&new_ask("s1", 0, Some(3600)), Some(SEALED))
            .await
            .expect("parks");
        let held = SealedArguments::Held(SEALED.to_owned());
        assert_eq!(left_in(&store, "s1").await, held, "{name}");
        assert_eq!(column_of(&store, "s1").await.as_deref(), Some(SEALED));
        // Answered: erased in the same statement.
        store
            .settle("s1", &answer("ana"), at(1))
            .await
            .expect("settles");
        // Expired by the sweep, and expired one by one.
        for (id, expires) in [("s2", Some(10)), ("s3", None)] {
            store
                .park_with_arguments(&new_ask(id, 0, expires), Some(SEALED))
                .await
                .expect("parks");
        }
        store.expire_due(at(20)).await.expect("sweeps");
        store.expire("s3", at(20)).await.expect("expires");
        for id in ["s1", "s2", "s3"] {
            assert_erased(&store, id).await;
        }
    }
}

#[tokio::test]
async fn an_ask_parked_without_arguments_never_had_any_and_one_with_them_had_them_erased() {
    for store in stores().await {
        let name = store.name().to_owned();
        store.park(&new_ask("bare", 0, None)).await.expect("parks");
        // Empty text is not sealed text: kept as none.
        store
            .park_with_arguments(&new_ask("empty", 0, None), Some(""))
            .await
            .expect("parks");
        store
            .park_with_arguments(&new_ask("full", 0, None), Some(SEALED))
            .await
            .expect("parks");
        for id in ["bare", "empty", "missing"] {
            assert_eq!(
                left_in(&store, id).await,
                SealedArguments::None,
                "{name}: {id}"
            );
        }
        for id in ["bare", "empty", "full"] {
            store
                .settle(id, &answer("ana"), at(1))
                .await
                .expect("settles");
        }
        for id in ["bare", "empty"] {
            assert_eq!(
                left_in(&store, id).await,
                SealedArguments::None,
                "{name}: {id}"
            );
            assert_eq!(column_of(&store, id).await, None, "{name}: {id}");
        }
        assert_erased(&store, "full").await;
    }
}

#[tokio::test]
async fn an_older_askgate_ending_an_ask_erases_its_arguments_all_the_same() {
    // An askgate from before v17, still running beside this one during a
    // rolling upgrade, knows no such column: its statements leave it be.
    // One of v17 sets it to NULL, which would lose the mark.
    let before_v17 = "UPDATE asks SET status = 'answered', answered_by = 'old', \
                      answered_via = 'web', settled_at = 1 WHERE id = 'o1' AND status = 'pending'; \
                      UPDATE asks SET status = 'expired', settled_at = 1 \
                      WHERE id = 'o2' AND status = 'pending'; \
                      UPDATE asks SET status = 'answered' WHERE id = 'o4' AND status = 'pending'";
    let of_v17 = "UPDATE asks SET status = 'declined', settled_at = 1, sealed_arguments = NULL \
                  WHERE id = 'o3' AND status = 'pending'";
    for store in stores().await {
        let name = store.name().to_owned();
        for id in ["o1", "o2", "o3"] {
            store
                .park_with_arguments(&new_ask(id, 0, None), Some(SEALED))
                .await
                .expect("parks");
        }
        store.park(&new_ask("o4", 0, None)).await.expect("parks");
        assert_eq!(raw(&store, before_v17).await, None, "{name}");
        assert_eq!(raw(&store, of_v17).await, None, "{name}");
        for id in ["o1", "o2", "o3"] {
            assert_erased(&store, id).await;
        }
        assert_eq!(column_of(&store, "o4").await, None, "{name}: none to erase");
        assert_eq!(left_in(&store, "o4").await, SealedArguments::None, "{name}");
    }
}

#[tokio::test]
async fn an_ask_its_panel_settles_by_count_has_its_arguments_erased() {
    for store in stores().await {
        let name = store.name().to_owned();
        store
            .park_with_arguments(&governed("q1", TWO_OF_SRE), Some(SEALED))
            .await
            .expect("parks");
        answer_as(&store, "q1", "ana", true, 1)
            .await
            .expect("counted");
        let held = SealedArguments::Held(SEALED.to_owned());
        assert_eq!(left_in(&store, "q1").await, held, "{name}: one of two");
        let second = answer_as(&store, "q1", "bo", true, 2)
            .await
            .expect("counted");
        assert_eq!(second.row.status, askgate_store::AskStatus::Answered);
        assert_erased(&store, "q1").await;
    }
}

#[tokio::test]
async fn asks_parked_and_answered_in_one_batch_keep_then_erase_their_arguments() {
    // Each write below is queued before the committer runs, so each set
    // lands in one batch: on PostgreSQL one statement over arrays
    // (PARK_MANY, SETTLE_MANY), on SQLite one command of several.
    for store in stores().await {
        let name = store.name().to_owned();
        let park = |id: &'static str, sealed: Option<&'static str>| {
            let store = store.store().clone();
            async move {
                store
                    .park_with_arguments(&new_ask(id, 0, None), sealed)
                    .await
                    .expect("parks")
            }
        };
        tokio::join!(
            park("b1", Some(SEALED)),
            park("b2", Some("aa1.b3RoZXI")),
            park("b3", None),
            park("b4", Some(SEALED)),
        );
        assert_eq!(
            left_in(&store, "b1").await,
            SealedArguments::Held(SEALED.to_owned())
        );
        let other = SealedArguments::Held("aa1.b3RoZXI".to_owned());
        assert_eq!(left_in(&store, "b2").await, other, "{name}");
        assert_eq!(left_in(&store, "b3").await, SealedArguments::None, "{name}");
        let settle = |id: &'static str| {
            let store = store.store().clone();
            async move {
                store
                    .settle(id, &answer("ana"), at(1))
                    .await
                    .expect("settles")
            }
        };
        tokio::join!(settle("b1"), settle("b2"), settle("b3"), settle("b4"));
        for id in ["b1", "b2", "b4"] {
            assert_erased(&store, id).await;
        }
        assert_eq!(left_in(&store, "b3").await, SealedArguments::None, "{name}");
    }
}

#[tokio::test]
async fn migrating_erases_the_arguments_of_asks_an_older_askgate_ended() {
    for store in stores().await {
        let name = store.name().to_owned();
        for id in ["m1", "m2"] {
            store
                .park_with_arguments(&new_ask(id, 0, None), Some(SEALED))
                .await
                .expect("parks");
        }
        // The store as v17 left it, m1 then settled by an askgate from
        // before v17.
        let drop_trigger = if store.url().starts_with("postgres") {
            "DROP TRIGGER asks_erase_arguments ON asks"
        } else {
            "DROP TRIGGER asks_erase_arguments"
        };
        let back = format!(
            "{drop_trigger}; UPDATE askgate_schema SET version = 17; \
             UPDATE asks SET status = 'answered' WHERE id = 'm1'"
        );
        assert_eq!(raw(&store, &back).await, None, "{name}");
        assert_eq!(column_of(&store, "m1").await.as_deref(), Some(SEALED));
        let migrated = Store::open(store.url()).await.expect("migrates");
        assert_erased(&store, "m1").await;
        let held = SealedArguments::Held(SEALED.to_owned());
        assert_eq!(
            left_in(&migrated, "m2").await,
            held,
            "{name}: still waiting"
        );
        // And the trigger is back.
        migrated
            .settle("m2", &answer("ana"), at(1))
            .await
            .expect("settles");
        assert_erased(&store, "m2").await;
        migrated.close().await;
    }
}
