//! The truth for a retry. A client that lost its answer because askgate
//! stopped calls again; if the call it lost may have run, the retry must
//! not run it again silently. Two ways find the earlier call:
//!
//! - a retry that carries a sealed `requestState` names its request: the
//!   calls made in it ([`Store::call_of_request`]) say how it ended;
//! - any other retry is the same call — the same principal, server, tool
//!   and arguments' digest — made again within a window
//!   ([`Store::may_have_run`]).
//!
//! Once a retry was told that its call may have run ([`Store::tell_retry`]),
//! a further call is the caller's informed choice, and goes as any call.

use jiff::Timestamp;
use sqlx::AssertSqlSafe;

use super::{CallRow, CallState};
use crate::backend::{Store, with_pool, with_writer};
use crate::columns::{Fields, Stored, micros};
use crate::error::Error;
use crate::tries::RetryOf;

/// A call as a retry names it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry<'a> {
    /// Who calls.
    pub principal: &'a str,
    /// The upstream server.
    pub server: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// The keyed digest of the arguments, as the ledger records it.
    pub arguments_digest: &'a str,
    /// The digests of the same arguments under the keys in use before
    /// (rotated out, or older builds'): a call recorded under any of them
    /// is the same call. Found by the same query.
    pub earlier_digests: &'a [String],
}

/// An earlier call that a retry is the same as, and that may have run.
#[derive(Debug, Clone, PartialEq)]
pub struct Retried {
    /// The call: `may_have_run`, or `sent` by another process.
    pub call: CallRow,
    /// For a `sent` call, the last beat of the process that sent it, if it
    /// still beats: alive, the call may be running there now; its beats
    /// stopped, it may have run.
    pub owner_beat: Option<Timestamp>,
}

impl Retried {
    /// Of this call and `other`, the one a retry is told of: one found
    /// `may_have_run` before one `sent` (that may be live), then the newest.
    pub(crate) fn rather(self, other: Option<Retried>) -> Retried {
        let rank = |r: &Retried| (r.call.state == CallState::MayHaveRun, r.call.call.at);
        match other {
            Some(other) if rank(&other) >= rank(&self) => other,
            _ => self,
        }
    }
}

/// The untold call of a retry that may have run: `may_have_run` since `$5`
/// (when it was found so), or `sent` by an owner other than `$6` (not yet
/// found: its owner died within the lapse, or lives). Every such call:
/// the one to tell of is picked by [`Retried::rather`] (in SQL, the
/// order's sorter cost SQLite a temporary B-tree each time, some 170 µs
/// through sqlx here, against 10 µs for the search itself). A call recorded before
/// calls kept their principal matches any. Its digest is `$1` or one of
/// the earlier digests, bound from `$7` on (see [`may_have_run_sql`]).
/// Each state and each digest is an arm of its own (`UNION ALL`): an `IN`
/// list the index is searched by (`state IN ('sent', 'may_have_run')`,
/// `arguments_digest IN ($1, $7)`) is one SQLite builds in a temporary
/// B-tree at every run (callgrind: the two lists cost a confirmed call
/// 31,000 instructions, more than the search). Each arm says the index's `state IN` term too, word
/// for word: SQLite uses a partial index (`calls_open`) only for a query
/// that says so.
macro_rules! may_have_run_arm {
    ($state:literal, $since:literal) => {
        concat!(
            "SELECT ",
            call_columns!(),
            ", (SELECT beat_at FROM owners WHERE owners.owner = calls.owner) AS owner_beat \
             FROM calls WHERE state = '",
            $state,
            "' AND state IN ('sent', 'may_have_run') \
             AND (principal = $2 OR principal IS NULL) \
             AND server = $3 AND tool = $4 AND told_at IS NULL AND ",
            $since,
            " AND arguments_digest = "
        )
    };
}

/// The arms of a retry's look (see [`may_have_run_arm!`]), each to be
/// ended by the digest's parameter.
const MAY_HAVE_RUN: [&str; 2] = [
    may_have_run_arm!("may_have_run", "finished_at >= $5"),
    may_have_run_arm!("sent", "owner <> $6"),
];

/// The look for a call that may have run for `earlier` digests besides
/// the one in use: one statement, one visit to the store, however many
/// keys there were.
pub(crate) fn may_have_run_sql(earlier: usize) -> String {
    let digests: Vec<String> = std::iter::once(1)
        .chain((0..earlier).map(|n| 7 + n))
        .map(|n| format!("${n}"))
        .collect();
    let arms: Vec<String> = MAY_HAVE_RUN
        .iter()
        .flat_map(|arm| digests.iter().map(move |digest| format!("{arm}{digest}")))
        .collect();
    arms.join(" UNION ALL ")
}

/// The newest call made in a request.
pub(crate) const OF_REQUEST: &str = concat!(
    "SELECT ",
    call_columns!(),
    " FROM calls WHERE request = $1 ORDER BY prepared_at DESC LIMIT 1"
);

impl Store {
    /// The call the same as `retry` (under its digest or any of its earlier
    /// ones) that may have run and whose retry was not told so yet: one
    /// found `may_have_run` at or after `since` (preferred), or one `sent`
    /// by another process than `me` (with that process's last beat, if it
    /// still beats); the newest of them.
    ///
    /// # Errors
    /// [`Error`] when the store fails or the row is unreadable.
    pub async fn may_have_run(
        &self,
        retry: &Retry<'_>,
        since: Timestamp,
        me: &str,
    ) -> Result<Option<Retried>, Error> {
        // On a SQLite file, on the caller's thread (see `inline`).
        if let Some(inline) = &self.inline {
            let of = RetryOf {
                retry: *retry,
                since,
                me,
            };
            if let Some(read) = self.tries_inline(inline, Some(&of), None) {
                return read.map(|(found, _)| found);
            }
        }
        let sql = may_have_run_sql(retry.earlier_digests.len());
        with_pool!(self, |pool| {
            // Built from constants and placeholder numbers only.
            let mut query = sqlx::query(AssertSqlSafe(sql.clone()))
                .bind(retry.arguments_digest)
                .bind(retry.principal)
                .bind(retry.server)
                .bind(retry.tool)
                .bind(micros(since))
                .bind(me);
            for digest in retry.earlier_digests {
                query = query.bind(digest.as_str());
            }
            let rows = query.fetch_all(pool).await.map_err(|e| self.fail(e))?;
            rows.iter().try_fold(None, |found, row| {
                Ok(Some(self.retried(row)?.rather(found)))
            })
        })
    }

    /// The [`Retried`] in `row`, a row of [`may_have_run_sql`]'s.
    pub(crate) fn retried<R: Fields>(&self, row: &R) -> Result<Retried, Error> {
        let beat = row.number("owner_beat").map_err(|e| self.fail(e))?;
        let owner_beat = beat
            .map(Timestamp::from_microsecond)
            .transpose()
            .map_err(|e| Error::Corrupt {
                store: self.name.to_string(),
                what: "owner",
                detail: e.to_string(),
            })?;
        Ok(Retried {
            call: CallRow::read(self, row)?,
            owner_beat,
        })
    }

    /// A retry of the call `id` was told, at `now`, that the call may have
    /// run: the next call the same as it goes as any call. `false` when a
    /// retry was told so before (or there is no such call).
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn tell_retry(&self, id: &str, now: Timestamp) -> Result<bool, Error> {
        with_writer!(self, |conn| {
            let told =
                sqlx::query("UPDATE calls SET told_at = $1 WHERE id = $2 AND told_at IS NULL")
                    .bind(micros(now))
                    .bind(id)
                    .execute(&mut *conn)
                    .await
                    .map_err(|e| self.fail(e))?;
            Ok::<_, Error>(told.rows_affected() == 1)
        })
    }

    /// The newest call made in the client's request `request` (see
    /// [`NewCall::request`](super::NewCall::request)), if any.
    ///
    /// # Errors
    /// [`Error`] when the store fails or the row is unreadable.
    pub async fn call_of_request(&self, request: &str) -> Result<Option<CallRow>, Error> {
        self.read_row(OF_REQUEST, request).await
    }
}
