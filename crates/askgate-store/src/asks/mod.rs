//! Asks: parked, then settled once — first answer wins — or expired.

mod row;

use std::sync::Arc;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use sqlx::Row;

use crate::backend::{Store, with_pool, with_writer, write_statement};
use crate::error::{Error, Misuse, SettleError};
use crate::statement::Statement;

/// Where an ask stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskStatus {
    /// Waiting for a person.
    Pending,
    /// Answered (accepted).
    Answered,
    /// Declined.
    Declined,
    /// Cancelled.
    Cancelled,
    /// Skipped (a question set: proceed on assumptions).
    Skipped,
    /// Expired before an answer came; no default was applied.
    Expired,
}

impl AskStatus {
    /// The status as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            AskStatus::Pending => "pending",
            AskStatus::Answered => "answered",
            AskStatus::Declined => "declined",
            AskStatus::Cancelled => "cancelled",
            AskStatus::Skipped => "skipped",
            AskStatus::Expired => "expired",
        }
    }

    fn parse(text: &str) -> Option<AskStatus> {
        [
            AskStatus::Pending,
            AskStatus::Answered,
            AskStatus::Declined,
            AskStatus::Cancelled,
            AskStatus::Skipped,
            AskStatus::Expired,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// An ask to park.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewAsk {
    /// Its id (made by the caller: the store has no randomness).
    pub id: String,
    /// `tool:<run_id>:<call_id>`: the call that waits on it.
    pub resume_key: String,
    /// The call it is about, across every ask for it: the same principal,
    /// tool and arguments (see [`Store::asks_of_call`]). Unlike
    /// `resume_key`, several asks may share it (one after another).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_key: Option<String>,
    /// Who the ask is for.
    pub principal: String,
    /// The form or question set, as JSON.
    pub request: Json,
    /// The upstream server, when the ask guards a tool call.
    pub server: Option<String>,
    /// The tool.
    pub tool: Option<String>,
    /// The tool's risk.
    pub risk: Option<String>,
    /// When it was parked.
    pub created_at: Timestamp,
    /// When it expires, if ever.
    pub expires_at: Option<Timestamp>,
}

/// A stored ask.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AskRow {
    /// The ask as parked.
    #[serde(flatten)]
    pub ask: NewAsk,
    /// Where it stands.
    pub status: AskStatus,
    /// The reply that settled it.
    pub reply: Option<Json>,
    /// The settled outcome.
    pub outcome: Option<Json>,
    /// Who answered.
    pub answered_by: Option<String>,
    /// Through which surface.
    pub answered_via: Option<String>,
    /// When it settled.
    pub settled_at: Option<Timestamp>,
}

/// News that an ask settled (answered, declined, expired...).
#[derive(Debug, Clone)]
pub struct Settled {
    /// The ask's id.
    pub id: Arc<str>,
    /// The ask as it settled, when it settled in this process; `None` when
    /// the news came from another process (read the ask to see it).
    pub row: Option<Arc<AskRow>>,
}

/// News that an ask was parked (a new one: parking an ask again is not
/// news).
#[derive(Debug, Clone)]
pub struct Parked {
    /// The ask's id.
    pub id: Arc<str>,
    /// The ask as parked, when it was parked in this process; `None` when
    /// the news came from another process (read the ask to see it).
    pub row: Option<Arc<AskRow>>,
}

/// An answer to apply to a pending ask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settlement {
    /// The status it settles to (not `pending` or `expired`).
    pub status: AskStatus,
    /// The reply as given.
    pub reply: Json,
    /// The settled outcome.
    pub outcome: Json,
    /// Who answered.
    pub answered_by: Option<String>,
    /// Through which surface (`mcp`, `web`, `cli`, ...).
    pub answered_via: String,
}

/// A page of asks, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page {
    /// The asks.
    pub asks: Vec<AskRow>,
    /// Pass back to get the next page; `None` on the last.
    pub next: Option<String>,
}

/// The columns of an ask, in the order [`Store::read`] expects them.
macro_rules! ask_columns {
    () => {
        "id, resume_key, principal, request, server, tool, risk, created_at, expires_at, \
         status, reply, outcome, answered_by, answered_via, settled_at, call_key"
    };
}

/// The columns of an ask, in the order [`Store::read`] expects them.
pub(crate) const ASK_COLUMNS: &str = ask_columns!();

const BY_ID: &str = concat!("SELECT ", ask_columns!(), " FROM asks WHERE id = $1");
const BY_RESUME_KEY: &str = concat!(
    "SELECT ",
    ask_columns!(),
    " FROM asks WHERE resume_key = $1"
);

const BY_CALL_KEY: &str = concat!(
    "SELECT ",
    ask_columns!(),
    " FROM asks WHERE call_key = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
);

const PARK: &str = concat!(
    "INSERT INTO asks (id, resume_key, principal, request, server, tool, risk, created_at, expires_at, call_key, status) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending') ON CONFLICT DO NOTHING RETURNING ",
    ask_columns!()
);

const SETTLE: &str = concat!(
    "UPDATE asks SET status = $1, reply = $2, outcome = $3, answered_by = $4, answered_via = $5, settled_at = $6 \
     WHERE id = $7 AND status = 'pending' AND (expires_at IS NULL OR expires_at > $6) RETURNING ",
    ask_columns!()
);

/// [`PARK`] returning only the id: an ask it returns is stored as given.
const PARK_NEW: &str = "INSERT INTO asks (id, resume_key, principal, request, server, tool, risk, created_at, expires_at, call_key, status) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending') ON CONFLICT DO NOTHING RETURNING id";

/// [`PARK_NEW`] for many asks at once (PostgreSQL): one array per parameter.
const PARK_MANY: &str = "INSERT INTO asks (id, resume_key, principal, request, server, tool, risk, created_at, expires_at, call_key, status) \
     SELECT id, resume_key, principal, request, server, tool, risk, created_at, expires_at, call_key, 'pending' \
     FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
     $8::int8[], $9::int8[], $10::text[]) AS p (id, resume_key, principal, request, server, tool, risk, created_at, expires_at, call_key) \
     ON CONFLICT DO NOTHING RETURNING id";

/// [`SETTLE`] for many asks at once (PostgreSQL): one array per parameter.
const SETTLE_MANY: &str = concat!(
    "UPDATE asks SET status = s.new_status, reply = s.new_reply, outcome = s.new_outcome, \
     answered_by = s.new_by, answered_via = s.new_via, settled_at = s.new_at \
     FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::text[]) \
     AS s (new_status, new_reply, new_outcome, new_by, new_via, new_at, target) \
     WHERE asks.id = s.target AND asks.status = 'pending' \
     AND (asks.expires_at IS NULL OR asks.expires_at > s.new_at) RETURNING ",
    ask_columns!()
);

const EXPIRE_ONE: &str = concat!(
    "UPDATE asks SET status = 'expired', settled_at = $1 WHERE id = $2 AND status = 'pending' \
     RETURNING ",
    ask_columns!()
);

impl Store {
    /// Park an ask. Parking the same id (or resume key) twice is a no-op that
    /// returns the stored ask, so a retried call never parks two asks.
    ///
    /// # Errors
    /// [`Error`] when the store fails; [`Misuse::IdTaken`] when the id is
    /// taken by an ask with another resume key.
    pub async fn park(&self, ask: &NewAsk) -> Result<AskRow, Error> {
        // The common case, a new ask, is one statement: batched with others.
        let statement = Statement::new(PARK_NEW, &ask.id)
            .many(PARK_MANY)
            .text(ask.id.as_str())
            .text(ask.resume_key.as_str())
            .text(ask.principal.as_str())
            .text(ask.request.to_string())
            .opt_text(ask.server.as_deref())
            .opt_text(ask.tool.as_deref())
            .opt_text(ask.risk.as_deref())
            .int(micros(ask.created_at))
            .opt_int(ask.expires_at.map(micros))
            .opt_text(ask.call_key.as_deref());
        let parked = write_statement!(self, statement, |_row| Ok::<_, Error>(()))?;
        if parked.is_some() {
            let row = AskRow {
                ask: ask.clone(),
                status: AskStatus::Pending,
                reply: None,
                outcome: None,
                answered_by: None,
                answered_via: None,
                settled_at: None,
            };
            self.announce_parked(&row);
            return Ok(row);
        }
        // Parked before (or its id taken): the whole write, which says which.
        let (row, new) = with_writer!(self, |conn| {
            let inserted = sqlx::query(PARK)
                .bind(&ask.id)
                .bind(&ask.resume_key)
                .bind(&ask.principal)
                .bind(ask.request.to_string())
                .bind(&ask.server)
                .bind(&ask.tool)
                .bind(&ask.risk)
                .bind(micros(ask.created_at))
                .bind(ask.expires_at.map(micros))
                .bind(&ask.call_key)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            let new = inserted.is_some();
            let row = match inserted {
                Some(row) => Some(row),
                // Parked before: the stored ask stands.
                None => sqlx::query(BY_RESUME_KEY)
                    .bind(&ask.resume_key)
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(|e| self.fail(e))?,
            };
            match row {
                Some(row) => self.read(&row).map(|row| (row, new)),
                None => Err(self.misuse(Misuse::IdTaken { id: ask.id.clone() })),
            }
        })?;
        if new {
            self.announce_parked(&row);
        }
        Ok(row)
    }

    /// Tell this process's subscribers of [`Store::parked`] (on PostgreSQL
    /// a trigger tells every process as the insert commits).
    fn announce_parked(&self, row: &AskRow) {
        self.news.announce_parked(Parked {
            id: Arc::from(row.ask.id.as_str()),
            row: Some(Arc::new(row.clone())),
        });
    }

    /// The ask with this id.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn ask(&self, id: &str) -> Result<Option<AskRow>, Error> {
        self.one(BY_ID, id).await
    }

    /// The ask a call waits on.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn ask_by_resume_key(&self, key: &str) -> Result<Option<AskRow>, Error> {
        self.one(BY_RESUME_KEY, key).await
    }

    /// The newest `limit` asks about the call `call_key` names (see
    /// [`NewAsk::call_key`]), newest first: what earlier tries of the same
    /// call left — a pending ask, a person's answer.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn asks_of_call(&self, call_key: &str, limit: u32) -> Result<Vec<AskRow>, Error> {
        with_pool!(self, |pool| {
            let rows = sqlx::query(BY_CALL_KEY)
                .bind(call_key)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
                .map_err(|e| self.fail(e))?;
            rows.iter().map(|row| self.read(row)).collect()
        })
    }

    /// Apply an answer: the first wins. A second answer gets
    /// [`SettleError::Conflict`], an answer after expiry
    /// [`SettleError::Gone`]; both are recorded as rejected attempts.
    ///
    /// # Errors
    /// As above, [`SettleError::NotFound`], or the store failing; a
    /// settlement to `pending` or `expired` is [`Misuse::SettleStatus`]
    /// (in [`SettleError::Store`]), and nothing is recorded.
    pub async fn settle(
        &self,
        id: &str,
        settlement: &Settlement,
        now: Timestamp,
    ) -> Result<AskRow, SettleError> {
        if matches!(settlement.status, AskStatus::Pending | AskStatus::Expired) {
            let status = settlement.status.as_str();
            let id = id.to_owned();
            return Err(self.misuse(Misuse::SettleStatus { id, status }).into());
        }
        // The common case, the first answer, is one statement: batched with
        // others. Otherwise the whole write runs, and says why the answer is
        // refused (running the update again changes nothing that was not
        // pending).
        let statement = Statement::new(SETTLE, id)
            .many(SETTLE_MANY)
            .text(settlement.status.as_str())
            .text(settlement.reply.to_string())
            .text(settlement.outcome.to_string())
            .opt_text(settlement.answered_by.as_deref())
            .text(settlement.answered_via.as_str())
            .int(micros(now))
            .text(id);
        let settled = match write_statement!(self, statement, |row| self.read(&row))? {
            Some(row) => Ok(row),
            None => self.refuse(id, settlement, now).await?,
        };
        if let Ok(row) = &settled {
            self.news.announce(Settled {
                id: Arc::from(id),
                row: Some(Arc::new(row.clone())),
            });
        }
        settled
    }

    /// Apply an answer that [`Store::settle`]'s single statement did not,
    /// as one write: apply it if it now applies, or record and return the
    /// refusal.
    async fn refuse(
        &self,
        id: &str,
        settlement: &Settlement,
        now: Timestamp,
    ) -> Result<Result<AskRow, SettleError>, Error> {
        with_writer!(self, |conn| {
            let applied = sqlx::query(SETTLE)
                .bind(settlement.status.as_str())
                .bind(settlement.reply.to_string())
                .bind(settlement.outcome.to_string())
                .bind(&settlement.answered_by)
                .bind(&settlement.answered_via)
                .bind(micros(now))
                .bind(id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            if let Some(row) = applied {
                return Ok(Ok(self.read(&row)?));
            }
            let row = sqlx::query(BY_ID)
                .bind(id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            let Some(row) = row else {
                return Ok(Err(SettleError::NotFound { id: id.to_owned() }));
            };
            let row = self.read(&row)?;
            let (refusal, reason) = if row.status == AskStatus::Pending
                || row.status == AskStatus::Expired && row.reply.is_none()
            {
                (SettleError::Gone { id: id.to_owned() }, "gone")
            } else {
                let status = row.status.as_str().to_owned();
                let conflict = SettleError::Conflict {
                    id: id.to_owned(),
                    status,
                };
                (conflict, "conflict")
            };
            sqlx::query(
                "INSERT INTO ask_attempts (ask_id, at, refusal, answered_by, answered_via) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(id)
            .bind(micros(now))
            .bind(reason)
            .bind(&settlement.answered_by)
            .bind(&settlement.answered_via)
            .execute(&mut *conn)
            .await
            .map_err(|e| self.fail(e))?;
            Ok::<_, Error>(Err(refusal))
        })
    }

    /// How many answers to this ask were refused (conflict or gone).
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn rejected_attempts(&self, id: &str) -> Result<i64, Error> {
        with_pool!(self, |pool| {
            let row = sqlx::query("SELECT COUNT(*) AS n FROM ask_attempts WHERE ask_id = $1")
                .bind(id)
                .fetch_one(pool)
                .await
                .map_err(|e| self.fail(e))?;
            row.try_get::<i64, _>("n").map_err(|e| self.fail(e))
        })
    }

    /// Mark every pending ask whose expiry has passed as expired. Defaults
    /// are never applied by expiry. Returns the ids expired.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn expire_due(&self, now: Timestamp) -> Result<Vec<String>, Error> {
        let sql = "UPDATE asks SET status = 'expired', settled_at = $1 \
             WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $1 RETURNING id";
        let ids: Vec<String> = with_writer!(self, |conn| {
            let rows = sqlx::query(sql)
                .bind(micros(now))
                .fetch_all(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            rows.iter()
                .map(|row| row.try_get::<String, _>("id").map_err(|e| self.fail(e)))
                .collect::<Result<Vec<_>, Error>>()
        })?;
        for id in &ids {
            self.news.announce(Settled {
                id: Arc::from(id.as_str()),
                row: None,
            });
        }
        Ok(ids)
    }

    /// Expire the ask `id` now, if it is still pending — its asker gave up
    /// waiting, so nobody answers it late. Defaults are never applied by
    /// expiry. Returns the ask as it stands afterwards: expired, or settled
    /// otherwise before this (that settlement stands); `None` when there is
    /// no such ask.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn expire(&self, id: &str, now: Timestamp) -> Result<Option<AskRow>, Error> {
        let expired = with_writer!(self, |conn| {
            let row = sqlx::query(EXPIRE_ONE)
                .bind(micros(now))
                .bind(id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            row.map(|row| self.read(&row)).transpose()
        })?;
        match expired {
            Some(row) => {
                self.news.announce(Settled {
                    id: Arc::from(id),
                    row: Some(Arc::new(row.clone())),
                });
                Ok(Some(row))
            }
            None => self.ask(id).await,
        }
    }

    /// Pending asks, newest first, `limit` a page; pass the previous page's
    /// `next` to go on.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn pending(&self, limit: u32, after: Option<&str>) -> Result<Page, Error> {
        self.asks_where(&crate::AskFilter::default(), limit, after)
            .await
    }

    /// Wait until the ask is no longer pending — answered here, by another
    /// process (PostgreSQL wakes this one through LISTEN/NOTIFY; SQLite is
    /// looked at again every second) — or until `timeout`. `None` when the
    /// ask does not exist or is still pending at the timeout.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn wait_settled(
        &self,
        id: &str,
        timeout: std::time::Duration,
    ) -> Result<Option<AskRow>, Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut news = self.news.wait_for(id);
        loop {
            match self.ask(id).await? {
                Some(row) if row.status != AskStatus::Pending => return Ok(Some(row)),
                Some(_) => {}
                None => return Ok(None),
            }
            let look_again = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            // Look again when this ask settles (news from another process
            // says only that), on the poll, or at the deadline.
            let wake = deadline.min(look_again);
            if let Ok(Some(Settled { row: Some(row), .. })) =
                tokio::time::timeout_at(wake, news.next()).await
            {
                return Ok(Some(AskRow::clone(&row)));
            }
        }
    }

    async fn one(&self, sql: &'static str, key: &str) -> Result<Option<AskRow>, Error> {
        with_pool!(self, |pool| {
            match sqlx::query(sql)
                .bind(key)
                .fetch_optional(pool)
                .await
                .map_err(|e| self.fail(e))?
            {
                Some(row) => Ok(Some(self.read(&row)?)),
                None => Ok(None),
            }
        })
    }
}

/// Microseconds since the Unix epoch, as stored.
pub(crate) fn micros(at: Timestamp) -> i64 {
    at.as_microsecond()
}
