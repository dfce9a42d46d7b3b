//! A PostgreSQL server that goes away and comes back — seen through a TCP
//! relay the test stops and starts, or a server of the test's own stopped
//! and started again with `pg_ctl` (never the machine's own server): the
//! error says the server refused the connection, with its address; the
//! store works again once it is back; a wait for a person rides it out.

use std::net::SocketAddr;
use std::str::FromStr;

use askgate_store::{AskStatus, Error, Store};
use askgate_testkit::own_postgres::OwnPostgres;
use askgate_testkit::postgres::FreshSchema;
use askgate_testkit::wait::PATIENCE;
use askgate_testkit::within;
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinHandle;

use super::{answer, at, call, entry, new_ask};

/// A TCP relay from a loopback port to `target`; dropping every
/// connection when stopped.
struct Relay {
    port: u16,
    target: SocketAddr,
    task: JoinHandle<()>,
}

impl Relay {
    async fn start(port: u16, target: SocketAddr) -> Relay {
        let socket = TcpSocket::new_v4().expect("a socket");
        socket.set_reuseaddr(true).expect("reuses the address");
        socket
            .bind(SocketAddr::from(([127, 0, 0, 1], port)))
            .expect("binds");
        let listener = socket.listen(64).expect("listens");
        let port = listener.local_addr().expect("an address").port();
        let task = tokio::spawn(async move {
            let mut relayed = tokio::task::JoinSet::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                relayed.spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Relay { port, target, task }
    }

    /// Stop listening and drop every connection relayed.
    async fn stop(self) -> (u16, SocketAddr) {
        self.task.abort();
        let _ = self.task.await;
        (self.port, self.target)
    }
}

#[tokio::test]
async fn a_postgresql_that_goes_away_is_named_as_refusing_and_the_store_comes_back_with_it() {
    let Some(schema) = FreshSchema::create("the PostgreSQL outage test").await else {
        return;
    };
    let url = schema.url();
    let options = sqlx::postgres::PgConnectOptions::from_str(url).expect("a URL");
    let server = format!("{}:{}", options.get_host(), options.get_port());
    let target: SocketAddr = tokio::net::lookup_host(&server)
        .await
        .expect("resolves")
        .next()
        .expect("an address");
    let relay = Relay::start(0, target).await;
    let through = format!("127.0.0.1:{}", relay.port);
    let relayed = url.replacen(&server, &through, 1);
    assert_ne!(
        relayed, url,
        "the test database's URL names its host and port ({server})"
    );
    let store = Store::open(&relayed)
        .await
        .expect("opens through the relay");
    store
        .record_sent_call(&entry("write"), &call("c1", "gw-1"), "m-1", at(1))
        .await
        .expect("records");

    let (port, target) = relay.stop().await;
    let error = store
        .record_sent_call(&entry("write"), &call("c2", "gw-1"), "m-2", at(2))
        .await
        .expect_err("the server is gone");
    assert!(matches!(error, Error::Unavailable { .. }), "{error:?}");
    assert!(
        error.to_string().contains(&format!(
            "PostgreSQL at 127.0.0.1:{port} refused the connection"
        )),
        "{error}"
    );
    let read = store.call("c1").await.expect_err("reads fail too");
    assert!(
        read.to_string().contains("refused the connection"),
        "{read}"
    );

    // Back: the same store writes and reads again, without reopening.
    let relay = Relay::start(port, target).await;
    store
        .record_sent_call(&entry("write"), &call("c2", "gw-1"), "m-2", at(2))
        .await
        .expect("records once the server is back");
    assert!(store.call("c1").await.expect("reads").is_some());
    store.close().await;
    relay.stop().await;
}

/// A server of the test's own, stopped and started again (`pg_ctl`): a
/// wait for a person's answer rides out the outage and ends with the
/// answer given once the server is back, and news of what another
/// process parks and settles comes again — the server's notifications
/// are listened to again, not given up for the rest of the process.
#[tokio::test]
async fn a_wait_and_the_news_of_other_processes_ride_out_a_restart_of_the_server() {
    let Some(server) = OwnPostgres::start("the PostgreSQL restart test") else {
        return;
    };
    let here = Store::open(&server.url()).await.expect("opens");
    // Another process's store: news from it reaches `here` only through
    // the server.
    let there = Store::open(&server.url()).await.expect("opens");
    there.park(&new_ask("a-1", 0, None)).await.expect("parks");
    let waiting = tokio::spawn({
        let here = here.clone();
        async move { here.wait_settled("a-1", PATIENCE).await }
    });

    server.stop();
    let error = here
        .pending(10, None)
        .await
        .expect_err("the server is down");
    assert!(error.is_outage(), "{error:?}");
    assert!(
        error.to_string().contains(&format!(
            "PostgreSQL at {} refused the connection",
            server.address()
        )),
        "{error}"
    );
    // A second look fails as the first did: by now the waiter has looked
    // at its ask during the outage too.
    let again = here.ask("a-1").await.expect_err("still down");
    assert!(again.is_outage(), "{again:?}");
    assert!(!waiting.is_finished(), "an outage does not end a wait");

    server.start_again();
    // The first read and the first write once it is back work: the
    // connections the restart closed are not handed out.
    let pending = here
        .pending(10, None)
        .await
        .expect("reads once the server is back");
    assert_eq!(pending.asks.len(), 1);
    there
        .settle("a-1", &answer("ada"), at(5))
        .await
        .expect("settles once the server is back");
    let settled = within("the wait to end with the answer", waiting)
        .await
        .expect("the waiter ran")
        .expect("no error ends the wait")
        .expect("the ask settled");
    assert_eq!(settled.status, AskStatus::Answered);
    assert_eq!(settled.answered_by.as_deref(), Some("ada"));

    // The notifications are listened to again: an ask parked over there
    // is heard of here (one parked before the listener is back is not,
    // so asks are parked until one is).
    let mut parked = here.parked();
    let heard = within("news of an ask parked by another process", async {
        for n in 0.. {
            there
                .park(&new_ask(&format!("b-{n}"), 6, None))
                .await
                .expect("parks");
            if let Ok(Ok(news)) =
                tokio::time::timeout(std::time::Duration::from_secs(1), parked.recv()).await
            {
                return news.id;
            }
        }
        unreachable!("the loop returns")
    })
    .await;
    assert!(heard.starts_with("b-"), "{heard}");
    let mut settlements = here.settlements();
    there
        .settle(&heard, &answer("ada"), at(7))
        .await
        .expect("settles");
    let news = within(
        "news of an ask settled by another process",
        settlements.recv(),
    )
    .await
    .expect("news");
    assert_eq!(&*news.id, &*heard);
    here.close().await;
    there.close().await;
}
