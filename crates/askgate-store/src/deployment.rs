//! What a store knows of the deployment over it: the fingerprint of the
//! key that seals request state, keys argument digests and signs inbox
//! links. Every gateway replica and inbox over one store must share that
//! key — a state sealed by one replica is opened by another, a link signed
//! by a gateway is opened by the inbox — so the first process over a store
//! records the fingerprint, and every later one checks it before serving.

use sqlx::Row;

use crate::backend::{Store, with_pool, with_writer};
use crate::error::Error;

/// The row that holds the key's fingerprint.
const KEY: &str = "key_fingerprint";

/// The row that holds the fingerprint of the key rotated out last.
const RETIRED: &str = "retired_key_fingerprint";

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

    /// Move the store from the key `from` to the key `to` (`askgate key
    /// rotate`), remembering `from` as the key rotated out. `None` when the
    /// store is `to`'s now (moved, or moved before); else the fingerprint
    /// recorded — the store is neither's, and nothing changed.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn rotate_key(&self, from: &str, to: &str) -> Result<Option<String>, Error> {
        let recorded: String = with_writer!(self, |conn| {
            let moved =
                sqlx::query("UPDATE deployment SET value = $1 WHERE name = $2 AND value = $3")
                    .bind(to)
                    .bind(KEY)
                    .bind(from)
                    .execute(&mut *conn)
                    .await
                    .map_err(|e| self.fail(e))?;
            if moved.rows_affected() == 1 {
                sqlx::query(
                    "INSERT INTO deployment (name, value) VALUES ($1, $2) \
                     ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                )
                .bind(RETIRED)
                .bind(from)
                .execute(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            }
            let row = sqlx::query("SELECT value FROM deployment WHERE name = $1")
                .bind(KEY)
                .fetch_one(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            row.try_get::<String, _>("value").map_err(|e| self.fail(e))
        })?;
        Ok((recorded != to).then_some(recorded))
    }

    /// The fingerprint of the key rotated out last, if the store's key was
    /// ever rotated.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn retired_key(&self) -> Result<Option<String>, Error> {
        self.deployment_value(RETIRED).await
    }

    /// The fingerprint of the store's key, once a process has bound it.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn recorded_key(&self) -> Result<Option<String>, Error> {
        self.deployment_value(KEY).await
    }

    async fn deployment_value(&self, name: &str) -> Result<Option<String>, Error> {
        with_pool!(self, |pool| {
            let row = sqlx::query("SELECT value FROM deployment WHERE name = $1")
                .bind(name)
                .fetch_optional(pool)
                .await
                .map_err(|e| self.fail(e))?;
            row.map(|row| row.try_get::<String, _>("value").map_err(|e| self.fail(e)))
                .transpose()
        })
    }
}
