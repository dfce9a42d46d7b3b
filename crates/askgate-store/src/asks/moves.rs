//! An ask's moves: parked, settled once — first answer wins — or expired;
//! read, and waited on.

use std::sync::Arc;

use jiff::Timestamp;
use serde_json::Value as Json;
use sqlx::Row;

use super::{
    AskParked, AskRow, AskSettled, AskStatus, BY_CALL_KEY, BY_ID, BY_RESUME_KEY, EXPIRE_ONE,
    NewAsk, PARK, PARK_MANY, PARK_NEW, Page, SETTLE, SETTLE_MANY, SealedArguments, Settlement,
};
use crate::backend::{Store, with_pool, with_writer, write_statement};
use crate::columns::{Stored, micros};
use crate::error::{Error, Misuse, SettleError};
use crate::listing::AskFilter;
use crate::statement::Statement;

impl Store {
    /// Park an ask. Parking the same id (or resume key) twice is a no-op that
    /// returns the stored ask, so a retried call never parks two asks.
    ///
    /// # Errors
    /// [`Error`] when the store fails; [`Misuse::IdTaken`] when the id is
    /// taken by an ask with another resume key.
    pub async fn park(&self, ask: &NewAsk) -> Result<AskRow, Error> {
        self.park_with_arguments(ask, None).await
    }

    /// [`Store::park`], keeping the call's arguments `sealed` (askgate-core's
    /// `ArgumentSeal`, bound to the ask's id) with the ask while it waits:
    /// what its page shows the people who may answer it. The store erases
    /// them as the ask settles or expires, whoever ends it (see
    /// [`Store::sealed_arguments`]).
    ///
    /// # Errors
    /// As [`Store::park`].
    pub async fn park_with_arguments(
        &self,
        ask: &NewAsk,
        sealed: Option<&str>,
    ) -> Result<AskRow, Error> {
        // Sealed text is never empty: empty is what erased arguments leave.
        let sealed = sealed.filter(|text| !text.is_empty());
        // The common case, a new ask, is one statement: batched with others.
        let statement = parking(PARK_NEW, ask, sealed).many(PARK_MANY);
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
            let inserted = parking(PARK, ask, sealed)
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
                Some(row) => AskRow::read(self, &row).map(|row| (row, new)),
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
        self.news.announce_parked(AskParked {
            id: Arc::from(row.ask.id.as_str()),
            row: Some(Arc::new(row.clone())),
        });
    }

    /// The ask with this id.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn ask(&self, id: &str) -> Result<Option<AskRow>, Error> {
        self.read_row(BY_ID, id).await
    }

    /// The ask a call waits on.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn ask_by_resume_key(&self, key: &str) -> Result<Option<AskRow>, Error> {
        self.read_row(BY_RESUME_KEY, key).await
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
            rows.iter().map(|row| AskRow::read(self, row)).collect()
        })
    }

    /// Apply an answer: the first wins. A second answer gets
    /// [`SettleError::Conflict`], an answer after expiry
    /// [`SettleError::Gone`], an answer to an ask a panel decides
    /// [`SettleError::Governed`] (only its people's answers settle it, see
    /// [`Store::answer_as`]; it may still be withdrawn as `cancelled`); each
    /// is recorded as a rejected attempt.
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
        let statement = settling(SETTLE, id, settlement, now).many(SETTLE_MANY);
        let settled = match write_statement!(self, statement, |row| AskRow::read(self, &row))? {
            Some(row) => Ok(row),
            None => self.refuse(id, settlement, now).await?,
        };
        if let Ok(row) = &settled {
            self.news.announce(AskSettled {
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
        let attempt = Attempt {
            by: settlement.answered_by.as_deref(),
            via: &settlement.answered_via,
        };
        with_writer!(self, |conn| {
            let applied = settling(SETTLE, id, settlement, now)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            if let Some(row) = applied {
                return Ok(Ok(AskRow::read(self, &row)?));
            }
            let row = sqlx::query(BY_ID)
                .bind(id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            let Some(row) = row else {
                return Ok(Err(SettleError::NotFound { id: id.to_owned() }));
            };
            let row = AskRow::read(self, &row)?;
            let live = row.ask.expires_at.is_none_or(|at| at > now);
            let (refusal, reason) = if row.status == AskStatus::Pending
                && live
                && let Some(panel) = &row.ask.panel
            {
                let rule = super::panel::rule_of(panel);
                (
                    SettleError::Governed {
                        id: id.to_owned(),
                        rule,
                    },
                    "governed",
                )
            } else if row.status == AskStatus::Pending
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
            attempted(id, now, reason, attempt)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            Ok::<_, Error>(Err(refusal))
        })
    }

    /// What the store holds of the arguments kept sealed with the ask `id`
    /// (see [`Store::park_with_arguments`]): the sealed text while it is
    /// pending, [`SealedArguments::Erased`] once it settled or expired
    /// (the store erases them then, whoever ends it), or
    /// [`SealedArguments::None`] when none were kept. An erased value is
    /// never mistaken for sealed text.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn sealed_arguments(&self, id: &str) -> Result<SealedArguments, Error> {
        with_pool!(self, |pool| {
            let row = sqlx::query("SELECT status, sealed_arguments FROM asks WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await
                .map_err(|e| self.fail(e))?;
            let Some(row) = row else {
                return Ok(SealedArguments::None);
            };
            let status: String = row.try_get("status").map_err(|e| self.fail(e))?;
            let sealed: Option<String> =
                row.try_get("sealed_arguments").map_err(|e| self.fail(e))?;
            Ok(match sealed {
                None => SealedArguments::None,
                Some(text) if text.is_empty() || status != AskStatus::Pending.as_str() => {
                    SealedArguments::Erased
                }
                Some(text) => SealedArguments::Held(text),
            })
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
            self.news.announce(AskSettled {
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
        let expiring = Statement::new(EXPIRE_ONE, id).int(micros(now)).text(id);
        let expired = self.write_row::<AskRow>(expiring).await?;
        match expired {
            Some(row) => {
                self.news.announce(AskSettled {
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
        self.asks_where(&AskFilter::default(), limit, after).await
    }

    /// Wait until the ask is no longer pending — answered here, by another
    /// process (PostgreSQL wakes this one through LISTEN/NOTIFY; SQLite is
    /// looked at again every second) — or until `timeout`. `None` when the
    /// ask does not exist or is still pending at the timeout.
    ///
    /// An outage ([`Error::is_outage`]: the PostgreSQL server down or
    /// restarting) does not end the wait: the ask is looked at again every
    /// second until the server is back, and a person's answer given then
    /// ends it. Still out of reach at the timeout, the ask is taken as
    /// still pending (`None`): nothing says otherwise.
    ///
    /// # Errors
    /// [`Error`] when the store fails other than by an outage.
    pub async fn wait_settled(
        &self,
        id: &str,
        timeout: std::time::Duration,
    ) -> Result<Option<AskRow>, Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut news = self.news.wait_for(id);
        loop {
            let looked = tokio::time::timeout_at(deadline, self.ask(id)).await;
            match looked {
                Ok(Ok(Some(row))) if row.status != AskStatus::Pending => return Ok(Some(row)),
                Ok(Ok(Some(_))) => {}
                Ok(Ok(None)) => return Ok(None),
                Ok(Err(error)) if error.is_outage() => {}
                Ok(Err(error)) => return Err(error),
                // The deadline came while the store was being looked at.
                Err(_) => return Ok(None),
            }
            let look_again = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            // Look again when this ask settles (news from another process
            // says only that), on the poll, or at the deadline.
            let wake = deadline.min(look_again);
            if let Ok(Some(AskSettled { row: Some(row), .. })) =
                tokio::time::timeout_at(wake, news.next()).await
            {
                return Ok(Some(AskRow::clone(&row)));
            }
        }
    }
}

/// The statement that parks `ask` with `sql` ([`PARK`] or [`PARK_NEW`]).
fn parking(sql: &'static str, ask: &NewAsk, sealed: Option<&str>) -> Statement {
    Statement::new(sql, &ask.id)
        .text(ask.id.as_str())
        .text(ask.resume_key.as_str())
        .text(ask.principal.as_str())
        .text(ask.request.to_string())
        .opt_text(ask.server.as_deref())
        .opt_text(ask.tool.as_deref())
        .opt_text(ask.risk.as_deref())
        .int(micros(ask.created_at))
        .opt_int(ask.expires_at.map(micros))
        .opt_text(ask.call_key.as_deref())
        .opt_text(ask.panel.as_ref().map(Json::to_string).as_deref())
        .opt_text(sealed)
}

/// The statement that applies `settlement` to the ask `id` at `now`
/// ([`SETTLE`]).
pub(super) fn settling(
    sql: &'static str,
    id: &str,
    settlement: &Settlement,
    now: Timestamp,
) -> Statement {
    Statement::new(sql, id)
        .text(settlement.status.as_str())
        .text(settlement.reply.to_string())
        .text(settlement.outcome.to_string())
        .opt_text(settlement.answered_by.as_deref())
        .text(settlement.answered_via.as_str())
        .int(micros(now))
        .text(id)
}

/// Who made an answer that was refused, and through which surface.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attempt<'a> {
    /// Who, when known.
    pub(super) by: Option<&'a str>,
    /// Through which surface.
    pub(super) via: &'a str,
}

/// The statement that records `attempt`, an answer to the ask `id`
/// refused at `now` for `reason` (`conflict`, `gone`, `governed`,
/// `repeated`, `ineligible`).
pub(super) fn attempted(id: &str, now: Timestamp, reason: &str, attempt: Attempt<'_>) -> Statement {
    Statement::new(
        "INSERT INTO ask_attempts (ask_id, at, refusal, answered_by, answered_via) \
         VALUES ($1, $2, $3, $4, $5)",
        id,
    )
    .text(id)
    .int(micros(now))
    .text(reason)
    .opt_text(attempt.by)
    .text(attempt.via)
}
