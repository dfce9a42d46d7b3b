//! A call's record with the writer to itself, in one trip to the store's
//! own SQLite thread (see [`crate::direct`]): the call's insert, and a read
//! of the call and of where the audit chain stands; its decision's entry
//! hashed onto the chain's head, and the head moved; the commit. The sqlx
//! way's statements, in one job instead of two commands and a commit, but
//! for its insert's `RETURNING`: SQLite keeps a `RETURNING`'s rows in a
//! temporary B-tree it opens and drops for each run (a page allocated and
//! zeroed, a transaction begun on it), where here the same row is one
//! `SELECT` by the call's key after a plain insert ([`ReadBack`]: 13,500
//! instructions fewer a record by callgrind). The row read is the one the sqlx way's insert
//! returns, its columns in the same order, read by the same code.

use std::sync::{Arc, OnceLock};

use rusqlite::Connection;

use super::CallRow;
use crate::audit::{Link, Place, append_entry_sql, place_columns};
use crate::audit_head::{move_head_sql, tag};
use crate::backend::{Store, Writer};
use crate::columns::{Columns, Stored};
use crate::direct::{Wanted, read_back, rolled_back_unless_done};
use crate::inline::{InlineRow, bind_numbered};
use crate::statement::{Param, ReadBack, Statement};

/// The call's insert without its `RETURNING` ([`insertion`]'s 13
/// parameters), then the row the sqlx way's insert returns: the call just
/// inserted and the chain's place for its entry (`$1` the call's id, `$14`
/// its decision key, as the insert's parameters number them).
///
/// [`insertion`]: super::insertion
const RECORD: ReadBack = ReadBack {
    write: insert_call_only!(),
    read: concat!(
        "SELECT ",
        call_columns!(),
        ", ",
        place_columns!("$14"),
        " FROM calls WHERE id = $1"
    ),
};

/// What the record's job needs, owned: it runs on another thread.
struct Record {
    /// The call's insert's parameters, and its decision key (`$14`).
    params: Vec<Param>,
    /// The entry's text, as chained.
    text: String,
    decision_key: Option<String>,
    audit_key: Arc<OnceLock<Vec<u8>>>,
    store: Arc<str>,
    wanted: Wanted,
}

impl Store {
    /// Record the call of `insert` (the sqlx way's lead, its `RETURNING`
    /// the call and the chain's place) with the entry `text` under
    /// `decision_key`, in one trip to the store's own SQLite thread, when
    /// the store has one and the writer is to itself, or will be once the
    /// write on that thread ends ([`GroupCommit::alone_after`](crate::writer::GroupCommit::alone_after)). `None`
    /// when it did
    /// not record it — another write is about; the call was recorded
    /// before (a retry: the sqlx way reads it back); any statement failed
    /// and was rolled back — and the caller records it the sqlx way.
    pub(super) async fn record_directly(
        &self,
        insert: &Statement,
        text: &str,
        decision_key: Option<&str>,
    ) -> Option<(CallRow, Link)> {
        let (Writer::Sqlite(writer), Some(direct)) = (&self.writer, &self.direct) else {
            return None;
        };
        let turn = writer.alone_after().await?;
        let (wanted, withdraw) = Wanted::new();
        let record = Record {
            // Bound again the sqlx way if this way fails.
            params: insert.params.clone(),
            text: text.to_owned(),
            decision_key: decision_key.map(str::to_owned),
            audit_key: Arc::clone(&self.audit_key),
            store: Arc::clone(&self.name),
            wanted,
        };
        // The turn is given back on the thread, once the record is done.
        let answer = direct.start((record, turn), |connection, (record, turn)| {
            let recorded = record.run(connection);
            drop(turn);
            recorded
        });
        let Ok(answer) = answer else {
            return None;
        };
        let recorded = answer.await;
        withdraw.disarm();
        recorded.ok().flatten()
    }
}

impl Record {
    /// Begin, write, commit: the call and the entry's link, once durable;
    /// `None`, nothing kept, when anything went otherwise (a panic too).
    fn run(self, connection: &mut Connection) -> Option<(CallRow, Link)> {
        rolled_back_unless_done(connection, |connection| {
            let statement = |sql: &str| connection.prepare_cached(sql)?.execute([]);
            statement("BEGIN IMMEDIATE").ok()?;
            let written = self.write(connection)?;
            // A caller that gave up waiting withdrew the record.
            if !self.wanted.still() {
                return None;
            }
            statement("COMMIT").ok()?;
            Some(written)
        })
    }

    /// The record's statements, in the transaction begun.
    fn write(&self, connection: &Connection) -> Option<(CallRow, Link)> {
        let (call, place) = {
            // Nothing inserted: the call was recorded before.
            let mut read = read_back(connection, RECORD, &self.params).ok()??;
            let mut rows = read.raw_query();
            let row = InlineRow::new(rows.next().ok()??);
            let columns = Columns::new(&row, &self.store, CallRow::WHAT);
            (CallRow::from_columns(&columns).ok()?, Place::of(&row).ok()?)
        };
        let last = match place {
            Place::Recorded(link) => return Some((call, link)),
            Place::After(last) => last,
        };
        let link = Link::after(last, &self.text);
        let signature = self
            .audit_key
            .get()
            .map(|key| tag(key, link.seq, &link.hash));
        // Numbered as the sqlx way's append binds them.
        let values: [&dyn rusqlite::ToSql; 6] = [
            &link.seq,
            &link.hash,
            &signature,
            &self.text,
            &link.prev_hash,
            &self.decision_key,
        ];
        for sql in [append_entry_sql!(), move_head_sql!()] {
            let mut statement = connection.prepare_cached(sql).ok()?;
            bind_numbered(&mut statement, &values).ok()?;
            statement.raw_execute().ok()?;
        }
        Some((call, link))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::Record;
    use crate::direct::Wanted;
    use crate::direct::testing::{
        by_sqlx, call, entry, jobs, record, scratch_store, sqlite_writer,
    };
    use crate::ledger::{CallState, insertion};
    use crate::{RecordedCall, Store};

    const KEY: &[u8] = b"the deployment's key";

    /// A call's record with the writer to itself is one job on the
    /// store's own thread, and records what the sqlx way records: the
    /// call as read back, its entry chained and the head signed, the
    /// chain taken up by either way where the other left it, an entry
    /// kept once per decision key.
    #[tokio::test]
    async fn a_lone_calls_record_is_one_job_on_the_stores_thread_and_records_as_the_sqlx_way() {
        let (_dir, store) = scratch_store().await;
        store.sign_audit_head(KEY);
        let sqlx_way = by_sqlx(&store);

        let first = record(&store, "c1", None).await;
        assert_eq!(jobs(&store), 1, "the record was one job");
        let second = record(&sqlx_way, "c2", None).await;
        let third = record(&store, "c3", Some("k")).await;
        assert_eq!(jobs(&store), 2);
        // The decision key's entry is kept once, whichever way.
        let again = record(&store, "c4", Some("k")).await;
        let again_by_sqlx = record(&sqlx_way, "c5", Some("k")).await;
        assert_eq!(jobs(&store), 3);

        let seqs: Vec<i64> = [&first, &second, &third, &again, &again_by_sqlx]
            .iter()
            .map(|recorded| recorded.audit.seq)
            .collect();
        assert_eq!(seqs, [1, 2, 3, 3, 3]);
        // The record carries the caller's entry at the place kept.
        let link = |recorded: &RecordedCall| {
            let audit = &recorded.audit;
            (audit.seq, audit.prev_hash.clone(), audit.hash.clone())
        };
        assert_eq!(link(&again), link(&third));
        assert_eq!(link(&again_by_sqlx), link(&third));
        let entries = store.audit_entries().await.expect("reads");
        assert_eq!(
            entries,
            [
                first.audit.clone(),
                second.audit.clone(),
                third.audit.clone()
            ]
        );
        for recorded in [&first, &second, &third, &again, &again_by_sqlx] {
            let stored = store.call(&recorded.call.call.id).await.expect("reads");
            assert_eq!(stored.as_ref(), Some(&recorded.call), "as read back");
            assert_eq!(recorded.call.state, CallState::Sent);
        }
        let verified = store
            .verify_audit_signed(&[KEY.to_vec()])
            .await
            .expect("verifies");
        assert_eq!((verified.entries, verified.broken), (3, None));
        assert_eq!(verified.head, third.audit.hash);
        store.close().await;
    }

    /// A call recorded before (a retry) comes back as recorded first: the
    /// thread finds no row to insert, keeps nothing, and the sqlx way
    /// reads the call back.
    #[tokio::test]
    async fn a_call_recorded_before_is_read_back_as_recorded_first() {
        let (_dir, store) = scratch_store().await;
        let first = record(&store, "c1", Some("k")).await;
        let call = call("c1");
        let retried = store
            .record_sent_call(&entry(&call, Some("k")), &call, "m-other", call.at)
            .await
            .expect("records");
        assert_eq!(jobs(&store), 2, "the retry went to the thread first");
        assert_eq!(retried, first);
        assert_eq!(retried.call.marker.as_deref(), Some("m-c1"));
        assert_eq!(store.audit_entries().await.expect("reads").len(), 1);
        store.close().await;
    }

    /// A record that finds another write holding the writer waits its
    /// turn and joins the batch the sqlx way, not the thread's.
    #[tokio::test]
    async fn a_record_while_another_write_holds_the_writer_goes_the_sqlx_way() {
        let (_dir, store) = scratch_store().await;
        let writer = sqlite_writer(&store);
        let held = writer.begin().await.expect("takes the writer");
        let recording = tokio::spawn({
            let store = store.clone();
            async move { record(&store, "c1", None).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!recording.is_finished(), "the record waits for the writer");
        held.finish(Ok::<_, crate::Error>(()))
            .await
            .expect("commits");
        let recorded = recording.await.expect("records");
        assert_eq!(jobs(&store), 0, "no job on the thread");
        assert_eq!(store.call("c1").await.expect("reads"), Some(recorded.call));
        store.close().await;
    }

    /// A record that finds a write on the store's thread holding the
    /// writer, and nothing else about, waits and follows it there: one
    /// job, not a batch of sqlx's behind it. One follows at a time: a
    /// second record meanwhile goes the sqlx way. Both are kept.
    #[tokio::test]
    async fn a_record_behind_a_write_on_the_stores_thread_follows_it_there() {
        let (_dir, store) = scratch_store().await;
        let writer = sqlite_writer(&store);
        // As a write on the thread holds it (the call before's end).
        let on_thread = writer.alone().expect("the writer is idle");
        let spawn_record = |id: &'static str| {
            let store = store.clone();
            tokio::spawn(async move { record(&store, id, None).await })
        };
        let following = spawn_record("c1");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let behind = spawn_record("c2");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!following.is_finished() && !behind.is_finished());
        assert_eq!(jobs(&store), 0, "nothing ran while the turn was held");
        drop(on_thread);
        let first = following.await.expect("records");
        let second = behind.await.expect("records");
        assert_eq!(jobs(&store), 1, "the first followed on the thread");
        assert_eq!(store.call("c1").await.expect("reads"), Some(first.call));
        assert_eq!(store.call("c2").await.expect("reads"), Some(second.call));
        assert_eq!(
            (first.audit.seq, second.audit.seq),
            (1, 2),
            "chained in the order they had the writer"
        );
        // Writes go on the thread again once it is idle.
        record_then_read(&store).await;
        assert_eq!(jobs(&store), 2);
        store.close().await;
    }

    /// A record whose caller gave up waiting before its commit keeps
    /// nothing: neither the call nor its entry.
    #[tokio::test]
    async fn a_record_its_caller_withdrew_keeps_nothing() {
        let (_dir, store) = scratch_store().await;
        let call = call("c1");
        let insert =
            insertion(&call, CallState::Sent, Some("m-1"), Some(call.at), None).opt_text(None);
        let (wanted, withdraw) = Wanted::new();
        drop(withdraw);
        let record = Record {
            params: insert.params,
            text: store.audit_text(&entry(&call, None)).expect("a text"),
            decision_key: None,
            audit_key: Arc::clone(&store.audit_key),
            store: Arc::clone(&store.name),
            wanted,
        };
        let direct = store.direct.clone().expect("a store file has its thread");
        let Ok(ran) = direct.start(record, |connection, record| record.run(connection)) else {
            panic!("the thread takes jobs");
        };
        let ran = ran.await;
        assert!(matches!(ran, Ok(None)), "ran, and kept nothing");
        assert_eq!(store.call("c1").await.expect("reads"), None);
        assert!(store.audit_entries().await.expect("reads").is_empty());
        // The thread is sound after the rollback.
        record_then_read(&store).await;
        store.close().await;
    }

    async fn record_then_read(store: &Store) {
        let recorded = record(store, "c2", None).await;
        assert_eq!(store.call("c2").await.expect("reads"), Some(recorded.call));
    }
}
