//! Faults of the SQLite file: locked by another process, and out of space.
//! Each gets a clear error naming the store, writes nothing partial, and
//! leaves the store usable once the fault is gone.
//!
//! Out of space is made real without privileges: a child process runs with
//! a file-size limit (`ulimit -f`, with SIGXFSZ ignored), so the database
//! cannot grow past it, as on a full disk. This file is its own harness: with
//! `ASKGATE_FAULT_CHILD` set, the binary is that child.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::Command;

use askgate_store::{AskStatus, AuditEntry, Decision, Error, NewAsk, NewCall, Store};
use askgate_testkit::Scratch;
use jiff::Timestamp;
use serde_json::json;

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    if let Ok(url) = std::env::var("ASKGATE_FAULT_CHILD") {
        runtime.block_on(fill_until_full(&url));
        return;
    }
    runtime.block_on(a_locked_file_is_a_clear_error_and_writes_nothing());
    eprintln!("ok: a locked file is a clear error and writes nothing");
    runtime.block_on(a_full_disk_is_a_clear_error_and_writes_nothing());
    eprintln!("ok: a full disk is a clear error and writes nothing");
}

/// A call to record, and the audit entry of its decision, `reason_bytes`
/// long.
fn call(id: &str, reason_bytes: usize) -> (NewCall, AuditEntry) {
    let at = Timestamp::from_second(1_800_000_000).expect("in range");
    let call = NewCall {
        id: id.to_owned(),
        owner: "faults".into(),
        server: "files".into(),
        tool: "delete".into(),
        arguments_digest: None,
        principal: None,
        request: None,
        at,
    };
    let entry = AuditEntry {
        at,
        server: "files".into(),
        tool: "delete".into(),
        risk: "destructive".into(),
        decision: Decision::Elicited,
        reason: "x".repeat(reason_bytes),
        answered_by: Some("alice".into()),
        principal: None,
        answered_via: Some("mcp".into()),
        arguments_digest: None,
        ask_id: None,
        decision_key: None,
    };
    (call, entry)
}

fn ask(id: &str, body_bytes: usize) -> NewAsk {
    let request = json!({"kind": "form", "padding": "x".repeat(body_bytes)});
    let at = Timestamp::from_second(1_800_000_000).expect("in range");
    askgate_testkit::new_ask(id, "faults", request, at)
}

async fn a_locked_file_is_a_clear_error_and_writes_nothing() {
    let dir = Scratch::new();
    let url = dir.store_url();
    let store = Store::open(&url).await.expect("opens");
    store.park(&ask("before", 10)).await.expect("parks");

    // Another process (here: another connection) takes the write lock.
    let mut other = <sqlx::SqliteConnection as sqlx::Connection>::connect(&url)
        .await
        .expect("connects");
    sqlx::raw_sql("BEGIN EXCLUSIVE")
        .execute(&mut other)
        .await
        .expect("locks");
    let error = store
        .park(&ask("while-locked", 10))
        .await
        .expect_err("a write to a locked file fails");
    let message = error.to_string();
    assert!(
        matches!(error, Error::Locked { .. }),
        "expected Error::Locked, got {error:?}"
    );
    assert!(
        message.contains(dir.path().to_str().expect("utf-8")) && message.contains("locked"),
        "the message names the store and the lock: {message}"
    );
    sqlx::raw_sql("ROLLBACK")
        .execute(&mut other)
        .await
        .expect("unlocks");
    drop(other);

    assert!(
        store.ask("while-locked").await.expect("reads").is_none(),
        "nothing of the refused write is there"
    );
    store
        .park(&ask("after", 10))
        .await
        .expect("once the lock is gone, writes go through again");
    assert!(store.ask("before").await.expect("reads").is_some());
    store.close().await;
}

async fn a_full_disk_is_a_clear_error_and_writes_nothing() {
    let dir = Scratch::new();
    let url = dir.store_url();
    let store = Store::open(&url).await.expect("opens");
    store.close().await;

    // The child parks 16 KiB asks until the file cannot grow (2 MiB limit),
    // and reports what was acknowledged and the error it got.
    let me = std::env::current_exe().expect("the test binary");
    let output = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 4096; exec \"$0\"")
        .arg(&me)
        .env("ASKGATE_FAULT_CHILD", &url)
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the child failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let acknowledged: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("parked "))
        .collect();
    let failed = stdout
        .lines()
        .find_map(|line| line.strip_prefix("failed "))
        .expect("the child ran out of space");
    assert!(
        acknowledged.len() > 10,
        "the limit left room for some asks first"
    );

    // Space is back (no limit here): everything acknowledged is there, the
    // refused ask is not, and the file is sound.
    let store = Store::open(&url).await.expect("reopens after the fault");
    for id in &acknowledged {
        let row = store.ask(id).await.expect("reads").expect("kept");
        assert_eq!(row.status, AskStatus::Pending);
    }
    assert!(
        store.ask(failed).await.expect("reads").is_none(),
        "the write that ran out of space left nothing"
    );
    // Nor did the call's record refused then: neither its ledger row nor
    // its entry (whose command commits the write when it is alone in its
    // batch, as here), and the chain holds what was acknowledged.
    let recorded: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("recorded "))
        .collect();
    let unrecorded = stdout
        .lines()
        .find_map(|line| line.strip_prefix("unrecorded "))
        .expect("the child's record ran out of space");
    for id in &recorded {
        assert!(store.call(id).await.expect("reads").is_some(), "{id} kept");
    }
    assert!(store.call(unrecorded).await.expect("reads").is_none());
    let chain = store.verify_audit().await.expect("verifies");
    assert_eq!((chain.entries, chain.broken), (recorded.len() as u64, None));
    let integrity: String = askgate_testkit::sqlite_value(&url, "PRAGMA integrity_check").await;
    assert_eq!(integrity, "ok");
    store
        .park(&ask("after", 10))
        .await
        .expect("writes go through again");
    let (after, entry) = call("after", 10);
    store
        .record_sent_call(&entry, &after, "m-after", after.at)
        .await
        .expect("records go through again");
    let chain = store.verify_audit().await.expect("verifies");
    assert_eq!(
        (chain.entries, chain.broken),
        (recorded.len() as u64 + 1, None)
    );
    store.close().await;
}

/// The child: park until the store refuses, then check the refusal.
async fn fill_until_full(url: &str) {
    let store = Store::open(url).await.expect("the child opens the store");
    for i in 0..10_000 {
        let id = format!("fill-{i}");
        match store.park(&ask(&id, 16 * 1024)).await {
            Ok(_) => println!("parked {id}"),
            Err(error) => {
                let message = error.to_string();
                assert!(
                    message.starts_with(&format!("store {url}")),
                    "the error names the store: {message}"
                );
                assert!(
                    matches!(error, Error::NoSpace { .. }),
                    "expected Error::NoSpace, got {error:?}"
                );
                eprintln!("the child got: {message}");
                println!("failed {id}");
                // The store still answers reads while the disk is full.
                let first = store.ask("fill-0").await;
                assert!(matches!(first, Ok(Some(_))), "reads still work: {first:?}");
                record_until_full(&store, url).await;
                store.close().await;
                return;
            }
        }
    }
    panic!("the file-size limit was never reached");
}

/// The child, once the disk is full: record calls, each with a large audit
/// entry, until one is refused (a park's refusal may leave room for a
/// smaller write), and check the refusal.
async fn record_until_full(store: &Store, url: &str) {
    for i in 0..10_000 {
        let id = format!("call-{i}");
        let (call, entry) = call(&id, 8 * 1024);
        match store.record_sent_call(&entry, &call, "m", call.at).await {
            Ok(_) => println!("recorded {id}"),
            Err(error) => {
                assert!(
                    matches!(error, Error::NoSpace { .. }),
                    "expected Error::NoSpace for {url}, got {error:?}"
                );
                println!("unrecorded {id}");
                return;
            }
        }
    }
    panic!("the file-size limit was never reached by records");
}
