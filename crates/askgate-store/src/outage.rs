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
//! an IP (or `localhost`: no name lookup) or a Unix socket, and at most
//! once per second per address: what it found is kept for that long.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest the probe waits for a connect.
const PROBE: Duration = Duration::from_millis(250);

/// How long what a probe found is taken for true.
const FRESH: Duration = Duration::from_secs(1);

/// The last probe: where, when, and what it found.
static LAST: Mutex<Option<(Place, Instant, Reach)>> = Mutex::new(None);

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

/// Whether `error` is of the kind an unreachable server makes. A TLS
/// failure is not: a certificate refused stays refused, and is told at
/// once rather than waited out.
pub(crate) fn is_outage(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::PoolTimedOut => true,
        sqlx::Error::Io(io) => io.kind() != std::io::ErrorKind::StorageFull,
        _ => false,
    }
}

/// The words for an outage of the store named `store` (its URL, without
/// a password) whose driver said `driver`: `None` when the store is not a
/// PostgreSQL one.
pub(crate) fn outage_detail(store: &str, driver: &str) -> Option<String> {
    let (shown, place) = match address(store)? {
        Address::Tcp(host, port) => (
            format!("PostgreSQL at {host}:{port}"),
            socket(&host, port).map(Place::Tcp),
        ),
        Address::Socket(path) => (
            format!("PostgreSQL at socket {}", path.display()),
            Some(Place::Socket(path)),
        ),
    };
    let Some(place) = place else {
        return Some(format!("{shown}: {driver}"));
    };
    Some(match probe(place) {
        Reach::Refused => format!("{shown} refused the connection (is it running?)"),
        Reach::Silent => format!(
            "{shown} did not answer a connection within {} ms",
            PROBE.as_millis()
        ),
        Reach::Open => format!("{shown}: {driver}"),
    })
}

/// Where a PostgreSQL server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Address {
    /// A host and port.
    Tcp(String, u16),
    /// A Unix socket's file.
    Socket(PathBuf),
}

/// What a probe connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    Tcp(SocketAddr),
    Socket(PathBuf),
}

/// Where the server of a PostgreSQL URL is; `None` for another store.
fn address(store: &str) -> Option<Address> {
    if !(store.starts_with("postgres://") || store.starts_with("postgresql://")) {
        return None;
    }
    let options = sqlx::postgres::PgConnectOptions::from_str(store).ok()?;
    let port = options.get_port();
    // A socket directory, as the driver reads it: `?host=/dir`, a host
    // that is a path, or the percent-encoded path in the URL's host.
    let dir = match options.get_socket() {
        Some(dir) => Some(dir.clone()),
        None => options
            .get_host()
            .starts_with('/')
            .then(|| PathBuf::from(options.get_host())),
    };
    Some(match dir {
        Some(dir) => Address::Socket(dir.join(format!(".s.PGSQL.{port}"))),
        None => Address::Tcp(options.get_host().to_owned(), port),
    })
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

/// What a connect to `place` finds, or found within the last second.
fn probe(place: Place) -> Reach {
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((at, when, reach)) = &*last
        && *at == place
        && when.elapsed() < FRESH
    {
        return *reach;
    }
    let reach = match &place {
        Place::Tcp(addr) => match TcpStream::connect_timeout(addr, PROBE) {
            Ok(_) => Reach::Open,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Reach::Refused,
            Err(_) => Reach::Silent,
        },
        Place::Socket(path) => probe_socket(path),
    };
    *last = Some((place, Instant::now(), reach));
    reach
}

/// What a connect to the Unix socket at `path` finds within [`PROBE`]: a
/// socket file that is missing (the server is down and removed it) or that
/// nobody listens on refuses. The connect runs on a thread of its own,
/// since a socket's connect has no timeout (it waits on a full backlog).
#[cfg(unix)]
fn probe_socket(path: &std::path::Path) -> Reach {
    let (tell, told) = std::sync::mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        let _ = tell.send(std::os::unix::net::UnixStream::connect(&path).map(drop));
    });
    let Ok(connected) = told.recv_timeout(PROBE) else {
        return Reach::Silent;
    };
    match connected {
        Ok(()) => Reach::Open,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
            ) =>
        {
            Reach::Refused
        }
        // Denied, say: the driver's words stand.
        Err(_) => Reach::Open,
    }
}

/// Elsewhere the driver's words stand.
#[cfg(not(unix))]
fn probe_socket(_path: &std::path::Path) -> Reach {
    Reach::Open
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

    #[cfg(unix)]
    #[test]
    fn a_unix_socket_nobody_listens_on_is_said_to_refuse_with_its_path() {
        let dir = std::env::temp_dir().join(format!("askgate-no-pg-{}", std::process::id()));
        let said = outage_detail(
            &format!("postgres://askgate@localhost/db?host={}", dir.display()),
            "pool timed out while waiting for an open connection",
        );
        let socket = dir.join(".s.PGSQL.5432");
        assert_eq!(
            said.as_deref(),
            Some(
                format!(
                    "PostgreSQL at socket {} refused the connection (is it running?)",
                    socket.display()
                )
                .as_str()
            )
        );
        // One that listens: the driver's words stand.
        let up = dir.join("up");
        std::fs::create_dir_all(&up).expect("a directory");
        let socket = up.join(".s.PGSQL.5432");
        let _listening = std::os::unix::net::UnixListener::bind(&socket).expect("binds");
        let said = outage_detail(
            &format!("postgres://askgate@localhost:5432/db?host={}", up.display()),
            "connection reset",
        );
        assert_eq!(
            said,
            Some(format!(
                "PostgreSQL at socket {}: connection reset",
                socket.display()
            ))
        );
        let _ = std::fs::remove_dir_all(&dir);
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
        assert!(
            !is_outage(&sqlx::Error::Tls("certificate not trusted".into())),
            "a refused certificate is told at once, not waited out"
        );
        assert!(!is_outage(&sqlx::Error::RowNotFound));
    }
}
