//! An MCP client and server in one process, and the small pieces every
//! in-process test writes: a tool server from a closure, a call's params,
//! a result's text.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::model::{CallToolRequest, ClientRequest};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ProtocolVersion,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, Peer, PeerRequestOptions, RequestContext, RequestHandle,
    RoleClient, RoleServer, RunningService,
};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceExt};
use serde_json::Value as Json;

/// The answer of a tool call.
pub type CallFuture = Pin<Box<dyn Future<Output = Result<CallToolResponse, ErrorData>> + Send>>;

type Call =
    Arc<dyn Fn(CallToolRequestParams, RequestContext<RoleServer>) -> CallFuture + Send + Sync>;

/// A server with tools, each call answered by one closure.
#[derive(Clone)]
pub struct Tools {
    call: Call,
    name: Option<String>,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools").finish_non_exhaustive()
    }
}

impl Tools {
    /// A server whose every `tools/call` is `call(params, cx)`.
    pub fn new<F, Fut>(call: F) -> Tools
    where
        F: Fn(CallToolRequestParams, RequestContext<RoleServer>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResponse, ErrorData>> + Send + 'static,
    {
        Tools {
            call: Arc::new(move |params, cx| Box::pin(call(params, cx))),
            name: None,
        }
    }

    /// Named `name` in its handshake.
    #[must_use]
    pub fn named(mut self, name: &str) -> Tools {
        self.name = Some(name.to_owned());
        self
    }
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        match &self.name {
            Some(name) => config.with_server_info(Implementation::new(name, "1.0")),
            None => config,
        }
    }

    fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_ {
        (self.call)(params, cx)
    }
}

/// Connect `client` to `server` through an in-process pipe, the server
/// serving on a task of its own for as long as the client stays.
pub async fn connect<S: ServerHandler, C: ClientHandler>(
    server: S,
    client: C,
    lifecycle: ClientLifecycleMode,
) -> RunningService<RoleClient, C> {
    let (server_io, client_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    client
        .serve_with_lifecycle(client_io, lifecycle)
        .await
        .expect("the client connects to the server")
}

/// Discovery of a 2026-07-28 server (no `initialize`).
pub fn discover() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

/// A `tools/call` of `name` with `args` (a JSON object).
pub fn call(name: &str, args: Json) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = args.as_object().cloned();
    params
}

/// The text blocks of a result, one per line.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of a complete response (the test fails on any other).
pub fn complete_text(response: CallToolResponse) -> String {
    match response {
        CallToolResponse::Complete(result) => text(&result),
        other => panic!("expected a complete result, got {other:?}"),
    }
}

/// Send a `tools/call` of `params` through `peer` so that it can be
/// cancelled (the Stop button): its handle.
pub async fn send_call(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
) -> RequestHandle<RoleClient> {
    peer.send_request_with_option(
        ClientRequest::CallToolRequest(CallToolRequest::new(params)),
        PeerRequestOptions::no_options(),
    )
    .await
    .expect("the call is sent")
}

/// Once `person` is shown the call's ask, cancel the call (`reason` says
/// why), and wait for the ask to be withdrawn from the client.
pub async fn cancel_once_asked(
    person: &crate::Person,
    call: RequestHandle<RoleClient>,
    reason: Option<String>,
) {
    person.asked.at_least("the person is asked", 1).await;
    call.cancel(reason).await.expect("the cancel is sent");
    person
        .withdrawn
        .at_least("the ask is withdrawn from the client", 1)
        .await;
}

/// The JSON-RPC message in the body of an answer over Streamable HTTP: the
/// body itself, or the first event of its stream that holds one.
///
/// # Panics
/// When the body holds none (the test fails, naming the body).
pub fn message_in(body: &str) -> Json {
    serde_json::from_str(body)
        .ok()
        .or_else(|| {
            body.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .find_map(|data| serde_json::from_str(data.trim()).ok())
        })
        .unwrap_or_else(|| panic!("no JSON-RPC message in {body:?}"))
}
