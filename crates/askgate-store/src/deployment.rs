//! What a store knows of the deployment over it: the fingerprint of the
//! key that seals request state, keys argument digests and signs inbox
//! links. Every gateway replica and inbox over one store must share that
//! key — a state sealed by one replica is opened by another, a link signed
//! by a gateway is opened by the inbox — so the first process over a store
//! records the fingerprint, and every later one checks it before serving.

use sqlx::Row;

use crate::backend::{Store, with_writer};
use crate::error::Error;

/// The row that holds the key's fingerprint.
const KEY: &str = "key_fingerprint";

impl Store {
    /// Bind the store to the key whose fingerprint is `fingerprint`: the
    /// first call records it; every later one compares. `None` when it is
    /// the store's key; else the fingerprint recorded (another key: the
    /// caller must not serve with it).
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn bind_key(&self, fingerprint: &str) -> Result<Option<String>, Error> {
        let recorded: String = with_writer!(self, |conn| {
            sqlx::query(
                "INSERT INTO deployment (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
            )
            .bind(KEY)
            .bind(fingerprint)
            .execute(&mut *conn)
            .await
            .map_err(|e| self.fail(e))?;
            let row = sqlx::query("SELECT value FROM deployment WHERE name = $1")
                .bind(KEY)
                .fetch_one(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            row.try_get::<String, _>("value").map_err(|e| self.fail(e))
        })?;
        Ok((recorded != fingerprint).then_some(recorded))
    }
}
