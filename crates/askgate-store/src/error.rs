//! What can go wrong with a store, named so a person can act on it.

/// A store error: which store, and what is wrong with it.
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
}

/// Why an answer was not applied. Each refusal is also recorded as a
/// rejected attempt.
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
    /// The store failed.
    #[error(transparent)]
    Store(#[from] Error),
}
