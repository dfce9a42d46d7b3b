//! Who sends each call: one owner per process (a gateway's start), alive
//! while it beats. Every process over the store writes its beat into
//! `owners` every few seconds ([`Store::beat`]); a call `sent` by an owner
//! whose beat lapsed — the process was killed — may have run, and only
//! such a call is marked `may_have_run` ([`Store::recover_lapsed`]). So two
//! live processes over one store (two stdio sessions on one SQLite file,
//! two replicas on PostgreSQL) never mark each other's calls, and a live
//! replica reports a dead one's calls without waiting for its restart. A
//! clean stop takes its owner out ([`Store::release`]): a call it left
//! `sent` is then reported at the next recovery.

use std::time::Duration;

use jiff::Timestamp;

use super::CallRow;
use crate::backend::{Store, with_writer};
use crate::columns::{Stored, micros};
use crate::error::Error;

/// The calls `sent` by an owner whose beat lapsed (`$2`: alive since),
/// found `may_have_run` at `$1`. Its `state IN` term is the one of the
/// index of open calls (`calls_open`), word for word: SQLite uses a
/// partial index only for a query that says so, and the ledger holds
/// every call.
pub(crate) const RECOVER_LAPSED: &str = concat!(
    "UPDATE calls SET state = 'may_have_run', finished_at = $1 \
     WHERE state IN ('sent', 'may_have_run') AND state = 'sent' \
     AND owner NOT IN (SELECT owner FROM owners WHERE beat_at >= $2) \
     RETURNING ",
    call_columns!()
);

impl Store {
    /// `owner` is alive at `now`.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn beat(&self, owner: &str, now: Timestamp) -> Result<(), Error> {
        with_writer!(self, |conn| {
            sqlx::query(
                "INSERT INTO owners (owner, beat_at) VALUES ($1, $2) \
                 ON CONFLICT (owner) DO UPDATE SET beat_at = excluded.beat_at",
            )
            .bind(owner)
            .bind(micros(now))
            .execute(&mut *conn)
            .await
            .map_err(|e| self.fail(e))?;
            Ok::<_, Error>(())
        })
    }

    /// `owner` stopped cleanly: it beats no more, and a call it left
    /// `sent` is reported at the next recovery.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn release(&self, owner: &str) -> Result<(), Error> {
        with_writer!(self, |conn| {
            sqlx::query("DELETE FROM owners WHERE owner = $1")
                .bind(owner)
                .execute(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            Ok::<_, Error>(())
        })
    }

    /// Every call `sent` and never answered whose owner is not alive at
    /// `now` — its last beat older than `lapse`, or no beat at all (it
    /// stopped, or wrote before owners beat) — becomes `may_have_run`, and
    /// is returned to be reported (never re-sent). The lapsed owners are
    /// forgotten.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn recover_lapsed(
        &self,
        now: Timestamp,
        lapse: Duration,
    ) -> Result<Vec<CallRow>, Error> {
        let lapse = jiff::SignedDuration::try_from(lapse).unwrap_or(jiff::SignedDuration::MAX);
        let alive_since = micros(now.checked_sub(lapse).unwrap_or(Timestamp::MIN));
        with_writer!(self, |conn| {
            let rows = sqlx::query(RECOVER_LAPSED)
                .bind(micros(now))
                .bind(alive_since)
                .fetch_all(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            sqlx::query("DELETE FROM owners WHERE beat_at < $1")
                .bind(alive_since)
                .execute(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            rows.iter().map(|row| CallRow::read(self, row)).collect()
        })
    }
}
