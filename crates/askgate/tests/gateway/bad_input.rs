//! What the client sends that does not fit, and what the server answers
//! that is too long, on stdio: each request gets an answer with its id,
//! each call an end, and the session goes on as negotiated.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value as Json, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::raw::Raw;
use super::setup;
use askgate_testkit::gateway::Setup;

/// A gateway over the example upstream, its `read_note` ruled a read.
fn reads() -> Setup {
    setup().config(
        "[inbox]\nlisten = \"127.0.0.1:0\"\n[[rules]]\ntool = \"read_note\"\nrisk = \"read\"",
    )
}

fn call(id: i64, name: &str, arguments: &Json) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
    .to_string()
}

#[tokio::test]
async fn a_request_that_does_not_fit_is_answered_with_its_id_and_the_session_goes_on() {
    let setup = reads();
    let mut raw = Raw::start(&setup).await;
    // Params of the wrong type: rmcp read this as a method of its own.
    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5}}"#)
        .await;
    let said = raw.answer_to(5).await;
    assert_eq!(said["error"]["code"], -32602, "{said}");
    let message = said["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("invalid params for tools/call:"),
        "{said}"
    );
    // Params that are no object, and arguments nested past serde's limit:
    // rmcp answered these without their id.
    raw.send(r#"{"jsonrpc":"2.0","id":6,"method":"tools/list","params":"x"}"#)
        .await;
    assert_eq!(raw.answer_to(6).await["error"]["code"], -32600);
    let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
    raw.send(&format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"read_note","arguments":{{"a":{deep}}}}}}}"#
    ))
    .await;
    let said = raw.answer_to(7).await;
    assert_eq!(said["error"]["code"], -32600, "{said}");
    // A request over the longest line read: refused, naming its length.
    let long = call(
        8,
        "read_note",
        &json!({"name": "x".repeat(17 * 1024 * 1024)}),
    );
    raw.send(&long).await;
    let said = raw.answer_to(8).await;
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("over the 16.0 MiB askgate reads in one message"),
        "{said}"
    );
    // The session goes on.
    raw.send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#)
        .await;
    assert_eq!(raw.answer_to(9).await["result"], json!({}));
}

#[tokio::test]
async fn with_the_express_lane_off_every_line_is_still_screened() {
    let setup = setup().config("express_lane = false");
    let mut raw = Raw::start(&setup).await;
    raw.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5}}"#)
        .await;
    let said = raw.answer_to(5).await;
    assert_eq!(said["error"]["code"], -32602, "{said}");
    let long = call(
        6,
        "read_note",
        &json!({"name": "x".repeat(17 * 1024 * 1024)}),
    );
    raw.send(&long).await;
    let said = raw.answer_to(6).await;
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("over the 16.0 MiB askgate reads in one message"),
        "{said}"
    );
}

#[tokio::test]
async fn a_call_rmcp_cannot_read_is_refused_with_its_id_though_the_lane_is_open() {
    let setup = reads();
    let mut raw = Raw::start(&setup).await;
    // A read answers: its upstream is up, and the lane open to it.
    raw.send(&call(2, "read_note", &json!({"name": "none"})))
        .await;
    assert!(raw.answer_to(2).await["result"].is_object());
    // Not JSON-RPC 2.0: the lane relayed it, and it was answered.
    raw.send(
        r#"{"jsonrpc":"1.0","id":3,"method":"tools/call","params":{"name":"read_note","arguments":{"name":"none"}}}"#,
    )
    .await;
    let said = raw.answer_to(3).await;
    assert_eq!(said["error"]["code"], -32600, "{said}");
    assert!(said.get("result").is_none(), "{said}");
    // Ids that are neither a string nor an integer: the same.
    for id in ["true", "1.5", "[]", "{}"] {
        raw.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read_note","arguments":{{"name":"none"}}}}}}"#
        ))
        .await;
        let said = raw.next().await;
        let sent: Json = serde_json::from_str(id).expect("JSON");
        assert_eq!(said["id"], sent, "{said}");
        assert_eq!(said["error"]["code"], -32600, "id {id}: {said}");
    }
    raw.send(r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#)
        .await;
    assert_eq!(raw.answer_to(9).await["result"], json!({}));
}

#[tokio::test]
async fn a_second_initialize_is_refused_and_the_negotiated_revision_stands() {
    let setup = reads();
    let mut raw = Raw::start(&setup).await;
    raw.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string(),
    )
    .await;
    let said = raw.answer_to(2).await;
    assert_eq!(said["error"]["code"], -32600, "{said}");
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("protocol 2025-06-18"),
        "{said}"
    );
    // Calls go on as negotiated: a read answers.
    raw.send(&call(3, "read_note", &json!({"name": "none"})))
        .await;
    let said = raw.answer_to(3).await;
    let text = said["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("no note named"), "{said}");
}

#[tokio::test]
async fn an_ask_the_client_answers_with_a_malformed_error_or_no_elicitations_result_ends_its_call()
{
    let setup = reads();
    let mut raw = Raw::start(&setup).await;
    // Each a write, which needs a person: the gateway asks the client.
    // An error that is no error object (rmcp dropped it, and the call
    // waited for ever); an answer with neither a result nor an error; a
    // result of another kind (an empty one, a sampling's), or an action no
    // elicitation has.
    let answers = [
        r#""error":"no""#,
        r#""ok":true"#,
        r#""result":{}"#,
        r#""result":{"model":"m","role":"assistant","content":{"type":"text","text":"yes"}}"#,
        r#""result":{"action":"yes","content":{"confirm":true}}"#,
    ];
    // Each of other arguments: a call that ended so waits in the inbox.
    for (id, answer) in (4..).zip(answers) {
        raw.send(&call(
            id,
            "write_note",
            &json!({"name": format!("plan{id}"), "text": "ship it"}),
        ))
        .await;
        let asked = raw.ask_about(id).await;
        raw.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{},{answer}}}"#,
            asked["id"]
        ))
        .await;
        let said = raw.answer_to(id).await;
        assert!(
            said.get("error").is_some() || said["result"]["isError"] == true,
            "{answer}: the call ended: {said}"
        );
    }
    // None ran: nobody said yes.
    for id in 4..4 + 5 {
        raw.send(&call(
            100 + id,
            "read_note",
            &json!({"name": format!("plan{id}")}),
        ))
        .await;
        let text = raw.answer_to(100 + id).await["result"]["content"][0]["text"].clone();
        assert!(
            text.as_str().unwrap_or_default().contains("no note named"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn a_large_answer_arrives_whole_and_one_over_the_limit_ends_its_call() {
    let notes = askgate_testkit::Scratch::new();
    // 20 MiB: over rmcp's 16 MiB line, under askgate's 64 MiB.
    let large = "l".repeat(20 * 1024 * 1024);
    std::fs::write(notes.join("large.txt"), &large).expect("writes");
    std::fs::write(notes.join("huge.txt"), "h".repeat(65 * 1024 * 1024)).expect("writes");
    for lane in [true, false] {
        let setup = setup()
            .config(&format!(
                "express_lane = {lane}\n[[rules]]\ntool = \"read_note\"\nrisk = \"read\""
            ))
            .upstream_keys(&format!(
                "args = [\"--dir\", {:?}]",
                notes.path().display().to_string()
            ));
        let mut raw = Raw::start(&setup).await;
        raw.send(&call(2, "read_note", &json!({"name": "large"})))
            .await;
        let said = raw.answer_to(2).await;
        assert_eq!(
            said["result"]["content"][0]["text"].as_str().map(str::len),
            Some(large.len()),
            "lane {lane}"
        );
        raw.send(&call(3, "read_note", &json!({"name": "huge"})))
            .await;
        let said = raw.answer_to(3).await;
        let message = said["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("over the 64.0 MiB askgate carries in one message"),
            "lane {lane}: {message}"
        );
        raw.send(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#)
            .await;
        assert_eq!(raw.answer_to(4).await["result"], json!({}));
    }
}

#[tokio::test]
async fn the_longest_request_and_answer_are_the_configs() {
    let notes = askgate_testkit::Scratch::new();
    std::fs::write(notes.join("two.txt"), "t".repeat(2 * 1024 * 1024)).expect("writes");
    let setup = setup()
        .config("[limits]\nrequest_mib = 1\nanswer_mib = 1\n[[rules]]\ntool = \"read_note\"\nrisk = \"read\"")
        .upstream_keys(&format!(
            "args = [\"--dir\", {:?}]",
            notes.path().display().to_string()
        ));
    let mut raw = Raw::start(&setup).await;
    let long = call(
        2,
        "read_note",
        &json!({"name": "x".repeat(2 * 1024 * 1024)}),
    );
    raw.send(&long).await;
    let said = raw.answer_to(2).await;
    let message = said["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("over the 1.0 MiB askgate reads in one message"),
        "{said}"
    );
    raw.send(&call(3, "read_note", &json!({"name": "two"})))
        .await;
    let said = raw.answer_to(3).await;
    let message = said["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("over the 1.0 MiB askgate carries in one message"),
        "{message}"
    );
    raw.send(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#)
        .await;
    assert_eq!(raw.answer_to(4).await["result"], json!({}));
}

#[cfg(unix)]
#[tokio::test]
async fn a_client_on_a_socket_pair_as_node_spawns_it_is_screened_and_takes_the_lane() {
    use std::os::fd::OwnedFd;
    // Node's child_process gives a child a socket pair for its stdio, not
    // pipes.
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
    let theirs_out = theirs.try_clone().expect("a second descriptor");
    let setup = reads().logging("askgate_gateway::express=debug");
    let mut command = setup.command();
    command
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::from(OwnedFd::from(theirs_out)))
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("the gateway starts");
    let log = askgate_testkit::wait::Seen::default();
    askgate_testkit::process::keep_lines_async(child.stderr.take().expect("stderr"), log.clone());
    ours.set_nonblocking(true).expect("non-blocking");
    let ours = tokio::net::UnixStream::from_std(ours).expect("a tokio socket");
    let (read, mut write) = ours.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut next = async || -> Json {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("an answer within a minute")
            .expect("reads")
            .expect("a line");
        serde_json::from_str(&line).expect("a JSON line")
    };
    let mut seen = Vec::new();
    // In turn, as a client does: the handshake, the tools, then the calls
    // (a call sent before the upstream is up goes through rmcp).
    let steps = [
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "node-like", "version": "1"}}})
            .to_string(),
            1,
        ),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
            0,
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#.to_owned(),
            1,
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}"#.to_owned(),
            1,
        ),
        (call(3, "read_note", &json!({"name": "none"})), 1),
    ];
    for (line, answers) in steps {
        write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("the gateway reads");
        for _ in 0..answers {
            seen.push(next().await);
        }
    }
    let answer = |id: i64| {
        seen.iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(answer(1)["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(answer(2)["error"]["code"], -32602, "{seen:?}");
    let text = answer(3)["result"]["content"][0]["text"].clone();
    assert!(
        text.as_str().unwrap_or_default().contains("no note named"),
        "{seen:?}"
    );
    // The read took the lane: no rmcp in between.
    log.line_with(&["on the express lane", "read_note"]).await;
    drop(write);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("it ends with its client")
        .expect("waits");
    assert!(status.success(), "{status:?}");
}

/// The example upstream over Streamable HTTP on a free loopback port, its
/// notes in `dir`; its URL, and the task serving it.
async fn http_notes(dir: &std::path::Path) -> (String, tokio::task::JoinHandle<()>) {
    use askgate_conformance::example_upstream::Notes;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let dir = dir.to_owned();
    let service = StreamableHttpService::new(
        move || Notes::in_dir(dir.clone()),
        std::sync::Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("a free port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("bound"));
    let served = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, served)
}

#[tokio::test]
async fn an_http_upstreams_answer_over_the_longest_is_answered_for_and_the_session_goes_on() {
    let notes = askgate_testkit::Scratch::new();
    std::fs::write(notes.join("half.txt"), "h".repeat(512 * 1024)).expect("writes");
    std::fs::write(notes.join("two.txt"), "t".repeat(2 * 1024 * 1024)).expect("writes");
    std::fs::write(notes.join("small.txt"), "small").expect("writes");
    let (url, served) = http_notes(notes.path()).await;
    let setup = setup()
        .config("[limits]\nanswer_mib = 1\n[[rules]]\ntool = \"*read_note\"\nrisk = \"read\"")
        .tables(&format!("[[upstreams]]\nname = \"web\"\nurl = {url:?}\n"));
    let mut raw = Raw::start(&setup).await;
    // Under the longest: carried whole.
    raw.send(&call(2, "web__read_note", &json!({"name": "half"})))
        .await;
    let said = raw.answer_to(2).await;
    assert_eq!(
        said["result"]["content"][0]["text"].as_str().map(str::len),
        Some(512 * 1024),
        "{}",
        said.to_string().chars().take(300).collect::<String>()
    );
    // Over it: an error answer for the call, not a wait for ever.
    raw.send(&call(3, "web__read_note", &json!({"name": "two"})))
        .await;
    let said = raw.answer_to(3).await;
    let message = said["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("longer than the 1.0 MiB askgate reads in one message")
            && message.contains("may have run"),
        "{said}"
    );
    // The next call to the same server is answered.
    raw.send(&call(4, "web__read_note", &json!({"name": "small"})))
        .await;
    let said = raw.answer_to(4).await;
    assert_eq!(said["result"]["content"][0]["text"], "small", "{said}");
    served.abort();
}
