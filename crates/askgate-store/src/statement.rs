//! Writes that are one statement, described as data — SQL and parameters —
//! so that the committer (see the `writer` module) can run many of them at
//! once: on SQLite, a run of the same statement goes to the driver as one
//! command of several statements; on PostgreSQL, as the statement's `many`
//! form, one statement over arrays (`UNNEST`): one round trip for the run.
//!
//! sqlx marks several statements in one prepared query as deprecated (its
//! issue 3108) although SQLite runs them and sqlx 0.9 still does; should
//! that go, SQLite would run a run as PostgreSQL runs a lone write, one
//! statement at a time, in the same batch — slower, no less durable.

use std::collections::HashMap;
use std::future::{Future, poll_fn};
use std::sync::Arc;

use sqlx::postgres::{PgArguments, PgConnection, PgRow};
use sqlx::query::Query;
use sqlx::sqlite::{SqliteConnection, SqliteRow};
use sqlx::{AssertSqlSafe, Connection, Database, Either, Executor, Postgres, Row as _};

/// One write that is a single statement: its SQL (`$N` placeholders) and its
/// parameters, owned, so it can be handed to the committer.
#[derive(Debug)]
pub(crate) struct Statement {
    pub(crate) sql: &'static str,
    /// The same write for many rows at once, on PostgreSQL: parameter `$k`
    /// an array of the k-th parameters of the writes, and an `id` column
    /// in each row returned, equal to the key of the write it is for.
    pub(crate) many: Option<&'static str>,
    /// How the store's own SQLite thread runs it (see [`ReadBack`]).
    pub(crate) read_back: Option<ReadBack>,
    /// What the statement changes (an ask's id). Within a batch statements
    /// run ordered by SQL, then key.
    pub(crate) key: String,
    pub(crate) params: Vec<Param>,
}

/// A write of one row at most that returns it (`... RETURNING`), as the
/// store's own SQLite thread runs it (see [`crate::direct`]): the write
/// without its `RETURNING`, then, when it changed a row, that row read by
/// its key, the same columns in the same order, both bound to the
/// statement's parameters by their `$N`. SQLite keeps a `RETURNING`'s
/// rows in a temporary B-tree it opens, begins a transaction on and drops
/// at every run; a read by key costs a fraction of that.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadBack {
    /// The write, returning nothing.
    pub(crate) write: &'static str,
    /// The read of the row it wrote.
    pub(crate) read: &'static str,
}

/// A parameter of a [`Statement`].
#[derive(Debug, Clone)]
pub(crate) enum Param {
    Text(Option<String>),
    Int(Option<i64>),
}

impl Statement {
    /// `sql`, changing what `key` names; bind its parameters in order.
    pub(crate) fn new(sql: &'static str, key: &str) -> Statement {
        Statement {
            sql,
            many: None,
            read_back: None,
            key: key.to_owned(),
            params: Vec::new(),
        }
    }

    /// Its form for many writes at once (see the `many` field).
    pub(crate) fn many(mut self, sql: &'static str) -> Statement {
        self.many = Some(sql);
        self
    }

    /// Its form for the store's own SQLite thread (see [`ReadBack`]).
    pub(crate) fn read_back(mut self, write: &'static str, read: &'static str) -> Statement {
        self.read_back = Some(ReadBack { write, read });
        self
    }

    pub(crate) fn text(mut self, value: impl Into<String>) -> Statement {
        self.params.push(Param::Text(Some(value.into())));
        self
    }

    pub(crate) fn opt_text(mut self, value: Option<&str>) -> Statement {
        self.params.push(Param::Text(value.map(str::to_owned)));
        self
    }

    pub(crate) fn int(mut self, value: i64) -> Statement {
        self.params.push(Param::Int(Some(value)));
        self
    }

    pub(crate) fn opt_int(mut self, value: Option<i64>) -> Statement {
        self.params.push(Param::Int(value));
        self
    }

    /// Run the statement by itself on `conn` (a writer's connection, in a
    /// `with_writer!` body): the first row it returns.
    pub(crate) async fn fetch_optional<'c, E, DB>(
        mut self,
        conn: E,
    ) -> Result<Option<DB::Row>, sqlx::Error>
    where
        DB: Database,
        DB::Arguments: sqlx::IntoArguments<DB>,
        E: Executor<'c, Database = DB>,
        Option<String>: for<'t> sqlx::Encode<'t, DB> + sqlx::Type<DB>,
        Option<i64>: for<'t> sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    {
        self.take_query().fetch_optional(conn).await
    }

    /// The statement as a query, its parameters bound (taken from it: it
    /// runs once).
    fn take_query<DB>(&mut self) -> Query<'static, DB, DB::Arguments>
    where
        DB: Database,
        Option<String>: for<'t> sqlx::Encode<'t, DB> + sqlx::Type<DB>,
        Option<i64>: for<'t> sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    {
        let params = std::mem::take(&mut self.params);
        params.into_iter().fold(sqlx::query(self.sql), bind)
    }
}

/// A row of the backend `C` speaks to.
pub(crate) type Row<C> = <<C as Connection>::Database as Database>::Row;

/// What failed in a command: its `BEGIN` (nothing ran), the write at this
/// index of its run, the run as a whole (which write is not known), or its
/// `COMMIT`.
#[derive(Debug)]
pub(crate) enum Failure {
    Begin(sqlx::Error),
    Write(usize, sqlx::Error),
    Run(sqlx::Error),
    Commit(sqlx::Error),
}

/// Commands made for runs, by statement, count of writes, and whether they
/// begin and commit the batch.
pub(crate) type Commands = HashMap<(&'static str, usize, bool, bool), Arc<str>>;

/// How a backend runs a run of writes of one statement.
pub(crate) trait Backend: Connection + 'static {
    /// Begins a batch.
    const BEGIN: &'static str;
    /// A command may begin and commit the batch besides running writes.
    const FOLDS_BEGIN_AND_COMMIT: bool;

    /// Whether `next` may join `run` (writes sorted by SQL, then key).
    fn may_join(run: &[Statement], next: &Statement) -> bool;

    /// Run the command's run in one command to the driver — preceded by
    /// [`Backend::BEGIN`] and followed by `COMMIT` if asked, where the
    /// backend folds them — and return the row of each write (the first,
    /// if it returns several).
    fn run_writes<'a>(
        &'a mut self,
        command: Command<'a>,
    ) -> impl Future<Output = Result<Vec<Option<Row<Self>>>, Failure>> + Send + 'a;
}

/// A run of writes of one statement to run as one command, and whether the
/// command begins and commits the batch too.
pub(crate) struct Command<'a> {
    /// The commands made so far (SQLite).
    pub(crate) commands: &'a mut Commands,
    pub(crate) run: &'a mut [Statement],
    pub(crate) begin: bool,
    pub(crate) commit: bool,
}

/// The most writes one SQLite command runs (each count of each statement is
/// one cached prepared statement).
const MOST_PER_SQLITE_COMMAND: usize = 8;

/// The most writes one PostgreSQL statement runs.
const MOST_PER_POSTGRES_STATEMENT: usize = 256;

impl Backend for SqliteConnection {
    // Take the file's write lock up front.
    const BEGIN: &'static str = "BEGIN IMMEDIATE";
    const FOLDS_BEGIN_AND_COMMIT: bool = true;

    fn may_join(run: &[Statement], next: &Statement) -> bool {
        run.len() < MOST_PER_SQLITE_COMMAND && run.first().is_some_and(|s| s.sql == next.sql)
    }

    async fn run_writes<'a>(
        &'a mut self,
        command: Command<'a>,
    ) -> Result<Vec<Option<SqliteRow>>, Failure> {
        let Command {
            commands,
            run,
            begin,
            commit,
        } = command;
        let Some(first) = run.first() else {
            return Ok(Vec::new());
        };
        let (sql, params, copies) = (first.sql, first.params.len(), run.len());
        let command = commands
            .entry((sql, copies, begin, commit))
            .or_insert_with(|| {
                let mut text = String::new();
                if begin {
                    text.push_str(Self::BEGIN);
                    text.push_str(";\n");
                }
                text.push_str(&repeated(sql, copies, params));
                if commit {
                    text.push_str("COMMIT;\n");
                }
                Arc::from(text)
            });
        let mut query = sqlx::query(AssertSqlSafe(Arc::clone(command)));
        for statement in run.iter_mut() {
            for param in std::mem::take(&mut statement.params) {
                query = bind(query, param);
            }
        }
        // Each statement yields its rows, then its count of changed rows.
        let first_write = usize::from(begin);
        let failure = |done: usize, error| {
            if done < first_write {
                Failure::Begin(error)
            } else if done < first_write + copies {
                Failure::Write(done - first_write, error)
            } else {
                Failure::Commit(error)
            }
        };
        let mut results = self.fetch_many(query);
        let mut done = 0;
        let mut rows = Vec::with_capacity(copies);
        let mut row = None;
        while let Some(result) = poll_fn(|cx| results.as_mut().poll_next(cx)).await {
            match result {
                Ok(Either::Right(next)) => {
                    row.get_or_insert(next);
                }
                Ok(Either::Left(_)) => {
                    if (first_write..first_write + copies).contains(&done) {
                        rows.push(row.take());
                    }
                    done += 1;
                }
                Err(e) => return Err(failure(done, e)),
            }
        }
        if done == first_write + copies + usize::from(commit) {
            Ok(rows)
        } else {
            Err(failure(done, lost()))
        }
    }
}

impl Backend for PgConnection {
    const BEGIN: &'static str = "BEGIN";
    const FOLDS_BEGIN_AND_COMMIT: bool = false;

    fn may_join(run: &[Statement], next: &Statement) -> bool {
        // Sorted by key: a key seen twice is at the end of the run. Its
        // second write runs after the first, in the next statement.
        run.len() < MOST_PER_POSTGRES_STATEMENT
            && next.many.is_some()
            && run
                .last()
                .is_some_and(|last| last.sql == next.sql && last.key != next.key)
    }

    async fn run_writes<'a>(
        &'a mut self,
        command: Command<'a>,
    ) -> Result<Vec<Option<PgRow>>, Failure> {
        // A run is its statement: it commits by itself, or in the batch.
        let [statement] = command.run else {
            return execute_many(self, command.run).await;
        };
        match statement.take_query().fetch_optional(&mut *self).await {
            Ok(row) => Ok(vec![row]),
            Err(e) => Err(Failure::Write(0, e)),
        }
    }
}

/// PostgreSQL: a run of writes of one statement as its `many` form, one
/// array per parameter.
async fn execute_many(
    conn: &mut PgConnection,
    run: &mut [Statement],
) -> Result<Vec<Option<PgRow>>, Failure> {
    let many = run
        .first()
        .and_then(|s| s.many)
        .ok_or_else(|| Failure::Run(lost()))?;
    let mut params: Vec<_> = run
        .iter_mut()
        .map(|s| std::mem::take(&mut s.params).into_iter())
        .collect();
    let width = params.first().map_or(0, ExactSizeIterator::len);
    let mut query: Query<'_, Postgres, PgArguments> = sqlx::query(many);
    for _ in 0..width {
        let column: Vec<Param> = params.iter_mut().filter_map(Iterator::next).collect();
        query = bind_column(query, column)?;
    }
    let returned = query.fetch_all(&mut *conn).await.map_err(Failure::Run)?;
    let index: HashMap<&str, usize> = run
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key.as_str(), i))
        .collect();
    let mut rows: Vec<Option<PgRow>> = (0..run.len()).map(|_| None).collect();
    for row in returned {
        let key: String = row.try_get("id").map_err(Failure::Run)?;
        if let Some(&i) = index.get(key.as_str()) {
            rows[i] = Some(row);
        }
    }
    Ok(rows)
}

/// Bind one parameter of every write of a run, `column`, as the query's
/// next parameter: an array of integers, or of text.
fn bind_column<'q>(
    query: Query<'q, Postgres, PgArguments>,
    column: Vec<Param>,
) -> Result<Query<'q, Postgres, PgArguments>, Failure> {
    let (mut ints, mut texts) = (Vec::new(), Vec::new());
    for param in column {
        match param {
            Param::Int(value) => ints.push(value),
            Param::Text(value) => texts.push(value),
        }
    }
    match (ints.is_empty(), texts.is_empty()) {
        (true, _) => Ok(query.bind(texts)),
        (false, true) => Ok(query.bind(ints)),
        (false, false) => Err(Failure::Run(mixed())),
    }
}

/// Bind `param` as the query's next parameter.
fn bind<'q, DB>(query: Query<'q, DB, DB::Arguments>, param: Param) -> Query<'q, DB, DB::Arguments>
where
    DB: Database,
    Option<String>: for<'t> sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    Option<i64>: for<'t> sqlx::Encode<'t, DB> + sqlx::Type<DB>,
{
    match param {
        Param::Text(value) => query.bind(value),
        Param::Int(value) => query.bind(value),
    }
}

fn lost() -> sqlx::Error {
    sqlx::Error::Protocol("the write connection was lost".into())
}

fn mixed() -> sqlx::Error {
    sqlx::Error::Protocol("the writes of one run bind different kinds of parameters".into())
}

/// `sql` written `copies` times, one statement after another, the `$k`
/// placeholders of the i-th copy renumbered to `$(k + i * params)`: the
/// parameters of all copies, bound in order, land where each copy expects
/// them. Quoted text is left alone.
fn repeated(sql: &str, copies: usize, params: usize) -> String {
    let mut text = String::with_capacity((sql.len() + 8) * copies);
    for copy in 0..copies {
        push_shifted(&mut text, sql, copy * params);
        text.push_str(";\n");
    }
    text
}

/// Push `sql` onto `text`, its `$k` placeholders renumbered to
/// `$(k + offset)` (quoted text left alone): a statement whose parameters
/// follow `offset` others in one command of several.
pub(crate) fn push_shifted(text: &mut String, sql: &str, offset: usize) {
    let mut quoted = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        text.push(c);
        match c {
            '\'' => quoted = !quoted,
            '$' if !quoted => {
                let mut number = 0;
                let mut digits = 0;
                while let Some(digit) = chars.peek().and_then(|d| d.to_digit(10)) {
                    number = number * 10 + digit as usize;
                    digits += 1;
                    chars.next();
                }
                if digits > 0 {
                    text.push_str(&(number + offset).to_string());
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_copy_takes_its_own_parameters() {
        assert_eq!(
            super::repeated("UPDATE t SET a = $1, b = '$1' WHERE c = $2 OR d = $1", 2, 2),
            "UPDATE t SET a = $1, b = '$1' WHERE c = $2 OR d = $1;\n\
             UPDATE t SET a = $3, b = '$1' WHERE c = $4 OR d = $3;\n"
        );
    }
}
