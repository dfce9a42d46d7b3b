//! URL-mode asks (2025-11-25) that the person completes out of band, and
//! the news that they did.
//!
//! When an upstream asks through URL mode, the person is sent to a link;
//! the client's `accept` means only that they agreed to go. The server
//! says later that the interaction finished, with
//! `notifications/elicitation/complete` naming the ask's `elicitationId`.
//! The gateway passes that on to the client the ask went to, and only to
//! it: a completion of an ask the gateway did not relay, or relayed to
//! nobody who could be told, is dropped.
//!
//! A 2026-07-28 client is given the ask as an input request of its own
//! `InputRequiredResult`, and that revision has no completion
//! notification: the client's retry carries its `accept`, and its answer
//! is the server's result once the interaction is over. So nothing is sent
//! to it — such asks are never noted here.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ServiceError;
use rmcp::model::{CustomNotification, ElicitRequestParams, ServerNotification};
use rmcp::service::{Peer, RoleServer};
use serde_json::json;

/// The method of the completion notification.
pub(crate) const COMPLETE: &str = "notifications/elicitation/complete";

/// The most asks awaiting completion remembered for one upstream; past
/// it, the oldest is forgotten (its completion is then not passed on).
const MOST: usize = 256;

/// One upstream's URL-mode asks awaiting completion, by `elicitationId`,
/// with the client each went to.
#[derive(Debug, Clone, Default)]
pub(crate) struct UrlAsks {
    asks: Arc<Mutex<VecDeque<Awaiting>>>,
}

/// A URL-mode ask awaiting completion.
#[derive(Debug)]
struct Awaiting {
    /// Its `elicitationId`.
    id: String,
    /// The client it went to.
    client: Peer<RoleServer>,
}

impl UrlAsks {
    fn asks(&self) -> std::sync::MutexGuard<'_, VecDeque<Awaiting>> {
        self.asks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Note that the URL-mode ask `id` went to `client`, to be told when it
    /// completes. Asks of clients that have gone away are forgotten.
    pub(crate) fn went_to(&self, id: &str, client: Peer<RoleServer>) {
        let mut asks = self.asks();
        asks.retain(|ask| ask.id != id && !ask.client.is_transport_closed());
        if asks.len() >= MOST {
            asks.pop_front();
        }
        asks.push_back(Awaiting {
            id: id.to_owned(),
            client,
        });
    }

    /// The client to tell that ask `id` completed, if one is; the ask is
    /// forgotten.
    pub(crate) fn completed(&self, id: &str) -> Option<Peer<RoleServer>> {
        let mut asks = self.asks();
        let at = asks.iter().position(|ask| ask.id == id)?;
        asks.remove(at).map(|ask| ask.client)
    }
}

/// The `elicitationId` of `params`, when it is a URL-mode ask that names
/// one (2026-07-28 asks do not).
pub(crate) fn id_of(params: &ElicitRequestParams) -> Option<&str> {
    match params {
        ElicitRequestParams::UrlElicitationParams { elicitation_id, .. }
            if !elicitation_id.is_empty() =>
        {
            Some(elicitation_id)
        }
        _ => None,
    }
}

/// The `elicitationId` that `notification` says completed, when it is a
/// completion notification.
pub(crate) fn completion(notification: &CustomNotification) -> Option<String> {
    if notification.method != COMPLETE {
        return None;
    }
    let params = notification.params.as_ref()?;
    params
        .get("elicitationId")?
        .as_str()
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// Tell `client` that the URL-mode ask `id` completed.
///
/// # Errors
/// The client's transport is closed.
pub(crate) async fn tell(client: &Peer<RoleServer>, id: &str) -> Result<(), ServiceError> {
    let params = json!({ "elicitationId": id });
    let notification = CustomNotification::new(COMPLETE, Some(params));
    client
        .send_notification(ServerNotification::CustomNotification(notification))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_completion_naming_an_id_is_read_as_one() {
        let read = |method: &str, params| completion(&CustomNotification::new(method, params));
        assert_eq!(
            read(COMPLETE, Some(json!({"elicitationId": "e-1"}))).as_deref(),
            Some("e-1")
        );
        assert_eq!(read(COMPLETE, Some(json!({"elicitationId": ""}))), None);
        assert_eq!(read(COMPLETE, Some(json!({"id": "e-1"}))), None);
        assert_eq!(read(COMPLETE, None), None);
        let other = read("notifications/other", Some(json!({"elicitationId": "e-1"})));
        assert_eq!(other, None);
    }

    #[test]
    fn only_url_mode_asks_with_an_id_await_completion() {
        let url: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in", "url": "https://example.com/s",
            "elicitationId": "e-1"
        }))
        .expect("a URL-mode request");
        assert_eq!(id_of(&url), Some("e-1"));
        let form: ElicitRequestParams = serde_json::from_value(json!({
            "message": "Name?",
            "requestedSchema": {"type": "object", "properties": {}}
        }))
        .expect("a form request");
        assert_eq!(id_of(&form), None);
    }
}
