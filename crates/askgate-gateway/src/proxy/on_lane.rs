//! A call the gateway's handler sends — one a person confirmed, one whose
//! record is durable before it goes — on its upstream's express lane,
//! when it can go there.
//!
//! Through rmcp, the request and its answer are each encoded and decoded
//! once more, and cross two more tasks, than on the lane (see
//! [`crate::express`]); for a call a person waits on, that is time between
//! their yes and the answer. The lane sends the request as bytes and hands
//! the handler its server's result, decoded once (in the lane's settle).
//! Everything else stays the handler's: the decision, the durable record
//! before the send, the server's asks relayed to the client (the call is
//! in flight on its upstream, [`crate::relay::Inflight`], as before), the
//! client's cancel, and `call_timeout` (the lane's, on the same idle
//! clock), its progress (sent upstream under a token of the lane's and
//! routed back under the client's, as for the client's own calls on the
//! lane). A call the lane cannot follow goes through rmcp: a task, input
//! responses or a round carried over a restart, an upstream on a
//! 2026-07-28 revision (its lane is closed).

use rmcp::model::{JsonObject, NumberOrString, ProgressToken};

use super::Gateway;
use super::upstream_call::Cancelled;
use crate::downstream::{Progress, Routed};
use crate::lifecycle::Lifecycle;
use crate::record::Ending;
use crate::relay::Entered;

/// A call about to be sent on its upstream's lane.
pub(crate) struct LaneSend {
    /// Its upstream's name.
    pub(crate) server: String,
    /// The tool, by its upstream name.
    pub(crate) tool: String,
    /// Its arguments.
    pub(crate) arguments: JsonObject,
    /// The replay contract's marker it carries, when the operator asked
    /// for markers.
    pub(crate) marker: Option<String>,
    /// Its ledger id, and how its end is told.
    pub(crate) ending: Ending,
    /// Its life, at "sent".
    pub(crate) life: Lifecycle,
    /// It in flight on its upstream: its server's asks go to its handler,
    /// and its idle clock stands still while they wait on a person.
    pub(crate) entered: Entered,
    /// Where its progress goes, when its client asked for it: the route
    /// back, and the lane's token it is sent upstream with.
    pub(crate) progress: Option<(Routed, String)>,
    /// Its client's cancel, when the client waits on the call itself.
    pub(crate) cancelled: Option<Cancelled>,
    /// The gateway (its metrics count a cancel).
    pub(crate) gateway: Gateway,
}

/// What a call asks of the upstream call besides its tool and arguments:
/// the lane takes it when this is all there is.
pub(crate) struct Needs {
    /// A client that follows tasks, or a 2025-11-25 task asked for.
    pub(crate) tasks: bool,
    /// Input responses sent with the request, or a round resumed.
    pub(crate) input: bool,
}

impl Needs {
    /// Whether the lane can carry the call.
    pub(crate) fn fit_the_lane(&self) -> bool {
        !(self.tasks || self.input)
    }
}

impl Gateway {
    /// Upstream `index`'s lane, when a call that `needs` so can go on it.
    pub(crate) fn lane_for(
        &self,
        index: usize,
        needs: &Needs,
    ) -> Option<std::sync::Arc<crate::express::Lane>> {
        if !self.inner.settings.express_lane || !needs.fit_the_lane() {
            return None;
        }
        self.lane(index).filter(|lane| lane.is_open()).cloned()
    }

    /// Where the progress of a call on upstream `index`'s lane goes, its
    /// client having asked for it with `progress`: the route back, while
    /// the guard lives, and the token (a string of the lane's, never one
    /// of rmcp's numbers) the upstream is sent instead.
    pub(crate) fn lane_route(&self, index: usize, progress: &Progress) -> Option<(Routed, String)> {
        let upstream = self.inner.upstreams.get(index)?;
        let ours = format!(
            "askgate-lane-{}",
            self.inner.downstream.notices.relay_number()
        );
        let token = ProgressToken(NumberOrString::String(ours.clone().into()));
        Some((progress.route(upstream.relay_number(), &token), ours))
    }
}
