//! A client's call taken onto the lane, and its cancel: the same for every
//! client's side (stdio's pipe, `--listen`'s POSTs). What differs is who
//! calls ([`Caller`]) and where the answer goes ([`ReplyTo`]).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use askgate_core::Risk;
use askgate_mcp::replay::MARKER_KEY;
use serde_json::Value as Json;
use serde_json::value::RawValue;

use super::lane::{Answering, OnLane, OnLanes};
use super::{CallParams, Cancelled, Params, Pending, ReplyTo};
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
    if !params.rest.is_empty() {
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
    let Ok(LaneCall {
        life,
        ending,
        marker,
    }) = gateway.express_record(&plan)
    else {
        return false;
    };
    let lane_token = progress.as_ref().map(|(_, token)| token.clone());
    let key = key_of(id);
    let lane_id = lane.next.fetch_add(1, Ordering::Relaxed);
    let on_lane = OnLane {
        upstream: plan.index,
        id: lane_id,
    };
    caller
        .calls
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key.clone(), on_lane);
    let idle = Idle::new();
    // Logged under the lane's own target, wherever its code lives.
    tracing::debug!(target: "askgate_gateway::express", call = %ending.id(), server = %plan.server, tool = %plan.tool, "on the express lane");
    let pending = Pending {
        answering: Answering::Client {
            id: id.to_owned(),
            key,
            calls: Arc::clone(caller.calls),
            reply,
        },
        server: plan.server.clone(),
        tool: plan.tool.clone(),
        ending,
        life,
        progress: progress.map(|(routed, _)| routed),
        _in_flight: gateway.enter_call(),
        _watching: lane_token
            .as_deref()
            .map(|token| lane.watch_progress(token, &idle)),
        idle,
    };
    let marker = gateway.marks_calls().then_some(marker.as_str());
    let params = Params {
        name: &plan.tool,
        arguments: &plan.arguments,
        meta: meta(marker, lane_token.as_deref()),
    };
    lane.send(lane_id, &params, pending);
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

/// The `_meta` of a call on the lane: the replay contract's `marker`, and
/// the lane's progress `token`, when there are any.
pub(crate) fn meta<'a>(
    marker: Option<&'a str>,
    token: Option<&'a str>,
) -> Option<HashMap<&'static str, &'a str>> {
    let mut meta = HashMap::new();
    if let Some(marker) = marker {
        meta.insert(MARKER_KEY, marker);
    }
    if let Some(token) = token {
        meta.insert("progressToken", token);
    }
    (!meta.is_empty()).then_some(meta)
}

/// A request id as a key: its JSON, normalized.
pub(crate) fn key_of(id: &RawValue) -> String {
    serde_json::from_str::<Json>(id.get()).map_or_else(|_| id.get().to_owned(), |v| v.to_string())
}
