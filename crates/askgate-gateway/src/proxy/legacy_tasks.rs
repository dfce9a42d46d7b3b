//! 2025-11-25's tasks through the gateway, for a client whose messages the
//! gateway writes itself (stdio on unix, `--listen`; see
//! [`crate::legacy_tasks`] for how their fields pass through rmcp).
//!
//! - The gateway says it has them (`capabilities.tasks`, each tool's
//!   `execution`) as its upstreams do.
//! - A `tools/call` with a `task` goes through the one call pipeline like
//!   any other: the decision, the person's confirmation, the ledger; only
//!   once it is let go is it sent, with its task, so the task starts after
//!   the person said yes. The upstream's `CreateTaskResult` comes back as
//!   it wrote it, and the task is routed to that upstream for that
//!   principal. A call that is not sent (declined, blocked) is answered
//!   with its plain result, as a server that ran no task would.
//! - `tasks/get`, `tasks/result`, `tasks/cancel` go to the upstream that
//!   made the task, and their answers come back as it wrote them;
//!   `tasks/list` lists the principal's tasks of every upstream that has
//!   them; `notifications/tasks/status` goes to the task's client.

use rmcp::ErrorData;
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientRequest, CustomNotification, CustomRequest,
    CustomResult, ServerNotification, ServerResult,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value as Json, json};

use super::Gateway;
use super::passing::passed_on;
use super::serve::principal_of;
use super::tasks::{unexpected, unknown};
use crate::legacy_tasks::{self, CAPABILITY};
use crate::tasks::Caller;
use crate::upstream::Upstream;

/// The `task` of a 2025-11-25 client's call, kept with its request on its
/// way through the pipeline.
#[derive(Debug, Clone)]
struct LegacyTask(Json);

/// The `task` the client's call `cx` asked for, if any.
pub(crate) fn task_of(cx: &RequestContext<RoleServer>) -> Option<Json> {
    cx.extensions.get::<LegacyTask>().map(|task| task.0.clone())
}

/// The client of the call `cx` of `principal`, as a task it makes is
/// routed back to.
pub(crate) fn caller(cx: &RequestContext<RoleServer>, principal: &str) -> Caller {
    Caller {
        principal: principal.to_owned(),
        client: cx.peer.clone(),
    }
}

/// How long, and how often, a task's status waits for its route.
const ROUTE_WAIT: std::time::Duration = std::time::Duration::from_millis(50);
const ROUTE_WAITS: usize = 40;

/// How many pages of an upstream's `tasks/list` are read at most.
const MOST_PAGES: usize = 100;

impl Gateway {
    /// This session's frames are written with 2025-11-25's task fields put
    /// back: the gateway may say it has them.
    pub(crate) fn writes_legacy_tasks(&self) {
        self.legacy_tasks
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether this session's frames carry 2025-11-25's task fields.
    pub(crate) fn restores_legacy_tasks(&self) -> bool {
        self.legacy_tasks.load(std::sync::atomic::Ordering::Acquire)
    }

    /// `tool` as this session lists it: its carried `execution` kept for a
    /// session that puts it back, taken out for any other (a client that
    /// cannot call it as a task is not told it may).
    pub(crate) fn with_execution(&self, mut tool: rmcp::model::Tool) -> rmcp::model::Tool {
        if !self.restores_legacy_tasks()
            && let Some(meta) = tool.meta.as_mut()
        {
            meta.remove(legacy_tasks::EXECUTION);
            if meta.is_empty() {
                tool.meta = None;
            }
        }
        tool
    }

    /// The tasks made through the gateway, as the client's pipe reads
    /// them (to tell a 2025-11-25 task's requests).
    pub(crate) fn task_routes(&self) -> crate::tasks::Routes {
        self.inner.downstream.tasks.clone()
    }

    /// What an upstream said of 2025-11-25's tasks (`capabilities.tasks`,
    /// as carried).
    fn legacy_capability(upstream: &Upstream) -> Option<Json> {
        let info = upstream.service.peer_info()?;
        let capabilities = serde_json::to_value(&info.capabilities).ok()?;
        capabilities.get("experimental")?.get(CAPABILITY).cloned()
    }

    /// The 2025-11-25 `capabilities.tasks` to say the gateway has (carried
    /// under `experimental`), for a session that writes them: the union of
    /// the upstreams'; while one still starts, what it may bring (calls as
    /// tasks, their list and cancel), as for its other capabilities.
    pub(crate) fn legacy_tasks_capability(&self) -> Option<Json> {
        if !self.restores_legacy_tasks() {
            return None;
        }
        let mut merged: Option<Json> = None;
        for upstream in self.inner.upstreams.connected() {
            if let Some(theirs) = Self::legacy_capability(upstream) {
                let mine = merged.get_or_insert_with(|| json!({}));
                super::passing::union(mine, &theirs);
            }
        }
        if !self.inner.upstreams.all_connected() {
            let relayable = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
            super::passing::union(merged.get_or_insert_with(|| json!({})), &relayable);
        }
        merged
    }

    /// A request rmcp does not know: 2025-11-25's task requests (renamed
    /// by the client's pipe, or unknown to rmcp as they come).
    ///
    /// # Errors
    /// `-32601` for any other method; each request's own errors.
    pub(crate) async fn legacy_request(
        &self,
        request: CustomRequest,
        mut cx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let principal = principal_of(&cx);
        let params = request.params.unwrap_or(Json::Null);
        // 2026-07-28 removed these methods (its tasks are the extension's).
        if !speaks_classic(&cx) {
            return Err(not_found(&request.method));
        }
        match request.method.as_str() {
            legacy_tasks::TOOLS_CALL => {
                let (params, task) = task_call(params)?;
                cx.extensions.insert(LegacyTask(task));
                let response = self.call_tool_for(params, cx).await?;
                let written = match response {
                    CallToolResponse::Task(created) => legacy_tasks::creation(&created),
                    CallToolResponse::Complete(result) => classic(result),
                    _ => {
                        return Err(ErrorData::internal_error(
                            "the call's server asked for input in a way askgate cannot pass on \
                             to a 2025-11-25 task",
                            None,
                        ));
                    }
                };
                Ok(CustomResult::new(written))
            }
            legacy_tasks::TASKS_GET => self.about_task("tasks/get", params, &principal, &cx).await,
            legacy_tasks::TASKS_CANCEL => {
                self.about_task("tasks/cancel", params, &principal, &cx)
                    .await
            }
            "tasks/result" => {
                self.about_task("tasks/result", params, &principal, &cx)
                    .await
            }
            "tasks/list" => self.list_tasks(&principal).await,
            other => Err(not_found(other)),
        }
    }

    /// `method` (`tasks/get`, `tasks/result`, `tasks/cancel`) of the task
    /// `params` name, sent to the upstream that made it; its answer as it
    /// wrote it.
    async fn about_task(
        &self,
        method: &str,
        params: Json,
        principal: &str,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let id = params
            .get("taskId")
            .and_then(Json::as_str)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("{method} needs a taskId (a string)"), None)
            })?
            .to_owned();
        if !self.inner.downstream.tasks.is_legacy(&id) {
            return Err(unknown(&id));
        }
        let upstream = self.task_upstream(&id, principal)?;
        // `tasks/result` waits for the task's end: not past its client's
        // cancel.
        let asked = send(upstream, CustomRequest::new(method, Some(params)), method);
        let answer = tokio::select! {
            answer = asked => answer?,
            () = cx.ct.cancelled() => {
                return Err(ErrorData::invalid_request(
                    format!("{method} of task {id:?} was cancelled by its client"),
                    None,
                ));
            }
        };
        Ok(CustomResult::new(written(upstream, answer, method)?))
    }

    /// `tasks/list`: the principal's 2025-11-25 tasks of every upstream
    /// that lists them, each upstream's pages read in turn.
    async fn list_tasks(&self, principal: &str) -> Result<CustomResult, ErrorData> {
        let routes = &self.inner.downstream.tasks;
        let mut tasks = Vec::new();
        for upstream in self.inner.upstreams.connected() {
            let lists = Self::legacy_capability(upstream)
                .is_some_and(|theirs| theirs.get("list").is_some());
            if !lists {
                continue;
            }
            let mut cursor: Option<Json> = None;
            for _ in 0..MOST_PAGES {
                let params = cursor.take().map(|cursor| json!({"cursor": cursor}));
                let answer = send(
                    upstream,
                    CustomRequest::new("tasks/list", params),
                    "tasks/list",
                )
                .await?;
                let page = written(upstream, answer, "tasks/list")?;
                let listed = page.get("tasks").and_then(Json::as_array);
                tasks.extend(
                    listed
                        .into_iter()
                        .flatten()
                        .filter(|task| {
                            task.get("taskId")
                                .and_then(Json::as_str)
                                .and_then(|id| routes.route(id))
                                .is_some_and(|route| {
                                    route.legacy
                                        && route.principal == principal
                                        && route.relay == upstream.relay_number()
                                })
                        })
                        .cloned(),
                );
                match page.get("nextCursor") {
                    Some(next) if !next.is_null() => cursor = Some(next.clone()),
                    _ => break,
                }
            }
        }
        Ok(CustomResult::new(json!({"tasks": tasks})))
    }
}

/// Pass an upstream's `notifications/tasks/status` on to the client
/// whose call made the task (the upstream of relay `relay`); `false`
/// when it is none of these.
pub(crate) async fn relay_task_status(
    routes: &crate::tasks::Routes,
    relay: u64,
    notification: &CustomNotification,
) -> bool {
    if notification.method != "notifications/tasks/status" {
        return false;
    }
    let id = notification
        .params
        .as_ref()
        .and_then(|params| params.get("taskId"))
        .and_then(Json::as_str);
    let Some(id) = id else {
        return true;
    };
    let told = CustomNotification::new(notification.method.clone(), notification.params.clone());
    if let Some(client) = routes.client(relay, id) {
        tell(&client, told).await;
        return true;
    }
    // A server tells of its task as soon as it made it, and its answer may
    // still be on its way to the call that routes the task: the status
    // waits a moment for the route, on a task of its own (so the server's
    // later messages are not held up), a bounded number at once.
    let Some(waiting) = Waiting::take() else {
        tracing::debug!(task = %id, "too many task statuses wait for their routes; this one is dropped");
        return true;
    };
    let (routes, id) = (routes.clone(), id.to_owned());
    tokio::spawn(async move {
        let _waiting = waiting;
        for _ in 0..ROUTE_WAITS {
            tokio::time::sleep(ROUTE_WAIT).await;
            if let Some(client) = routes.client(relay, &id) {
                tell(&client, told).await;
                return;
            }
        }
        tracing::debug!(task = %id, "the status of a task no call through askgate made");
    });
    true
}

/// Tell `client` of its task's status.
async fn tell(client: &rmcp::service::Peer<RoleServer>, told: CustomNotification) {
    if let Err(error) = client
        .send_notification(ServerNotification::CustomNotification(told))
        .await
    {
        tracing::debug!(%error, "could not tell a client of its task's status");
    }
}

/// How many task statuses wait for their routes at most, across the
/// gateway.
const MOST_WAITING: usize = 64;

/// One status waiting for its route; counted while it lives.
struct Waiting;

/// How many statuses wait for their routes now.
static WAITING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Waiting {
    /// A place among the waiting statuses, if one is free.
    fn take() -> Option<Waiting> {
        let before = WAITING.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        if before >= MOST_WAITING {
            WAITING.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
            return None;
        }
        Some(Waiting)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITING.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// The error for a request of `method`, which askgate does not serve.
fn not_found(method: &str) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
        None,
    )
}

/// Whether the request `cx` is of a classic revision: its
/// `MCP-Protocol-Version` over HTTP (none: the oldest), else the one its
/// session's handshake negotiated (none: a 2026-07-28 session, which
/// makes none).
fn speaks_classic(cx: &RequestContext<RoleServer>) -> bool {
    let header = cx.extensions.get::<http::request::Parts>().map(|parts| {
        parts
            .headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
    });
    match header {
        Some(version) => version.is_none_or(is_classic_revision),
        None => cx
            .peer
            .peer_info()
            .is_some_and(|info| is_classic_revision(info.protocol_version.as_str())),
    }
}

/// Whether revision `version` (a date, which orders as text) is a classic
/// one, before 2026-07-28.
fn is_classic_revision(version: &str) -> bool {
    version < "2026-07-28"
}

/// `result` as a 2025-11-25 server writes it: without 2026-07-28's
/// `resultType`.
fn classic(result: impl serde::Serialize) -> Json {
    let mut written = serde_json::to_value(result).unwrap_or(Json::Null);
    if let Some(object) = written.as_object_mut() {
        object.remove("resultType");
    }
    written
}

/// The params of a 2025-11-25 `tools/call` with a task: the call's, and
/// the task.
fn task_call(params: Json) -> Result<(CallToolRequestParams, Json), ErrorData> {
    let Json::Object(mut params) = params else {
        return Err(ErrorData::invalid_params(
            "tools/call needs params (an object with name, arguments and task)",
            None,
        ));
    };
    let task = params.remove("task").unwrap_or(Json::Object(Map::new()));
    // serde's words may quote a value: not repeated.
    let call: CallToolRequestParams =
        serde_json::from_value(Json::Object(params)).map_err(|_| {
            ErrorData::invalid_params(
                "tools/call: its params are not a call (a name, and arguments as an object)",
                None,
            )
        })?;
    Ok((call, task))
}

/// Send `request` to `upstream` as it is (no extension declared: these
/// are 2025-11-25's requests).
async fn send(
    upstream: &Upstream,
    request: CustomRequest,
    what: &str,
) -> Result<ServerResult, ErrorData> {
    let answered = async {
        upstream
            .service
            .peer()
            .send_request(ClientRequest::CustomRequest(request))
            .await
    };
    answered
        .await
        .map_err(|error: ServiceError| passed_on(&upstream.name, what, error))
}

/// The answer of `upstream` to `method` as it wrote it.
fn written(upstream: &Upstream, answer: ServerResult, method: &str) -> Result<Json, ErrorData> {
    match answer {
        ServerResult::CustomResult(custom) => Ok(legacy_tasks::as_written(custom.0)),
        ServerResult::CallToolResult(result) => Ok(classic(result)),
        ServerResult::EmptyResult(_) => Ok(json!({})),
        _ => Err(unexpected(&upstream.name, method)),
    }
}
