//! A write with the writer to itself, run in one trip to a SQLite thread
//! of the store's own (SQLite).
//!
//! sqlx runs its SQLite connection on a thread of its own and answers
//! each statement of a command with several messages back — its rows, then
//! its end — each one waking the task that waits for it. A write of a few
//! statements with work between them (a call's record: the call, then its
//! decision's audit entry hashed onto the chain head it read, then the
//! commit) costs two commands and six such wake-ups before its `fsync`,
//! some 150 µs on this project's 2-core VM: more than the statements
//! themselves. A confirmed call waits on that record between the person's
//! answer and the call's send.
//!
//! So the store keeps one more connection to its file, read-write, owned by
//! a thread of its own (rusqlite, on the same libsqlite3 as sqlx's
//! driver), and sends it a whole write as one job: the statements, the
//! Rust between them and the commit run there, and one reply comes back.
//! A write runs there only when it has the writer to itself
//! ([`GroupCommit::alone`]: no batch open, no write queued or waiting),
//! and its job holds the group committer's turn until it is done, so
//! SQLite's one write lock never makes either connection wait for the
//! other. With other writes about, a write joins their batch the sqlx
//! way: one `fsync` shared by many is worth more than the trips.
//!
//! The call's record (`ledger::direct`) and the one-statement writes
//! ([`statement`]: park, answer, end a call) go there, so that a
//! confirmed call's writes, one after another, all run on this connection
//! and find its page cache warm: a connection drops its cache after any
//! other connection's commit.
//!
//! [`GroupCommit::alone`]: crate::writer::GroupCommit::alone

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use rusqlite::types::ToSqlOutput;
use rusqlite::{Connection, OpenFlags, ToSql};
use tokio::sync::oneshot;

use crate::statement::Param;

/// A job for the thread: run on its connection.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The store's own SQLite thread and its read-write connection; closed
/// once the store is.
pub(crate) struct Direct {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// How many jobs the thread has run.
    done: Arc<AtomicU64>,
}

impl std::fmt::Debug for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Direct")
    }
}

impl Direct {
    /// A read-write connection to the store file `file`, set up as sqlx's
    /// writer is (full synchronous commits, foreign keys), on a thread of
    /// its own; `None` when it cannot be opened (every write then goes the
    /// sqlx way).
    pub(crate) fn open(file: &Path) -> Option<Direct> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut connection = Connection::open_with_flags(file, flags).ok()?;
        // Never wait for the lock: a write runs here only with the
        // writer's turn, so what holds the lock is another process (the
        // inbox's CLI). The write then goes the sqlx way, which waits for
        // it and names the lock if it is not let go.
        connection.busy_timeout(Duration::ZERO).ok()?;
        // Per connection: an acknowledged write survives a power cut.
        connection
            .execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")
            .ok()?;
        connection.set_prepared_statement_cache_capacity(16);
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("askgate-store-direct".into())
            .spawn(move || {
                while let Ok(job) = queue.recv() {
                    // A job that panics is told nothing (its caller sees
                    // the thread's reply lost); the thread goes on. A
                    // transaction it left open is rolled back. (The
                    // store's jobs catch their own panics, to roll back
                    // before they give the writer's turn back.)
                    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut connection)));
                    if ran.is_err() && !connection.is_autocommit() {
                        let _ = connection.execute_batch("ROLLBACK");
                    }
                }
            })
            .ok()?;
        Some(Direct {
            jobs: Mutex::new(Some(jobs)),
            thread: Mutex::new(Some(thread)),
            done: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Send `job` to the thread's connection now, with `data` (it runs
    /// whether or not its result is awaited), and what its result comes
    /// back on; `data` handed back, the job not sent, when the store was
    /// closed. A job must leave no transaction open.
    pub(crate) fn start<D: Send + 'static, T: Send + 'static>(
        &self,
        data: D,
        job: fn(&mut Connection, D) -> T,
    ) -> Result<oneshot::Receiver<T>, D> {
        let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(jobs) = jobs.as_ref() else {
            return Err(data);
        };
        let (reply, answer) = oneshot::channel();
        let done = Arc::clone(&self.done);
        let job: Job = Box::new(move |connection| {
            let result = job(connection, data);
            done.fetch_add(1, Ordering::Relaxed);
            let _ = reply.send(result);
        });
        // The thread takes jobs as long as its sender is here: it outlives
        // a job that panics.
        let _ = jobs.send(job);
        Ok(answer)
    }

    /// How many jobs the thread has run, counted before each replies.
    #[cfg(test)]
    pub(crate) fn jobs_run(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Stop the thread once its job in hand is done, and close its
    /// connection: writes from now on go the sqlx way (and find the store
    /// closed).
    pub(crate) async fn close(&self) {
        drop(
            self.jobs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// Run `write`, catching a panic as a failure (`None`); then end a
/// transaction it left open (it failed, or panicked half-way) by rolling
/// it back, before the caller gives the writer's turn back.
pub(crate) fn rolled_back_unless_done<T>(
    connection: &mut Connection,
    write: impl FnOnce(&mut Connection) -> Option<T>,
) -> Option<T> {
    let done = std::panic::catch_unwind(AssertUnwindSafe(|| write(&mut *connection)))
        .ok()
        .flatten();
    if !connection.is_autocommit() {
        let _ = connection.execute_batch("ROLLBACK");
    }
    done
}

/// Whether the write a job does is still wanted: a caller that gave up
/// waiting (its future dropped) withdraws it, and the job, finding that
/// before its commit, rolls back — as a body writer dropped half-way is
/// rolled back the sqlx way.
#[derive(Clone)]
pub(crate) struct Wanted(Arc<AtomicBool>);

impl Wanted {
    /// A write wanted until the returned guard is dropped (or disarmed).
    pub(crate) fn new() -> (Wanted, Withdraw) {
        let flag = Arc::new(AtomicBool::new(true));
        (Wanted(Arc::clone(&flag)), Withdraw(Some(flag)))
    }

    /// Still wanted.
    pub(crate) fn still(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Withdraws its write when dropped, unless [`Withdraw::disarm`]ed.
pub(crate) struct Withdraw(Option<Arc<AtomicBool>>);

impl Withdraw {
    /// The caller heard the job's reply: nothing to withdraw.
    pub(crate) fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(flag) = self.0.take() {
            flag.store(false, Ordering::Release);
        }
    }
}

mod rows;
mod statement;
#[cfg(test)]
pub(crate) mod testing;

pub(crate) use rows::{AnyRow, DirectRow};
pub(crate) use statement::read_back;

impl ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Param::Text(text) => text.to_sql(),
            Param::Int(number) => number.to_sql(),
        }
    }
}
