//! Versioned migrations, embedded in the binary. An older store is migrated
//! on open; a newer one is refused.

use sqlx::Row;

use crate::backend::{Pool, Store, with_pool};
use crate::error::Error;

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i64 = 20;

mod versions;

use versions::{MIGRATIONS, SQLITE_COLUMNS};

/// Bring the store to [`SCHEMA_VERSION`], in one transaction per migration.
/// A store that was in use says so in the log, before and after: a
/// migration that copies a table (v19) takes some seconds a million calls.
pub(crate) async fn migrate(store: &Store) -> Result<(), Error> {
    let found = current_version(store).await?;
    if found > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            store: store.name.to_string(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    let began = std::time::Instant::now();
    if (1..SCHEMA_VERSION).contains(&found) {
        tracing::info!(store = %store.name, from = found, to = SCHEMA_VERSION, "migrating the store's schema");
    }
    for (version, common, sqlite, postgres) in MIGRATIONS.iter().filter(|m| m.0 > found) {
        let specific = match store.pool {
            Pool::Sqlite(_) => sqlite,
            Pool::Postgres(_) => postgres,
        };
        with_pool!(store, |pool| {
            let mut tx = pool.begin().await.map_err(|e| store.fail(e))?;
            if let Pool::Sqlite(_) = store.pool {
                for (_, table, column, kind) in SQLITE_COLUMNS.iter().filter(|c| c.0 == *version) {
                    let has =
                        sqlx::query("SELECT 1 AS has FROM pragma_table_info($1) WHERE name = $2")
                            .bind(*table)
                            .bind(*column)
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(|e| store.fail(e))?;
                    if has.is_none() {
                        let add = format!("ALTER TABLE {table} ADD COLUMN {column} {kind}");
                        sqlx::raw_sql(sqlx::AssertSqlSafe(add))
                            .execute(&mut *tx)
                            .await
                            .map_err(|e| store.fail(e))?;
                    }
                }
            }
            for script in [common, specific] {
                if !script.trim().is_empty() {
                    sqlx::raw_sql(*script)
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| store.fail(e))?;
                }
            }
            sqlx::query("UPDATE askgate_schema SET version = $1")
                .bind(*version)
                .execute(&mut *tx)
                .await
                .map_err(|e| store.fail(e))?;
            tx.commit().await.map_err(|e| store.fail(e))?;
        });
    }
    if (1..SCHEMA_VERSION).contains(&found) {
        if let Pool::Sqlite(pool) = &store.pool {
            // A copied table passed through the WAL whole: give its space
            // back (best effort: a reader elsewhere may hold it a while).
            let _ = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(pool)
                .await;
        }
        tracing::info!(store = %store.name, to = SCHEMA_VERSION, took_ms = began.elapsed().as_millis(), "the store's schema migrated");
    }
    if found < AUDIT_HEAD_VERSION
        && let Some((seq, hash, None)) = store.audit_head().await?
    {
        let _ = store.seeded_head.set((seq, hash));
    }
    Ok(())
}

/// The version that records the audit chain's head.
const AUDIT_HEAD_VERSION: i64 = 11;

/// The store's schema version: 0 for an empty database; an error for a
/// database that holds tables but is not an askgate store.
async fn current_version(store: &Store) -> Result<i64, Error> {
    let tables_sql = match store.pool {
        Pool::Sqlite(_) => {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        }
        Pool::Postgres(_) => {
            "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema()"
        }
    };
    with_pool!(store, |pool| {
        let tables: Vec<String> = sqlx::query(tables_sql)
            .fetch_all(pool)
            .await
            .map_err(|e| store.fail(e))?
            .iter()
            .map(|row| row.try_get::<String, _>("name").unwrap_or_default())
            .collect();
        if !tables.iter().any(|t| t == "askgate_schema") {
            if let Some(other) = tables.first() {
                return Err(Error::Foreign {
                    store: store.name.to_string(),
                    detail: format!("it holds a table {other:?} and no askgate schema"),
                });
            }
            sqlx::query("CREATE TABLE askgate_schema (version BIGINT NOT NULL)")
                .execute(pool)
                .await
                .map_err(|e| store.fail(e))?;
            sqlx::query("INSERT INTO askgate_schema (version) VALUES (0)")
                .execute(pool)
                .await
                .map_err(|e| store.fail(e))?;
            return Ok(0);
        }
        let row = sqlx::query("SELECT version FROM askgate_schema")
            .fetch_one(pool)
            .await
            .map_err(|e| store.fail(e))?;
        row.try_get::<i64, _>("version").map_err(|e| store.fail(e))
    })
}
