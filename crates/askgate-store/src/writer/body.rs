//! Body writers: a write of several statements takes the SQLite connection
//! in turn and runs them in the open batch ([`GroupCommit::begin`],
//! [`GroupCommit::begin_with`]), then commits the batch itself or leaves
//! it to the committer for the writers waiting behind it
//! ([`Write::finish`]). On PostgreSQL such a write is a connection of the
//! pool in autocommit ([`PgWrite`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use sqlx::{Connection, Executor};
use tokio::sync::{MutexGuard, OwnedMutexGuard};

use super::{GroupCommit, State, another_failed, drop_connection_if_broken};
use crate::error::Error;
use crate::fault::classify;
use crate::statement::{Backend, Command, Failure, Row, Statement};

impl<C> GroupCommit<C>
where
    C: Backend,
    for<'c> &'c mut C: Executor<'c, Database = C::Database>,
{
    /// Take the connection for one body writer, in the open batch.
    pub(crate) async fn begin(&self) -> Result<Write<'_, C>, Error> {
        let mut state = {
            let _waiting = Waiting::on(&self.waiting);
            self.state.lock().await
        };
        self.clean_up(&mut state).await;
        self.open_batch(&mut state)
            .await
            .map_err(|fault| fault.error(&self.name))?;
        Ok(Write {
            owner: self,
            state: Some(state),
            began: false,
            committed: false,
        })
    }

    /// [`GroupCommit::begin`], the body's first statement `lead` run at
    /// once: where the backend folds `BEGIN` into a command and no batch is
    /// open, in the same command that begins the batch (one trip to the
    /// connection's thread, not two). Returns the lead's first row. If the
    /// lead fails, the batch it joined is rolled back, as when a body
    /// fails.
    ///
    /// # Errors
    /// The batch could not begin, or the lead failed.
    pub(crate) async fn begin_with(
        &self,
        lead: Statement,
    ) -> Result<(Write<'_, C>, Option<Row<C>>), Error> {
        let mut state = {
            let _waiting = Waiting::on(&self.waiting);
            self.state.lock().await
        };
        self.clean_up(&mut state).await;
        let begin = C::FOLDS_BEGIN_AND_COMMIT && !state.open;
        let ready = if begin {
            self.reconnect(&mut state).await
        } else {
            self.open_batch(&mut state).await
        };
        ready.map_err(|fault| fault.error(&self.name))?;
        let mut run = [lead];
        let State {
            conn,
            commands,
            open,
            abandoned,
            ..
        } = &mut *state;
        let Some(conn) = conn.as_mut() else {
            return Err(self.lost());
        };
        // A writer dropped while its lead runs (its caller gave up) leaves
        // the batch to be rolled back by the next one: the connection's
        // thread runs the command, which may begin the batch, all the same.
        *open = true;
        *abandoned = true;
        let command = Command {
            commands,
            run: &mut run,
            begin,
            commit: false,
        };
        let result = conn.run_writes(command).await;
        state.abandoned = false;
        let error = match result {
            Ok(mut rows) => {
                state.open = true;
                let row = rows.pop().flatten();
                let write = Write {
                    owner: self,
                    state: Some(state),
                    began: begin,
                    committed: false,
                };
                return Ok((write, row));
            }
            Err(Failure::Begin(error)) => {
                // Nothing ran; the batch is not open.
                state.open = false;
                drop_connection_if_broken(&mut state, &error);
                return Err(self.fail(&error));
            }
            Err(Failure::Write(_, error) | Failure::Run(error) | Failure::Commit(error)) => error,
        };
        // The batch began (or was open): undo it, as for a failed body.
        state.open = true;
        self.roll_back_batch(&mut state, another_failed()).await;
        drop_connection_if_broken(&mut state, &error);
        Err(self.fail(&error))
    }

    /// The writer's turn, when it is to be had at once and the write
    /// that takes it has the writer to itself: no batch open, no body
    /// writer holding or waiting for the connection, no one-statement
    /// write queued, and the committer's last batch was not of several
    /// (writes that come together keep coming together: they stay on
    /// the connection whose page cache they keep warm). `None` otherwise:
    /// then the write joins the others' batch the usual way, where one
    /// commit serves them all. A write on another connection to the same
    /// database (see [`crate::direct`]) holds the turn while it runs, so
    /// neither connection waits on SQLite's write lock for the other;
    /// writes that come meanwhile wait their turn, and go in the next
    /// batch.
    pub(crate) fn alone(&self) -> Option<Turn<C>> {
        let state = Arc::clone(&self.state).try_lock_owned().ok()?;
        let idle = !state.open
            && !state.abandoned
            && state.ran.is_empty()
            && self.waiting.load(Ordering::Acquire) == 0
            && !self.crowded.load(Ordering::Relaxed)
            && self.queue().is_empty();
        idle.then(|| self.turn(state))
    }

    /// [`GroupCommit::alone`], or, when the turn is held by a write on
    /// the store's own thread with nothing else about (no body writer
    /// waiting, no one-statement write queued, writes not coming
    /// together), the turn after that write: the write that waits for it
    /// follows it on the thread, rather than join a batch of its own
    /// the sqlx way behind it. A sequential client's call comes while the
    /// call before it still commits its end there; through sqlx its record
    /// cost half a dozen wake-ups more on its way to the upstream (see
    /// DESIGN.md, "A write with the writer to itself, in one trip"). One
    /// write follows at a time: a second that comes meanwhile goes the
    /// sqlx way, where writes that come together share a commit. `None`
    /// otherwise, or when what the followed write left is not idle (a batch
    /// of sqlx's begun meanwhile).
    pub(crate) async fn alone_after(&self) -> Option<Turn<C>> {
        if let Some(turn) = self.alone() {
            return Some(turn);
        }
        let quiet = self.on_thread.load(Ordering::Acquire)
            && self.waiting.load(Ordering::Acquire) == 0
            && !self.crowded.load(Ordering::Relaxed)
            && self.queue().is_empty();
        if !quiet || self.following.swap(true, Ordering::AcqRel) {
            return None;
        }
        let _following = Following(&self.following);
        let state = Arc::clone(&self.state).lock_owned().await;
        // Whoever queued or waited behind it waits behind this write too,
        // as behind any writer: it needs only the connection left idle.
        let idle = !state.open && !state.abandoned && state.ran.is_empty();
        idle.then(|| self.turn(state))
    }

    /// The turn, held by a write on the store's own thread.
    fn turn(&self, state: OwnedMutexGuard<State<C>>) -> Turn<C> {
        self.on_thread.store(true, Ordering::Release);
        Turn {
            on_thread: Arc::clone(&self.on_thread),
            _held: state,
        }
    }
}

/// A write waiting to follow the one on the store's thread (see
/// [`GroupCommit::alone_after`]); no longer when dropped.
struct Following<'a>(&'a AtomicBool);

impl Drop for Following<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// The writer's turn, held by a write elsewhere (see
/// [`GroupCommit::alone`]); given back when dropped, on any thread.
pub(crate) struct Turn<C: Connection> {
    /// Cleared as the turn is given back.
    on_thread: Arc<AtomicBool>,
    _held: OwnedMutexGuard<State<C>>,
}

impl<C: Connection> Drop for Turn<C> {
    fn drop(&mut self) {
        // Before the guard (a field) is dropped: whoever takes the turn
        // next may set it again.
        self.on_thread.store(false, Ordering::Release);
    }
}

/// One body writer's turn on the connection, in the open batch. End it with
/// [`Write::finish`]; dropping it rolls the batch back.
pub(crate) struct Write<'a, C: Connection> {
    owner: &'a GroupCommit<C>,
    state: Option<MutexGuard<'a, State<C>>>,
    /// Its lead began the batch: nothing of another writer is in it.
    began: bool,
    /// The body's last command committed the batch ([`Write::committed`]).
    committed: bool,
}

impl<C> Write<'_, C>
where
    C: Backend,
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

    /// Whether this writer may end its body's last command with `COMMIT`
    /// (see [`Write::committed`]): its lead began the batch and nothing
    /// else ran in it, no other body writer waits to join it and no
    /// one-statement write is queued for it, so `finish` would commit it
    /// at once anyway. (One queued after this look goes in the next
    /// batch, as it would after any commit.) The batch holds this write
    /// alone: if its future is dropped while that command runs, no other
    /// writer waits on an outcome it could be told wrong.
    pub(crate) fn alone(&self) -> bool {
        let owner = self.owner;
        self.began
            && owner.waiting.load(Ordering::Acquire) == 0
            && owner.queue().is_empty()
            && self
                .state
                .as_ref()
                .is_some_and(|state| !state.abandoned && state.ran.is_empty())
    }

    /// The body's last command, run when [`Write::alone`], ended with
    /// `COMMIT` and succeeded: the batch is durable, its other writes are
    /// told so, and `finish` has nothing left to commit — the commit's
    /// trip to the connection's thread saved. (A command that failed
    /// before or at its `COMMIT` returns the error instead: the body fails
    /// and `finish` rolls the batch back, as for any failed body.)
    pub(crate) fn committed(&mut self) {
        let owner = self.owner;
        if let Some(state) = self.state.as_mut() {
            state.open = false;
            owner.publish(state, Ok(()));
            self.committed = true;
            // Alone in its batch: writes are not coming together.
            owner.crowded.store(false, Ordering::Relaxed);
        }
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
        if self.committed {
            // Durable already; nothing of it is left to undo (`committed`
            // is the body's last fallible step).
            debug_assert!(result.is_ok(), "a body failed after it committed");
            return result;
        }
        if result.is_err() {
            owner.roll_back_batch(&mut state, another_failed()).await;
            return result;
        }
        let mut done = state.batch.subscribe();
        let outcome = if owner.waiting.load(Ordering::Acquire) == 0 {
            // No other body writer waits to join the batch: commit it now,
            // with the one-statement writes queued meanwhile, rather than
            // hand it to the committer (a hop to its task and back).
            if owner.queue().is_empty() {
                // Nothing came with it: writes are not coming together.
                owner.crowded.store(false, Ordering::Relaxed);
            }
            owner.run_queued(&mut state).await;
            owner.commit_batch(&mut state).await;
            drop(state);
            done.borrow().clone()
        } else {
            drop(state);
            owner.pending.notify_one();
            match done.wait_for(Option::is_some).await {
                Ok(outcome) => outcome.clone(),
                Err(_) => None,
            }
        };
        match outcome {
            Some(Ok(())) => result,
            Some(Err(fault)) => Err(owner.not_kept(&fault).into()),
            None => Err(owner.lost().into()),
        }
    }
}

/// A body writer counted in [`GroupCommit`]'s `waiting` while it waits for
/// the connection (and no longer once it has it, or gave up waiting).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn on(count: &'a AtomicUsize) -> Waiting<'a> {
        count.fetch_add(1, Ordering::AcqRel);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<C: Connection> Drop for Write<'_, C> {
    fn drop(&mut self) {
        // Dropped half-way, its statements must not be kept; committed,
        // there is nothing left to undo.
        if let (Some(state), false) = (self.state.as_mut(), self.committed) {
            state.abandoned = true;
        }
    }
}

/// A body write on PostgreSQL: a connection of the pool, in autocommit.
/// These writes change rows in one statement (their other statements only
/// read), so each commits on its own, and PostgreSQL's row locks let the
/// writers of several replicas run side by side. One-statement writes go
/// through the group committer instead.
pub(crate) struct PgWrite {
    conn: sqlx::pool::PoolConnection<sqlx::Postgres>,
}

impl PgWrite {
    /// Take a connection.
    pub(crate) async fn begin(pool: &sqlx::PgPool, name: &Arc<str>) -> Result<PgWrite, Error> {
        let conn = pool.acquire().await.map_err(|e| classify(name, &e))?;
        Ok(PgWrite { conn })
    }

    /// The connection, to run this writer's statement on.
    pub(crate) fn conn(&mut self) -> Result<&mut sqlx::PgConnection, Error> {
        Ok(&mut self.conn)
    }

    /// Never: each statement commits by itself (see [`Write::alone`]).
    pub(crate) fn alone(&self) -> bool {
        false
    }

    /// Nothing to do: [`PgWrite::alone`] never lets a body commit.
    pub(crate) fn committed(&mut self) {}

    /// The write's result: its statement committed as it ran.
    pub(crate) async fn finish<T, E>(self, result: Result<T, E>) -> Result<T, E> {
        drop(self.conn);
        result
    }
}

#[cfg(test)]
mod tests {
    use std::future::{Future, poll_fn};
    use std::str::FromStr;
    use std::sync::Arc;
    use std::task::Poll;

    use sqlx::ConnectOptions;
    use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

    use crate::error::Error;
    use crate::statement::Statement;
    use crate::writer::{Connect, GroupCommit};

    const INSERT: &str = "INSERT INTO t (id) VALUES ($1) RETURNING id";

    fn insert(id: &str) -> Statement {
        Statement::new(INSERT, id).text(id)
    }

    /// A group committer over a new file with a table `t`, its task, and
    /// a connection of its own to read the file.
    async fn scratch(
        name: &str,
    ) -> (
        Arc<GroupCommit<SqliteConnection>>,
        tokio::task::JoinHandle<()>,
        SqliteConnection,
        std::path::PathBuf,
    ) {
        let path = std::env::temp_dir().join(format!(
            "askgate-{name}-{}-{}.db",
            std::process::id(),
            jiff::Timestamp::now().as_nanosecond()
        ));
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .expect("options")
            .create_if_missing(true);
        let mut conn = options.connect().await.expect("opens");
        sqlx::raw_sql("PRAGMA journal_mode = WAL; CREATE TABLE t (id TEXT PRIMARY KEY)")
            .execute(&mut conn)
            .await
            .expect("creates");
        let reader = options.connect().await.expect("opens");
        let connect: Connect<SqliteConnection> = Box::new(move || {
            let options = options.clone();
            Box::pin(async move { options.connect().await })
        });
        let (writer, task) = GroupCommit::start(conn, connect, Arc::from("test"));
        (writer, task, reader, path)
    }

    fn remove(path: &std::path::Path) {
        for end in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{end}", path.display()));
        }
    }

    /// A writer folds its commit into its last command only in a batch of
    /// its own: begun by its lead, nothing else in it or waiting for it.
    #[tokio::test]
    async fn a_writer_is_alone_only_in_a_batch_its_own_lead_began() {
        let (writer, task, _reader, path) = scratch("alone").await;

        let (write, row) = writer.begin_with(insert("a")).await.expect("begins");
        assert!(row.is_some());
        assert!(write.alone(), "its lead began the batch");
        // A one-statement write queued meanwhile belongs in this batch.
        let queued = writer.submit(insert("b"));
        assert!(!write.alone());
        write.finish(Ok::<_, Error>(())).await.expect("commits");
        assert!(queued.await.expect("kept").is_some());

        // A body without a lead joins a batch it did not begin.
        let write = writer.begin().await.expect("begins");
        assert!(!write.alone());
        write.finish(Ok::<_, Error>(())).await.expect("commits");

        task.abort();
        remove(&path);
    }

    /// A writer dropped while its lead runs on the connection's thread —
    /// its caller gave up — leaves the batch the lead began to be rolled
    /// back by the next writer: the lead is not kept, and writes go on.
    /// Before, the connection stayed in that transaction, unknown to the
    /// committer, and every batch after failed to begin.
    #[tokio::test]
    async fn a_writer_dropped_while_its_lead_runs_leaves_the_writer_usable() {
        let (writer, task, mut reader, path) = scratch("dropped").await;

        // Another connection holds the write lock, so the lead's command
        // waits on the connection's thread while its writer is dropped.
        sqlx::raw_sql("BEGIN IMMEDIATE")
            .execute(&mut reader)
            .await
            .expect("locks");
        let mut leading = Box::pin(writer.begin_with(insert("a")));
        let polled = poll_fn(|cx| Poll::Ready(leading.as_mut().poll(cx))).await;
        assert!(polled.is_pending(), "the lead waits for the lock");
        drop(leading);
        sqlx::raw_sql("COMMIT")
            .execute(&mut reader)
            .await
            .expect("unlocks");

        let row = writer.write(insert("b")).await.expect("writes go on");
        assert!(row.is_some());
        let kept: Vec<String> = sqlx::query_scalar("SELECT id FROM t ORDER BY id")
            .fetch_all(&mut reader)
            .await
            .expect("reads");
        assert_eq!(kept, ["b"], "the dropped writer's lead is not kept");

        task.abort();
        remove(&path);
    }
}
