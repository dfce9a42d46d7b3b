//! An ask's row, read back from either backend.

use serde_json::Value as Json;

use super::{AskRow, AskStatus, NewAsk};
use crate::backend::Store;
use crate::columns::{Columns, Fields, Stored};
use crate::error::Error;

impl Stored for AskRow {
    /// An ask as stored, or why its row is unreadable.
    fn read<R: Fields>(store: &Store, row: &R) -> Result<AskRow, Error> {
        let columns = Columns::new(row, &store.name, "ask");
        let corrupt = |detail: String| columns.corrupt(detail);
        let text = |column: &str| columns.text(column);
        let time = |column: &str| columns.time(column);
        let json = |column: &str| -> Result<Option<Json>, Error> {
            text(column)?
                .map(|t| serde_json::from_str(&t).map_err(|e| corrupt(format!("{column}: {e}"))))
                .transpose()
        };
        let required = |value: Option<String>, column: &str| {
            value.ok_or_else(|| corrupt(format!("{column} is empty")))
        };
        let status_text = required(text("status")?, "status")?;
        Ok(AskRow {
            ask: NewAsk {
                id: required(text("id")?, "id")?,
                resume_key: required(text("resume_key")?, "resume_key")?,
                call_key: text("call_key")?,
                principal: required(text("principal")?, "principal")?,
                request: json("request")?.ok_or_else(|| corrupt("request is empty".into()))?,
                server: text("server")?,
                tool: text("tool")?,
                risk: text("risk")?,
                created_at: time("created_at")?
                    .ok_or_else(|| corrupt("created_at is empty".into()))?,
                expires_at: time("expires_at")?,
            },
            status: AskStatus::parse(&status_text)
                .ok_or_else(|| corrupt(format!("unknown status {status_text:?}")))?,
            reply: json("reply")?,
            outcome: json("outcome")?,
            answered_by: text("answered_by")?,
            answered_via: text("answered_via")?,
            settled_at: time("settled_at")?,
        })
    }
}
