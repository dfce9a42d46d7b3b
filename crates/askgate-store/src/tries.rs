//! A call's earlier tries, read in one visit before a person is asked
//! about it: a call the same as it that may have run
//! ([`Store::may_have_run`]) and the asks its tries parked
//! ([`Store::asks_of_call`]).

use std::future::poll_fn;

use jiff::Timestamp;
use sqlx::{AssertSqlSafe, Either, Executor};

use crate::asks::{AskRow, BY_CALL_KEY};
use crate::backend::{Pool, Store};
use crate::columns::{Stored, micros};
use crate::error::Error;
use crate::inline::{Bound, Inline};
use crate::ledger::{Retried, Retry, may_have_run_sql};
use crate::statement::push_shifted;

/// What [`Store::may_have_run`] is asked: the retry, when the window
/// began, and the process asking (its own calls in flight are not in
/// doubt).
#[derive(Debug, Clone, Copy)]
pub struct RetryOf<'a> {
    /// The call, as a retry names it.
    pub retry: Retry<'a>,
    /// The start of the retry window.
    pub since: Timestamp,
    /// This process, the ledger's owner of the calls it sends.
    pub me: &'a str,
}

/// What [`Store::tries_of_call`] finds: the call that may have run, if
/// the ledger was asked and has one, and the call's asks, newest first.
pub type Tries = (Option<Retried>, Vec<AskRow>);

impl Store {
    /// [`Store::may_have_run`] for `ledger`, when given, and
    /// [`Store::asks_of_call`] for `call_key` (at most `limit`, newest
    /// first), read together. On a SQLite file on the caller's thread, in
    /// one read transaction (see the `inline` module); when that
    /// connection is in use or the database busy, in one command to one
    /// of sqlx's reading connections: one trip to its thread. Side by
    /// side, each read wakes a thread of its own, and on a 2-core machine
    /// the two took longer than both one after the other (a confirmed
    /// call's reads: 152 µs side by side, 78 µs the asks alone). On
    /// PostgreSQL side by side, on two connections.
    ///
    /// # Errors
    /// [`Error`] when the store fails or a row is unreadable.
    pub async fn tries_of_call(
        &self,
        ledger: Option<RetryOf<'_>>,
        call_key: &str,
        limit: u32,
    ) -> Result<Tries, Error> {
        if let Some(inline) = &self.inline
            && let Some(read) = self.tries_inline(inline, ledger.as_ref(), Some((call_key, limit)))
        {
            return read;
        }
        let Some(of) = ledger else {
            return Ok((None, self.asks_of_call(call_key, limit).await?));
        };
        let pool = match &self.pool {
            Pool::Sqlite(pool) => pool,
            Pool::Postgres(_) => {
                let (found, asks) = tokio::join!(
                    self.may_have_run(&of.retry, of.since, of.me),
                    self.asks_of_call(call_key, limit)
                );
                return Ok((found?, asks?));
            }
        };
        let earlier = of.retry.earlier_digests;
        let mut sql = may_have_run_sql(earlier.len());
        sql.push_str(";\n");
        // The asks' parameters follow the ledger's six and its digests.
        push_shifted(&mut sql, BY_CALL_KEY, 6 + earlier.len());
        // Built from constants and placeholder numbers only.
        let mut query = sqlx::query(AssertSqlSafe(sql))
            .bind(of.retry.arguments_digest)
            .bind(of.retry.principal)
            .bind(of.retry.server)
            .bind(of.retry.tool)
            .bind(micros(of.since))
            .bind(of.me);
        for digest in earlier {
            query = query.bind(digest.as_str());
        }
        let query = query.bind(call_key).bind(i64::from(limit));
        // Each statement yields its rows, then its count of changed rows.
        let mut results = pool.fetch_many(query);
        let (mut found, mut asks, mut statement) = (None, Vec::new(), 0);
        while let Some(result) = poll_fn(|cx| results.as_mut().poll_next(cx)).await {
            match result.map_err(|e| self.fail(e))? {
                Either::Left(_) => statement += 1,
                Either::Right(row) if statement == 0 => {
                    found = Some(self.retried(&row)?.rather(found));
                }
                Either::Right(row) => asks.push(AskRow::read(self, &row)?),
            }
        }
        Ok((found, asks))
    }

    /// [`Store::tries_of_call`] on the caller's thread (the ledger's look
    /// for `ledger`, when given, and the asks of a call key, at most a
    /// limit, when given); `None` when the inline connection could not
    /// read (in use, or the database busy).
    pub(crate) fn tries_inline(
        &self,
        inline: &Inline,
        ledger: Option<&RetryOf<'_>>,
        asks_of: Option<(&str, u32)>,
    ) -> Option<Result<Tries, Error>> {
        let asks_bound = asks_of
            .map(|(call_key, limit)| [Bound::Text(call_key), Bound::Number(i64::from(limit))]);
        let ledger_sql;
        let mut ledger_bound = Vec::new();
        let mut reads: Vec<(&str, &[Bound<'_>])> = Vec::with_capacity(2);
        if let Some(of) = ledger {
            ledger_sql = may_have_run_sql(of.retry.earlier_digests.len());
            ledger_bound.extend([
                Bound::Text(of.retry.arguments_digest),
                Bound::Text(of.retry.principal),
                Bound::Text(of.retry.server),
                Bound::Text(of.retry.tool),
                Bound::Number(micros(of.since)),
                Bound::Text(of.me),
            ]);
            ledger_bound.extend(of.retry.earlier_digests.iter().map(|d| Bound::Text(d)));
            reads.push((&ledger_sql, &ledger_bound));
        }
        let asks_at = reads.len();
        if let Some(bound) = &asks_bound {
            reads.push((BY_CALL_KEY, bound));
        }
        let (mut found, mut asks) = (None, Vec::new());
        let read = inline.read(&reads, |position, row| {
            if position == asks_at {
                asks.push(AskRow::read(self, row)?);
            } else {
                found = Some(self.retried(row)?.rather(found.take()));
            }
            Ok::<_, Error>(())
        })?;
        Some(read.map(|()| (found, asks)))
    }
}
