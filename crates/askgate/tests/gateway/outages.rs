//! A PostgreSQL store that goes down and comes back while a person is
//! being asked — a server of the test's own, stopped and started again
//! with `pg_ctl`: the wait is not cut, a person's answer given during the
//! outage is not lost, and the call runs once, when the store is back.

use std::sync::Arc;

use askgate_store::Store;
use askgate_testkit::gateway::Gateway;
use askgate_testkit::mcp::text;
use askgate_testkit::own_postgres::OwnPostgres;
use askgate_testkit::person::accept;
use askgate_testkit::{Manner, Person, Seen, within};
use rmcp::model::ProtocolVersion;
use serde_json::json;

/// Look at the store from the test, as a second process would, until two
/// looks in a row have found it out of reach: long enough (each look
/// waits out the pool's 5 s) that the gateway, looking at least once a
/// second, has met the outage too.
async fn seen_down_twice(store: &Store, server: &OwnPostgres) {
    for _ in 0..2 {
        let error = store
            .pending(1, None)
            .await
            .expect_err("the server is down");
        assert!(
            error.to_string().contains(&format!(
                "PostgreSQL at {} refused the connection",
                server.address()
            )),
            "{error}"
        );
    }
}

/// A gateway over `server` (reads ruled `read`; `logging`: the log
/// directives the test reads, if any)
/// whose person says yes to a confirmation once the server is stopped:
/// the yes comes during the outage. The gateway, the test's own look at
/// the store, and when the server went down.
async fn yes_during_an_outage(
    server: &Arc<OwnPostgres>,
    logging: &str,
) -> (Gateway, Store, Seen<()>) {
    let went_down: Seen<()> = Seen::default();
    let person = super::person(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"confirm": true}))],
    )
    .before_answering({
        let (server, went_down) = (Arc::clone(server), went_down.clone());
        move |_| {
            let (server, went_down) = (Arc::clone(&server), went_down.clone());
            async move {
                server.stop();
                went_down.push(());
            }
        }
    });
    let h = super::setup()
        .store(&server.url())
        .config("[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n")
        .logging(logging)
        .connect(person)
        .await;
    let store = h.store().await;
    (h, store, went_down)
}

#[tokio::test]
async fn a_call_waiting_for_the_inbox_rides_out_a_postgresql_restart_and_runs_once_approved() {
    let Some(server) = OwnPostgres::start("the gateway's PostgreSQL outage tests") else {
        return;
    };
    // A client with no elicitation, whose calls wait for the inbox.
    let person = Person::new(json!({}))
        .speaking(ProtocolVersion::V_2025_11_25)
        .in_manner(Manner::Person);
    let h = super::setup()
        .store(&server.url())
        .config("inbox_wait = \"5m\"\n[inbox]\nlisten = \"127.0.0.1:0\"")
        .connect(person)
        .await;
    let store = h.store().await;
    let peer = h.client.peer().clone();
    let waiting = tokio::spawn(async move {
        peer.call_tool(askgate_testkit::mcp::call("delete_all_notes", json!({})))
            .await
    });
    let parked = within("the call's ask to be parked", async {
        loop {
            let pending = store.pending(1, None).await.expect("pending").asks;
            if let Some(row) = pending.into_iter().next() {
                return row;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;

    server.stop();
    seen_down_twice(&store, &server).await;
    assert!(
        !waiting.is_finished(),
        "the wait for a person outlasts the outage: {:?}",
        waiting.await
    );

    server.start_again();
    askgate_testkit::answer_in_inbox(
        &store,
        &parked.ask.id,
        askgate_testkit::answer(json!({"confirm": true})),
        "ada",
        askgate_core::Surface::Web,
    )
    .await;
    let ran = within("the call to run once approved", waiting)
        .await
        .expect("joins")
        .expect("a result");
    assert_ne!(ran.is_error, Some(true), "{}", text(&ran));
    store.close().await;
    let stopped = h.stop().await;
    assert_eq!(
        askgate_testkit::gateway::ledger(stopped.store_url()).await,
        ["answered"]
    );
}

#[tokio::test]
async fn a_yes_given_through_the_client_during_a_postgresql_outage_runs_the_call_once_it_is_back() {
    let Some(server) = OwnPostgres::start("the gateway's PostgreSQL outage tests") else {
        return;
    };
    let server = Arc::new(server);
    let (h, store, went_down) = yes_during_an_outage(&server, "").await;
    let peer = h.client.peer().clone();
    let calling = tokio::spawn(async move {
        peer.call_tool(askgate_testkit::mcp::call(
            "append_note",
            json!({"name": "todo", "text": "buy milk"}),
        ))
        .await
    });
    went_down.at_least("the store to go down", 1).await;
    seen_down_twice(&store, &server).await;
    assert!(
        !calling.is_finished(),
        "a person's yes waits for the store: {:?}",
        calling.await
    );

    server.start_again();
    let ran = within("the call to run once the store is back", calling)
        .await
        .expect("joins")
        .expect("a result");
    assert_ne!(ran.is_error, Some(true), "{}", text(&ran));
    assert_eq!(h.person.messages().len(), 1, "the person was asked once");
    let read = super::call(&h, "read_note", json!({"name": "todo"})).await;
    assert!(text(&read).contains("buy milk"), "{}", text(&read));
    store.close().await;
    let stopped = h.stop().await;
    assert_eq!(
        askgate_testkit::gateway::ledger(stopped.store_url()).await,
        ["answered", "answered"]
    );
    // Its decision audited once, however often its record was tried, and
    // the chain and its head hold.
    let store = Store::open(stopped.store_url()).await.expect("opens");
    let audit = store.audit_entries().await.expect("the audit");
    let tools: Vec<&str> = audit.iter().map(|r| r.entry.tool.as_str()).collect();
    assert_eq!(tools, ["append_note", "read_note"]);
    assert_eq!(store.verify_audit().await.expect("verifies").broken, None);
    store.close().await;
    // The ledger dates the send when it happened, after the outage's
    // failed writes (the first retry waits half a second), not at the
    // decision before them: "it may have run at" names the right time.
    let pool = sqlx::PgPool::connect(&server.url())
        .await
        .expect("connects");
    let (prepared, sent): (i64, Option<i64>) =
        sqlx::query_as("SELECT prepared_at, sent_at FROM calls WHERE tool = 'append_note'")
            .fetch_one(&pool)
            .await
            .expect("the call's row");
    pool.close().await;
    let sent = sent.expect("sent");
    assert!(
        sent - prepared >= 500_000,
        "sent {sent} µs, prepared {prepared} µs"
    );
}

#[tokio::test]
async fn a_read_during_a_postgresql_outage_runs_and_its_record_is_written_once_the_store_is_back() {
    let Some(server) = OwnPostgres::start("the gateway's PostgreSQL outage tests") else {
        return;
    };
    let h = super::setup()
        .store(&server.url())
        .config("[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n")
        .connect(super::person(json!({}), vec![]))
        .await;
    let store = h.store().await;
    server.stop();
    // A read never waits for the store: it runs (its server answers),
    // and its record waits.
    let read = super::call(&h, "read_note", json!({"name": "todo"})).await;
    assert!(text(&read).contains("no note named"), "{}", text(&read));
    seen_down_twice(&store, &server).await;

    server.start_again();
    store.close().await;
    // A clean stop waits for the record the outage held back.
    let stopped = h.stop().await;
    assert_eq!(
        askgate_testkit::gateway::ledger(stopped.store_url()).await,
        ["answered"],
        "the read is in the ledger, once"
    );
    let store = Store::open(stopped.store_url()).await.expect("opens");
    let audit = store.audit_entries().await.expect("the audit");
    assert_eq!(audit.len(), 1, "and in the audit, once");
    assert_eq!(audit[0].entry.tool, "read_note");
    store.close().await;
}

#[tokio::test]
async fn a_call_approved_during_a_postgresql_outage_and_then_cancelled_never_runs() {
    let Some(server) = OwnPostgres::start("the gateway's PostgreSQL outage tests") else {
        return;
    };
    let server = Arc::new(server);
    // The call waits for its durable record, and its client cancels it
    // meanwhile.
    let (h, store, went_down) = yes_during_an_outage(
        &server,
        "askgate_gateway=info,askgate_gateway::express=debug,askgate_mcp=info,rmcp::service=info",
    )
    .await;
    let handle = askgate_testkit::mcp::send_call(
        h.client.peer(),
        askgate_testkit::mcp::call("append_note", json!({"name": "todo", "text": "gone"})),
    )
    .await;
    went_down.at_least("the store to go down", 1).await;
    seen_down_twice(&store, &server).await;
    handle
        .cancel(Some("stopped".into()))
        .await
        .expect("the cancel is sent");
    h.log.line_with(&["cancelled id=", "stopped"]).await;

    server.start_again();
    h.log
        .line_with(&["cancelled by its client before it was sent", "append_note"])
        .await;
    let read = super::call(&h, "read_note", json!({"name": "todo"})).await;
    assert!(
        !text(&read).contains("gone"),
        "the write never ran: {}",
        text(&read)
    );
    store.close().await;
    let stopped = h.stop().await;
    // Ledgered as cancelled by its caller, not sent; the read answered.
    assert_eq!(
        askgate_testkit::gateway::ledger(stopped.store_url()).await,
        ["cancelled", "answered"]
    );
}
