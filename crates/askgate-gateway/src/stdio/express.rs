//! The client's side of the express lane: every line the client sends on
//! stdin is offered to it first; it takes a `tools/call` that needs no
//! person (see [`crate::express`]) and leaves everything else to rmcp.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value as Json;
use serde_json::value::RawValue;

use crate::express::lane::{OnLane, OnLanes};
use crate::express::{CallParams, Cancelled, Incoming, Initialize, Params, Pending, is_classic};
use crate::lines::Out;
use crate::proxy::Gateway;
use crate::proxy::pipeline::LaneCall;
use crate::relay::Idle;
use askgate_mcp::replay::MARKER_KEY;

/// The client's side of the lane: offered every line the client sends.
pub(crate) struct Express {
    gateway: Gateway,
    /// The client's pipe.
    reply: Arc<Out>,
    /// Whether the client asked for a classic revision.
    classic: bool,
    /// Whether the client declared the tasks extension.
    follows_tasks: bool,
    /// Whether its `initialize` went by (a second one is rmcp's to refuse,
    /// and changes nothing here).
    initialized: bool,
    /// Calls on the lanes by the client's request id.
    calls: OnLanes,
}

impl Express {
    /// The lane for the client writing to `reply`'s other end.
    pub(crate) fn new(gateway: Gateway, reply: Arc<Out>) -> Express {
        Express {
            gateway,
            reply,
            classic: false,
            follows_tasks: false,
            initialized: false,
            calls: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Offer a line the client sent: `true` when the lane took it.
    pub(crate) fn offer(&mut self, line: &[u8]) -> bool {
        let Ok(request) = serde_json::from_slice::<Incoming<'_>>(line) else {
            return false;
        };
        if !request.is_read_by_rmcp() {
            return false;
        }
        match (request.method.as_deref(), request.id) {
            (Some("initialize"), Some(_)) if !self.initialized => {
                let initialize = request
                    .params
                    .and_then(|p| serde_json::from_str::<Initialize<'_>>(p.get()).ok());
                // One rmcp will refuse (its params do not fit) is no
                // handshake: the next initialize is.
                let fits = request.params.is_some_and(|p| {
                    serde_json::from_str::<rmcp::model::InitializeRequestParams>(p.get()).is_ok()
                });
                if !fits {
                    return false;
                }
                self.initialized = true;
                self.classic = initialize
                    .as_ref()
                    .is_some_and(|i| is_classic(&i.protocol_version));
                self.follows_tasks = initialize.is_some_and(|i| i.follows_tasks());
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
        // A client that declares its capabilities per request (the tasks
        // extension, say): its call may become a task.
        let declares = params
            .meta
            .as_ref()
            .is_some_and(|meta| meta.client_capabilities.is_some());
        let Some(plan) = self
            .gateway
            .unattended(&params.name, params.arguments.unwrap_or_default())
        else {
            return false;
        };
        if (self.follows_tasks || declares) && self.gateway.runs_tasks(plan.index) {
            // The upstream may answer with a task: rmcp's, which follows it.
            return false;
        }
        // Open when planned; one that closes since fails the call (see
        // `Lane::send`).
        let Some(lane) = self.gateway.lane(plan.index) else {
            return false;
        };
        // Progress asked for: the upstream is sent a token of the lane's,
        // and what it says of it goes to the client under the client's.
        let progress = match params.meta.and_then(|meta| meta.progress_token) {
            None => None,
            Some(token) => match self.gateway.lane_progress(plan.index, token, self.writer()) {
                Some(routed) => Some(routed),
                None => return false,
            },
        };
        let Ok(LaneCall {
            life,
            ending,
            marker,
        }) = self.gateway.express_record(&plan)
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
        self.calls().insert(key.clone(), on_lane);
        let idle = Idle::new();
        // Logged under the lane's own target, wherever its code lives.
        tracing::debug!(target: "askgate_gateway::express", call = %ending.id(), server = %plan.server, tool = %plan.tool, "on the express lane");
        let pending = Pending {
            client_id: id.to_owned(),
            key,
            reply: Arc::clone(&self.reply),
            calls: Arc::clone(&self.calls),
            server: plan.server.clone(),
            tool: plan.tool.clone(),
            ending,
            life,
            progress: progress.map(|(routed, _)| routed),
            _in_flight: self.gateway.enter_call(),
            _watching: lane_token
                .as_deref()
                .map(|token| lane.watch_progress(token, &idle)),
            idle,
        };
        let marker = self.gateway.marks_calls().then_some(marker.as_str());
        let params = Params {
            name: &plan.tool,
            arguments: &plan.arguments,
            meta: meta(marker, lane_token.as_deref()),
        };
        lane.send(lane_id, &params, pending);
        true
    }

    /// A client's cancel: taken when it names a call on the lane.
    fn cancel(&mut self, params: &RawValue) -> bool {
        let Ok(cancelled) = serde_json::from_str::<Cancelled<'_>>(params.get()) else {
            return false;
        };
        let key = key_of(cancelled.request_id);
        let Some(on_lane) = self.calls().remove(&key) else {
            return false;
        };
        let server = self.gateway.upstream_name(on_lane.upstream);
        self.gateway.metrics().cancelled(&server);
        if let Some(lane) = self.gateway.lane(on_lane.upstream) {
            lane.cancel(on_lane.id, cancelled.reason);
        }
        true
    }

    /// Writes a line to the client's pipe (a notification of the lane's).
    fn writer(&self) -> crate::downstream::WriteLine {
        let reply = Arc::clone(&self.reply);
        Arc::new(move |line: Vec<u8>| {
            if let Err(error) = reply.send(&line) {
                tracing::debug!(%error, "the client went away before a progress notification");
            }
        })
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, OnLane>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The `_meta` of a call on the lane: the replay contract's `marker`, and
/// the lane's progress `token`, when there are any.
fn meta<'a>(
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
fn key_of(id: &RawValue) -> String {
    serde_json::from_str::<Json>(id.get()).map_or_else(|_| id.get().to_owned(), |v| v.to_string())
}
