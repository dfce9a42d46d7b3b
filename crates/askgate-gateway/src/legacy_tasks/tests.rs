use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage, ServerResult};
use serde_json::json;

use super::*;

fn bytes(value: &Json) -> Vec<u8> {
    serde_json::to_vec(value).expect("serializes")
}

fn parsed(bytes: &[u8]) -> Json {
    serde_json::from_slice(bytes).expect("JSON")
}

/// What server-everything (TypeScript SDK 1.32) says of itself and its
/// task tool.
fn initialize_answer() -> Json {
    json!({"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
            "requests": {"tools": {"call": {}}}}},
        "serverInfo": {"name": "everything", "version": "1"}}})
}

fn tools_answer() -> Json {
    json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
        {"name": "echo", "inputSchema": {"type": "object"}},
        {"name": "research", "inputSchema": {"type": "object"},
         "execution": {"taskSupport": "required"}, "_meta": {"theirs": 1}}]}})
}

#[test]
fn an_upstreams_task_capability_and_tool_execution_come_back_as_written() {
    for answer in [initialize_answer(), tools_answer()] {
        let stowed = stow_answer(&bytes(&answer)).expect("carried");
        let stowed_text = String::from_utf8(stowed.clone()).expect("text");
        assert!(!stowed_text.contains("\"execution\""), "{stowed_text}");
        assert!(!stowed_text.contains("\"tasks\":"), "{stowed_text}");
        let restored = restore_frame(&[stowed.as_slice(), b"\n"].concat()).into_owned();
        assert_eq!(parsed(&restored), answer);
        assert!(restored.ends_with(b"\n"));
    }
}

#[test]
fn rmcp_keeps_what_is_carried_and_drops_it_uncarried() {
    // Uncarried, rmcp's model loses both (the reason for this module).
    let through = |line: &[u8]| -> Json {
        let message: ServerJsonRpcMessage = serde_json::from_slice(line).expect("rmcp reads it");
        serde_json::to_value(&message).expect("writes")
    };
    let lost = through(&bytes(&initialize_answer()));
    assert!(lost["result"]["capabilities"].get("tasks").is_none());
    let lost = through(&bytes(&tools_answer()));
    assert!(lost["result"]["tools"][1].get("execution").is_none());
    // Carried, both pass through rmcp and are put back.
    for answer in [initialize_answer(), tools_answer()] {
        let kept = through(&stow_answer(&bytes(&answer)).expect("carried"));
        assert_eq!(parsed(&restore_frame(&bytes(&kept))), answer);
    }
}

#[test]
fn a_task_answer_is_carried_whole_past_rmcps_2026_reading() {
    let answer = json!({"jsonrpc": "2.0", "id": 7, "result": {
        "taskId": "t1", "status": "working", "createdAt": "2026-12-04T00:00:00Z",
        "lastUpdatedAt": "2026-12-04T00:00:00Z", "ttl": 60000, "pollInterval": 500}});
    // Read as it is, rmcp takes it for a 2026-07-28 task and drops `ttl`.
    let plain: ServerJsonRpcMessage = serde_json::from_slice(&bytes(&answer)).expect("reads");
    let plain = serde_json::to_value(&plain).expect("writes");
    assert_ne!(plain["result"], answer["result"]);
    let stowed = stow_answer(&bytes(&answer)).expect("carried");
    let message: ServerJsonRpcMessage = serde_json::from_slice(&stowed).expect("reads");
    let ServerJsonRpcMessage::Response(response) = message else {
        panic!("a response");
    };
    let ServerResult::CustomResult(custom) = response.result else {
        panic!("kept raw: {:?}", response.result);
    };
    assert_eq!(as_written(custom.0), answer["result"]);
}

#[test]
fn lines_without_task_fields_are_left_alone() {
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "tasks"}]}}),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "taskId": "t", "status": "working"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "\"execution\""}}),
    ];
    for line in &lines {
        assert_eq!(stow_answer(&bytes(line)), None, "{line}");
    }
    let frame = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";
    assert!(matches!(
        restore_frame(frame),
        std::borrow::Cow::Borrowed(_)
    ));
    assert_eq!(stow_answer(b"not json \"tasks\""), None);
}

#[test]
fn a_frame_of_several_lines_has_each_restored() {
    let one = stow_answer(&bytes(&tools_answer())).expect("carried");
    let two = b"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}".to_vec();
    let frame = [one.as_slice(), b"\n", two.as_slice(), b"\n"].concat();
    let restored = restore_frame(&frame).into_owned();
    let lines: Vec<Json> = restored
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(parsed)
        .collect();
    assert_eq!(lines, [tools_answer(), parsed(&two)]);
}

#[test]
fn a_task_call_and_requests_of_legacy_tasks_are_renamed_for_askgate() {
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "research", "arguments": {}, "task": {"ttl": 60000}}});
    let renamed = parsed(&inbound(&bytes(&call), |_| false).expect("renamed"));
    assert_eq!(renamed["method"], TOOLS_CALL);
    assert_eq!(renamed["params"], call["params"]);
    // rmcp hands the renamed request over raw, the task with it.
    let message: ClientJsonRpcMessage =
        serde_json::from_value(renamed.clone()).expect("rmcp reads it");
    let ClientJsonRpcMessage::Request(request) = message else {
        panic!("a request");
    };
    let ClientRequest::CustomRequest(custom) = request.request else {
        panic!("raw");
    };
    assert_eq!(custom.params.expect("params")["task"]["ttl"], 60000);
    for (method, renamed_to) in [("tasks/get", TASKS_GET), ("tasks/cancel", TASKS_CANCEL)] {
        let asked =
            json!({"jsonrpc": "2.0", "id": 4, "method": method, "params": {"taskId": "old"}});
        let renamed = inbound(&bytes(&asked), |id| id == "old").expect("renamed");
        assert_eq!(parsed(&renamed)["method"], renamed_to);
        let other =
            json!({"jsonrpc": "2.0", "id": 4, "method": method, "params": {"taskId": "new"}});
        assert_eq!(
            inbound(&bytes(&other), |id| id == "old"),
            None,
            "a 2026 task's"
        );
    }
    let plain =
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo"}});
    assert_eq!(inbound(&bytes(&plain), |_| true), None);
    let notification = json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"task": {}}});
    assert_eq!(inbound(&bytes(&notification), |_| true), None);
}

#[test]
fn a_created_task_is_written_back_as_its_server_wrote_it() {
    let written = json!({"task": {"taskId": "t1", "status": "working",
        "statusMessage": "started", "createdAt": "2026-12-04T00:00:00Z",
        "lastUpdatedAt": "2026-12-04T00:00:01Z", "ttl": 60000, "pollInterval": 500},
        "_meta": {"io.modelcontextprotocol/model-immediate-response": "on it"}});
    let task = created(&written).expect("a task");
    assert_eq!(task.task.task_id, "t1");
    assert_eq!(task.task.ttl_ms, Some(60000));
    assert_eq!(creation(&task), written);
    // Without the answer as written (a task made elsewhere), rebuilt from
    // rmcp's model as 2025-11-25 writes one.
    let mut bare = task.clone();
    bare.meta = None;
    assert_eq!(
        creation(&bare),
        json!({"task": {"taskId": "t1", "status": "working",
            "createdAt": "2026-12-04T00:00:00Z", "lastUpdatedAt": "2026-12-04T00:00:01Z",
            "ttl": 60000}})
    );
    let unlimited = json!({"task": {"taskId": "t2", "status": "working",
        "createdAt": "2026-12-04T00:00:00Z", "lastUpdatedAt": "2026-12-04T00:00:00Z",
        "ttl": null}});
    assert_eq!(creation(&created(&unlimited).expect("a task")), unlimited);
    assert!(created(&json!({"content": []})).is_none());
    assert!(created(&json!({"task": {"taskId": "t3", "status": "sleeping"}})).is_none());
}
