//! A PostgreSQL server that cannot be reached, said as what it is. The
//! driver reports a server that refuses connections as "pool timed out"
//! once its pool has no live connection left (sqlx keeps no cause for
//! that), and a dropped one as an I/O error; the operator needs to read
//! "PostgreSQL at 10.0.0.5:5432 refused the connection". So when a
//! failure is of that kind, one TCP connect to the server's address says
//! which it is: refused, not answering, or reachable (then the driver's
//! words stand).
//!
//! The probe is a blocking connect of at most [`PROBE`], only on a path
//! that already failed after the pool's wait, only to an address given as
//! an IP (or `localhost`: no name lookup), and at most once per second per
//! address: what it found is kept for that long.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest the probe waits for a connect.
const PROBE: Duration = Duration::from_millis(250);

/// How long what a probe found is taken for true.
const FRESH: Duration = Duration::from_secs(1);

/// The last probe: where, when, and what it found.
static LAST: Mutex<Option<(SocketAddr, Instant, Reach)>> = Mutex::new(None);

/// How long to wait before trying the store again while it is out of
/// reach: half a second first, doubled each time up to ten seconds — soon
/// enough that a server back from a restart is used again within seconds,
/// slow enough that a long outage is not hammered.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Backoff {
    /// The first wait.
    pub const FIRST: Duration = Duration::from_millis(500);
    /// The longest wait.
    pub const LAST: Duration = Duration::from_secs(10);

    /// A backoff at its first wait.
    pub fn new() -> Backoff {
        Backoff { next: Self::FIRST }
    }

    /// The wait before the next try; the one after is longer.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(Self::LAST);
        wait
    }
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new()
    }
}

/// What a connect to the server found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Nothing listens there.
    Refused,
    /// Nothing answered within [`PROBE`].
    Silent,
    /// It accepts connections.
    Open,
}

/// Whether `error` is of the kind an unreachable server makes.
pub(crate) fn is_outage(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::PoolTimedOut | sqlx::Error::Tls(_) => true,
        sqlx::Error::Io(io) => io.kind() != std::io::ErrorKind::StorageFull,
        _ => false,
    }
}

/// The words for an outage of the store named `store` (its URL, without
/// a password) whose driver said `driver`: `None` when the store is not a
/// PostgreSQL one with a TCP address.
pub(crate) fn outage_detail(store: &str, driver: &str) -> Option<String> {
    let (host, port) = address(store)?;
    let shown = format!("PostgreSQL at {host}:{port}");
    let Some(addr) = socket(&host, port) else {
        return Some(format!("{shown}: {driver}"));
    };
    Some(match probe(addr) {
        Reach::Refused => format!("{shown} refused the connection (is it running?)"),
        Reach::Silent => format!(
            "{shown} did not answer a connection within {} ms",
            PROBE.as_millis()
        ),
        Reach::Open => format!("{shown}: {driver}"),
    })
}

/// The host and port of a PostgreSQL URL; `None` for another store, or a
/// Unix socket.
fn address(store: &str) -> Option<(String, u16)> {
    if !(store.starts_with("postgres://") || store.starts_with("postgresql://")) {
        return None;
    }
    let options = sqlx::postgres::PgConnectOptions::from_str(store).ok()?;
    let host = options.get_host();
    if host.starts_with('/') {
        return None;
    }
    Some((host.to_owned(), options.get_port()))
}

/// The socket address to probe, when `host` needs no name lookup.
fn socket(host: &str, port: u16) -> Option<SocketAddr> {
    let ip = if host == "localhost" {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()?
    };
    Some(SocketAddr::new(ip, port))
}

/// What a connect to `addr` finds, or found within the last second.
fn probe(addr: SocketAddr) -> Reach {
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((at, when, reach)) = *last
        && at == addr
        && when.elapsed() < FRESH
    {
        return reach;
    }
    let reach = match TcpStream::connect_timeout(&addr, PROBE) {
        Ok(_) => Reach::Open,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Reach::Refused,
        Err(_) => Reach::Silent,
    };
    *last = Some((addr, Instant::now(), reach));
    reach
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backoff_doubles_from_half_a_second_to_ten_seconds() {
        let mut backoff = Backoff::new();
        let waits: Vec<u64> = (0..7)
            .map(|_| backoff.next_wait().as_millis() as u64)
            .collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
    }

    #[test]
    fn a_refused_connection_is_said_so_with_the_address() {
        // A port nothing listens on: bound, then let go.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let store = format!("postgres://askgate@127.0.0.1:{port}/db");
        assert_eq!(
            outage_detail(
                &store,
                "pool timed out while waiting for an open connection"
            )
            .as_deref(),
            Some(
                format!("PostgreSQL at 127.0.0.1:{port} refused the connection (is it running?)")
                    .as_str()
            )
        );
        // A server that listens: the driver's words stand.
        let open = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let port = open.local_addr().expect("an address").port();
        let store = format!("postgres://askgate@localhost:{port}/db");
        assert_eq!(
            outage_detail(&store, "connection reset").as_deref(),
            Some(format!("PostgreSQL at localhost:{port}: connection reset").as_str())
        );
        assert_eq!(outage_detail("sqlite:///tmp/x.db", "disk I/O error"), None);
        assert!(is_outage(&sqlx::Error::PoolTimedOut));
        assert!(!is_outage(&sqlx::Error::RowNotFound));
    }
}
