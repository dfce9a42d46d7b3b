//! Counts for monitoring.

use sqlx::Row;

use crate::backend::{Store, with_pool};
use crate::error::Error;

impl Store {
    /// How many asks are pending.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn pending_count(&self) -> Result<i64, Error> {
        with_pool!(self, |pool| {
            let row = sqlx::query("SELECT COUNT(*) AS n FROM asks WHERE status = 'pending'")
                .fetch_one(pool)
                .await
                .map_err(|e| self.fail(e))?;
            row.try_get::<i64, _>("n").map_err(|e| self.fail(e))
        })
    }
}
