//! Opening a store on SQLite or PostgreSQL, and running one body of code on
//! either pool.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgListener, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::broadcast;

use crate::error::Error;
use crate::schema;

/// Run `$body` with `$pool` bound to whichever pool the store has. The body
/// is compiled once per backend, so the same SQL (with `$N` placeholders)
/// serves both.
macro_rules! with_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.pool {
            $crate::backend::Pool::Sqlite($pool) => $body,
            $crate::backend::Pool::Postgres($pool) => $body,
        }
    };
}
pub(crate) use with_pool;

/// The two backends.
#[derive(Debug, Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// A durable store of asks, tokens and audit entries.
///
/// Cloning is cheap: clones share the pool and the in-process wake-ups.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: Pool,
    /// The store's name for messages: the URL without credentials.
    pub(crate) name: Arc<str>,
    /// The id of every ask that settles: here, or (PostgreSQL) in any
    /// process sharing the database, through LISTEN/NOTIFY.
    pub(crate) settled: broadcast::Sender<String>,
    /// Stops the LISTEN task when the last clone of the store is dropped.
    _listener: Option<Arc<AbortOnDrop>>,
}

/// The channel PostgreSQL notifications of settled asks travel on.
pub(crate) const SETTLED_CHANNEL: &str = "askgate_settled";

/// Aborts a background task when dropped.
#[derive(Debug)]
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Store {
    /// Open (and create or migrate) the store at `url`: `sqlite://PATH`
    /// (created if missing; WAL, full synchronous commits) or
    /// `postgres://...`.
    ///
    /// # Errors
    /// [`Error::BadUrl`], [`Error::Unreachable`], [`Error::Foreign`] for a
    /// file that is not an askgate store, [`Error::NewerSchema`] for a store
    /// written by a newer askgate.
    pub async fn open(url: &str) -> Result<Store, Error> {
        let name: Arc<str> = Arc::from(redact(url));
        let unreachable = |e: sqlx::Error| Error::Unreachable {
            store: name.to_string(),
            detail: e.to_string(),
        };
        let pool = if let Some(path) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            let options = SqliteConnectOptions::from_str(&format!("sqlite://{path}"))
                .map_err(unreachable)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                // An acknowledged answer survives a power cut.
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(Duration::from_secs(5))
                .foreign_keys(true);
            let pool = SqlitePoolOptions::new()
                .max_connections(4)
                .acquire_timeout(Duration::from_secs(5))
                .connect_with(options)
                .await
                .map_err(|e| classify(&name, e))?;
            Pool::Sqlite(pool)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(5))
                .connect(url)
                .await
                .map_err(unreachable)?;
            Pool::Postgres(pool)
        } else {
            return Err(Error::BadUrl {
                store: name.to_string(),
            });
        };
        let (settled, _) = broadcast::channel(1024);
        let listener = match &pool {
            Pool::Postgres(pool) => Some(Arc::new(listen(pool, &name, settled.clone()).await?)),
            Pool::Sqlite(_) => None,
        };
        let store = Store {
            pool,
            name,
            settled,
            _listener: listener,
        };
        schema::migrate(&store).await?;
        Ok(store)
    }

    /// The ids of asks as they settle (answered, declined, expired...), in
    /// this process and — on PostgreSQL — in every process sharing the
    /// database. A receiver that falls behind is told how many it missed.
    pub fn settlements(&self) -> broadcast::Receiver<String> {
        self.settled.subscribe()
    }

    /// The store's name as shown in messages (no credentials).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Close the pool, waiting for connections to finish.
    pub async fn close(&self) {
        with_pool!(self, |pool| pool.close().await)
    }

    /// A database error, named for this store.
    pub(crate) fn fail(&self, error: sqlx::Error) -> Error {
        classify(&self.name, error)
    }
}

/// Relay PostgreSQL notifications of settled asks to the in-process channel.
async fn listen(
    pool: &PgPool,
    name: &str,
    settled: broadcast::Sender<String>,
) -> Result<AbortOnDrop, Error> {
    let mut listener = PgListener::connect_with(pool)
        .await
        .map_err(|e| classify(name, e))?;
    listener
        .listen(SETTLED_CHANNEL)
        .await
        .map_err(|e| classify(name, e))?;
    let task = tokio::spawn(async move {
        // `recv` reconnects by itself after a lost connection.
        while let Ok(notification) = listener.recv().await {
            let _ = settled.send(notification.payload().to_owned());
        }
    });
    Ok(AbortOnDrop(task))
}

fn classify(name: &str, error: sqlx::Error) -> Error {
    let detail = error.to_string();
    if detail.contains("file is not a database") || detail.contains("malformed") {
        Error::Foreign {
            store: name.to_owned(),
            detail,
        }
    } else {
        Error::Database {
            store: name.to_owned(),
            detail,
        }
    }
}

/// The URL without a password.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let user_and_password = &url[scheme + 3..at];
            let user = user_and_password.split(':').next().unwrap_or("");
            format!("{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_password_never_reaches_a_message() {
        assert_eq!(
            super::redact("postgres://app:s3cret@db:5432/x"),
            "postgres://app@db:5432/x"
        );
        assert_eq!(super::redact("sqlite:///tmp/a.db"), "sqlite:///tmp/a.db");
    }
}
