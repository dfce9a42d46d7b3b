//! Durable tasks (the MCP tasks extension): a long call's status, the input
//! requests it waits on, the answers it was given, its result or error.
//!
//! A task parked on a person (`input_required`) survives a restart whole:
//! its answers are kept here, and the work resumes from them. A task that
//! was `working` when its process stopped holds a lease the runner renews;
//! once the lease lapses the task reads as `failed` ("interrupted") — it is
//! never re-run by itself, since it may have run partly.
//!
//! Every move is guarded: answers are merged by compare-and-swap on a
//! version, so two concurrent updates never lose an answer nor resume the
//! work twice; a terminal task never moves again.

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::backend::{Store, with_writer};
use crate::columns::{Columns, Fields, Stored, micros};
use crate::error::{Error, TaskError};
use crate::statement::Statement;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting on answers to its input requests.
    InputRequired,
    /// Done, with a result (which may report a tool error).
    Completed,
    /// Ended by a protocol-level error.
    Failed,
    /// Cancelled on request.
    Cancelled,
}

impl TaskStatus {
    /// The status as stored and as MCP spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the task is over.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    fn parse(text: &str) -> Option<TaskStatus> {
        [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// A task to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewTask {
    /// Its id (unguessable, made by the caller).
    pub id: String,
    /// Who it runs for; only they may read, answer or cancel it.
    pub principal: String,
    /// The tool it runs.
    pub tool: String,
    /// The tool's arguments, kept to resume the work after a restart.
    pub arguments: Json,
    /// The client's capabilities when it was created.
    pub capabilities: Json,
    /// How long the task is kept after creation (`None`: until purged).
    pub ttl_ms: Option<u64>,
    /// How often a client should poll.
    pub poll_interval_ms: Option<u64>,
    /// When it was created.
    pub at: Timestamp,
    /// How long the runner's first lease lasts.
    pub lease: SignedDuration,
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskRow {
    /// The task as created.
    #[serde(flatten)]
    pub task: NewTask,
    /// Where it stands.
    pub status: TaskStatus,
    /// Why it stands there, for people.
    pub status_message: Option<String>,
    /// When it last moved.
    pub updated_at: Timestamp,
    /// Until when the runner of a `working` task is known alive.
    pub lease_until: Option<Timestamp>,
    /// The input requests still to answer, by key.
    pub pending: Map<String, Json>,
    /// Every answer given, by key.
    pub answers: Map<String, Json>,
    /// The result of a completed task.
    pub result: Option<Json>,
    /// The error of a failed task.
    pub error: Option<Json>,
    /// Bumped by every move (the compare-and-swap guard).
    pub version: i64,
}

/// How a task's work ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEnd {
    /// With a result.
    Completed(Json),
    /// With a protocol-level error.
    Failed(Json),
}

/// What merging answers did.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskAnswered {
    /// The task after the merge.
    pub row: TaskRow,
    /// `true` for exactly one update: the one that answered the last
    /// pending request and moved the task back to `working` — its caller
    /// resumes the work.
    pub resume: bool,
}

macro_rules! task_columns {
    () => {
        "id, principal, tool, arguments, capabilities, status, status_message, created_at, \
         updated_at, ttl_ms, poll_interval_ms, lease_until, pending, answers, result, error, version"
    };
}

const TASK_BY_ID: &str = concat!("SELECT ", task_columns!(), " FROM tasks WHERE id = $1");

/// The message of a task whose runner stopped while it worked.
const INTERRUPTED: &str = "interrupted: the process running this task stopped before it finished; it may have run partly and is not run again by itself";

impl Store {
    /// Create a task, `working`. Durable on return: a read of its id
    /// resolves from then on.
    ///
    /// # Errors
    /// [`Error`] when the store fails (an id used before is a conflict).
    pub async fn create_task(&self, task: &NewTask) -> Result<TaskRow, Error> {
        let sql = concat!(
            "INSERT INTO tasks (id, principal, tool, arguments, capabilities, status, created_at, \
             updated_at, ttl_ms, poll_interval_ms, lease_until, pending, answers, version) \
             VALUES ($1, $2, $3, $4, $5, 'working', $6, $6, $7, $8, $9, '{}', '{}', 1) RETURNING ",
            task_columns!()
        );
        let lease = task.at.saturating_add(task.lease).unwrap_or(task.at);
        with_writer!(self, |conn| {
            let row = sqlx::query(sql)
                .bind(&task.id)
                .bind(&task.principal)
                .bind(&task.tool)
                .bind(task.arguments.to_string())
                .bind(task.capabilities.to_string())
                .bind(micros(task.at))
                .bind(task.ttl_ms.map(|v| v as i64))
                .bind(task.poll_interval_ms.map(|v| v as i64))
                .bind(micros(lease))
                .fetch_one(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            TaskRow::read(self, &row)
        })
    }

    /// The task with this id, as of `now`: a `working` task whose lease
    /// lapsed is moved to `failed` (interrupted) first.
    ///
    /// # Errors
    /// [`Error`] when the store fails or the row is unreadable.
    pub async fn task(&self, id: &str, now: Timestamp) -> Result<Option<TaskRow>, Error> {
        let row = self.read_task_by_id(id).await?;
        match row {
            Some(row)
                if row.status == TaskStatus::Working
                    && row.lease_until.is_some_and(|until| until < now) =>
            {
                let error = serde_json::json!({"code": -32603, "message": INTERRUPTED});
                match self
                    .move_task(&row, TaskStatus::Failed, None, Some(&error), now)
                    .await
                {
                    Ok(moved) => Ok(Some(moved)),
                    // Someone moved it meanwhile: read where it is now.
                    Err(TaskError::Illegal { .. }) => self.read_task_by_id(id).await,
                    Err(TaskError::NotFound { .. }) => Ok(None),
                    Err(TaskError::Store(e)) => Err(e),
                }
            }
            other => Ok(other),
        }
    }

    async fn read_task_by_id(&self, id: &str) -> Result<Option<TaskRow>, Error> {
        self.read_row(TASK_BY_ID, id).await
    }

    /// Extend the lease of a `working` task to `until` (its runner is
    /// alive). Returns `false` when the task is no longer working.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn renew_task_lease(&self, id: &str, until: Timestamp) -> Result<bool, Error> {
        with_writer!(self, |conn| {
            Ok(sqlx::query(
                "UPDATE tasks SET lease_until = $1 WHERE id = $2 AND status = 'working'",
            )
            .bind(micros(until))
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(|e| self.fail(e))?
            .rows_affected()
                == 1)
        })
    }

    /// `working -> input_required`, waiting on `pending` (input requests by
    /// key; keys never reused over the task's life).
    ///
    /// # Errors
    /// [`TaskError::Illegal`] unless the task is working (a cancelled task
    /// stays cancelled).
    pub async fn park_task(
        &self,
        id: &str,
        pending: Map<String, Json>,
        message: Option<&str>,
        now: Timestamp,
    ) -> Result<TaskRow, TaskError> {
        let row = self.required(id).await?;
        if row.status != TaskStatus::Working {
            return Err(illegal(&row, TaskStatus::InputRequired));
        }
        let sql = concat!(
            "UPDATE tasks SET status = 'input_required', status_message = $1, pending = $2, \
             lease_until = NULL, updated_at = $3, version = version + 1 \
             WHERE id = $4 AND version = $5 AND status = 'working' RETURNING ",
            task_columns!()
        );
        let parking = Statement::new(sql, id)
            .opt_text(message)
            .text(Json::Object(pending).to_string())
            .int(micros(now))
            .text(id)
            .int(row.version);
        let moved = self.write_row(parking).await?;
        match moved {
            Some(row) => Ok(row),
            None => {
                let now_row = self.required(id).await?;
                Err(illegal(&now_row, TaskStatus::InputRequired))
            }
        }
    }

    /// Merge `responses` into an `input_required` task: answers to pending
    /// keys are kept and those keys leave `pending`; unknown or answered
    /// keys are ignored. The update that answers the last pending request
    /// moves the task to `working` (with a lease until `lease_until`) and
    /// alone gets `resume: true`. Answers to a task that is not waiting are
    /// ignored.
    ///
    /// # Errors
    /// [`TaskError::NotFound`]; [`Error`] when the store fails.
    pub async fn answer_task(
        &self,
        id: &str,
        responses: &Map<String, Json>,
        lease_until: Timestamp,
        now: Timestamp,
    ) -> Result<TaskAnswered, TaskError> {
        let sql = concat!(
            "UPDATE tasks SET status = $1, pending = $2, answers = $3, lease_until = $4, \
             status_message = CASE WHEN $1 = 'working' THEN NULL ELSE status_message END, \
             updated_at = $5, version = version + 1 \
             WHERE id = $6 AND version = $7 RETURNING ",
            task_columns!()
        );
        // Compare-and-swap on the version: a concurrent update makes this
        // one read again and merge into what that one wrote.
        loop {
            let row = self.required(id).await?;
            let useful = row.status == TaskStatus::InputRequired
                && responses.keys().any(|k| row.pending.contains_key(k));
            if !useful {
                return Ok(TaskAnswered { row, resume: false });
            }
            let mut pending = row.pending.clone();
            let mut answers = row.answers.clone();
            for (key, value) in responses {
                if pending.remove(key).is_some() {
                    answers.insert(key.clone(), value.clone());
                }
            }
            let resume = pending.is_empty();
            let status = if resume {
                TaskStatus::Working
            } else {
                TaskStatus::InputRequired
            };
            let merging = Statement::new(sql, id)
                .text(status.as_str())
                .text(Json::Object(pending).to_string())
                .text(Json::Object(answers).to_string())
                .opt_int(resume.then(|| micros(lease_until)))
                .int(micros(now))
                .text(id)
                .int(row.version);
            let moved = self.write_row(merging).await?;
            if let Some(row) = moved {
                return Ok(TaskAnswered { row, resume });
            }
        }
    }

    /// `working -> completed | failed`.
    ///
    /// # Errors
    /// [`TaskError::Illegal`] unless the task is working (for example it
    /// was cancelled meanwhile: the cancel stands).
    pub async fn finish_task(
        &self,
        id: &str,
        end: &TaskEnd,
        now: Timestamp,
    ) -> Result<TaskRow, TaskError> {
        let row = self.required(id).await?;
        if row.status != TaskStatus::Working {
            let wanted = match end {
                TaskEnd::Completed(_) => TaskStatus::Completed,
                TaskEnd::Failed(_) => TaskStatus::Failed,
            };
            return Err(illegal(&row, wanted));
        }
        match end {
            TaskEnd::Completed(result) => {
                self.move_task(&row, TaskStatus::Completed, Some(result), None, now)
                    .await
            }
            TaskEnd::Failed(error) => {
                self.move_task(&row, TaskStatus::Failed, None, Some(error), now)
                    .await
            }
        }
    }

    /// Cancel a task that is not over; a task already over is returned as
    /// it is (cancelling is idempotent).
    ///
    /// # Errors
    /// [`TaskError::NotFound`]; [`Error`] when the store fails.
    pub async fn cancel_task(&self, id: &str, now: Timestamp) -> Result<TaskRow, TaskError> {
        loop {
            let row = self.required(id).await?;
            if row.status.is_terminal() {
                return Ok(row);
            }
            match self
                .move_task(&row, TaskStatus::Cancelled, None, None, now)
                .await
            {
                Ok(row) => return Ok(row),
                // It moved meanwhile: look again.
                Err(TaskError::Illegal { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Forget tasks whose time to live ran out before `now`. Returns how
    /// many were removed.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn purge_tasks(&self, now: Timestamp) -> Result<u64, Error> {
        with_writer!(self, |conn| {
            Ok(sqlx::query(
                "DELETE FROM tasks WHERE ttl_ms IS NOT NULL AND created_at + ttl_ms * 1000 <= $1",
            )
            .bind(micros(now))
            .execute(&mut *conn)
            .await
            .map_err(|e| self.fail(e))?
            .rows_affected())
        })
    }

    async fn required(&self, id: &str) -> Result<TaskRow, TaskError> {
        self.read_task_by_id(id)
            .await?
            .ok_or_else(|| TaskError::NotFound { id: id.to_owned() })
    }

    /// The one guarded move to a terminal status, from the version read.
    async fn move_task(
        &self,
        row: &TaskRow,
        to: TaskStatus,
        result: Option<&Json>,
        error: Option<&Json>,
        now: Timestamp,
    ) -> Result<TaskRow, TaskError> {
        let sql = concat!(
            "UPDATE tasks SET status = $1, result = $2, error = $3, pending = '{}', \
             lease_until = NULL, status_message = $4, updated_at = $5, version = version + 1 \
             WHERE id = $6 AND version = $7 RETURNING ",
            task_columns!()
        );
        let message = error
            .and_then(|e| e.get("message"))
            .and_then(Json::as_str)
            .map(str::to_owned);
        let moving = Statement::new(sql, &row.task.id)
            .text(to.as_str())
            .opt_text(result.map(Json::to_string).as_deref())
            .opt_text(error.map(Json::to_string).as_deref())
            .opt_text(message.as_deref())
            .int(micros(now))
            .text(row.task.id.as_str())
            .int(row.version);
        let moved = self.write_row(moving).await?;
        match moved {
            Some(row) => Ok(row),
            None => {
                let now_row = self.required(&row.task.id).await?;
                Err(illegal(&now_row, to))
            }
        }
    }
}

impl Stored for TaskRow {
    const WHAT: &'static str = "task";

    fn from_columns<R: Fields>(row: &Columns<'_, R>) -> Result<TaskRow, Error> {
        let corrupt = |detail: String| row.corrupt(detail);
        let object = |column: &str| -> Result<Map<String, Json>, Error> {
            match row.json(column)? {
                Some(Json::Object(map)) => Ok(map),
                None => Ok(Map::new()),
                Some(_) => Err(corrupt(format!("{column} is not an object"))),
            }
        };
        let status_text = row.text("status")?.unwrap_or_default();
        let created = row
            .time("created_at")?
            .ok_or_else(|| corrupt("no created_at".into()))?;
        Ok(TaskRow {
            task: NewTask {
                id: row.text("id")?.unwrap_or_default(),
                principal: row.text("principal")?.unwrap_or_default(),
                tool: row.text("tool")?.unwrap_or_default(),
                arguments: row.json("arguments")?.unwrap_or(Json::Null),
                capabilities: row.json("capabilities")?.unwrap_or(Json::Null),
                ttl_ms: row.number("ttl_ms")?.map(|v| v.max(0) as u64),
                poll_interval_ms: row.number("poll_interval_ms")?.map(|v| v.max(0) as u64),
                at: created,
                lease: SignedDuration::ZERO,
            },
            status: TaskStatus::parse(&status_text)
                .ok_or_else(|| corrupt(format!("unknown status {status_text:?}")))?,
            status_message: row.text("status_message")?,
            updated_at: row.time("updated_at")?.unwrap_or(created),
            lease_until: row.time("lease_until")?,
            pending: object("pending")?,
            answers: object("answers")?,
            result: row.json("result")?,
            error: row.json("error")?,
            version: row.number("version")?.unwrap_or(0),
        })
    }
}

fn illegal(row: &TaskRow, wanted: TaskStatus) -> TaskError {
    TaskError::Illegal {
        id: row.task.id.clone(),
        state: row.status.as_str(),
        wanted: wanted.as_str(),
    }
}
