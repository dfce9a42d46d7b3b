//! Serving HTTP — the inbox, and the gateway's `--listen` — with limits an
//! open port needs, which `axum::serve` does not set:
//!
//! - **a request's headers** must arrive within [`Limits::headers_within`]
//!   (default [`HEADERS_WITHIN`]), or its connection is closed (a slow or
//!   idle client holds nothing for long);
//! - **a request's body** may not pause for longer than
//!   [`Limits::body_pause`] (default [`BODY_PAUSE`]), nor be longer than
//!   [`Limits::body_size`] (default [`BODY_SIZE`]): one that says it is
//!   longer is answered `413 Payload Too Large`, naming both lengths,
//!   before a byte of it is read, and one that turns out longer is cut
//!   there (its reader gets an error);
//! - **at most [`Limits::connections`] connections** (default
//!   [`MOST_CONNECTIONS`]) are served at once — within the process's
//!   open-files limit, which is raised to fit first (see [`open_files`]) —
//!   and **at most [`Limits::connections_per_peer`]** (default
//!   [`MOST_CONNECTIONS_PER_PEER`]) from one IP address, so that one
//!   client cannot take them all: past either, a new connection is
//!   answered `503 Service Unavailable` (with `Retry-After`) and closed,
//!   and the log says so (once a minute), so that a flood of partial
//!   requests leaves the process able to work, its clients told why they
//!   wait, and the operator why it is slow.
//!
//! The gateway's config sets them (`[limits]`).
//!
//! Connections are HTTP/1 (axum's `http1`), served by hyper, and end
//! gracefully when `stop` comes: each finishes the request it is on.

pub mod open_files;

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt as _;

/// How long a client has to send a request's headers.
pub const HEADERS_WITHIN: Duration = Duration::from_secs(10);

/// How long a request's body may go without a byte.
pub const BODY_PAUSE: Duration = Duration::from_secs(30);

/// How many connections are served at once.
pub const MOST_CONNECTIONS: usize = 4096;

/// How many connections from one IP address are served at once: every
/// client on this machine is one address (loopback), and 200 SDK clients
/// hold two or three connections each.
pub const MOST_CONNECTIONS_PER_PEER: usize = 1024;

/// The longest request body read: 16 MiB, as the longest message askgate
/// reads from a client on stdio.
pub const BODY_SIZE: usize = 16 * 1024 * 1024;

/// What a listener takes on: see the module's docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long a client has to send a request's headers.
    pub headers_within: Duration,
    /// How long a request's body may go without a byte.
    pub body_pause: Duration,
    /// How many connections are served at once.
    pub connections: usize,
    /// How many connections from one IP address are served at once (at
    /// most [`Limits::connections`]).
    pub connections_per_peer: usize,
    /// The longest request body read, in bytes.
    pub body_size: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            headers_within: HEADERS_WITHIN,
            body_pause: BODY_PAUSE,
            connections: MOST_CONNECTIONS,
            connections_per_peer: MOST_CONNECTIONS_PER_PEER,
            body_size: BODY_SIZE,
        }
    }
}

/// The connections open, by the address they come from.
#[derive(Default)]
struct Peers {
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection counted open for its peer, until it ends.
struct PeerSlot {
    peers: Arc<Peers>,
    ip: IpAddr,
}

impl Peers {
    /// Count a connection from `ip`: `None` when `most` from it are open.
    fn enter(self: &Arc<Peers>, ip: IpAddr, most: usize) -> Option<PeerSlot> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(ip).or_insert(0);
        if *count >= most {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            peers: Arc::clone(self),
            ip,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self
            .peers
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// A request whose `Content-Length` is over `most` bytes answered 413,
/// naming both; the rest passed on (and cut at `most` if longer than they
/// say, by tower-http's limit).
async fn within_body_size(
    most: usize,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let length = request
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    match length {
        Some(length) if length > most as u64 => {
            tracing::warn!(length, most, "refused a request body over the longest read");
            (
                hyper::StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request's body is {length} bytes, over the {most} askgate reads in one \
                     request (the gateway's [limits] request_mib)\n"
                ),
            )
                .into_response()
        }
        _ => next.run(request).await,
    }
}

/// How often the log says the connections are at their limit.
const SAY_FULL_EVERY: Duration = Duration::from_secs(60);

/// Serve `app` on `listener`, within `limits`, until `stop`; then let
/// each connection finish its request. `what` names the server in the log
/// ("the inbox", "the gateway").
pub async fn serve(
    listener: TcpListener,
    app: Router,
    what: &'static str,
    limits: Limits,
    stop: impl Future<Output = ()> + Send,
) {
    let most = limits.body_size;
    // Around the router as a whole, not each of its routes (`Router::layer`):
    // axum clones a route's service for every request, and each layer
    // wrapped around a route is cloned with it, a box each; around the
    // router, a request clones the router's `Arc`. The outermost first: a
    // body that says it is too long (its headers read, axum's `from_fn`
    // takes axum's own body), one that pauses too long, one longer than it
    // says.
    let app = tower::ServiceBuilder::new()
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                within_body_size(most, request, next)
            },
        ))
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
            limits.body_pause,
        ))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(most))
        .service(app);
    let mut limits = limits;
    let open_files = open_files::raise();
    let fits = open_files::within(limits.connections, open_files);
    if fits < limits.connections {
        tracing::warn!(
            open_files,
            wanted = limits.connections,
            most = fits,
            "{what} serves fewer connections at once than [limits] connections says: the process \
             may open no more files (raise its limit: ulimit -n, or LimitNOFILE= in systemd)"
        );
        limits.connections = fits;
        limits.connections_per_peer = limits.connections_per_peer.min(fits);
    }
    let slots = Arc::new(Semaphore::new(limits.connections));
    let peers = Arc::new(Peers::default());
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.headers_within);
    let mut said_full: Option<Instant> = None;
    let mut said_peer_full: Option<Instant> = None;
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of files, say: wait a moment rather than spin.
                    tracing::warn!(%error, "{what} could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            if said_full.is_none_or(|at| at.elapsed() >= SAY_FULL_EVERY) {
                said_full = Some(Instant::now());
                tracing::warn!(
                    most = limits.connections,
                    "{what} serves as many connections as it may; new ones are answered 503 until one ends"
                );
            }
            tokio::spawn(turn_away(stream));
            continue;
        };
        let Some(peer_slot) = peers.enter(peer.ip(), limits.connections_per_peer) else {
            if said_peer_full.is_none_or(|at| at.elapsed() >= SAY_FULL_EVERY) {
                said_peer_full = Some(Instant::now());
                tracing::warn!(
                    peer = %peer.ip(),
                    most = limits.connections_per_peer,
                    "{what} serves as many connections from one address as it may; its new ones are \
                     answered 503 until one ends"
                );
            }
            tokio::spawn(turn_away(stream));
            continue;
        };
        // An answer is written in pieces (an event stream's event, then its
        // end): each goes out at once, not after the client's delayed
        // acknowledgement of the one before (40 ms on Linux).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "a connection's TCP_NODELAY could not be set");
        }
        let service = TowerToHyperService::new(
            app.clone()
                .map_request(|request: hyper::Request<Incoming>| request.map(Body::new)),
        );
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "a connection ended with an error");
            }
            drop((slot, peer_slot));
        });
    }
    graceful.shutdown().await;
}

/// Answer a connection past the limit `503` and close it, spending at
/// most a second on it.
async fn turn_away(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    const FULL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\n\
        Content-Type: text/plain; charset=utf-8\r\nContent-Length: 53\r\n\
        Connection: close\r\n\r\naskgate: too many connections; try again in a moment\n";
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(FULL)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    #[tokio::test]
    async fn a_request_whose_headers_never_end_is_closed_and_others_are_served() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("an address");
        let app = Router::new().route("/", axum::routing::get(|| async { "here" }));
        tokio::spawn(serve(
            listener,
            app,
            "the test",
            Limits::default(),
            std::future::pending(),
        ));
        // Many clients that start a request and never finish its headers.
        let mut partial = Vec::new();
        for _ in 0..200 {
            let mut stream = TcpStream::connect(addr).await.expect("connects");
            stream
                .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
                .await
                .expect("writes");
            partial.push(stream);
        }
        // A whole request is served meanwhile.
        let mut whole = TcpStream::connect(addr).await.expect("connects");
        whole
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("writes");
        let mut answer = String::new();
        whole.read_to_string(&mut answer).await.expect("reads");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("here"), "{answer}");
        // Each partial one is closed once its time is up.
        for stream in &mut partial {
            let mut rest = Vec::new();
            let read = tokio::time::timeout(HEADERS_WITHIN * 2, stream.read_to_end(&mut rest))
                .await
                .expect("closed within the time for headers");
            assert!(read.is_ok());
        }
    }

    /// `request` sent on a connection of its own, and the whole answer.
    async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream.write_all(request).await.expect("writes");
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn a_body_over_the_longest_is_refused_413_or_cut_and_a_shorter_one_read() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("an address");
        // Reads the whole body, as rmcp's Streamable HTTP service does.
        let app = Router::new().route(
            "/",
            axum::routing::post(|body: Body| async move {
                match axum::body::to_bytes(body, usize::MAX).await {
                    Ok(bytes) => format!("read {}", bytes.len()),
                    Err(_) => "cut".to_owned(),
                }
            }),
        );
        let limits = Limits {
            body_size: 1000,
            ..Limits::default()
        };
        tokio::spawn(serve(
            listener,
            app,
            "the test",
            limits,
            std::future::pending(),
        ));
        let sized = |length: usize| {
            let mut request = format!(
                "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {length}\r\n\r\n"
            )
            .into_bytes();
            request.extend(std::iter::repeat_n(b'a', length));
            request
        };
        let answer = exchange(addr, &sized(500)).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("read 500"), "{answer}");
        // Says it is too long: refused before it is read, naming both.
        let answer = exchange(addr, &sized(2000)).await;
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(
            answer.contains("the request's body is 2000 bytes, over the 1000 askgate reads"),
            "{answer}"
        );
        // Does not say: cut at the longest.
        let mut chunked =
            b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                .to_vec();
        for _ in 0..4 {
            chunked.extend(b"1f4\r\n");
            chunked.extend([b'a'; 500]);
            chunked.extend(b"\r\n");
        }
        chunked.extend(b"0\r\n\r\n");
        let answer = exchange(addr, &chunked).await;
        assert!(!answer.contains("read 2000"), "{answer}");
        assert!(
            answer.starts_with("HTTP/1.1 413") || answer.ends_with("cut"),
            "{answer}"
        );
    }

    #[tokio::test]
    async fn a_request_whose_body_stalls_is_ended_after_the_body_pause() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("an address");
        // Reads the whole body, as rmcp's Streamable HTTP service does.
        let app = Router::new().route(
            "/",
            axum::routing::post(|body: Body| async move {
                match axum::body::to_bytes(body, usize::MAX).await {
                    Ok(bytes) => format!("read {}", bytes.len()),
                    Err(_) => "the body stalled".to_owned(),
                }
            }),
        );
        let limits = Limits {
            body_pause: Duration::from_secs(1),
            ..Limits::default()
        };
        tokio::spawn(serve(
            listener,
            app,
            "the test",
            limits,
            std::future::pending(),
        ));
        // Ten bytes of the hundred it says, then nothing.
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream
            .write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
            .await
            .expect("writes");
        // Bounded well short of the default pause: the configured one
        // ended it.
        let mut answer = Vec::new();
        let read = tokio::time::timeout(BODY_PAUSE / 2, stream.read_to_end(&mut answer))
            .await
            .expect("ended within the configured pause, not the default");
        assert!(read.is_ok());
        // Its reader was told, and the request answered.
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.ends_with("the body stalled"), "{answer}");
    }

    #[tokio::test]
    async fn a_connection_past_the_limit_is_told_503_and_closed() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("an address");
        let app = Router::new().route("/", axum::routing::get(|| async { "here" }));
        let limits = Limits {
            connections: 64,
            connections_per_peer: 32,
            ..Limits::default()
        };
        tokio::spawn(serve(
            listener,
            app,
            "the test",
            limits,
            std::future::pending(),
        ));
        // Every slot held by clients that have not sent their headers yet,
        // from two addresses (one may hold only its share).
        let mut held = Vec::new();
        for n in 0..limits.connections {
            let from = if n % 2 == 0 {
                [127, 0, 0, 1]
            } else {
                [127, 0, 0, 2]
            };
            held.push(connect_from(from, addr).await);
        }
        // Wait until the server has taken them all (it accepts in turn).
        let answer = crate::serving::tests::until_turned_away(addr).await;
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(answer.contains("Retry-After: 5"), "{answer}");
        drop(held);
    }

    #[tokio::test]
    async fn one_address_gets_only_its_share_of_the_connections_and_another_is_served() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("an address");
        let app = Router::new().route("/", axum::routing::get(|| async { "here" }));
        let limits = Limits {
            connections: 40,
            connections_per_peer: 10,
            ..Limits::default()
        };
        tokio::spawn(serve(
            listener,
            app,
            "the test",
            limits,
            std::future::pending(),
        ));
        let mut held = Vec::new();
        for _ in 0..10 {
            held.push(connect_from([127, 0, 0, 1], addr).await);
        }
        let answer = until_turned_away_from([127, 0, 0, 1], addr).await;
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        // Another address is served meanwhile: the listener is far from
        // its 40.
        let answer = get_from([127, 0, 0, 2], addr).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        // One of the first address's ends: it is served again.
        drop(held.pop());
        let mut again = None;
        for _ in 0..50 {
            let answer = get_from([127, 0, 0, 1], addr).await;
            if answer.starts_with("HTTP/1.1 200") {
                again = Some(answer);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(again.is_some(), "served once a slot of its own was free");
    }

    /// The whole answer to `GET /` sent to `addr` from `from`.
    async fn get_from(from: [u8; 4], addr: std::net::SocketAddr) -> String {
        let mut stream = connect_from(from, addr).await;
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("writes");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.expect("reads");
        answer
    }

    /// A connection to `addr` from the loopback address `from`.
    async fn connect_from(from: [u8; 4], addr: std::net::SocketAddr) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind((std::net::Ipv4Addr::from(from), 0).into())
            .expect("binds a loopback address");
        socket.connect(addr).await.expect("connects")
    }

    /// Connect until one connection is answered without a request: the
    /// answer of a server that turns it away.
    async fn until_turned_away(addr: std::net::SocketAddr) -> String {
        until_turned_away_from([127, 0, 0, 1], addr).await
    }

    /// [`until_turned_away`], from the loopback address `from`.
    async fn until_turned_away_from(from: [u8; 4], addr: std::net::SocketAddr) -> String {
        for _ in 0..200 {
            let mut stream = connect_from(from, addr).await;
            let mut answer = String::new();
            let read = tokio::time::timeout(
                Duration::from_millis(200),
                stream.read_to_string(&mut answer),
            )
            .await;
            if read.is_ok() && !answer.is_empty() {
                return answer;
            }
        }
        panic!("no connection was turned away");
    }
}
