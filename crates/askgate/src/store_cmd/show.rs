//! `askgate asks show ID`: an ask as text (or JSON), with the audit
//! entries that name it, and where it stands under its approval rule when
//! one decides it.

use askgate_mcp::approvals;
use askgate_store::Store;
use jiff::Timestamp;
use serde_json::Value as Json;

use super::{DONE, REFUSED, hidden, summary};
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
            print_line(&summary(&row))?;
            print_line(&format!("request: {}", row.ask.request))?;
            if let Some(outcome) = &row.outcome {
                print_line(&format!("outcome: {outcome}"))?;
            }
            let standing = approvals::standing(store, &row, Timestamp::now()).await?;
            for line in standing.iter().flat_map(approvals::Standing::lines) {
                print_line(&line)?;
            }
            for record in store.audit_of_ask(id).await.map_err(Failure::from)? {
                print_line(&format!(
                    "audit {}: {} {}",
                    record.seq,
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
