//! Opening a store on SQLite or PostgreSQL: its pool, its group committer,
//! the relay of PostgreSQL's notifications, and the schema brought up to
//! date.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};

use crate::asks::{AskAnswered, AskParked, AskSettled};
use crate::backend::{
    ANSWERED_CHANNEL, AbortOnDrop, PARKED_CHANNEL, Pool, SETTLED_CHANNEL, Store, Writer,
};
use crate::direct::Direct;
use crate::error::Error;
use crate::fault::classify;
use crate::inline::Inline;
use crate::news::News;
use crate::outage::Backoff;
use crate::private;
use crate::schema;
use crate::writer::{Connect, GroupCommit};

impl Store {
    /// Open (and create or migrate) the store at `url`: `sqlite://PATH`
    /// (created if missing, readable and writable by its owner only; WAL,
    /// full synchronous commits) or `postgres://...`. On unix, a store file
    /// (or its `-wal`, `-shm`, `-journal`) that others may read is warned
    /// about: it holds answer values and argument previews.
    ///
    /// # Errors
    /// [`Error::BadUrl`], [`Error::Unreachable`], [`Error::Foreign`] for a
    /// file that is not an askgate store, [`Error::NewerSchema`] for a store
    /// written by a newer askgate, [`Error::OthersMayWrite`] (unix) for a
    /// store file, one of its companions or its folder that others than its
    /// owner may write.
    pub async fn open(url: &str) -> Result<Store, Error> {
        let name: Arc<str> = Arc::from(redact(url));
        let unreachable = |e: sqlx::Error| Error::Unreachable {
            store: name.to_string(),
            detail: e.to_string(),
        };
        let news = Arc::new(News::new());
        let sqlite_path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"));
        let (pool, writer, task) = if let Some(path) = sqlite_path {
            if let Some(file) = private::file_of(path) {
                for exposed in private::guard(&name, file)? {
                    private::warn(&exposed);
                }
            }
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
                // A file has no other end to hang up: a ping before each
                // read only makes it two trips to the connection's thread.
                .test_before_acquire(false)
                .connect_with(options.clone())
                .await
                .map_err(|e| classify(&name, &e))?;
            // The writer caches a command per statement, count of writes
            // and place in the batch (see `statement`): room for all.
            let options = options.statement_cache_capacity(256);
            let conn = options.connect().await.map_err(|e| classify(&name, &e))?;
            let connect: Connect<SqliteConnection> = Box::new(move || {
                let options = options.clone();
                Box::pin(async move { options.connect().await })
            });
            let (writer, committer) = GroupCommit::start(conn, connect, Arc::clone(&name));
            (
                Pool::Sqlite(pool),
                Writer::Sqlite(writer),
                vec![AbortOnDrop(committer)],
            )
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let options = PgConnectOptions::from_str(url).map_err(unreachable)?;
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(5))
                .connect_with(options.clone())
                .await
                .map_err(unreachable)?;
            let listener = listen(&pool, &name, Arc::clone(&news)).await?;
            let conn = options.connect().await.map_err(unreachable)?;
            let connect: Connect<PgConnection> = Box::new(move || {
                let options = options.clone();
                Box::pin(async move { options.connect().await })
            });
            let (batches, committer) = GroupCommit::start(conn, connect, Arc::clone(&name));
            (
                Pool::Postgres(pool.clone()),
                Writer::Postgres { pool, batches },
                vec![listener, AbortOnDrop(committer)],
            )
        } else {
            return Err(Error::BadUrl {
                store: name.to_string(),
            });
        };
        let mut store = Store::assemble(pool, writer, name, news, task);
        schema::migrate(&store).await?;
        if let Some(file) = sqlite_path.and_then(private::file_of) {
            store.inline = Inline::open(file).map(Arc::new);
            // A URL with options (`?mode=ro`...) keeps every write on sqlx's
            // connection, which honours them.
            if !sqlite_path.is_some_and(|path| path.contains('?')) {
                store.direct = Direct::open(file).map(Arc::new);
            }
        }
        Ok(store)
    }
}

/// Relay PostgreSQL notifications of parked and settled asks to the
/// in-process news.
async fn listen(pool: &PgPool, name: &str, news: Arc<News>) -> Result<AbortOnDrop, Error> {
    let mut listener = PgListener::connect_with(pool)
        .await
        .map_err(|e| classify(name, &e))?;
    listener
        .listen_all([SETTLED_CHANNEL, PARKED_CHANNEL, ANSWERED_CHANNEL])
        .await
        .map_err(|e| classify(name, &e))?;
    let task = tokio::spawn(async move {
        // `recv` reconnects by itself after a lost connection, but gives up
        // when the server refuses the new one (an outage, a restart): then
        // it is called again, more slowly each time, until the server is
        // back. What was announced meanwhile is lost; waiters look at
        // their asks again every second, so none waits on it.
        let mut backoff = Backoff::new();
        loop {
            match listener.recv().await {
                Ok(notification) => {
                    backoff = Backoff::new();
                    let payload = notification.payload();
                    let id = Arc::from(payload);
                    match notification.channel() {
                        PARKED_CHANNEL => news.announce_parked(AskParked { id, row: None }),
                        ANSWERED_CHANNEL => {
                            if let Some(answered) = answered_news(payload) {
                                news.announce_answered(answered);
                            }
                        }
                        _ => news.announce(AskSettled { id, row: None }),
                    }
                }
                Err(sqlx::Error::PoolClosed) => break,
                Err(_) => tokio::time::sleep(backoff.next_wait()).await,
            }
        }
    });
    Ok(AbortOnDrop(task))
}

/// The news of a notification on [`ANSWERED_CHANNEL`]; `None` for one
/// that is not its shape.
fn answered_news(payload: &str) -> Option<AskAnswered> {
    let said: serde_json::Value = serde_json::from_str(payload).ok()?;
    Some(AskAnswered {
        id: Arc::from(said.get("id")?.as_str()?),
        person: Arc::from(said.get("person")?.as_str()?),
        accepted: said.get("verdict")?.as_str()? == "accept",
        row: None,
    })
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
