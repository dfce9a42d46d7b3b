//! A fresh PostgreSQL schema for one test, when `ASKGATE_TEST_POSTGRES_URL`
//! names a database (`.ci/run` sets it); otherwise a notice that the test
//! was skipped.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The variable naming the test database.
pub const URL_VAR: &str = "ASKGATE_TEST_POSTGRES_URL";

/// Schemas are named `askgate_t_<seconds since the epoch>_<random>`; one
/// older than this is a leftover of a run that died, dropped by the next.
const LEFTOVER_SECS: u64 = 3600;

/// A schema of its own on the test database, dropped when this is.
#[derive(Debug)]
pub struct FreshSchema {
    base: String,
    name: String,
    url: String,
}

impl FreshSchema {
    /// A fresh schema, or `None` when no test database is configured —
    /// then a notice says, past the test harness's capture, that `what`
    /// is skipped.
    pub async fn create(what: &str) -> Option<FreshSchema> {
        let Ok(base) = std::env::var(URL_VAR) else {
            skipped(what);
            return None;
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let name = crate::unique(&format!("askgate_t_{now}_"));
        let admin = sqlx::postgres::PgPool::connect(&base)
            .await
            .expect("PostgreSQL is reachable");
        drop_leftovers(&admin, now).await;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {name}")))
            .execute(&admin)
            .await
            .expect("creates a schema");
        admin.close().await;
        let separator = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{separator}options=-c%20search_path%3D{name}");
        Some(FreshSchema { base, name, url })
    }

    /// The store URL that uses the schema.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for FreshSchema {
    fn drop(&mut self) {
        // On a thread of its own: a drop cannot await, and may run inside
        // a runtime. A lock held elsewhere is not waited on for long; what
        // is left is dropped by a later run.
        let (base, name) = (self.base.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async {
                if let Ok(admin) = sqlx::postgres::PgPool::connect(&base).await {
                    let _ = sqlx::query("SET lock_timeout = '5s'").execute(&admin).await;
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP SCHEMA IF EXISTS {name} CASCADE"
                    )))
                    .execute(&admin)
                    .await;
                    admin.close().await;
                }
            });
        });
        let _ = dropped.join();
    }
}

/// Drop the schemas of runs that died more than an hour ago.
async fn drop_leftovers(admin: &sqlx::PgPool, now: u64) {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'askgate\\_t\\_%'",
    )
    .fetch_all(admin)
    .await
    .expect("lists schemas");
    for name in names {
        let made = name
            .strip_prefix("askgate_t_")
            .and_then(|rest| rest.split('_').next())
            .and_then(|secs| secs.parse::<u64>().ok());
        if made.is_some_and(|made| made + LEFTOVER_SECS < now) {
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE"
            )))
            .execute(admin)
            .await;
        }
    }
}

/// Say once per process, past the test harness's capture, that `what` is
/// skipped.
fn skipped(what: &str) {
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let first = SAID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(what.to_owned());
    if first {
        let _ = writeln!(
            std::io::stderr(),
            "notice: {URL_VAR} is not set; {what} is skipped"
        );
    }
}
