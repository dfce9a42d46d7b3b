//! Asks a panel decides (a team's approval rule, see [`NewAsk::panel`]):
//! each person's answer recorded once — a primary key, not a check in
//! memory, so two replicas taking the same person's answer at the same
//! instant record it once — and the ask settled, in the same write, when
//! the caller's count of the answers says so. The store keeps the answers;
//! what they mean is the caller's rule (askgate-core's `approval::Panel`).

use std::sync::Arc;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::moves::settling;
use super::moves::{Attempt, attempted};
use super::{
    AskAnswered, AskRow, AskSettled, AskStatus, BY_ID, LOCK_BY_ID, NewAsk, SETTLE_COUNTED,
    Settlement,
};
use crate::backend::{Store, Writer, body_in, with_pool};
use crate::columns::{Columns, Fields, Stored, micros};
use crate::error::{Error, Misuse, SettleError};
use crate::statement::Statement;

/// A person's answers to an ask, in the order they were recorded.
const ANSWERS: &str = "SELECT person, verdict, reply, via, groups, at FROM ask_answers \
     WHERE ask_id = $1 ORDER BY at, person";

/// One person's answer to an ask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonAnswer {
    /// Who answered.
    pub person: String,
    /// Whether they accepted (else they declined).
    pub accepted: bool,
    /// Their reply as given.
    pub reply: Json,
    /// Through which surface (`web`, `cli`, `mcp`, ...).
    pub via: String,
    /// The groups their sign-in gave them when they answered (an OpenID
    /// provider's groups claim); empty for a person of the config.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// A person's answer as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedAnswer {
    /// The answer.
    #[serde(flatten)]
    pub answer: PersonAnswer,
    /// When it was recorded.
    pub at: Timestamp,
}

/// What the caller's rule makes of an ask's answers, the newest last.
#[derive(Debug, Clone, PartialEq)]
pub enum Count {
    /// The newest answer's person may not answer this ask, for this
    /// reason: it is refused ([`SettleError::Ineligible`]) and recorded as
    /// a rejected attempt.
    Refuse(String),
    /// Recorded; the ask waits for more answers.
    Wait,
    /// Recorded, and the ask settles so (`answered`, `declined`,
    /// `cancelled` or `skipped`).
    Settle(Settlement),
}

/// An answer [`Store::answer_as`] recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Counted {
    /// The ask after it: settled, or still pending.
    pub row: AskRow,
    /// Every answer recorded for it, this one last.
    pub answers: Vec<RecordedAnswer>,
}

impl Store {
    /// Record `answer` to the pending ask `id` at `now`, and settle the
    /// ask when `count` — given the ask and its answers, this one last —
    /// says so, all in one write. Each person answers once: their second
    /// answer is refused ([`SettleError::Repeated`]), as is an answer
    /// `count` refuses ([`SettleError::Ineligible`]), one to a settled ask
    /// ([`SettleError::Conflict`]) or one after its expiry
    /// ([`SettleError::Gone`]); each refusal is recorded as a rejected
    /// attempt. On PostgreSQL the ask's row is locked while its answers are
    /// counted: answers from several replicas are counted one at a time.
    ///
    /// # Errors
    /// As above, [`SettleError::NotFound`], or the store failing; a
    /// settlement to `pending` or `expired` is [`Misuse::SettleStatus`],
    /// and nothing is recorded.
    pub async fn answer_as<F>(
        &self,
        id: &str,
        answer: &PersonAnswer,
        now: Timestamp,
        count: F,
    ) -> Result<Counted, SettleError>
    where
        F: FnOnce(&AskRow, &[RecordedAnswer]) -> Count + Send,
    {
        let attempt = Attempt {
            by: Some(&answer.person),
            via: &answer.via,
        };
        // The write, on `$conn`, with the ask read by `$locking`.
        macro_rules! counting {
            ($conn:ident, $locking:expr) => {
                async {
                    let Some(row) = Statement::new($locking, id)
                        .text(id)
                        .fetch_optional(&mut *$conn)
                        .await
                        .map_err(|e| self.fail(e))?
                    else {
                        return Ok(Err(SettleError::NotFound { id: id.to_owned() }));
                    };
                    let row = AskRow::read(self, &row)?;
                    let mut answers = sqlx::query(ANSWERS)
                        .bind(id)
                        .fetch_all(&mut *$conn)
                        .await
                        .map_err(|e| self.fail(e))?
                        .iter()
                        .map(|row| RecordedAnswer::read(self, row))
                        .collect::<Result<Vec<_>, Error>>()?;
                    let (refusal, reason, settlement) = match refusal(&row, &answers, answer, now) {
                        Some((refusal, reason)) => (Some(refusal), reason, None),
                        None => {
                            answers.push(RecordedAnswer {
                                answer: answer.clone(),
                                at: now,
                            });
                            match count(&row, &answers) {
                                Count::Refuse(why) => {
                                    answers.pop();
                                    let refusal = SettleError::Ineligible {
                                        id: id.to_owned(),
                                        person: answer.person.clone(),
                                        why,
                                    };
                                    (Some(refusal), "ineligible", None)
                                }
                                Count::Wait => (None, "", None),
                                Count::Settle(settlement) => (None, "", Some(settlement)),
                            }
                        }
                    };
                    if let Some(refusal) = refusal {
                        attempted(id, now, reason, attempt)
                            .fetch_optional(&mut *$conn)
                            .await
                            .map_err(|e| self.fail(e))?;
                        return Ok(Err(refusal));
                    }
                    if let Some(settlement) = &settlement
                        && matches!(settlement.status, AskStatus::Pending | AskStatus::Expired)
                    {
                        let status = settlement.status.as_str();
                        return Err(self.misuse(Misuse::SettleStatus {
                            id: id.to_owned(),
                            status,
                        }));
                    }
                    answered(id, answer, now)
                        .fetch_optional(&mut *$conn)
                        .await
                        .map_err(|e| self.fail(e))?;
                    let row = match settlement {
                        None => row,
                        Some(settlement) => {
                            let settled = settling(SETTLE_COUNTED, id, &settlement, now)
                                .fetch_optional(&mut *$conn)
                                .await
                                .map_err(|e| self.fail(e))?;
                            match settled {
                                Some(settled) => AskRow::read(self, &settled)?,
                                // Read pending under the write's lock: it
                                // still is.
                                None => row,
                            }
                        }
                    };
                    Ok::<_, Error>(Ok(Counted { row, answers }))
                }
            };
        }
        let counted = match &self.writer {
            Writer::Sqlite(writer) => {
                // The writer holds the file's write lock: one count at a
                // time, whichever process.
                let mut write = writer.begin().await?;
                body_in!(write, |conn| counting!(conn, BY_ID).await)?
            }
            Writer::Postgres { pool, .. } => {
                // A transaction of its own (body writes on PostgreSQL
                // commit each statement), the ask's row locked in it.
                let mut tx = pool.begin().await.map_err(|e| self.fail(e))?;
                let conn = &mut *tx;
                let counted = counting!(conn, LOCK_BY_ID).await?;
                tx.commit().await.map_err(|e| self.fail(e))?;
                counted
            }
        };
        if let Ok(counted) = &counted {
            self.news.announce_answered(AskAnswered {
                id: Arc::from(id),
                person: Arc::from(answer.person.as_str()),
                accepted: answer.accepted,
                row: Some(Arc::new(counted.row.clone())),
            });
        }
        if let Ok(counted) = &counted
            && counted.row.status != AskStatus::Pending
        {
            self.news.announce(AskSettled {
                id: Arc::from(id),
                row: Some(Arc::new(counted.row.clone())),
            });
        }
        counted
    }

    /// The people's answers to the ask `id`, in the order they were
    /// recorded (none for an ask nobody answered as a person).
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn answers(&self, id: &str) -> Result<Vec<RecordedAnswer>, Error> {
        with_pool!(self, |pool| {
            sqlx::query(ANSWERS)
                .bind(id)
                .fetch_all(pool)
                .await
                .map_err(|e| self.fail(e))?
                .iter()
                .map(|row| RecordedAnswer::read(self, row))
                .collect()
        })
    }
}

/// The statement that records `answer` to the ask `id` at `now`.
fn answered(id: &str, answer: &PersonAnswer, now: Timestamp) -> Statement {
    Statement::new(
        "INSERT INTO ask_answers (ask_id, person, verdict, reply, via, groups, at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        id,
    )
    .text(id)
    .text(answer.person.as_str())
    .text(if answer.accepted { "accept" } else { "decline" })
    .text(answer.reply.to_string())
    .text(answer.via.as_str())
    .opt_text(
        (!answer.groups.is_empty())
            .then(|| Json::from(answer.groups.clone()).to_string())
            .as_deref(),
    )
    .int(micros(now))
}

/// Why `answer` to `row` is refused before it is counted, if it is: the
/// ask is settled or past its expiry, or its person answered already.
fn refusal(
    row: &AskRow,
    answers: &[RecordedAnswer],
    answer: &PersonAnswer,
    now: Timestamp,
) -> Option<(SettleError, &'static str)> {
    let id = row.ask.id.clone();
    let expired = row.ask.expires_at.is_some_and(|at| at <= now);
    match row.status {
        AskStatus::Pending if expired => Some((SettleError::Gone { id }, "gone")),
        AskStatus::Pending => answers
            .iter()
            .any(|a| a.answer.person == answer.person)
            .then(|| {
                let person = answer.person.clone();
                (SettleError::Repeated { id, person }, "repeated")
            }),
        AskStatus::Expired if row.reply.is_none() => Some((SettleError::Gone { id }, "gone")),
        status => {
            let status = status.as_str().to_owned();
            Some((SettleError::Conflict { id, status }, "conflict"))
        }
    }
}

/// The rule an ask's `panel` names, for messages.
pub(super) fn rule_of(panel: &Json) -> String {
    let text = |key: &str| panel.get(key).and_then(Json::as_str);
    match (text("rule"), text("who")) {
        (Some(rule), Some(who)) => format!("{rule}: {who}"),
        (Some(rule), None) => rule.to_owned(),
        (None, Some(who)) => who.to_owned(),
        (None, None) => "its approval rule".to_owned(),
    }
}

impl Stored for RecordedAnswer {
    const WHAT: &'static str = "person's answer";

    fn from_columns<R: Fields>(row: &Columns<'_, R>) -> Result<RecordedAnswer, Error> {
        let required = |column: &str| {
            row.text(column)?
                .ok_or_else(|| row.corrupt(format!("{column} is empty")))
        };
        let verdict = required("verdict")?;
        let accepted = match verdict.as_str() {
            "accept" => true,
            "decline" => false,
            other => return Err(row.corrupt(format!("unknown verdict {other:?}"))),
        };
        Ok(RecordedAnswer {
            answer: PersonAnswer {
                person: required("person")?,
                accepted,
                reply: row
                    .json("reply")?
                    .ok_or_else(|| row.corrupt("reply is empty".into()))?,
                via: required("via")?,
                groups: match row.json("groups")? {
                    None => Vec::new(),
                    Some(groups) => serde_json::from_value(groups)
                        .map_err(|e| row.corrupt(format!("groups is not a list of names: {e}")))?,
                },
            },
            at: row
                .time("at")?
                .ok_or_else(|| row.corrupt("at is empty".into()))?,
        })
    }
}

impl NewAsk {
    /// Whether a panel decides this ask (see [`NewAsk::panel`]).
    pub fn is_governed(&self) -> bool {
        self.panel.is_some()
    }
}
