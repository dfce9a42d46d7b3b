//! Reads a call waits on, run on the caller's own thread (SQLite).
//!
//! sqlx runs each SQLite connection on a thread of its own: a statement is
//! sent there, and its rows and its end come back, each waking the thread
//! that waits for them. On this project's 2-core VM such a trip costs some
//! 60-100 µs, where the read itself takes 10-30 µs; and a confirmed call
//! waits on one read before its person is asked. So the store keeps one
//! read-only connection of SQLite's synchronous API (rusqlite, on the same
//! libsqlite3 as sqlx's driver) and runs that read on the caller's thread.
//! It never waits: a connection in use by another caller, or a read that
//! finds the database busy (a checkpoint resetting the WAL), gives `None`,
//! and the caller takes sqlx's way. Reads in WAL mode do not wait on the
//! writer, so the thread is held for the read alone.

use std::cell::OnceCell;
use std::path::Path;
use std::sync::Mutex;

use rusqlite::types::ToSqlOutput;
use rusqlite::{Connection, OpenFlags, ToSql};

use crate::columns::Fields;

/// A read-only connection to a store's SQLite file, for reads on the
/// caller's thread; `None` once the store is closed.
pub(crate) struct Inline {
    connection: Mutex<Option<Connection>>,
}

impl std::fmt::Debug for Inline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Inline")
    }
}

/// A parameter of an inline read.
pub(crate) enum Bound<'a> {
    /// Text.
    Text(&'a str),
    /// An integer.
    Number(i64),
}

impl Inline {
    /// A read-only connection to the store file `file`, or `None` when it
    /// cannot be opened (the caller keeps sqlx's way for every read).
    pub(crate) fn open(file: &Path) -> Option<Inline> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(file, flags).ok()?;
        // Never wait for a lock: a busy database sends the read to sqlx.
        connection.busy_timeout(std::time::Duration::ZERO).ok()?;
        connection.set_prepared_statement_cache_capacity(16);
        Some(Inline {
            connection: Mutex::new(Some(connection)),
        })
    }

    /// Close the connection: reads from now on go the sqlx way (and find
    /// the store closed).
    pub(crate) fn close(&self) {
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *connection = None;
    }

    /// Run each of `reads` (a statement and its parameters) in one read
    /// transaction, and hand each row to `row` with the read's position.
    /// `None` when the connection is in use or the database busy, or any
    /// statement fails: nothing was handed on then that counts, and the
    /// caller reads the sqlx way.
    pub(crate) fn read<T>(
        &self,
        reads: &[(&str, &[Bound<'_>])],
        mut row: impl FnMut(usize, &InlineRow<'_>) -> Result<(), T>,
    ) -> Option<Result<(), T>> {
        let guard = self.connection.try_lock().ok()?;
        let connection = guard.as_ref()?;
        let mut within = |connection: &Connection| -> Result<Result<(), T>, rusqlite::Error> {
            for (position, (sql, bound)) in reads.iter().enumerate() {
                let mut statement = connection.prepare_cached(sql)?;
                bind_numbered(&mut statement, bound)?;
                let mut rows = statement.raw_query();
                while let Some(found) = rows.next()? {
                    if let Err(e) = row(position, &InlineRow::new(found)) {
                        return Ok(Err(e));
                    }
                }
            }
            Ok(Ok(()))
        };
        // Cached like the reads: `execute_batch` would parse them again.
        let run = |sql: &str| connection.prepare_cached(sql)?.execute([]);
        run("BEGIN").ok()?;
        let result = within(connection);
        let ended = run("COMMIT");
        match (result, ended) {
            (Ok(handed), Ok(_)) => Some(handed),
            _ => {
                let _ = connection.execute_batch("ROLLBACK");
                None
            }
        }
    }
}

impl ToSql for Bound<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Bound::Text(text) => text.to_sql(),
            Bound::Number(number) => number.to_sql(),
        }
    }
}

/// Bind each `$N` parameter of `statement` to `values[N - 1]`, as sqlx
/// binds them. SQLite numbers `$N` parameters in the order they first
/// appear, not by `N`, so each is bound by its name.
///
/// # Errors
/// A parameter that is not `$N`, or an `N` past `values`.
pub(crate) fn bind_numbered<V: ToSql>(
    statement: &mut rusqlite::Statement<'_>,
    values: &[V],
) -> rusqlite::Result<()> {
    let numbers = numbering(statement, values.len())?;
    bind_by(statement, &numbers, values)
}

/// For each parameter of `statement` in SQLite's order, the index its
/// `$N` name gives in a list of `values` values (`N - 1`): read once for
/// a statement bound for many rows (see [`bind_by`]).
///
/// # Errors
/// A parameter that is not `$N`, or an `N` past `values`.
pub(crate) fn numbering(
    statement: &rusqlite::Statement<'_>,
    values: usize,
) -> rusqlite::Result<Vec<usize>> {
    (1..=statement.parameter_count())
        .map(|index| {
            statement
                .parameter_name(index)
                .and_then(|name| name.strip_prefix('$'))
                .and_then(|number| number.parse::<usize>().ok())
                .and_then(|number| number.checked_sub(1))
                .filter(|at| *at < values)
                .ok_or(rusqlite::Error::InvalidParameterCount(index, values))
        })
        .collect()
}

/// Bind `statement`'s parameters to `values` by its `numbers` (see
/// [`numbering`]).
///
/// # Errors
/// `numbers` read for a longer list than `values`, or a value SQLite
/// refuses.
pub(crate) fn bind_by<V: ToSql>(
    statement: &mut rusqlite::Statement<'_>,
    numbers: &[usize],
    values: &[V],
) -> rusqlite::Result<()> {
    for (index, at) in numbers.iter().enumerate() {
        let value = values
            .get(*at)
            .ok_or(rusqlite::Error::InvalidParameterCount(
                index + 1,
                values.len(),
            ))?;
        statement.raw_bind_parameter(index + 1, value)?;
    }
    Ok(())
}

/// A row of an inline read, read as the store reads sqlx's rows: its
/// columns by name.
pub(crate) struct InlineRow<'r> {
    row: &'r rusqlite::Row<'r>,
    /// Its statement's column names, read once (see [`InlineRow::index`]).
    names: OnceCell<Vec<&'r str>>,
}

impl<'r> InlineRow<'r> {
    /// `row`'s columns, read by name.
    pub(crate) fn new(row: &'r rusqlite::Row<'r>) -> InlineRow<'r> {
        InlineRow {
            row,
            names: OnceCell::new(),
        }
    }

    /// The index of the first column named `column` (in any case), as
    /// rusqlite's `Row::get` by name finds it. rusqlite asks SQLite for
    /// every column's name until it finds the one (each a call into
    /// SQLite and a `strlen`): some 18,900 instructions of a confirmed
    /// call's reads, which read a dozen columns a row. The names are
    /// asked for once a row here, and compared in memory.
    fn index(&self, column: &str) -> rusqlite::Result<usize> {
        let statement = self.row.as_ref();
        let names = self.names.get_or_init(|| {
            (0..statement.column_count())
                .map(|at| statement.column_name(at).unwrap_or_default())
                .collect()
        });
        names
            .iter()
            .position(|name| name.eq_ignore_ascii_case(column))
            .ok_or_else(|| rusqlite::Error::InvalidColumnName(column.to_owned()))
    }
}

impl Fields for InlineRow<'_> {
    fn text(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        let index = self.index(column).map_err(decoding)?;
        self.row.get::<_, Option<String>>(index).map_err(decoding)
    }

    fn number(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
        let index = self.index(column).map_err(decoding)?;
        self.row.get::<_, Option<i64>>(index).map_err(decoding)
    }
}

/// A column the inline read could not decode, as sqlx says it.
fn decoding(error: rusqlite::Error) -> sqlx::Error {
    sqlx::Error::Decode(Box::new(error))
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use serde_json::json;

    use crate::backend::Pool;
    use crate::{AuditEntry, Decision, NewAsk, NewCall, Retry, Store};

    /// A SQLite store in a scratch folder of its own, one ask of the call
    /// `mcp:k:confirm` parked in it, and the folder.
    async fn store_with_an_ask(name: &str) -> (Store, std::path::PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("askgate-inline-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        let store = Store::open(&format!("sqlite://{}/store.db", dir.display()))
            .await
            .expect("opens");
        store
            .park(&ask_of_the_call("a1", "mcp:k:confirm", 1))
            .await
            .expect("parks");
        (store, dir)
    }

    /// An ask `id` of the call `mcp:k:confirm`, resumed by `resume_key`,
    /// made at `second`.
    fn ask_of_the_call(id: &str, resume_key: &str, second: i64) -> NewAsk {
        NewAsk {
            id: id.into(),
            resume_key: resume_key.into(),
            call_key: Some("mcp:k:confirm".into()),
            principal: "alice".into(),
            request: json!({"message": "Delete?", "fields": []}),
            server: Some("files".into()),
            tool: Some("delete".into()),
            risk: Some("high_write".into()),
            created_at: Timestamp::from_second(second).expect("an instant"),
            expires_at: None,
            panel: None,
        }
    }

    /// A row's columns read by name in any order, again, in another
    /// case, read what rusqlite reads by name; a name the row lacks is an
    /// error, and the next read still finds its column.
    #[test]
    fn a_rows_columns_are_found_by_name_in_any_order() {
        use crate::columns::Fields;
        let connection = rusqlite::Connection::open_in_memory().expect("opens");
        let mut statement = connection
            .prepare("SELECT 1 AS a, 'x' AS b, 2 AS c, NULL AS d")
            .expect("prepares");
        let mut rows = statement.raw_query();
        let found = rows.next().expect("steps").expect("a row");
        let row = super::InlineRow::new(found);
        assert_eq!(row.number("a").expect("a"), Some(1));
        assert_eq!(row.text("b").expect("b"), Some("x".into()));
        assert_eq!(row.number("c").expect("c"), Some(2));
        assert_eq!(row.text("d").expect("d"), None);
        assert_eq!(row.number("a").expect("a again"), Some(1));
        assert_eq!(row.number("C").expect("c in capitals"), Some(2));
        assert!(row.text("e").is_err(), "no column e");
        assert_eq!(row.text("b").expect("b after a miss"), Some("x".into()));
        assert_eq!(row.number("c").expect("c after b"), Some(2));
    }

    /// A call's read before its ask takes none of the pool's connections:
    /// with every one of them taken (the inbox listing asks, say), it
    /// still reads. Through the pool it waited for one, and gave up after
    /// five seconds.
    #[tokio::test]
    async fn a_calls_read_before_its_ask_reads_while_every_pool_connection_is_taken() {
        let (store, dir) = store_with_an_ask("pool").await;
        let Pool::Sqlite(pool) = &store.pool else {
            panic!("a SQLite store");
        };
        let mut taken = Vec::new();
        for _ in 0..pool.options().get_max_connections() {
            taken.push(pool.acquire().await.expect("a connection"));
        }
        let (found, asks) = store
            .tries_of_call(None, "mcp:k:confirm", 10)
            .await
            .expect("read without the pool");
        assert!(found.is_none());
        assert_eq!(asks.len(), 1, "the call's ask");
        assert_eq!(asks[0].ask.id, "a1");
        drop(taken);
        store.close().await;
        // Closed, the store reads no more, on any thread.
        let closed = store.tries_of_call(None, "mcp:k:confirm", 10).await;
        assert!(closed.is_err(), "a closed store read: {closed:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The read before each confirmation runs its statement as compiled
    /// once: binding the call key and the limit again does not make
    /// SQLite compile it again (a bare `LIMIT $2` did, every time). The
    /// limit still holds.
    #[tokio::test]
    async fn a_calls_read_before_its_ask_is_compiled_once_and_keeps_its_limit() {
        let (store, dir) = store_with_an_ask("compiled").await;
        let later = ask_of_the_call("a2", "mcp:k:confirm:2", 2);
        store.park(&later).await.expect("parks");
        for limit in [10, 1, 10] {
            let (_, asks) = store
                .tries_of_call(None, "mcp:k:confirm", limit)
                .await
                .expect("reads");
            let ids: Vec<&str> = asks.iter().map(|row| row.ask.id.as_str()).collect();
            let newest_first: &[&str] = if limit == 1 { &["a2"] } else { &["a2", "a1"] };
            assert_eq!(ids, newest_first, "at most {limit}, newest first");
        }
        let inline = store.inline.clone().expect("a store file reads inline");
        let compiled_again = {
            let connection = inline.connection.lock().expect("not poisoned");
            let connection = connection.as_ref().expect("open");
            let statement = connection
                .prepare_cached(crate::asks::BY_CALL_KEY)
                .expect("cached");
            statement.get_status(rusqlite::StatementStatus::RePrepare)
        };
        assert_eq!(compiled_again, 0, "three reads, compiled once");
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// When the caller's-thread connection is in use, the reads go the
    /// sqlx way, and find the same: the call's asks, and a call that may
    /// have run.
    #[tokio::test]
    #[expect(
        clippy::await_holding_lock,
        reason = "the connection is held in use while the store reads"
    )]
    async fn a_read_the_inline_connection_cannot_take_goes_through_sqlx_and_finds_the_same() {
        let (store, dir) = store_with_an_ask("busy").await;
        let call = NewCall {
            id: "c1".into(),
            owner: "gw-1".into(),
            server: "files".into(),
            tool: "delete".into(),
            arguments_digest: Some("hmac-sha256:cd34".into()),
            principal: Some("alice".into()),
            request: Some("req-1".into()),
            at: Timestamp::from_second(2).expect("an instant"),
        };
        let entry = AuditEntry {
            at: call.at,
            server: "files".into(),
            tool: "delete".into(),
            risk: "destructive".into(),
            decision: Decision::Elicited,
            reason: "confirmed by a person".into(),
            answered_by: Some("alice".into()),
            principal: Some("alice".into()),
            answered_via: Some("mcp".into()),
            arguments_digest: call.arguments_digest.clone(),
            ask_id: Some("a1".into()),
            decision_key: None,
        };
        store
            .record_sent_call(&entry, &call, "m-1", call.at)
            .await
            .expect("records");
        let retry = Retry {
            principal: "alice",
            server: "files",
            tool: "delete",
            arguments_digest: "hmac-sha256:cd34",
            earlier_digests: &[],
        };
        let since = Timestamp::from_second(0).expect("an instant");
        let reads = || async {
            let found = store
                .may_have_run(&retry, since, "gw-2")
                .await
                .expect("reads");
            let (_, asks) = store
                .tries_of_call(None, "mcp:k:confirm", 10)
                .await
                .expect("reads");
            (found, asks)
        };
        let inline_read = reads().await;
        let inline = store.inline.clone().expect("a store file is read inline");
        let in_use = inline.connection.lock().expect("not poisoned");
        let sqlx_read = reads().await;
        drop(in_use);
        assert_eq!(inline_read.1.len(), 1, "the call's ask");
        let found = inline_read.0.as_ref().expect("the call sent by gw-1");
        assert_eq!(found.call.marker.as_deref(), Some("m-1"));
        assert_eq!(inline_read, sqlx_read);
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
