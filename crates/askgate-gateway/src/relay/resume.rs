//! What a held call's sealed state carries over a restart.

use serde_json::Value as Json;

/// A held call's asks of its server's latest `InputRequiredResult`,
/// carried in the client's sealed request state: when the retry finds the
/// call no longer held (the gateway restarted), the call is sent again
/// with the retry's answers and the server's state — the next request of
/// the multi round-trip, not a second run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub(crate) struct Resumable {
    /// The asks, in the order they went to the client.
    pub(crate) asks: Vec<ResumableAsk>,
    /// The server's `requestState`.
    pub(crate) state: Option<String>,
}

/// One ask of a [`Resumable`] call.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub(crate) struct ResumableAsk {
    /// The key it went to the client under.
    pub(crate) ours: String,
    /// The server's key.
    pub(crate) theirs: String,
    /// The server's request.
    pub(crate) request: Json,
}

impl Resumable {
    /// The server's round again: what [`answers`] asks the client for.
    ///
    /// # Errors
    /// A carried request that is not an input request (a state from
    /// another version of askgate).
    pub(crate) fn needed(&self) -> Result<rmcp::model::InputRequiredResult, String> {
        let mut requests = rmcp::model::InputRequests::new();
        for ask in &self.asks {
            let request = serde_json::from_value(ask.request.clone())
                .map_err(|e| format!("a carried input request is not one: {e}"))?;
            requests.insert(ask.theirs.clone(), request);
        }
        Ok(rmcp::model::InputRequiredResult::new(
            Some(requests),
            self.state.clone(),
        ))
    }

    /// The keys the asks went to the client under, in order.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.asks.iter().map(|a| a.ours.clone()).collect()
    }
}
