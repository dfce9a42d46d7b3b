//! A client's call taken onto the lane, and its cancel: the same for every
//! client's side (stdio's pipe, `--listen`'s POSTs). What differs is who
//! calls ([`Caller`]) and where the answer goes ([`ReplyTo`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use askgate_core::Risk;
use serde_json::Value as Json;
use serde_json::value::RawValue;

use super::lane::{Answering, OnLane, OnLanes};
use super::{CallParams, Cancelled, Meta, Params, Pending, ReplyTo};
use crate::downstream::WriteLine;
use crate::proxy::Gateway;
use crate::proxy::pipeline::LaneCall;
use crate::relay::Idle;

/// Who makes a call, as the lane needs to know.
pub(crate) struct Caller<'a> {
    /// The principal it is for.
    pub(crate) principal: &'a str,
    /// The auto-approve threshold of its request.
    pub(crate) threshold: Option<Risk>,
    /// Whether the client declared the tasks extension (a call to an
    /// upstream that runs tasks may become one: rmcp's).
    pub(crate) follows_tasks: bool,
    /// The client's calls on the lanes, by its request id.
    pub(crate) calls: &'a OnLanes,
    /// Where the upstream's progress goes under the client's token; none
    /// when this client's side cannot send it (a call asking for progress
    /// is then rmcp's).
    pub(crate) progress: Option<&'a dyn Fn() -> WriteLine>,
}

/// Take the client's call `id` with `params` onto the lane, if nobody
/// need be asked about it, its answer going to `reply`: `false` when it is
/// rmcp's (then `reply` is dropped unused).
pub(crate) fn take(
    gateway: &Gateway,
    caller: Caller<'_>,
    id: &RawValue,
    params: &RawValue,
    reply: ReplyTo,
) -> bool {
    let Ok(params) = serde_json::from_str::<CallParams>(params.get()) else {
        return false;
    };
    if params.others {
        // requestState, inputResponses, task...: rmcp's.
        return false;
    }
    // A request that names its own revision: rmcp checks it.
    if params
        .meta
        .as_ref()
        .is_some_and(|meta| meta.protocol_version.is_some())
    {
        return false;
    }
    // A client that declares its capabilities per request (the tasks
    // extension, say): its call may become a task.
    let declares = params
        .meta
        .as_ref()
        .is_some_and(|meta| meta.client_capabilities.is_some());
    let Some(plan) = gateway.unattended(
        &params.name,
        params.arguments.unwrap_or_default(),
        caller.principal,
        caller.threshold,
    ) else {
        return false;
    };
    if (caller.follows_tasks || declares) && gateway.runs_tasks(plan.index) {
        // The upstream may answer with a task: rmcp's, which follows it.
        return false;
    }
    // Open when planned; one that closes since fails the call (see
    // `Lane::send`).
    let Some(lane) = gateway.lane(plan.index) else {
        return false;
    };
    // Progress asked for: the upstream is sent a token of the lane's, and
    // what it says of it goes to the client under the client's.
    let progress = match params.meta.and_then(|meta| meta.progress_token) {
        None => None,
        Some(token) => match caller
            .progress
            .and_then(|write| gateway.lane_progress(plan.index, token, write()))
        {
            Some(routed) => Some(routed),
            None => return false,
        },
    };
    let index = plan.index;
    let Ok(LaneCall {
        life,
        ending,
        marker,
        tool,
        arguments,
    }) = gateway.express_record(plan)
    else {
        return false;
    };
    let lane_token = progress.as_ref().map(|(_, token)| token.clone());
    let key = key_of(id);
    let lane_id = lane.next.fetch_add(1, Ordering::Relaxed);
    let on_lane = OnLane {
        upstream: index,
        id: lane_id,
    };
    caller
        .calls
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key.clone(), on_lane);
    // Logged under the lane's own target, wherever its code lives.
    tracing::debug!(target: "askgate_gateway::express", call = %ending.id(), server = %ending.server(), %tool, "on the express lane");
    let request = super::lane::request(
        lane_id,
        &Params {
            name: &tool,
            arguments: &arguments,
            meta: Meta {
                marker: gateway.marks_calls().then_some(marker.as_str()),
                progress_token: lane_token.as_deref(),
            },
        },
    );
    let idle = Idle::new();
    let pending = Pending {
        answering: Answering::Client {
            id: id.to_owned(),
            key,
            calls: Arc::clone(caller.calls),
            reply,
        },
        tool,
        ending,
        life,
        progress: progress.map(|(routed, _)| routed),
        _in_flight: gateway.enter_call(),
        _watching: lane_token
            .as_deref()
            .map(|token| lane.watch_progress(token, &idle)),
        idle,
    };
    lane.send(lane_id, request, pending);
    true
}

/// A client's `notifications/cancelled` with `params`: `true` when it
/// names one of `calls` on the lanes (then it is forgotten, and its
/// upstream told).
pub(crate) fn cancel(gateway: &Gateway, calls: &OnLanes, params: &RawValue) -> bool {
    let Ok(cancelled) = serde_json::from_str::<Cancelled<'_>>(params.get()) else {
        return false;
    };
    let key = key_of(cancelled.request_id);
    let on_lane = calls
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&key);
    let Some(on_lane) = on_lane else {
        return false;
    };
    // Counted only when the cancel ended it, as through rmcp.
    if gateway
        .lane(on_lane.upstream)
        .is_some_and(|lane| lane.cancel(on_lane.id))
    {
        let server = gateway.upstream_name(on_lane.upstream);
        gateway.metrics().cancelled(&server);
    }
    true
}

/// A request id as a key: its JSON, normalized (as serde_json writes it,
/// so that `"\u0061"` and `"a"` are one id). Most ids are written so
/// already and are taken as they are, without reading them.
pub(crate) fn key_of(id: &RawValue) -> String {
    let text = id.get();
    if is_normal(text) {
        return text.to_owned();
    }
    serde_json::from_str::<Json>(text).map_or_else(|_| text.to_owned(), |v| v.to_string())
}

/// Whether `id` is written as serde_json writes its value: a string
/// without escapes (nor anything that would need one), or an integer of
/// at most 18 digits without a sign or a leading zero.
fn is_normal(id: &str) -> bool {
    match id.as_bytes() {
        [b'"', inner @ .., b'"'] => !inner.iter().any(|b| matches!(b, b'"' | b'\\' | 0..=0x1f)),
        [b'0'] => true,
        digits @ [b'1'..=b'9', ..] => digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::value::RawValue;

    #[test]
    fn request_ids_written_differently_are_one_key() {
        let key =
            |text: &str| super::key_of(&RawValue::from_string(text.to_owned()).expect("json"));
        // Written as serde_json writes them: taken as they are.
        for id in [
            "0",
            "7",
            "123456789012345678",
            r#""a""#,
            r#""é-1""#,
            r#""""#,
        ] {
            assert_eq!(key(id), id);
        }
        // Written otherwise: the same key as their normal form.
        assert_eq!(key(r#""\u0061""#), key(r#""a""#));
        assert_eq!(key(r#""a\/b""#), key(r#""a/b""#));
        assert_eq!(key("1.0"), "1.0");
        assert_eq!(key("-5"), "-5");
        // Not an id the lane could normalize: kept as written.
        assert_eq!(key("[1]"), "[1]");
    }
}
