//! The end of a round and the sealed state it hands the client: the
//! queued input requests, and every answer so far, sealed for the retry.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::{CallToolResponse, ContentBlock, InputRequiredResult};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::{Mode, Round, RoundError};
use crate::misuse::Misuse;

/// What a sealed state carries from round to round: every answer given so
/// far, replayed on the next round, and the handler's own data.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Carried {
    /// Per elicitation key, the responses given, in order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) asks: BTreeMap<String, Vec<Json>>,
    /// Per sampling or roots key, the answer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) inputs: BTreeMap<String, Json>,
    /// The handler's data.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(super) data: BTreeMap<String, Json>,
}

impl Round {
    /// End a `tools/call` round that still needs answers: the input
    /// requests (see [`Round::input_required`]), or, when asks wait in the
    /// inbox, a tool result saying where to answer them and how to retry.
    ///
    /// # Errors
    /// As [`Round::input_required`].
    pub fn respond(self) -> Result<CallToolResponse, RoundError> {
        if self.pending.is_empty()
            && let Some(parked) = self.parked.first()
        {
            let mut result = parked.tool_result();
            for more in &self.parked[1..] {
                result.content.push(ContentBlock::text(more.message()));
            }
            return Ok(result.into());
        }
        Ok(self.input_required()?.into())
    }

    /// End the round: the queued input requests and a new sealed state
    /// (fresh nonce, bound to this request) carrying every answer so far.
    ///
    /// # Errors
    /// [`RoundError::NothingPending`] when nothing was queued (the handler
    /// has all it needs and should complete), a failure of the system's
    /// random source.
    pub fn input_required(self) -> Result<InputRequiredResult, RoundError> {
        if self.pending.is_empty() {
            return Err(match self.parked.into_iter().next() {
                Some(parked) => RoundError::Parked(parked),
                None => RoundError::NothingPending,
            });
        }
        if self.mode == Mode::Task {
            // A task keeps its answers in the store, not in a state.
            return Ok(InputRequiredResult::new(Some(self.pending), None));
        }
        let state = self.seal()?;
        Ok(InputRequiredResult::new(Some(self.pending), Some(state)))
    }

    fn seal(&self) -> Result<String, RoundError> {
        let nonce = random_id()?;
        let expires_at = self
            .rounds
            .now()
            .checked_add(self.rounds.inner.ttl)
            .map_err(|_| Misuse::LifetimeOutOfRange {
                what: "the sealed state's lifetime (Rounds::with_ttl)",
                lifetime: self.rounds.inner.ttl,
            })?;
        let carried = serde_json::to_value(&self.carried).map_err(RoundError::unsendable)?;
        Ok(self
            .rounds
            .inner
            .sealer
            .seal(&self.binding, expires_at, &nonce, &carried))
    }
}

/// 18 random bytes, base64url: a nonce or an id nobody can guess.
pub(super) fn random_id() -> Result<String, RoundError> {
    let mut bytes = [0u8; 18];
    getrandom::fill(&mut bytes).map_err(RoundError::Random)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}
