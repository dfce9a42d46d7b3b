//! The ledger of calls: how a call moves, what a crash leaves, and how recorded
//! calls join the chain.

use askgate_store::{
    AskStatus, CallEnd, CallOutcome, CallRow, CallState, EndedCall, LedgerError, RecordedCall,
    Retry, Store,
};
use serde_json::json;

use super::{answer, at, call, entry, new_ask, retry_of, stores, urls};

#[tokio::test]
async fn the_ledger_moves_a_call_only_forward() {
    for store in stores().await {
        store
            .prepare_call(&call("c1", "gw-1"))
            .await
            .expect("prepares");
        let early = store
            .finish_call("c1", CallOutcome::Answered, &json!({"ok": true}), at(1))
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
        a_sent_call_is_not_sent_twice_and_is_answered(&store, "c1").await;
        let missing = store.mark_sent("nope", "m", at(4)).await;
        assert!(
            matches!(missing, Err(LedgerError::NotFound { .. })),
            "{missing:?}"
        );
    }
}

/// The call `id`, recorded in `store`.
async fn recorded(store: &Store, id: &str) -> CallRow {
    store
        .call(id)
        .await
        .expect("reads")
        .expect("the call is recorded")
}

/// The sent call `id` cannot be sent again (at 2), and is answered (at 3).
async fn a_sent_call_is_not_sent_twice_and_is_answered(store: &Store, id: &str) {
    let twice = store.mark_sent(id, "m-2", at(2)).await;
    assert!(
        matches!(twice, Err(LedgerError::Illegal { state: "sent", .. })),
        "sent twice: {twice:?}"
    );
    let done = store
        .finish_call(id, CallOutcome::Answered, &json!({"ok": true}), at(3))
        .await
        .expect("answers");
    assert_eq!(done.state, CallState::Answered);
}

#[tokio::test]
async fn only_the_calls_of_an_owner_whose_beat_lapsed_may_have_run() {
    for url in urls().await {
        let store = Store::open(&url).await.expect("opens");
        let lapse = std::time::Duration::from_secs(20);
        for (id, owner) in [
            ("live", "p-live"),
            ("killed", "p-killed"),
            ("stopped", "p-stopped"),
        ] {
            store.beat(owner, at(0)).await.expect("beats");
            store
                .prepare_call(&call(id, owner))
                .await
                .expect("prepares");
            store.mark_sent(id, "m", at(1)).await.expect("sends");
        }
        store.release("p-stopped").await.expect("releases");
        // Fifteen seconds on: everyone's beat is fresh but the stopped one's.
        let early = store.recover_lapsed(at(15), lapse).await.expect("recovers");
        let ids: Vec<&str> = early.iter().map(|c| c.call.id.as_str()).collect();
        assert_eq!(ids, ["stopped"], "a stopped process's call left sent");
        // The live one beats on; the killed one's beat lapses.
        store.beat("p-live", at(25)).await.expect("beats");
        let later = store.recover_lapsed(at(30), lapse).await.expect("recovers");
        let ids: Vec<&str> = later.iter().map(|c| c.call.id.as_str()).collect();
        assert_eq!(ids, ["killed"]);
        assert_eq!(
            recorded(&store, "live").await.state,
            CallState::Sent,
            "its own"
        );
        assert_eq!(
            recorded(&store, "killed").await.state,
            CallState::MayHaveRun
        );
        store.close().await;
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
        for (id, owner, marker) in [
            ("in-flight", "gw-1", "m-1"),
            ("other-replica", "gw-2", "m-2"),
        ] {
            store
                .prepare_call(&call(id, owner))
                .await
                .expect("prepares");
            store.mark_sent(id, marker, at(1)).await.expect("sends");
        }
        store.close().await;
        drop(store);

        let restarted = Store::open(&url).await.expect("reopens");
        // gw-1 was killed; the other replica lives on and beats.
        restarted.beat("gw-2", at(9)).await.expect("beats");
        let recovered = restarted
            .recover_lapsed(at(10), std::time::Duration::from_secs(20))
            .await
            .expect("recovers");
        let ids: Vec<&str> = recovered.iter().map(|c| c.call.id.as_str()).collect();
        assert_eq!(ids, ["in-flight"]);
        assert_eq!(recovered[0].state, CallState::MayHaveRun);
        let state = |id: &'static str| {
            let store = restarted.clone();
            async move { recorded(&store, id).await.state }
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
        a_sent_call_is_not_sent_twice_and_is_answered(&store, "c1").await;
        let again = store
            .finish_call(
                "c1",
                CallOutcome::Failed,
                &json!({"failure": "late"}),
                at(4),
            )
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
        let missing = store
            .finish_call("nope", CallOutcome::Answered, &json!({}), at(4))
            .await;
        assert!(
            matches!(missing, Err(LedgerError::NotFound { .. })),
            "{missing:?}"
        );
        let entries = store.audit_entries().await.expect("reads");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].entry.tool, "delete");
    }
}

/// On SQLite a call's insert begins the write's batch in the same command:
/// when that insert fails (here a trigger someone with the file added
/// refuses it), neither the call nor its decision's entry is kept, the
/// store says why, and the calls recorded before and after it keep one
/// unbroken chain.
#[tokio::test]
async fn a_call_whose_record_fails_keeps_neither_the_call_nor_its_entry() {
    let store = askgate_testkit::TempStore::open().await;
    store
        .record_sent_call(&entry("before"), &call("c1", "gw-1"), "m-1", at(1))
        .await
        .expect("records");
    let pool = sqlx::sqlite::SqlitePool::connect(store.url())
        .await
        .expect("connects");
    sqlx::raw_sql(
        "CREATE TRIGGER refuse BEFORE INSERT ON calls WHEN NEW.owner = 'refused' \
         BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
    )
    .execute(&pool)
    .await
    .expect("adds the trigger");
    pool.close().await;

    let refused = store
        .record_sent_call(&entry("refused"), &call("c2", "refused"), "m-2", at(2))
        .await;
    let error = refused.expect_err("the trigger refuses the call");
    assert!(
        error.to_string().contains("refused by the test"),
        "says why: {error}"
    );
    assert!(store.call("c2").await.expect("reads").is_none());

    store
        .record_sent_call(&entry("after"), &call("c3", "gw-1"), "m-3", at(3))
        .await
        .expect("records after a failed record");
    assert_eq!(recorded(&store, "c3").await.state, CallState::Sent);
    let tools: Vec<String> = store
        .audit_entries()
        .await
        .expect("reads")
        .into_iter()
        .map(|record| record.entry.tool)
        .collect();
    assert_eq!(tools, ["before", "after"]);
    let verified = store.verify_audit().await.expect("verifies");
    assert_eq!((verified.entries, verified.broken), (2, None));
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
                drop(store.queue_finish_call(
                    &id,
                    CallOutcome::Answered,
                    &json!({"ok": true}),
                    at(2),
                ));
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
            let row = recorded(&reopened, &format!("c{i}")).await;
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
                    outcome: if i == 3 {
                        CallOutcome::Failed
                    } else {
                        CallOutcome::Answered
                    },
                    result: json!({"blocks": i}),
                    at: at(2),
                },
            })
            .collect();
        store.record_ended_calls(ended).await.expect("records");
        for i in 0..5 {
            let row = recorded(&store, &format!("r{i}")).await;
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
            .record_ended_calls(Vec::new())
            .await
            .expect("nothing to record");
    }
}

#[tokio::test]
async fn a_retry_finds_the_call_that_may_have_run_until_it_is_told_once() {
    for store in stores().await {
        let mut first = call("c1", "gw-1");
        first.request = Some("req-1".into());
        store
            .record_sent_call(&entry("delete"), &first, "m-1", at(1))
            .await
            .expect("records");
        let digest = first.arguments_digest.clone().expect("a digest");
        let retry = retry_of(&digest);
        // In flight in the process that sent it: its own calls are no retry.
        assert!(in_doubt(&store, &retry, at(0), "gw-1").await.is_none());
        // Another process sees it sent by one that never beat.
        let seen = in_doubt(&store, &retry, at(0), "gw-2")
            .await
            .expect("the sent call");
        assert_eq!((seen.call.call.id.as_str(), seen.owner_beat), ("c1", None));
        assert_eq!(seen.call.sent_at, Some(at(1)));
        store.beat("gw-1", at(2)).await.expect("beats");
        let seen = in_doubt(&store, &retry, at(0), "gw-2")
            .await
            .expect("the sent call");
        assert_eq!(seen.owner_beat, Some(at(2)), "with its owner's last beat");
        // Asked for under a key rotated in since: found by its digest under
        // the key before, in the same query.
        let earlier = [digest.clone()];
        let rotated = Retry {
            arguments_digest: "hmac-sha256:under-the-new-key",
            earlier_digests: &earlier,
            ..retry
        };
        let found = in_doubt(&store, &rotated, at(0), "gw-2").await;
        assert_eq!(
            found.map(|found| found.call.call.id),
            Some("c1".to_owned()),
            "{}",
            store.name()
        );
        // Another principal, tool or arguments: no retry of it.
        for other in [
            Retry {
                principal: "ci-bot",
                ..retry
            },
            Retry {
                tool: "list",
                ..retry
            },
            Retry {
                arguments_digest: "hmac-sha256:other",
                ..retry
            },
        ] {
            assert!(
                store
                    .may_have_run(&other, at(0), "gw-2")
                    .await
                    .expect("reads")
                    .is_none(),
                "{other:?}"
            );
        }
        // Its owner's beats stop: the call may have run, for every process.
        let recovered = store
            .recover_lapsed(at(100), std::time::Duration::from_secs(20))
            .await
            .expect("recovers");
        assert_eq!(recovered.len(), 1);
        let seen = in_doubt(&store, &retry, at(0), "gw-1")
            .await
            .expect("the call that may have run");
        assert_eq!(seen.call.state, CallState::MayHaveRun);
        assert_eq!(seen.call.finished_at, Some(at(100)));
        // The window counts from when it was found in doubt.
        assert!(
            in_doubt(&store, &retry, at(101), "gw-1").await.is_none(),
            "found in doubt before the window"
        );
        // One in doubt comes before a newer one that may be live.
        store
            .record_sent_call(&entry("delete"), &call("c3", "gw-4"), "m-3", at(50))
            .await
            .expect("records");
        let seen = in_doubt(&store, &retry, at(0), "gw-1")
            .await
            .expect("a call in doubt");
        assert_eq!(seen.call.call.id, "c1");
        // Told once; then a call the same as it goes as any call.
        assert!(store.tell_retry("c1", at(101)).await.expect("tells"));
        assert!(!store.tell_retry("c1", at(102)).await.expect("tells"));
        assert!(store.tell_retry("c3", at(102)).await.expect("tells"));
        assert!(in_doubt(&store, &retry, at(0), "gw-1").await.is_none());
        // A call recorded before calls kept their principal is anyone's.
        let mut older = call("c4", "gw-5");
        older.principal = None;
        store
            .record_sent_call(&entry("delete"), &older, "m-4", at(60))
            .await
            .expect("records");
        let seen = in_doubt(&store, &retry, at(0), "gw-1")
            .await
            .expect("the older call");
        assert_eq!(seen.call.call.id, "c4");
        assert!(store.tell_retry("c4", at(103)).await.expect("tells"));
        // Its request still names it.
        let of_request = store
            .call_of_request("req-1")
            .await
            .expect("reads")
            .expect("the call");
        assert_eq!(
            (of_request.call.id.as_str(), of_request.state),
            ("c1", CallState::MayHaveRun)
        );
        assert!(
            store
                .call_of_request("req-2")
                .await
                .expect("reads")
                .is_none()
        );
        // An answered call is no retry's concern.
        store
            .record_sent_call(&entry("delete"), &call("c2", "gw-3"), "m-2", at(5))
            .await
            .expect("records");
        store
            .finish_call("c2", CallOutcome::Answered, &json!({"ok": true}), at(6))
            .await
            .expect("answers");
        assert!(in_doubt(&store, &retry, at(0), "gw-1").await.is_none());
    }
}

#[tokio::test]
async fn a_call_its_caller_cancelled_is_recorded_cancelled() {
    for store in stores().await {
        store
            .record_sent_call(&entry("delete"), &call("c1", "gw-1"), "m-1", at(1))
            .await
            .expect("records");
        let row = store
            .finish_call(
                "c1",
                CallOutcome::Cancelled,
                &json!({"not_sent": "cancelled by the caller"}),
                at(2),
            )
            .await
            .expect("ends");
        assert_eq!(row.state, CallState::Cancelled);
        let read = store.call("c1").await.expect("reads").expect("the call");
        assert_eq!(read.state, CallState::Cancelled);
        assert_eq!(read.state.as_str(), "cancelled");
    }
}

/// What `store` finds of `retry` in doubt since `since`, for the process
/// `me`.
async fn in_doubt(
    store: &Store,
    retry: &Retry<'_>,
    since: jiff::Timestamp,
    me: &str,
) -> Option<askgate_store::Retried> {
    store.may_have_run(retry, since, me).await.expect("reads")
}

#[tokio::test]
async fn a_call_sent_whose_answer_never_came_may_have_run_and_its_retry_finds_it() {
    for store in stores().await {
        for (id, outcome) in [("c1", CallOutcome::Unanswered), ("c2", CallOutcome::Failed)] {
            let mut sent = call(id, "gw-1");
            sent.arguments_digest = Some(format!("hmac-sha256:{id}"));
            store
                .record_sent_call(&entry("delete"), &sent, "m-1", at(1))
                .await
                .expect("records");
            let ended = store
                .finish_call(id, outcome, &json!({"failure": "connection closed"}), at(2))
                .await
                .expect("ends");
            let retry = Retry {
                principal: "anonymous",
                server: "files",
                tool: "delete",
                arguments_digest: &format!("hmac-sha256:{id}"),
                earlier_digests: &[],
            };
            // Even in the live process that sent it.
            let found = in_doubt(&store, &retry, at(0), "gw-1").await;
            match outcome {
                CallOutcome::Unanswered => {
                    assert_eq!(ended.state, CallState::MayHaveRun, "{}", store.name());
                    let found = found.expect("the call that may have run");
                    assert_eq!(found.call.call.id, "c1");
                }
                // Refused by its server: an answer, no doubt.
                _ => {
                    assert_eq!(ended.state, CallState::Failed);
                    assert!(found.is_none(), "{found:?}");
                }
            }
        }
    }
}

/// Of several calls a retry may be the same as, it is told of one found
/// in doubt before one that may be live, and of the newest of those: read
/// alone or with the call's asks, whatever order the store keeps them in.
#[tokio::test]
async fn a_retry_is_told_of_the_call_in_doubt_first_then_of_the_newest() {
    for store in stores().await {
        for (id, owner, made) in [("c1", "gw-1", 10), ("c2", "gw-2", 30), ("c3", "gw-3", 20)] {
            let mut made_at = call(id, owner);
            made_at.at = at(made);
            store
                .record_sent_call(&entry("delete"), &made_at, "m", at(made))
                .await
                .expect("records");
        }
        let digest = call("c1", "gw-1").arguments_digest.expect("a digest");
        let retry = retry_of(&digest);
        let found = |store: &Store| {
            let store = store.clone();
            async move {
                let alone = in_doubt(&store, &retry, at(0), "gw-9").await;
                let of = askgate_store::RetryOf {
                    retry,
                    since: at(0),
                    me: "gw-9",
                };
                let (with_asks, _) = store
                    .tries_of_call(Some(of), "call-key", 10)
                    .await
                    .expect("reads");
                assert_eq!(alone, with_asks, "the same call either way");
                alone.expect("a call").call.call.id
            }
        };
        assert_eq!(found(&store).await, "c2", "the newest of the live ones");
        // c1's owner lapses: c1 may have run, and comes first.
        store.beat("gw-2", at(100)).await.expect("beats");
        store.beat("gw-3", at(100)).await.expect("beats");
        store
            .recover_lapsed(at(100), std::time::Duration::from_secs(20))
            .await
            .expect("recovers");
        assert_eq!(found(&store).await, "c1", "the one in doubt first");
    }
}
