//! Single-use tokens: nonces of sealed request state and signed inbox links.

use jiff::Timestamp;

use crate::backend::{Store, with_pool, with_writer};
use crate::columns::micros;
use crate::error::Error;

impl Store {
    /// Consume a nonce: `true` the first time, `false` ever after (a replay).
    /// Atomic across processes: two concurrent consumers cannot both win.
    /// Nonces past `expires_at` are refused by their sealers before they get
    /// here, and purged by [`Store::purge_tokens`].
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn consume_token(
        &self,
        nonce: &str,
        expires_at: Timestamp,
        now: Timestamp,
    ) -> Result<bool, Error> {
        let sql = "INSERT INTO tokens (nonce, expires_at, consumed_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";
        let inserted = with_writer!(self, |conn| {
            Ok::<_, Error>(
                sqlx::query(sql)
                    .bind(nonce)
                    .bind(micros(expires_at))
                    .bind(micros(now))
                    .execute(&mut *conn)
                    .await
                    .map_err(|e| self.fail(e))?
                    .rows_affected(),
            )
        })?;
        Ok(inserted == 1)
    }

    /// Whether `nonce` was consumed (and not yet purged).
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn token_consumed(&self, nonce: &str) -> Result<bool, Error> {
        with_pool!(self, |pool| {
            Ok(sqlx::query("SELECT 1 FROM tokens WHERE nonce = $1")
                .bind(nonce)
                .fetch_optional(pool)
                .await
                .map_err(|e| self.fail(e))?
                .is_some())
        })
    }

    /// Forget consumed nonces that expired before `now` (they can no longer
    /// be presented). Returns how many were removed.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn purge_tokens(&self, now: Timestamp) -> Result<u64, Error> {
        with_writer!(self, |conn| {
            Ok(sqlx::query("DELETE FROM tokens WHERE expires_at <= $1")
                .bind(micros(now))
                .execute(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?
                .rows_affected())
        })
    }
}
