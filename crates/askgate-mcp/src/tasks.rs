//! Durable tasks: the MCP tasks extension (`io.modelcontextprotocol/tasks`)
//! kept in askgate-store.
//!
//! A tool that may take long — or wait hours on a person — registers its
//! work with [`Tasks`]; when the client declared the extension, the call
//! answers at once with a task (`CreateTaskResult`) and the work runs on.
//! The work is written as any askgate handler is: it asks through a
//! [`Round`], and a `None` answer means "ask the client" — the task goes
//! `input_required` with those input requests, the client answers through
//! `tasks/update`, and the work runs again from the start with every answer
//! given so far. Nothing lives only in memory: the task, its pending
//! requests and its answers are in the store, so a task waiting on a person
//! survives a restart (any replica may resume it), and an answer is applied
//! exactly once.
//!
//! A task that was `working` when its process stopped is reported `failed`
//! (interrupted) once its lease lapses; it is never re-run by itself.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askgate_store::{NewTask, Store, TaskEnd, TaskError, TaskRow, TaskStatus};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::{SignedDuration, Timestamp};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
    CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, InputRequests, JsonObject, Task,
    TaskPayload, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value as Json, json};
use tokio::task::{AbortHandle, JoinError};

use crate::round::{Principal, Round, Rounds};

/// The future a task's work returns.
pub type WorkFuture = Pin<Box<dyn Future<Output = Result<CallToolResponse, ErrorData>> + Send>>;

/// A task's work: given its round and the call, a result, or input
/// requests to wait on (`CallToolResponse::InputRequired`), or an error.
type Work = Arc<dyn Fn(Round, CallToolRequestParams) -> WorkFuture + Send + Sync>;

/// The tasks of a server: their works by tool name, the store they live
/// in, and the works running in this process. Cheap to clone.
#[derive(Clone)]
pub struct Tasks {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("tools", &self.inner.works.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

struct Inner {
    rounds: Rounds,
    works: HashMap<String, Work>,
    running: Mutex<HashMap<String, AbortHandle>>,
    ttl_ms: Option<u64>,
    poll_interval_ms: u64,
    lease: Duration,
}

impl Tasks {
    /// Tasks kept in the store of `rounds`, with no work registered yet.
    pub fn new(rounds: Rounds) -> Tasks {
        Tasks {
            inner: Arc::new(Inner {
                rounds,
                works: HashMap::new(),
                running: Mutex::new(HashMap::new()),
                ttl_ms: Some(24 * 3600 * 1000),
                poll_interval_ms: 500,
                lease: Duration::from_secs(30),
            }),
        }
    }

    fn inner_mut(&mut self) -> &mut Inner {
        Arc::get_mut(&mut self.inner).expect("Tasks are configured before they are cloned")
    }

    /// Register the work of `tool`. The work must be deterministic in its
    /// answers: it runs again from the start each time answers arrive (and
    /// after a restart), and every ask it made before is answered from
    /// what the task was given.
    ///
    /// # Panics
    /// When called after the `Tasks` were cloned (configure first).
    #[must_use]
    pub fn with_work<F, Fut>(mut self, tool: &str, work: F) -> Tasks
    where
        F: Fn(Round, CallToolRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'static,
    {
        let work: Work = Arc::new(move |round, params| Box::pin(work(round, params)));
        self.inner_mut().works.insert(tool.to_owned(), work);
        self
    }

    /// How long a task is kept after creation (default a day; `None`:
    /// until purged) and how often clients should poll (default 500 ms).
    ///
    /// # Panics
    /// When called after the `Tasks` were cloned (configure first).
    #[must_use]
    pub fn with_timing(mut self, ttl: Option<Duration>, poll_interval: Duration) -> Tasks {
        let inner = self.inner_mut();
        inner.ttl_ms = ttl.map(|t| t.as_millis().max(1) as u64);
        inner.poll_interval_ms = poll_interval.as_millis().max(1) as u64;
        self
    }

    /// How long a working task's runner lease lasts before the task reads
    /// as interrupted (default 30 s; renewed every third of it).
    ///
    /// # Panics
    /// When called after the `Tasks` were cloned (configure first).
    #[must_use]
    pub fn with_lease(mut self, lease: Duration) -> Tasks {
        self.inner_mut().lease = lease;
        self
    }

    fn store(&self) -> &Store {
        self.inner.rounds.store()
    }

    /// The current time, on the clock of the rounds the tasks were made
    /// with.
    fn now(&self) -> Timestamp {
        self.inner.rounds.now()
    }

    /// Whether the request declared the tasks extension.
    pub fn client_supports(cx: &RequestContext<RoleServer>) -> bool {
        cx.client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks())
    }

    /// The `-32021` a tool that needs a task answers a client without the
    /// extension.
    pub fn required() -> ErrorData {
        let mut capabilities = ClientCapabilities::default();
        capabilities.extensions = serde_json::from_value(json!({
            rmcp::model::TASKS_EXTENSION_ID: {}
        }))
        .ok();
        let mut error = ErrorData::missing_required_client_capability(capabilities);
        error.message =
            "this tool runs as a task: declare the io.modelcontextprotocol/tasks extension".into();
        error
    }

    /// Start `tool` as a task with `arguments`: the task is durably
    /// created, its work started, and the `CreateTaskResult` to answer the
    /// call with returned.
    ///
    /// # Errors
    /// `-32602` when no work is registered for `tool`; `-32603` when the
    /// store fails.
    pub async fn start(
        &self,
        cx: &RequestContext<RoleServer>,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<CreateTaskResult, ErrorData> {
        if !self.inner.works.contains_key(tool) {
            return Err(ErrorData::invalid_params(
                format!("no task work is registered for tool {tool:?}"),
                None,
            ));
        }
        let capabilities = cx
            .client_capabilities()
            .map(|c| serde_json::to_value(c).unwrap_or(Json::Null))
            .unwrap_or(Json::Null);
        let now = self.now();
        let row = self
            .store()
            .create_task(&NewTask {
                id: new_id()?,
                principal: principal(cx),
                tool: tool.to_owned(),
                arguments: Json::Object(arguments),
                capabilities,
                ttl_ms: self.inner.ttl_ms,
                poll_interval_ms: Some(self.inner.poll_interval_ms),
                at: now,
                lease: lease(self.inner.lease),
            })
            .await
            .map_err(store_failed)?;
        tracing::debug!(task = %row.task.id, tool, "task created");
        let task = task_of(&row);
        self.spawn(row);
        Ok(CreateTaskResult::new(task))
    }

    /// `tasks/get`: the task with its status payload.
    ///
    /// # Errors
    /// `-32602` for an unknown task (or one of another principal).
    pub async fn get(
        &self,
        cx: &RequestContext<RoleServer>,
        params: GetTaskParams,
    ) -> Result<GetTaskResult, ErrorData> {
        let row = self.mine(cx, &params.task_id).await?;
        Ok(GetTaskResult::new(detailed(&row)?))
    }

    /// `tasks/update`: answers to the task's input requests. Unknown or
    /// answered keys are ignored; the task resumes once every pending
    /// request is answered (by exactly one update, whatever the races).
    ///
    /// # Errors
    /// `-32602` for an unknown task.
    pub async fn update(
        &self,
        cx: &RequestContext<RoleServer>,
        params: UpdateTaskParams,
    ) -> Result<(), ErrorData> {
        self.mine(cx, &params.task_id).await?;
        let responses: Map<String, Json> = params.input_responses.into_iter().collect();
        let now = self.now();
        let until = now.saturating_add(lease(self.inner.lease)).unwrap_or(now);
        let answered = self
            .store()
            .answer_task(&params.task_id, &responses, until, now)
            .await
            .map_err(task_failed)?;
        if answered.resume {
            self.spawn(answered.row);
        }
        Ok(())
    }

    /// `tasks/cancel`: a task not yet over is cancelled at once (its work
    /// in this process is stopped); one already over is left as it is.
    ///
    /// # Errors
    /// `-32602` for an unknown task.
    pub async fn cancel(
        &self,
        cx: &RequestContext<RoleServer>,
        params: CancelTaskParams,
    ) -> Result<(), ErrorData> {
        self.mine(cx, &params.task_id).await?;
        self.store()
            .cancel_task(&params.task_id, self.now())
            .await
            .map_err(task_failed)?;
        if let Some(handle) = self
            .inner
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&params.task_id)
        {
            handle.abort();
        }
        Ok(())
    }

    /// The task `id` if it belongs to the caller.
    async fn mine(&self, cx: &RequestContext<RoleServer>, id: &str) -> Result<TaskRow, ErrorData> {
        let row = self
            .store()
            .task(id, self.now())
            .await
            .map_err(store_failed)?;
        match row {
            Some(row) if row.task.principal == principal(cx) => Ok(row),
            // Another principal's task is as unknown as a missing one.
            _ => Err(unknown(id)),
        }
    }

    /// Run the work of a `working` task in the background, renewing its
    /// lease while it runs, and record how it ended.
    fn spawn(&self, row: TaskRow) {
        let Some(work) = self.inner.works.get(&row.task.tool).cloned() else {
            let store = self.store().clone();
            let now = self.now();
            tokio::spawn(async move {
                let error = json!({"code": -32603,
                    "message": format!("no work is registered for tool {:?} in this server", row.task.tool)});
                let _ = store
                    .finish_task(&row.task.id, &TaskEnd::Failed(error), now)
                    .await;
            });
            return;
        };
        let (round, params) = self.round_of(&row);
        let id = row.task.id.clone();
        let running = tokio::spawn(work(round, params));
        let abort = running.abort_handle();
        self.inner
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id.clone(), abort);
        let tasks = self.clone();
        tokio::spawn(async move {
            let ended = tokio::select! {
                ended = running => ended,
                () = tasks.renew_lease(&id) => return,
            };
            tasks
                .inner
                .running
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&id);
            // Cancelled: the store already says so.
            let Some(end) = end_of(ended) else {
                return;
            };
            let recorded = match end {
                Ended::Finished(end) => tasks.store().finish_task(&id, &end, tasks.now()).await,
                Ended::Waiting(pending) => {
                    let now = tasks.now();
                    let parked =
                        tasks
                            .store()
                            .park_task(&id, pending, Some("waiting for input"), now);
                    parked.await
                }
            };
            if let Err(TaskError::Store(error)) = recorded.map(|_| ()) {
                tracing::warn!(task = %id, %error, "the end of a task was not recorded");
            }
        });
    }

    /// The round and the call a task's work runs with: every answer the
    /// task was given at hand.
    fn round_of(&self, row: &TaskRow) -> (Round, CallToolRequestParams) {
        let capabilities: Option<ClientCapabilities> =
            serde_json::from_value(row.task.capabilities.clone()).ok();
        let round = self.inner.rounds.for_task(
            &row.task.id,
            &row.task.principal,
            &row.task.tool,
            &row.task.arguments,
            capabilities,
            row.answers.clone().into_iter().collect(),
        );
        let mut params = CallToolRequestParams::new(row.task.tool.clone());
        params.arguments = row.task.arguments.as_object().cloned();
        (round, params)
    }

    /// Renew the lease of the running task `id` every third of it, until
    /// the store no longer renews it (the task is over, or another runner
    /// has it). Never returns: the work's end is still awaited and recorded.
    async fn renew_lease(&self, id: &str) {
        let every = self.inner.lease / 3;
        loop {
            tokio::time::sleep(every).await;
            let now = self.now();
            let until = now.saturating_add(lease(self.inner.lease)).unwrap_or(now);
            if !matches!(self.store().renew_task_lease(id, until).await, Ok(true)) {
                break;
            }
        }
        std::future::pending::<()>().await;
    }
}

/// How a task's work ended, as the store records it.
enum Ended {
    /// Completed or failed.
    Finished(TaskEnd),
    /// Waiting for answers to these input requests.
    Waiting(Map<String, Json>),
}

/// What the store records of a work's end; `None` when it was cancelled
/// (the store already says so).
fn end_of(ended: Result<Result<CallToolResponse, ErrorData>, JoinError>) -> Option<Ended> {
    let failed = |message: &str| {
        Ended::Finished(TaskEnd::Failed(json!({"code": -32603, "message": message})))
    };
    Some(match ended {
        Err(join) if join.is_cancelled() => return None,
        Err(_) => failed("the task's work panicked"),
        Ok(Ok(CallToolResponse::Complete(result))) => {
            let result = serde_json::to_value(&result).unwrap_or(Json::Null);
            Ended::Finished(TaskEnd::Completed(result))
        }
        Ok(Ok(CallToolResponse::InputRequired(required))) => {
            let pending = required
                .input_requests
                .map(|r| serde_json::to_value(r).unwrap_or(Json::Null));
            match pending {
                Some(Json::Object(pending)) if !pending.is_empty() => Ended::Waiting(pending),
                _ => failed("the task's work asked for input without input requests"),
            }
        }
        Ok(Ok(_)) => failed("the task's work returned a task"),
        Ok(Err(error)) => {
            let error = serde_json::to_value(&error).unwrap_or(Json::Null);
            Ended::Finished(TaskEnd::Failed(error))
        }
    })
}

fn principal(cx: &RequestContext<RoleServer>) -> String {
    Principal::of(cx)
        .map(|p| p.0)
        .unwrap_or_else(|| crate::Principal::ANONYMOUS.to_owned())
}

fn lease(duration: Duration) -> SignedDuration {
    SignedDuration::try_from(duration).unwrap_or(SignedDuration::from_secs(30))
}

fn new_id() -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorData::internal_error(format!("cannot make a task id: {e}"), None))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown task {id:?}"), None)
}

fn store_failed(error: askgate_store::Error) -> ErrorData {
    ErrorData::internal_error(format!("the task store failed: {error}"), None)
}

fn task_failed(error: TaskError) -> ErrorData {
    match error {
        TaskError::NotFound { id } => unknown(&id),
        other => ErrorData::internal_error(format!("the task store failed: {other}"), None),
    }
}

/// The task as the wire shows it.
fn task_of(row: &TaskRow) -> Task {
    let status = match row.status {
        TaskStatus::Working => rmcp::model::TaskStatus::Working,
        TaskStatus::InputRequired => rmcp::model::TaskStatus::InputRequired,
        TaskStatus::Completed => rmcp::model::TaskStatus::Completed,
        TaskStatus::Failed => rmcp::model::TaskStatus::Failed,
        TaskStatus::Cancelled => rmcp::model::TaskStatus::Cancelled,
    };
    let mut task = Task::new(
        row.task.id.clone(),
        status,
        row.task.at.to_string(),
        row.updated_at.to_string(),
    );
    task.ttl_ms = row.task.ttl_ms;
    task.poll_interval_ms = row.task.poll_interval_ms;
    if let Some(message) = &row.status_message {
        task = task.with_status_message(message.clone());
    }
    task
}

/// The task with its status payload.
fn detailed(row: &TaskRow) -> Result<DetailedTask, ErrorData> {
    let corrupt = |what: &str| {
        ErrorData::internal_error(
            format!("task {} has an unreadable {what}", row.task.id),
            None,
        )
    };
    let payload = match row.status {
        TaskStatus::Working => TaskPayload::Working,
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        TaskStatus::InputRequired => {
            let input_requests: InputRequests =
                serde_json::from_value(Json::Object(row.pending.clone()))
                    .map_err(|_| corrupt("input request"))?;
            TaskPayload::InputRequired { input_requests }
        }
        TaskStatus::Completed => match &row.result {
            Some(Json::Object(result)) => TaskPayload::Completed {
                result: result.clone(),
            },
            _ => return Err(corrupt("result")),
        },
        TaskStatus::Failed => match &row.error {
            Some(Json::Object(error)) => TaskPayload::Failed {
                error: error.clone(),
            },
            _ => return Err(corrupt("error")),
        },
    };
    Ok(DetailedTask::new(task_of(row), payload))
}
