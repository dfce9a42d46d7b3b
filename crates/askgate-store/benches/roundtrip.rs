//! Store benchmark: durable park -> answer -> wake round trips per second,
//! with p50/p99 latency, at 1 and 16 concurrent waiters, and a confirmed
//! call's record (its ledger row and audit entry, its end queued after it),
//! next to a raw single-row durable insert on the same database, measured
//! in the same run; and the newest page of 100,000 pending asks.
//!
//! The machine is shared and its load varies, so the cases are measured in
//! interleaved rounds (baseline, 1 waiter, 16 waiters, again...): load hits
//! every case alike. Each rate is the median of its rounds; latencies are
//! pooled over the rounds; the ratio to the baseline is the median of the
//! rounds' ratios. The CPU time this process spent per operation (all its
//! threads; PostgreSQL's own processes not counted) varies less with the
//! load than the rates do.
//!
//! `cargo bench -p askgate-store --bench roundtrip` runs SQLite; set
//! `ASKGATE_TEST_POSTGRES_URL` to run PostgreSQL beside it. Words after `--`
//! pick what runs: `sqlite`, `postgres` (backends), `trips`, `page` (cases);
//! none picks everything. Rounds are bounded in count; nothing here is a
//! pass/fail test.

// A bench binary reports on stdout, and its items need no docs.
#![allow(clippy::print_stdout, missing_docs)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use askgate_store::{
    AskStatus, AuditEntry, CallOutcome, Decision, NewAsk, NewCall, Settlement, Store,
};
use jiff::Timestamp;
use serde_json::json;

const ROUNDS: usize = 5;
/// Raw inserts, and round trips with 1 waiter, per round.
const PER_ROUND: usize = 400;
/// Round trips with 16 waiters per round (100 each: the start and the end
/// of a round, with fewer waiters busy, weigh little).
const PER_ROUND_CONCURRENT: usize = 1_600;
const PENDING: usize = 100_000;

#[tokio::main]
async fn main() {
    let picked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let runs = |group: &[&str], name: &str| {
        !picked.iter().any(|p| group.contains(&p.as_str())) || picked.iter().any(|p| p == name)
    };
    let backends = ["sqlite", "postgres"];
    let cases = ["trips", "page"];
    let dir = std::env::temp_dir().join(format!("askgate-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut targets = Vec::new();
    if runs(&backends, "sqlite") {
        let url = format!("sqlite://{}", dir.join("bench.db").display());
        targets.push(("sqlite", url));
    }
    if runs(&backends, "postgres") {
        match std::env::var("ASKGATE_TEST_POSTGRES_URL") {
            Ok(url) => targets.push(("postgres", fresh_schema(&url).await)),
            Err(_) => println!("(ASKGATE_TEST_POSTGRES_URL not set: PostgreSQL not measured)"),
        }
    }
    println!(
        "{:<9} | {:<29} | {:>6} | {:>9} | {:>9} | {:>9} | vs baseline",
        "backend", "case", "ops/s", "p50", "p99", "cpu/op"
    );
    for (backend, url) in targets {
        let store = Store::open(&url).await.expect("the store opens");
        if runs(&cases, "trips") {
            round_trip_cases(backend, &url, &store).await;
        }
        if runs(&cases, "page") {
            let (listing, at_10k) = newest_page(&store).await;
            report(backend, "newest page of 100k pending", &listing, None);
            println!(
                "{backend:<9} | {:<29} | resident: {at_10k} KiB at 10,000 pending, {} KiB at 100,000",
                "process memory",
                resident_kib()
            );
        }
        store.close().await;
        if backend == "postgres" {
            drop_schema().await;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The baseline and the round trips at 1 and 16 waiters, in interleaved
/// rounds.
async fn round_trip_cases(backend: &str, url: &str, store: &Store) {
    let raw = RawInserts::new(url).await;
    let mut baseline = Case::default();
    let mut trips = [Case::default(), Case::default()];
    let mut transitions = [Case::default(), Case::default()];
    let mut records = Case::default();
    for round in 0..ROUNDS {
        baseline.measure(|| raw.run(round)).await;
        let cpu = cpu_time();
        let latencies = call_records(store, round).await;
        // Its rate is of the records' own time: the pauses between them
        // (where a gateway asks the next call's person) are not counted.
        let busy = latencies.iter().sum();
        records.add(latencies, busy, cpu_time().saturating_sub(cpu));
        for (i, (waiters, count)) in [(1, PER_ROUND), (16, PER_ROUND_CONCURRENT)]
            .into_iter()
            .enumerate()
        {
            let steps = Arc::new(Mutex::new(Vec::with_capacity(2 * count)));
            let trip = trips[i]
                .measure(|| round_trips(store, waiters, count, round, Arc::clone(&steps)))
                .await;
            let steps = std::mem::take(&mut *steps.lock().expect("not poisoned"));
            transitions[i].add(steps, trip.elapsed, trip.cpu);
        }
    }
    report(backend, "raw durable insert (baseline)", &baseline, None);
    for (i, waiters) in [1, 16].into_iter().enumerate() {
        let plural = if waiters == 1 { "" } else { "s" };
        let case = format!("round trip, {waiters} waiter{plural}");
        report(backend, &case, &trips[i], Some(&baseline));
        report(backend, "  its transitions", &transitions[i], None);
    }
    report(
        backend,
        "a confirmed call's record",
        &records,
        Some(&baseline),
    );
}

/// A confirmed call's record as a gateway writes it, one call at a time:
/// `record_sent_call` with its decision's entry (keyed, as the gateway
/// keys it), timed; then its end queued and not waited for, and a pause
/// of 400 µs, about what the gateway spends on the next call's reads and
/// its person's answer, in which the end commits. The records' latencies.
async fn call_records(store: &Store, round: usize) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(PER_ROUND);
    for i in 0..PER_ROUND {
        let id = format!("call-{round}-{i}");
        let entry = AuditEntry {
            at: Timestamp::now(),
            server: "bench".into(),
            tool: "echo".into(),
            risk: "medium_write".into(),
            decision: Decision::Elicited,
            reason: "confirmed by a person".into(),
            answered_by: Some("client".into()),
            principal: Some("bench".into()),
            answered_via: Some("mcp".into()),
            arguments_digest: Some("hmac-sha256:bench".into()),
            ask_id: None,
            decision_key: Some(format!("sent:{id}")),
        };
        let call = NewCall {
            id: id.clone(),
            owner: "bench".into(),
            server: "bench".into(),
            tool: "echo".into(),
            arguments_digest: Some("hmac-sha256:bench".into()),
            principal: Some("bench".into()),
            request: None,
            at: Timestamp::now(),
        };
        let t = Instant::now();
        store
            .record_sent_call(&entry, &call, "marker", Timestamp::now())
            .await
            .expect("records");
        latencies.push(t.elapsed());
        let ended = json!({"content": [{"type": "text", "text": "echo"}]});
        drop(store.queue_finish_call(&id, CallOutcome::Answered, &ended, Timestamp::now()));
        tokio::time::sleep(Duration::from_micros(400)).await;
    }
    latencies
}

/// The measurements of one case, round by round.
#[derive(Default)]
struct Case {
    latencies: Vec<Duration>,
    /// Operations per second, each round.
    rates: Vec<f64>,
    cpu: Duration,
}

/// One round of a case: its wall time and the CPU time it took.
struct Round {
    elapsed: Duration,
    cpu: Duration,
}

impl Case {
    /// Run one round (`run` returns its latencies) and record it.
    async fn measure<F, Fut>(&mut self, run: F) -> Round
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Vec<Duration>>,
    {
        let cpu = cpu_time();
        let started = Instant::now();
        let latencies = run().await;
        let round = Round {
            elapsed: started.elapsed(),
            cpu: cpu_time().saturating_sub(cpu),
        };
        self.add(latencies, round.elapsed, round.cpu);
        round
    }

    fn add(&mut self, latencies: Vec<Duration>, elapsed: Duration, cpu: Duration) {
        self.rates
            .push(latencies.len() as f64 / elapsed.as_secs_f64());
        self.latencies.extend(latencies);
        self.cpu += cpu;
    }

    fn rate(&self) -> f64 {
        median(&self.rates)
    }

    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(index).copied().unwrap_or_default()
    }

    fn cpu_per_op(&self) -> Duration {
        self.cpu / u32::try_from(self.latencies.len().max(1)).unwrap_or(u32::MAX)
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

fn report(backend: &str, case: &str, sample: &Case, baseline: Option<&Case>) {
    let ratio = baseline.map_or(String::new(), |baseline| {
        // Per round: the time of a round trip over the time of an insert.
        let ratios: Vec<f64> = baseline
            .rates
            .iter()
            .zip(&sample.rates)
            .map(|(raw, trips)| raw / trips)
            .collect();
        format!("{:.2}x the time", median(&ratios))
    });
    println!(
        "{backend:<9} | {case:<29} | {:>6.0} | {:>9.2?} | {:>9.2?} | {:>9.2?} | {ratio}",
        sample.rate(),
        sample.percentile(0.50),
        sample.percentile(0.99),
        sample.cpu_per_op(),
    );
}

fn ask(id: &str, created: i64) -> NewAsk {
    NewAsk {
        id: id.to_owned(),
        resume_key: format!("tool:bench:{id}"),
        call_key: None,
        principal: "bench".into(),
        request: json!({"kind": "form"}),
        server: Some("bench".into()),
        tool: Some("echo".into()),
        risk: Some("medium_write".into()),
        created_at: Timestamp::from_second(1_800_000_000 + created).expect("in range"),
        expires_at: None,
        panel: None,
    }
}

/// The baseline: one durable single-row insert per operation, on the same
/// database and settings, through a plain pool.
enum RawInserts {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl RawInserts {
    async fn new(url: &str) -> RawInserts {
        if url.starts_with("sqlite") {
            let options: sqlx::sqlite::SqliteConnectOptions = url.parse().expect("a SQLite URL");
            let pool = sqlx::sqlite::SqlitePool::connect_with(
                options
                    .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                    .synchronous(sqlx::sqlite::SqliteSynchronous::Full),
            )
            .await
            .expect("connects");
            sqlx::query("CREATE TABLE IF NOT EXISTS bench_raw (id INTEGER PRIMARY KEY, body TEXT)")
                .execute(&pool)
                .await
                .expect("creates");
            RawInserts::Sqlite(pool)
        } else {
            let pool = sqlx::postgres::PgPool::connect(url)
                .await
                .expect("connects");
            sqlx::query(
                "CREATE TABLE IF NOT EXISTS bench_raw (id BIGSERIAL PRIMARY KEY, body TEXT)",
            )
            .execute(&pool)
            .await
            .expect("creates");
            RawInserts::Postgres(pool)
        }
    }

    /// One round of `PER_ROUND` inserts, one at a time.
    async fn run(&self, round: usize) -> Vec<Duration> {
        let mut latencies = Vec::with_capacity(PER_ROUND);
        for i in 0..PER_ROUND {
            let body = format!("row {round}-{i}");
            let t = Instant::now();
            let insert = "INSERT INTO bench_raw (body) VALUES ($1)";
            match self {
                RawInserts::Sqlite(pool) => {
                    sqlx::query(insert).bind(body).execute(pool).await.map(drop)
                }
                RawInserts::Postgres(pool) => {
                    sqlx::query(insert).bind(body).execute(pool).await.map(drop)
                }
            }
            .expect("inserts");
            latencies.push(t.elapsed());
        }
        latencies
    }
}

/// Park an ask, wait for it, answer it, and be woken: `count` round trips,
/// `waiters` at a time. Returns the round trips' latencies, and adds to
/// `steps` those of their durable transitions (each park and each answer:
/// two per round trip) timed one by one.
async fn round_trips(
    store: &Store,
    waiters: usize,
    count: usize,
    round: usize,
    steps: Arc<Mutex<Vec<Duration>>>,
) -> Vec<Duration> {
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(count)));
    let mut tasks = Vec::new();
    for task in 0..waiters {
        let store = store.clone();
        let latencies = Arc::clone(&latencies);
        let steps = Arc::clone(&steps);
        tasks.push(tokio::spawn(async move {
            for i in 0..count / waiters {
                let id = format!("rt-{waiters}-{round}-{task}-{i}");
                let t = Instant::now();
                store.park(&ask(&id, i as i64)).await.expect("parks");
                let parked = t.elapsed();
                let settled = askgate_testkit::wait::settlement(&store, &id);
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
                let answered = answering.elapsed();
                assert_eq!(settled.await.status, AskStatus::Answered);
                let trip = t.elapsed();
                steps
                    .lock()
                    .expect("not poisoned")
                    .extend([parked, answered]);
                latencies.lock().expect("not poisoned").push(trip);
            }
        }));
    }
    for task in tasks {
        task.await.expect("joins");
    }
    Arc::try_unwrap(latencies)
        .expect("tasks are done")
        .into_inner()
        .expect("not poisoned")
}

/// Fill the store to 100,000 pending asks, then list the newest page of 100.
/// Also returns the resident memory at 10,000 pending.
async fn newest_page(store: &Store) -> (Case, u64) {
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
    let mut listing = Case::default();
    listing
        .measure(|| async {
            let mut latencies = Vec::new();
            for _ in 0..200 {
                let t = Instant::now();
                let page = store.pending(100, None).await.expect("lists");
                assert_eq!(page.asks.len(), 100);
                latencies.push(t.elapsed());
            }
            latencies
        })
        .await;
    (listing, at_10k)
}

/// The CPU time of every thread of this process so far (Linux), or zero
/// where unknown.
fn cpu_time() -> Duration {
    let Ok(threads) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let nanos: u64 = threads
        .filter_map(Result::ok)
        .filter_map(|thread| std::fs::read_to_string(thread.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
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
