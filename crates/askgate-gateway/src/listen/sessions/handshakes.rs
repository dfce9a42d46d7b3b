//! What wakes a resting session: its handshake, kept where rmcp looks for
//! it (its `SessionStore`), and rmcp's replay of it, known as such.

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, GetExtensions, JsonRpcMessage};
use rmcp::transport::streamable_http_server::session::{
    SessionId, SessionRestoreMarker, SessionState, SessionStore, SessionStoreError,
};

use super::{State, Used, lock};

/// Whether `message` is rmcp's replay of a client's `initialized`, as its
/// session wakes.
pub(super) fn is_replayed_initialized(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        JsonRpcMessage::Notification(n)
            if matches!(n.notification, ClientNotification::InitializedNotification(_))
                && n.notification.extensions().get::<SessionRestoreMarker>().is_some()
    )
}

/// Each session's handshake, as rmcp keeps it to wake the session: in the
/// session's [`super::Use`], forgotten with it.
pub(super) struct Handshakes {
    pub(super) used: Used,
}

#[async_trait::async_trait]
impl SessionStore for Handshakes {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        // Only a session at rest (or on its way) is woken.
        Ok(lock(&self.used)
            .get(&SessionId::from(id))
            .filter(|used| used.state != State::Awake)
            .and_then(|used| used.handshake.clone()))
    }

    async fn store(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        if let Some(used) = lock(&self.used).get_mut(&SessionId::from(id)) {
            used.handshake = Some(state.clone());
        }
        Ok(())
    }

    async fn delete(&self, _id: &str) -> Result<(), SessionStoreError> {
        // Forgotten with the session (see `Sessions::forget`).
        Ok(())
    }
}
