//! One tool call upstream, from the ledger's `sent` to its end: sent
//! (with the replay contract's marker when the operator asked for it),
//! what its server asks relayed until it completes (see
//! [`crate::relay::rounds`]), its end told once (see [`crate::record`]).

use askgate_mcp::replay::MARKER_KEY;
use rmcp::ErrorData;
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, CreateTaskResult,
    InputRequiredResult, InputResponses, JsonObject,
};
use serde_json::Value as Json;

use super::Gateway;
use crate::downstream::Progress;
use crate::ids::random;
use crate::lifecycle::{Answer, Effect, Lifecycle};
use crate::record::{Ended, Ending};
use crate::relay::rounds::{self, Limit, Sending, Sent, Tracked};
use crate::relay::{self, Asks, Entered};
use crate::tasks::{Caller, Route};
use crate::upstream::Upstream;

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
    /// Its client, when it follows tasks: the upstream may answer with
    /// one (see [`crate::tasks`]).
    pub(crate) tasks: Option<Caller>,
    /// What its client declared it has (`None`: not known).
    pub(crate) client: Option<ClientCapabilities>,
    /// The input responses the client's request carried unasked (no
    /// sealed state of askgate's): sent with the first request, as the
    /// server would have had them from a client of its own.
    pub(crate) given: Option<InputResponses>,
    /// The client's cancel of the call, when it waits on the call itself
    /// (a classic client: a 2026-07-28 client's round ends with its
    /// answer, and the call runs on without it).
    pub(crate) cancelled: Option<Cancelled>,
    /// A 2025-11-25 client's `task` of the call (see
    /// [`crate::legacy_tasks`]).
    pub(crate) legacy_task: Option<Json>,
}

/// A client's cancel, once it comes.
pub(crate) type Cancelled = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

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
        if start.is_none() {
            params.input_responses = self.given.take();
        }
        let mut marker = marker;
        // A resumed call's first request follows answers: it is a new one.
        let mut fresh = start.is_some();
        // What the client has, told on each request to a server that
        // reads it there; a client that follows tasks has the upstream
        // told so: it may then answer with a task.
        // A 2025-11-25 task is asked for with the call itself, not by the
        // 2026-07-28 extension.
        let follows_extension = self.tasks.is_some() && self.legacy_task.is_none();
        let declared = upstream.declaring(self.client.as_ref(), follows_extension);
        let tracked = self.progress.as_ref().map(|progress| Tracked {
            progress,
            upstream: upstream.relay_number(),
        });
        let sending = Sending {
            progress: tracked,
            declared,
            limit: upstream.call_timeout.map(|timeout| Limit {
                timeout,
                entered: &entered,
            }),
            legacy_task: self.legacy_task.clone(),
        };
        let sending = rounds::until_complete(
            upstream.service.peer(),
            params,
            &asks,
            start,
            sending,
            |params| {
                if fresh {
                    marker = random("m").map_err(ServiceError::McpError)?;
                }
                fresh = true;
                let mut meta = rmcp::model::RequestMetaObject::new();
                if marks {
                    meta.insert(MARKER_KEY.to_owned(), Json::String(marker.clone()));
                    upstream.watcher.expect(&marker, &id);
                }
                params.meta = (!meta.is_empty()).then_some(meta);
                Ok(())
            },
        );
        // The client's cancel stops the wait; the request upstream, given
        // up, is cancelled there too (see `rounds`).
        let sent = if upstream.has_gone() {
            drop(sending);
            Sent::Unreachable
        } else {
            match self.cancelled.take() {
                Some(cancelled) => tokio::select! {
                    sent = sending => sent,
                    () = cancelled => Sent::Cancelled,
                },
                None => sending.await,
            }
        };
        drop(entered);
        // Asked always: it forgets the call as it tells.
        let observed = upstream.watcher.answered(&id);
        let unseen = marks && !observed;
        let (ended, result) = self.settled(upstream, sent, &marker, unseen);
        self.life.handle_ended(ended);
        self.answer(&upstream.name, result)
    }

    /// How the call ended, from how its request was `sent` (its marker
    /// `marker`; `unseen`: the watcher did not see its answer), and what
    /// the client is answered when its server answered.
    fn settled(
        &self,
        upstream: &Upstream,
        sent: Sent<CallToolResponse>,
        marker: &str,
        unseen: bool,
    ) -> (Ended, Option<CallToolResponse>) {
        match sent {
            Sent::Answered(CallToolResponse::Complete(result)) => {
                if unseen {
                    tracing::warn!(upstream = %upstream.name, tool = %self.tool, "an answer arrived that the watcher did not see");
                }
                let ended = Ended::Answered {
                    is_error: result.is_error.unwrap_or(false),
                    blocks: result.content.len(),
                };
                (ended, Some(CallToolResponse::Complete(result)))
            }
            Sent::Answered(CallToolResponse::Task(created)) => {
                self.made(&created);
                let ended = Ended::Task(created.task.task_id.clone());
                (ended, Some(CallToolResponse::Task(created)))
            }
            // Input requests are answered in `until_complete`.
            Sent::Answered(_) => (
                Ended::Failed("its server asked for input in a way askgate cannot answer".into()),
                None,
            ),
            Sent::KeptAsking => (Ended::KeptAsking, None),
            Sent::Unreachable => (Ended::Unreachable, None),
            Sent::Cancelled => {
                self.gateway.metrics().cancelled(&upstream.name);
                tracing::info!(call = %self.ending.id(), server = %upstream.name, tool = %self.tool, "{}", crate::record::CANCELLED_WHILE_RUNNING_LOG);
                (
                    Ended::Failed(crate::record::CANCELLED_WHILE_RUNNING.into()),
                    None,
                )
            }
            Sent::NotGiven(why) => (Ended::InputNotGiven(why), None),
            Sent::Failed(error) => match askgate_mcp::replay::refusal(&error) {
                Some(refused) => {
                    upstream.watcher.forget(marker);
                    (Ended::NotSent(refused.as_str().to_owned()), None)
                }
                None => match error {
                    ServiceError::McpError(error) => (Ended::Refused(error), None),
                    ServiceError::Timeout { timeout } => (
                        Ended::Failed(format!(
                            "its server gave no answer and told of no progress for {} (its \
                             call_timeout), and was told to cancel it",
                            jiff::SignedDuration::try_from(timeout)
                                .map_or_else(|_| format!("{timeout:?}"), |d| format!("{d:#}"))
                        )),
                        None,
                    ),
                    ServiceError::TransportClosed => match upstream.http_answer_size {
                        Some(most) => (
                            Ended::Failed(crate::upstream::answer_not_arrived(most)),
                            None,
                        ),
                        None => (
                            Ended::Failed(crate::upstream::CONNECTION_CLOSED.into()),
                            None,
                        ),
                    },
                    other => (Ended::Failed(other.to_string()), None),
                },
            },
        }
    }

    /// Note the task `created` made for the call's client: its requests go
    /// to this upstream, its status to that client.
    fn made(&self, created: &CreateTaskResult) {
        let Some(caller) = &self.tasks else {
            return;
        };
        let Ok(upstream) = self.gateway.started(self.index) else {
            return;
        };
        let route = Route {
            upstream: self.index,
            relay: upstream.relay_number(),
            principal: caller.principal.clone(),
            client: caller.client.clone(),
            legacy: self.legacy_task.is_some(),
        };
        tracing::info!(call = %self.ending.id(), server = %upstream.name, tool = %self.tool, "its server answered with a task, which runs on");
        self.gateway
            .inner
            .downstream
            .tasks
            .made(&created.task.task_id, route, created.task.ttl_ms);
    }

    /// Carry out what the ended life says: its end recorded, and the
    /// client answered with `result` or the end's error.
    fn answer(mut self, upstream: &str, mut result: Option<CallToolResponse>) -> relay::Response {
        let mut answer = None;
        while let Some(effect) = self.life.poll() {
            match effect {
                Effect::RecordEnd(ended) => self.ending.ended(&ended),
                Effect::Answer(Answer::Result) => {
                    answer = result.take().map(|response| match response {
                        CallToolResponse::Complete(result) => Ok(relay::complete(result)),
                        other => Ok(other),
                    });
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
