//! Reading the columns of a stored row, where a value of the wrong type is
//! a corrupt row of the store, named with what the row holds; the kinds of
//! row the store reads back (an ask, a call, a task), read or written one
//! row at a time; and times as they are stored.

use jiff::Timestamp;
use serde_json::Value as Json;
use sqlx::Row;

use crate::backend::{Store, with_pool, with_writer};
use crate::error::Error;
use crate::statement::Statement;

/// Microseconds since the Unix epoch, as stored.
pub(crate) fn micros(at: Timestamp) -> i64 {
    at.as_microsecond()
}

/// A row of either backend, read a column at a time.
pub(crate) trait Fields {
    /// A text column, `None` when NULL.
    fn text(&self, column: &str) -> Result<Option<String>, sqlx::Error>;
    /// An integer column, `None` when NULL.
    fn number(&self, column: &str) -> Result<Option<i64>, sqlx::Error>;
}

impl<R: Row> Fields for R
where
    for<'c> &'c str: sqlx::ColumnIndex<R>,
    for<'c> String: sqlx::Decode<'c, R::Database> + sqlx::Type<R::Database>,
    for<'c> i64: sqlx::Decode<'c, R::Database> + sqlx::Type<R::Database>,
{
    fn text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        self.try_get::<Option<String>, _>(column)
    }

    fn number(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
        self.try_get::<Option<i64>, _>(column)
    }
}

/// A kind of row the store keeps and reads back: an ask, a call, a task.
pub(crate) trait Stored: Sized {
    /// What a row of this kind holds, for messages ("ask").
    const WHAT: &'static str;

    /// The row as its columns hold it, or why it is unreadable.
    fn from_columns<R: Fields>(columns: &Columns<'_, R>) -> Result<Self, Error>;

    /// The row of `store` as stored, or why it is unreadable.
    fn read<R: Fields>(store: &Store, row: &R) -> Result<Self, Error> {
        Self::from_columns(&Columns::new(row, &store.name, Self::WHAT))
    }
}

/// The columns of one row of `what` (an ask, a call, a task) in `store`.
pub(crate) struct Columns<'r, R> {
    row: &'r R,
    store: &'r str,
    what: &'static str,
}

impl<'r, R: Fields> Columns<'r, R> {
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
            .text(column)
            .map_err(|e| self.corrupt(e.to_string()))
    }

    /// An integer column, `None` when NULL.
    pub(crate) fn number(&self, column: &str) -> Result<Option<i64>, Error> {
        self.row
            .number(column)
            .map_err(|e| self.corrupt(e.to_string()))
    }

    /// A JSON text column, `None` when NULL.
    pub(crate) fn json(&self, column: &str) -> Result<Option<Json>, Error> {
        self.text(column)?
            .map(|t| serde_json::from_str(&t).map_err(|e| self.corrupt(format!("{column}: {e}"))))
            .transpose()
    }

    /// A time stored as microseconds since the epoch, `None` when NULL.
    pub(crate) fn time(&self, column: &str) -> Result<Option<Timestamp>, Error> {
        self.number(column)?
            .map(|us| Timestamp::from_microsecond(us).map_err(|e| self.corrupt(e.to_string())))
            .transpose()
    }
}

impl Store {
    /// The row `sql` reads with `key` as its one parameter, if any.
    pub(crate) async fn read_row<T: Stored>(
        &self,
        sql: &'static str,
        key: &str,
    ) -> Result<Option<T>, Error> {
        with_pool!(self, |pool| {
            match sqlx::query(sql)
                .bind(key)
                .fetch_optional(pool)
                .await
                .map_err(|e| self.fail(e))?
            {
                Some(row) => Ok(Some(T::read(self, &row)?)),
                None => Ok(None),
            }
        })
    }

    /// Run `statement` as one durable write, and read the row it returned
    /// (`None`: a guarded update that matched nothing).
    pub(crate) async fn write_row<T: Stored>(
        &self,
        statement: Statement,
    ) -> Result<Option<T>, Error> {
        with_writer!(self, |conn| {
            let row = statement
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            row.map(|row| T::read(self, &row)).transpose()
        })
    }
}
