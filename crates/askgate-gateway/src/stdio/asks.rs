//! The asks of a handed call (see [`super::handed`]) written to the
//! client's pipe by the gateway, and their answers taken from the client's
//! lines by the tap: the ask's way to the person without rmcp's service
//! loop (see [`askgate_mcp::direct`]).
//!
//! The asks are numbered from [`FIRST_ID`] up, far from the ids rmcp gives
//! the gateway's other requests to the client (counted from 0 in 32 bits):
//! an answer with one of those is rmcp's, and the tap passes it on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use askgate_mcp::direct::{Answer, ClientLine, Reply};
use rmcp::ErrorData;
use rmcp::model::{NumberOrString, RequestId};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::express::take::key_of;
use crate::lines::Out;

/// What the gateway logs (at debug) of each ask it writes itself.
const WRITTEN: &str = "an ask of a handed call, written to the client";

/// The id of the first ask the gateway writes itself.
const FIRST_ID: i64 = 1 << 41;

/// A client's asks in flight, written by the gateway.
pub(crate) struct ClientAsks {
    /// The client's pipe.
    reply: Arc<Out>,
    next: AtomicI64,
    /// Whether the client's service ended (see [`ClientAsks::mute`]).
    muted: AtomicBool,
    /// Where each ask's answer goes, by its id (as JSON).
    waiting: Mutex<HashMap<String, AnswerTo>>,
}

/// Where an ask's answer goes: its result as the client wrote it, or its
/// error.
type AnswerTo = oneshot::Sender<Reply>;

/// The error an ask's caller gets for an answer that cannot be read.
fn unreadable(why: &dyn std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(
        format!("the client's answer could not be read: {why}"),
        None,
    )
}

/// An ask as it goes to the client.
#[derive(Serialize)]
struct Request {
    jsonrpc: &'static str,
    id: i64,
    method: &'static str,
    /// The ask's parameters, with a progress token in `_meta`, as rmcp's
    /// peer gives every request it sends.
    params: serde_json::Value,
}

/// A withdrawal as it goes to the client.
#[derive(Serialize)]
struct Withdrawal<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: Withdrawn<'a>,
}

#[derive(Serialize)]
struct Withdrawn<'a> {
    #[serde(rename = "requestId")]
    request_id: &'a RequestId,
    reason: &'a str,
}

impl ClientAsks {
    /// The asks written to `reply`.
    pub(crate) fn new(reply: Arc<Out>) -> ClientAsks {
        ClientAsks {
            reply,
            next: AtomicI64::new(FIRST_ID),
            muted: AtomicBool::new(false),
            waiting: Mutex::new(HashMap::new()),
        }
    }

    /// The client's answer with `id`, its `result` or its `error` as the
    /// tap read them (see [`crate::express::Incoming`]): `true` when it
    /// answers one of these asks (then it goes to the ask's caller). An
    /// answer rmcp could not read (an `error` that is no error object, or
    /// neither member) ends the ask with an error saying so, as the screen
    /// mends it for rmcp (see [`super::screen`]): its call does not wait
    /// for ever.
    ///
    /// The result goes on as the client wrote it, for the ask's caller to
    /// read as the result it expects: not parsed first into rmcp's
    /// `ClientJsonRpcMessage`, whose untagged results are tried one by one.
    /// As rmcp reads an answer, a `result` makes it one whatever else the
    /// line has.
    pub(crate) fn answered(
        &self,
        id: &RawValue,
        result: Option<&RawValue>,
        error: Option<&RawValue>,
    ) -> bool {
        let key = key_of(id);
        if !self.waiting().contains_key(&key) {
            return false;
        }
        let answer = match (result, error) {
            (Some(result), _) => Ok(result.to_owned()),
            (None, Some(error)) => serde_json::from_str::<ErrorData>(error.get())
                .map_err(|error| unreadable(&error))
                .and_then(Err),
            (None, None) => Err(unreadable(&"it has neither a result nor an error")),
        };
        if let Some(waiting) = self.waiting().remove(&key) {
            // Its caller may have stopped waiting (withdrawn): nothing to do.
            let _ = waiting.send(answer);
        }
        true
    }

    /// The client's service ended: from now on nothing more is written
    /// to it (a withdrawal included: rmcp's loop, ended, writes none
    /// either), and a new ask fails as one whose client went away.
    pub(crate) fn mute(&self) {
        self.muted.store(true, Ordering::Release);
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, AnswerTo>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self, message: &impl Serialize) -> Result<(), String> {
        if self.muted.load(Ordering::Acquire) {
            return Err("the client's service has ended".into());
        }
        let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        self.reply.send(&line).map_err(|e| e.to_string())
    }
}

impl ClientLine for ClientAsks {
    fn elicit(&self, mut params: serde_json::Value) -> Result<(RequestId, Answer), String> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        // rmcp's peer sets one on every request, over any the request had:
        // here the ask's own id, which no token of rmcp's reaches.
        if let Some(params) = params.as_object_mut() {
            let meta = params
                .entry("_meta")
                .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("progressToken".into(), id.into());
            }
        }
        let (sender, answer) = oneshot::channel();
        self.waiting().insert(id.to_string(), sender);
        let request = Request {
            jsonrpc: "2.0",
            id,
            method: "elicitation/create",
            params,
        };
        if let Err(why) = self.write(&request) {
            self.waiting().remove(&id.to_string());
            return Err(why);
        }
        tracing::debug!(target: "askgate_gateway::express", id, "{WRITTEN}");
        Ok((NumberOrString::Number(id), answer))
    }

    fn withdraw(&self, id: RequestId, reason: &str) {
        // Every ask here is numbered (see `elicit`).
        let NumberOrString::Number(number) = &id else {
            return;
        };
        let key = number.to_string();
        // An answer that comes after all goes to rmcp, which drops it as
        // it drops any answer it was not waiting for.
        if self.waiting().remove(&key).is_none() {
            return;
        }
        let withdrawal = Withdrawal {
            jsonrpc: "2.0",
            method: "notifications/cancelled",
            params: Withdrawn {
                request_id: &id,
                reason,
            },
        };
        if let Err(why) = self.write(&withdrawal) {
            tracing::debug!(%why, "could not withdraw an ask from the client");
        }
    }
}
