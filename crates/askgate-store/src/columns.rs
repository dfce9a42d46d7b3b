//! Reading the columns of a stored row, where a value of the wrong type is
//! a corrupt row of the store, named with what the row holds.

use jiff::Timestamp;
use sqlx::Row;

use crate::error::Error;

/// The columns of one row of `what` (an ask, a call, a task) in `store`.
pub(crate) struct Columns<'r, R> {
    row: &'r R,
    store: &'r str,
    what: &'static str,
}

impl<'r, R: Row> Columns<'r, R>
where
    for<'c> &'c str: sqlx::ColumnIndex<R>,
    for<'c> String: sqlx::Decode<'c, R::Database> + sqlx::Type<R::Database>,
    for<'c> i64: sqlx::Decode<'c, R::Database> + sqlx::Type<R::Database>,
{
    pub(crate) fn new(row: &'r R, store: &'r str, what: &'static str) -> Self {
        Self { row, store, what }
    }

    /// The row is corrupt, for the reason `detail`.
    pub(crate) fn corrupt(&self, detail: String) -> Error {
        Error::Corrupt {
            store: self.store.to_owned(),
            what: self.what,
            detail,
        }
    }

    /// A text column, `None` when NULL.
    pub(crate) fn text(&self, column: &str) -> Result<Option<String>, Error> {
        self.row
            .try_get::<Option<String>, _>(column)
            .map_err(|e| self.corrupt(e.to_string()))
    }

    /// An integer column, `None` when NULL.
    pub(crate) fn number(&self, column: &str) -> Result<Option<i64>, Error> {
        self.row
            .try_get::<Option<i64>, _>(column)
            .map_err(|e| self.corrupt(e.to_string()))
    }

    /// A time stored as microseconds since the epoch, `None` when NULL.
    pub(crate) fn time(&self, column: &str) -> Result<Option<Timestamp>, Error> {
        self.number(column)?
            .map(|us| Timestamp::from_microsecond(us).map_err(|e| self.corrupt(e.to_string())))
            .transpose()
    }
}
