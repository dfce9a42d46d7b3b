//! How a session ends, as desktop clients end it: SIGTERM or SIGINT (Claude
//! Code, Codex). The gateway stops taking calls, lets the call in flight
//! finish, keeps every record, closes its upstream and exits 0.

use std::process::Stdio;

use askgate_testkit::Seen;
use askgate_testkit::process::keep_lines_async;
use rmcp::ServiceExt;
use serde_json::json;

use super::{on_notes, person, setup};

/// Both tools the test calls are reads: they take the express lane, whose
/// records are written once each call ends.
const READS: &str = "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n\n\
                     [[rules]]\ntool = \"wait_for_note\"\nrisk = \"read\"\n";

/// The processes `pid` started, by their ids.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|ids| {
            ids.split_whitespace()
                .filter_map(|id| id.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Whether process `pid` still runs (an exited one not yet reaped does
/// not).
fn runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .next()?
                .to_owned();
            Some(state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// Start the gateway of `setup` on pipes of the test's own (a signal can
/// reach it, its exit be awaited), with a client: the process, its
/// stderr's log, and the client.
async fn started(
    setup: &askgate_testkit::gateway::Setup,
) -> (
    tokio::process::Child,
    Seen<String>,
    rmcp::service::RunningService<rmcp::RoleClient, askgate_testkit::Person>,
) {
    let mut command = setup.command();
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut gateway = command.spawn().expect("the gateway starts");
    let log = Seen::default();
    keep_lines_async(gateway.stderr.take().expect("piped"), log.clone());
    let pipes = (
        gateway.stdout.take().expect("piped"),
        gateway.stdin.take().expect("piped"),
    );
    let client = person(json!({}), vec![])
        .serve(pipes)
        .await
        .expect("the client connects");
    (gateway, log, client)
}

#[tokio::test]
async fn a_sigterm_lets_the_call_in_flight_finish_keeps_every_record_and_stops_the_upstream() {
    if !std::path::Path::new("/proc/self/task").exists() {
        eprintln!("skipped: no /proc here to see the upstream's process");
        return;
    }
    let setup = setup().config(READS).logging("askgate_gateway=info");
    let (mut gateway, log, client) = started(&setup).await;
    for _ in 0..20 {
        // No such note: the server's own answer says so.
        let _ = on_notes(&client, "read_note", json!({"name": "todo"})).await;
    }
    let pid = gateway.id().expect("runs");
    let upstreams = children_of(pid);
    assert_eq!(upstreams.len(), 1, "the gateway runs its one upstream");

    // A call in flight when the signal comes: it finishes.
    let waiting = tokio::spawn({
        let peer = client.peer().clone();
        async move {
            peer.call_tool(askgate_testkit::mcp::call(
                "wait_for_note",
                json!({"name": "later", "wait_ms": 1500}),
            ))
            .await
        }
    });
    log.line_with(&["askgate-example-upstream: call wait_for_note"])
        .await;
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(signalled.success());
    log.line_with(&["stopping: no new calls", "SIGTERM"]).await;

    // No new call is taken, with the reason.
    let refused = client
        .call_tool(askgate_testkit::mcp::call(
            "read_note",
            json!({"name": "todo"}),
        ))
        .await
        .expect_err("refused while stopping");
    assert!(
        refused.to_string().contains("askgate is stopping"),
        "{refused}"
    );
    let finished = waiting
        .await
        .expect("the task ends")
        .expect("the call in flight is answered");
    assert!(
        askgate_testkit::mcp::text(&finished).contains("no note named"),
        "its server's own answer: {finished:?}"
    );

    let status = gateway.wait().await.expect("the gateway exits");
    assert!(status.success(), "a clean stop exits 0: {status:?}");
    for upstream in upstreams {
        assert!(
            !runs(upstream),
            "the upstream {upstream} was stopped, not orphaned"
        );
    }
    let store = askgate_store::Store::open(setup.store_url())
        .await
        .expect("opens");
    let audited = askgate_testkit::audited(&store).await;
    store.close().await;
    assert_eq!(
        audited.len(),
        21,
        "every read and the call in flight are audited"
    );
}

#[tokio::test]
async fn an_upstream_that_ignores_the_end_of_its_stdin_is_sent_sigterm_before_it_is_killed() {
    let setup = setup().config("");
    // An upstream whose shell stays after the server in it exits at the
    // end of its stdin, and leaves a mark when it is sent SIGTERM.
    let mark = setup.dir().join("sigterm");
    let script = format!(
        "trap 'echo term > \"$0\"; kill $! 2>/dev/null; exit 0' TERM; {}; sleep 30 & wait",
        setup.upstream_command()
    );
    let setup = setup.tables(&format!(
        "[[upstreams]]\nname = \"stubborn\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}, {:?}]\n",
        mark.display().to_string()
    ));
    let (mut gateway, _log, client) = started(&setup).await;
    // Both upstreams are up: their tools are listed.
    let tools = client.list_all_tools().await.expect("tools");
    assert!(
        tools.iter().any(|t| t.name.starts_with("stubborn")),
        "{:?}",
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
    );
    let pid = gateway.id().expect("runs");
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(signalled.success());
    let status = gateway.wait().await.expect("the gateway exits");
    assert!(status.success(), "a clean stop exits 0: {status:?}");
    assert_eq!(
        std::fs::read_to_string(&mark).ok().as_deref(),
        Some("term\n"),
        "the upstream was sent SIGTERM before it was killed"
    );
}

#[tokio::test]
async fn a_longer_stop_grace_lets_a_call_past_the_default_grace_finish_at_a_sigterm() {
    // Past the default grace of 10 s, within the configured one.
    let setup = setup()
        .config(&format!("stop_grace = \"1m\"\n{READS}"))
        .logging("askgate_gateway=info");
    let (mut gateway, log, client) = started(&setup).await;
    let waiting = tokio::spawn({
        let peer = client.peer().clone();
        async move {
            peer.call_tool(askgate_testkit::mcp::call(
                "wait_for_note",
                json!({"name": "later", "wait_ms": 11000}),
            ))
            .await
        }
    });
    log.line_with(&["askgate-example-upstream: call wait_for_note"])
        .await;
    let pid = gateway.id().expect("runs");
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(signalled.success());
    log.line_with(&["stopping: no new calls", "grace_ms=60000"])
        .await;
    let finished = waiting
        .await
        .expect("the task ends")
        .expect("the call in flight is answered");
    assert!(
        askgate_testkit::mcp::text(&finished).contains("no note named"),
        "its server's own answer, not a cancel: {finished:?}"
    );
    let status = gateway.wait().await.expect("the gateway exits");
    assert!(status.success(), "a clean stop exits 0: {status:?}");
}
