//! An ask's row, read back from either backend.

use super::{AskRow, AskStatus, NewAsk};
use crate::columns::{Columns, Fields, Stored};
use crate::error::Error;

impl Stored for AskRow {
    const WHAT: &'static str = "ask";

    /// An ask as stored, or why its row is unreadable.
    fn from_columns<R: Fields>(row: &Columns<'_, R>) -> Result<AskRow, Error> {
        let corrupt = |detail: String| row.corrupt(detail);
        let required = |value: Option<String>, column: &str| {
            value.ok_or_else(|| corrupt(format!("{column} is empty")))
        };
        let status_text = required(row.text("status")?, "status")?;
        Ok(AskRow {
            ask: NewAsk {
                id: required(row.text("id")?, "id")?,
                resume_key: required(row.text("resume_key")?, "resume_key")?,
                call_key: row.text("call_key")?,
                principal: required(row.text("principal")?, "principal")?,
                request: row
                    .json("request")?
                    .ok_or_else(|| corrupt("request is empty".into()))?,
                server: row.text("server")?,
                tool: row.text("tool")?,
                risk: row.text("risk")?,
                created_at: row
                    .time("created_at")?
                    .ok_or_else(|| corrupt("created_at is empty".into()))?,
                expires_at: row.time("expires_at")?,
                panel: row.json("panel")?,
            },
            status: AskStatus::parse(&status_text)
                .ok_or_else(|| corrupt(format!("unknown status {status_text:?}")))?,
            reply: row.json("reply")?,
            outcome: row.json("outcome")?,
            answered_by: row.text("answered_by")?,
            answered_via: row.text("answered_via")?,
            settled_at: row.time("settled_at")?,
        })
    }
}
