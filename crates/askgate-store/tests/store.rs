//! One suite, run against every backend: SQLite always, PostgreSQL when
//! `ASKGATE_TEST_POSTGRES_URL` is set (`.ci/run` sets it).

use std::time::Duration;

use askgate_store::{
    AskFilter, AskStatus, AuditEntry, CallEnd, CallState, ChainBreak, Decision, EndedCall, Error,
    LedgerError, Misuse, NewAsk, NewCall, NewTask, RecordedCall, SCHEMA_VERSION, SettleError,
    Settlement, Store, TaskEnd, TaskError, TaskStatus,
};
use askgate_testkit::{Fresh, Scratch, TempStore};
use jiff::Timestamp;
use serde_json::json;

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

#[tokio::test]
async fn a_parked_ask_survives_reopening_the_store() {
    let dir = Scratch::new();
    let url = dir.store_url();
    let store = Store::open(&url).await.expect("opens");
    store.park(&new_ask("a1", 0, None)).await.expect("parks");
    store.close().await;
    let again = Store::open(&url).await.expect("reopens");
    let row = again.ask("a1").await.expect("reads").expect("still there");
    assert_eq!(row.status, AskStatus::Pending);
    assert_eq!(row.ask, new_ask("a1", 0, None));
}

#[tokio::test]
async fn the_first_answer_wins_and_a_second_is_a_recorded_conflict() {
    for store in stores().await {
        store.park(&new_ask("a1", 0, None)).await.expect("parks");
        let first = store
            .settle("a1", &answer("alice"), at(10))
            .await
            .expect("first answer applies");
        assert_eq!(first.status, AskStatus::Answered);
        assert_eq!(first.answered_by.as_deref(), Some("alice"));
        let second = store.settle("a1", &answer("mallory"), at(11)).await;
        assert!(
            matches!(second, Err(SettleError::Conflict { .. })),
            "{}: {second:?}",
            store.name()
        );
        let row = store.ask("a1").await.expect("reads").expect("exists");
        assert_eq!(
            row.answered_by.as_deref(),
            Some("alice"),
            "the first answer stands"
        );
        assert_eq!(store.rejected_attempts("a1").await.expect("counts"), 1);
    }
}

#[tokio::test]
async fn an_answer_that_settles_to_pending_or_expired_is_misuse_and_writes_nothing() {
    for store in stores().await {
        store.park(&new_ask("a1", 0, None)).await.expect("parks");
        for status in [AskStatus::Pending, AskStatus::Expired] {
            let settlement = Settlement {
                status,
                ..answer("alice")
            };
            let refused = store.settle("a1", &settlement, at(10)).await;
            let Err(SettleError::Store(Error::Misuse { misuse, .. })) = &refused else {
                panic!("{}: not a misuse: {refused:?}", store.name())
            };
            assert_eq!(
                *misuse,
                Misuse::SettleStatus {
                    id: "a1".into(),
                    status: status.as_str(),
                }
            );
            assert!(
                refused
                    .expect_err("refused")
                    .to_string()
                    .contains("expected answered, declined, cancelled or skipped"),
            );
        }
        let row = store.ask("a1").await.expect("reads").expect("exists");
        assert_eq!(
            (row.status, row.reply),
            (AskStatus::Pending, None),
            "{}: nothing was written",
            store.name()
        );
        assert_eq!(store.rejected_attempts("a1").await.expect("counts"), 0);
        store
            .settle("a1", &answer("alice"), at(11))
            .await
            .expect("a real answer still applies");
    }
}

#[tokio::test]
async fn parking_an_ask_under_an_id_another_call_holds_is_misuse() {
    for store in stores().await {
        store.park(&new_ask("a1", 0, None)).await.expect("parks");
        let other = NewAsk {
            resume_key: "tool:run-2:other".into(),
            ..new_ask("a1", 1, None)
        };
        let error = store.park(&other).await.expect_err("id taken");
        assert!(
            matches!(
                &error,
                Error::Misuse {
                    misuse: Misuse::IdTaken { id },
                    ..
                } if id == "a1"
            ),
            "{}: {error:?}",
            store.name()
        );
        let row = store.ask("a1").await.expect("reads").expect("exists");
        assert_eq!(row.ask, new_ask("a1", 0, None), "the first ask stands");
    }
}

#[tokio::test]
async fn a_refused_answer_converts_into_the_store_error_with_its_kind() {
    async fn settle_twice(store: &Store) -> Result<(), Error> {
        store.settle("a1", &answer("alice"), at(10)).await?;
        store.settle("a1", &answer("mallory"), at(11)).await?;
        Ok(())
    }
    for store in stores().await {
        store.park(&new_ask("a1", 0, None)).await.expect("parks");
        let error = settle_twice(&store).await.expect_err("a second answer");
        assert!(
            matches!(&error, Error::Settle(refused) if matches!(**refused, SettleError::Conflict { .. })),
            "{}: {error:?}",
            store.name()
        );
        assert!(
            error.to_string().contains("the first answer stands"),
            "{error}"
        );
        let missing = store.settle("nope", &answer("alice"), at(12)).await;
        let missing = Error::from(missing.expect_err("no such ask"));
        assert!(matches!(&missing, Error::Settle(_)), "{missing:?}");
    }
}

#[tokio::test]
async fn an_answer_after_expiry_is_gone_and_expiry_applies_no_default() {
    for store in stores().await {
        store
            .park(&new_ask("a1", 0, Some(60)))
            .await
            .expect("parks");
        let late = store.settle("a1", &answer("alice"), at(61)).await;
        assert!(matches!(late, Err(SettleError::Gone { .. })), "{late:?}");
        assert_eq!(store.expire_due(at(61)).await.expect("expires"), ["a1"]);
        let row = store.ask("a1").await.expect("reads").expect("exists");
        assert_eq!(row.status, AskStatus::Expired);
        assert_eq!(
            (row.reply, row.outcome),
            (None, None),
            "no default was applied"
        );
        let later = store.settle("a1", &answer("alice"), at(62)).await;
        assert!(matches!(later, Err(SettleError::Gone { .. })), "{later:?}");
        assert_eq!(store.rejected_attempts("a1").await.expect("counts"), 2);
    }
}

#[tokio::test]
async fn concurrent_answers_settle_an_ask_exactly_once() {
    for store in stores().await {
        store.park(&new_ask("race", 0, None)).await.expect("parks");
        let mut tasks = Vec::new();
        for i in 0..16 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store.settle("race", &answer(&format!("p{i}")), at(5)).await
            }));
        }
        let mut won = 0;
        for task in tasks {
            match task.await.expect("joins") {
                Ok(_) => won += 1,
                Err(SettleError::Conflict { .. }) => {}
                Err(other) => panic!("{}: {other}", store.name()),
            }
        }
        assert_eq!(won, 1, "{}", store.name());
        assert_eq!(store.rejected_attempts("race").await.expect("counts"), 15);
    }
}

#[tokio::test]
async fn concurrent_parks_and_answers_each_get_their_own_ask() {
    for store in stores().await {
        // Parked at once (one batch): each call gets its own ask; a second
        // park of a call, under another id, gets the first.
        let mut parks = Vec::new();
        for i in 0..24 {
            let store = store.clone();
            parks.push(tokio::spawn(async move {
                let mut ask = new_ask(&format!("a{i:02}"), i, Some(100));
                if i >= 20 {
                    ask.resume_key = format!("tool:run-1:a{:02}", i - 20);
                }
                store.park(&ask).await
            }));
        }
        for (i, task) in parks.into_iter().enumerate() {
            let row = task.await.expect("joins").expect("parks");
            let first = if i >= 20 { i - 20 } else { i };
            assert_eq!(row.ask.id, format!("a{first:02}"), "{}", store.name());
            assert_eq!(row.status, AskStatus::Pending);
        }

        // Answered at once: each answer settles its own ask; of two answers
        // to one ask, one wins; an answer after expiry is refused.
        let mut answers = Vec::new();
        for (i, by) in (0..20)
            .map(|i| (i, format!("p{i}")))
            .chain([(0, "q0".into())])
        {
            let store = store.clone();
            let now = if i >= 16 { at(200) } else { at(50) };
            answers.push(tokio::spawn(async move {
                let result = store.settle(&format!("a{i:02}"), &answer(&by), now).await;
                (i, by, result)
            }));
        }
        let mut first_answers = 0;
        for task in answers {
            match task.await.expect("joins") {
                (i, by, Ok(row)) => {
                    assert_eq!(row.ask.id, format!("a{i:02}"), "{}", store.name());
                    assert_eq!(row.answered_by.as_deref(), Some(by.as_str()));
                    assert_eq!(row.status, AskStatus::Answered);
                    assert!(
                        i < 16,
                        "{}: a{i:02} was answered after expiry",
                        store.name()
                    );
                    if i == 0 {
                        first_answers += 1;
                    }
                }
                (0, _, Err(SettleError::Conflict { .. })) => {}
                (i, _, Err(SettleError::Gone { .. })) if i >= 16 => {}
                (i, by, Err(other)) => panic!("{}: a{i:02} by {by}: {other}", store.name()),
            }
        }
        assert_eq!(first_answers, 1, "{}", store.name());
        assert_eq!(store.rejected_attempts("a00").await.expect("counts"), 1);
        assert_eq!(store.rejected_attempts("a17").await.expect("counts"), 1);
        let a05 = store.ask("a05").await.expect("reads").expect("there");
        assert_eq!(a05.answered_by.as_deref(), Some("p5"));
    }
}

#[tokio::test]
async fn parking_the_same_call_twice_keeps_one_ask() {
    for store in stores().await {
        let first = store.park(&new_ask("a1", 0, None)).await.expect("parks");
        let mut retry = new_ask("a1-retry", 5, None);
        retry.resume_key = first.ask.resume_key.clone();
        let second = store.park(&retry).await.expect("parks again");
        assert_eq!(second.ask.id, "a1");
    }
}

#[tokio::test]
async fn pending_asks_list_newest_first_page_by_page() {
    for store in stores().await {
        for i in 0..5 {
            store
                .park(&new_ask(&format!("a{i}"), i, None))
                .await
                .expect("parks");
        }
        store
            .settle("a2", &answer("alice"), at(9))
            .await
            .expect("settles");
        let first = store.pending(2, None).await.expect("lists");
        let ids: Vec<&str> = first.asks.iter().map(|a| a.ask.id.as_str()).collect();
        assert_eq!(ids, ["a4", "a3"]);
        let second = store
            .pending(2, first.next.as_deref())
            .await
            .expect("lists");
        let ids: Vec<&str> = second.asks.iter().map(|a| a.ask.id.as_str()).collect();
        assert_eq!(ids, ["a1", "a0"], "{}", store.name());
        assert_eq!(second.next, None);
    }
}

#[tokio::test]
async fn asks_list_narrowed_to_a_principal_server_risk_or_status_page_by_page() {
    for store in stores().await {
        for i in 0..6 {
            let mut ask = new_ask(&format!("f{i}"), i, None);
            ask.principal = if i % 2 == 0 { "alice" } else { "bob" }.into();
            if i >= 4 {
                ask.server = Some("files".into());
                ask.risk = Some("read".into());
            }
            store.park(&ask).await.expect("parks");
        }
        store
            .settle("f2", &answer("alice"), at(9))
            .await
            .expect("settles");
        let ids = |page: &askgate_store::Page| -> Vec<String> {
            page.asks.iter().map(|a| a.ask.id.clone()).collect()
        };
        let alice = AskFilter {
            principal: Some("alice".into()),
            ..AskFilter::default()
        };
        let first = store.asks_where(&alice, 1, None).await.expect("lists");
        assert_eq!(ids(&first), ["f4"], "{}", store.name());
        let rest = store
            .asks_where(&alice, 5, first.next.as_deref())
            .await
            .expect("lists");
        assert_eq!(ids(&rest), ["f0"], "f2 is settled: {}", store.name());
        let files = AskFilter {
            server: Some("files".into()),
            risk: Some("read".into()),
            ..AskFilter::default()
        };
        let page = store.asks_where(&files, 10, None).await.expect("lists");
        assert_eq!(ids(&page), ["f5", "f4"], "{}", store.name());
        let settled = AskFilter {
            statuses: vec![AskStatus::Answered, AskStatus::Expired],
            ..AskFilter::default()
        };
        let page = store.asks_where(&settled, 10, None).await.expect("lists");
        assert_eq!(ids(&page), ["f2"], "{}", store.name());
    }
}

#[tokio::test]
async fn a_waiter_wakes_when_the_ask_is_answered() {
    for store in stores().await {
        store.park(&new_ask("a1", 0, None)).await.expect("parks");
        let waiter = {
            let store = store.clone();
            tokio::spawn(async move { store.wait_settled("a1", Duration::from_secs(30)).await })
        };
        tokio::task::yield_now().await;
        store
            .settle("a1", &answer("alice"), at(3))
            .await
            .expect("settles");
        let row = waiter
            .await
            .expect("joins")
            .expect("reads")
            .expect("settled");
        assert_eq!(row.status, AskStatus::Answered);
    }
}

#[tokio::test]
async fn a_token_is_consumed_once() {
    for store in stores().await {
        assert!(
            store
                .consume_token("n1", at(60), at(0))
                .await
                .expect("consumes")
        );
        assert!(
            !store
                .consume_token("n1", at(60), at(1))
                .await
                .expect("replay")
        );
        assert_eq!(store.purge_tokens(at(61)).await.expect("purges"), 1);
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
async fn a_foreign_database_file_is_refused_naming_the_store() {
    let dir = Scratch::new();
    let path = dir.join("foreign.db");
    let url = format!("sqlite://{}", path.display());
    {
        let pool = sqlx::sqlite::SqlitePool::connect(&format!("{url}?mode=rwc"))
            .await
            .expect("creates");
        sqlx::query("CREATE TABLE invoices (id INTEGER)")
            .execute(&pool)
            .await
            .expect("creates");
        pool.close().await;
    }
    let error = Store::open(&url).await.expect_err("foreign");
    assert!(matches!(error, Error::Foreign { .. }), "{error}");
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );

    let garbage = dir.join("askgate-garbage.db");
    std::fs::write(
        &garbage,
        b"this is not a database, just some text that is long enough",
    )
    .expect("writes");
    let error = Store::open(&format!("sqlite://{}", garbage.display()))
        .await
        .expect_err("corrupt");
    assert!(error.to_string().contains("askgate-garbage"), "{error}");
}

#[tokio::test]
async fn a_store_from_a_newer_askgate_is_refused() {
    let dir = Scratch::new();
    let url = dir.store_url();
    Store::open(&url).await.expect("creates").close().await;
    tamper_url(&url, "UPDATE askgate_schema SET version = 99").await;
    let error = Store::open(&url).await.expect_err("newer");
    assert!(
        matches!(error, Error::NewerSchema { found: 99, .. }),
        "{error}"
    );
}

async fn tamper_url(url: &str, sql: &'static str) {
    let pool = sqlx::sqlite::SqlitePool::connect(url)
        .await
        .expect("connects");
    sqlx::query(sql).execute(&pool).await.expect("tampers");
    pool.close().await;
}

#[tokio::test]
async fn an_unreachable_postgres_is_a_clear_error_without_the_password() {
    let error = Store::open("postgres://app:hunter2@127.0.0.1:1/none")
        .await
        .expect_err("unreachable");
    let text = error.to_string();
    assert!(text.contains("postgres://app@127.0.0.1:1/none"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

fn call(id: &str, owner: &str) -> NewCall {
    NewCall {
        id: id.into(),
        owner: owner.into(),
        server: "files".into(),
        tool: "delete".into(),
        arguments_digest: Some("hmac-sha256:cd34".into()),
        at: at(0),
    }
}

#[tokio::test]
async fn the_ledger_moves_a_call_only_forward() {
    for store in stores().await {
        store
            .prepare_call(&call("c1", "gw-1"))
            .await
            .expect("prepares");
        let early = store
            .finish_call("c1", true, &json!({"ok": true}), at(1))
            .await;
        assert!(
            matches!(
                early,
                Err(LedgerError::Illegal {
                    state: "prepared",
                    ..
                })
            ),
            "{early:?}"
        );
        let sent = store.mark_sent("c1", "m-1", at(1)).await.expect("sends");
        assert_eq!(
            (sent.state, sent.marker.as_deref()),
            (CallState::Sent, Some("m-1"))
        );
        let twice = store.mark_sent("c1", "m-2", at(2)).await;
        assert!(
            matches!(twice, Err(LedgerError::Illegal { state: "sent", .. })),
            "sent twice: {twice:?}"
        );
        let done = store
            .finish_call("c1", true, &json!({"ok": true}), at(3))
            .await
            .expect("answers");
        assert_eq!(done.state, CallState::Answered);
        let missing = store.mark_sent("nope", "m", at(4)).await;
        assert!(
            matches!(missing, Err(LedgerError::NotFound { .. })),
            "{missing:?}"
        );
    }
}

#[tokio::test]
async fn after_a_crash_a_sent_call_may_have_run_and_a_prepared_one_was_never_sent() {
    for url in urls().await {
        let store = Store::open(&url).await.expect("opens");
        store
            .prepare_call(&call("prepared", "gw-1"))
            .await
            .expect("prepares");
        store
            .prepare_call(&call("in-flight", "gw-1"))
            .await
            .expect("prepares");
        store
            .mark_sent("in-flight", "m-1", at(1))
            .await
            .expect("sends");
        store
            .prepare_call(&call("other-replica", "gw-2"))
            .await
            .expect("prepares");
        store
            .mark_sent("other-replica", "m-2", at(1))
            .await
            .expect("sends");
        store.close().await;
        drop(store);

        let restarted = Store::open(&url).await.expect("reopens");
        let recovered = restarted
            .recover_calls("gw-1", at(10))
            .await
            .expect("recovers");
        let ids: Vec<&str> = recovered.iter().map(|c| c.call.id.as_str()).collect();
        assert_eq!(ids, ["in-flight"]);
        assert_eq!(recovered[0].state, CallState::MayHaveRun);
        let state = |id: &'static str| {
            let store = restarted.clone();
            async move { store.call(id).await.expect("reads").expect("exists").state }
        };
        assert_eq!(
            state("prepared").await,
            CallState::Prepared,
            "never sent: safe to send"
        );
        assert_eq!(
            state("other-replica").await,
            CallState::Sent,
            "another replica's call is left alone"
        );
        let resend = restarted.mark_sent("in-flight", "m-3", at(11)).await;
        assert!(
            matches!(
                resend,
                Err(LedgerError::Illegal {
                    state: "may_have_run",
                    ..
                })
            ),
            "{resend:?}"
        );
    }
}

#[tokio::test]
async fn the_asks_of_one_call_are_found_newest_first() {
    for store in stores().await {
        let of = |id: &str, call: Option<&str>, created: i64| {
            let mut ask = new_ask(id, created, None);
            ask.call_key = call.map(str::to_owned);
            ask
        };
        for ask in [
            of("first", Some("mcp:k:confirm"), 1),
            of("other", Some("mcp:other:confirm"), 2),
            of("second", Some("mcp:k:confirm"), 3),
            of("unkeyed", None, 4),
        ] {
            store.park(&ask).await.expect("parks");
        }
        store
            .settle("first", &answer("alice"), at(5))
            .await
            .expect("settles");
        let found = store
            .asks_of_call("mcp:k:confirm", 10)
            .await
            .expect("lists");
        let ids: Vec<&str> = found.iter().map(|row| row.ask.id.as_str()).collect();
        assert_eq!(ids, ["second", "first"], "{}", store.name());
        assert_eq!(found[1].status, AskStatus::Answered);
        assert_eq!(found[0].ask.call_key.as_deref(), Some("mcp:k:confirm"));
        assert_eq!(
            store
                .asks_of_call("mcp:k:confirm", 1)
                .await
                .expect("lists")
                .len(),
            1,
            "at most the limit"
        );
        store.close().await;
    }
}

#[tokio::test]
async fn an_older_store_is_migrated_on_open() {
    let url = urls().await.remove(0);
    Store::open(&url).await.expect("creates").close().await;
    // Take the store back to schema 1, as an older askgate left it.
    let pool = sqlx::sqlite::SqlitePool::connect(&url)
        .await
        .expect("connects");
    sqlx::raw_sql("DROP TABLE calls; DROP TABLE tasks; DROP INDEX audit_decision_key; ALTER TABLE audit DROP COLUMN decision_key; DROP INDEX asks_call_key; ALTER TABLE asks DROP COLUMN call_key; UPDATE askgate_schema SET version = 1")
        .execute(&pool)
        .await
        .expect("downgrades");
    // Asks an older askgate-mcp parked: a call's first ask, and its second.
    for (id, key) in [("old1", "mcp:abc:confirm"), ("old2", "mcp:abc:confirm#2")] {
        sqlx::query("INSERT INTO asks (id, resume_key, principal, request, created_at, status) VALUES ($1, $2, 'alice', '{}', 1, 'pending')")
            .bind(id)
            .bind(key)
            .execute(&pool)
            .await
            .expect("an old ask");
    }
    pool.close().await;
    let store = Store::open(&url).await.expect("migrates");
    store
        .prepare_call(&call("c1", "gw-1"))
        .await
        .expect("the new table exists");
    let of_call: Vec<String> = store
        .asks_of_call("mcp:abc:confirm", 10)
        .await
        .expect("lists")
        .into_iter()
        .map(|row| row.ask.id)
        .collect();
    assert_eq!(
        of_call.len(),
        2,
        "both old asks found by their call: {of_call:?}"
    );
    store.close().await;
    let version: i64 =
        askgate_testkit::sqlite_value(&url, "SELECT version FROM askgate_schema").await;
    assert_eq!(version, SCHEMA_VERSION, "migrated to the newest schema");
}

#[tokio::test]
async fn an_answer_given_through_one_replica_wakes_the_waiter_held_by_another() {
    let Some(url) = postgres().await else {
        return;
    };
    let holder = Store::open(&url).await.expect("replica 1 opens");
    let answerer = Store::open(&url).await.expect("replica 2 opens");
    holder
        .park(&new_ask("shared", 0, None))
        .await
        .expect("parks");
    let mut settlements = holder.settlements();
    answerer
        .settle("shared", &answer("alice"), at(1))
        .await
        .expect("settles on replica 2");
    let woken = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match settlements.recv().await {
                Ok(settled) if &*settled.id == "shared" => return settled.id.to_string(),
                Ok(_) => continue,
                Err(error) => panic!("{error}"),
            }
        }
    })
    .await
    .expect("replica 1 hears of the answer through LISTEN/NOTIFY");
    assert_eq!(woken, "shared");
}

fn new_task(id: &str, created: i64) -> NewTask {
    NewTask {
        id: id.to_owned(),
        principal: "alice".into(),
        tool: "confirm_delete".into(),
        arguments: json!({"filename": "a.txt"}),
        capabilities: json!({"elicitation": {}}),
        ttl_ms: Some(60_000),
        poll_interval_ms: Some(500),
        at: at(created),
        lease: jiff::SignedDuration::from_secs(30),
    }
}

fn requests(keys: &[&str]) -> serde_json::Map<String, serde_json::Value> {
    keys.iter()
        .map(|k| {
            (
                (*k).to_owned(),
                json!({"method": "elicitation/create", "params": {}}),
            )
        })
        .collect()
}

fn responses(keys: &[&str]) -> serde_json::Map<String, serde_json::Value> {
    keys.iter()
        .map(|k| {
            (
                (*k).to_owned(),
                json!({"action": "accept", "content": {"k": k}}),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_task_waits_for_every_answer_then_resumes_once_and_ends_once() {
    for store in stores().await {
        let created = store
            .create_task(&new_task("t1", 0))
            .await
            .expect("created");
        assert_eq!(created.status, TaskStatus::Working);
        let read = store
            .task("t1", at(1))
            .await
            .expect("reads")
            .expect("found");
        assert_eq!(read.task.arguments, json!({"filename": "a.txt"}));

        let parked = store
            .park_task("t1", requests(&["a", "b"]), Some("waiting"), at(2))
            .await
            .expect("parks");
        assert_eq!(parked.status, TaskStatus::InputRequired);

        // A partial answer, with a key nobody asked: kept, ignored.
        let partial = store
            .answer_task("t1", &responses(&["a", "zzz"]), at(60), at(3))
            .await
            .expect("merges");
        assert!(!partial.resume);
        assert_eq!(partial.row.status, TaskStatus::InputRequired);
        assert_eq!(partial.row.pending.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(partial.row.answers.keys().collect::<Vec<_>>(), ["a"]);

        // Answering "a" again changes nothing: the first answer stands.
        let again = store
            .answer_task("t1", &responses(&["a"]), at(60), at(4))
            .await
            .expect("ignored");
        assert!(!again.resume);
        assert_eq!(
            again.row.answers["a"],
            json!({"action": "accept", "content": {"k": "a"}})
        );

        let last = store
            .answer_task("t1", &responses(&["b"]), at(60), at(5))
            .await
            .expect("merges");
        assert!(last.resume, "the last answer resumes the work");
        assert_eq!(last.row.status, TaskStatus::Working);
        assert!(last.row.pending.is_empty());

        let done = store
            .finish_task("t1", &TaskEnd::Completed(json!({"content": []})), at(6))
            .await
            .expect("finishes");
        assert_eq!(done.status, TaskStatus::Completed);
        assert!(matches!(
            store
                .finish_task("t1", &TaskEnd::Failed(json!({"code": 1})), at(7))
                .await,
            Err(TaskError::Illegal {
                state: "completed",
                ..
            })
        ));
        let cancelled = store.cancel_task("t1", at(8)).await.expect("idempotent");
        assert_eq!(
            cancelled.status,
            TaskStatus::Completed,
            "a finished task stays finished"
        );
        assert!(matches!(
            store.cancel_task("nope", at(8)).await,
            Err(TaskError::NotFound { .. })
        ));
    }
}

#[tokio::test]
async fn a_task_waiting_on_a_person_survives_reopening_the_store() {
    for url in urls().await {
        {
            let store = Store::open(&url).await.expect("opens");
            store
                .create_task(&new_task("t2", 0))
                .await
                .expect("created");
            store
                .park_task("t2", requests(&["confirm"]), None, at(1))
                .await
                .expect("parks");
        }
        let store = Store::open(&url).await.expect("reopens");
        // Hours later, long past any lease: a parked task holds none.
        let row = store
            .task("t2", at(7200))
            .await
            .expect("reads")
            .expect("kept");
        assert_eq!(row.status, TaskStatus::InputRequired);
        assert!(row.pending.contains_key("confirm"));
        let answered = store
            .answer_task("t2", &responses(&["confirm"]), at(7300), at(7201))
            .await
            .expect("answers");
        assert!(answered.resume);
    }
}

#[tokio::test]
async fn concurrent_answers_resume_a_task_exactly_once() {
    for store in stores().await {
        store
            .create_task(&new_task("t3", 0))
            .await
            .expect("created");
        store
            .park_task("t3", requests(&["x"]), None, at(1))
            .await
            .expect("parks");
        let runs = (0..8).map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .answer_task("t3", &responses(&["x"]), at(60), at(2))
                    .await
                    .expect("merges")
                    .resume
            })
        });
        let mut resumed = 0;
        for run in runs {
            if run.await.expect("joins") {
                resumed += 1;
            }
        }
        assert_eq!(resumed, 1);
    }
}

#[tokio::test]
async fn a_working_task_whose_runner_stopped_reads_as_interrupted_and_a_cancel_stands() {
    for store in stores().await {
        store
            .create_task(&new_task("t4", 0))
            .await
            .expect("created");
        // Within the lease: still working.
        let row = store
            .task("t4", at(10))
            .await
            .expect("reads")
            .expect("found");
        assert_eq!(row.status, TaskStatus::Working);
        assert!(store.renew_task_lease("t4", at(40)).await.expect("renews"));
        let row = store
            .task("t4", at(35))
            .await
            .expect("reads")
            .expect("found");
        assert_eq!(row.status, TaskStatus::Working, "the renewed lease holds");
        // Past the lease: the runner is gone.
        let row = store
            .task("t4", at(41))
            .await
            .expect("reads")
            .expect("found");
        assert_eq!(row.status, TaskStatus::Failed);
        assert!(
            row.error
                .as_ref()
                .and_then(|e| e["message"].as_str())
                .is_some_and(|m| m.contains("interrupted")),
            "{:?}",
            row.error
        );

        store
            .create_task(&new_task("t5", 0))
            .await
            .expect("created");
        let cancelled = store.cancel_task("t5", at(1)).await.expect("cancels");
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        assert!(matches!(
            store
                .finish_task("t5", &TaskEnd::Completed(json!({})), at(2))
                .await,
            Err(TaskError::Illegal {
                state: "cancelled",
                ..
            })
        ));
        assert!(
            !store
                .renew_task_lease("t5", at(90))
                .await
                .expect("no lease to renew")
        );
        assert!(matches!(
            store.park_task("t5", requests(&["y"]), None, at(3)).await,
            Err(TaskError::Illegal { .. })
        ));
    }
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
async fn a_new_ask_is_news_and_parking_it_again_is_not() {
    for store in stores().await {
        let mut parked = store.parked();
        store.park(&new_ask("n1", 0, None)).await.expect("parks");
        store
            .park(&new_ask("n1", 0, None))
            .await
            .expect("parks again");
        store.park(&new_ask("n2", 1, None)).await.expect("parks");
        let mut heard = Vec::new();
        // The news of this process comes with the row; PostgreSQL's trigger
        // may repeat it without.
        while heard.len() < 2 {
            let news = tokio::time::timeout(Duration::from_secs(30), parked.recv())
                .await
                .expect("news comes")
                .expect("not lagged");
            if let Some(row) = &news.row {
                assert_eq!(row.status, AskStatus::Pending);
                heard.push(news.id.to_string());
            }
        }
        assert_eq!(heard, ["n1", "n2"], "one piece of news per new ask");
    }
}

#[tokio::test]
async fn an_ask_parked_through_one_replica_is_news_to_another() {
    let Some(url) = postgres().await else {
        return;
    };
    let listener = Store::open(&url).await.expect("replica 1 opens");
    let parker = Store::open(&url).await.expect("replica 2 opens");
    let mut parked = listener.parked();
    parker
        .park(&new_ask("far", 0, None))
        .await
        .expect("parks on replica 2");
    let heard = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match parked.recv().await {
                Ok(news) if &*news.id == "far" => return news,
                Ok(_) => continue,
                Err(error) => panic!("{error}"),
            }
        }
    })
    .await
    .expect("replica 1 hears of the ask through LISTEN/NOTIFY");
    assert!(heard.row.is_none(), "the database says the id only");
}

#[tokio::test]
async fn expiring_one_ask_refuses_a_late_answer_and_leaves_a_settled_one_alone() {
    for store in stores().await {
        store.park(&new_ask("late", 0, None)).await.expect("parks");
        store.park(&new_ask("done", 1, None)).await.expect("parks");
        store.park(&new_ask("other", 2, None)).await.expect("parks");
        store
            .settle("done", &answer("alice"), at(3))
            .await
            .expect("settles");
        let expired = store.expire("late", at(4)).await.expect("expires");
        let expired = expired.expect("the ask exists");
        assert_eq!(expired.status, AskStatus::Expired);
        assert_eq!(expired.outcome, None, "expiry applies no default");
        let refused = store.settle("late", &answer("bob"), at(5)).await;
        assert!(
            matches!(refused, Err(SettleError::Gone { .. })),
            "{refused:?}"
        );
        let done = store.expire("done", at(6)).await.expect("reads");
        assert_eq!(done.expect("exists").status, AskStatus::Answered);
        let other = store.ask("other").await.expect("reads").expect("exists");
        assert_eq!(other.status, AskStatus::Pending, "only the one ask expires");
        assert!(store.expire("nope", at(7)).await.expect("reads").is_none());
    }
}

#[tokio::test]
async fn a_call_recorded_as_sent_carries_its_decision_in_the_chain() {
    for store in stores().await {
        let RecordedCall {
            audit: record,
            call: row,
        } = store
            .record_sent_call(&entry("delete"), &call("c1", "gw-1"), "m-1", at(1))
            .await
            .expect("records");
        assert_eq!(
            (row.state, row.marker.as_deref()),
            (CallState::Sent, Some("m-1"))
        );
        assert_eq!(record.seq, 1);
        let twice = store.mark_sent("c1", "m-2", at(2)).await;
        assert!(
            matches!(twice, Err(LedgerError::Illegal { state: "sent", .. })),
            "sent twice: {twice:?}"
        );
        let done = store
            .finish_call("c1", true, &json!({"ok": true}), at(3))
            .await
            .expect("answers");
        assert_eq!(done.state, CallState::Answered);
        let again = store
            .finish_call("c1", false, &json!({"failure": "late"}), at(4))
            .await;
        assert!(
            matches!(
                again,
                Err(LedgerError::Illegal {
                    state: "answered",
                    ..
                })
            ),
            "{again:?}"
        );
        let missing = store.finish_call("nope", true, &json!({}), at(4)).await;
        assert!(
            matches!(missing, Err(LedgerError::NotFound { .. })),
            "{missing:?}"
        );
        let entries = store.audit_entries().await.expect("reads");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].entry.tool, "delete");
    }
}

#[tokio::test]
async fn calls_recorded_side_by_side_keep_one_unbroken_chain() {
    for url in urls().await {
        let store = Store::open(&url).await.expect("opens");
        let mut writers = tokio::task::JoinSet::new();
        for i in 0..24 {
            let store = store.clone();
            writers.spawn(async move {
                let id = format!("c{i}");
                store
                    .record_sent_call(&entry("read"), &call(&id, "gw-1"), "m", at(1))
                    .await
                    .expect("records");
                // Queued and not waited for: it lands with a later batch.
                drop(store.queue_finish_call(&id, true, &json!({"ok": true}), at(2)));
                store.append_audit(&entry("other")).await.expect("appends");
            });
        }
        while let Some(done) = writers.join_next().await {
            done.expect("a writer ends");
        }
        // Closing commits what is queued.
        store.close().await;
        drop(store);
        let reopened = Store::open(&url).await.expect("reopens");
        let verification = reopened.verify_audit().await.expect("verifies");
        assert_eq!((verification.entries, verification.broken), (48, None));
        for i in 0..24 {
            let row = reopened
                .call(&format!("c{i}"))
                .await
                .expect("reads")
                .expect("recorded");
            assert_eq!(row.state, CallState::Answered, "a queued end is kept");
        }
    }
}

#[tokio::test]
async fn calls_recorded_together_each_keep_their_end_and_their_place_in_the_chain() {
    for store in stores().await {
        store.append_audit(&entry("before")).await.expect("appends");
        let ended: Vec<EndedCall> = (0..5)
            .map(|i| EndedCall {
                entry: entry(&format!("read-{i}")),
                call: call(&format!("r{i}"), "gw-1"),
                marker: format!("m-{i}"),
                sent_at: at(1),
                end: CallEnd {
                    answered: i != 3,
                    result: json!({"blocks": i}),
                    at: at(2),
                },
            })
            .collect();
        store.record_ended_calls(&ended).await.expect("records");
        for i in 0..5 {
            let row = store
                .call(&format!("r{i}"))
                .await
                .expect("reads")
                .expect("recorded");
            let state = if i == 3 {
                CallState::Failed
            } else {
                CallState::Answered
            };
            assert_eq!(
                (row.state, row.marker.as_deref()),
                (state, Some(format!("m-{i}").as_str()))
            );
        }
        let entries = store.audit_entries().await.expect("reads");
        let tools: Vec<&str> = entries.iter().map(|r| r.entry.tool.as_str()).collect();
        assert_eq!(
            tools,
            ["before", "read-0", "read-1", "read-2", "read-3", "read-4"]
        );
        let verification = store.verify_audit().await.expect("verifies");
        assert_eq!((verification.entries, verification.broken), (6, None));
        store
            .record_ended_calls(&[])
            .await
            .expect("nothing to record");
    }
}
