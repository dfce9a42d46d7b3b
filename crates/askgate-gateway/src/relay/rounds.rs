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
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    InputRequiredResult, InputResponses, ReadResourceRequestParams, ReadResourceResponse,
    ResultType,
};
use rmcp::service::{Peer, RoleClient};

use super::inflight::{Asks, answers};

/// A request a 2026-07-28 server may answer with input requests, sent
/// again with their answers.
pub(crate) trait Rounded: Clone + Send + 'static {
    /// What the server answers.
    type Response: From<InputRequiredResult> + Send + 'static;
    /// What it is, for errors (no argument values).
    fn what(&self) -> String;
    /// Send it once.
    fn send(
        self,
        peer: &Peer<RoleClient>,
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

impl Rounded for GetPromptRequestParams {
    type Response = GetPromptResponse;

    fn what(&self) -> String {
        format!("get prompt {}", self.name)
    }

    async fn send(self, peer: &Peer<RoleClient>) -> Result<GetPromptResponse, ServiceError> {
        peer.get_prompt_once(self).await
    }

    fn input_required(response: &GetPromptResponse) -> Option<&InputRequiredResult> {
        match response {
            GetPromptResponse::InputRequired(needed) => Some(needed),
            _ => None,
        }
    }

    fn answered(&mut self, responses: InputResponses, state: Option<String>) {
        self.input_responses = Some(responses);
        self.request_state = state;
    }

    fn complete(mut response: GetPromptResponse) -> GetPromptResponse {
        if let GetPromptResponse::Complete(result) = &mut response {
            result.result_type.get_or_insert(ResultType::COMPLETE);
        }
        response
    }
}

impl Rounded for ReadResourceRequestParams {
    type Response = ReadResourceResponse;

    fn what(&self) -> String {
        // The URI may carry the person's data: not named.
        "read a resource".to_owned()
    }

    async fn send(self, peer: &Peer<RoleClient>) -> Result<ReadResourceResponse, ServiceError> {
        peer.read_resource_once(self).await
    }

    fn input_required(response: &ReadResourceResponse) -> Option<&InputRequiredResult> {
        match response {
            ReadResourceResponse::InputRequired(needed) => Some(needed),
            _ => None,
        }
    }

    fn answered(&mut self, responses: InputResponses, state: Option<String>) {
        self.input_responses = Some(responses);
        self.request_state = state;
    }

    fn complete(mut response: ReadResourceResponse) -> ReadResourceResponse {
        if let ReadResourceResponse::Complete(result) = &mut response {
            result.result_type.get_or_insert(ResultType::COMPLETE);
        }
        response
    }
}

impl Rounded for CallToolRequestParams {
    type Response = CallToolResponse;

    fn what(&self) -> String {
        format!("run {}", self.name)
    }

    async fn send(self, peer: &Peer<RoleClient>) -> Result<CallToolResponse, ServiceError> {
        peer.call_tool_once(self).await
    }

    fn input_required(response: &CallToolResponse) -> Option<&InputRequiredResult> {
        match response {
            CallToolResponse::InputRequired(needed) => Some(needed),
            _ => None,
        }
    }

    fn answered(&mut self, responses: InputResponses, state: Option<String>) {
        self.input_responses = Some(responses);
        self.request_state = state;
    }

    fn complete(response: CallToolResponse) -> CallToolResponse {
        match response {
            CallToolResponse::Complete(result) => super::complete(result),
            other => other,
        }
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
}

/// Send `request` through `peer` until its server answers: first with
/// the answers to `needed` (a round carried over a restart), then each
/// round's input requests answered through `asks`. `before_send` readies
/// every send (a tool call's fresh marker).
pub(crate) async fn until_complete<Q: Rounded>(
    peer: &Peer<RoleClient>,
    mut request: Q,
    asks: &Asks,
    mut needed: Option<InputRequiredResult>,
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
        let response = match request.clone().send(peer).await {
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
