//! Why the driver failed, told apart by its error code (never its text),
//! and the store's [`Error`] it makes.

use std::sync::Arc;

use sqlx::error::DatabaseError;

use crate::error::Error;

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
    /// The server could not be reached: no connection within the pool's
    /// wait, one dropped, a TLS failure (see the `outage` module).
    Outage,
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
                    match pg.code() {
                        // disk_full.
                        "53100" => Cause::NoSpace,
                        // admin_shutdown, crash_shutdown, cannot_connect_now:
                        // the server is going down, or not up yet.
                        "57P01" | "57P02" | "57P03" => Cause::Outage,
                        _ => Cause::Other,
                    }
                } else {
                    Cause::Other
                }
            }
            sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::StorageFull => Cause::NoSpace,
            error if crate::outage::is_outage(error) => Cause::Outage,
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
            Cause::Outage => match crate::outage::outage_detail(&store, &detail) {
                Some(detail) => Error::Unavailable { store, detail },
                None => Error::Database { store, detail },
            },
            Cause::Other => Error::Database { store, detail },
        }
    }

    /// What the driver said.
    pub(crate) fn detail(&self) -> &str {
        &self.detail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
