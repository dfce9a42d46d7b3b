//! The `escalated` post: when an ask a team's rule decides has waited as
//! long as its rule's `escalate.after`, and is still pending, the webhook
//! hears that it is open to those it escalates to now. Each ask is
//! watched from when its parking is news (here, or from another process
//! on PostgreSQL), and every pending ask is looked at once when the
//! notifier starts listening, so a restart does not lose an escalation;
//! the post's claim in the store makes it once, however many processes
//! watch.

use std::sync::Arc;

use askgate_mcp::approvals::panel_of;
use askgate_store::{AskRow, AskStatus};

use super::{Event, Notifier};

/// How many pending asks are read at a time when listening starts.
const PAGE: u32 = 200;

impl Notifier {
    /// Watch the ask `id` (`row`, when known) for its escalation.
    pub(super) fn watch_escalation(&self, id: &str, row: Option<Arc<AskRow>>) {
        let notifier = self.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            let row = match row {
                Some(row) => row,
                None => match notifier.inner.store.ask(&id).await {
                    Ok(Some(row)) => Arc::new(row),
                    _ => return,
                },
            };
            notifier.escalate_when_due(row).await;
        });
    }

    /// Watch every ask pending now (when listening starts).
    pub(super) async fn watch_pending(&self) {
        let mut after: Option<String> = None;
        loop {
            let page = match self.inner.store.pending(PAGE, after.as_deref()).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(%error, "the pending asks could not be read for their escalations");
                    return;
                }
            };
            for row in page.asks {
                if row.ask.panel.is_some() {
                    let id = row.ask.id.clone();
                    self.watch_escalation(&id, Some(Arc::new(row)));
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return,
            }
        }
    }

    /// Sleep until `row`'s rule escalates it, then post `escalated` if it
    /// is still pending and live.
    async fn escalate_when_due(&self, row: Arc<AskRow>) {
        let Ok(Some(panel)) = panel_of(&row) else {
            return;
        };
        let Some(after) = panel.escalates_after() else {
            return;
        };
        let Ok(due) = row.ask.created_at.checked_add(after) else {
            return;
        };
        let wait = due.duration_since(self.clock.now());
        if let Ok(wait) = std::time::Duration::try_from(wait) {
            tokio::time::sleep(wait).await;
        }
        let id = &row.ask.id;
        let now = self.clock.now();
        match self.inner.store.ask(id).await {
            Ok(Some(row))
                if row.status == AskStatus::Pending
                    && row.ask.expires_at.is_none_or(|at| at > now) =>
            {
                tracing::info!(ask = %id, "an ask escalated under its approval rule");
                self.post_id(Event::Escalated, id, Some(Arc::new(row)), None);
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(ask = %id, %error, "an ask's escalation could not be looked at");
            }
        }
    }
}
