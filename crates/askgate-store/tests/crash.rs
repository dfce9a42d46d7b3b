//! Crash test: a child process parks asks, answers them, moves calls through
//! the ledger and appends audit entries, four writers at a time, printing
//! each write as it is acknowledged; the parent kills it with SIGKILL at a
//! random point, reopens the store and checks:
//!
//! - every acknowledged park and answer is there, answered by the first
//!   answer (a second answer to the same ask never wins);
//! - the audit chain verifies;
//! - every ledger row is in a legal state, every acknowledged move is kept,
//!   and recovery turns `sent` into `may_have_run` — never back to sendable.
//!
//! `ASKGATE_CRASH_ROUNDS` sets how many kills (default 12, bounded for CI);
//! `ASKGATE_CRASH_SEED` replays a run (the seed is printed).
//!
//! This file is its own harness: run with `ASKGATE_CRASH_CHILD` set, the
//! binary is the child.

// The child reports acknowledgements on stdout; that is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use askgate_store::{
    AskStatus, AuditEntry, CallOutcome, CallState, Decision, NewAsk, NewCall, SettleError,
    Settlement, Store,
};
use jiff::Timestamp;
use serde_json::json;

const WRITERS: usize = 4;

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    match std::env::var("ASKGATE_CRASH_CHILD") {
        Ok(url) => runtime.block_on(child(&url)),
        Err(_) => runtime.block_on(parent()),
    }
}

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + second).expect("in range")
}

/// The child: write forever (until killed), acknowledging each write on
/// stdout once the store has returned from it.
async fn child(url: &str) {
    let round = std::env::var("ASKGATE_CRASH_ROUND").unwrap_or_default();
    let store = Store::open(url).await.expect("the child opens the store");
    let (acks, mut acked) = tokio::sync::mpsc::unbounded_channel::<String>();
    for writer in 0..WRITERS {
        let store = store.clone();
        let acks = acks.clone();
        let round = round.clone();
        tokio::spawn(async move {
            for i in 0.. {
                let id = format!("r{round}-w{writer}-{i}");
                let ack = |line: String| {
                    let _ = acks.send(line);
                };
                store.park(&ask(&id)).await.expect("parks");
                ack(format!("parked {id}"));
                store
                    .settle(&id, &answer("first"), at(1))
                    .await
                    .expect("the first answer settles");
                ack(format!("answered {id}"));
                match store.settle(&id, &answer("second"), at(2)).await {
                    Err(SettleError::Conflict { .. }) => {}
                    other => panic!("a second answer to {id} was not a conflict: {other:?}"),
                }
                store
                    .prepare_call(&call(&id))
                    .await
                    .expect("prepares a call");
                ack(format!("prepared {id}"));
                if i % 3 != 0 {
                    store
                        .mark_sent(&id, "marker", at(3))
                        .await
                        .expect("marks sent");
                    ack(format!("sent {id}"));
                }
                if i % 3 == 1 {
                    store
                        .finish_call(&id, CallOutcome::Answered, &json!({"ok": true}), at(4))
                        .await
                        .expect("finishes");
                    ack(format!("finished {id}"));
                }
                store.append_audit(&entry(&id)).await.expect("audits");
                ack(format!("audited {id}"));
                // A call recorded as sent with its decision, in one write.
                let recorded = format!("{id}-r");
                store
                    .record_sent_call(&entry(&recorded), &call(&recorded), "marker", at(6))
                    .await
                    .expect("records a call as sent");
                ack(format!("recorded {recorded}"));
            }
        });
    }
    drop(acks);
    let mut out = std::io::stdout().lock();
    while let Some(line) = acked.recv().await {
        // Flushed line by line: what the parent reads was acknowledged.
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

fn ask(id: &str) -> NewAsk {
    NewAsk {
        server: Some("crash".into()),
        tool: Some("write".into()),
        risk: Some("destructive".into()),
        ..askgate_testkit::new_ask(id, "crash", json!({"kind": "form"}), at(0))
    }
}

fn answer(by: &str) -> Settlement {
    Settlement {
        status: AskStatus::Answered,
        reply: json!({"action": "accept", "by": by}),
        outcome: json!({"outcome": "accepted"}),
        answered_by: Some(by.into()),
        answered_via: "cli".into(),
    }
}

fn call(id: &str) -> NewCall {
    NewCall {
        id: id.to_owned(),
        owner: "crash-child".into(),
        server: "crash".into(),
        tool: "write".into(),
        arguments_digest: Some("hmac-sha256:00".into()),
        principal: Some("anonymous".into()),
        request: None,
        at: at(0),
    }
}

fn entry(id: &str) -> AuditEntry {
    AuditEntry {
        reason: "crash test".into(),
        answered_by: Some("first".into()),
        answered_via: Some("cli".into()),
        arguments_digest: Some("hmac-sha256:00".into()),
        ask_id: Some(id.to_owned()),
        ..askgate_testkit::audit_entry(at(5), "crash", "write", Decision::Elicited)
    }
}

/// A small deterministic generator for the kill points (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % bound
    }
}

async fn parent() {
    let rounds: u32 = std::env::var("ASKGATE_CRASH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(12);
    let seed: u64 = std::env::var("ASKGATE_CRASH_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
                | 1
        });
    eprintln!("crash test: {rounds} kills, ASKGATE_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let dir = askgate_testkit::Scratch::new();
    let url = dir.store_url();
    let me = std::env::current_exe().expect("the test binary");

    // What every round acknowledged, checked again after every later kill.
    let mut acknowledged = Acknowledged::new();
    let mut total_writes = 0usize;
    for round in 0..rounds {
        let mut child = Command::new(&me)
            .env("ASKGATE_CRASH_CHILD", &url)
            .env("ASKGATE_CRASH_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the child starts");
        let stdout = child.stdout.take().expect("piped");
        // Read acknowledgements on a thread, passed on as they come, so the
        // kill comes while the child's writers are mid-write, not between
        // lines.
        let (acks, acked) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = acks.send(line);
            }
        });
        // Kill it after a random number of acknowledged writes (1-300): the
        // child's own progress, not a wall clock, says when.
        let kill_after = 1 + rng.below(300);
        let mut lines = Vec::new();
        while (lines.len() as u64) < kill_after {
            match acked.recv() {
                Ok(line) => lines.push(line),
                Err(_) => {
                    let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                    panic!("the child stopped by itself ({status}) in round {round}");
                }
            }
        }
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        reader.join().expect("the reader joins");
        lines.extend(acked.try_iter());
        total_writes += lines.len();
        for line in lines {
            if let Some((what, id)) = line.split_once(' ') {
                acknowledged
                    .entry(what.to_owned())
                    .or_default()
                    .insert(id.to_owned());
            }
        }
        check(&url, &acknowledged, round).await;
    }
    eprintln!("crash test: {rounds} kills, {total_writes} acknowledged writes, all kept");
    assert!(
        total_writes > 0,
        "the child acknowledged no write at all: the test tested nothing"
    );
}

/// Reopen the store after a kill and check every invariant.
async fn check(url: &str, acknowledged: &Acknowledged, round: u32) {
    let store = Store::open(url)
        .await
        .expect("the store reopens after a kill");
    check_asks(&store, acknowledged, round).await;
    let kept = check_audit(&store, acknowledged, round).await;
    check_calls(&store, acknowledged, &kept, round).await;
    store.close().await;
}

/// The ids of writes the child acknowledged, by kind of write.
type Acknowledged = BTreeMap<String, BTreeSet<String>>;

/// The ids of the acknowledged writes of kind `what`.
fn acked_of(acknowledged: &Acknowledged, what: &str) -> BTreeSet<String> {
    acknowledged.get(what).cloned().unwrap_or_default()
}

/// Every acknowledged park and answer was kept, and the first answer stands.
async fn check_asks(store: &Store, acknowledged: &Acknowledged, round: u32) {
    let acked = |what: &str| acked_of(acknowledged, what);
    for id in acked("parked") {
        assert!(
            store.ask(&id).await.expect("reads").is_some(),
            "round {round}: acknowledged park of {id} lost"
        );
    }
    for id in acked("answered") {
        let row = store.ask(&id).await.expect("reads").expect("present");
        assert_eq!(
            row.status,
            AskStatus::Answered,
            "round {round}: acknowledged answer to {id} lost"
        );
        assert_eq!(
            row.answered_by.as_deref(),
            Some("first"),
            "round {round}: {id} answered by a second answer"
        );
        assert_eq!(row.reply, Some(json!({"action": "accept", "by": "first"})));
    }
}

/// The audit chain is unbroken and holds every acknowledged entry: the ids
/// of the asks its entries name.
async fn check_audit(store: &Store, acknowledged: &Acknowledged, round: u32) -> BTreeSet<String> {
    let acked = |what: &str| acked_of(acknowledged, what);
    let verification = store.verify_audit().await.expect("verifies");
    assert_eq!(
        verification.broken, None,
        "round {round}: the audit chain breaks after a kill"
    );
    let audited = acked("audited");
    assert!(
        verification.entries >= audited.len() as u64,
        "round {round}: {} audit entries acknowledged, {} kept",
        audited.len(),
        verification.entries
    );
    let chain = askgate_testkit::audited(store).await;
    let kept: BTreeSet<String> = chain.into_iter().filter_map(|e| e.ask_id).collect();
    for id in &audited {
        assert!(
            kept.contains(id),
            "round {round}: acknowledged audit entry for {id} lost"
        );
    }
    kept
}

/// Every acknowledged call was kept, in a state its acknowledged moves
/// allow; a prepared one can be sent, once.
async fn check_calls(
    store: &Store,
    acknowledged: &Acknowledged,
    kept: &BTreeSet<String>,
    round: u32,
) {
    let acked = |what: &str| acked_of(acknowledged, what);
    // A call recorded as sent with its decision: both kept.
    for id in acked("recorded") {
        assert!(
            kept.contains(&id),
            "round {round}: acknowledged audit entry of recorded call {id} lost"
        );
        let row = store.call(&id).await.expect("reads");
        assert!(
            row.is_some(),
            "round {round}: acknowledged recorded call {id} lost"
        );
    }

    // The child's process is gone: recover its calls, as a restarted
    // gateway would.
    // It never beat: none of its calls has a live owner.
    let recovered = store
        .recover_lapsed(at(10), std::time::Duration::from_secs(20))
        .await
        .expect("recovers");
    assert!(
        recovered
            .iter()
            .all(|row| row.state == CallState::MayHaveRun),
        "round {round}: recovery made a call something other than may_have_run"
    );
    let sent = acked("sent");
    let finished = acked("finished");
    for id in acked("prepared") {
        let row = store.call(&id).await.expect("reads").expect("present");
        let legal = if finished.contains(&id) {
            row.state == CallState::Answered
        } else if sent.contains(&id) {
            // Sent and maybe answered before the kill, or may have run.
            matches!(row.state, CallState::Answered | CallState::MayHaveRun)
        } else {
            // Never acknowledged as sent: still prepared (safe to send), or
            // sent (then recovered to may_have_run) or answered unacknowledged.
            matches!(
                row.state,
                CallState::Prepared | CallState::MayHaveRun | CallState::Answered
            )
        };
        assert!(
            legal,
            "round {round}: call {id} is {} after a kill",
            row.state.as_str()
        );
        if row.state == CallState::Prepared {
            // Safe to send after the crash, exactly once.
            let moved = store.mark_sent(&id, "resent", at(11)).await;
            assert!(
                moved.is_ok(),
                "round {round}: a prepared call could not be sent"
            );
            let again = store.mark_sent(&id, "resent", at(12)).await;
            assert!(again.is_err(), "round {round}: {id} was sent twice");
        }
    }
}
