//! Rows a write on the store's own SQLite thread returns: owned, to travel
//! back to the task that waits for them, and read by the same code as
//! sqlx's rows ([`Fields`]).

use rusqlite::types::Value;
use sqlx::sqlite::SqliteRow;

use crate::columns::Fields;

/// A row read on the store's own thread: each column's name and value.
#[derive(Debug)]
pub(crate) struct DirectRow {
    columns: Vec<(String, Value)>,
}

impl DirectRow {
    /// Every column of `row`, as it stands.
    pub(crate) fn of(row: &rusqlite::Row<'_>) -> rusqlite::Result<DirectRow> {
        let statement = row.as_ref();
        let columns = (0..statement.column_count())
            .map(|index| {
                let name = statement.column_name(index)?.to_owned();
                Ok((name, row.get::<_, Value>(index)?))
            })
            .collect::<rusqlite::Result<_>>()?;
        Ok(DirectRow { columns })
    }

    fn value(&self, column: &str) -> Result<&Value, sqlx::Error> {
        self.columns
            .iter()
            .find_map(|(name, value)| (name == column).then_some(value))
            .ok_or_else(|| sqlx::Error::ColumnNotFound(column.to_owned()))
    }
}

impl Fields for DirectRow {
    fn text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Text(text) => Ok(Some(text.clone())),
            other => Err(mismatched(column, "text", other)),
        }
    }

    fn number(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Integer(number) => Ok(Some(*number)),
            other => Err(mismatched(column, "an integer", other)),
        }
    }
}

/// A column that holds another type than its reader expects, as sqlx
/// says it.
fn mismatched(column: &str, expected: &str, found: &Value) -> sqlx::Error {
    let found = match found {
        Value::Null => "NULL",
        Value::Integer(_) => "an integer",
        Value::Real(_) => "a real",
        Value::Text(_) => "text",
        Value::Blob(_) => "a blob",
    };
    sqlx::Error::ColumnDecode {
        index: column.to_owned(),
        source: format!("expected {expected}, found {found}").into(),
    }
}

/// A row of a one-statement write on SQLite, whichever connection ran it.
#[derive(Debug)]
pub(crate) enum AnyRow {
    /// Written on the store's own thread.
    Direct(DirectRow),
    /// Written by sqlx's writer.
    Sqlite(SqliteRow),
}

impl Fields for AnyRow {
    fn text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        match self {
            AnyRow::Direct(row) => row.text(column),
            AnyRow::Sqlite(row) => row.text(column),
        }
    }

    fn number(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
        match self {
            AnyRow::Direct(row) => row.number(column),
            AnyRow::Sqlite(row) => row.number(column),
        }
    }
}
