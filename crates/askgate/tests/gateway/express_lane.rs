//! The express lane beyond the happy path: what a client sees when the
//! upstream answers a read with an error, when the client cancels a read in
//! flight, when the upstream dies mid-read, when the answer is large, and
//! when a read names a revision of its own (rmcp's to check).
//!
//! Every read here is ruled `read`, so it takes the lane; each test first
//! checks that it did (the gateway's debug line "on the express lane"), so
//! a call that fell back to rmcp cannot pass for the lane. The gateway's
//! stderr — its own logs and its upstreams' — is read by the test.

use askgate_store::{Decision, Store};
use askgate_testkit::gateway::{Gateway, ledger};
use askgate_testkit::mcp::{send_call, text};
use askgate_testkit::person::accept;
use askgate_testkit::process::sigkill;
use askgate_testkit::{Scratch, binaries, within};
use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, ElicitResult};
use serde_json::{Value as Json, json};

use super::{person, setup};

/// Reads ruled `read`: they need no person, so they take the lane.
const READS: &str = "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n\n\
                     [[rules]]\ntool = \"wait_for_note\"\nrisk = \"read\"\n";

/// What the example upstream writes to stderr when a call reaches it.
const WAIT_ARRIVED: &str = "askgate-example-upstream: call wait_for_note";

/// What it writes when a `wait_for_note` is cancelled
/// (`askgate_conformance::example_upstream::WAIT_CANCELLED`).
const WAIT_CANCELLED: &str = "askgate-example-upstream: wait_for_note cancelled";

/// What it writes, with the reason it was given, at each cancel.
const CANCELLED_BECAUSE: &str = askgate_conformance::example_upstream::CANCELLED_BECAUSE;

/// A wait that never ends by itself within a test: an hour.
const FOREVER_MS: u64 = 60 * 60 * 1000;

/// A gateway over the example upstream `notes` with `config` (TOML, as in
/// `gateway_on`) and `upstream` (keys of `notes`' table), whose log says
/// when a call takes the lane; its client's person answers from `script`.
async fn watched(config: &str, upstream: &str, script: Vec<ElicitResult>) -> Gateway {
    let capabilities = json!({"elicitation": {"form": {}}});
    setup()
        .config(config)
        .upstream_keys(upstream)
        .logging("askgate_gateway::express=debug")
        .connect(person(capabilities, script))
        .await
}

/// Wait until the call of `tool` took the express lane.
async fn took_the_lane(h: &Gateway, tool: &str) {
    h.log.line_with(&["on the express lane", tool]).await;
}

/// What `answer` comes to — or a failed test, where a lane that lost the
/// answer would leave the test hanging.
async fn guarded<T>(answer: impl Future<Output = T>) -> T {
    within("an answer", answer).await
}

/// The parameters of a call of `notes`' tool `name` (the only upstream:
/// its tools keep their names).
fn on_notes(name: &str, args: Json) -> CallToolRequestParams {
    askgate_testkit::mcp::call(name, args)
}

/// The audit chain of the stopped gateway's store: its decisions, after
/// checking that it verifies.
async fn verified_decisions(store_url: &str) -> Vec<Decision> {
    let store = Store::open(store_url).await.expect("the store opens");
    let verification = store.verify_audit().await.expect("verifies");
    assert_eq!(verification.broken, None, "the audit chain is unbroken");
    let audited = askgate_testkit::audited(&store).await;
    store.close().await;
    audited.into_iter().map(|e| e.decision).collect()
}

/// Stop the gateway: its ledger's states, and the decisions of its audit
/// chain (checked to verify).
async fn records(h: Gateway) -> (Vec<String>, Vec<Decision>) {
    let stopped = h.stop().await;
    let url = stopped.store_url();
    (ledger(url).await, verified_decisions(url).await)
}

/// Two reads' decisions: no person was needed for either.
const TWO_READS: [Decision; 2] = [Decision::NotRequired, Decision::NotRequired];

#[tokio::test]
async fn an_upstreams_error_on_a_read_reaches_the_client_as_it_gave_it_and_is_ledgered_as_failed() {
    let h = watched(READS, "", vec![]).await;
    // An invalid note name: the upstream answers with a JSON-RPC error.
    let bad_name = on_notes("read_note", json!({"name": "../etc/passwd"}));
    let refused = guarded(h.client.call_tool(bad_name)).await;
    took_the_lane(&h, "read_note").await;
    let Err(ServiceError::McpError(error)) = refused else {
        panic!("expected the upstream's error, got {refused:?}");
    };
    // The upstream's own error, as a client of it directly gets it.
    assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert!(
        error.message.starts_with("\"name\" must be"),
        "{}",
        error.message
    );
    let stopped = h.stop().await;
    assert_eq!(ledger(stopped.store_url()).await, ["failed"]);
    assert_eq!(
        verified_decisions(stopped.store_url()).await,
        [Decision::NotRequired]
    );
}

/// A read through a gateway with `express_lane = lane`, cancelled by its
/// client with a reason of its own while its server works on it: whether
/// it took the lane, the reason its server was given, and the ledger and
/// the audited decisions once a later read is answered.
async fn cancelled_mid_read(lane: bool) -> (bool, String, Vec<String>, Vec<Decision>) {
    let h = watched(&format!("express_lane = {lane}\n{READS}"), "", vec![]).await;
    let waiting = on_notes(
        "wait_for_note",
        json!({"name": "never", "wait_ms": FOREVER_MS}),
    );
    let handle = send_call(h.client.peer(), waiting).await;
    h.log.line_with(&[WAIT_ARRIVED]).await;
    let took = h
        .log
        .has_line_with(&["on the express lane", "wait_for_note"]);
    // The client's own words: the gateway's to read, not to pass on.
    handle
        .cancel(Some("the user pressed stop in project x".into()))
        .await
        .expect("the cancel is sent");
    // The upstream stops waiting: the cancel reached it.
    h.log.line_with(&[WAIT_CANCELLED]).await;
    let told = h.log.line_with(&[CANCELLED_BECAUSE]).await;
    // The gateway goes on serving.
    let later = on_notes("read_note", json!({"name": "never"}));
    let later = guarded(h.client.call_tool(later))
        .await
        .expect("a later read answers");
    assert!(text(&later).contains("no note named"), "{}", text(&later));
    let (ledger, decisions) = records(h).await;
    (took, told, ledger, decisions)
}

#[tokio::test]
async fn a_read_the_client_cancels_is_cancelled_upstream_for_the_same_reason_on_either_path() {
    let on = cancelled_mid_read(true).await;
    let off = cancelled_mid_read(false).await;
    assert!(on.0 && !off.0, "the lane, then rmcp: {} {}", on.0, off.0);
    // Its server is told the gateway gave the request up, in the words
    // rmcp uses; the client's own reason stays with the gateway.
    for told in [&on.1, &off.1] {
        assert!(
            told.contains("\"request abandoned by the caller\""),
            "{told}"
        );
        assert!(!told.contains("project x"), "{told}");
    }
    // Sent, and given up while its server worked on it: it may have run.
    // (Left at `sent`, the row would read as a call a crash cut off.)
    assert_eq!(
        (&on.2, &on.3),
        (
            &vec!["may_have_run".to_owned(), "answered".to_owned()],
            &TWO_READS.to_vec()
        )
    );
    assert_eq!((&on.2, &on.3), (&off.2, &off.3));
}

/// A read whose upstream dies while it waits, through a gateway with a
/// second upstream (`express_lane` as `lane` says): the read's error and
/// the next read's of that upstream, and what the ledger and the audit
/// chain say; the other upstream and the list go on.
async fn dies_mid_read(lane: bool) -> (Vec<String>, Vec<String>, Vec<Decision>) {
    let notes_dir = Scratch::new();
    let mark = notes_dir.path().display().to_string();
    let spare = format!(
        "express_lane = {lane}\n{READS}\n[[upstreams]]\nname = \"spare\"\ncommand = {:?}\n",
        binaries!().upstream.display().to_string()
    );
    let notes = format!("args = [\"--dir\", {mark:?}]");
    let h = watched(&spare, &notes, vec![]).await;
    let peer = h.client.peer().clone();
    // Two upstreams: each one's tools under its name.
    let waiting = askgate_testkit::mcp::call(
        "notes__wait_for_note",
        json!({"name": "never", "wait_ms": FOREVER_MS}),
    );
    let waiting = tokio::spawn(async move { peer.call_tool(waiting).await });
    h.log.line_with(&[WAIT_ARRIVED]).await;
    assert_eq!(
        h.log
            .has_line_with(&["on the express lane", "wait_for_note"]),
        lane,
        "the read took the lane only with express_lane on"
    );
    // Its prompts listed while it lives: the gateway knows where they go.
    guarded(h.client.list_all_prompts())
        .await
        .expect("prompts/list answers");
    kill_child(h.pid, &mark);
    let failed = guarded(waiting).await.expect("the read's task ends");
    let Err(ServiceError::McpError(error)) = failed else {
        panic!("expected an error naming the upstream, got {failed:?}");
    };
    // A read of the dead server's, made before any list drops its tools,
    // is not sent: nothing may have run.
    let read = on_notes("notes__read_note", json!({"name": "todo"}));
    let after = guarded(h.client.call_tool(read))
        .await
        .expect_err("a read of a server gone fails");
    let ServiceError::McpError(after) = after else {
        panic!("expected an error naming the upstream, got {after:?}");
    };
    // Nor is a prompt it listed asked of it.
    let prompt = rmcp::model::GetPromptRequestParams::new("notes__summarize_notes");
    let prompt = guarded(h.client.get_prompt(prompt))
        .await
        .expect_err("a prompt of a server gone fails");
    let ServiceError::McpError(prompt) = prompt else {
        panic!("expected an error naming the upstream, got {prompt:?}");
    };
    // The gateway still lists tools, and the other upstream still answers.
    let tools = guarded(h.client.list_all_tools())
        .await
        .expect("tools/list answers");
    assert!(
        tools.iter().any(|t| t.name == "spare__read_note"),
        "{:?}",
        tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>()
    );
    let mut on_spare = CallToolRequestParams::new("spare__read_note");
    on_spare.arguments = json!({"name": "todo"}).as_object().cloned();
    let answered = guarded(h.client.call_tool(on_spare))
        .await
        .expect("spare answers");
    assert!(
        text(&answered).contains("no note named"),
        "{}",
        text(&answered)
    );
    let (ledger, decisions) = records(h).await;
    let errors = vec![
        error.message.to_string(),
        after.message.to_string(),
        prompt.message.to_string(),
    ];
    (errors, ledger, decisions)
}

#[tokio::test]
async fn an_upstream_that_dies_mid_read_fails_the_read_as_one_that_may_have_run_the_next_as_never_sent_and_the_others_go_on()
 {
    let on = dies_mid_read(true).await;
    let off = dies_mid_read(false).await;
    // One message on either path, in the gateway's words (rmcp's own is
    // "Transport closed").
    assert_eq!(
        on.0,
        [
            "notes failed on wait_for_note: its connection closed; it was sent and no answer \
             came back, so it may have run",
            "notes failed on read_note: its connection had closed, so nothing was sent",
            "notes could not be asked to get prompt summarize_notes: its connection had \
             closed, so nothing was sent"
        ]
    );
    assert_eq!(
        on, off,
        "the client and the records cannot tell the paths apart"
    );
    assert_eq!(
        (on.1, on.2),
        (
            vec!["may_have_run".into(), "failed".into(), "answered".into()],
            vec![Decision::NotRequired; 3]
        )
    );
}

#[tokio::test]
async fn a_large_answer_comes_back_through_the_lane_intact() {
    let confirms = vec![accept(json!({"confirm": true}))];
    let h = watched(READS, "", confirms).await;
    // Over a MiB, with what JSON escapes: quotes, backslashes, newlines,
    // and characters beyond ASCII.
    let line = "a \"quoted\" C:\\path, été ✓\n";
    let note = line.repeat((1 << 20) / line.len() + 1);
    let write = on_notes("write_note", json!({"name": "big", "text": note}));
    let written = guarded(h.client.call_tool(write))
        .await
        .expect("the write answers");
    assert_ne!(written.is_error, Some(true), "{}", text(&written));
    let read = on_notes("read_note", json!({"name": "big"}));
    let read = guarded(h.client.call_tool(read))
        .await
        .expect("the read answers");
    took_the_lane(&h, "read_note").await;
    assert!(text(&read) == note, "the note came back changed");
    let stopped = h.stop().await;
    assert_eq!(ledger(stopped.store_url()).await, ["answered", "answered"]);
}

/// SIGKILL the child of process `parent` whose command line has the
/// argument `mark`.
fn kill_child(parent: u32, mark: &str) {
    let mut children = Vec::new();
    let threads = std::fs::read_dir(format!("/proc/{parent}/task")).expect("the gateway runs");
    for thread in threads {
        let listed = thread
            .ok()
            .and_then(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .unwrap_or_default();
        children.extend(listed.split_whitespace().map(str::to_owned));
    }
    let child = children
        .iter()
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| line.split(|b| *b == 0).any(|arg| arg == mark.as_bytes()))
        })
        .unwrap_or_else(|| panic!("no child of {parent} has {mark} among {children:?}"));
    sigkill(child);
}

#[tokio::test]
async fn with_the_lane_off_the_same_read_fails_the_same_way_through_rmcp() {
    let off = format!("express_lane = false\n{READS}");
    let mut seen = Vec::new();
    for config in [READS.to_owned(), off] {
        let h = watched(&config, "", vec![]).await;
        let bad_name = on_notes("read_note", json!({"name": "../etc/passwd"}));
        let refused = guarded(h.client.call_tool(bad_name)).await;
        let Err(ServiceError::McpError(error)) = refused else {
            panic!("expected the upstream's error, got {refused:?}");
        };
        // The gateway logs the lane before it sends; the upstream logs the
        // call when it arrives: once the second is seen, so is the first.
        h.log
            .line_with(&["askgate-example-upstream: call read_note"])
            .await;
        let lane = h.log.has_line_with(&["on the express lane"]);
        let stopped = h.stop().await;
        let ledger = ledger(stopped.store_url()).await;
        let decisions = verified_decisions(stopped.store_url()).await;
        seen.push((lane, error.code, error.message, ledger, decisions));
    }
    let (on, off) = (&seen[0], &seen[1]);
    assert!(on.0, "the lane takes the read when it is on");
    assert!(!off.0, "express_lane = false: the read goes through rmcp");
    assert_eq!(
        (&on.1, &on.2, &on.3, &on.4),
        (&off.1, &off.2, &off.3, &off.4),
        "the client and the records cannot tell the two paths apart"
    );
}

/// What the one tool, `chatty`, of a Python server (see `python_upstream`)
/// does: it tells of its progress a thousand times and answers, all in one
/// write: the lane reads the answer
/// right behind the notifications, which reach the client through rmcp
/// (before the lane announced them, about 600 of the thousand came after
/// the answer).
const CHATTY: &str = r#"
        token = message["params"]["_meta"]["progressToken"]
        lines = [json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                             "params": {"progressToken": token, "progress": n}})
                 for n in range(1, 1001)]
        lines.append(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
            "content": [{"type": "text", "text": "done"}]}}))
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
"#;

#[tokio::test]
async fn the_progress_a_server_sent_before_its_answer_reaches_the_client_first_on_the_lane() {
    if super::python_missing() {
        return;
    }
    let setup = setup()
        .config("[[rules]]\ntool = \"chatty\"\nrisk = \"read\"")
        .tables(&super::python_upstream("chatty", "chatty", CHATTY));
    let mut raw = super::raw::Raw::start(&setup).await;
    for id in 10..20 {
        let token = format!("p{id}");
        raw.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "chatty__chatty", "arguments": {}, "_meta": {"progressToken": token}}})
            .to_string(),
        )
        .await;
        let mut heard = 0;
        loop {
            let message = raw.next().await;
            if message["method"] == "notifications/progress" {
                assert_eq!(message["params"]["progressToken"], token.as_str());
                heard += 1;
            } else if message["id"] == id {
                assert_eq!(message["result"]["content"][0]["text"], "done");
                break;
            }
        }
        assert_eq!(
            heard, 1000,
            "call {id}: every notification before the answer"
        );
    }
}

/// A read whose `_meta` names a protocol revision: rmcp checks the
/// revision against the gateway's (and a 2026-07-28 request's own
/// metadata), so the lane leaves it to rmcp. Before, the lane served such
/// a read where rmcp refuses it.
#[tokio::test]
async fn a_read_that_names_its_own_revision_is_checked_as_rmcp_checks_it_on_either_path() {
    let off = format!("express_lane = false\n{READS}");
    let mut seen = Vec::new();
    for config in [READS.to_owned(), off] {
        let h = watched(&config, "", vec![]).await;
        let mut refusals = Vec::new();
        for version in ["1999-01-01", "2026-07-28"] {
            let mut call = on_notes("read_note", json!({"name": "todo"}));
            call.meta = Some(
                serde_json::from_value(json!({"io.modelcontextprotocol/protocolVersion": version}))
                    .expect("a request's _meta"),
            );
            let refused = guarded(h.client.call_tool(call)).await;
            let Err(ServiceError::McpError(error)) = refused else {
                panic!("{version}: expected rmcp's refusal, got {refused:?}");
            };
            refusals.push((error.code, error.message, error.data));
        }
        // Served on the lane, a read logs it before its answer.
        let lane = h.log.has_line_with(&["on the express lane"]);
        h.stop().await;
        seen.push((lane, refusals));
    }
    let (on, off) = (&seen[0], &seen[1]);
    assert!(!on.0 && !off.0, "neither read took the lane");
    assert_eq!(on.1, off.1, "the client cannot tell the two paths apart");
    let (code, message, data) = &on.1[0];
    assert_eq!(
        (code.0, message.as_ref()),
        (-32022, "Unsupported protocol version"),
        "an unknown revision is refused as such"
    );
    assert!(
        data.as_ref()
            .is_some_and(|data| data.to_string().contains("1999-01-01")),
        "the revision asked for is named: {data:?}"
    );
    assert!(
        on.1[1]
            .1
            .contains("io.modelcontextprotocol/clientCapabilities"),
        "a 2026-07-28 request's missing metadata is named: {:?}",
        on.1[1]
    );
}
