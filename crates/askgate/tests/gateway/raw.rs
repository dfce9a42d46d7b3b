//! A client of the gateway on stdio that speaks JSON lines by hand, as a
//! fuzzer, a careless client or one of a revision rmcp does not model
//! would.

use std::process::Stdio;
use std::time::Duration;

use askgate_testkit::gateway::Setup;
use serde_json::{Value as Json, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// A gateway spoken to line by line, as a fuzzer or a careless client
/// would.
pub(crate) struct Raw {
    _child: Child,
    /// None once the client hung up.
    stdin: Option<ChildStdin>,
    stdout: tokio::io::Lines<BufReader<ChildStdout>>,
    /// The handshake's result.
    pub(crate) initialized: Json,
}

impl Raw {
    /// Start the gateway of `setup` and do the handshake (2025-06-18,
    /// declaring form elicitation).
    pub(crate) async fn start(setup: &Setup) -> Raw {
        Raw::start_speaking(setup, "2025-06-18", &json!({"elicitation": {}})).await
    }

    /// Start the gateway of `setup` and do the handshake in `version`,
    /// declaring `capabilities`.
    pub(crate) async fn start_speaking(setup: &Setup, version: &str, capabilities: &Json) -> Raw {
        let mut command = setup.command();
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("the gateway starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut raw = Raw {
            _child: child,
            stdin: Some(stdin),
            stdout,
            initialized: Json::Null,
        };
        raw.send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"}}})
            .to_string(),
        )
        .await;
        let answer = raw.next().await;
        assert_eq!(answer["result"]["protocolVersion"], version, "{answer}");
        raw.initialized = answer["result"].clone();
        raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        raw
    }

    pub(crate) async fn send(&mut self, line: &str) {
        self.stdin
            .as_mut()
            .expect("the client has not hung up")
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("the gateway reads");
    }

    /// Close the gateway's stdin, as a client that is done does.
    pub(crate) fn hang_up(&mut self) {
        self.stdin = None;
    }

    /// Every message the gateway writes until it closes its stdout.
    pub(crate) async fn rest(&mut self) -> Vec<Json> {
        let mut rest = Vec::new();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(60), self.stdout.next_line())
                .await
                .expect("the gateway ends within a minute")
                .expect("reads");
            match line {
                Some(line) => rest.push(serde_json::from_str(&line).expect("a JSON line")),
                None => return rest,
            }
        }
    }

    /// The next message the gateway writes.
    pub(crate) async fn next(&mut self) -> Json {
        let line = tokio::time::timeout(Duration::from_secs(60), self.stdout.next_line())
            .await
            .expect("an answer within a minute: none means a client left waiting")
            .expect("reads")
            .expect("a line");
        serde_json::from_str(&line).expect("a JSON line")
    }

    /// The next ask the gateway writes (`elicitation/create`), past any
    /// other message; none of them may answer the call `call`, which the
    /// ask is about.
    pub(crate) async fn ask_about(&mut self, call: i64) -> Json {
        loop {
            let message = self.next().await;
            assert!(
                message["id"] != call || message.get("method").is_some(),
                "call {call} is asked about before it is answered: {message}"
            );
            if message["method"] == "elicitation/create" {
                return message;
            }
        }
    }

    /// The next message answering request `id`, past any other.
    pub(crate) async fn answer_to(&mut self, id: i64) -> Json {
        loop {
            let message = self.next().await;
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }
}
