//! What the gateway writes to stderr: lines for people, with no colour
//! codes where no terminal reads them, and never a call's arguments or an
//! upstream's messages, however much is logged.

use askgate_testkit::gateway::Setup;
use askgate_testkit::mcp::call;
use askgate_testkit::process::keep_lines_async;
use askgate_testkit::within;
use askgate_testkit::{Person, Seen};
use rmcp::ServiceExt;
use rmcp::model::{ElicitResult, ElicitationAction};
use rmcp::service::{RoleClient, RunningService};
use serde_json::json;

use super::{person, setup};

/// A value of a call's argument no log line may hold.
const ARGUMENT: &str = "arg-secret-value-123";

/// The text of an upstream's log notification no log line may hold.
const NOTICE: &str = "upstream-notice-text-456";

/// A stdio server whose one tool sends a log notification, and progress
/// when asked for, then answers.
const TELLING: &str = r#"
import json, sys
answers = {
    "initialize": {"protocolVersion": "2025-06-18",
                   "capabilities": {"tools": {}, "logging": {}},
                   "serverInfo": {"name": "telling", "version": "1"}},
    "tools/list": {"tools": [{"name": "work", "inputSchema": {"type": "object"}}]},
    "ping": {},
}
def send(message):
    print(json.dumps(dict(jsonrpc="2.0", **message)), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if "id" in message and method in answers:
        send({"id": message["id"], "result": answers[method]})
    elif method == "tools/call":
        send({"method": "notifications/message",
              "params": {"level": "info", "logger": "work", "data": "upstream-notice-text-456"}})
        token = message["params"].get("_meta", {}).get("progressToken")
        if token is not None:
            send({"method": "notifications/progress",
                  "params": {"progressToken": token, "progress": 1, "total": 1,
                             "message": "upstream-notice-text-456"}})
        send({"id": message["id"], "result": {"content": [{"type": "text", "text": "worked"}]}})
"#;

/// The gateway of `setup` logging at `level` (colour turned off by
/// `NO_COLOR` when `no_color`, else only by its stderr being a pipe), and
/// `person` connected to it: the client, and every line it logs.
async fn logged(
    setup: &Setup,
    level: &str,
    no_color: bool,
    person: Person,
) -> (RunningService<RoleClient, Person>, Seen<String>) {
    let mut command = setup.command();
    if !no_color {
        command.env_remove("NO_COLOR");
    }
    command.env("ASKGATE_LOG", level);
    let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the gateway starts");
    let log = Seen::default();
    keep_lines_async(stderr.expect("stderr"), log.clone());
    let client = person.serve(transport).await.expect("connects");
    (client, log)
}

#[tokio::test]
async fn at_debug_the_log_holds_no_argument_value_and_no_upstream_message_on_either_path() {
    if super::python_missing() {
        return;
    }
    for lane in [true, false] {
        let setup = setup()
            .config(&format!(
                "express_lane = {lane}\n[[rules]]\ntool = \"work\"\nrisk = \"read\""
            ))
            .tables(&format!(
                "[[upstreams]]\nname = \"telling\"\ncommand = \"python3\"\nargs = [\"-c\", {TELLING:?}]\n"
            ));
        let (client, log) = logged(&setup, "debug", true, person(json!({}), vec![])).await;
        let result = within(
            "the call's end",
            client.call_tool(call("telling__work", json!({"query": ARGUMENT}))),
        )
        .await
        .unwrap_or_else(|e| panic!("lane {lane}: a result, not {e:?}"));
        assert_eq!(askgate_testkit::mcp::text(&result), "worked", "lane {lane}");
        client.cancel().await.expect("the gateway stops");
        let lines = log.all();
        assert!(
            lines.iter().any(|line| line.contains("DEBUG")),
            "lane {lane}: nothing logged at debug: {lines:?}"
        );
        for line in &lines {
            assert!(
                !line.contains(ARGUMENT),
                "lane {lane}: an argument in the log: {line}"
            );
            assert!(
                !line.contains(NOTICE),
                "lane {lane}: an upstream's message in the log: {line}"
            );
        }
    }
}

#[tokio::test]
async fn human_logs_written_to_a_pipe_carry_no_colour_codes() {
    let setup = setup();
    // Colour would be the default: only the pipe says no.
    let (client, log) = logged(&setup, "debug", false, person(json!({}), vec![])).await;
    client.list_all_tools().await.expect("tools");
    // A line with its level: where a colour code would be.
    log.line_with(&["DEBUG"]).await;
    client.cancel().await.expect("the gateway stops");
    for line in log.all() {
        assert!(!line.contains('\u{1b}'), "a colour code: {line:?}");
    }
}

#[tokio::test]
async fn at_info_a_call_that_needs_no_one_writes_no_line_and_a_blocked_one_does() {
    for lane in [true, false] {
        let setup = setup().config(&format!(
            "express_lane = {lane}\n[[rules]]\ntool = \"read_note\"\nrisk = \"read\""
        ));
        // A client that declines every ask at once: a person's "no".
        let decline = ElicitResult::new(ElicitationAction::Decline);
        let (client, log) = logged(
            &setup,
            "info",
            true,
            person(json!({"elicitation": {}}), vec![decline]),
        )
        .await;
        for _ in 0..3 {
            within(
                "a read's end",
                client.call_tool(call("read_note", json!({"name": "none"}))),
            )
            .await
            .unwrap_or_else(|e| panic!("lane {lane}: an answer, not {e:?}"));
        }
        within(
            "a declined write's end",
            client.call_tool(call("write_note", json!({"name": "n", "text": "t"}))),
        )
        .await
        .unwrap_or_else(|e| panic!("lane {lane}: an answer, not {e:?}"));
        // The write's decision is said; the reads' (the audit has them) are
        // not, at INFO.
        log.line_with(&["call decided", "write_note"]).await;
        client.cancel().await.expect("the gateway stops");
        let reads: Vec<String> = log
            .all()
            .into_iter()
            .filter(|line| line.contains("call decided") && line.contains("read_note"))
            .collect();
        assert!(reads.is_empty(), "lane {lane}: a line per read: {reads:?}");
    }
}
