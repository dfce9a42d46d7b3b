//! The one loop that sends a request upstream until its server
//! completes: each `InputRequiredResult` (2026-07-28) answered through the
//! asks of the call behind it, and the request sent again with the
//! answers and the server's `requestState` — at most
//! [`askgate_mcp::client::MAX_ROUNDS`] rounds. Tools, prompts and
//! resources all go through it.

use std::future::Future;

use askgate_mcp::client::MAX_ROUNDS;
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CancelledNotificationParam,
    ClientCapabilities, ClientRequest, GetPromptRequest, GetPromptRequestParams, GetPromptResponse,
    InputRequiredResult, InputResponses, ReadResourceRequest, ReadResourceRequestParams,
    ReadResourceResponse, ResultType, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};

use crate::downstream::Progress;

use super::CancelOnDrop;
use super::inflight::{Asks, Entered, answers};

/// A request a 2026-07-28 server may answer with input requests, sent
/// again with their answers.
pub(crate) trait Rounded: Clone + Send + 'static {
    /// What the server answers.
    type Response: From<InputRequiredResult> + Send + 'static;
    /// What it is, for errors (no argument values).
    fn what(&self) -> String;
    /// Send it once, with what goes with it.
    fn send(
        self,
        peer: &Peer<RoleClient>,
        sending: &Sending<'_>,
    ) -> impl Future<Output = Result<Self::Response, ServiceError>> + Send;
    /// The input requests, when the server needs input first.
    fn input_required(response: &Self::Response) -> Option<&InputRequiredResult>;
    /// This request again, with the answers and the server's state.
    fn answered(&mut self, responses: InputResponses, state: Option<String>);
    /// The server's result as a client of any revision takes it: with
    /// `resultType`, which a 2026-07-28 client needs (rmcp strips it for
    /// older ones).
    fn complete(response: Self::Response) -> Self::Response;
}

/// `Rounded` for the requests of one kind each: what it is for errors,
/// how it is sent once, and how its completed response is taken.
macro_rules! rounded {
    ($(
        $params:ty => $response:ident {
            what($this:pat_param): $what:expr,
            send: $send:ident,
            complete($complete:pat_param): $completed:expr $(,)?
        }
    )*) => {$(
        impl Rounded for $params {
            type Response = $response;

            fn what(&self) -> String {
                let $this = self;
                $what
            }

            async fn send(
                self,
                peer: &Peer<RoleClient>,
                sending: &Sending<'_>,
            ) -> Result<$response, ServiceError> {
                $send(peer, self, sending).await
            }

            fn input_required(response: &$response) -> Option<&InputRequiredResult> {
                match response {
                    $response::InputRequired(needed) => Some(needed),
                    _ => None,
                }
            }

            fn answered(&mut self, responses: InputResponses, state: Option<String>) {
                self.input_responses = Some(responses);
                self.request_state = state;
            }

            fn complete($complete: $response) -> $response {
                $completed
            }
        }
    )*};
}

rounded! {
    GetPromptRequestParams => GetPromptResponse {
        what(request): format!("get prompt {}", request.name),
        send: get_prompt,
        complete(mut response): {
            if let GetPromptResponse::Complete(result) = &mut response {
                result.result_type.get_or_insert(ResultType::COMPLETE);
            }
            response
        },
    }
    ReadResourceRequestParams => ReadResourceResponse {
        // The URI may carry the person's data: not named.
        what(_): "read a resource".to_owned(),
        send: read_resource,
        complete(mut response): {
            if let ReadResourceResponse::Complete(result) = &mut response {
                result.result_type.get_or_insert(ResultType::COMPLETE);
            }
            response
        },
    }
    CallToolRequestParams => CallToolResponse {
        what(request): format!("run {}", request.name),
        send: call_tool,
        complete(response): match response {
            CallToolResponse::Complete(result) => super::complete(result),
            other => other,
        },
    }
}

/// How a request sent by [`until_complete`] ended.
#[derive(Debug)]
pub(crate) enum Sent<R> {
    /// Its server answered with something other than input requests.
    Answered(R),
    /// Sending it failed (the transport, the server's error, a refusal of
    /// the replay contract's transport).
    Failed(ServiceError),
    /// An input its server asked for could not be had; why, in words for
    /// the server and the client (no values).
    NotGiven(String),
    /// Its server kept asking for input, past [`MAX_ROUNDS`] rounds.
    KeptAsking,
    /// Its client cancelled it before its server answered (set by the
    /// caller, which stopped waiting: the request upstream was cancelled).
    Cancelled,
    /// Its server's connection had closed before the first send (see
    /// [`crate::upstream::Upstream::has_gone`]): it never left the gateway.
    Unreachable,
}

/// Send `request` through `peer` until its server answers: first with
/// the answers to `needed` (a round carried over a restart), then each
/// round's input requests answered through `asks`; each send with
/// `sending`. `before_send` readies every send (a tool call's fresh
/// marker).
pub(crate) async fn until_complete<Q: Rounded>(
    peer: &Peer<RoleClient>,
    mut request: Q,
    asks: &Asks,
    mut needed: Option<InputRequiredResult>,
    sending: Sending<'_>,
    mut before_send: impl FnMut(&mut Q) -> Result<(), ServiceError> + Send,
) -> Sent<Q::Response> {
    let mut rounds = 0;
    loop {
        if let Some(needed) = needed.take() {
            match answers(&needed, asks).await {
                Ok(responses) => request.answered(responses, needed.request_state),
                Err(why) => return Sent::NotGiven(why),
            }
        }
        if let Err(error) = before_send(&mut request) {
            return Sent::Failed(error);
        }
        let response = match request.clone().send(peer, &sending).await {
            Ok(response) => response,
            Err(error) => return Sent::Failed(error),
        };
        let Some(asked) = Q::input_required(&response) else {
            return Sent::Answered(response);
        };
        rounds += 1;
        if rounds > MAX_ROUNDS {
            return Sent::KeptAsking;
        }
        needed = Some(asked.clone());
    }
}

/// What goes with each send of a request upstream.
#[derive(Default)]
pub(crate) struct Sending<'a> {
    /// Where its progress goes, when the client asked for it.
    pub(crate) progress: Option<Tracked<'a>>,
    /// What the request declares of the client behind it, beyond the
    /// gateway's handshake (see [`crate::upstream::Upstream::declaring`]).
    pub(crate) declared: Option<ClientCapabilities>,
    /// How long its server may go idle (see [`super::idle`]): past it,
    /// the request is cancelled there and fails with
    /// [`ServiceError::Timeout`].
    pub(crate) limit: Option<Limit<'a>>,
    /// A 2025-11-25 client's `task` of its call (see
    /// [`crate::legacy_tasks`]): sent with it, raw, since rmcp's model has
    /// no place for it.
    pub(crate) legacy_task: Option<serde_json::Value>,
}

/// How long a request's server may go idle: without answering, telling of
/// progress, or asking the person something.
pub(crate) struct Limit<'a> {
    /// The upstream's `call_timeout`.
    pub(crate) timeout: std::time::Duration,
    /// The request in flight, whose idle clock counts.
    pub(crate) entered: &'a Entered,
}

/// Where an upstream's progress on a request goes: the client's route,
/// and the upstream (by its relay's number, as its notifications say).
pub(crate) struct Tracked<'a> {
    /// The client's route.
    pub(crate) progress: &'a Progress,
    /// The upstream's relay.
    pub(crate) upstream: u64,
}

async fn get_prompt(
    peer: &Peer<RoleClient>,
    params: GetPromptRequestParams,
    sending: &Sending<'_>,
) -> Result<GetPromptResponse, ServiceError> {
    if sending.is_plain() {
        return within(sending.limit.as_ref(), peer.get_prompt_once(params)).await;
    }
    let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
    match sent(peer, request, sending).await? {
        ServerResult::GetPromptResult(result) => Ok(GetPromptResponse::Complete(result)),
        ServerResult::InputRequiredResult(result) => Ok(GetPromptResponse::InputRequired(result)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A resource read; rmcp's own, with its cache of the server's cacheable
/// reads, when nothing goes with it.
async fn read_resource(
    peer: &Peer<RoleClient>,
    params: ReadResourceRequestParams,
    sending: &Sending<'_>,
) -> Result<ReadResourceResponse, ServiceError> {
    if sending.is_plain() {
        // rmcp's own send, with its cache of the server's cacheable reads.
        return within(sending.limit.as_ref(), peer.read_resource_once(params)).await;
    }
    let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
    match sent(peer, request, sending).await? {
        ServerResult::ReadResourceResult(result) => Ok(ReadResourceResponse::Complete(result)),
        ServerResult::InputRequiredResult(result) => {
            Ok(ReadResourceResponse::InputRequired(result))
        }
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A tool call, its progress (when the client asked for it) routed to the
/// client under the token rmcp gives the request upstream.
async fn call_tool(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    sending: &Sending<'_>,
) -> Result<CallToolResponse, ServiceError> {
    if let Some(task) = &sending.legacy_task {
        return legacy_task_call(peer, params, task, sending).await;
    }
    if sending.is_plain() && sending.limit.is_none() {
        return peer.call_tool_once(params).await;
    }
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    match sent(peer, request, sending).await? {
        ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
        ServerResult::InputRequiredResult(result) => Ok(CallToolResponse::InputRequired(result)),
        ServerResult::CreateTaskResult(result) => Ok(CallToolResponse::Task(result)),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// A 2025-11-25 task-augmented call: `params` with `task`, sent as written;
/// the server's `CreateTaskResult` read into rmcp's model (the gateway's
/// calls keep tasks so), or its plain result when it ran the call at once.
async fn legacy_task_call(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    task: &serde_json::Value,
    sending: &Sending<'_>,
) -> Result<CallToolResponse, ServiceError> {
    let mut raw = serde_json::to_value(&params).map_err(|_| ServiceError::UnexpectedResponse)?;
    if let Some(object) = raw.as_object_mut() {
        object.insert("task".to_owned(), task.clone());
    }
    let request =
        ClientRequest::CustomRequest(rmcp::model::CustomRequest::new("tools/call", Some(raw)));
    match sent(peer, request, sending).await? {
        ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
        ServerResult::CustomResult(custom) => crate::legacy_tasks::created(&custom.0)
            .map(CallToolResponse::Task)
            .ok_or(ServiceError::UnexpectedResponse),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

impl Sending<'_> {
    /// Whether nothing goes with the request but, perhaps, a time limit:
    /// rmcp sends it as it would.
    fn is_plain(&self) -> bool {
        self.progress.is_none() && self.declared.is_none()
    }
}

/// Why a request its caller gave up is cancelled, as its server is told
/// (the text rmcp gives for the requests it sends itself; the express lane
/// gives it too).
pub(crate) const ABANDONED: &str = "request abandoned by the caller";

/// `sending`, given up once its server has gone idle past `limit`
/// (dropped: rmcp tells the server it is cancelled).
async fn within<T>(
    limit: Option<&Limit<'_>>,
    sending: impl std::future::Future<Output = Result<T, ServiceError>>,
) -> Result<T, ServiceError> {
    match limit {
        None => sending.await,
        Some(limit) => {
            let idle = limit.entered.idle();
            idle.touch();
            tokio::select! {
                sent = sending => sent,
                () = idle.idle_for(limit.timeout) => Err(ServiceError::Timeout { timeout: limit.timeout }),
            }
        }
    }
}

/// Send `request` with what goes with it: the client capabilities it
/// declares (rmcp puts these after its own, so they stand), its progress
/// routed to the client until its answer is in.
async fn sent(
    peer: &Peer<RoleClient>,
    request: ClientRequest,
    sending: &Sending<'_>,
) -> Result<ServerResult, ServiceError> {
    // No time limit of rmcp's: its clock would count while the server's
    // asks wait on a person. The request's own idle clock counts instead.
    let mut options = PeerRequestOptions::no_options();
    if let Some(declared) = &sending.declared {
        options = options.with_meta(crate::tasks::declaring(declared.clone()));
    }
    let handle = peer.send_request_with_option(request, options).await?;
    let routed = sending.progress.as_ref().map(|tracked| {
        tracked
            .progress
            .route(tracked.upstream, &handle.progress_token)
    });
    // Given up by the caller (the client cancelled, the gateway stops):
    // the upstream is told, as rmcp does for the requests it sends itself.
    let (upstream, id) = (peer.clone(), handle.id.clone());
    let mut abandoned = CancelOnDrop::new(async move {
        let reason = Some(ABANDONED.to_owned());
        let _ = upstream
            .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
            .await;
    });
    let result = match &sending.limit {
        None => handle.await_response().await,
        Some(limit) => {
            let idle = limit.entered.idle();
            idle.touch();
            // A server that tells of progress is working: the wait starts
            // again with each notification.
            let _watching = limit
                .entered
                .inflight()
                .watch_progress(&handle.progress_token, idle);
            tokio::select! {
                answered = handle.await_response() => answered,
                () = idle.idle_for(limit.timeout) => Err(ServiceError::Timeout { timeout: limit.timeout }),
            }
        }
    };
    // Given up past its limit, the server is told to cancel it, as rmcp
    // tells it when it gives up.
    if !matches!(result, Err(ServiceError::Timeout { .. })) {
        abandoned.disarm();
    }
    if let Some(routed) = &routed {
        routed.settle().await;
    }
    result
}
