//! Asks listed for people: newest first, a page at a time, narrowed to
//! whose they are, where they come from, how risky, and where they stand —
//! what the inbox shows.

use crate::asks::{ASK_COLUMNS, AskRow, AskStatus, Page};
use crate::audit::AuditRecord;
use crate::backend::{Store, with_pool};
use crate::columns::{Stored, micros};
use crate::error::Error;

/// Which asks a listing holds. Every condition left `None` holds any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AskFilter {
    /// Only these statuses (empty: pending only).
    pub statuses: Vec<AskStatus>,
    /// Only asks for this principal.
    pub principal: Option<String>,
    /// Only asks from this server.
    pub server: Option<String>,
    /// Only asks about this tool.
    pub tool: Option<String>,
    /// Only asks of this risk.
    pub risk: Option<String>,
}

/// A query's SQL and its parameters, built condition by condition.
struct Query {
    sql: String,
    params: Vec<Param>,
}

enum Param {
    Text(String),
    Int(i64),
}

impl Query {
    fn param(&mut self, value: Param) -> String {
        self.params.push(value);
        format!("${}", self.params.len())
    }
}

impl Store {
    /// The asks `filter` holds, newest first, `limit` at a time; `after`
    /// is the previous page's `next` cursor.
    ///
    /// # Errors
    /// [`Error`] when the store fails or a row is unreadable.
    pub async fn asks_where(
        &self,
        filter: &AskFilter,
        limit: u32,
        after: Option<&str>,
    ) -> Result<Page, Error> {
        let mut query = Query {
            sql: format!("SELECT {ASK_COLUMNS} FROM asks WHERE "),
            params: Vec::new(),
        };
        let statuses: Vec<&str> = if filter.statuses.is_empty() {
            vec![AskStatus::Pending.as_str()]
        } else {
            filter.statuses.iter().map(|s| s.as_str()).collect()
        };
        let listed: Vec<String> = statuses
            .iter()
            .map(|status| query.param(Param::Text((*status).to_owned())))
            .collect();
        query
            .sql
            .push_str(&format!("status IN ({})", listed.join(", ")));
        for (column, value) in [
            ("principal", &filter.principal),
            ("server", &filter.server),
            ("tool", &filter.tool),
            ("risk", &filter.risk),
        ] {
            if let Some(value) = value {
                let at = query.param(Param::Text(value.clone()));
                query.sql.push_str(&format!(" AND {column} = {at}"));
            }
        }
        let cursor = after
            .and_then(|c| c.split_once('/'))
            .and_then(|(created, id)| {
                created
                    .parse::<i64>()
                    .ok()
                    .map(|created| (created, id.to_owned()))
            });
        if let Some((created, id)) = cursor {
            let created_at = query.param(Param::Int(created));
            let id_at = query.param(Param::Text(id));
            query.sql.push_str(&format!(
                " AND (created_at < {created_at} OR (created_at = {created_at} AND id < {id_at}))"
            ));
        }
        query.sql.push_str(&format!(
            " ORDER BY created_at DESC, id DESC LIMIT {}",
            u64::from(limit) + 1
        ));
        let Query { sql, params } = query;
        let mut asks = with_pool!(self, |pool| {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
            for param in &params {
                q = match param {
                    Param::Text(text) => q.bind(text.clone()),
                    Param::Int(number) => q.bind(*number),
                };
            }
            let rows = q.fetch_all(pool).await.map_err(|e| self.fail(e))?;
            rows.iter()
                .map(|row| AskRow::read(self, row))
                .collect::<Result<Vec<_>, _>>()?
        });
        let next = if asks.len() > limit as usize {
            asks.truncate(limit as usize);
            asks.last()
                .map(|last| format!("{}/{}", micros(last.ask.created_at), last.ask.id))
        } else {
            None
        };
        Ok(Page { asks, next })
    }

    /// The audit entries that name ask `id`, oldest first.
    ///
    /// # Errors
    /// [`Error`] when the store fails or an entry is unreadable.
    pub async fn audit_of_ask(&self, id: &str) -> Result<Vec<AuditRecord>, Error> {
        // The chain is read whole: entries are JSON text, and the log is
        // read this way by `verify` too.
        Ok(self
            .audit_entries()
            .await?
            .into_iter()
            .filter(|record| record.entry.ask_id.as_deref() == Some(id))
            .collect())
    }
}
