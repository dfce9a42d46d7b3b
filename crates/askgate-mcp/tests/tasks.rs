//! Durable tasks through a real rmcp client and server in process: a task
//! waiting on a person survives a server restart, answers apply once, a
//! cancel stands, and a task is only its principal's.

use std::time::Duration;

use askgate_core::{Ask, Form, Outcome};
use askgate_mcp::{Principal, Rounds, Tasks};
use askgate_store::Store;
use askgate_testkit::mcp::{connect, discover};
use askgate_testkit::{Person, Scratch, within};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    GetTaskParams, GetTaskResult, InputResponses, ServerCapabilities, ServerConfig, TaskPayload,
    TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::{ErrorData, ServerHandler, ServiceError};
use serde_json::{Value as Json, json};

fn confirm_form(file: &str) -> Form {
    serde_json::from_value(json!({
        "message": format!("Delete {file}?"),
        "fields": [{"id": "confirm", "title": "Delete it", "type": "boolean"}]
    }))
    .expect("a form")
}

/// How often a client polls a task (the server says so in each task).
const POLL: Duration = Duration::from_millis(20);

/// A runner's lease: renewed every third of it. Long enough that a loaded
/// machine (the whole workspace's tests at once) renews it in time — at
/// 1 s a renewal two-thirds of a second late was seen to lapse it.
const LEASE: Duration = Duration::from_secs(3);

fn tasks(rounds: Rounds) -> Tasks {
    Tasks::new(rounds)
        .with_lease(LEASE)
        .with_timing(Some(Duration::from_secs(3600)), POLL)
        .with_work("delete", |mut round, params| async move {
            let file = params
                .arguments
                .as_ref()
                .and_then(|a| a.get("file"))
                .and_then(Json::as_str)
                .unwrap_or("?")
                .to_owned();
            let ask = Ask::new(confirm_form(&file)).expect("askable");
            let Some(outcome) = round.ask("confirm", ask).await? else {
                return Ok(round.input_required()?.into());
            };
            let text = match outcome {
                Outcome::Accepted { values }
                    if values
                        .get("confirm")
                        .is_some_and(|v| v.value.to_json() == json!(true)) =>
                {
                    format!("deleted {file}")
                }
                other => format!(
                    "kept {file}: {}",
                    serde_json::to_value(&other).expect("json")["outcome"]
                ),
            };
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
        })
        .with_work("boom", |_round, _params| async move {
            if std::hint::black_box(true) {
                panic!("the work fell over");
            }
            Ok(CallToolResult::success(vec![]).into())
        })
        .with_work("slow", |_round, _params| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(CallToolResult::success(vec![]).into())
        })
}

/// A server of the tasks above whose every request is for `principal` (as
/// an authentication layer would mark it).
#[derive(Clone)]
struct Server {
    tasks: Tasks,
    principal: &'static str,
}

impl Server {
    fn mark(&self, cx: &mut RequestContext<RoleServer>) {
        cx.extensions.insert(Principal(self.principal.into()));
    }
}

/// The `tasks/*` methods: each request marked for the principal, then
/// answered by the tasks.
macro_rules! marked_tasks {
    ($($method:ident($params:ty) -> $result:ty = $tasks:ident;)*) => {$(
        async fn $method(
            &self,
            params: $params,
            mut cx: RequestContext<RoleServer>,
        ) -> Result<$result, ErrorData> {
            self.mark(&mut cx);
            self.tasks.$tasks(&cx, params).await
        }
    )*};
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        mut cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.mark(&mut cx);
        let arguments = params.arguments.clone().unwrap_or_default();
        Ok(self.tasks.start(&cx, &params.name, arguments).await?.into())
    }

    marked_tasks! {
        get_task(GetTaskParams) -> GetTaskResult = get;
        update_task(UpdateTaskParams) -> () = update;
        cancel_task(CancelTaskParams) -> () = cancel;
    }
}

/// A server process (in process) on the store at `url`, for `principal`,
/// and a client connected to it.
async fn serve(url: &str, principal: &'static str) -> RunningService<RoleClient, Person> {
    let store = Store::open(url).await.expect("the store opens");
    let server = Server {
        tasks: tasks(Rounds::new([5u8; 32], store)),
        principal,
    };
    let client = Person::new(json!({
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}}
    }))
    .named("task-driver");
    connect(server, client, discover()).await
}

async fn start(client: &RunningService<RoleClient, Person>, tool: &str, args: Json) -> String {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = args.as_object().cloned();
    match client.call_tool_once(params).await.expect("a result") {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// A scratch store, alice's client on it, and the id of the task of `tool`
/// she started with `args`.
async fn started(tool: &str, args: Json) -> (Scratch, RunningService<RoleClient, Person>, String) {
    let dir = Scratch::new();
    let client = serve(&dir.store_url(), "alice").await;
    let id = start(&client, tool, args).await;
    (dir, client, id)
}

async fn get(client: &RunningService<RoleClient, Person>, id: &str) -> GetTaskResult {
    client
        .get_task(GetTaskParams::new(id.to_owned()))
        .await
        .expect("the task is known")
}

/// The task once it is in `status`.
async fn until(
    client: &RunningService<RoleClient, Person>,
    id: &str,
    status: TaskStatus,
) -> GetTaskResult {
    let what = format!("task {id} to be {status:?}");
    until_task(client, id, &what, |task| task.task.task.status == status).await
}

/// The task once `fits` says so. The store has no news of tasks, and the
/// tasks extension has its client poll `tasks/get`: so does this, at the
/// task's own poll interval (the server's, [`POLL`]), for at most
/// [`askgate_testkit::wait::PATIENCE`].
async fn until_task(
    client: &RunningService<RoleClient, Person>,
    id: &str,
    what: &str,
    mut fits: impl FnMut(&GetTaskResult) -> bool,
) -> GetTaskResult {
    within(what, async {
        loop {
            let task = get(client, id).await;
            if fits(&task) {
                return task;
            }
            let every = task.task.task.poll_interval_ms.unwrap_or(20);
            tokio::time::sleep(Duration::from_millis(every)).await;
        }
    })
    .await
}

fn text_of(task: &GetTaskResult) -> String {
    match &task.task.payload {
        TaskPayload::Completed { result } => result["content"][0]["text"]
            .as_str()
            .expect("a text result")
            .to_owned(),
        other => panic!("not completed: {other:?}"),
    }
}

/// Answer the task's input request `key`: accepted, with `content`.
async fn update(
    client: &RunningService<RoleClient, Person>,
    id: &str,
    key: &str,
    content: Json,
) -> Result<(), ServiceError> {
    let params = UpdateTaskParams::new(id.to_owned(), answer(key, content));
    client.update_task(params).await
}

/// The task's status now.
async fn status(client: &RunningService<RoleClient, Person>, id: &str) -> TaskStatus {
    get(client, id).await.task.task.status
}

fn answer(key: &str, content: Json) -> InputResponses {
    serde_json::from_value(json!({key: {"action": "accept", "content": content}}))
        .expect("input responses")
}

#[tokio::test]
async fn a_task_waiting_on_a_person_survives_a_server_restart() {
    let (dir, first, id) = started("delete", json!({"file": "notes.txt"})).await;
    let waiting = until(&first, &id, TaskStatus::InputRequired).await;
    let TaskPayload::InputRequired { input_requests } = &waiting.task.payload else {
        panic!("waiting on input");
    };
    let asked = serde_json::to_value(&input_requests["confirm"]).expect("json");
    assert_eq!(asked["params"]["message"], "Delete notes.txt?");
    drop(first);

    // A new server process on the same store: the task is there, waiting.
    let second = serve(&dir.store_url(), "alice").await;
    let still = get(&second, &id).await;
    assert_eq!(still.task.task.status, TaskStatus::InputRequired);
    update(&second, &id, "confirm", json!({"confirm": true}))
        .await
        .expect("acknowledged");
    let done = until(&second, &id, TaskStatus::Completed).await;
    assert_eq!(text_of(&done), "deleted notes.txt");

    // A late duplicate answer changes nothing.
    update(&second, &id, "confirm", json!({"confirm": false}))
        .await
        .expect("acknowledged, ignored");
    assert_eq!(text_of(&get(&second, &id).await), "deleted notes.txt");
}

#[tokio::test]
async fn a_wrong_answer_is_asked_again_under_a_new_key() {
    let (_dir, client, id) = started("delete", json!({"file": "a.txt"})).await;
    until(&client, &id, TaskStatus::InputRequired).await;
    update(&client, &id, "confirm", json!({"confirm": "yes please"}))
        .await
        .expect("acknowledged");
    // The work ran again and asked again: same ask, a key never used.
    let asked = until_task(&client, &id, "asked again under confirm#2", |task| {
        matches!(&task.task.payload, TaskPayload::InputRequired { input_requests }
            if input_requests.contains_key("confirm#2"))
    })
    .await;
    let TaskPayload::InputRequired { input_requests } = &asked.task.payload else {
        unreachable!("waited for input_required");
    };
    let again = serde_json::to_value(&input_requests["confirm#2"]).expect("json");
    let message = again["params"]["message"].as_str().expect("a message");
    assert!(
        message.contains("Delete it"),
        "the reason names the field: {message}"
    );
    update(&client, &id, "confirm#2", json!({"confirm": false}))
        .await
        .expect("acknowledged");
    let done = until(&client, &id, TaskStatus::Completed).await;
    assert_eq!(text_of(&done), "kept a.txt: \"accepted\"");
}

#[tokio::test]
async fn a_cancelled_task_stays_cancelled_and_a_panic_is_a_failure() {
    let (_dir, client, id) = started("slow", json!({})).await;
    assert_eq!(status(&client, &id).await, TaskStatus::Working);
    client
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("acknowledged");
    assert_eq!(status(&client, &id).await, TaskStatus::Cancelled);
    // Cancelling again is the same empty acknowledgement.
    client
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("idempotent");

    let id = start(&client, "boom", json!({})).await;
    let failed = until(&client, &id, TaskStatus::Failed).await;
    let TaskPayload::Failed { error } = &failed.task.payload else {
        panic!("failed with an error");
    };
    assert_eq!(error["code"], -32603);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("panicked"))
    );
}

#[tokio::test]
async fn a_task_is_only_its_principals() {
    let (dir, alice, id) = started("delete", json!({"file": "b.txt"})).await;
    until(&alice, &id, TaskStatus::InputRequired).await;
    let mallory = serve(&dir.store_url(), "mallory").await;
    for result in [
        mallory
            .get_task(GetTaskParams::new(id.clone()))
            .await
            .map(|_| ()),
        update(&mallory, &id, "confirm", json!({"confirm": true})).await,
        mallory.cancel_task(CancelTaskParams::new(id.clone())).await,
    ] {
        match result {
            Err(ServiceError::McpError(error)) => {
                assert_eq!(error.code.0, -32602);
                assert!(error.message.contains("unknown task"), "{}", error.message);
            }
            other => panic!("another principal's task must read as unknown: {other:?}"),
        }
    }
    assert_eq!(
        status(&alice, &id).await,
        TaskStatus::InputRequired,
        "untouched"
    );
}

#[tokio::test]
async fn a_live_runner_keeps_its_task_working_past_its_first_lease() {
    let (_dir, client, id) = started("slow", json!({})).await;
    // The runner renews its lease while it runs, so readers (which report
    // a lapsed lease as interrupted) keep seeing it work past the first
    // lease. A lapsed lease itself is tested in askgate-store.
    let reads = (LEASE + Duration::from_secs(1)).as_millis() / 100;
    for _ in 0..reads {
        assert_eq!(status(&client, &id).await, TaskStatus::Working);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
