//! A call's earlier tries read in one visit: the ledger's call that may
//! have run and the call's asks, as each read alone finds them.

use askgate_store::{Retry, RetryOf, Store};

use super::{answer, at, call, entry, new_ask, retry_of, stores};

/// The asks `mcp:k:confirm` (two, the newest second, the first answered)
/// and another call's.
async fn park_asks(store: &Store) {
    for (id, key, created) in [
        ("first", "mcp:k:confirm", 1),
        ("other", "mcp:other:confirm", 2),
        ("second", "mcp:k:confirm", 3),
    ] {
        let mut ask = new_ask(id, created, None);
        ask.call_key = Some(key.to_owned());
        store.park(&ask).await.expect("parks");
    }
    store
        .settle("first", &answer("alice"), at(4))
        .await
        .expect("settles");
}

/// `retry` asked by the process `gw-2`, the window open since 0.
fn asked_by_gw2(retry: Retry<'_>) -> RetryOf<'_> {
    RetryOf {
        retry,
        since: at(0),
        me: "gw-2",
    }
}

#[tokio::test]
async fn a_calls_tries_read_together_are_what_each_read_finds() {
    for store in stores().await {
        park_asks(&store).await;
        store
            .record_sent_call(&entry("delete"), &call("c1", "gw-1"), "m-1", at(1))
            .await
            .expect("records");
        let digest = call("c1", "gw-1").arguments_digest.expect("a digest");
        let retry = retry_of(&digest);
        // Under a key rotated in since, with digests under two before it:
        // the asks' parameters follow every digest's.
        let earlier = ["hmac-sha256:older".to_owned(), digest.clone()];
        let rotated = Retry {
            arguments_digest: "hmac-sha256:newest",
            earlier_digests: &earlier,
            ..retry
        };
        let other = Retry {
            tool: "list",
            ..retry
        };
        for (asked, sent) in [(retry, Some("c1")), (rotated, Some("c1")), (other, None)] {
            let (found, asks) = store
                .tries_of_call(Some(asked_by_gw2(asked)), "mcp:k:confirm", 10)
                .await
                .expect("reads");
            let alone = store
                .may_have_run(&asked, at(0), "gw-2")
                .await
                .expect("reads");
            assert_eq!(found, alone, "{}: {asked:?}", store.name());
            // Every column of the call as the ledger's read by id finds it
            // (on SQLite both reads above run on the caller's thread, that
            // one through sqlx).
            if let Some(id) = sent {
                let by_id = store.call(id).await.expect("reads");
                assert_eq!(found.as_ref().map(|f| &f.call), by_id.as_ref());
            }
            assert_eq!(found.map(|f| f.call.call.id).as_deref(), sent);
            let ids: Vec<&str> = asks.iter().map(|row| row.ask.id.as_str()).collect();
            assert_eq!(ids, ["second", "first"], "{}", store.name());
            // Every column as the asks' own read finds it, the answer's too
            // (on SQLite the read before an ask runs on the caller's thread,
            // the asks' own through sqlx).
            let of_call = store
                .asks_of_call("mcp:k:confirm", 10)
                .await
                .expect("reads");
            assert_eq!(asks, of_call, "{}", store.name());
            assert_eq!(asks[1].answered_by.as_deref(), Some("alice"));
        }
        // No ledger asked (a read, or no retry window): the asks alone,
        // at most as many as asked for.
        let (found, asks) = store
            .tries_of_call(None, "mcp:k:confirm", 1)
            .await
            .expect("reads");
        assert!(found.is_none());
        assert_eq!(asks.len(), 1);
        assert_eq!(asks[0].ask.id, "second");
        // A call with no asks and no earlier try: nothing either way.
        let (found, asks) = store
            .tries_of_call(Some(asked_by_gw2(other)), "mcp:none:confirm", 10)
            .await
            .expect("reads");
        assert!(found.is_none() && asks.is_empty());
    }
}
