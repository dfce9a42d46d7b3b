//! A store's pools and writer, and running one body of code on either
//! backend.

use std::sync::Arc;

use sqlx::postgres::{PgConnection, PgPool};
use sqlx::sqlite::{SqliteConnection, SqlitePool};
use tokio::sync::broadcast;

use crate::asks::{AskAnswered, AskParked, AskSettled};
use crate::error::{Error, Misuse};
use crate::fault::classify;
use crate::news::News;
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
///
/// With `lead = $statement`, the write's first statement (a
/// [`Statement`](crate::statement::Statement)) runs before `$body`, which
/// reads its first row as `$led`: on SQLite in the command that begins the
/// batch, one trip to the connection's thread fewer. With `lead =
/// $statement, $write`, `$body` is given the write itself (`$write.conn()`
/// for the connection): a body whose last command may end with `COMMIT`
/// when `$write.alone()`, and then says so with `$write.committed()`,
/// saving the commit its own trip (PostgreSQL's writes are never alone).
macro_rules! with_writer {
    ($store:expr, lead = $lead:expr, $write:ident, |$led:ident| $body:expr) => {
        match &$store.writer {
            $crate::backend::Writer::Sqlite(writer) => {
                let (mut $write, $led) = writer.begin_with($lead).await?;
                let result = async { $body }.await;
                $write.finish(result).await
            }
            $crate::backend::Writer::Postgres { pool, .. } => {
                let mut $write = $crate::writer::PgWrite::begin(pool, &$store.name).await?;
                let result = async {
                    let $led = $lead
                        .fetch_optional(&mut *$write.conn()?)
                        .await
                        .map_err(|e| $store.fail(e))?;
                    $body
                }
                .await;
                $write.finish(result).await
            }
        }
    };
    ($store:expr, lead = $lead:expr, |$conn:ident, $led:ident| $body:expr) => {
        match &$store.writer {
            $crate::backend::Writer::Sqlite(writer) => {
                let (mut write, $led) = writer.begin_with($lead).await?;
                $crate::backend::body_in!(write, |$conn| $body)
            }
            $crate::backend::Writer::Postgres { pool, .. } => {
                let mut write = $crate::writer::PgWrite::begin(pool, &$store.name).await?;
                $crate::backend::body_in!(write, |$conn| {
                    let $led = $lead
                        .fetch_optional(&mut *$conn)
                        .await
                        .map_err(|e| $store.fail(e))?;
                    $body
                })
            }
        }
    };
    ($store:expr, |$conn:ident| $body:expr) => {
        match &$store.writer {
            $crate::backend::Writer::Sqlite(writer) => {
                let mut write = writer.begin().await?;
                $crate::backend::body_in!(write, |$conn| $body)
            }
            $crate::backend::Writer::Postgres { pool, .. } => {
                let mut write = $crate::writer::PgWrite::begin(pool, &$store.name).await?;
                $crate::backend::body_in!(write, |$conn| $body)
            }
        }
    };
}

/// Run `$body` in the write `$write` begun by [`with_writer!`], `$conn`
/// bound to its connection, and finish the write with what it returned.
macro_rules! body_in {
    ($write:ident, |$conn:ident| $body:expr) => {{
        let result = async {
            let $conn = $write.conn()?;
            $body
        }
        .await;
        $write.finish(result).await
    }};
}
pub(crate) use body_in;
pub(crate) use with_writer;

/// Run a one-statement write (a [`Statement`](crate::statement::Statement))
/// in the next batch of the group committer, and, once it is durable, read
/// the row it returned with `$read` (`$row` bound to the row):
/// `Result<Option<T>, Error>` for `$read: Result<T, Error>`.
macro_rules! write_statement {
    ($store:expr, $statement:expr, |$row:ident| $read:expr) => {
        match &$store.writer {
            $crate::backend::Writer::Sqlite(writer) => {
                match $store.submit_sqlite(writer, $statement).await {
                    Ok(Some($row)) => $read.map(Some),
                    Ok(None) => Ok(None),
                    Err(e) => Err(e),
                }
            }
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
    /// The key the audit chain's head record is signed with, once given
    /// ([`Store::sign_audit_head`]); shared by every clone.
    pub(crate) audit_key: Arc<std::sync::OnceLock<Vec<u8>>>,
    /// The head record the migration to it recorded in this process
    /// (unsigned: no key is known then), to be signed once a key is
    /// ([`Store::sign_seeded_audit_head`]).
    pub(crate) seeded_head: Arc<std::sync::OnceLock<(i64, String)>>,
    /// A SQLite file's connection for the reads a call waits on, run on
    /// the caller's thread (see [`crate::inline`]).
    pub(crate) inline: Option<Arc<crate::inline::Inline>>,
    /// A SQLite file's thread for a write that has the writer to itself,
    /// run in one trip (see [`crate::direct`]).
    pub(crate) direct: Option<Arc<crate::direct::Direct>>,
    /// Stops the committer, and the LISTEN task (PostgreSQL), when the last
    /// clone of the store is dropped.
    _background: Arc<[AbortOnDrop]>,
}

/// The channel PostgreSQL notifications of settled asks travel on.
pub(crate) const SETTLED_CHANNEL: &str = "askgate_settled";

/// The channel PostgreSQL notifications of parked asks travel on.
pub(crate) const PARKED_CHANNEL: &str = "askgate_parked";

/// The channel PostgreSQL notifications of people's answers travel on:
/// `{"id": ..., "person": ..., "verdict": "accept" | "decline"}`.
pub(crate) const ANSWERED_CHANNEL: &str = "askgate_answered";

/// Aborts a background task when dropped.
#[derive(Debug)]
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Store {
    /// A store of these parts; `background` (the committer, the LISTEN
    /// task) is stopped when the last clone is dropped.
    pub(crate) fn assemble(
        pool: Pool,
        writer: Writer,
        name: Arc<str>,
        news: Arc<News>,
        background: Vec<AbortOnDrop>,
    ) -> Store {
        Store {
            pool,
            writer,
            name,
            news,
            audit_key: Arc::default(),
            seeded_head: Arc::default(),
            inline: None,
            direct: None,
            _background: Arc::from(background),
        }
    }

    /// The ids of asks as they settle (answered, declined, expired...), in
    /// this process and — on PostgreSQL — in every process sharing the
    /// database. A receiver that falls behind is told how many it missed.
    pub fn settlements(&self) -> broadcast::Receiver<AskSettled> {
        self.news.subscribe()
    }

    /// The ids of asks as they are parked (new asks only: parking an ask
    /// again is not news), in this process and — on PostgreSQL — in every
    /// process sharing the database. A receiver that falls behind is told
    /// how many it missed. On PostgreSQL the news of an ask parked here may
    /// come twice (once with its row, once from the database without).
    pub fn parked(&self) -> broadcast::Receiver<AskParked> {
        self.news.subscribe_parked()
    }

    /// Each person's answer counted toward an ask's rule (see
    /// [`Store::answer_as`]), in this process and — on PostgreSQL — in
    /// every process sharing the database.
    pub fn answered(&self) -> broadcast::Receiver<AskAnswered> {
        self.news.subscribe_answered()
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
        if let Some(inline) = &self.inline {
            inline.close();
        }
        if let Some(direct) = &self.direct {
            direct.close().await;
        }
        with_pool!(self, |pool| pool.close().await)
    }

    /// A database error, named for this store.
    pub(crate) fn fail(&self, error: sqlx::Error) -> Error {
        classify(&self.name, &error)
    }

    /// A misuse of the API, named for this store.
    pub(crate) fn misuse(&self, misuse: Misuse) -> Error {
        Error::Misuse {
            store: self.name.to_string(),
            misuse,
        }
    }
}
