//! A one-statement write on SQLite (park an ask, answer it, end a call):
//! on the store's own thread when it has the writer to itself, so that the
//! writes a confirmed call makes one after another — its ask, its record,
//! its end — all run on one connection, whose page cache then stays
//! warm (a connection finds its cache stale, and reads its pages again,
//! after any other connection's commit); otherwise queued for the group
//! committer's next batch, as before.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rusqlite::{CachedStatement, Connection, ToSql};
use sqlx::sqlite::SqliteConnection;

use super::{AnyRow, DirectRow};
use crate::backend::Store;
use crate::error::Error;
use crate::inline::bind_numbered;
use crate::statement::{ReadBack, Statement};
use crate::writer::{GroupCommit, Turn};

/// A one-statement write's row, once the write is durable.
pub(crate) type Written = Pin<Box<dyn Future<Output = Result<Option<AnyRow>, Error>> + Send>>;

/// What the thread did with a write.
enum Done {
    /// Committed: the statement's first row.
    Kept(Option<DirectRow>),
    /// Not kept (a failed statement, rolled back): queued for sqlx's
    /// writer instead, whose outcome — the row, or the error named as
    /// every sqlx write names it — this resolves to.
    Queued(Pin<Box<dyn Future<Output = Result<Option<sqlx::sqlite::SqliteRow>, Error>> + Send>>),
}

impl Store {
    /// Submit `statement` to SQLite's writers now: it runs and commits
    /// whether or not the returned future is awaited, which resolves to
    /// its first row once it is durable.
    pub(crate) fn submit_sqlite(
        &self,
        writer: &Arc<GroupCommit<SqliteConnection>>,
        statement: Statement,
    ) -> Written {
        let turn = self.direct.as_ref().and_then(|_| writer.alone());
        let started = match (&self.direct, turn) {
            (Some(direct), Some(turn)) => direct
                .start((statement, turn, Arc::clone(writer)), write)
                .map_err(|(statement, turn, _)| (statement, Some(turn))),
            (_, turn) => Err((statement, turn)),
        };
        let answer = match started {
            Ok(answer) => answer,
            Err((statement, turn)) => {
                // No thread (or closed), or the writer not to itself: the
                // usual way, queued before any turn taken is given back.
                let queued = writer.submit(statement);
                drop(turn);
                return Box::pin(async move { Ok(queued.await?.map(AnyRow::Sqlite)) });
            }
        };
        let lost = self.lost_write();
        Box::pin(async move {
            match answer.await {
                Ok(Done::Kept(row)) => Ok(row.map(AnyRow::Direct)),
                Ok(Done::Queued(queued)) => Ok(queued.await?.map(AnyRow::Sqlite)),
                Err(_) => Err(lost),
            }
        })
    }

    /// A write whose thread stopped before it answered (the store closed
    /// meanwhile).
    fn lost_write(&self) -> Error {
        Error::Database {
            store: self.name.to_string(),
            detail: "the write connection was lost; retry".into(),
        }
    }
}

/// What a one-statement write's job is given: the statement, the writer's
/// turn it holds, and the committer to queue it for if it fails here.
type Given = (
    Statement,
    Turn<SqliteConnection>,
    Arc<GroupCommit<SqliteConnection>>,
);

/// Run the statement by itself in a transaction of its own, holding the
/// writer's turn; if anything fails (or panics), roll back and queue it
/// for sqlx's writer — before the turn is given back, so that whoever
/// takes the turn next (a closing store committing what is queued) finds
/// it.
fn write(connection: &mut Connection, (statement, turn, committer): Given) -> Done {
    let kept = super::rolled_back_unless_done(connection, |connection| {
        let run = |sql: &str| connection.prepare_cached(sql)?.execute([]);
        run("BEGIN IMMEDIATE").ok()?;
        let row = first_row(connection, &statement).ok()?;
        run("COMMIT").ok()?;
        Some(row)
    });
    if let Some(row) = kept {
        return Done::Kept(row);
    }
    let queued = committer.submit(statement);
    drop(turn);
    Done::Queued(Box::pin(queued))
}

/// The statement run, its first row read whole; a statement with a
/// [`ReadBack`] as that says.
fn first_row(
    connection: &Connection,
    statement: &Statement,
) -> rusqlite::Result<Option<DirectRow>> {
    let mut prepared = match statement.read_back {
        None => {
            let mut prepared = connection.prepare_cached(statement.sql)?;
            bind_numbered(&mut prepared, &statement.params)?;
            prepared
        }
        Some(back) => match read_back(connection, back, &statement.params)? {
            Some(read) => read,
            None => return Ok(None),
        },
    };
    let mut rows = prepared.raw_query();
    let first = rows.next()?.map(DirectRow::of).transpose()?;
    // The rest run too (an `UPDATE ... RETURNING` of several rows).
    while rows.next()?.is_some() {}
    Ok(first)
}

/// `back`'s write run on `connection` with `params`, and its read,
/// prepared and bound, when the write changed a row; `None` when it
/// changed none (as its `RETURNING` would have returned no row).
pub(crate) fn read_back<'c, V: ToSql>(
    connection: &'c Connection,
    back: ReadBack,
    params: &[V],
) -> rusqlite::Result<Option<CachedStatement<'c>>> {
    let mut write = connection.prepare_cached(back.write)?;
    bind_numbered(&mut write, params)?;
    if write.raw_execute()? == 0 {
        return Ok(None);
    }
    let mut read = connection.prepare_cached(back.read)?;
    bind_numbered(&mut read, params)?;
    Ok(Some(read))
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use serde_json::json;

    use crate::columns::Fields;
    use crate::direct::AnyRow;
    use crate::direct::testing::{by_sqlx, jobs, record, scratch_store, sqlite_writer};
    use crate::statement::Statement;
    use crate::{AskStatus, CallOutcome, CallState, Error, LedgerError, NewAsk, Settlement};

    fn ask(id: &str) -> NewAsk {
        NewAsk {
            id: id.to_owned(),
            resume_key: format!("mcp:{id}:confirm"),
            call_key: Some(format!("mcp:{id}:confirm")),
            principal: "alice".into(),
            request: json!({"message": "Delete?", "fields": []}),
            server: Some("files".into()),
            tool: Some("delete".into()),
            risk: Some("high_write".into()),
            created_at: at(),
            expires_at: None,
            panel: None,
        }
    }

    fn at() -> Timestamp {
        Timestamp::from_second(1_800_000_000).expect("an instant")
    }

    /// A confirmed call's writes, one after another with nothing else
    /// about — its ask, the answer, its record, its end — all run on the
    /// store's own thread, and read back as sqlx reads them.
    #[tokio::test]
    async fn a_calls_writes_one_after_another_all_run_on_the_stores_thread() {
        let (_dir, store) = scratch_store().await;
        let ask = ask("a1");
        let parked = store.park(&ask).await.expect("parks");
        assert_eq!(jobs(&store), 1, "parked on the thread");
        let answer = Settlement {
            status: AskStatus::Answered,
            reply: json!({"action": "accept", "content": {"confirm": true}}),
            outcome: json!({"outcome": "accepted"}),
            answered_by: Some("alice".into()),
            answered_via: "mcp".into(),
        };
        let settled = store.settle("a1", &answer, at()).await.expect("settles");
        assert_eq!(jobs(&store), 2, "answered on the thread");
        assert_eq!(
            Some(&settled),
            store.ask("a1").await.expect("reads").as_ref()
        );
        assert_eq!(settled.ask, parked.ask);
        assert_eq!(settled.status, AskStatus::Answered);

        record(&store, "c1", None).await;
        let result = json!({"content": [{"type": "text", "text": "deleted"}]});
        assert_eq!(jobs(&store), 3, "recorded on the thread");
        // Queued, not awaited: it is written all the same.
        drop(store.queue_finish_call("c1", CallOutcome::Answered, &result, at()));
        // The job is counted just after its commit is seen: wait for both.
        let mut row = store.call("c1").await.expect("reads").expect("recorded");
        for _ in 0..500 {
            if row.state != CallState::Sent && jobs(&store) == 4 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            row = store.call("c1").await.expect("reads").expect("recorded");
        }
        assert_eq!(row.state, CallState::Answered);
        assert_eq!(row.result, Some(result));
        assert_eq!(jobs(&store), 4, "ended on the thread");
        store.close().await;
    }

    /// A call's end on the thread moves it with a plain `UPDATE` and reads
    /// its row back by key: the row stored, as the sqlx way's `RETURNING`
    /// gives it; an end of a call no longer sent is refused naming where
    /// it stands, either way.
    #[tokio::test]
    async fn a_calls_end_on_the_thread_reads_back_the_row_it_moved() {
        let (_dir, store) = scratch_store().await;
        let sqlx_way = by_sqlx(&store);
        record(&store, "c1", None).await;
        record(&store, "c2", None).await;
        assert_eq!(jobs(&store), 2);
        let result = json!({"content": [{"type": "text", "text": "done"}]});
        let ended = store
            .finish_call("c1", CallOutcome::Answered, &result, at())
            .await
            .expect("ends");
        assert_eq!(jobs(&store), 3, "ended on the thread");
        let ended_by_sqlx = sqlx_way
            .finish_call("c2", CallOutcome::Failed, &result, at())
            .await
            .expect("ends");
        assert_eq!(jobs(&store), 3);
        for (row, id, state) in [
            (&ended, "c1", CallState::Answered),
            (&ended_by_sqlx, "c2", CallState::Failed),
        ] {
            assert_eq!(Some(row), store.call(id).await.expect("reads").as_ref());
            assert_eq!(row.state, state);
            assert_eq!(row.result.as_ref(), Some(&result));
        }
        for (way, id, state) in [(&store, "c1", "answered"), (&sqlx_way, "c2", "failed")] {
            let again = way
                .finish_call(id, CallOutcome::Answered, &result, at())
                .await;
            assert!(
                matches!(&again, Err(LedgerError::Illegal { state: s, .. }) if *s == state),
                "{id}: {again:?}"
            );
        }
        let missing = store
            .finish_call("none", CallOutcome::Answered, &result, at())
            .await;
        assert!(
            matches!(missing, Err(LedgerError::NotFound { .. })),
            "{missing:?}"
        );
        store.close().await;
    }

    /// Writes that come together share the committer's batches and stay
    /// there, on sqlx's connection; once the committer's batches are of
    /// one write again, a lone write goes to the thread.
    #[tokio::test]
    async fn writes_that_come_together_stay_together_in_the_committers_batches() {
        let (_dir, store) = scratch_store().await;
        let writer = sqlite_writer(&store);
        let insert = |id: &str| {
            Statement::new(
                "INSERT INTO kv (k, v) VALUES ($1, 'x') ON CONFLICT DO NOTHING",
                id,
            )
            .text(id)
        };
        let made = Statement::new("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)", "kv");
        store
            .submit_sqlite(writer, made)
            .await
            .expect("makes a table");
        assert_eq!(jobs(&store), 1);
        // Three at once: one batch of three.
        let together: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|id| writer.submit(insert(id)))
            .collect();
        for written in together {
            written.await.expect("written");
        }
        store
            .submit_sqlite(writer, insert("d"))
            .await
            .expect("written");
        assert_eq!(
            jobs(&store),
            1,
            "after a crowded batch, a write joins the next batch"
        );
        store
            .submit_sqlite(writer, insert("e"))
            .await
            .expect("written");
        assert_eq!(
            jobs(&store),
            2,
            "after a batch of one, a lone write goes to the thread"
        );
        store.close().await;
    }

    /// A statement that fails on the store's thread is rolled back there
    /// and queued for sqlx's writer, which names the failure as it names
    /// every failed write; the thread goes on.
    #[tokio::test]
    async fn a_write_that_fails_on_the_thread_fails_as_sqlx_says_and_the_thread_goes_on() {
        let (_dir, store) = scratch_store().await;
        let writer = sqlite_writer(&store);
        let wrong = Statement::new("INSERT INTO nowhere (id) VALUES ($1)", "x").text("x");
        let failed = store.submit_sqlite(writer, wrong).await;
        assert_eq!(jobs(&store), 1, "tried on the thread first");
        match failed {
            Err(Error::Database { detail, .. }) => {
                assert!(detail.contains("no such table: nowhere"), "{detail}");
            }
            other => panic!("expected a database error, got {other:?}"),
        }
        store.park(&ask("a1")).await.expect("parks after");
        assert!(store.ask("a1").await.expect("reads").is_some());
        let direct = store.direct.clone().expect("a store file has its thread");
        let answered = direct
            .start((), |connection, ()| connection.is_autocommit())
            .expect("the thread takes jobs")
            .await;
        assert_eq!(
            answered.ok(),
            Some(true),
            "the thread answers, no transaction left open"
        );
        store.close().await;
    }

    /// A column read as another type than it holds is a clear error
    /// naming the column, as sqlx's would be.
    #[tokio::test]
    async fn a_column_of_another_type_is_an_error_naming_it() {
        let (_dir, store) = scratch_store().await;
        let writer = sqlite_writer(&store);
        let read = Statement::new("SELECT 7 AS seven, 'x' AS text, NULL AS none", "r");
        let row = store
            .submit_sqlite(writer, read)
            .await
            .expect("runs")
            .expect("a row");
        assert!(
            matches!(row, AnyRow::Direct(_)),
            "read on the thread: {row:?}"
        );
        assert_eq!(row.number("seven").expect("a number"), Some(7));
        assert_eq!(row.text("text").expect("text"), Some("x".into()));
        assert_eq!(row.text("none").expect("NULL"), None);
        let wrong = row.text("seven").expect_err("a number is not text");
        assert!(wrong.to_string().contains("seven"), "{wrong}");
        let missing = row.number("absent").expect_err("no such column");
        assert!(missing.to_string().contains("absent"), "{missing}");
        store.close().await;
    }
}
