//! The tasks extension through the gateway: the conformance fixture server
//! (its task tools) is an HTTP upstream beside the example one; a call
//! the person confirms becomes the upstream's task, which the client
//! follows through the gateway; a call the person declines makes no task.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use askgate_conformance::server::Fixtures;
use askgate_mcp::Rounds;
use askgate_testkit::in_process::InProcess;
use askgate_testkit::mcp::text;
use askgate_testkit::person::{accept, decline};
use askgate_testkit::scratch::TempStore;
use askgate_testkit::{Manner, Person, sqlite_value};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, ClientConfig, ElicitResult, GetTaskParams, GetTaskResult,
    Implementation, ProtocolVersion, TASKS_EXTENSION_ID, TaskPayload,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value as Json, json};

use super::setup;

/// The fixture server on a free loopback port, its tasks in a store of
/// its own; it stops when dropped.
struct Fixture {
    url: String,
    store: TempStore,
    served: tokio::task::JoinHandle<()>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.served.abort();
    }
}

impl Fixture {
    async fn start() -> Fixture {
        let store = TempStore::open().await;
        let rounds = Rounds::new(*b"askgate gateway tasks test key!!", store.store().clone());
        let tasks = Fixtures::tasks(rounds.clone());
        let service = StreamableHttpService::new(
            move || Ok(Fixtures::with_tasks(rounds.clone(), tasks.clone())),
            Arc::new(LocalSessionManager::default()),
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
        Fixture { url, store, served }
    }

    /// How many tasks the fixture made.
    async fn tasks(&self) -> i64 {
        sqlite_value(self.store.url(), "SELECT COUNT(*) FROM tasks").await
    }
}

/// The capabilities of a client that shows forms, and follows tasks when
/// `tasks`.
fn capabilities(tasks: bool) -> Json {
    let mut capabilities = json!({"elicitation": {"form": {}}});
    if tasks {
        capabilities["extensions"] = json!({TASKS_EXTENSION_ID: {}});
    }
    capabilities
}

/// A gateway in this process over the example upstream and `fixture`
/// (so its tools are `fixture__<name>`), its client a person who answers
/// from `script` — having noted, before each answer, how many tasks the
/// fixture had made (into `before`).
async fn gateway(
    fixture: &Fixture,
    tasks: bool,
    script: Vec<ElicitResult>,
    before: Arc<Mutex<Vec<i64>>>,
) -> InProcess {
    let store_url = fixture.store.url().to_owned();
    let person = Person::new(capabilities(tasks))
        .speaking(ProtocolVersion::V_2025_11_25)
        .in_manner(Manner::Person)
        .answering(script)
        .before_answering(move |_| {
            let (store_url, before) = (store_url.clone(), before.clone());
            async move {
                let made: i64 = sqlite_value(&store_url, "SELECT COUNT(*) FROM tasks").await;
                before.lock().expect("not poisoned").push(made);
            }
        });
    setup()
        .config("")
        .tables(&format!(
            "[[upstreams]]\nname = \"fixture\"\nurl = {:?}\n",
            fixture.url
        ))
        .in_process(person)
        .await
}

/// A client of the fixture directly, following tasks.
async fn direct(fixture: &Fixture) -> RunningService<RoleClient, ClientConfig> {
    let capabilities: ClientCapabilities =
        serde_json::from_value(capabilities(true)).expect("capabilities");
    ClientConfig::new(capabilities, Implementation::new("direct", "1.0"))
        .serve(StreamableHttpClientTransport::from_uri(fixture.url.clone()))
        .await
        .expect("connects to the fixture")
}

/// `tasks/get` of `id` through `client` until the task is over (bounded,
/// so a task that never ends fails the test rather than hangs it).
async fn finished(client: &RunningService<RoleClient, Person>, id: &str) -> GetTaskResult {
    for _ in 0..200 {
        let got = client
            .get_task(GetTaskParams::new(id))
            .await
            .expect("tasks/get through the gateway");
        if got.task.status().is_terminal() {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the task {id} did not end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmed_call_becomes_the_upstreams_task_and_is_followed_through_the_gateway() {
    let fixture = Fixture::start().await;
    let before = Arc::new(Mutex::new(Vec::new()));
    let h = gateway(
        &fixture,
        true,
        vec![accept(json!({"confirm": true}))],
        before.clone(),
    )
    .await;
    let info = h.client.peer_info().expect("the gateway's handshake");
    assert!(
        info.capabilities.supports_tasks(),
        "the gateway advertises the tasks extension its upstream has: {:?}",
        info.capabilities
    );

    let call = askgate_testkit::mcp::call(
        "fixture__slow_compute",
        json!({"seconds": 0, "label": "through"}),
    );
    let created = match h.client.call_tool_once(call).await.expect("an answer") {
        CallToolResponse::Task(created) => created,
        other => panic!("expected the upstream's task, got {other:?}"),
    };
    assert_eq!(h.person.messages().len(), 1, "the person confirmed it");
    assert_eq!(
        *before.lock().expect("not poisoned"),
        [0],
        "no task upstream until the person answered"
    );
    assert_eq!(fixture.tasks().await, 1, "one task upstream");

    let id = created.task.task_id.clone();
    let through = finished(&h.client, &id).await;
    let TaskPayload::Completed { result } = &through.task.payload else {
        panic!("expected a completed task, got {:?}", through.task.payload);
    };
    let result: rmcp::model::CallToolResult =
        serde_json::from_value(Json::Object(result.clone())).expect("a tool result");
    assert_eq!(text(&result), "through: done after 0s");
    // What the gateway answers is what the upstream says of the task.
    let upstream = direct(&fixture).await;
    let theirs = upstream
        .get_task(GetTaskParams::new(id.clone()))
        .await
        .expect("tasks/get directly");
    assert_eq!(through.task, theirs.task);
    upstream.cancel().await.expect("closes");

    // The ledger: sent once, and answered with the task.
    let store_url = h.setup.store_url().to_owned();
    let ended: String = sqlite_value(
        &store_url,
        "SELECT state || ' ' || result FROM calls WHERE tool = 'slow_compute'",
    )
    .await;
    assert_eq!(ended, format!("answered {}", json!({"task": id})));

    // Someone else's task id, or none at all, is unknown to the gateway.
    match h.client.get_task(GetTaskParams::new("no-such-task")).await {
        Err(rmcp::ServiceError::McpError(error)) => assert_eq!(error.code.0, -32602),
        other => panic!("an unknown task is -32602, got {other:?}"),
    }
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_call_makes_no_task_upstream() {
    let fixture = Fixture::start().await;
    let before = Arc::new(Mutex::new(Vec::new()));
    let h = gateway(&fixture, true, vec![decline()], before).await;
    let call = askgate_testkit::mcp::call(
        "fixture__slow_compute",
        json!({"seconds": 0, "label": "declined"}),
    );
    match h.client.call_tool_once(call).await.expect("an answer") {
        CallToolResponse::Complete(result) => {
            assert_eq!(result.is_error, Some(true), "{}", text(&result));
        }
        other => panic!("a declined call is not sent, got {other:?}"),
    }
    assert_eq!(h.person.messages().len(), 1, "the person was asked");
    assert_eq!(fixture.tasks().await, 0, "no task upstream");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_extension_runs_calls_at_once_and_learns_what_a_task_tool_needs() {
    let fixture = Fixture::start().await;
    let before = Arc::new(Mutex::new(Vec::new()));
    let h = gateway(
        &fixture,
        false,
        vec![
            accept(json!({"confirm": true})),
            accept(json!({"confirm": true})),
        ],
        before,
    )
    .await;
    // A tool that may run as a task runs at once for this client.
    let call = askgate_testkit::mcp::call(
        "fixture__slow_compute",
        json!({"seconds": 0, "label": "at once"}),
    );
    match h.client.call_tool_once(call).await.expect("an answer") {
        CallToolResponse::Complete(result) => {
            assert_eq!(text(&result), "at once: done after 0s");
        }
        other => panic!("no task for a client that follows none, got {other:?}"),
    }
    // A tool that only runs as a task: the upstream's -32021, as it gave it.
    let call = askgate_testkit::mcp::call("fixture__failing_job", json!({}));
    match h.client.call_tool_once(call).await {
        Err(rmcp::ServiceError::McpError(error)) => {
            assert_eq!(error.code.0, -32021, "{error:?}");
            let required = &error.data.expect("data")["requiredCapabilities"];
            assert!(
                required["extensions"].get(TASKS_EXTENSION_ID).is_some(),
                "{required}"
            );
        }
        other => panic!("expected the upstream's -32021, got {other:?}"),
    }
    assert_eq!(fixture.tasks().await, 0, "no task upstream");
    h.stop().await;
}
