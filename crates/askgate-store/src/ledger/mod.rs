//! The tool-call ledger: every upstream call is recorded before it is sent
//! (`prepared`), when the transport takes it (`sent`, with its private
//! marker), and when it is answered or fails. After a crash, a `prepared`
//! call was never sent (safe to send); a `sent` call without an answer
//! becomes `may_have_run` and is never re-sent automatically.
//!
//! A caller that sends at once records the call straight as `sent`, with
//! the audit entry of the decision that let it through, in one write
//! ([`Store::record_sent_call`]): one durable commit before the request
//! leaves instead of three. A crash between that commit and the send makes
//! a call that never left `may_have_run` — the conservative side. The end
//! of a call can be queued without waiting ([`Store::queue_finish_call`]).

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use std::future::Future;
use std::pin::Pin;

use crate::audit::{AuditEntry, AuditRecord};
use crate::backend::{Store, Writer, with_writer};
use crate::columns::{Columns, Fields, Stored, micros};
use crate::error::{Error, LedgerError};
use crate::statement::Statement;

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallState {
    /// Recorded, not yet handed to the transport.
    Prepared,
    /// Handed to the transport; no answer yet.
    Sent,
    /// The upstream answered.
    Answered,
    /// The call failed (the transport or the upstream said so).
    Failed,
    /// Sent before a crash and never answered: it may have run.
    MayHaveRun,
    /// Its caller cancelled it before it was sent: it did not run.
    Cancelled,
}

/// How a call ended, as [`Store::finish_call`] and [`CallEnd`] take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallOutcome {
    /// The upstream answered (an error result is an answer).
    Answered,
    /// The upstream refused it (a JSON-RPC error), or the call was not
    /// sent for a reason other than its caller's cancel.
    Failed,
    /// It was sent and no answer came back — its connection or its server
    /// failed, or its caller gave up on it while its server worked: it may
    /// have run. The call is left `may_have_run`, and a retry of it is told
    /// so ([`Store::may_have_run`]).
    Unanswered,
    /// Its caller cancelled it before it was sent.
    Cancelled,
}

impl CallOutcome {
    /// The state a call that ended so is in.
    pub fn state(self) -> CallState {
        match self {
            CallOutcome::Answered => CallState::Answered,
            CallOutcome::Failed => CallState::Failed,
            CallOutcome::Unanswered => CallState::MayHaveRun,
            CallOutcome::Cancelled => CallState::Cancelled,
        }
    }
}

impl CallState {
    /// The state as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            CallState::Prepared => "prepared",
            CallState::Sent => "sent",
            CallState::Answered => "answered",
            CallState::Failed => "failed",
            CallState::MayHaveRun => "may_have_run",
            CallState::Cancelled => "cancelled",
        }
    }

    fn parse(text: &str) -> Option<CallState> {
        [
            CallState::Prepared,
            CallState::Sent,
            CallState::Answered,
            CallState::Failed,
            CallState::MayHaveRun,
            CallState::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// A call to record before it is sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewCall {
    /// Its id (made by the caller).
    pub id: String,
    /// The process (gateway replica) that sends it; recovery after a crash
    /// touches only that owner's calls.
    pub owner: String,
    /// The upstream server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// A keyed digest of the arguments (never the arguments).
    pub arguments_digest: Option<String>,
    /// Who made the call (a principal's name), when known: with the tool
    /// and the digest, what finds it again for a retry.
    pub principal: Option<String>,
    /// The client's request it was made in, when a sealed `requestState`
    /// can name it again (a multi round-trip request's id).
    pub request: Option<String>,
    /// When it was prepared.
    pub at: Timestamp,
}

/// How a call ended, for [`Store::record_ended_call`].
#[derive(Debug, Clone, PartialEq)]
pub struct CallEnd {
    /// How it ended.
    pub outcome: CallOutcome,
    /// The result or the failure (a summary: never the arguments).
    pub result: Json,
    /// When it ended.
    pub at: Timestamp,
}

/// A call as it ended, with its decision's audit entry: one of the calls
/// [`Store::record_ended_calls`] writes together.
#[derive(Debug, Clone, PartialEq)]
pub struct EndedCall {
    /// The decision's audit entry.
    pub entry: AuditEntry,
    /// The call.
    pub call: NewCall,
    /// Its replay-contract marker.
    pub marker: String,
    /// When it was sent.
    pub sent_at: Timestamp,
    /// How it ended.
    pub end: CallEnd,
}

/// A recorded call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRow {
    /// The call as prepared.
    #[serde(flatten)]
    pub call: NewCall,
    /// Where it stands.
    pub state: CallState,
    /// The private marker it was sent with.
    pub marker: Option<String>,
    /// The result or failure, once known.
    pub result: Option<Json>,
    /// When it was sent, once it was.
    pub sent_at: Option<Timestamp>,
    /// When it ended (or was found to have been left `sent` by a process
    /// that stopped), once it has.
    pub finished_at: Option<Timestamp>,
}

/// The columns of a call, in the order [`Store::read_call`] reads them.
macro_rules! call_columns {
    () => {
        "id, owner, server, tool, arguments_digest, state, marker, prepared_at, result, \
         sent_at, finished_at, principal, request"
    };
}

/// A call recorded as sent or as ended, with the audit entry of the
/// decision that let it through (see [`Store::record_sent_call`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// The decision's entry, as chained.
    pub audit: AuditRecord,
    /// The call, as recorded.
    pub call: CallRow,
}

/// The move of [`FINISH`], returning nothing.
macro_rules! finish_only {
    () => {
        "UPDATE calls SET state = $1, result = $2, finished_at = $3 \
         WHERE id = $4 AND state = 'sent'"
    };
}

/// The ledger's insert of a new call (13 parameters, as [`insertion`]
/// binds them); a call recorded before (a retry) stays as it is.
macro_rules! insert_call_only {
    () => {
        "INSERT INTO calls (id, owner, server, tool, arguments_digest, state, marker, \
         prepared_at, sent_at, finished_at, result, principal, request) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
         ON CONFLICT DO NOTHING"
    };
}

/// [`insert_call_only!`], returning the call.
macro_rules! insert_call {
    () => {
        concat!(insert_call_only!(), " RETURNING ", call_columns!())
    };
}

/// The ledger's insert of a new call.
const INSERT_CALL: &str = insert_call!();

const CALL_BY_ID: &str = concat!("SELECT ", call_columns!(), " FROM calls WHERE id = $1");

/// `sent -> answered | failed`, one statement (run by the group committer).
const FINISH: &str = concat!(finish_only!(), " RETURNING ", call_columns!());

/// [`FINISH`] without its `RETURNING`, and the read of the row it moved:
/// its form on the store's own SQLite thread (see [`ReadBack`]).
///
/// [`ReadBack`]: crate::statement::ReadBack
const FINISH_ONLY: &str = finish_only!();
/// The row [`FINISH_ONLY`] moved (`$4` its id).
const FINISHED: &str = concat!("SELECT ", call_columns!(), " FROM calls WHERE id = $4");

/// The one guarded move of the ledger (see [`Store::move_call`]).
const MOVE: &str = concat!(
    "UPDATE calls SET state = $1, marker = COALESCE($2, marker), result = COALESCE($3, result), \
     sent_at = CASE WHEN $1 = 'sent' THEN $4 ELSE sent_at END, \
     finished_at = CASE WHEN $1 = 'sent' THEN finished_at ELSE $4 END \
     WHERE id = $5 AND state = $6 RETURNING ",
    call_columns!()
);

/// The row of the call `$id` once [`INSERT_CALL`] (a [`Statement`] of
/// [`insertion`], the write's lead) ran and returned `$inserted`: that row,
/// or, when the call was there already (recorded before: the recorded call
/// stands), that call, read back on `$conn`.
macro_rules! inserted_call {
    ($store:expr, $conn:ident, $inserted:expr, $id:expr) => {
        async {
            let row = match $inserted {
                Some(row) => row,
                None => by_id($id)
                    .fetch_optional(&mut *$conn)
                    .await
                    .and_then(|row| row.ok_or(sqlx::Error::RowNotFound))
                    .map_err(|e| $store.fail(e))?,
            };
            CallRow::read($store, &row)
        }
    };
}

mod direct;
mod gathered;
mod owners;
mod record;
mod retries;

#[cfg(test)]
pub(crate) use owners::RECOVER_LAPSED;
#[cfg(test)]
pub(crate) use retries::OF_REQUEST;
pub(crate) use retries::may_have_run_sql;
pub use retries::{Retried, Retry};

/// What [`Store::queue_finish_call`] returns: the move's outcome, once the
/// batch it joined is durable.
pub type Finishing = Pin<Box<dyn Future<Output = Result<CallRow, LedgerError>> + Send>>;

/// The insert of `call` as it stands: `state`, sent with `marker` at
/// `sent_at` (once sent), ended as `end` (once ended).
fn insertion(
    call: &NewCall,
    state: CallState,
    marker: Option<&str>,
    sent_at: Option<Timestamp>,
    end: Option<&CallEnd>,
) -> Statement {
    Statement::new(INSERT_CALL, &call.id)
        .text(call.id.as_str())
        .text(call.owner.as_str())
        .text(call.server.as_str())
        .text(call.tool.as_str())
        .opt_text(call.arguments_digest.as_deref())
        .text(state.as_str())
        .opt_text(marker)
        .int(micros(call.at))
        .opt_int(sent_at.map(micros))
        .opt_int(end.map(|end| micros(end.at)))
        .opt_text(end.map(|end| end.result.to_string()).as_deref())
        .opt_text(call.principal.as_deref())
        .opt_text(call.request.as_deref())
}

/// The outcome of the move to `state` of the call `id`, once the write of
/// it (`written`) is durable: the row it returned, or why there is none.
fn finishing<F, R>(store: Store, id: String, state: CallState, written: F) -> Finishing
where
    F: Future<Output = Result<Option<R>, Error>> + Send + 'static,
    R: Fields,
{
    Box::pin(async move {
        let row = written.await?;
        let moved = row.map(|row| CallRow::read(&store, &row));
        store.finished(&id, state, moved).await
    })
}

/// The read of the call `id`.
fn by_id(id: &str) -> Statement {
    Statement::new(CALL_BY_ID, id).text(id)
}

/// Why a move to `wanted` matched nothing: the call `id` stands elsewhere
/// (`current`), or there is none.
fn refusal(id: &str, wanted: CallState, current: Option<CallRow>) -> LedgerError {
    match current {
        None => LedgerError::NotFound { id: id.to_owned() },
        Some(row) => LedgerError::Illegal {
            id: id.to_owned(),
            state: row.state.as_str(),
            wanted: wanted.as_str(),
        },
    }
}

impl Store {
    /// Record a call before sending it. Recording the same id twice returns
    /// the recorded call.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn prepare_call(&self, call: &NewCall) -> Result<CallRow, Error> {
        let insert = insertion(call, CallState::Prepared, None, None, None);
        with_writer!(self, lead = insert, |conn, inserted| {
            inserted_call!(self, conn, inserted, &call.id).await
        })
    }

    /// `prepared -> sent`, with the private marker the request carries.
    ///
    /// # Errors
    /// [`LedgerError::Illegal`] unless the call is `prepared`.
    pub async fn mark_sent(
        &self,
        id: &str,
        marker: &str,
        now: Timestamp,
    ) -> Result<CallRow, LedgerError> {
        self.move_call(
            id,
            CallState::Prepared,
            CallState::Sent,
            Some(marker),
            None,
            now,
        )
        .await
    }

    /// `sent -> answered`, `failed` or `cancelled` (as `outcome` says),
    /// with the result or the failure.
    ///
    /// # Errors
    /// [`LedgerError::Illegal`] unless the call is `sent`.
    pub async fn finish_call(
        &self,
        id: &str,
        outcome: CallOutcome,
        result: &Json,
        now: Timestamp,
    ) -> Result<CallRow, LedgerError> {
        self.queue_finish_call(id, outcome, result, now).await
    }

    /// [`Store::finish_call`], queued for the next batch before this
    /// returns, and the move's outcome once that batch is durable. Drop the
    /// outcome to not wait: the move is made all the same (a crash before
    /// its batch commits leaves the call `sent`, reported `may_have_run`
    /// after recovery).
    pub fn queue_finish_call(
        &self,
        id: &str,
        outcome: CallOutcome,
        result: &Json,
        now: Timestamp,
    ) -> Finishing {
        let state = outcome.state();
        let statement = Statement::new(FINISH, id)
            .read_back(FINISH_ONLY, FINISHED)
            .text(state.as_str())
            .text(result.to_string())
            .int(micros(now))
            .text(id);
        let store = self.clone();
        let id = id.to_owned();
        match &self.writer {
            Writer::Sqlite(writer) => {
                let written = self.submit_sqlite(writer, statement);
                finishing(store, id, state, written)
            }
            Writer::Postgres { batches, .. } => {
                finishing(store, id, state, batches.submit(statement))
            }
        }
    }

    /// The finished call, or — the move matched nothing — why: where the
    /// call stands now, or that there is none.
    async fn finished(
        &self,
        id: &str,
        wanted: CallState,
        moved: Option<Result<CallRow, Error>>,
    ) -> Result<CallRow, LedgerError> {
        match moved {
            Some(row) => Ok(row?),
            None => Err(refusal(id, wanted, self.call(id).await?)),
        }
    }

    /// The one guarded move of the ledger: `from -> to` (stamping `sent_at`
    /// on the way to `sent`, `finished_at` otherwise), or why the call is not
    /// where the move starts. Read on the same connection, so the refusal
    /// names where the call really is.
    async fn move_call(
        &self,
        id: &str,
        from: CallState,
        to: CallState,
        marker: Option<&str>,
        result: Option<String>,
        now: Timestamp,
    ) -> Result<CallRow, LedgerError> {
        let moving = Statement::new(MOVE, id)
            .text(to.as_str())
            .opt_text(marker)
            .opt_text(result.as_deref())
            .int(micros(now))
            .text(id)
            .text(from.as_str());
        let (moved, current) = with_writer!(self, |conn| {
            let moved = moving
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            let current = match moved {
                Some(_) => None,
                None => by_id(id)
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(|e| self.fail(e))?,
            };
            // A refused move is an answer, and an unreadable row no failed
            // write.
            let read = |row: Option<_>| row.map(|row| CallRow::read(self, &row)).transpose();
            Ok::<_, Error>((read(moved), read(current)))
        })?;
        match moved? {
            Some(row) => Ok(row),
            None => Err(refusal(id, to, current?)),
        }
    }

    /// The call with this id.
    ///
    /// # Errors
    /// [`Error`] when the store fails or the row is unreadable.
    pub async fn call(&self, id: &str) -> Result<Option<CallRow>, Error> {
        self.read_row(CALL_BY_ID, id).await
    }
}

impl Stored for CallRow {
    const WHAT: &'static str = "call";

    /// A call row as stored.
    fn from_columns<R: Fields>(row: &Columns<'_, R>) -> Result<CallRow, Error> {
        let corrupt = |detail: String| row.corrupt(detail);
        let state_text = row.text("state")?.unwrap_or_default();
        Ok(CallRow {
            call: NewCall {
                id: row.text("id")?.unwrap_or_default(),
                owner: row.text("owner")?.unwrap_or_default(),
                server: row.text("server")?.unwrap_or_default(),
                tool: row.text("tool")?.unwrap_or_default(),
                arguments_digest: row.text("arguments_digest")?,
                principal: row.text("principal")?,
                request: row.text("request")?,
                at: row
                    .time("prepared_at")?
                    .ok_or_else(|| corrupt("prepared_at is empty".into()))?,
            },
            state: CallState::parse(&state_text)
                .ok_or_else(|| corrupt(format!("unknown state {state_text:?}")))?,
            marker: row.text("marker")?,
            result: row.json("result")?,
            sent_at: row.time("sent_at")?,
            finished_at: row.time("finished_at")?,
        })
    }
}
