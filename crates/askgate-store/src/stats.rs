//! Counts for monitoring.

use jiff::Timestamp;
use sqlx::Row;

use crate::backend::{Store, with_pool};
use crate::columns::micros;
use crate::error::Error;

impl Store {
    /// How many asks wait for a person at `now`: pending, and not past
    /// their expiry (an overdue one the sweep has not come to yet waits
    /// for nobody).
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn pending_count(&self, now: Timestamp) -> Result<i64, Error> {
        with_pool!(self, |pool| {
            let row = sqlx::query(
                "SELECT COUNT(*) AS n FROM asks WHERE status = 'pending' \
                 AND (expires_at IS NULL OR expires_at > $1)",
            )
            .bind(micros(now))
            .fetch_one(pool)
            .await
            .map_err(|e| self.fail(e))?;
            row.try_get::<i64, _>("n").map_err(|e| self.fail(e))
        })
    }

    /// How many asks for `principal` wait for a person at `now`, counted
    /// as [`Store::pending_count`] counts.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn pending_count_of(&self, principal: &str, now: Timestamp) -> Result<i64, Error> {
        with_pool!(self, |pool| {
            let row = sqlx::query(
                "SELECT COUNT(*) AS n FROM asks WHERE status = 'pending' AND principal = $1 \
                 AND (expires_at IS NULL OR expires_at > $2)",
            )
            .bind(principal)
            .bind(micros(now))
            .fetch_one(pool)
            .await
            .map_err(|e| self.fail(e))?;
            row.try_get::<i64, _>("n").map_err(|e| self.fail(e))
        })
    }
}
