//! 2025-11-25's tasks (the experimental ones that SEP-2663 replaced)
//! carried through rmcp's model, which has no place for them.
//!
//! rmcp 3.11 models only the tasks extension of 2026-07-28. Read into its
//! types, a 2025-11-25 server's `capabilities.tasks` and a tool's
//! `execution` (`taskSupport`) are dropped, and a client's
//! `tools/call` with `params.task` loses the task. Where askgate reads and
//! writes the messages itself — stdio at both ends (on unix), the POSTs and
//! answers of `--listen`, the event streams of an HTTP upstream — these are
//! moved, on their way in, to places rmcp keeps, and put back on their way
//! out:
//!
//! - an upstream's answers ([`stow_answer`]): `capabilities.tasks` into
//!   `capabilities.experimental["io.askgate/tasks-2025"]`; each tool's
//!   `execution` into its `_meta["io.askgate/execution"]`; a task-shaped
//!   result (`tasks/get`, `tasks/cancel`: a `taskId` and a `status`, no
//!   `resultType`) under [`TASK`], so that rmcp keeps it whole (its
//!   2026-07-28 `GetTaskResult` would read some of them and drop `ttl`);
//! - the frames askgate writes to its client ([`restore_frame`]): the
//!   first two put back where the revision has them;
//! - the client's requests ([`inbound`]): a `tools/call` with a task, and
//!   `tasks/get` or `tasks/cancel` of a 2025-11-25 task, renamed into
//!   askgate's own methods ([`TOOLS_CALL`], [`TASKS_GET`],
//!   [`TASKS_CANCEL`]), which rmcp hands over raw; `tasks/result` and
//!   `tasks/list` reach askgate raw already, as no method rmcp knows.
//!
//! The task itself is the upstream's: askgate asks its person before the
//! call is sent (so the task starts after the decision), routes the
//! task's requests to the upstream that made it, and passes its answers
//! back as the upstream wrote them. See the proxy's `legacy_tasks`.

use rmcp::model::{CreateTaskResult, Task, TaskStatus};
use serde_json::{Map, Value as Json};

/// Where an upstream's (or askgate's) `capabilities.tasks` is carried.
pub(crate) const CAPABILITY: &str = "io.askgate/tasks-2025";

/// Where a tool's `execution` is carried, in its `_meta`.
pub(crate) const EXECUTION: &str = "io.askgate/execution";

/// The key a task-shaped result is carried under.
pub(crate) const TASK: &str = "io.askgate/task-2025";

/// The method a client's `tools/call` with a task is renamed to.
pub(crate) const TOOLS_CALL: &str = "io.askgate/tools/call";

/// The method a client's `tasks/get` of a 2025-11-25 task is renamed to.
pub(crate) const TASKS_GET: &str = "io.askgate/tasks/get";

/// The method a client's `tasks/cancel` of a 2025-11-25 task is renamed
/// to.
pub(crate) const TASKS_CANCEL: &str = "io.askgate/tasks/cancel";

/// The `_meta` key that ties a server's request to its task.
pub(crate) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The key under which a created task's answer is kept as its server
/// wrote it, in the `_meta` of rmcp's model of it (see [`created`]).
const AS_WRITTEN: &str = "io.askgate/as-written";

/// The task a server's own request (an elicitation) says it is asked
/// inside (`_meta["io.modelcontextprotocol/related-task"].taskId`).
pub(crate) fn related_task(request: &rmcp::model::InputRequest) -> Option<String> {
    let rmcp::model::InputRequest::Elicitation(asked) = request else {
        return None;
    };
    asked
        .extensions
        .get::<rmcp::model::RequestMetaObject>()?
        .get(RELATED_TASK)?
        .get("taskId")?
        .as_str()
        .map(str::to_owned)
}

/// Whether `line` may hold what `marks` name: a cheap look before a parse.
fn mentions(line: &[u8], marks: &[&[u8]]) -> bool {
    marks
        .iter()
        .any(|mark| line.windows(mark.len()).any(|window| window == *mark))
}

/// An upstream's answer `line` with 2025-11-25's task fields moved where
/// rmcp keeps them, or `None` when it has none (most lines: untouched).
pub(crate) fn stow_answer(line: &[u8]) -> Option<Vec<u8>> {
    if !mentions(line, &[b"\"tasks\"", b"\"execution\"", b"\"taskId\""]) {
        return None;
    }
    let mut message: Json = serde_json::from_slice(line).ok()?;
    let result = message.get_mut("result")?.as_object_mut()?;
    let mut changed = false;
    if result.contains_key("protocolVersion")
        && let Some(capabilities) = result.get_mut("capabilities").and_then(Json::as_object_mut)
        && capabilities.contains_key("tasks")
        && object_at(capabilities, "experimental").is_some()
    {
        let tasks = capabilities.remove("tasks").unwrap_or(Json::Null);
        if let Some(experimental) = object_at(capabilities, "experimental") {
            experimental.insert(CAPABILITY.to_owned(), tasks);
        }
        changed = true;
    }
    if let Some(tools) = result.get_mut("tools").and_then(Json::as_array_mut) {
        for tool in tools.iter_mut().filter_map(Json::as_object_mut) {
            if tool.contains_key("execution") && object_at(tool, "_meta").is_some() {
                let execution = tool.remove("execution").unwrap_or(Json::Null);
                if let Some(meta) = object_at(tool, "_meta") {
                    meta.insert(EXECUTION.to_owned(), execution);
                }
                changed = true;
            }
        }
    }
    if is_task(result) {
        let task = std::mem::take(result);
        result.insert(TASK.to_owned(), Json::Object(task));
        changed = true;
    }
    changed.then(|| serde_json::to_vec(&message).ok()).flatten()
}

/// Whether `result` is a 2025-11-25 task (`tasks/get`, `tasks/cancel`): a
/// `taskId` and a `status`, and no 2026-07-28 `resultType`.
fn is_task(result: &Map<String, Json>) -> bool {
    result.get("taskId").is_some_and(Json::is_string)
        && result.get("status").is_some_and(Json::is_string)
        && !result.contains_key("resultType")
}

/// The object at `key` of `object`, made if missing; `None` when `key`
/// holds something else (nothing is carried there then: it would be lost).
fn object_at<'a>(
    object: &'a mut Map<String, Json>,
    key: &str,
) -> Option<&'a mut Map<String, Json>> {
    object
        .entry(key.to_owned())
        .or_insert_with(|| Json::Object(Map::new()))
        .as_object_mut()
}

/// Take `key` out of the object at `at` in `object`, dropping that object
/// when nothing else is left in it.
fn take_from(object: &mut Map<String, Json>, at: &str, key: &str) -> Option<Json> {
    let inner = object.get_mut(at)?.as_object_mut()?;
    let taken = inner.remove(key)?;
    if inner.is_empty() {
        object.remove(at);
    }
    Some(taken)
}

/// The frames in `bytes` (whole lines, as askgate's transport writes
/// them) with the carried fields put back where 2025-11-25 has them; the
/// bytes as they are when none is carried.
pub(crate) fn restore_frame(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !mentions(bytes, &[CAPABILITY.as_bytes(), EXECUTION.as_bytes()]) {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let (body, end) = match line.strip_suffix(b"\n") {
            Some(body) => (body, &b"\n"[..]),
            None => (line, &b""[..]),
        };
        match restore_line(body) {
            Some(restored) => out.extend_from_slice(&restored),
            None => out.extend_from_slice(body),
        }
        out.extend_from_slice(end);
    }
    std::borrow::Cow::Owned(out)
}

/// One frame with its carried fields put back, or `None` when it has
/// none.
fn restore_line(line: &[u8]) -> Option<Vec<u8>> {
    if !mentions(line, &[CAPABILITY.as_bytes(), EXECUTION.as_bytes()]) {
        return None;
    }
    let mut message: Json = serde_json::from_slice(line).ok()?;
    let result = message.get_mut("result")?.as_object_mut()?;
    let mut changed = false;
    if let Some(capabilities) = result.get_mut("capabilities").and_then(Json::as_object_mut)
        && let Some(tasks) = take_from(capabilities, "experimental", CAPABILITY)
    {
        capabilities.insert("tasks".to_owned(), tasks);
        changed = true;
    }
    if let Some(tools) = result.get_mut("tools").and_then(Json::as_array_mut) {
        for tool in tools.iter_mut().filter_map(Json::as_object_mut) {
            if let Some(execution) = take_from(tool, "_meta", EXECUTION) {
                tool.insert("execution".to_owned(), execution);
                changed = true;
            }
        }
    }
    changed.then(|| serde_json::to_vec(&message).ok()).flatten()
}

/// A client's request `line` renamed into askgate's own method when it is
/// a 2025-11-25 task request rmcp would misread: a `tools/call` with a
/// `task`, or a `tasks/get` or `tasks/cancel` of a task `is_legacy` says
/// is one. `None` for every other line.
pub(crate) fn inbound(line: &[u8], is_legacy: impl Fn(&str) -> bool) -> Option<Vec<u8>> {
    if !mentions(
        line,
        &[b"\"tools/call\"", b"\"tasks/get\"", b"\"tasks/cancel\""],
    ) {
        return None;
    }
    let mut message: Json = serde_json::from_slice(line).ok()?;
    let object = message.as_object_mut()?;
    object.get("id")?;
    let params = object.get("params").and_then(Json::as_object);
    let renamed = match object.get("method").and_then(Json::as_str)? {
        "tools/call" if params.is_some_and(|p| p.get("task").is_some_and(Json::is_object)) => {
            TOOLS_CALL
        }
        "tasks/get" if params.is_some_and(|p| names_legacy(p, &is_legacy)) => TASKS_GET,
        "tasks/cancel" if params.is_some_and(|p| names_legacy(p, &is_legacy)) => TASKS_CANCEL,
        _ => return None,
    };
    object.insert("method".to_owned(), Json::String(renamed.to_owned()));
    serde_json::to_vec(&message).ok()
}

fn names_legacy(params: &Map<String, Json>, is_legacy: &impl Fn(&str) -> bool) -> bool {
    params
        .get("taskId")
        .and_then(Json::as_str)
        .is_some_and(is_legacy)
}

/// The task a 2025-11-25 `CreateTaskResult` (`{task, _meta?}`) holds, in
/// rmcp's model, where the gateway's calls keep tasks (its id, status and
/// time to live route it); the answer itself is kept as its server wrote
/// it, for [`creation`]. `None` when `result` is not one.
pub(crate) fn created(result: &Json) -> Option<CreateTaskResult> {
    let task = result.get("task")?.as_object()?;
    let status: TaskStatus = serde_json::from_value(task.get("status")?.clone()).ok()?;
    let text = |key: &str| task.get(key).and_then(Json::as_str).unwrap_or_default();
    let mut made = Task::new(
        task.get("taskId")?.as_str()?,
        status,
        text("createdAt"),
        text("lastUpdatedAt"),
    );
    made.ttl_ms = task.get("ttl").and_then(Json::as_u64);
    let mut meta = rmcp::model::MetaObject::default();
    meta.insert(AS_WRITTEN.to_owned(), result.clone());
    Some(CreateTaskResult::new(made).with_meta(meta))
}

/// `created` as its server wrote it (see [`created`]), else as 2025-11-25
/// writes one: `{task: {taskId, status, statusMessage?, createdAt,
/// lastUpdatedAt, ttl, pollInterval?}}`.
pub(crate) fn creation(created: &CreateTaskResult) -> Json {
    if let Some(written) = created.meta.as_ref().and_then(|meta| meta.get(AS_WRITTEN)) {
        return written.clone();
    }
    let task = &created.task;
    let mut written = Map::new();
    written.insert("taskId".into(), task.task_id.clone().into());
    written.insert(
        "status".into(),
        serde_json::to_value(task.status).unwrap_or(Json::Null),
    );
    if let Some(message) = &task.status_message {
        written.insert("statusMessage".into(), message.clone().into());
    }
    written.insert("createdAt".into(), task.created_at.clone().into());
    written.insert("lastUpdatedAt".into(), task.last_updated_at.clone().into());
    written.insert("ttl".into(), task.ttl_ms.map_or(Json::Null, Json::from));
    if let Some(poll) = task.poll_interval_ms {
        written.insert("pollInterval".into(), poll.into());
    }
    let mut result = Map::new();
    result.insert("task".into(), Json::Object(written));
    Json::Object(result)
}

/// A result an upstream wrote, as it wrote it: a carried task taken out
/// from under [`TASK`], anything else unchanged.
pub(crate) fn as_written(result: Json) -> Json {
    match result {
        Json::Object(mut object) if object.len() == 1 && object.contains_key(TASK) => {
            object.remove(TASK).unwrap_or(Json::Null)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests;
