//! A PostgreSQL server that goes away and comes back, seen through a TCP
//! relay the test stops and starts (never the machine's own server): the
//! error says the server refused the connection, with its address, and
//! the store works again once it is back.

use std::net::SocketAddr;
use std::str::FromStr;

use askgate_store::{Error, Store};
use askgate_testkit::postgres::FreshSchema;
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinHandle;

use super::{at, call, entry};

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
