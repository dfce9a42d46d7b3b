//! An upstream's side of the express lane: its pipe, and its calls in
//! flight until their answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::CallToolResult;
use serde_json::value::RawValue;
use serde_json::{Value as Json, json};

use super::{ErrorResponse, FIRST_ID, Outgoing, Params, ProgressOf, Reply, Summary, is_classic};
use crate::downstream::Notices;
use crate::lifecycle::{Answer, Effect, Lifecycle};
use crate::lines::Out;
use crate::record::{Ended, Ending};
use crate::relay::inflight::Watching;
use crate::relay::{Idle, Inflight};

mod limit;

/// One upstream's side of the lane: its pipe, and its calls in flight.
pub(crate) struct Lane {
    out: Arc<Out>,
    pub(crate) next: AtomicU64,
    calls: Mutex<HashMap<u64, Pending>>,
    /// Whether the upstream answers on a classic revision (set once its
    /// handshake is done).
    classic: AtomicBool,
    /// How long a call's server may go idle (see [`Lane::limit`]); none
    /// when not set.
    timeout: Mutex<Option<Duration>>,
    /// The upstream's requests in flight: their progress, and its asks
    /// that name no call.
    inflight: Inflight,
    /// Where the progress notifications it passes to rmcp are announced,
    /// and its upstream's relay number there (see [`Lane::herald`]).
    herald: std::sync::OnceLock<(Notices, u64)>,
    /// Whether the upstream's output ended (see [`Lane::gone`]).
    ended: AtomicBool,
}

impl Lane {
    /// A lane writing to the upstream through `out`, whose requests in
    /// flight are `inflight`'s.
    pub(crate) fn new(out: Arc<Out>, inflight: Inflight) -> Arc<Lane> {
        Arc::new(Lane {
            out,
            next: AtomicU64::new(FIRST_ID),
            calls: Mutex::new(HashMap::new()),
            ended: AtomicBool::new(false),
            classic: AtomicBool::new(false),
            timeout: Mutex::new(None),
            inflight,
            herald: std::sync::OnceLock::new(),
        })
    }

    /// Announce to `notices` each progress notification of the upstream
    /// (relay number `upstream`) the lane passes to rmcp: the answer it
    /// reads off the pipe after them waits for them (see
    /// [`crate::downstream::Routed::settle`]), so the client hears the
    /// progress first, as it would directly.
    pub(crate) fn herald(&self, notices: Notices, upstream: u64) {
        let _ = self.herald.set((notices, upstream));
    }

    /// Announce `reply` if it is a progress notification of a string
    /// token (the lane's are).
    fn announce(&self, reply: &Reply<'_>) {
        let Some((notices, upstream)) = self.herald.get() else {
            return;
        };
        if reply.method.map(RawValue::get) != Some("\"notifications/progress\"") {
            return;
        }
        let token = reply
            .params
            .and_then(|params| serde_json::from_str::<ProgressOf<'_>>(params.get()).ok())
            .and_then(|progress| progress.token);
        if let Some(token) = token {
            notices.announce(*upstream, &token);
        }
    }

    /// Start `idle`, a call's clock, again at each progress notification
    /// its server sends of `token` (the lane's), until the guard drops.
    pub(crate) fn watch_progress(&self, token: &str, idle: &Idle) -> Watching {
        let token = rmcp::model::ProgressToken(rmcp::model::NumberOrString::String(token.into()));
        self.inflight.watch_progress(&token, idle)
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Pending>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Say which revision the upstream speaks.
    pub(crate) fn negotiated(&self, version: &str) {
        self.classic.store(is_classic(version), Ordering::Release);
    }

    /// Whether calls may take the lane: the upstream answers on a classic
    /// revision, and its connection is up.
    pub(crate) fn is_open(&self) -> bool {
        self.classic.load(Ordering::Acquire)
    }

    /// Whether the upstream's output ended: it takes nothing more, on the
    /// lane or through rmcp (which learns of it a moment later).
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// Offer a line the upstream sent: `true` when it answers a call on
    /// the lane (then it is settled here, not passed to rmcp).
    pub(crate) fn offer(&self, line: &[u8]) -> bool {
        // rmcp reads past a byte order mark, so the lane does: else the
        // answer reaches rmcp, which knows no call of its id, and the
        // client's call waits.
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        let Ok(reply) = serde_json::from_slice::<Reply<'_>>(line) else {
            return false;
        };
        if reply.method.is_some() {
            self.announce(&reply);
            return false;
        }
        let Some(id) = reply.id.and_then(|id| id.get().parse::<u64>().ok()) else {
            return false;
        };
        if id < FIRST_ID {
            return false;
        }
        // A call not found was cancelled: its late answer is dropped.
        let pending = self.calls().remove(&id);
        if let Some(pending) = pending {
            pending.settle(LaneEnd::Answered(reply));
        }
        true
    }

    /// The upstream's connection ended: every call in flight fails.
    pub(crate) fn gone(&self) {
        self.ended.store(true, Ordering::Release);
        self.classic.store(false, Ordering::Release);
        let calls: Vec<Pending> = self.calls().drain().map(|(_, p)| p).collect();
        for pending in calls {
            pending.settle(LaneEnd::Gone(crate::upstream::CONNECTION_CLOSED));
        }
    }

    /// The gateway stops: every client's call in flight is left, ledgered
    /// as sent (it may have run). A call a handler sent stays: its
    /// handler, cancelled as the gateway stops, ends it as through rmcp
    /// (its server told, its record ended), or its upstream's close does.
    pub(crate) fn abandon(&self) {
        let calls: Vec<Pending> = {
            let mut calls = self.calls();
            let clients: Vec<u64> = calls
                .iter()
                .filter(|(_, pending)| matches!(pending.answering, Answering::Client { .. }))
                .map(|(id, _)| *id)
                .collect();
            clients
                .into_iter()
                .filter_map(|id| calls.remove(&id))
                .collect()
        };
        drop(calls);
    }

    /// Send call `id`, its request `written` by [`request`], settled
    /// through `pending`.
    pub(crate) fn send(&self, id: u64, written: serde_json::Result<Vec<u8>>, pending: Pending) {
        let line = match written {
            Ok(line) => line,
            Err(error) => {
                pending.settle(LaneEnd::Gone(&format!(
                    "its request could not be written: {error}"
                )));
                return;
            }
        };
        self.calls().insert(id, pending);
        // `gone` closes the lane, then settles what it finds: a call put
        // in after that is settled here (whoever removes it settles it).
        if !self.is_open() {
            let pending = self.calls().remove(&id);
            if let Some(pending) = pending {
                pending.settle(LaneEnd::Gone(crate::upstream::CONNECTION_CLOSED));
            }
            return;
        }
        if let Err(error) = self.out.send(&line) {
            let pending = self.calls().remove(&id);
            if let Some(pending) = pending {
                pending.settle(LaneEnd::Gone(&format!(
                    "the request could not be sent ({error})"
                )));
            }
        }
    }

    /// The client cancelled call `id`, which its server works on (on the
    /// lane itself, or through the handler that sent it): its server is
    /// told, and the call ends as one that may have run — the handler
    /// told so, the client answered nothing (it asked for none) — as
    /// through rmcp, and logged as there. `false` when it had ended already
    /// (answered, past its limit, its upstream gone): then nothing is told.
    pub(crate) fn cancel(&self, id: u64) -> bool {
        let pending = self.calls().remove(&id);
        let Some(pending) = pending else {
            return false;
        };
        let _ = self.out.send(&abandoned(id));
        // Under the rmcp path's target: an operator's filter finds it
        // whichever path it took.
        tracing::info!(target: "askgate_gateway::proxy::upstream_call", call = %pending.ending.id(), server = %pending.ending.server(), tool = %pending.tool, "{}", crate::record::CANCELLED_WHILE_RUNNING_LOG);
        let why = crate::record::CANCELLED_WHILE_RUNNING;
        let end = match pending.answering {
            Answering::Handler(_) => LaneEnd::Gone(why),
            Answering::Client { .. } => LaneEnd::Dropped(why),
        };
        pending.settle(end);
        true
    }
}

/// The `notifications/cancelled` line for call `id` given up, with the
/// reason the path through rmcp gives a server for a request its caller
/// dropped (see `relay::rounds`): the server reads one text whichever way
/// the call went, and a client's own reason — its words, perhaps about its
/// user — stays with the gateway.
fn abandoned(id: u64) -> Vec<u8> {
    let reason = serde_json::value::to_raw_value(crate::relay::rounds::ABANDONED).ok();
    cancel_line(id, reason.as_deref())
}

/// The `notifications/cancelled` line telling an upstream that call `id`
/// is cancelled, with the client's `reason` when it gave a string: the
/// schema's `reason` is an optional string, and a `null` there makes a
/// strict server (the TypeScript SDK's) reject the notification — and go
/// on with the call.
fn cancel_line(id: u64, reason: Option<&RawValue>) -> Vec<u8> {
    let mut params = json!({"requestId": id});
    if let Some(reason) = reason.and_then(|r| serde_json::from_str::<String>(r.get()).ok()) {
        params["reason"] = Json::String(reason);
    }
    let notification = json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": params,
    });
    let mut line = notification.to_string().into_bytes();
    line.push(b'\n');
    line
}
/// The calls a client has on the lanes, by its request id.
pub(crate) type OnLanes = Arc<Mutex<HashMap<String, OnLane>>>;

/// Where a client's call is on the lanes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OnLane {
    /// The upstream.
    pub(crate) upstream: usize,
    /// The call's id on that upstream's lane.
    pub(crate) id: u64,
}

/// The line that sends call `id` with `params` upstream: the request,
/// and its newline.
pub(crate) fn request(id: u64, params: &Params<'_>) -> serde_json::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(256);
    serde_json::to_writer(
        &mut line,
        &Outgoing {
            jsonrpc: "2.0",
            id,
            method: "tools/call",
            params,
        },
    )?;
    line.push(b'\n');
    Ok(line)
}

/// A call on the lane, until its answer.
pub(crate) struct Pending {
    /// Who its answer goes to.
    pub(crate) answering: Answering,
    /// The tool, by its upstream name.
    pub(crate) tool: String,
    /// How its end is told (dropped unended, it records `sent`).
    pub(crate) ending: Ending,
    /// Its life, at "sent".
    pub(crate) life: Lifecycle,
    /// Where its upstream's progress goes, while it runs.
    pub(crate) progress: Option<crate::downstream::Routed>,
    /// Counted in flight until its answer (see [`crate::stopping`]).
    pub(crate) _in_flight: Option<crate::stopping::InFlight>,
    /// Its server's idle clock, started when the call was handed to the
    /// lane.
    pub(crate) idle: Idle,
    /// Its clock started again by its server's progress, while it runs.
    pub(crate) _watching: Option<Watching>,
}

/// Who the answer to a call on the lane goes to.
pub(crate) enum Answering {
    /// The client that made the call, its request relayed as bytes.
    Client {
        /// The client's request id.
        id: Box<RawValue>,
        /// The same, as a key of `calls`.
        key: String,
        /// The client's calls on the lanes.
        calls: OnLanes,
        /// Where the answer goes.
        reply: ReplyTo,
    },
    /// The gateway's own handler of the call (one a person decided, see
    /// [`crate::proxy::on_lane`]): its server's result, or the error its
    /// client gets.
    Handler(tokio::sync::oneshot::Sender<Result<CallToolResult, ErrorData>>),
}

/// Where the answer to a call on the lane goes.
pub(crate) enum ReplyTo {
    /// A line on the client's pipe (stdio).
    Pipe(Arc<Out>),
    /// The body of the answer to the client's POST (Streamable HTTP). A
    /// call left unanswered (cancelled, the gateway stopping) drops it.
    Body(tokio::sync::oneshot::Sender<Vec<u8>>),
}

impl ReplyTo {
    /// Send `line`, the answer to call `call`.
    fn send(self, call: &str, line: Vec<u8>) {
        let sent = match self {
            ReplyTo::Pipe(out) => out.send(&line).map_err(|error| error.to_string()),
            ReplyTo::Body(body) => body.send(line).map_err(|_| "its request ended".to_owned()),
        };
        if let Err(error) = sent {
            tracing::debug!(%call, %error, "the client went away before its answer");
        }
    }
}

/// How a call on the lane ended.
enum LaneEnd<'a> {
    /// The upstream answered.
    Answered(Reply<'a>),
    /// It never will.
    Gone(&'a str),
    /// Its caller dropped it: it ends as [`LaneEnd::Gone`], and nobody is
    /// answered.
    Dropped(&'a str),
}

impl Pending {
    /// Answer the client, and record the end.
    fn settle(self, settled: LaneEnd<'_>) {
        let Pending {
            answering,
            tool,
            mut ending,
            mut life,
            progress,
            _in_flight: in_flight,
            ..
        } = self;
        if let Answering::Client { key, calls, .. } = &answering {
            calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(key);
        }
        let unanswered = matches!(settled, LaneEnd::Dropped(_));
        // A handler's call is answered with a tool's result, decoded here:
        // an answer that is not one ends the call as failed, as through
        // rmcp (which cannot decode it either).
        let mut tool_result = None;
        let not_a_result;
        let settled = match settled {
            LaneEnd::Answered(reply) if matches!(answering, Answering::Handler(_)) => {
                match reply
                    .result
                    .map(|r| serde_json::from_str::<CallToolResult>(r.get()))
                {
                    Some(Ok(decoded)) => {
                        tool_result = Some(decoded);
                        LaneEnd::Answered(reply)
                    }
                    Some(Err(error)) => {
                        not_a_result = format!("its answer is not a tool's result ({error})");
                        LaneEnd::Gone(&not_a_result)
                    }
                    None => LaneEnd::Answered(reply),
                }
            }
            settled => settled,
        };
        let (ended, result) = match settled {
            LaneEnd::Answered(Reply {
                result: Some(result),
                ..
            }) => {
                let summary = serde_json::from_str::<Summary>(result.get()).unwrap_or_default();
                let ended = Ended::Answered {
                    is_error: summary.is_error.unwrap_or(false),
                    blocks: summary.content.map_or(0, |c| c.len()),
                };
                (ended, Some(result))
            }
            LaneEnd::Answered(Reply { error, .. }) => {
                let error = match error.map(|e| serde_json::from_str::<ErrorData>(e.get())) {
                    Some(Ok(error)) => error,
                    Some(Err(_)) => ErrorData::internal_error(
                        "an error response whose error is not a JSON-RPC error object",
                        None,
                    ),
                    None => {
                        ErrorData::internal_error("a response with neither result nor error", None)
                    }
                };
                (Ended::Refused(error), None)
            }
            LaneEnd::Gone(why) | LaneEnd::Dropped(why) => (Ended::Failed(why.to_owned()), None),
        };
        life.handle_ended(ended);
        let mut answer = None;
        while let Some(effect) = life.poll() {
            match effect {
                // Recorded before the answer goes: it does not wait for the
                // store, and a client that stops the gateway as soon as it
                // has its answer finds the record among the writes a clean
                // stop keeps.
                Effect::RecordEnd(ended) => ending.ended(&ended),
                Effect::Answer(Answer::Result) => answer = result.map(Ok),
                Effect::Answer(Answer::Failed(ended)) => {
                    let error = ended
                        .client_error(ending.server(), &tool)
                        .unwrap_or_else(|| ErrorData::internal_error("the call failed", None));
                    answer = Some(Err(error));
                }
                _ => {}
            }
        }
        debug_assert!(life.is_over(), "an ended call is over");
        let Some(answer) = answer.filter(|_| !unanswered) else {
            return;
        };
        let (id, reply) = match answering {
            Answering::Handler(handler) => {
                // Its handler answers the client, and counts it in flight.
                let answer = answer.and_then(|_| {
                    tool_result.ok_or_else(|| {
                        ErrorData::internal_error("the call's result was not kept", None)
                    })
                });
                let _ = handler.send(answer);
                return;
            }
            Answering::Client { id, reply, .. } => (id, reply),
        };
        let line = match answer {
            Ok(result) => result_line(&id, result),
            Err(error) => error_response(&id, error),
        };
        let call = ending.id().to_owned();
        // Counted in flight until its answer is sent.
        let answer = move || {
            reply.send(&call, line);
            drop(in_flight);
        };
        match progress {
            None => answer(),
            // The progress the upstream sent before its answer goes first.
            Some(routed) => {
                tokio::spawn(async move {
                    routed.settle().await;
                    answer();
                });
            }
        }
    }
}

/// The JSON-RPC response to the client's request `id`: `result`, as the
/// upstream sent it.
fn result_line(id: &RawValue, result: &RawValue) -> Vec<u8> {
    let mut line = Vec::with_capacity(result.get().len() + 48);
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    line.extend_from_slice(id.get().as_bytes());
    line.extend_from_slice(b",\"result\":");
    line.extend_from_slice(result.get().as_bytes());
    line.extend_from_slice(b"}\n");
    line
}

/// The JSON-RPC response to request `id` that is `error`, as a line.
pub(crate) fn error_response(id: &RawValue, error: ErrorData) -> Vec<u8> {
    let response = ErrorResponse {
        jsonrpc: "2.0",
        id,
        error,
    };
    let mut line = serde_json::to_vec(&response).unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params_of(line: &[u8]) -> Json {
        let message: Json = serde_json::from_slice(line).expect("a JSON line");
        assert_eq!(message["method"], "notifications/cancelled");
        message["params"].clone()
    }

    #[test]
    fn a_cancel_without_a_reason_goes_upstream_without_one() {
        assert_eq!(
            params_of(&cancel_line(FIRST_ID, None)),
            json!({"requestId": FIRST_ID})
        );
    }

    #[test]
    fn a_cancels_reason_goes_upstream_only_when_it_is_a_string() {
        let reason = RawValue::from_string("\"the person moved on\"".into()).expect("JSON");
        assert_eq!(
            params_of(&cancel_line(FIRST_ID, Some(&reason))),
            json!({"requestId": FIRST_ID, "reason": "the person moved on"})
        );
        let number = RawValue::from_string("42".into()).expect("JSON");
        assert_eq!(
            params_of(&cancel_line(FIRST_ID, Some(&number))),
            json!({"requestId": FIRST_ID})
        );
    }

    #[test]
    fn an_answer_with_a_malformed_error_is_still_an_answer_to_its_call() {
        // Were it not read, the line would go to rmcp, which knows no call
        // of that id, and the client would wait for ever.
        let line = br#"{"jsonrpc":"2.0","id":1099511627776,"error":{"code":"oops"}}"#;
        let reply: Reply<'_> = serde_json::from_slice(line).expect("read");
        assert!(reply.method.is_none());
        assert_eq!(reply.id.map(RawValue::get), Some("1099511627776"));
        assert!(reply.error.is_some());
    }
}
