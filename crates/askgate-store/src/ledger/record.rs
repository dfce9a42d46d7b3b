//! Calls recorded in one write with the decision that let them through:
//! as sent before the request leaves, or as ended after the fact, one or
//! many at a time.

use std::sync::Arc;

use jiff::Timestamp;
use sqlx::Row;

use super::{CallEnd, CallRow, CallState, EndedCall, NewCall, RecordedCall, by_id, insertion};
use crate::audit::{AuditEntry, Place, append_at, append_entry, place_columns, place_in};
use crate::backend::{Store, Writer, with_writer};
use crate::columns::Stored;
use crate::columns::micros;
use crate::error::Error;

/// A call to record with the audit entry of the decision that let it
/// through: sent with `marker` at `sent_at`, ended as `end` if it has.
#[derive(Clone, Copy)]
struct Recording<'a> {
    entry: &'a AuditEntry,
    call: &'a NewCall,
    marker: &'a str,
    sent_at: Timestamp,
    end: Option<&'a CallEnd>,
}

impl<'a> Recording<'a> {
    fn new(
        entry: &'a AuditEntry,
        call: &'a NewCall,
        marker: &'a str,
        sent_at: Timestamp,
        end: Option<&'a CallEnd>,
    ) -> Recording<'a> {
        Recording {
            entry,
            call,
            marker,
            sent_at,
            end,
        }
    }
}

/// The insert of a call recorded with its decision's entry: its
/// `RETURNING` says too where the audit chain stands for the entry ($14:
/// its decision key), so the append reads nothing of its own. On SQLite
/// the whole record is then three trips to the connection's thread (the
/// batch's `BEGIN` with this insert, the entry with the chain head's move,
/// `COMMIT`), not four.
pub(super) const INSERT_CALL_AT_CHAIN: &str = concat!(insert_call!(), ", ", place_columns!("$14"));

/// The most calls [`Store::record_ended_calls`] writes in one statement
/// (13 values each, well under SQLite's 32,766).
const CHUNK: usize = 256;

impl Store {
    /// Record `call` as `sent` with its private `marker`, and append the
    /// audit `entry` of the decision that let it through, in one write:
    /// both or neither are kept. Returns once both are durable. Recording
    /// the same id twice keeps the call recorded first (and `entry`'s
    /// `decision_key` keeps the entry recorded first, as
    /// [`Store::append_audit`] does).
    ///
    /// Send the request only after this returns: a crash after it and
    /// before the send leaves a call that never left, and recovery reports
    /// it `may_have_run` — never re-sent silently.
    ///
    /// # Errors
    /// [`Error`] when the store fails (after retrying a lost race with a
    /// concurrent audit appender).
    pub async fn record_sent_call(
        &self,
        entry: &AuditEntry,
        call: &NewCall,
        marker: &str,
        sent_at: Timestamp,
    ) -> Result<RecordedCall, Error> {
        let recording = Recording::new(entry, call, marker, sent_at, None);
        self.record_call(recording).await
    }

    /// [`Store::record_sent_call`] after the fact: the call as it ended
    /// (`answered` or `failed`, with `end`'s result), for a caller that did
    /// not need it recorded before sending it. One write instead of two.
    ///
    /// # Errors
    /// As [`Store::record_sent_call`].
    pub async fn record_ended_call(
        &self,
        entry: &AuditEntry,
        call: &NewCall,
        marker: &str,
        sent_at: Timestamp,
        end: &CallEnd,
    ) -> Result<RecordedCall, Error> {
        let recording = Recording::new(entry, call, marker, sent_at, Some(end));
        self.record_call(recording).await
    }

    async fn record_call(&self, recording: Recording<'_>) -> Result<RecordedCall, Error> {
        let text = self.audit_text(recording.entry)?;
        let mut last_error = None;
        for _ in 0..50 {
            match self.try_record(&text, &recording).await {
                Ok(recorded) => return Ok(recorded),
                // No race to win while the server is out of reach.
                Err(error @ Error::Unavailable { .. }) => return Err(error),
                Err(error) => last_error = Some(error),
            }
            tokio::task::yield_now().await;
        }
        Err(last_error.unwrap_or_else(|| Error::Database {
            store: self.name.to_string(),
            detail: "could not record the call".into(),
        }))
    }

    async fn try_record(
        &self,
        text: &str,
        recording: &Recording<'_>,
    ) -> Result<RecordedCall, Error> {
        let Recording {
            entry,
            call,
            marker,
            sent_at,
            end,
        } = *recording;
        let state = end.map_or(CallState::Sent, |end| end.outcome.state());
        let key = entry.decision_key.as_deref();
        // The call first: on PostgreSQL, where each statement commits by
        // itself, a retry after a lost race for the chain's next place
        // finds the call recorded and appends the entry once. On SQLite
        // its insert begins the batch, in one trip to the connection.
        let mut insert = insertion(call, state, Some(marker), Some(sent_at), end).opt_text(key);
        insert.sql = INSERT_CALL_AT_CHAIN;
        if let Some((row, link)) = self.record_directly(&insert, text, key).await {
            return Ok(RecordedCall {
                audit: link.record(entry),
                call: row,
            });
        }
        with_writer!(self, lead = insert, write, |inserted| {
            let alone = write.alone();
            let conn = write.conn()?;
            // Inserted now, the chain's place came with it; recorded
            // before (a retry), it is read.
            let place = inserted
                .as_ref()
                .map(|row| place_in!(self, row))
                .transpose()?;
            let row = inserted_call!(self, conn, inserted, &call.id).await?;
            // Alone in its batch, the write ends with the append's command
            // (which then commits), when it appends.
            let commits = alone && matches!(place, Some(Place::After(_)));
            let chained = match place {
                Some(place) => append_at!(self, conn, text, key, place, commit = commits)?,
                None => append_entry!(self, conn, text, key)?,
            };
            if commits {
                write.committed();
            }
            Ok::<_, Error>(RecordedCall {
                audit: chained.record(entry),
                call: row,
            })
        })
    }

    /// [`Store::record_ended_call`] for each of `calls`. On SQLite they are
    /// one write — one transaction, one commit — so many calls cost about
    /// what one does: one job on the store's own thread when the writer is
    /// to itself, else a few commands in sqlx's batch; if that write fails,
    /// each is recorded by itself (with its own retries). On PostgreSQL,
    /// one after another.
    ///
    /// `calls` are shared, not copied, with the store's thread: a caller
    /// that keeps them (to try again once an unreachable store is back)
    /// passes an `Arc` it holds a clone of.
    ///
    /// # Errors
    /// The first call that could not be recorded (the ones before it are).
    pub async fn record_ended_calls(
        &self,
        calls: impl Into<Arc<[EndedCall]>>,
    ) -> Result<(), Error> {
        let calls: Arc<[EndedCall]> = calls.into();
        // Entries with a decision key are appended once per key, which
        // takes a look at the chain each: those go one by one.
        let keyless = calls.iter().all(|c| c.entry.decision_key.is_none());
        if matches!(self.writer, Writer::Sqlite(_)) && calls.len() > 1 && keyless {
            let texts = calls
                .iter()
                .map(|ended| self.audit_text(&ended.entry))
                .collect::<Result<Vec<_>, _>>();
            // An entry that has no text is named by its own record below.
            let gathered = match texts {
                Ok(texts) => {
                    self.record_gathered_directly(Arc::clone(&calls), texts)
                        .await
                }
                Err(_) => false,
            };
            if gathered || self.record_together(&calls).await.is_ok() {
                return Ok(());
            }
        }
        for ended in calls.iter() {
            self.record_ended_call(
                &ended.entry,
                &ended.call,
                &ended.marker,
                ended.sent_at,
                &ended.end,
            )
            .await?;
        }
        Ok(())
    }

    /// Every call of `calls` and its entry in one SQLite write. Three
    /// statements per chunk, whatever its size: every statement is a hop
    /// to the SQLite thread and back.
    async fn record_together(&self, calls: &[EndedCall]) -> Result<(), Error> {
        let texts = calls
            .iter()
            .map(|ended| self.audit_text(&ended.entry))
            .collect::<Result<Vec<_>, _>>()?;
        with_writer!(self, |conn| {
            for (calls, texts) in calls.chunks(CHUNK).zip(texts.chunks(CHUNK)) {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO calls (id, owner, server, tool, arguments_digest, state, \
                     marker, prepared_at, sent_at, finished_at, result, principal, request) ",
                );
                insert.push_values(calls, |mut row, ended| {
                    let state = ended.end.outcome.state();
                    row.push_bind(&ended.call.id)
                        .push_bind(&ended.call.owner)
                        .push_bind(&ended.call.server)
                        .push_bind(&ended.call.tool)
                        .push_bind(&ended.call.arguments_digest)
                        .push_bind(state.as_str())
                        .push_bind(&ended.marker)
                        .push_bind(micros(ended.call.at))
                        .push_bind(micros(ended.sent_at))
                        .push_bind(micros(ended.end.at))
                        .push_bind(ended.end.result.to_string())
                        .push_bind(&ended.call.principal)
                        .push_bind(&ended.call.request);
                });
                insert.push(" ON CONFLICT DO NOTHING");
                insert
                    .build()
                    .execute(&mut *conn)
                    .await
                    .map_err(|e| self.fail(e))?;
                let last = sqlx::query("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(|e| self.fail(e))?;
                let (mut seq, mut prev) = match last {
                    Some(row) => (
                        row.try_get::<i64, _>("seq").map_err(|e| self.fail(e))?,
                        row.try_get::<String, _>("hash").map_err(|e| self.fail(e))?,
                    ),
                    None => (0, crate::audit::GENESIS.to_owned()),
                };
                let mut chained = Vec::with_capacity(texts.len());
                for text in texts {
                    seq += 1;
                    let hash = crate::audit_head::chain_hash(&prev, seq, text);
                    chained.push((seq, text, std::mem::replace(&mut prev, hash.clone()), hash));
                }
                let mut append = sqlx::QueryBuilder::new(
                    "INSERT INTO audit (seq, entry, prev_hash, hash, decision_key) ",
                );
                append.push_values(&chained, |mut row, (seq, text, prev, hash)| {
                    row.push_bind(*seq)
                        .push_bind(text.as_str())
                        .push_bind(prev.as_str())
                        .push_bind(hash.as_str())
                        .push_bind(None::<String>);
                });
                append
                    .build()
                    .execute(&mut *conn)
                    .await
                    .map_err(|e| self.fail(e))?;
                crate::audit_head::move_head!(self, conn, seq, &prev);
            }
            Ok::<_, Error>(())
        })
    }
}
