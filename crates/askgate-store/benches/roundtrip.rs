//! Store benchmark: durable park -> answer -> wake round trips per second,
//! with p50/p99 latency, at 1 and 16 concurrent waiters, next to a raw
//! single-row durable insert on the same database, measured in the same run;
//! and the newest page of 100,000 pending asks.
//!
//! `cargo bench -p askgate-store --bench roundtrip` runs SQLite; set
//! `ASKGATE_TEST_POSTGRES_URL` to run PostgreSQL beside it. Rounds are
//! bounded in count; nothing here is a pass/fail test.

// A bench binary reports on stdout, and its items need no docs.
#![allow(clippy::print_stdout, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use askgate_store::{AskStatus, NewAsk, Settlement, Store};
use jiff::Timestamp;
use serde_json::json;

const ROUND_TRIPS: usize = 2_000;
const PENDING: usize = 100_000;

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join(format!("askgate-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut targets = vec![(
        "sqlite",
        format!("sqlite://{}", dir.join("bench.db").display()),
    )];
    match std::env::var("ASKGATE_TEST_POSTGRES_URL") {
        Ok(url) => targets.push(("postgres", fresh_schema(&url).await)),
        Err(_) => println!("(ASKGATE_TEST_POSTGRES_URL not set: PostgreSQL not measured)"),
    }
    println!(
        "{:<9} | {:<28} | {:>10} | {:>9} | {:>9}",
        "backend", "case", "ops/s", "p50", "p99"
    );
    for (backend, url) in targets {
        let store = Store::open(&url).await.expect("the store opens");
        let raw = raw_inserts(&url).await;
        report(backend, "raw durable insert (baseline)", &raw);
        for waiters in [1, 16] {
            let (trips, transitions) = round_trips(&store, waiters).await;
            report(backend, &format!("round trip, {waiters} waiters"), &trips);
            report(
                backend,
                &format!("  its transitions, {waiters} w."),
                &transitions,
            );
            println!(
                "{:<9} | {:<28} | ratio vs baseline: {:.2}x the time",
                backend,
                "",
                raw.rate() / trips.rate()
            );
        }
        let (listing, at_10k) = newest_page(&store).await;
        report(backend, "newest page of 100k pending", &listing);
        println!(
            "{backend:<9} | {:<28} | resident: {at_10k} KiB at 10,000 pending, {} KiB at 100,000",
            "process memory",
            resident_kib()
        );
        store.close().await;
        if backend == "postgres" {
            drop_schema().await;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

struct Sample {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Sample {
    fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(index).copied().unwrap_or_default()
    }
}

fn report(backend: &str, case: &str, sample: &Sample) {
    println!(
        "{backend:<9} | {case:<28} | {:>10.0} | {:>9.2?} | {:>9.2?}",
        sample.rate(),
        sample.percentile(0.50),
        sample.percentile(0.99)
    );
}

fn ask(id: &str, created: i64) -> NewAsk {
    NewAsk {
        id: id.to_owned(),
        resume_key: format!("tool:bench:{id}"),
        principal: "bench".into(),
        request: json!({"kind": "form"}),
        server: Some("bench".into()),
        tool: Some("echo".into()),
        risk: Some("medium_write".into()),
        created_at: Timestamp::from_second(1_800_000_000 + created).expect("in range"),
        expires_at: None,
    }
}

/// The baseline: one durable single-row insert per operation, on the same
/// database and settings, through a plain pool.
async fn raw_inserts(url: &str) -> Sample {
    /// Create the table, then time `ROUND_TRIPS` single-row inserts.
    macro_rules! time_inserts {
        ($pool:expr, $create:expr) => {{
            sqlx::query($create).execute(&$pool).await.expect("creates");
            let mut latencies = Vec::with_capacity(ROUND_TRIPS);
            for i in 0..ROUND_TRIPS {
                let t = Instant::now();
                sqlx::query("INSERT INTO bench_raw (body) VALUES ($1)")
                    .bind(format!("row {i}"))
                    .execute(&$pool)
                    .await
                    .expect("inserts");
                latencies.push(t.elapsed());
            }
            latencies
        }};
    }
    let started = Instant::now();
    let latencies = if url.starts_with("sqlite") {
        let options: sqlx::sqlite::SqliteConnectOptions = url.parse().expect("a SQLite URL");
        let pool = sqlx::sqlite::SqlitePool::connect_with(
            options
                .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                .synchronous(sqlx::sqlite::SqliteSynchronous::Full),
        )
        .await
        .expect("connects");
        time_inserts!(
            pool,
            "CREATE TABLE IF NOT EXISTS bench_raw (id INTEGER PRIMARY KEY, body TEXT)"
        )
    } else {
        let pool = sqlx::postgres::PgPool::connect(url)
            .await
            .expect("connects");
        time_inserts!(
            pool,
            "CREATE TABLE IF NOT EXISTS bench_raw (id BIGSERIAL PRIMARY KEY, body TEXT)"
        )
    };
    Sample {
        latencies,
        elapsed: started.elapsed(),
    }
}

/// Park an ask, wait for it, answer it, and be woken: `waiters` at a time.
/// Returns the round trips, and their durable transitions (each park and
/// each answer: two per round trip) timed one by one.
async fn round_trips(store: &Store, waiters: usize) -> (Sample, Sample) {
    let per_task = ROUND_TRIPS / waiters;
    let started = Instant::now();
    let latencies = Arc::new(tokio::sync::Mutex::new(Vec::with_capacity(ROUND_TRIPS)));
    let transitions = Arc::new(tokio::sync::Mutex::new(Vec::with_capacity(2 * ROUND_TRIPS)));
    let mut tasks = Vec::new();
    for task in 0..waiters {
        let store = store.clone();
        let latencies = Arc::clone(&latencies);
        let transitions = Arc::clone(&transitions);
        tasks.push(tokio::spawn(async move {
            for i in 0..per_task {
                let id = format!("rt-{waiters}-{task}-{i}");
                let t = Instant::now();
                store.park(&ask(&id, i as i64)).await.expect("parks");
                let parked = t.elapsed();
                let waiter = {
                    let store = store.clone();
                    let id = id.clone();
                    tokio::spawn(
                        async move { store.wait_settled(&id, Duration::from_secs(60)).await },
                    )
                };
                let settlement = Settlement {
                    status: AskStatus::Answered,
                    reply: json!({"action": "accept"}),
                    outcome: json!({"outcome": "accepted"}),
                    answered_by: Some("bench".into()),
                    answered_via: "cli".into(),
                };
                let answering = Instant::now();
                store
                    .settle(
                        &id,
                        &settlement,
                        Timestamp::from_second(1_900_000_000).expect("in range"),
                    )
                    .await
                    .expect("settles");
                transitions
                    .lock()
                    .await
                    .extend([parked, answering.elapsed()]);
                let woken = waiter
                    .await
                    .expect("joins")
                    .expect("reads")
                    .expect("settled");
                assert_eq!(woken.status, AskStatus::Answered);
                latencies.lock().await.push(t.elapsed());
            }
        }));
    }
    for task in tasks {
        task.await.expect("joins");
    }
    let elapsed = started.elapsed();
    let latencies = Arc::try_unwrap(latencies)
        .expect("tasks are done")
        .into_inner();
    let transitions = Arc::try_unwrap(transitions)
        .expect("tasks are done")
        .into_inner();
    (
        Sample { latencies, elapsed },
        Sample {
            latencies: transitions,
            elapsed,
        },
    )
}

/// Fill the store to 100,000 pending asks, then list the newest page of 100.
/// Also returns the resident memory at 10,000 pending.
async fn newest_page(store: &Store) -> (Sample, u64) {
    let mut at_10k = 0;
    for i in 0..PENDING {
        if i == PENDING / 10 {
            at_10k = resident_kib();
        }
        store
            .park(&ask(&format!("pending-{i:06}"), i as i64))
            .await
            .expect("parks");
    }
    let mut latencies = Vec::new();
    let started = Instant::now();
    for _ in 0..200 {
        let t = Instant::now();
        let page = store.pending(100, None).await.expect("lists");
        assert_eq!(page.asks.len(), 100);
        latencies.push(t.elapsed());
    }
    (
        Sample {
            latencies,
            elapsed: started.elapsed(),
        },
        at_10k,
    )
}

/// The process's resident memory in KiB (Linux), or 0 where unknown.
fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.split_whitespace().next())
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0)
}

async fn fresh_schema(url: &str) -> String {
    let schema = format!("askgate_bench_{}", std::process::id());
    let admin = drop_schema_at(url, &schema).await;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await
        .expect("creates");
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20search_path%3D{schema}")
}

async fn drop_schema() {
    let Ok(base) = std::env::var("ASKGATE_TEST_POSTGRES_URL") else {
        return;
    };
    let schema = format!("askgate_bench_{}", std::process::id());
    drop_schema_at(&base, &schema).await;
}

/// Drop `schema` if it is there; the admin pool, for more.
async fn drop_schema_at(url: &str, schema: &str) -> sqlx::PgPool {
    let admin = sqlx::postgres::PgPool::connect(url)
        .await
        .expect("PostgreSQL is reachable");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE"
    )))
    .execute(&admin)
    .await
    .expect("drops");
    admin
}
