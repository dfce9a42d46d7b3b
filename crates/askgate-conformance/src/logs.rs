//! The fixture server's log messages (`notifications/message`): sent only
//! at or above the level the client asked for — the session's
//! `logging/setLevel`, or a 2026-07-28 request's own `_meta` log level —
//! and not at all when the client asked for none.

// Logging is deprecated in rmcp (SEP-2577); the suite still exercises it.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value as Json;

/// The level a session set with `logging/setLevel` (none until it does).
#[derive(Debug, Clone, Default)]
pub(crate) struct Logs {
    level: Arc<Mutex<Option<LoggingLevel>>>,
}

/// A level's place in the order of severity (debug lowest).
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

impl Logs {
    /// Keep `level` for the session's later messages.
    pub(crate) fn set(&self, level: LoggingLevel) {
        if let Ok(mut kept) = self.level.lock() {
            *kept = Some(level);
        }
    }

    /// The lowest level the client of `cx` asked to hear, if any.
    fn threshold(&self, cx: &RequestContext<RoleServer>) -> Option<LoggingLevel> {
        cx.meta
            .log_level()
            .or_else(|| self.level.lock().ok().and_then(|kept| *kept))
    }

    /// Send `text` at `level` to the client of `cx`, when it asked to hear
    /// that level. A message the client cannot take is dropped: the log is
    /// no part of the call's result.
    pub(crate) async fn log(
        &self,
        cx: &RequestContext<RoleServer>,
        level: LoggingLevel,
        text: &str,
    ) {
        let Some(threshold) = self.threshold(cx) else {
            return;
        };
        if severity(level) < severity(threshold) {
            return;
        }
        let mut message = LoggingMessageNotificationParam::new(level, Json::String(text.into()));
        message.logger = Some("askgate-conformance".into());
        let _ = cx.peer.notify_logging_message(message).await;
    }
}
