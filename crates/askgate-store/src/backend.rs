//! Opening a store on SQLite or PostgreSQL, and running one body of code on
//! either pool.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::error::DatabaseError;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use tokio::sync::broadcast;

use crate::asks::{Parked, Settled};
use crate::error::Error;
use crate::news::News;
use crate::schema;
use crate::writer::GroupCommit;

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

/// Run `$body` as one durable write, with `$conn` bound to the connection
/// to run its statements on (`&mut *$conn`). `$body` is an expression of
/// type `Result<T, E>` with `E: From<Error>`; on `Err` its statements are
/// rolled back. Returns once the write is durable (SQLite: once the batch it
/// joined has committed; PostgreSQL: once its transaction has).
macro_rules! with_writer {
    ($store:expr, |$conn:ident| $body:expr) => {
        match &$store.writer {
            $crate::backend::Writer::Sqlite(writer) => {
                let mut write = writer.begin().await?;
                let result = async {
                    let $conn = write.conn()?;
                    $body
                }
                .await;
                write.finish(result).await
            }
            $crate::backend::Writer::Postgres { pool, .. } => {
                let mut write = $crate::writer::PgWrite::begin(pool, &$store.name).await?;
                let result = async {
                    let $conn = write.conn()?;
                    $body
                }
                .await;
                write.finish(result).await
            }
        }
    };
}
pub(crate) use with_writer;

/// Run a one-statement write (a [`Statement`](crate::statement::Statement))
/// in the next batch of the group committer, and, once it is durable, read
/// the row it returned with `$read` (`$row` bound to the row):
/// `Result<Option<T>, Error>` for `$read: Result<T, Error>`.
macro_rules! write_statement {
    ($store:expr, $statement:expr, |$row:ident| $read:expr) => {
        match &$store.writer {
            $crate::backend::Writer::Sqlite(writer) => match writer.write($statement).await {
                Ok(Some($row)) => $read.map(Some),
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            },
            $crate::backend::Writer::Postgres { batches, .. } => {
                match batches.write($statement).await {
                    Ok(Some($row)) => $read.map(Some),
                    Ok(None) => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    };
}
pub(crate) use write_statement;

/// The two backends.
#[derive(Debug, Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Where writes go: SQLite's one write connection, committing in groups; on
/// PostgreSQL, one-statement writes to a connection committing in groups,
/// other writes to the pool.
#[derive(Debug, Clone)]
pub(crate) enum Writer {
    Sqlite(Arc<GroupCommit<SqliteConnection>>),
    Postgres {
        pool: PgPool,
        batches: Arc<GroupCommit<PgConnection>>,
    },
}

/// A durable store of asks, tokens and audit entries.
///
/// Cloning is cheap: clones share the pool and the in-process wake-ups.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: Pool,
    pub(crate) writer: Writer,
    /// The store's name for messages: the URL without credentials.
    pub(crate) name: Arc<str>,
    /// The id of every ask that settles: here, or (PostgreSQL) in any
    /// process sharing the database, through LISTEN/NOTIFY.
    pub(crate) news: Arc<News>,
    /// Stops the committer, and the LISTEN task (PostgreSQL), when the last
    /// clone of the store is dropped.
    _tasks: Arc<[AbortOnDrop]>,
}

/// The channel PostgreSQL notifications of settled asks travel on.
pub(crate) const SETTLED_CHANNEL: &str = "askgate_settled";

/// The channel PostgreSQL notifications of parked asks travel on.
pub(crate) const PARKED_CHANNEL: &str = "askgate_parked";

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
        let news = Arc::new(News::new());
        let (pool, writer, task) = if let Some(path) = url
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
                .connect_with(options.clone())
                .await
                .map_err(|e| classify(&name, &e))?;
            // The writer caches a command per statement, count of writes
            // and place in the batch (see `statement`): room for all.
            let options = options.statement_cache_capacity(256);
            let conn = options.connect().await.map_err(|e| classify(&name, &e))?;
            let connect: crate::writer::Connect<SqliteConnection> = Box::new(move || {
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
            let connect: crate::writer::Connect<PgConnection> = Box::new(move || {
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
        let store = Store {
            pool,
            writer,
            name,
            news,
            _tasks: Arc::from(task),
        };
        schema::migrate(&store).await?;
        Ok(store)
    }

    /// The ids of asks as they settle (answered, declined, expired...), in
    /// this process and — on PostgreSQL — in every process sharing the
    /// database. A receiver that falls behind is told how many it missed.
    pub fn settlements(&self) -> broadcast::Receiver<Settled> {
        self.news.subscribe()
    }

    /// The ids of asks as they are parked (new asks only: parking an ask
    /// again is not news), in this process and — on PostgreSQL — in every
    /// process sharing the database. A receiver that falls behind is told
    /// how many it missed. On PostgreSQL the news of an ask parked here may
    /// come twice (once with its row, once from the database without).
    pub fn parked(&self) -> broadcast::Receiver<Parked> {
        self.news.subscribe_parked()
    }

    /// The store's name as shown in messages (no credentials).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Commit pending writes and close the connections, waiting for them
    /// to finish.
    pub async fn close(&self) {
        match &self.writer {
            Writer::Sqlite(writer) => writer.close().await,
            Writer::Postgres { batches, .. } => batches.close().await,
        }
        with_pool!(self, |pool| pool.close().await)
    }

    /// A database error, named for this store.
    pub(crate) fn fail(&self, error: sqlx::Error) -> Error {
        classify(&self.name, &error)
    }

    /// A misuse of the API, named for this store.
    pub(crate) fn misuse(&self, misuse: crate::error::Misuse) -> Error {
        Error::Misuse {
            store: self.name.to_string(),
            misuse,
        }
    }
}

/// Relay PostgreSQL notifications of parked and settled asks to the
/// in-process news.
async fn listen(pool: &PgPool, name: &str, news: Arc<News>) -> Result<AbortOnDrop, Error> {
    let mut listener = PgListener::connect_with(pool)
        .await
        .map_err(|e| classify(name, &e))?;
    listener
        .listen_all([SETTLED_CHANNEL, PARKED_CHANNEL])
        .await
        .map_err(|e| classify(name, &e))?;
    let task = tokio::spawn(async move {
        // `recv` reconnects by itself after a lost connection.
        while let Ok(notification) = listener.recv().await {
            let id = Arc::from(notification.payload());
            if notification.channel() == PARKED_CHANNEL {
                news.announce_parked(Parked { id, row: None });
            } else {
                news.announce(Settled { id, row: None });
            }
        }
    });
    Ok(AbortOnDrop(task))
}

/// A database error, named for the store, told apart by the driver's
/// error code (never its text): a locked file, a full disk, a file that is
/// not an askgate store, or any other failure.
pub(crate) fn classify(name: &str, error: &sqlx::Error) -> Error {
    Fault::of(error).error(name)
}

/// Why the driver failed, told apart by its error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// Another connection holds the lock.
    Locked,
    /// The disk or the file is full.
    NoSpace,
    /// The file is not a database, or is corrupt.
    Foreign,
    /// Anything else.
    Other,
}

impl Cause {
    fn of(error: &sqlx::Error) -> Cause {
        match error {
            sqlx::Error::Database(db) => {
                if let Some(sqlite) = db.try_downcast_ref::<sqlx::sqlite::SqliteError>() {
                    sqlite
                        .code()
                        .and_then(|code| code.parse::<i32>().ok())
                        .map_or(Cause::Other, sqlite_cause)
                } else if let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
                    // SQLSTATE 53100: disk_full.
                    if pg.code() == "53100" {
                        Cause::NoSpace
                    } else {
                        Cause::Other
                    }
                } else {
                    Cause::Other
                }
            }
            sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::StorageFull => Cause::NoSpace,
            _ => Cause::Other,
        }
    }
}

/// The cause an SQLite (extended) result code names.
fn sqlite_cause(code: i32) -> Cause {
    /// SQLITE_IOERR_WRITE: the file could not grow (a size limit).
    const IOERR_WRITE: i32 = 778;
    match code & 0xff {
        // SQLITE_BUSY, SQLITE_LOCKED.
        5 | 6 => Cause::Locked,
        // SQLITE_FULL.
        13 => Cause::NoSpace,
        // SQLITE_IOERR.
        10 if code == IOERR_WRITE => Cause::NoSpace,
        // SQLITE_CORRUPT, SQLITE_NOTADB.
        11 | 26 => Cause::Foreign,
        _ => Cause::Other,
    }
}

/// A failure as every writer it concerns learns it: its cause, and what
/// the driver said.
#[derive(Debug, Clone)]
pub(crate) struct Fault {
    cause: Cause,
    detail: Arc<str>,
}

impl Fault {
    /// What the driver's `error` was.
    pub(crate) fn of(error: &sqlx::Error) -> Fault {
        Fault {
            cause: Cause::of(error),
            detail: Arc::from(error.to_string()),
        }
    }

    /// A failure of no driver cause, said in words.
    pub(crate) fn other(detail: &str) -> Fault {
        Fault {
            cause: Cause::Other,
            detail: Arc::from(detail),
        }
    }

    /// The fault as the store `name`'s error.
    pub(crate) fn error(&self, name: &str) -> Error {
        self.error_saying(name, self.detail.to_string())
    }

    /// The fault as the store `name`'s error, with `detail` told.
    pub(crate) fn error_saying(&self, name: &str, detail: String) -> Error {
        let store = name.to_owned();
        match self.cause {
            Cause::Locked => Error::Locked { store },
            Cause::NoSpace => Error::NoSpace { store, detail },
            Cause::Foreign => Error::Foreign { store, detail },
            Cause::Other => Error::Database { store, detail },
        }
    }

    /// What the driver said.
    pub(crate) fn detail(&self) -> &str {
        &self.detail
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
    use super::*;

    #[test]
    fn a_password_never_reaches_a_message() {
        assert_eq!(
            super::redact("postgres://app:s3cret@db:5432/x"),
            "postgres://app@db:5432/x"
        );
        assert_eq!(super::redact("sqlite:///tmp/a.db"), "sqlite:///tmp/a.db");
    }

    #[test]
    fn a_failure_is_told_apart_by_its_code_never_by_its_words() {
        // Words that once classified a failure, in an error with no code.
        let worded = sqlx::Error::Protocol("malformed reply: database is locked".into());
        assert!(
            matches!(classify("s", &worded), Error::Database { .. }),
            "{:?}",
            classify("s", &worded)
        );
        assert_eq!(sqlite_cause(5), Cause::Locked);
        assert_eq!(sqlite_cause(517), Cause::Locked, "SQLITE_BUSY_SNAPSHOT");
        assert_eq!(sqlite_cause(13), Cause::NoSpace);
        assert_eq!(sqlite_cause(778), Cause::NoSpace, "SQLITE_IOERR_WRITE");
        assert_eq!(sqlite_cause(10), Cause::Other, "another I/O error");
        assert_eq!(sqlite_cause(26), Cause::Foreign);
        let full = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::StorageFull));
        assert!(matches!(classify("s", &full), Error::NoSpace { .. }));
    }
}
