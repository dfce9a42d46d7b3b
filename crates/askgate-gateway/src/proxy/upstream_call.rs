//! One tool call upstream, from the ledger's `sent` to its end: sent
//! (with the replay contract's marker when the operator asked for it),
//! what its server asks relayed until it completes (see
//! [`crate::relay::rounds`]), its end told once (see [`crate::record`]).

use askgate_mcp::replay::MARKER_KEY;
use rmcp::ErrorData;
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, InputRequiredResult, JsonObject, RequestMetaObject,
};
use serde_json::Value as Json;

use super::Gateway;
use crate::downstream::Progress;
use crate::ids::random;
use crate::lifecycle::{Answer, Effect, Lifecycle};
use crate::record::{Ended, Ending};
use crate::relay::rounds::{self, Sent, Tracked};
use crate::relay::{self, Asks, Entered};

/// A tool call on its way to its upstream.
pub(crate) struct UpstreamCall {
    /// The gateway it goes through.
    pub(crate) gateway: Gateway,
    /// The upstream, by index.
    pub(crate) index: usize,
    /// The tool, by its upstream name.
    pub(crate) tool: String,
    /// Its ledger id, and how its end is told.
    pub(crate) ending: Ending,
    /// Its life, at "sent".
    pub(crate) life: Lifecycle,
    /// Where its progress goes, when the client asked for it.
    pub(crate) progress: Option<Progress>,
}

impl UpstreamCall {
    /// Send the call with `arguments` — first with the answers to `start`,
    /// a round of its server's carried over a restart — relaying what its
    /// server asks through `asks`, until it completes; `entered` ends when
    /// it does. The first request carries `marker`; each later one a new
    /// marker of its own.
    pub(crate) async fn run(
        mut self,
        arguments: JsonObject,
        marker: String,
        asks: Asks,
        entered: Entered,
        start: Option<InputRequiredResult>,
    ) -> relay::Response {
        let gateway = self.gateway.clone();
        let upstream = match gateway.started(self.index) {
            Ok(upstream) => upstream,
            Err(error) => return Err(error),
        };
        let marks = gateway.marks_calls();
        let id = self.ending.id().to_owned();
        let mut params = CallToolRequestParams::new(self.tool.clone());
        params.arguments = Some(arguments);
        let mut marker = marker;
        // A resumed call's first request follows answers: it is a new one.
        let mut fresh = start.is_some();
        let tracked = self.progress.as_ref().map(|progress| Tracked {
            progress,
            upstream: upstream.relay_number(),
        });
        let sent = rounds::until_complete(
            upstream.service.peer(),
            params,
            &asks,
            start,
            tracked,
            |params| {
                if fresh {
                    marker = random("m").map_err(ServiceError::McpError)?;
                }
                fresh = true;
                if marks {
                    let mut meta = RequestMetaObject::default();
                    meta.insert(MARKER_KEY.to_owned(), Json::String(marker.clone()));
                    params.meta = Some(meta);
                    upstream.watcher.expect(&marker, &id);
                }
                Ok(())
            },
        )
        .await;
        drop(entered);
        let observed = upstream.watcher.answered(&id);
        let (ended, result) = match sent {
            Sent::Answered(CallToolResponse::Complete(result)) => {
                if marks && !observed {
                    tracing::warn!(upstream = %upstream.name, tool = %self.tool, "an answer arrived that the watcher did not see");
                }
                let ended = Ended::Answered {
                    is_error: result.is_error.unwrap_or(false),
                    blocks: result.content.len(),
                };
                (ended, Some(result))
            }
            Sent::Answered(_) => (Ended::Task, None),
            Sent::KeptAsking => (Ended::KeptAsking, None),
            Sent::NotGiven(why) => (Ended::InputNotGiven(why), None),
            Sent::Failed(error) => match askgate_mcp::replay::refusal(&error) {
                Some(refused) => {
                    upstream.watcher.forget(&marker);
                    (Ended::NotSent(refused.as_str().to_owned()), None)
                }
                None => match error {
                    ServiceError::McpError(error) => (Ended::Refused(error), None),
                    other => (Ended::Failed(other.to_string()), None),
                },
            },
        };
        self.life.handle_ended(ended);
        self.answer(&upstream.name, result)
    }

    /// Carry out what the ended life says: its end recorded, and the
    /// client answered with `result` or the end's error.
    fn answer(
        mut self,
        upstream: &str,
        mut result: Option<rmcp::model::CallToolResult>,
    ) -> relay::Response {
        let mut answer = None;
        while let Some(effect) = self.life.poll() {
            match effect {
                Effect::RecordEnd(ended) => self.ending.ended(&ended),
                Effect::Answer(Answer::Result) => {
                    answer = result.take().map(relay::complete).map(Ok)
                }
                Effect::Answer(Answer::Failed(ended)) => {
                    answer = ended.client_error(upstream, &self.tool).map(Err);
                }
                _ => {}
            }
        }
        debug_assert!(self.life.is_over(), "an ended call is over");
        answer.unwrap_or_else(|| {
            Err(ErrorData::internal_error(
                format!(
                    "the call to {} on {upstream} ended without an answer",
                    self.tool
                ),
                None,
            ))
        })
    }
}
