//! Ended calls recorded together (the reads a gateway gathers, see
//! [`Store::record_ended_calls`]) in one job on the store's own SQLite
//! thread, when the writer is to itself: every call's insert, the chain's
//! head read once, every entry hashed onto it, the head moved, the
//! commit. The sqlx way runs the same statements as a few multi-row
//! commands, each a trip to sqlx's thread, with every value bound on the
//! runtime's thread first; here each row is bound from the calls as they
//! are, to statements prepared once.

use std::sync::{Arc, OnceLock};

use rusqlite::{Connection, OptionalExtension, ToSql};

use super::EndedCall;
use crate::audit::{Link, append_entry_sql};
use crate::audit_head::{move_head_sql, tag};
use crate::backend::{Store, Writer};
use crate::columns::micros;
use crate::direct::rolled_back_unless_done;
use crate::inline::{bind_by, bind_numbered, numbering};

/// The insert of an ended call; one recorded before (a retry) stays as
/// it is.
const INSERT_ENDED: &str = insert_call_only!();

/// Where the chain stands: its last entry.
const CHAIN_TAIL: &str = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1";

/// What the job needs, owned: it runs on another thread.
struct Gathered {
    calls: Arc<[EndedCall]>,
    /// Each call's entry, as chained.
    texts: Vec<String>,
    audit_key: Arc<OnceLock<Vec<u8>>>,
}

impl Store {
    /// Record `calls` (ended, their entries without decision keys, their
    /// `texts` as chained) in one job on the store's own thread, when the
    /// store has one and the writer is to itself: `true` once durable;
    /// `false` when nothing was kept (another write is about, or a
    /// statement failed and was rolled back) and the caller records them
    /// the sqlx way.
    pub(super) async fn record_gathered_directly(
        &self,
        calls: Arc<[EndedCall]>,
        texts: Vec<String>,
    ) -> bool {
        let (Writer::Sqlite(writer), Some(direct)) = (&self.writer, &self.direct) else {
            return false;
        };
        let Some(turn) = writer.alone() else {
            return false;
        };
        let gathered = Gathered {
            calls,
            texts,
            audit_key: Arc::clone(&self.audit_key),
        };
        // The turn is given back on the thread, once the write is done.
        let answer = direct.start((gathered, turn), |connection, (gathered, turn)| {
            let kept = rolled_back_unless_done(connection, |connection| gathered.run(connection));
            drop(turn);
            kept.is_some()
        });
        match answer {
            Ok(answer) => answer.await.unwrap_or(false),
            Err(_) => false,
        }
    }
}

impl Gathered {
    /// Begin, write, commit: `Some` once durable; `None` when a statement
    /// failed (the caller rolls back).
    fn run(&self, connection: &mut Connection) -> Option<()> {
        connection
            .prepare_cached("BEGIN IMMEDIATE")
            .ok()?
            .execute([])
            .ok()?;
        self.write(connection).ok()?;
        connection.prepare_cached("COMMIT").ok()?.execute([]).ok()?;
        Some(())
    }

    /// The calls, their entries and the head's move, in the transaction
    /// begun.
    fn write(&self, connection: &Connection) -> rusqlite::Result<()> {
        let mut insert = connection.prepare_cached(INSERT_ENDED)?;
        let numbers = numbering(&insert, 13)?;
        for ended in self.calls.iter() {
            let (call, end) = (&ended.call, &ended.end);
            let result = end.result.to_string();
            let values: [&dyn ToSql; 13] = [
                &call.id,
                &call.owner,
                &call.server,
                &call.tool,
                &call.arguments_digest,
                &end.outcome.state().as_str(),
                &ended.marker,
                &micros(call.at),
                &micros(ended.sent_at),
                &micros(end.at),
                &result,
                &call.principal,
                &call.request,
            ];
            bind_by(&mut insert, &numbers, &values)?;
            insert.raw_execute()?;
        }
        let mut last = connection
            .prepare_cached(CHAIN_TAIL)?
            .query_row([], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
            })
            .optional()?;
        let mut append = connection.prepare_cached(append_entry_sql!())?;
        let numbers = numbering(&append, 6)?;
        let mut head = None;
        for text in &self.texts {
            let link = Link::after(last.take(), text);
            // Numbered as the sqlx way's append binds them; no signature
            // on an entry, and no decision key.
            let values: [&dyn ToSql; 6] = [
                &link.seq,
                &link.hash,
                &None::<String>,
                text,
                &link.prev_hash,
                &None::<String>,
            ];
            bind_by(&mut append, &numbers, &values)?;
            append.raw_execute()?;
            last = Some((link.seq, link.hash.clone()));
            head = Some(link);
        }
        if let Some(link) = head {
            let signature = self
                .audit_key
                .get()
                .map(|key| tag(key, link.seq, &link.hash));
            let values: [&dyn ToSql; 3] = [&link.seq, &link.hash, &signature];
            let mut moved = connection.prepare_cached(move_head_sql!())?;
            bind_numbered(&mut moved, &values)?;
            moved.raw_execute()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use serde_json::json;

    use crate::direct::testing::{by_sqlx, call, entry, jobs, scratch_store, sqlite_writer};
    use crate::{CallEnd, CallOutcome, EndedCall, Store};

    const KEY: &[u8] = b"the deployment's key";

    /// Reads `r{from}`.. `r{from + 4}` as they ended, the fourth failed.
    fn ended(from: usize) -> Vec<EndedCall> {
        (from..from + 5)
            .map(|i| {
                let call = call(&format!("r{i}"));
                EndedCall {
                    entry: entry(&call, None),
                    marker: format!("m-{i}"),
                    sent_at: Timestamp::from_second(1_800_000_001).expect("an instant"),
                    end: CallEnd {
                        outcome: if i % 5 == 3 {
                            CallOutcome::Failed
                        } else {
                            CallOutcome::Answered
                        },
                        result: json!({"blocks": i}),
                        at: Timestamp::from_second(1_800_000_002).expect("an instant"),
                    },
                    call,
                }
            })
            .collect()
    }

    /// Every call `r0`..`r{n - 1}` as read back, and the chain's entries
    /// with their places and hashes.
    async fn kept(store: &Store, n: usize) -> (Vec<crate::CallRow>, Vec<crate::AuditRecord>) {
        let mut rows = Vec::new();
        for i in 0..n {
            let row = store.call(&format!("r{i}")).await.expect("reads");
            rows.push(row.expect("recorded"));
        }
        (rows, store.audit_entries().await.expect("reads"))
    }

    /// Reads gathered are one job on the store's thread, and keep what the
    /// sqlx way keeps, to the column and the chain's hash: the same calls
    /// recorded by either way, in a store of each, read back the same,
    /// and either way takes the chain up where the other left it.
    #[tokio::test]
    async fn gathered_reads_are_one_job_on_the_stores_thread_and_keep_what_the_sqlx_way_keeps() {
        let (_a, threaded) = scratch_store().await;
        let (_b, plain) = scratch_store().await;
        let plain = by_sqlx(&plain);
        for store in [&threaded, &plain] {
            store.sign_audit_head(KEY);
        }

        threaded
            .record_ended_calls(ended(0))
            .await
            .expect("records");
        assert_eq!(jobs(&threaded), 1, "five calls, one job");
        by_sqlx(&threaded)
            .record_ended_calls(ended(5))
            .await
            .expect("records");
        threaded
            .record_ended_calls(ended(10))
            .await
            .expect("records");
        assert_eq!(jobs(&threaded), 2);
        for from in [0, 5, 10] {
            plain
                .record_ended_calls(ended(from))
                .await
                .expect("records");
        }

        let (rows, entries) = kept(&threaded, 15).await;
        assert_eq!((rows.clone(), entries.clone()), kept(&plain, 15).await);
        assert_eq!(entries.len(), 15);
        assert_eq!(rows[3].state, crate::CallState::Failed);
        assert_eq!(rows[4].state, crate::CallState::Answered);
        assert_eq!(rows[4].result, Some(json!({"blocks": 4})));
        for store in [&threaded, &plain] {
            let verified = store
                .verify_audit_signed(&[KEY.to_vec()])
                .await
                .expect("verifies");
            assert_eq!((verified.entries, verified.broken), (15, None));
            assert_eq!(verified.head, entries[14].hash, "the signed head moved");
        }
        threaded.close().await;
        plain.close().await;
    }

    /// Reads gathered while another write holds the writer wait their turn
    /// and go the sqlx way, all kept.
    #[tokio::test]
    async fn gathered_reads_while_another_write_holds_the_writer_go_the_sqlx_way() {
        let (_dir, store) = scratch_store().await;
        let held = sqlite_writer(&store)
            .begin()
            .await
            .expect("takes the writer");
        let recording = tokio::spawn({
            let store = store.clone();
            async move { store.record_ended_calls(ended(0)).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!recording.is_finished(), "the records wait for the writer");
        held.finish(Ok::<_, crate::Error>(()))
            .await
            .expect("commits");
        recording.await.expect("runs").expect("records");
        assert_eq!(jobs(&store), 0, "no job on the thread");
        let (rows, entries) = kept(&store, 5).await;
        assert_eq!((rows.len(), entries.len()), (5, 5));
        store.close().await;
    }

    /// A statement that fails half-way through the job leaves nothing of
    /// it: the calls go the sqlx way, each kept once and chained once, and
    /// the thread goes on with no transaction open.
    #[tokio::test]
    async fn gathered_reads_the_thread_failed_on_are_kept_once_the_sqlx_way() {
        let (_dir, store) = scratch_store().await;
        let direct = store.direct.clone().expect("a store file has its thread");
        // Only the thread's connection refuses the third call.
        let refusing = direct
            .start((), |connection, ()| {
                connection.execute_batch(
                    "CREATE TEMP TRIGGER refuse_r2 BEFORE INSERT ON main.calls \
                     WHEN NEW.id = 'r2' BEGIN SELECT RAISE(ABORT, 'refused'); END",
                )
            })
            .expect("the thread takes jobs");
        refusing.await.expect("answers").expect("makes the trigger");

        store.record_ended_calls(ended(0)).await.expect("records");
        assert_eq!(jobs(&store), 2, "the trigger's job, then the failed one");
        let (rows, entries) = kept(&store, 5).await;
        assert_eq!((rows.len(), entries.len()), (5, 5), "each kept once");
        let verified = store.verify_audit().await.expect("verifies");
        assert_eq!((verified.entries, verified.broken), (5, None));
        let open = direct
            .start((), |connection, ()| connection.is_autocommit())
            .expect("the thread takes jobs")
            .await;
        assert_eq!(open.ok(), Some(true), "no transaction left open");
        store.close().await;
    }
}
