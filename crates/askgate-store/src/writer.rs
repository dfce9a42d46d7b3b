//! Group commit: every write of a store goes through one connection, and the
//! writes that arrive while a commit is being made durable share the next
//! commit — one `fsync` for many of them.
//!
//! A writer takes the connection (a fair queue), runs its statements in the
//! open batch transaction, and hands the connection on. It is acknowledged
//! only once the batch it joined has committed: an acknowledged write is
//! durable, and a batch is all or nothing. A writer whose statements fail —
//! or that is dropped half-way, its future cancelled — rolls the whole batch
//! back, and every writer of that batch is told that nothing of its write
//! was kept (so it may retry). Failures are rare (a full disk, a lost lock,
//! an unreadable row) and most of them end the transaction anyway, so this
//! costs little and saves two statements per write that savepoints would
//! cost.
//!
//! Why not a transaction per write on a pool: SQLite has one writer at a
//! time, so pooled writers wait on the file lock (busy-sleeping) and each
//! pays its own `fsync`; batching turns that queue into throughput.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use sqlx::{Connection, Executor};
use tokio::sync::{Mutex, MutexGuard, Notify, watch};

use crate::error::Error;

/// How a writer connection is (re)made after it was lost.
pub(crate) type Connect<C> =
    Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<C, sqlx::Error>> + Send>> + Send + Sync>;

/// The result of one batch, as its writers see it.
type BatchResult = Option<Result<(), Arc<str>>>;

/// One connection shared by all writers, committing in batches.
pub(crate) struct GroupCommit<C> {
    state: Mutex<State<C>>,
    /// Rung by every writer that joined a batch.
    pending: Notify,
    /// `BEGIN IMMEDIATE` on SQLite (take the file's write lock up front).
    begin: &'static str,
    connect: Connect<C>,
    /// The store's name, for errors.
    name: Arc<str>,
}

impl<C> std::fmt::Debug for GroupCommit<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("store", &self.name)
            .finish_non_exhaustive()
    }
}

struct State<C> {
    /// `None` after the connection was lost; made again on the next write.
    conn: Option<C>,
    /// A batch transaction is open.
    open: bool,
    /// A writer was dropped half-way: the batch must be rolled back.
    abandoned: bool,
    /// Where the open batch's result will be published.
    batch: watch::Sender<BatchResult>,
}

impl<C> GroupCommit<C>
where
    C: Connection + 'static,
    for<'c> &'c mut C: Executor<'c, Database = C::Database>,
{
    /// A group committer over `conn`, and the task that commits its batches
    /// (abort it when the store goes away).
    pub(crate) fn start(
        conn: C,
        begin: &'static str,
        connect: Connect<C>,
        name: Arc<str>,
    ) -> (Arc<Self>, tokio::task::JoinHandle<()>) {
        let writer = Arc::new(GroupCommit {
            state: Mutex::new(State {
                conn: Some(conn),
                open: false,
                abandoned: false,
                batch: watch::channel(None).0,
            }),
            pending: Notify::new(),
            begin,
            connect,
            name,
        });
        let committer = Arc::clone(&writer);
        let task = tokio::spawn(async move {
            loop {
                committer.pending.notified().await;
                // Writers queued before this point join the batch first: the
                // queue is fair, so a batch grows while the last commit syncs.
                let mut state = committer.state.lock().await;
                committer.commit_batch(&mut state).await;
            }
        });
        (writer, task)
    }

    /// Take the connection for one writer, in the open batch.
    pub(crate) async fn begin(&self) -> Result<Write<'_, C>, Error> {
        let mut state = self.state.lock().await;
        self.clean_up(&mut state).await;
        if state.conn.is_none() {
            state.conn = Some((self.connect)().await.map_err(|e| self.fail(&e))?);
        }
        if !state.open {
            let conn = state.conn.as_mut().ok_or_else(|| self.lost())?;
            if let Err(e) = sqlx::raw_sql(self.begin).execute(&mut *conn).await {
                self.drop_connection_if_broken(&mut state, &e);
                return Err(self.fail(&e));
            }
            state.open = true;
        }
        Ok(Write {
            owner: self,
            state: Some(state),
        })
    }

    /// Close the connection after committing what is pending.
    pub(crate) async fn close(&self) {
        let mut state = self.state.lock().await;
        self.commit_batch(&mut state).await;
        if let Some(conn) = state.conn.take() {
            let _ = conn.close().await;
        }
    }

    async fn commit_batch(&self, state: &mut MutexGuard<'_, State<C>>) {
        self.clean_up(state).await;
        if !state.open {
            return;
        }
        let result = match state.conn.as_mut() {
            Some(conn) => match sqlx::raw_sql("COMMIT").execute(&mut *conn).await {
                Ok(_) => Ok(()),
                Err(e) => {
                    // The transaction may still be open after a failed
                    // commit (a full disk, a lost lock): end it.
                    let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
                    self.drop_connection_if_broken(state, &e);
                    Err(Arc::from(e.to_string()))
                }
            },
            None => Err(Arc::from("the write connection was lost")),
        };
        state.open = false;
        let done = std::mem::replace(&mut state.batch, watch::channel(None).0);
        let _ = done.send(Some(result));
    }

    /// Roll the batch back if a writer was dropped half-way.
    async fn clean_up(&self, state: &mut State<C>) {
        if state.abandoned {
            state.abandoned = false;
            self.roll_back_batch(state, "a cancelled write in the same batch")
                .await;
        }
    }

    /// Undo the open batch and tell its writers that nothing was kept.
    async fn roll_back_batch(&self, state: &mut State<C>, cause: &str) {
        if let Some(conn) = state.conn.as_mut() {
            let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
        }
        state.open = false;
        let failed = std::mem::replace(&mut state.batch, watch::channel(None).0);
        let _ = failed.send(Some(Err(Arc::from(format!("{cause} failed")))));
    }

    fn drop_connection_if_broken(&self, state: &mut State<C>, error: &sqlx::Error) {
        if matches!(
            error,
            sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::Tls(_)
        ) {
            state.conn = None;
            state.open = false;
        }
    }

    fn fail(&self, error: &sqlx::Error) -> Error {
        crate::backend::classify(&self.name, error)
    }

    fn lost(&self) -> Error {
        Error::Database {
            store: self.name.to_string(),
            detail: "the write connection was lost; retry".into(),
        }
    }
}

/// One writer's turn on the connection, in the open batch. End it with
/// [`Write::finish`]; dropping it rolls the batch back.
pub(crate) struct Write<'a, C> {
    owner: &'a GroupCommit<C>,
    state: Option<MutexGuard<'a, State<C>>>,
}

impl<C> Write<'_, C>
where
    C: Connection + 'static,
    for<'c> &'c mut C: Executor<'c, Database = C::Database>,
{
    /// The connection, to run this writer's statements on.
    pub(crate) fn conn(&mut self) -> Result<&mut C, Error> {
        let owner = self.owner;
        self.state
            .as_mut()
            .and_then(|state| state.conn.as_mut())
            .ok_or_else(|| owner.lost())
    }

    /// Keep the statements (`Ok`) and wait for the batch to commit, or roll
    /// the batch back (`Err`). `Ok` is returned only once the write is
    /// durable.
    pub(crate) async fn finish<T, E>(mut self, result: Result<T, E>) -> Result<T, E>
    where
        E: From<Error>,
    {
        let owner = self.owner;
        let Some(mut state) = self.state.take() else {
            return Err(owner.lost().into());
        };
        if result.is_err() {
            owner
                .roll_back_batch(&mut state, "another write in the same batch")
                .await;
            return result;
        }
        let mut done = state.batch.subscribe();
        drop(state);
        owner.pending.notify_one();
        let outcome = match done.wait_for(Option::is_some).await {
            Ok(outcome) => outcome.clone(),
            Err(_) => None,
        };
        match outcome {
            Some(Ok(())) => result,
            Some(Err(detail)) => Err(crate::backend::classify_detail(
                &owner.name,
                format!("the batch this write joined was not kept: {detail}"),
            )
            .into()),
            None => Err(owner.lost().into()),
        }
    }
}

impl<C> Drop for Write<'_, C> {
    fn drop(&mut self) {
        if let Some(state) = self.state.as_mut() {
            state.abandoned = true;
        }
    }
}

/// A write on PostgreSQL: a connection of the pool, in autocommit. Every
/// write of the store changes rows in one statement (its other statements
/// only read), so each commits on its own; PostgreSQL makes concurrent
/// commits share a WAL flush by itself, and its row locks let the writers of
/// several replicas run side by side.
pub(crate) struct PgWrite {
    conn: sqlx::pool::PoolConnection<sqlx::Postgres>,
}

impl PgWrite {
    /// Take a connection.
    pub(crate) async fn begin(pool: &sqlx::PgPool, name: &Arc<str>) -> Result<PgWrite, Error> {
        let conn = pool
            .acquire()
            .await
            .map_err(|e| crate::backend::classify(name, &e))?;
        Ok(PgWrite { conn })
    }

    /// The connection, to run this writer's statement on.
    pub(crate) fn conn(&mut self) -> Result<&mut sqlx::PgConnection, Error> {
        Ok(&mut self.conn)
    }

    /// The write's result: its statement committed as it ran.
    pub(crate) async fn finish<T, E>(self, result: Result<T, E>) -> Result<T, E> {
        drop(self.conn);
        result
    }
}
