//! `askgate asks show ID`: an ask as text (or JSON), with the audit
//! entries that name it, and where it stands under its approval rule when
//! one decides it.

use askgate_mcp::approvals;
use askgate_mcp::stored::StoredRequest;
use askgate_store::{AskRow, Store};
use jiff::Timestamp;
use serde_json::Value as Json;

use super::{DONE, REFUSED, hidden};
use crate::failure::{Failure, print_json, print_line};

/// `asks show ID`: the ask, and the audit entries that name it.
pub(super) async fn show(store: &Store, id: &str, json: bool) -> Result<u8, Failure> {
    match store
        .ask(id)
        .await
        .map_err(Failure::from)?
        .map(hidden::hide_sensitive)
    {
        Some(row) if json => {
            let audit = store.audit_of_ask(id).await.map_err(Failure::from)?;
            let standing = approvals::standing(store, &row, Timestamp::now()).await?;
            // The row, with the audit entries that name it (and where it
            // stands under its approval rule, if one decides it).
            let mut shown = serde_json::to_value(&row).map_err(Failure::malformed)?;
            if let Json::Object(fields) = &mut shown {
                fields.insert(
                    "audit".into(),
                    serde_json::to_value(&audit).map_err(Failure::malformed)?,
                );
                if let Some(standing) = standing {
                    let approvals = serde_json::to_value(standing).map_err(Failure::malformed)?;
                    fields.insert("approvals".into(), approvals);
                }
            }
            print_json(&shown).map(|()| DONE)
        }
        Some(row) => {
            for line in readable(&row) {
                print_line(&line)?;
            }
            let standing = approvals::standing(store, &row, Timestamp::now()).await?;
            let standing: Vec<String> = standing
                .iter()
                .flat_map(approvals::Standing::lines)
                .collect();
            if !standing.is_empty() {
                print_line("")?;
                print_line("Approvals")?;
                for line in standing {
                    print_line(&format!("  {line}"))?;
                }
            }
            let audit = store.audit_of_ask(id).await.map_err(Failure::from)?;
            if !audit.is_empty() {
                print_line("")?;
                print_line("Audit")?;
            }
            for record in audit {
                print_line(&format!(
                    "  {:>5}  {}  {}: {}",
                    record.seq,
                    record.entry.at.strftime("%Y-%m-%d %H:%M:%S"),
                    serde_json::to_value(record.entry.decision)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    record.entry.reason
                ))?;
            }
            Ok(DONE)
        }
        None => Err(Failure::new(
            REFUSED,
            format!("no ask {id} in {}", store.name()),
        )),
    }
}

/// `row` as lines a person reads: what it asks, of whom, and how it ended.
fn readable(row: &AskRow) -> Vec<String> {
    let ask = &row.ask;
    let when = |at: Timestamp| at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string();
    let mut lines = vec![format!("Ask {} — {}", ask.id, row.status.as_str())];
    let mut pair = |key: &str, value: String| lines.push(format!("  {key:<10}{value}"));
    if let (Some(server), Some(tool)) = (&ask.server, &ask.tool) {
        let risk = ask
            .risk
            .as_deref()
            .map_or_else(String::new, |r| format!(" (risk {r})"));
        pair("from", format!("{server} / {tool}{risk}"));
    }
    pair("for", ask.principal.clone());
    pair("asked", when(ask.created_at));
    if let Some(at) = ask.expires_at {
        pair("expires", when(at));
    }
    if let Some(by) = &row.answered_by {
        let via = row
            .answered_via
            .as_deref()
            .map_or_else(String::new, |v| format!(" via {v}"));
        pair("decided", format!("by {by}{via}"));
    }
    match serde_json::from_value::<StoredRequest>(ask.request.clone()) {
        Ok(StoredRequest::Form { ask: record }) => {
            lines.push(String::new());
            lines.extend(record.form.message.lines().map(|line| format!("  {line}")));
            lines.push(String::new());
            lines.push("Fields".into());
            for field in &record.form.fields {
                let kind = serde_json::to_value(field)
                    .ok()
                    .and_then(|f| f.get("type").and_then(Json::as_str).map(str::to_owned))
                    .unwrap_or_default();
                lines.push(format!("  {} — {} ({kind})", field.id, field.title));
            }
        }
        Ok(StoredRequest::QuestionSet { set }) => {
            lines.push(String::new());
            if let Some(preamble) = &set.preamble {
                lines.push(format!("  {preamble}"));
            }
            lines.push("Questions".into());
            for question in &set.questions {
                lines.push(format!("  {} — {}", question.id, question.prompt));
            }
        }
        Err(_) => lines.push("  (a request this askgate cannot read)".into()),
    }
    if let Some(values) = row
        .outcome
        .as_ref()
        .and_then(|o| o.get("values"))
        .and_then(Json::as_object)
    {
        lines.push(String::new());
        lines.push("Answer".into());
        for (id, value) in values {
            match (
                value.get("value"),
                value.get("source").and_then(Json::as_str),
            ) {
                (Some(shown), Some(source)) => lines.push(format!("  {id} = {shown} ({source})")),
                (Some(shown), None) => lines.push(format!("  {id} = {shown}")),
                // A sensitive field's value stands as `(hidden)`.
                (None, _) => lines.push(format!("  {id} = {}", value.as_str().unwrap_or("-"))),
            }
        }
    }
    lines
}
