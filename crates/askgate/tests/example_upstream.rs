//! The example upstream, spawned as a child process the way the gateway
//! spawns a stdio server: every tool answers, the annotations tell the truth,
//! and the prompt and the resource are there to pass through.

use std::process::Stdio;

use askgate_conformance::example_upstream::{
    PROMPT, PROMPT_ASKING, RESOURCE, RESOURCE_ASKING, TOOLS, WAIT_CANCELLED,
};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, GetPromptRequestParams, Implementation, ReadResourceRequestParams,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::{Map, Value as Json, json};
use tokio::io::AsyncBufReadExt;
use tokio::process::{ChildStderr, Command};

/// A client whose person answers `ask_name` with `answer` (or declines);
/// with `answer: None` and `elicitation: false`, a client that cannot ask.
#[derive(Clone)]
struct Person {
    answer: Option<&'static str>,
    elicitation: bool,
}

const ADA: Person = Person {
    answer: Some("Ada"),
    elicitation: true,
};
const DECLINES: Person = Person {
    answer: None,
    elicitation: true,
};

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.elicitation {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(
            capabilities,
            Implementation::new("example-upstream-test", "0"),
        )
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(match self.answer {
            Some(name) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": name}))
            }
            None => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

async fn spawn(person: Person) -> RunningService<RoleClient, Person> {
    let command = Command::new(env!("CARGO_BIN_EXE_askgate-example-upstream"));
    let transport = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .map(|(transport, _stderr)| transport)
        .expect("the example upstream starts");
    person.serve(transport).await.expect("the handshake")
}

/// The text of a call's result and whether it is an error.
async fn call(
    client: &RunningService<RoleClient, Person>,
    tool: &str,
    args: Json,
) -> (String, bool) {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Json::Object(map) = args {
        params = params.with_arguments(map);
    }
    let result = client.call_tool(params).await.expect("the call answers");
    let result = serde_json::to_value(&result).expect("serializes");
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    (text, result["isError"] == json!(true))
}

#[tokio::test]
async fn every_tool_answers() {
    let client = spawn(ADA).await;
    let calls = [
        ("read_note", json!({"name": "todo"})),
        ("append_note", json!({"name": "todo", "text": "milk"})),
        ("append_note", json!({"name": "todo", "text": ", eggs"})),
        ("read_note", json!({"name": "todo"})),
        ("write_note", json!({"name": "todo", "text": "bread"})),
        ("read_note", json!({"name": "todo"})),
        ("wait_for_note", json!({"name": "todo", "wait_ms": 0})),
        ("wait_for_note", json!({"name": "nope", "wait_ms": 0})),
        ("deploy", json!({"service": "billing", "env": "staging"})),
        ("delete_all_notes", json!({})),
        ("read_note", json!({"name": "todo"})),
        ("ask_name", json!({})),
        ("sign_in", json!({})),
    ];
    let mut transcript = Vec::new();
    for (tool, args) in calls {
        let (text, error) = call(&client, tool, args).await;
        transcript.push(format!(
            "{tool}: {text}{}",
            if error { " (error)" } else { "" }
        ));
    }
    assert_eq!(
        transcript,
        [
            "read_note: no note named \"todo\" (error)",
            "append_note: appended to \"todo\"",
            "append_note: appended to \"todo\"",
            "read_note: milk, eggs",
            "write_note: wrote \"todo\"",
            "read_note: bread",
            "wait_for_note: bread",
            "wait_for_note: no note named \"nope\" after 0 ms (error)",
            "deploy: deployed billing to staging",
            "delete_all_notes: deleted 1 notes",
            "read_note: no note named \"todo\" (error)",
            "ask_name: Hello, Ada",
            "sign_in: this client cannot open a link (it declared no URL-mode elicitation) (error)",
        ]
    );
    client.cancel().await.expect("stops");
}

#[tokio::test]
async fn a_declined_name_is_an_answer_not_an_error() {
    let client = spawn(DECLINES).await;
    let (text, error) = call(&client, "ask_name", json!({})).await;
    assert_eq!(
        (text.as_str(), error),
        ("The person declined to give their name.", false)
    );
    client.cancel().await.expect("stops");
}

#[tokio::test]
async fn a_client_without_elicitation_is_told_it_cannot_be_asked() {
    let client = spawn(Person {
        answer: None,
        elicitation: false,
    })
    .await;
    let (text, error) = call(&client, "ask_name", json!({})).await;
    assert!(
        error && text.contains("no elicitation capability"),
        "{text}"
    );
    client.cancel().await.expect("stops");
}

#[tokio::test]
async fn a_bad_argument_is_refused() {
    let client = spawn(DECLINES).await;
    let params = CallToolRequestParams::new("read_note").with_arguments(Map::from_iter([(
        "name".to_owned(),
        json!("../etc/passwd"),
    )]));
    let refused = client.call_tool(params).await.expect_err("an invalid name");
    assert!(
        refused.to_string().contains("\"name\" must be"),
        "{refused}"
    );
    client.cancel().await.expect("stops");
}

#[tokio::test]
async fn the_annotations_tell_the_truth() {
    let client = spawn(DECLINES).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let listed: Vec<(String, Option<bool>, Option<bool>)> = tools
        .iter()
        .map(|tool| {
            let hints = tool.annotations.as_ref();
            (
                tool.name.to_string(),
                hints.and_then(|a| a.read_only_hint),
                hints.and_then(|a| a.destructive_hint),
            )
        })
        .collect();
    assert_eq!(listed.len(), TOOLS.len());
    for (name, read_only, destructive) in listed {
        let expected = match name.as_str() {
            "read_note"
            | "ask_name"
            | "sign_in"
            | "wait_for_note"
            | "ask_name_later"
            | "list_note_names_in_alphabetical_order"
            | "ask_name_then_withdraw" => (Some(true), None),
            "append_note" => (Some(false), Some(false)),
            "write_note" | "deploy" | "delete_all_notes" => (Some(false), Some(true)),
            other => panic!("unexpected tool {other}"),
        };
        assert_eq!((read_only, destructive), expected, "{name}");
    }
    client.cancel().await.expect("stops");
}

#[tokio::test]
async fn the_prompt_and_the_resource_are_listed_and_answer() {
    let client = spawn(DECLINES).await;
    call(&client, "write_note", json!({"name": "ideas", "text": "x"})).await;
    let prompts = client.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, [PROMPT, PROMPT_ASKING]);
    let prompt = client.get_prompt(GetPromptRequestParams::new(PROMPT));
    let prompt = serde_json::to_value(prompt.await.expect("prompts/get")).expect("json");
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        json!("Write a brief summary of my notes: ideas.")
    );
    let resources = client.list_all_resources().await.expect("resources/list");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, [RESOURCE, RESOURCE_ASKING]);
    let read = client.read_resource(ReadResourceRequestParams::new(RESOURCE));
    let read = serde_json::to_value(read.await.expect("resources/read")).expect("json");
    assert_eq!(read["contents"][0]["text"], json!("ideas"));
    client.cancel().await.expect("stops");
}

#[tokio::test]
async fn a_wait_answers_as_soon_as_its_note_is_written() {
    let client = spawn(DECLINES).await;
    let peer = client.peer().clone();
    let waiting = tokio::spawn(async move {
        let params = CallToolRequestParams::new("wait_for_note").with_arguments(Map::from_iter([
            ("name".to_owned(), json!("later")),
            ("wait_ms".to_owned(), json!(3_600_000)),
        ]));
        peer.call_tool(params).await
    });
    call(
        &client,
        "write_note",
        json!({"name": "later", "text": "here"}),
    )
    .await;
    let waited = waiting
        .await
        .expect("the wait's task ends")
        .expect("the wait answers");
    let waited = serde_json::to_value(&waited).expect("serializes");
    assert_eq!(waited["content"][0]["text"], json!("here"));
    client.cancel().await.expect("stops");
}

#[tokio::test]
async fn a_cancelled_wait_stops_and_says_so() {
    let (client, stderr) = spawn_watched(DECLINES).await;
    let params = CallToolRequestParams::new("wait_for_note").with_arguments(Map::from_iter([
        ("name".to_owned(), json!("never")),
        ("wait_ms".to_owned(), json!(3_600_000)),
    ]));
    let handle = askgate_testkit::mcp::send_call(client.peer(), params).await;
    // The call is in flight once the server logged it; then cancel it.
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    until_line(&mut lines, "call wait_for_note").await;
    handle
        .cancel(Some("the person moved on".into()))
        .await
        .expect("the cancel is sent");
    until_line(&mut lines, WAIT_CANCELLED).await;
    // The server goes on serving.
    let (text, _) = call(&client, "read_note", json!({"name": "never"})).await;
    assert_eq!(text, "no note named \"never\"");
    client.cancel().await.expect("stops");
}

/// [`spawn`], with the server's stderr to read.
async fn spawn_watched(person: Person) -> (RunningService<RoleClient, Person>, ChildStderr) {
    let command = Command::new(env!("CARGO_BIN_EXE_askgate-example-upstream"));
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example upstream starts");
    let client = person.serve(transport).await.expect("the handshake");
    (client, stderr.expect("stderr is piped"))
}

/// Read `lines` until one contains `wanted` (the test fails if the server's
/// stderr ends first, or nothing comes for a minute: it hangs otherwise).
async fn until_line(lines: &mut tokio::io::Lines<tokio::io::BufReader<ChildStderr>>, wanted: &str) {
    let reading = async {
        while let Some(line) = lines.next_line().await.expect("stderr reads") {
            if line.contains(wanted) {
                return;
            }
        }
        panic!("stderr ended before {wanted:?}");
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), reading)
        .await
        .unwrap_or_else(|_| panic!("no {wanted:?} on stderr"));
}
