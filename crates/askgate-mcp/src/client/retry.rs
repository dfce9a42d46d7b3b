//! The multi round-trip retry loop (2026-07-28): a `tools/call`,
//! `prompts/get` or `resources/read` answered with `InputRequiredResult`
//! is retried with the answers to its `inputRequests` and its
//! `requestState` echoed byte for byte, until the server completes.
//!
//! rmcp 3.11 drives this loop itself in `RunningService::call_tool`,
//! `get_prompt` and `read_resource` (`src/service/client.rs`): each input
//! request goes to the local handler's `create_elicitation`,
//! `create_message` or `list_roots` (all requests of a round at once), the
//! retry carries `inputResponses` only when there were requests and
//! `requestState` only when the server sent one, every retry is a new
//! JSON-RPC request (a new id), a result without `resultType` counts as
//! complete, and a result with neither requests nor state is refused as
//! unexpected. These helpers run it with askgate's round cap; past the cap
//! the error is `ServiceError::InputRequiredRoundsExceeded`, which says how
//! many rounds went by. A `tools/call` that turns into a task (the tasks
//! extension) is `ServiceError::UnexpectedResponse`: this client does not
//! declare tasks, so a server may not answer with one.

use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, GetPromptResult,
    ReadResourceRequestParams, ReadResourceResult,
};
use rmcp::service::{RoleClient, RunningService, Service, ServiceError};

/// How many `input_required` rounds one request may take before the
/// client gives up (the spec's suggested cap, rmcp's default).
pub const MAX_ROUNDS: usize = rmcp::model::DEFAULT_MRTR_MAX_ROUNDS;

/// The requests a server may answer with input requests, each sent
/// through rmcp's retry loop with askgate's round cap.
macro_rules! answering {
    ($($(#[$doc:meta])* $name:ident($params:ty) -> $result:ty = $method:ident;)*) => {$(
        $(#[$doc])*
        pub async fn $name<S: Service<RoleClient>>(
            client: &RunningService<RoleClient, S>,
            params: $params,
        ) -> Result<$result, ServiceError> {
            client.$method(params, MAX_ROUNDS).await
        }
    )*};
}

answering! {
    /// Call a tool, answering every round of input requests through the
    /// client's handler (for an [`AskgateClient`](super::AskgateClient), its
    /// answerer).
    ///
    /// # Errors
    /// `ServiceError::InputRequiredRoundsExceeded` after [`MAX_ROUNDS`] rounds
    /// without a result; a transport, protocol or handler error as rmcp
    /// reports it.
    call_tool_answering(CallToolRequestParams) -> CallToolResult = call_tool_with_mrtr_max_rounds;

    /// Get a prompt, answering every round of input requests.
    ///
    /// # Errors
    /// As [`call_tool_answering`].
    get_prompt_answering(GetPromptRequestParams) -> GetPromptResult = get_prompt_with_mrtr_max_rounds;

    /// Read a resource, answering every round of input requests.
    ///
    /// # Errors
    /// As [`call_tool_answering`].
    read_resource_answering(ReadResourceRequestParams) -> ReadResourceResult
        = read_resource_with_mrtr_max_rounds;
}
