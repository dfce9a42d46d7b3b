//! The express lane: a `tools/call` that needs no person, relayed as bytes.
//!
//! Most calls an agent makes are reads that proceed without asking anyone.
//! Through rmcp, each costs two decodes and two encodes of every message,
//! and a hop between tasks at each end. On stdio, with an upstream that
//! runs as a child process, the lane relays such a call straight from the
//! client's pipe to the upstream's and its answer straight back (see
//! [`super::wire`]), while keeping every promise the gateway makes about
//! it:
//!
//! - the same decision: the tool's risk from the rules, and rule 1 of
//!   askgate-core ([`askgate_mcp::Rounds::decide_unattended`]) — a call a
//!   person must confirm, a call before a configured intake, a read under
//!   `durable_reads`, anything above `read`, or a request the lane does not
//!   know (a retry with `requestState`, a task) goes through rmcp as
//!   before;
//! - the same records: its audit entry and ledger row, written when it
//!   ends, in one write (as `sent` if it never ends: the gateway stopped);
//! - the same replay contract: the request carries its marker, and the
//!   lane is the transport that sends it and sees its answer;
//! - the same metrics, and the same error when the upstream fails.
//!
//! Only classic revisions take the lane at either end (a 2026-07-28
//! upstream may answer with input requests; a 2026-07-28 client's results
//! carry a `resultType`), and a client's `notifications/cancelled` for a
//! call on the lane is passed on to its upstream.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rmcp::model::JsonObject;
use rmcp::{ErrorData, ServiceError};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value as Json, json};

use super::proxy::{End, Gateway};
use super::wire::Out;
use askgate_mcp::replay::MARKER_KEY;

/// The first request id the lane gives upstream calls: rmcp counts its
/// own from 0 in 32 bits, and JavaScript servers read ids up to 2^53
/// exactly.
const FIRST_ID: u64 = 1 << 40;

/// The revisions whose `tools/call` results the lane relays unchanged.
const CLASSIC: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Whether `version` is a classic revision.
pub(crate) fn is_classic(version: &str) -> bool {
    CLASSIC.contains(&version)
}

/// One upstream's side of the lane: its pipe, and its calls in flight.
pub(crate) struct Lane {
    out: Arc<Out>,
    next: AtomicU64,
    calls: Mutex<HashMap<u64, Pending>>,
    /// Whether the upstream answers on a classic revision (set once its
    /// handshake is done).
    classic: AtomicBool,
}

impl Lane {
    /// A lane writing to the upstream through `out`.
    pub(crate) fn new(out: Arc<Out>) -> Arc<Lane> {
        Arc::new(Lane {
            out,
            next: AtomicU64::new(FIRST_ID),
            calls: Mutex::new(HashMap::new()),
            classic: AtomicBool::new(false),
        })
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

    /// Offer a line the upstream sent: `true` when it answers a call on
    /// the lane (then it is settled here, not passed to rmcp).
    pub(crate) fn offer(&self, line: &[u8]) -> bool {
        let Ok(reply) = serde_json::from_slice::<Reply<'_>>(line) else {
            return false;
        };
        if reply.method.is_some() {
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
            pending.settle(Settled::Answered(reply));
        }
        true
    }

    /// The upstream's connection ended: every call in flight fails.
    pub(crate) fn gone(&self) {
        self.classic.store(false, Ordering::Release);
        let calls: Vec<Pending> = self.calls().drain().map(|(_, p)| p).collect();
        for pending in calls {
            pending.settle(Settled::Gone("its connection closed"));
        }
    }

    /// The gateway stops: every call in flight is left, ledgered as sent
    /// (it may have run).
    pub(crate) fn abandon(&self) {
        let calls: Vec<Pending> = self.calls().drain().map(|(_, p)| p).collect();
        drop(calls);
    }

    /// Send `params` as call `id`, settled through `pending`.
    fn send(&self, id: u64, params: &Params<'_>, pending: Pending) {
        let mut line = Vec::with_capacity(256);
        let request = Outgoing {
            jsonrpc: "2.0",
            id,
            method: "tools/call",
            params,
        };
        if let Err(error) = serde_json::to_writer(&mut line, &request) {
            pending.settle(Settled::Gone(&format!(
                "its request could not be written: {error}"
            )));
            return;
        }
        line.push(b'\n');
        self.calls().insert(id, pending);
        // `gone` closes the lane, then settles what it finds: a call put
        // in after that is settled here (whoever removes it settles it).
        if !self.is_open() {
            let pending = self.calls().remove(&id);
            if let Some(pending) = pending {
                pending.settle(Settled::Gone("its connection closed"));
            }
            return;
        }
        if let Err(error) = self.out.send(&line) {
            let pending = self.calls().remove(&id);
            if let Some(pending) = pending {
                pending.settle(Settled::Gone(&format!(
                    "the request could not be sent ({error})"
                )));
            }
        }
    }

    /// The client cancelled call `id`: forget it, and tell the upstream.
    fn cancel(&self, id: u64, reason: Option<&RawValue>) {
        if self.calls().remove(&id).is_none() {
            return;
        }
        let _ = self.out.send(&cancel_line(id, reason));
    }
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

/// The client's side of the lane: offered every line the client sends.
pub(crate) struct Express {
    gateway: Gateway,
    /// The client's pipe.
    reply: Arc<Out>,
    /// Whether the client asked for a classic revision.
    classic: bool,
    /// Calls on the lane by the client's request id: upstream and lane id.
    calls: Arc<Mutex<HashMap<String, (usize, u64)>>>,
}

impl Express {
    /// The lane for the client writing to `reply`'s other end.
    pub(crate) fn new(gateway: Gateway, reply: Arc<Out>) -> Express {
        Express {
            gateway,
            reply,
            classic: false,
            calls: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Offer a line the client sent: `true` when the lane took it.
    pub(crate) fn offer(&mut self, line: &[u8]) -> bool {
        let Ok(request) = serde_json::from_slice::<Incoming<'_>>(line) else {
            return false;
        };
        match (request.method.as_deref(), request.id) {
            (Some("initialize"), Some(_)) => {
                self.classic = request
                    .params
                    .and_then(|p| serde_json::from_str::<Initialize<'_>>(p.get()).ok())
                    .is_some_and(|i| is_classic(&i.protocol_version));
                false
            }
            (Some("tools/call"), Some(id)) if self.classic => match request.params {
                Some(params) => self.call(id, params),
                None => false,
            },
            (Some("notifications/cancelled"), None) => match request.params {
                Some(params) => self.cancel(params),
                None => false,
            },
            _ => false,
        }
    }

    /// Take call `id` onto the lane, if it needs no person.
    fn call(&mut self, id: &RawValue, params: &RawValue) -> bool {
        let Ok(params) = serde_json::from_str::<CallParams>(params.get()) else {
            return false;
        };
        if !params.rest.is_empty() {
            // requestState, inputResponses, task...: rmcp's.
            return false;
        }
        let Some(plan) = self
            .gateway
            .unattended(&params.name, params.arguments.unwrap_or_default())
        else {
            return false;
        };
        // Open when planned; one that closes since fails the call (see
        // `Lane::send`).
        let Some(lane) = self.gateway.lane(plan.index) else {
            return false;
        };
        let Ok((ledger_id, marker, end)) = self.gateway.express_record(&plan) else {
            return false;
        };
        let key = key_of(id);
        let lane_id = lane.next.fetch_add(1, Ordering::Relaxed);
        self.calls().insert(key.clone(), (plan.index, lane_id));
        let pending = Pending {
            client_id: id.to_owned(),
            key,
            reply: Arc::clone(&self.reply),
            calls: Arc::clone(&self.calls),
            gateway: self.gateway.clone(),
            server: plan.server.clone(),
            tool: plan.tool.clone(),
            ledger_id: ledger_id.clone(),
            end: Some(end),
            started: Instant::now(),
        };
        let meta = self
            .gateway
            .marks_calls()
            .then(|| HashMap::from([(MARKER_KEY, marker.as_str())]));
        let params = Params {
            name: &plan.tool,
            arguments: &plan.arguments,
            meta,
        };
        tracing::debug!(call = %ledger_id, server = %plan.server, tool = %plan.tool, "on the express lane");
        lane.send(lane_id, &params, pending);
        true
    }

    /// A client's cancel: taken when it names a call on the lane.
    fn cancel(&mut self, params: &RawValue) -> bool {
        let Ok(cancelled) = serde_json::from_str::<Cancelled<'_>>(params.get()) else {
            return false;
        };
        let key = key_of(cancelled.request_id);
        let Some((index, lane_id)) = self.calls().remove(&key) else {
            return false;
        };
        if let Some(lane) = self.gateway.lane(index) {
            lane.cancel(lane_id, cancelled.reason);
        }
        true
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, (usize, u64)>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A request id as a key: its JSON, normalized.
fn key_of(id: &RawValue) -> String {
    serde_json::from_str::<Json>(id.get()).map_or_else(|_| id.get().to_owned(), |v| v.to_string())
}

/// A call on the lane, until its answer.
struct Pending {
    client_id: Box<RawValue>,
    key: String,
    reply: Arc<Out>,
    calls: Arc<Mutex<HashMap<String, (usize, u64)>>>,
    gateway: Gateway,
    server: String,
    tool: String,
    ledger_id: String,
    /// Taken when the call ends; dropped unended, it records `sent`.
    end: Option<End>,
    started: Instant,
}

/// How a call on the lane ended.
enum Settled<'a> {
    /// The upstream answered.
    Answered(Reply<'a>),
    /// It never will.
    Gone(&'a str),
}

impl Pending {
    /// Answer the client, and record the end.
    fn settle(mut self, settled: Settled<'_>) {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
        let took = self.started.elapsed();
        let (line, answered, summary) = match settled {
            Settled::Answered(Reply {
                result: Some(result),
                ..
            }) => {
                let summary = serde_json::from_str::<Summary>(result.get()).unwrap_or_default();
                let mut line = Vec::with_capacity(result.get().len() + 48);
                line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                line.extend_from_slice(self.client_id.get().as_bytes());
                line.extend_from_slice(b",\"result\":");
                line.extend_from_slice(result.get().as_bytes());
                line.extend_from_slice(b"}\n");
                let summary = json!({
                    "is_error": summary.is_error.unwrap_or(false),
                    "blocks": summary.content.map_or(0, |c| c.len()),
                });
                (line, true, summary)
            }
            Settled::Answered(Reply { error, .. }) => {
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
                let message = format!(
                    "{} failed on {}: {}",
                    self.server,
                    self.tool,
                    ServiceError::McpError(error)
                );
                (self.error_line(message), false, failure())
            }
            Settled::Gone(why) => {
                let message = format!("{} failed on {}: {why}", self.server, self.tool);
                (self.error_line(message), false, failure())
            }
        };
        // The record is queued before the answer goes: it does not wait for
        // the store, and a client that stops the gateway as soon as it has
        // its answer finds the record among the writes a clean stop keeps.
        let outcome = if answered { "answered" } else { "failed" };
        self.gateway.count_call(&self.server, outcome, took);
        if let Some(end) = self.end.take() {
            self.gateway
                .finish_call(end, &self.ledger_id, answered, summary);
        }
        if let Err(error) = self.reply.send(&line) {
            tracing::debug!(call = %self.ledger_id, %error, "the client went away before its answer");
        }
    }

    /// A JSON-RPC error response to the client's request.
    fn error_line(&self, message: String) -> Vec<u8> {
        let response = ErrorResponse {
            jsonrpc: "2.0",
            id: &self.client_id,
            error: ErrorData::internal_error(message, None),
        };
        let mut line = serde_json::to_vec(&response).unwrap_or_default();
        line.push(b'\n');
        line
    }
}

/// The ledger's summary of a call that failed upstream.
fn failure() -> Json {
    json!({"failure": "transport or upstream error"})
}

/// What the lane reads of a client's message.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// What the lane reads of `initialize`.
#[derive(Deserialize)]
struct Initialize<'a> {
    #[serde(rename = "protocolVersion", borrow)]
    protocol_version: Cow<'a, str>,
}

/// A `tools/call`'s parameters: the name and arguments, and whatever else
/// it carries (`_meta` aside: the gateway does not pass it on).
#[derive(Deserialize)]
struct CallParams {
    name: String,
    arguments: Option<JsonObject>,
    #[serde(rename = "_meta")]
    _meta: Option<IgnoredAny>,
    #[serde(flatten)]
    rest: HashMap<String, IgnoredAny>,
}

/// A client's `notifications/cancelled`.
#[derive(Deserialize)]
struct Cancelled<'a> {
    #[serde(rename = "requestId", borrow)]
    request_id: &'a RawValue,
    #[serde(borrow)]
    reason: Option<&'a RawValue>,
}

/// The call as it goes upstream.
#[derive(Serialize)]
struct Outgoing<'a> {
    jsonrpc: &'static str,
    id: u64,
    method: &'static str,
    params: &'a Params<'a>,
}

#[derive(Serialize)]
struct Params<'a> {
    name: &'a str,
    arguments: &'a JsonObject,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<HashMap<&'static str, &'a str>>,
}

/// What the lane reads of an upstream's message.
#[derive(Deserialize)]
struct Reply<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    /// Read as an [`ErrorData`] when settled: a malformed one still
    /// settles its call.
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// What the ledger keeps of a result.
#[derive(Deserialize, Default)]
struct Summary {
    #[serde(rename = "isError")]
    is_error: Option<bool>,
    content: Option<Vec<IgnoredAny>>,
}

#[derive(Serialize)]
struct ErrorResponse<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    error: ErrorData,
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
