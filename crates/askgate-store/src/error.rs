//! What can go wrong with a store, named so a person can act on it.

/// Everything that can go wrong in askgate-store: which store, and what is
/// wrong with it.
///
/// The store's own failures (it cannot be opened, it is locked, full or
/// unreadable, a query failed) are variants of their own. A move the store
/// refused — an answer after the first, a ledger move from the wrong
/// state, a task move after its end — is returned as its specific kind
/// ([`SettleError`], [`LedgerError`], [`TaskError`]) by the functions that
/// make it, because callers must tell those cases apart; each converts into
/// this enum with `?` (its `Store` case into the store failure it holds).
/// [`Error::Misuse`] stands apart: the calling code broke the API's
/// contract, and nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL is not one askgate can open.
    #[error("store {store}: unsupported URL; expected sqlite://PATH or postgres://...")]
    BadUrl {
        /// The store as named (without credentials).
        store: String,
    },
    /// The database could not be reached or opened.
    #[error("store {store}: cannot open: {detail}")]
    Unreachable {
        /// The store as named.
        store: String,
        /// What the driver said.
        detail: String,
    },
    /// The file or database is not an askgate store (corrupt or foreign).
    #[error("store {store}: not an askgate store ({detail})")]
    Foreign {
        /// The store as named.
        store: String,
        /// What gave it away.
        detail: String,
    },
    /// Others than its owner may write the SQLite store's file (or its
    /// `-wal`, `-shm`, `-journal`), or everyone may write its folder (not a
    /// sticky one, as `/tmp`): they could change its asks and answers, or put a store of
    /// their own in its place. Nothing was opened.
    #[error(
        "{}: others than its owner may write this store {} (mode {mode:04o}): they could \
         change its asks and answers or replace it; chmod {} {} (and check that nobody \
         changed it)",
        .path.display(),
        if *.folder { "folder" } else { "file" },
        if *.folder { "700" } else { "600" },
        .path.display()
    )]
    OthersMayWrite {
        /// The file or folder.
        path: std::path::PathBuf,
        /// Its permission bits.
        mode: u32,
        /// Whether it is the store's folder (else one of its files).
        folder: bool,
    },
    /// The store was written by a newer askgate.
    #[error(
        "store {store}: schema version {found} is newer than this askgate knows ({known}); upgrade askgate"
    )]
    NewerSchema {
        /// The store as named.
        store: String,
        /// The version found.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// Another process holds the database file's write lock, and did not
    /// let go within the wait (5 s). Nothing was written.
    #[error(
        "store {store}: the database file is locked by another process (waited 5 s); nothing was written"
    )]
    Locked {
        /// The store as named.
        store: String,
    },
    /// The disk is full, or the file is at its size limit. Nothing was
    /// written.
    #[error(
        "store {store}: the disk refused the write (full, or the file at its size limit): {detail}; nothing was written"
    )]
    NoSpace {
        /// The store as named.
        store: String,
        /// What the driver said.
        detail: String,
    },
    /// The PostgreSQL server could not be reached: it refused the
    /// connection, did not answer, or dropped it. A write it cut off may or
    /// may not have been kept; the guarded moves of the ledger and the asks
    /// can be tried again once it is back (a move already made is refused
    /// with where the row stands).
    #[error("store {store}: {detail}")]
    Unavailable {
        /// The store as named.
        store: String,
        /// What was found: "PostgreSQL at host:port refused the
        /// connection (is it running?)".
        detail: String,
    },
    /// A query failed: a lost connection, an I/O error.
    #[error("store {store}: {detail}")]
    Database {
        /// The store as named.
        store: String,
        /// What the driver said.
        detail: String,
    },
    /// A stored row could not be read back.
    #[error("store {store}: a stored {what} is unreadable: {detail}")]
    Corrupt {
        /// The store as named.
        store: String,
        /// What kind of row.
        what: &'static str,
        /// Why.
        detail: String,
    },
    /// An answer was refused (never [`SettleError::Store`]: converting one
    /// gives the store failure it holds).
    #[error(transparent)]
    Settle(Box<SettleError>),
    /// A ledger move was refused (never [`LedgerError::Store`]).
    #[error(transparent)]
    Ledger(Box<LedgerError>),
    /// A task move was refused (never [`TaskError::Store`]).
    #[error(transparent)]
    Task(Box<TaskError>),
    /// The API was used against its contract: a bug in the calling code.
    /// Nothing was written.
    #[error("store {store}: {misuse}")]
    Misuse {
        /// The store as named.
        store: String,
        /// What the calling code did wrong.
        misuse: Misuse,
    },
}

impl Error {
    /// Whether this is the store being out of reach for now — its
    /// PostgreSQL server down, or restarting — rather than a fault of the
    /// store itself: what was tried can be tried again once it is back.
    pub fn is_outage(&self) -> bool {
        matches!(self, Error::Unavailable { .. })
    }
}

/// A use of the store's API against its contract. Each message says what
/// was given and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// An answer must settle an ask to `answered`, `declined`, `cancelled`
    /// or `skipped`; `pending` and `expired` are not answers.
    #[error(
        "an answer cannot settle ask {id} as {status}; expected answered, declined, cancelled or skipped"
    )]
    SettleStatus {
        /// The ask.
        id: String,
        /// The status given.
        status: &'static str,
    },
    /// Ask ids are the caller's to make unique: this one is taken by an
    /// ask another call waits on.
    #[error(
        "ask {id} was not parked: its id is taken by an ask with another resume key; give each ask its own id"
    )]
    IdTaken {
        /// The id.
        id: String,
    },
}

impl From<SettleError> for Error {
    fn from(error: SettleError) -> Error {
        match error {
            SettleError::Store(error) => error,
            refused => Error::Settle(Box::new(refused)),
        }
    }
}

impl From<LedgerError> for Error {
    fn from(error: LedgerError) -> Error {
        match error {
            LedgerError::Store(error) => error,
            refused => Error::Ledger(Box::new(refused)),
        }
    }
}

impl From<TaskError> for Error {
    fn from(error: TaskError) -> Error {
        match error {
            TaskError::Store(error) => error,
            refused => Error::Task(Box::new(refused)),
        }
    }
}

/// Why an answer was not applied. Each refusal is also recorded as a
/// rejected attempt. Converts into [`Error`] (as [`Error::Settle`], or the
/// store failure itself).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettleError {
    /// No ask has this id.
    #[error("no ask {id}")]
    NotFound {
        /// The id.
        id: String,
    },
    /// The ask was already settled: the first answer stands.
    #[error("ask {id} is already {status}; the first answer stands")]
    Conflict {
        /// The id.
        id: String,
        /// Its status.
        status: String,
    },
    /// The ask expired before this answer came.
    #[error("ask {id} expired before this answer came")]
    Gone {
        /// The id.
        id: String,
    },
    /// The ask is decided by a panel (a team's approval rule): only its
    /// people's answers, each as themselves, settle it.
    #[error(
        "ask {id} is decided by its approvers' answers ({rule}); answer it as a person (askgate asks answer, or the inbox)"
    )]
    Governed {
        /// The id.
        id: String,
        /// The rule, as its panel names it.
        rule: String,
    },
    /// This person already answered this ask: their first answer counts.
    #[error("{person} already answered ask {id}; their first answer counts")]
    Repeated {
        /// The id.
        id: String,
        /// Who answered again.
        person: String,
    },
    /// This person may not answer this ask, for `why` (the part of the
    /// rule that excludes them).
    #[error("ask {id} refused {person}'s answer: {why}")]
    Ineligible {
        /// The id.
        id: String,
        /// Who answered.
        person: String,
        /// Why they may not.
        why: String,
    },
    /// The store failed, or was misused ([`Error::Misuse`]); nothing was
    /// recorded.
    #[error(transparent)]
    Store(#[from] Error),
}

/// A move the ledger refused: the call was not where the move starts.
/// Converts into [`Error`] (as [`Error::Ledger`], or the store failure
/// itself).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// No call has this id.
    #[error("no call {id} in the ledger")]
    NotFound {
        /// The id.
        id: String,
    },
    /// The call is elsewhere: for example sent twice, or answered before
    /// being sent.
    #[error("call {id} is {state}, so it cannot become {wanted}")]
    Illegal {
        /// The id.
        id: String,
        /// Where it is.
        state: &'static str,
        /// Where it was asked to go.
        wanted: &'static str,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] Error),
}

/// A task move the store refused. Converts into [`Error`] (as
/// [`Error::Task`], or the store failure itself).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// No task has this id (for this principal).
    #[error("no task {id}")]
    NotFound {
        /// The id.
        id: String,
    },
    /// The task is elsewhere: for example finished after a cancel.
    #[error("task {id} is {state}, so it cannot become {wanted}")]
    Illegal {
        /// The id.
        id: String,
        /// Where it is.
        state: &'static str,
        /// Where it was asked to go.
        wanted: &'static str,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] Error),
}
