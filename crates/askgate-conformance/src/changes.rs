//! List changes announced by the fixture server: two tools announce that
//! the tool list or the prompt list changed (the lists stay as they are —
//! the suite checks the notification, not a new entry), and every
//! 2026-07-28 `subscriptions/listen` stream hears the announcements its
//! filter accepted; a 2025-11-25 session that called the tool hears it on
//! its own connection.

use rmcp::model::{CallToolResponse, Tool};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext, SubscriptionSendError};
use serde_json::json;
use tokio::sync::broadcast;

use crate::fixture::{schema, text};

/// The tools announcing a change.
const TOOLS: [(&str, &str); 2] = [
    (
        "test_trigger_tool_change",
        "Announces that the tool list changed",
    ),
    (
        "test_trigger_prompt_change",
        "Announces that the prompt list changed",
    ),
];

/// Which list changed.
#[derive(Debug, Clone, Copy)]
enum Change {
    Tools,
    Prompts,
}

/// The server's announcements, shared by every session and request.
#[derive(Debug, Clone)]
pub struct Changes {
    sender: broadcast::Sender<Change>,
}

impl Default for Changes {
    fn default() -> Changes {
        Changes {
            sender: broadcast::channel(16).0,
        }
    }
}

/// The tools of this module.
pub(crate) fn tools() -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|(name, description)| {
            Tool::new(
                *name,
                *description,
                schema(json!({"type": "object", "properties": {}})),
            )
        })
        .collect()
}

/// Whether `name` is one of this module's tools.
pub(crate) fn has(name: &str) -> bool {
    TOOLS.iter().any(|(tool, _)| *tool == name)
}

impl Changes {
    /// Announce the change the tool `name` (one of [`has`]) stands for: to
    /// every listen stream, and to the caller's own session.
    pub(crate) async fn call(
        &self,
        name: &str,
        cx: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let change = if name == TOOLS[0].0 {
            Change::Tools
        } else {
            Change::Prompts
        };
        // No listener is no error: nobody is waiting for the news.
        let _ = self.sender.send(change);
        if cx
            .protocol_version()
            .is_some_and(|v| v < rmcp::model::ProtocolVersion::V_2026_07_28)
        {
            let _ = match change {
                Change::Tools => cx.peer.notify_tool_list_changed().await,
                Change::Prompts => cx.peer.notify_prompt_list_changed().await,
            };
        }
        text("Announced")
    }

    /// Serve one `subscriptions/listen` stream until the client ends it:
    /// each announcement its filter accepted (the sink refuses the rest).
    pub(crate) async fn listen(&self, context: SubscriptionContext) {
        let mut changes = self.sender.subscribe();
        loop {
            let change = tokio::select! {
                () = context.cancelled() => return,
                change = changes.recv() => change,
            };
            let sent = match change {
                Ok(Change::Tools) => context.sink().notify_tool_list_changed().await,
                Ok(Change::Prompts) => context.sink().notify_prompt_list_changed().await,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            };
            match sent {
                Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => {}
                Err(_) => return,
            }
        }
    }
}
