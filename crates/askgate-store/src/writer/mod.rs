//! Group commit: the writes that arrive while a commit is being made durable
//! share the next commit — one `fsync` for many of them, and on PostgreSQL
//! one turn of the lock that every notifying commit takes in turn.
//!
//! Writes come in two shapes. A one-statement write (a [`Statement`]: park
//! an ask, answer it) is handed to the committer task, which runs all the
//! queued ones in a batch and commits it: on SQLite a run of the same
//! statement is one command to the driver, the batch's `BEGIN IMMEDIATE` and
//! `COMMIT` folded into the first and last, so a batch costs a few thread
//! hops instead of two per write; on PostgreSQL a run is one statement over
//! arrays, so a batch costs a round trip per kind of write (and a
//! transaction only when it has several runs). Any other write — a body of
//! statements, `with_writer!` — takes the SQLite connection itself (a fair
//! queue), runs its statements in the open batch and hands the connection
//! on to the next body writer waiting for it; the last of them commits the
//! batch itself, with the one-statement writes queued meanwhile, so a lone
//! body write does not wait on a hop to the committer's task. (On
//! PostgreSQL those writes stay one autocommitted statement each, on the
//! pool.)
//!
//! On SQLite a write that finds the writer to itself — nothing queued,
//! open or waiting — may take the writer's turn ([`GroupCommit::alone`])
//! and run in one trip on the store's own thread instead (see
//! [`crate::direct`]).
//!
//! Whichever way, a write is acknowledged only once the batch it joined has
//! committed: an acknowledged write is durable, and a batch is all or
//! nothing. A write that fails — or a body writer dropped half-way, its
//! future cancelled — rolls the whole batch back: the failing write is told
//! why, every other write that had been sent is told that nothing of it was
//! kept (so it may retry), and the runs not sent yet go on in the next
//! batch. Failures are rare (a full disk, a lost lock, an unreadable row)
//! and most of them end the transaction anyway, so this costs little and
//! saves the two statements per write that savepoints would cost.
//!
//! Within a batch, writes run ordered by statement, then by the key they
//! change (an ask's id), not in arrival order: none of them is acknowledged
//! before the batch commits, so they are concurrent, and any order is a
//! correct one. A key twice in a PostgreSQL run ends the run: the second
//! write runs after the first, as SQLite runs them.
//!
//! Why not a transaction per write on a pool: SQLite has one writer at a
//! time, so pooled writers wait on the file lock (busy-sleeping) and each
//! pays its own `fsync`; PostgreSQL serializes the commits of transactions
//! that notify (an answered ask does), each with its own WAL flush. Batching
//! turns those queues into throughput.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};

use sqlx::{Connection, Executor};
use tokio::sync::{Mutex, MutexGuard, Notify, oneshot, watch};

use crate::error::Error;
use crate::fault::{Fault, classify};
use crate::statement::{Backend, Command, Commands, Failure, Row, Statement};

mod body;

pub(crate) use body::{PgWrite, Turn};

/// How long the write connection may sit unused before a batch pings it:
/// under load it is never idle that long, so writes pay nothing for it.
const IDLE: std::time::Duration = std::time::Duration::from_secs(1);

/// How a writer connection is (re)made after it was lost.
pub(crate) type Connect<C> =
    Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<C, sqlx::Error>> + Send>> + Send + Sync>;

/// The result of one batch, as its body writers see it.
type BatchResult = Option<Result<(), Fault>>;

/// Where a one-statement write learns its row, once its batch is durable.
type Reply<C> = oneshot::Sender<Result<Option<Row<C>>, Error>>;

/// One connection shared by all writers, committing in batches.
pub(crate) struct GroupCommit<C: Connection> {
    /// Shared, so that a write on the store's own SQLite thread can hold
    /// the writer's turn there (see [`Turn`]).
    state: Arc<Mutex<State<C>>>,
    /// One-statement writes waiting for the committer.
    queue: std::sync::Mutex<Vec<Job<C>>>,
    /// Rung by every write that joined or wants a batch.
    pending: Notify,
    /// Body writers waiting for the connection: while there are none, the
    /// body writer that has it commits its batch itself.
    waiting: AtomicUsize,
    /// The committer's last batch held several one-statement writes:
    /// writes come together, and share commits (see [`GroupCommit::alone`]).
    crowded: AtomicBool,
    /// A write on the store's own thread holds the turn (see [`Turn`]).
    on_thread: Arc<AtomicBool>,
    /// A write waits to follow it there (see [`GroupCommit::alone_after`]).
    following: AtomicBool,
    connect: Connect<C>,
    /// The store's name, for errors.
    name: Arc<str>,
}

impl<C: Connection> std::fmt::Debug for GroupCommit<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("store", &self.name)
            .finish_non_exhaustive()
    }
}

struct State<C: Connection> {
    /// `None` after the connection was lost; made again on the next write.
    conn: Option<C>,
    /// A batch transaction is open.
    open: bool,
    /// When a batch last began on the connection.
    used: std::time::Instant,
    /// A body writer was dropped half-way: the batch must be rolled back.
    abandoned: bool,
    /// Where the open batch's result will be published (body writers).
    batch: watch::Sender<BatchResult>,
    /// One-statement writes that ran in the open batch, with their rows.
    ran: Vec<(Reply<C>, Option<Row<C>>)>,
    commands: Commands,
}

/// A one-statement write, queued.
struct Job<C: Connection> {
    statement: Statement,
    reply: Reply<C>,
}

/// Writes of one statement, run together.
struct Run<C: Connection> {
    statements: Vec<Statement>,
    replies: Vec<Reply<C>>,
}

impl<C> GroupCommit<C>
where
    C: Backend,
    for<'c> &'c mut C: Executor<'c, Database = C::Database>,
{
    /// A group committer over `conn`, and the task that commits its batches
    /// (abort it when the store goes away).
    pub(crate) fn start(
        conn: C,
        connect: Connect<C>,
        name: Arc<str>,
    ) -> (Arc<Self>, tokio::task::JoinHandle<()>) {
        let writer = Arc::new(GroupCommit {
            state: Arc::new(Mutex::new(State {
                conn: Some(conn),
                open: false,
                used: std::time::Instant::now(),
                abandoned: false,
                batch: watch::channel(None).0,
                ran: Vec::new(),
                commands: Commands::new(),
            })),
            queue: std::sync::Mutex::new(Vec::new()),
            pending: Notify::new(),
            waiting: AtomicUsize::new(0),
            crowded: AtomicBool::new(false),
            on_thread: Arc::new(AtomicBool::new(false)),
            following: AtomicBool::new(false),
            connect,
            name,
        });
        let committer = Arc::clone(&writer);
        let task = tokio::spawn(async move {
            loop {
                committer.pending.notified().await;
                // Let the tasks that are about to write queue first: a
                // batch grows by what is ready now, at no cost when nothing
                // else is. Body writers queued before the lock below join
                // the batch first (the lock is fair).
                tokio::task::yield_now().await;
                let mut state = committer.state.lock().await;
                committer.run_queued(&mut state).await;
                committer.commit_batch(&mut state).await;
            }
        });
        (writer, task)
    }

    /// Run a one-statement write in the next batch. Returns its row (the
    /// first, if it returns several) once the batch is durable.
    pub(crate) async fn write(&self, statement: Statement) -> Result<Option<Row<C>>, Error> {
        self.submit(statement).await
    }

    /// Queue a one-statement write for the next batch now, and return what
    /// resolves to its row once the batch is durable. Dropping the returned
    /// future does not withdraw the write: it runs and commits all the same,
    /// unheard.
    pub(crate) fn submit(
        &self,
        statement: Statement,
    ) -> impl Future<Output = Result<Option<Row<C>>, Error>> + Send + 'static
    where
        Row<C>: Send + 'static,
    {
        let (reply, done) = oneshot::channel();
        self.queue().push(Job { statement, reply });
        self.pending.notify_one();
        let lost = self.lost();
        async move { done.await.unwrap_or(Err(lost)) }
    }

    /// Close the connection after committing what is pending.
    pub(crate) async fn close(&self) {
        let mut state = self.state.lock().await;
        self.run_queued(&mut state).await;
        self.commit_batch(&mut state).await;
        if let Some(conn) = state.conn.take() {
            let _ = conn.close().await;
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Vec<Job<C>>> {
        // A panic while holding the queue leaves it consistent (a push).
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Make the connection again if it was lost. One left idle for a
    /// while is pinged first: a server restarted meanwhile closed it, and
    /// the write that finds that out should not be the one to fail.
    async fn reconnect(&self, state: &mut State<C>) -> Result<(), Fault> {
        if !state.open
            && state.used.elapsed() >= IDLE
            && let Some(conn) = state.conn.as_mut()
            && !matches!(
                tokio::time::timeout(IDLE * 2, conn.ping()).await,
                Ok(Ok(()))
            )
        {
            state.conn = None;
        }
        state.used = std::time::Instant::now();
        if state.conn.is_none() {
            state.conn = Some((self.connect)().await.map_err(|e| Fault::of(&e))?);
        }
        Ok(())
    }

    /// Reconnect if needed, and begin a batch if none is open.
    async fn open_batch(&self, state: &mut State<C>) -> Result<(), Fault> {
        self.reconnect(state).await?;
        if !state.open {
            let conn = state
                .conn
                .as_mut()
                .ok_or_else(|| Fault::other("the write connection was lost; retry"))?;
            // A writer dropped while this runs (its caller gave up) leaves
            // the batch to be rolled back by the next one: the connection's
            // thread runs the `BEGIN` all the same.
            state.open = true;
            state.abandoned = true;
            let began = sqlx::raw_sql(C::BEGIN).execute(&mut *conn).await;
            state.abandoned = false;
            if let Err(e) = began {
                state.open = false;
                drop_connection_if_broken(state, &e);
                return Err(Fault::of(&e));
            }
        }
        Ok(())
    }

    /// Run the queued one-statement writes in a batch. On SQLite the first
    /// command of a batch also begins it and the last also commits it; on
    /// PostgreSQL a lone statement commits by itself.
    async fn run_queued(&self, state: &mut State<C>) {
        let jobs = std::mem::take(&mut *self.queue());
        if jobs.is_empty() {
            return;
        }
        self.crowded.store(jobs.len() > 1, Ordering::Relaxed);
        self.clean_up(state).await;
        let runs = into_runs(jobs);
        let folds = C::FOLDS_BEGIN_AND_COMMIT;
        let by_itself = !folds && runs.len() == 1 && !state.open;
        let ready = if folds || by_itself {
            self.reconnect(state).await
        } else {
            self.open_batch(state).await
        };
        if let Err(fault) = ready {
            for reply in runs.into_iter().flat_map(|run| run.replies) {
                let _ = reply.send(Err(fault.error(&self.name)));
            }
            return;
        }
        let last = runs.len() - 1;
        let mut runs = runs.into_iter().enumerate();
        while let Some((i, mut run)) = runs.next() {
            let begin = folds && !state.open;
            let commit = (folds && i == last) || by_itself;
            let State { conn, commands, .. } = state;
            let result = match conn.as_mut() {
                Some(conn) => {
                    let command = Command {
                        commands,
                        run: &mut run.statements,
                        begin,
                        commit,
                    };
                    conn.run_writes(command).await
                }
                None => Err(Failure::Begin(sqlx::Error::Protocol(
                    "the write connection was lost".into(),
                ))),
            };
            let failure = match result {
                Ok(rows) => {
                    state.ran.extend(run.replies.into_iter().zip(rows));
                    state.open = !commit;
                    if commit {
                        self.publish(state, Ok(()));
                    }
                    continue;
                }
                Err(failure) => failure,
            };
            let rest = runs.map(|(_, run)| run);
            self.handle_failure(state, run, failure, by_itself, rest)
                .await;
            return;
        }
    }

    /// Tell the writers of `run` how its write failed, and end the batch;
    /// the `runs` after it are told too (nothing ran) or queued again
    /// (they were not sent).
    async fn handle_failure(
        &self,
        state: &mut State<C>,
        run: Run<C>,
        failure: Failure,
        by_itself: bool,
        runs: impl Iterator<Item = Run<C>>,
    ) {
        match failure {
            Failure::Begin(error) => {
                // Nothing ran.
                drop_connection_if_broken(state, &error);
                let rest = runs.flat_map(|run| run.replies);
                for reply in run.replies.into_iter().chain(rest) {
                    let _ = reply.send(Err(self.fail(&error)));
                }
            }
            Failure::Write(failed, error) => {
                // The failing write is told why; the others of its
                // command that nothing was kept; the runs after it were
                // not sent, and go on in the next batch.
                state.open = !by_itself;
                drop_connection_if_broken(state, &error);
                let mut replies = run.replies.into_iter();
                let before = replies.by_ref().take(failed).map(|reply| (reply, None));
                state.ran.extend(before);
                if let Some(reply) = replies.next() {
                    let _ = reply.send(Err(self.fail(&error)));
                }
                state.ran.extend(replies.map(|reply| (reply, None)));
                self.roll_back_and_queue_again(state, runs).await;
            }
            Failure::Run(error) => {
                // Which write failed is not known: all are told why.
                state.open = !by_itself;
                drop_connection_if_broken(state, &error);
                for reply in run.replies {
                    let _ = reply.send(Err(self.fail(&error)));
                }
                self.roll_back_and_queue_again(state, runs).await;
            }
            Failure::Commit(error) => {
                state
                    .ran
                    .extend(run.replies.into_iter().map(|reply| (reply, None)));
                state.open = !by_itself;
                drop_connection_if_broken(state, &error);
                // The transaction may still be open after a failed
                // commit (a full disk, a lost lock): end it.
                self.roll_back_batch(state, Fault::of(&error)).await;
            }
        }
    }

    /// Roll the batch back, a write of it having failed, and queue the
    /// `runs` that were not sent again.
    async fn roll_back_and_queue_again(
        &self,
        state: &mut State<C>,
        runs: impl Iterator<Item = Run<C>>,
    ) {
        self.roll_back_batch(state, another_failed()).await;
        self.queue_again(runs);
    }

    /// Put runs that did not start back at the head of the queue.
    fn queue_again(&self, runs: impl Iterator<Item = Run<C>>) {
        let jobs: Vec<Job<C>> = runs
            .flat_map(|run| run.statements.into_iter().zip(run.replies))
            .map(|(statement, reply)| Job { statement, reply })
            .collect();
        if !jobs.is_empty() {
            self.queue().splice(0..0, jobs);
            self.pending.notify_one();
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
                    drop_connection_if_broken(state, &e);
                    Err(Fault::of(&e))
                }
            },
            None => Err(Fault::other("the write connection was lost")),
        };
        state.open = false;
        self.publish(state, result);
    }

    /// Roll the batch back if a body writer was dropped half-way.
    async fn clean_up(&self, state: &mut State<C>) {
        if state.abandoned {
            state.abandoned = false;
            self.roll_back_batch(
                state,
                Fault::other("a cancelled write in the same batch failed"),
            )
            .await;
        }
    }

    /// Undo the open batch and tell its writers that nothing was kept,
    /// and why.
    async fn roll_back_batch(&self, state: &mut State<C>, why: Fault) {
        if let (true, Some(conn)) = (state.open, state.conn.as_mut()) {
            let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
        }
        state.open = false;
        self.publish(state, Err(why));
    }

    /// Tell the writers of the batch that just ended how it ended.
    fn publish(&self, state: &mut State<C>, result: Result<(), Fault>) {
        for (reply, row) in state.ran.drain(..) {
            let _ = reply.send(match &result {
                Ok(()) => Ok(row),
                Err(fault) => Err(self.not_kept(fault)),
            });
        }
        let done = std::mem::replace(&mut state.batch, watch::channel(None).0);
        let _ = done.send(Some(result));
    }

    fn fail(&self, error: &sqlx::Error) -> Error {
        classify(&self.name, error)
    }

    /// A write's error when the batch it joined was not kept: of the
    /// batch's cause.
    fn not_kept(&self, fault: &Fault) -> Error {
        let detail = format!(
            "the batch this write joined was not kept: {}",
            fault.detail()
        );
        fault.error_saying(&self.name, detail)
    }

    fn lost(&self) -> Error {
        Error::Database {
            store: self.name.to_string(),
            detail: "the write connection was lost; retry".into(),
        }
    }
}

/// The queued writes in runs: sorted by statement and key, and each run
/// as many of one statement as may join one command.
fn into_runs<C: Backend>(mut jobs: Vec<Job<C>>) -> Vec<Run<C>> {
    jobs.sort_by(|a, b| {
        (a.statement.sql, &a.statement.key).cmp(&(b.statement.sql, &b.statement.key))
    });
    let mut runs: Vec<Run<C>> = Vec::new();
    for job in jobs {
        match runs.last_mut() {
            Some(run) if C::may_join(&run.statements, &job.statement) => {
                run.statements.push(job.statement);
                run.replies.push(job.reply);
            }
            _ => runs.push(Run {
                statements: vec![job.statement],
                replies: vec![job.reply],
            }),
        }
    }
    runs
}

/// Why a write that did not fail was not kept.
fn another_failed() -> Fault {
    Fault::other("another write in the same batch failed")
}

fn drop_connection_if_broken<C: Connection>(state: &mut State<C>, error: &sqlx::Error) {
    if matches!(
        error,
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::Tls(_)
    ) {
        state.conn = None;
        state.open = false;
    }
}
