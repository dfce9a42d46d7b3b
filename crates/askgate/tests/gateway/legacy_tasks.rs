//! 2025-11-25's tasks through the gateway on stdio: a server's task
//! capability and its tools' `execution` reach the client as written; a
//! call with a `task` is confirmed by the person before its server sees
//! it, and the task it makes is followed through the gateway (`tasks/get`,
//! `tasks/result`, `tasks/list`, `tasks/cancel`, status notifications),
//! every answer as the server wrote it; a declined call makes no task.

use std::time::Duration;

use serde_json::{Value as Json, json};

use askgate_testkit::gateway::Setup;

use super::http_session::HttpSession;
use super::raw::Raw;
use super::setup;

/// A 2025-11-25 server with one tool that must run as a task. It writes
/// each method it receives to the file named by its first argument, so a
/// test can see whether a call reached it.
const TASK_SERVER: &str = r#"
import json, sys
seen = open(sys.argv[1], "a", buffering=1)
TASK = {"taskId": "t-1", "status": "working", "statusMessage": "started",
        "createdAt": "2026-12-04T10:00:00Z", "lastUpdatedAt": "2026-12-04T10:00:00Z",
        "ttl": 60000, "pollInterval": 250}
DONE = dict(TASK, status="completed", lastUpdatedAt="2026-12-04T10:00:01Z")
answers = {
    "initialize": {"protocolVersion": "2025-11-25",
                   "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                                    "requests": {"tools": {"call": {}}}}},
                   "serverInfo": {"name": "tasker", "version": "1"}},
    "tools/list": {"tools": [{"name": "research", "inputSchema": {"type": "object"},
                              "execution": {"taskSupport": "required"}}]},
    "tasks/get": DONE,
    "tasks/result": {"content": [{"type": "text", "text": "the report"}],
                     "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"}}},
    "tasks/list": {"tasks": [DONE, dict(DONE, taskId="someone-elses")]},
    "ping": {},
}
def send(message):
    print(json.dumps(dict(jsonrpc="2.0", **message)), flush=True)
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method:
        seen.write(method + "\n")
    if "id" not in message or method is None:
        continue
    if method == "tools/call":
        if "task" not in message.get("params", {}):
            send({"id": message["id"], "error": {"code": -32601, "message": "research runs as a task"}})
            continue
        send({"id": message["id"], "result": {"task": TASK}})
        send({"method": "notifications/tasks/status", "params": DONE})
    elif method == "tasks/cancel":
        send({"id": message["id"], "error": {"code": -32602, "message": "task t-1 has ended"}})
    elif method in answers:
        send({"id": message["id"], "result": answers[method]})
"#;

/// Whether python3 runs here (CI has it).
fn python() -> bool {
    let found = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok();
    if !found {
        eprintln!("skipped: python3 is not installed (CI has it)");
    }
    found
}

/// The gateway over the task server alone, its client speaking
/// 2025-11-25 with forms and tasks; the file of what the server saw; and
/// the setup (its store), kept while the gateway runs.
async fn started(dir: &askgate_testkit::Scratch) -> (Raw, std::path::PathBuf, Setup) {
    let seen = dir.join("seen.txt");
    let setup = setup().config("").tables(&format!(
        "[[upstreams]]\nname = \"tasker\"\ncommand = \"python3\"\nargs = [\"-c\", {TASK_SERVER:?}, {:?}]\n",
        seen.display().to_string()
    ));
    let capabilities = json!({"elicitation": {"form": {}},
        "tasks": {"requests": {"elicitation": {"create": {}}}}});
    let raw = Raw::start_speaking(&setup, "2025-11-25", &capabilities).await;
    (raw, seen, setup)
}

/// The tool named `name` in a `tools/list` answer (null when missing).
fn tool(listed: &Json, name: &str) -> Json {
    listed["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == name))
        .cloned()
        .unwrap_or_default()
}

/// `tools/list` (request 2) lists the task server's tool with its
/// `execution` as the server wrote it, and none of askgate's carrier.
async fn lists_research_as_a_task(raw: &mut Raw) {
    raw.send(&request(2, "tools/list", &json!({}))).await;
    let listed = raw.answer_to(2).await;
    let research = tool(&listed, "tasker__research");
    assert_eq!(
        research["execution"],
        json!({"taskSupport": "required"}),
        "{listed}"
    );
    assert!(research.get("_meta").is_none(), "{research}");
}

fn request(id: i64, method: &str, params: &Json) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// What the server saw, method by method.
fn seen(file: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Answer askgate's confirmation, next on the wire, with `accept` (after a
/// person's moment), having checked that the server was not sent the call.
async fn confirm(raw: &mut Raw, accept: bool, seen_file: &std::path::Path) {
    let asked = raw.next().await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert!(
        asked["params"]["requestedSchema"]["properties"]
            .get("confirm")
            .is_some(),
        "askgate's confirmation: {asked}"
    );
    assert!(
        !seen(seen_file).iter().any(|m| m == "tools/call"),
        "the server was sent the call before the person answered"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let answer = if accept {
        json!({"action": "accept", "content": {"confirm": true}})
    } else {
        json!({"action": "decline"})
    };
    raw.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": answer}).to_string())
        .await;
}

#[tokio::test]
async fn a_servers_task_support_reaches_the_client_as_written() {
    if !python() {
        return;
    }
    let dir = askgate_testkit::Scratch::new();
    let (mut raw, _seen, _setup) = started(&dir).await;
    assert_eq!(
        raw.initialized["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{}",
        raw.initialized
    );
    assert!(
        raw.initialized["capabilities"]
            .get("experimental")
            .is_none(),
        "askgate's carrier is not shown: {}",
        raw.initialized
    );
    lists_research_as_a_task(&mut raw).await;
}

#[tokio::test]
async fn a_confirmed_task_call_makes_the_servers_task_which_is_followed_through_the_gateway() {
    if !python() {
        return;
    }
    let dir = askgate_testkit::Scratch::new();
    let (mut raw, seen_file, _setup) = started(&dir).await;
    raw.send(&request(
        2,
        "tools/call",
        &json!({"name": "tasker__research", "arguments": {"topic": "x"}, "task": {"ttl": 60000}}),
    ))
    .await;
    confirm(&mut raw, true, &seen_file).await;
    // The task as the server wrote it (ttl and pollInterval, no
    // resultType), and its status told to the client whose call made it,
    // in whichever order they come.
    let (mut made, mut told) = (Json::Null, Json::Null);
    while made.is_null() || told.is_null() {
        let message = raw.next().await;
        if message["id"] == 2 {
            made = message;
        } else if message["method"] == "notifications/tasks/status" {
            told = message;
        }
    }
    assert_eq!(
        made["result"],
        json!({"task": {"taskId": "t-1", "status": "working", "statusMessage": "started",
            "createdAt": "2026-12-04T10:00:00Z", "lastUpdatedAt": "2026-12-04T10:00:00Z",
            "ttl": 60000, "pollInterval": 250}}),
        "{made}"
    );
    let done = json!({"taskId": "t-1", "status": "completed", "statusMessage": "started",
        "createdAt": "2026-12-04T10:00:00Z", "lastUpdatedAt": "2026-12-04T10:00:01Z",
        "ttl": 60000, "pollInterval": 250});
    assert_eq!(told["params"], done);
    raw.send(&request(3, "tasks/get", &json!({"taskId": "t-1"})))
        .await;
    assert_eq!(raw.answer_to(3).await["result"], done);
    raw.send(&request(4, "tasks/result", &json!({"taskId": "t-1"})))
        .await;
    let result = raw.answer_to(4).await;
    assert_eq!(
        result["result"],
        json!({"content": [{"type": "text", "text": "the report"}],
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"}}}),
        "{result}"
    );
    // Only the tasks made through the gateway for this client are listed.
    raw.send(&request(5, "tasks/list", &json!({}))).await;
    assert_eq!(raw.answer_to(5).await["result"], json!({"tasks": [done]}));
    // The server's error, as it said it.
    raw.send(&request(6, "tasks/cancel", &json!({"taskId": "t-1"})))
        .await;
    let cancelled = raw.answer_to(6).await;
    assert_eq!(cancelled["error"]["code"], -32602, "{cancelled}");
    assert!(
        cancelled["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("task t-1 has ended")),
        "{cancelled}"
    );
    // A task no call through askgate made is unknown.
    raw.send(&request(
        7,
        "tasks/get",
        &json!({"taskId": "someone-elses"}),
    ))
    .await;
    let unknown = raw.answer_to(7).await;
    assert!(unknown.get("error").is_some(), "{unknown}");
    assert_eq!(
        seen(&seen_file)
            .iter()
            .filter(|m| m.starts_with("tasks/"))
            .count(),
        4,
        "get, result, list, cancel reached the server; the unknown task did not"
    );
}

#[tokio::test]
async fn a_declined_task_call_makes_no_task() {
    if !python() {
        return;
    }
    let dir = askgate_testkit::Scratch::new();
    let (mut raw, seen_file, _setup) = started(&dir).await;
    raw.send(&request(
        2,
        "tools/call",
        &json!({"name": "tasker__research", "arguments": {}, "task": {}}),
    ))
    .await;
    confirm(&mut raw, false, &seen_file).await;
    let answered = raw.answer_to(2).await;
    assert!(answered["result"].get("task").is_none(), "{answered}");
    assert!(answered["result"].get("resultType").is_none(), "{answered}");
    assert_eq!(answered["result"]["isError"], true, "{answered}");
    raw.send(&request(3, "ping", &json!({}))).await;
    raw.answer_to(3).await;
    assert!(
        !seen(&seen_file).iter().any(|m| m == "tools/call"),
        "a declined call is never sent"
    );
}

#[tokio::test]
async fn over_streamable_http_a_task_call_is_made_and_followed_as_the_server_wrote_it() {
    if !python() {
        return;
    }
    const TOKEN: &str = "alice-token-0123456789";
    let dir = askgate_testkit::Scratch::new();
    let seen_file = dir.join("seen.txt");
    // Ruled a read: the person's confirmation is the stdio tests'; here,
    // what the HTTP answers carry.
    let gateway = setup()
        .config("[[rules]]\ntool = \"research\"\nrisk = \"read\"")
        .tables(&format!(
            "[[upstreams]]\nname = \"tasker\"\ncommand = \"python3\"\nargs = [\"-c\", {TASK_SERVER:?}, {:?}]\n\n\
             [[principals]]\nname = \"alice\"\ntoken = {TOKEN:?}\n",
            seen_file.display().to_string()
        ))
        .listen()
        .await;
    let session = HttpSession::open(&gateway.url, TOKEN, "2025-11-25", json!({"tasks": {}})).await;
    let initialized = &session.initialized;
    assert_eq!(
        initialized["result"]["capabilities"]["tasks"]["requests"],
        json!({"tools": {"call": {}}}),
        "{initialized}"
    );
    let listed = session
        .ask(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let research = tool(&listed, "tasker__research");
    assert_eq!(
        research["execution"],
        json!({"taskSupport": "required"}),
        "{listed}"
    );
    let made = session
        .ask(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "tasker__research", "arguments": {}, "task": {"ttl": 60000}}}),
        )
        .await;
    assert_eq!(made["result"]["task"]["taskId"], "t-1", "{made}");
    assert_eq!(made["result"]["task"]["pollInterval"], 250, "{made}");
    let got = session
        .ask(
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": "t-1"}}),
        )
        .await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(got["result"]["ttl"], 60000, "{got}");
    assert!(got["result"].get("resultType").is_none(), "{got}");
    let result = session.ask(&json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/result", "params": {"taskId": "t-1"}})).await;
    assert_eq!(
        result["result"]["content"][0]["text"], "the report",
        "{result}"
    );
}

/// The task server over Streamable HTTP, answering each POST with an
/// event stream (the SDKs' servers' default). It writes the port it
/// listens on to the file named by its first argument.
const TASK_SERVER_HTTP: &str = r#"
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
TASK = {"taskId": "t-1", "status": "working", "createdAt": "2026-12-04T10:00:00Z",
        "lastUpdatedAt": "2026-12-04T10:00:00Z", "ttl": 60000, "pollInterval": 250}
DONE = dict(TASK, status="completed")
ANSWERS = {
    "initialize": {"protocolVersion": "2025-11-25",
                   "capabilities": {"tools": {}, "tasks": {"cancel": {},
                                    "requests": {"tools": {"call": {}}}}},
                   "serverInfo": {"name": "tasker", "version": "1"}},
    "tools/list": {"tools": [{"name": "research", "inputSchema": {"type": "object"},
                              "execution": {"taskSupport": "required"}}]},
    "tasks/get": DONE,
    "ping": {},
}
class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_GET(self):
        self.send_response(405); self.end_headers()
    def do_DELETE(self):
        self.send_response(200); self.end_headers()
    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method = message.get("method")
        if "id" not in message or method is None:
            self.send_response(202); self.end_headers(); return
        events = []
        if method == "tools/call" and "task" in message.get("params", {}):
            events.append({"method": "notifications/tasks/status", "params": TASK})
            events.append({"id": message["id"], "result": {"task": TASK}})
        elif method in ANSWERS:
            events.append({"id": message["id"], "result": ANSWERS[method]})
        else:
            events.append({"id": message["id"], "error": {"code": -32601, "message": method}})
        body = "".join("data: " + json.dumps(dict(jsonrpc="2.0", **e)) + "\n\n" for e in events)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Mcp-Session-Id", "s-1")
        self.send_header("Content-Length", str(len(body.encode())))
        self.end_headers()
        self.wfile.write(body.encode())
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1], "w") as port:
    port.write(str(server.server_address[1]))
server.serve_forever()
"#;

#[tokio::test]
async fn an_http_upstreams_task_support_and_tasks_come_through_as_written() {
    if !python() {
        return;
    }
    let dir = askgate_testkit::Scratch::new();
    let port_file = dir.join("port.txt");
    let mut server = tokio::process::Command::new("python3")
        .args(["-c", TASK_SERVER_HTTP])
        .arg(&port_file)
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let mut port = String::new();
    for _ in 0..200 {
        port = std::fs::read_to_string(&port_file).unwrap_or_default();
        if !port.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!port.is_empty(), "the server did not say its port");
    let setup = setup()
        .config("[[rules]]\ntool = \"research\"\nrisk = \"read\"")
        .tables(&format!(
            "[[upstreams]]\nname = \"tasker\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
        ));
    let capabilities = json!({"tasks": {}});
    let mut raw = Raw::start_speaking(&setup, "2025-11-25", &capabilities).await;
    assert_eq!(
        raw.initialized["capabilities"]["tasks"],
        json!({"cancel": {}, "requests": {"tools": {"call": {}}}}),
        "{}",
        raw.initialized
    );
    lists_research_as_a_task(&mut raw).await;
    raw.send(&request(
        3,
        "tools/call",
        &json!({"name": "tasker__research", "arguments": {}, "task": {"ttl": 60000}}),
    ))
    .await;
    let made = raw.answer_to(3).await;
    assert_eq!(
        made["result"],
        json!({"task": {"taskId": "t-1", "status": "working",
            "createdAt": "2026-12-04T10:00:00Z", "lastUpdatedAt": "2026-12-04T10:00:00Z",
            "ttl": 60000, "pollInterval": 250}}),
        "{made}"
    );
    raw.send(&request(4, "tasks/get", &json!({"taskId": "t-1"})))
        .await;
    let got = raw.answer_to(4).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(got["result"]["ttl"], 60000, "{got}");
    assert!(got["result"].get("resultType").is_none(), "{got}");
    let _ = server.kill().await;
}
