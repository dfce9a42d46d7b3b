//! Parking, answering, listing and expiring asks, and the news of them.

use std::time::Duration;

use askgate_store::{
    AskFilter, AskParked, AskSettled, AskStatus, Error, Misuse, NewAsk, SettleError, Settlement,
    Store,
};
use askgate_testkit::{Fresh, Scratch};
use tokio::sync::broadcast;

use super::{answer, at, new_ask, postgres, stores};

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
async fn pending_asks_are_counted_by_principal_and_settled_or_overdue_ones_are_not() {
    for store in stores().await {
        store.park(&new_ask("a1", 0, None)).await.expect("parks");
        store
            .park(&new_ask("a2", 0, Some(60)))
            .await
            .expect("parks");
        let mut bobs = new_ask("b1", 0, None);
        bobs.principal = "bob".into();
        store.park(&bobs).await.expect("parks");
        let count = |who: &'static str, t| {
            let store = store.clone();
            async move { store.pending_count_of(who, at(t)).await.expect("counts") }
        };
        assert_eq!((count("alice", 30).await, count("bob", 30).await), (2, 1));
        assert_eq!(count("alice", 61).await, 1, "{}: overdue", store.name());
        store
            .settle("a1", &answer("carol"), at(62))
            .await
            .expect("settles");
        assert_eq!(count("alice", 62).await, 0, "{}: settled", store.name());
        assert_eq!(count("nobody", 62).await, 0);
    }
}

#[tokio::test]
async fn an_answer_after_expiry_is_gone_and_expiry_applies_no_default() {
    for store in stores().await {
        store
            .park(&new_ask("a1", 0, Some(60)))
            .await
            .expect("parks");
        assert_eq!(store.pending_count(at(30)).await.expect("counts"), 1);
        // Overdue, not yet swept: it waits for nobody, and is not counted
        // as waiting (the gateway's /metrics).
        assert_eq!(store.pending_count(at(61)).await.expect("counts"), 0);
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
        let settlement = askgate_testkit::wait::settlement(&store, "a1");
        tokio::task::yield_now().await;
        store
            .settle("a1", &answer("alice"), at(3))
            .await
            .expect("settles");
        assert_eq!(settlement.await.status, AskStatus::Answered);
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

/// Two replicas of one fresh PostgreSQL store (its URL keeps the store
/// while they live), when PostgreSQL is configured.
async fn two_replicas() -> Option<(Fresh, Store, Store)> {
    let url = postgres().await?;
    let first = Store::open(&url).await.expect("replica 1 opens");
    let second = Store::open(&url).await.expect("replica 2 opens");
    Some((url, first, second))
}

/// News of an ask.
trait News {
    /// The ask's id.
    fn id(&self) -> &str;
}

impl News for AskSettled {
    fn id(&self) -> &str {
        &self.id
    }
}

impl News for AskParked {
    fn id(&self) -> &str {
        &self.id
    }
}

/// The first news of the ask `id` on `news` (news of others passed over);
/// the test fails, saying `what` it waited for, after 30 s without it.
async fn news_of<T: News + Clone>(news: &mut broadcast::Receiver<T>, id: &str, what: &str) -> T {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match news.recv().await {
                Ok(item) if item.id() == id => return item,
                Ok(_) => continue,
                Err(error) => panic!("{error}"),
            }
        }
    })
    .await
    .expect(what)
}

#[tokio::test]
async fn an_answer_given_through_one_replica_wakes_the_waiter_held_by_another() {
    let Some((_url, holder, answerer)) = two_replicas().await else {
        return;
    };
    holder
        .park(&new_ask("shared", 0, None))
        .await
        .expect("parks");
    let mut settlements = holder.settlements();
    answerer
        .settle("shared", &answer("alice"), at(1))
        .await
        .expect("settles on replica 2");
    let what = "replica 1 hears of the answer through LISTEN/NOTIFY";
    let woken = news_of(&mut settlements, "shared", what).await;
    assert_eq!(&*woken.id, "shared");
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
    let Some((_url, listener, parker)) = two_replicas().await else {
        return;
    };
    let mut parked = listener.parked();
    parker
        .park(&new_ask("far", 0, None))
        .await
        .expect("parks on replica 2");
    let what = "replica 1 hears of the ask through LISTEN/NOTIFY";
    let heard = news_of(&mut parked, "far", what).await;
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
