//! The gateway as an MCP server: what each request of the client does.
//! A `tools/call` goes through [`Gateway::call`] (see the `call`
//! module); prompts and resources are relayed (see
//! [`crate::prompts_resources`]), prompts under their names downstream
//! (see the `catalogue` module); the tasks an upstream makes are followed
//! there (see the `tasks` module); the rest passes through with the
//! upstream's semantics (see the `passing` module).

// Logging and resources/subscribe are deprecated in rmcp (SEP-2577, and
// subscriptions/listen on 2026-07-28); clients and servers still use them,
// and the gateway relays them.
#![allow(deprecated)]

use std::collections::HashMap;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CustomRequest, CustomResult, DiscoverResult, GetPromptRequestParams,
    GetPromptResponse, GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    Resource, ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter,
    Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};

use super::Gateway;
use super::catalogue::listed;
use crate::questions;
use crate::upstream::Declared;

/// Who a request is for: its authenticated principal, else the anonymous
/// one (stdio).
pub(crate) fn principal_of(cx: &RequestContext<RoleServer>) -> String {
    askgate_mcp::Principal::of(cx)
        .map_or_else(|| askgate_mcp::Principal::ANONYMOUS.to_owned(), |p| p.0)
}

/// askgate's own line of the instructions a client is given.
const OWN_INSTRUCTIONS: &str = "askgate: the tools of the servers behind it, each call confirmed by a person when its risk calls for it.";

impl Gateway {
    /// The instructions a client is given: askgate's own line, then each
    /// upstream's own instructions under its name (what a client of the
    /// server directly would have read).
    fn instructions(&self) -> String {
        let mut text = OWN_INSTRUCTIONS.to_owned();
        for upstream in self.inner.upstreams.connected() {
            if let Some(theirs) = upstream.instructions() {
                text.push_str(&format!("\n\n{}: {}", upstream.name, theirs.trim()));
            }
        }
        text
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(self.capabilities())
            // The gateway is the server the client talks to: it names itself,
            // so a client labels its calls "askgate", not the SDK's name.
            .with_server_info(Implementation::new("askgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions())
    }

    /// The client's handshake: the upstreams start now, told the
    /// client's sampling and roots (see the `upstreams` module), and the
    /// answer waits a moment for them, so that it says what they can do.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self
            .handshaken
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            // What was negotiated stands: a second handshake would change
            // the revision every later message is read in.
            let negotiated = cx
                .peer
                .peer_info()
                .map_or_else(|| "?".to_owned(), |info| info.protocol_version.to_string());
            return Err(ErrorData::invalid_request(
                format!(
                    "this session's handshake is done (protocol {negotiated}); a second \
                     initialize is refused, and the session goes on as negotiated"
                ),
                None,
            ));
        }
        cx.peer.set_peer_info(request.clone());
        if !self.wakes(&cx) {
            self.client_known(Declared::of(&request.capabilities)).await;
        }
        let negotiated = self.negotiate_initialize(&request);
        // Kept once the handshake is answered (for stdio's tap, which hands
        // calls to the handler only once the client says it is initialized).
        if let (Some(slot), Ok(_)) = (&self.client, &negotiated) {
            let _ = slot.set(cx.peer.clone());
        }
        negotiated
    }

    /// A 2026-07-28 client's discovery: as `initialize`, its capabilities
    /// those its request declares.
    async fn discover(&self, cx: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        let declared = cx
            .client_capabilities()
            .map_or(Declared::ANY_CLIENT, |capabilities| {
                Declared::of(&capabilities)
            });
        self.client_known(declared).await;
        let mut info = self.get_info();
        // 2025-11-25's tasks are not this revision's.
        if let Some(experimental) = info.capabilities.experimental.as_mut() {
            experimental.remove(crate::legacy_tasks::CAPABILITY);
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            info,
        ))
    }

    /// The client is connected: from now on an upstream's asks outside a
    /// call the gateway handles — during a call on the express lane, say —
    /// go to it.
    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        let principal = cx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<askgate_mcp::Principal>())
            .map_or(askgate_mcp::Principal::ANONYMOUS, |p| p.0.as_str())
            .to_owned();
        self.note_client(&principal, cx.peer.clone());
        if let Some(id) = Self::http_session(&cx.extensions) {
            self.inner.downstream.link(id, &self.session());
        }
        if cx.peer.peer_info().is_some() {
            self.inner.downstream.notices.initialized(&cx.peer).await;
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.note_client(&principal_of(&cx), cx.peer.clone());
        let caller_confirm = self.inner.settings.rounds.confirmations().caller_confirm;
        let catalogue = self.refresh_tools().await;
        let tools = catalogue
            .tools
            .into_iter()
            .map(|found| listed(found.name, &found.tool, found.risk, caller_confirm))
            .chain(self.offers_ask_tool().then(questions::ask_tool).flatten())
            .map(|tool| self.with_execution(tool))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// The tool as listed, for rmcp's checks of a 2026-07-28 call's
    /// `Mcp-Param-*` headers against the schema's `x-mcp-header`s.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let found = self.listed_tool(name)?;
        let mut tool = Tool::clone(&found.tool);
        tool.name = name.to_owned().into();
        Some(tool)
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call_tool_for(params, cx).await
    }

    /// A request rmcp's model does not know: 2025-11-25's tasks (see the
    /// `legacy_tasks` module).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        cx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        self.legacy_request(request, cx).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(
            self.refresh_prompts().await,
        ))
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let found = match self.prompt(&params.name).await {
            Some(found) => Some(found),
            // One server: its own answer for a name it did not list, as a
            // client of it directly would get.
            None if self.inner.upstreams.len() == 1 => Some((0, params.name.clone())),
            None => None,
        };
        let (index, name) = found.ok_or_else(|| {
            ErrorData::invalid_params(
                format!(
                    "unknown prompt {:?}: no server behind askgate lists it (prompts/list \
                     names every prompt)",
                    params.name
                ),
                None,
            )
        })?;
        let upstream = self.upstream(index).await?;
        let rounds = &self.inner.settings.rounds;
        self.inner
            .reads
            .prompt(upstream, &name, &params, rounds, &cx)
            .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(
            self.list_resources_now().await,
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            self.resource_templates().await,
        ))
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some(index) = self.resource_owner(&params.uri).await else {
            return Err(ErrorData::resource_not_found(
                format!(
                    "unknown resource {:?}: no server behind askgate lists it or a template \
                     it matches",
                    params.uri
                ),
                None,
            ));
        };
        let upstream = self.upstream(index).await?;
        let rounds = &self.inner.settings.rounds;
        self.inner
            .reads
            .resource(upstream, &params, rounds, &cx)
            .await
    }

    async fn set_level(
        &self,
        params: SetLevelRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The upstreams' log messages go to this client from now on.
        self.pin(&cx);
        Gateway::set_level(self, params).await
    }

    async fn complete(
        &self,
        params: CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Gateway::complete(self, params).await
    }

    async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.note_client(&principal_of(&cx), cx.peer.clone());
        Gateway::subscribe(self, params, &cx).await
    }

    async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Gateway::unsubscribe(self, params).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(self.accepted_filter(requested))
    }

    async fn listen(&self, cx: SubscriptionContext) -> Result<(), ErrorData> {
        Gateway::listen(self, cx).await
    }

    async fn get_task(
        &self,
        params: GetTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Gateway::get_task(self, params, &principal_of(&cx)).await
    }

    async fn update_task(
        &self,
        params: UpdateTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Gateway::update_task(self, params, &principal_of(&cx)).await
    }

    async fn cancel_task(
        &self,
        params: CancelTaskParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Gateway::cancel_task(self, params, &principal_of(&cx)).await
    }
}

impl Gateway {
    /// Every upstream's resources, as they list them (which upstream a URI
    /// is noted, for reads).
    pub(crate) async fn list_resources_now(&self) -> Vec<Resource> {
        let mut resources = Vec::new();
        let mut map = HashMap::new();
        for (index, upstream) in self.inner.upstreams.iter() {
            if !upstream.declares_resources() {
                continue;
            }
            match crate::upstream::listed(upstream, upstream.service.list_all_resources()).await {
                Ok(listed) => {
                    for resource in listed {
                        map.entry(resource.uri.clone()).or_insert(index);
                        resources.push(resource);
                    }
                }
                Err(error) => tracing::debug!(upstream = %upstream.name, %error, "no resources"),
            }
        }
        *self.inner.resources.write().await = map;
        resources
    }
}

impl Gateway {
    /// `tools/call` of `params`, for the client of `cx`.
    ///
    /// # Errors
    /// An unknown tool, a gateway that is stopping, and each call's own.
    pub(crate) async fn call_tool_for(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let principal = principal_of(&cx);
        self.note_client(&principal, cx.peer.clone());
        if Self::told_later(&cx) {
            self.pin(&cx);
        }
        let Some(_in_flight) = self.enter_call() else {
            return Err(crate::stopping::refused(&params.name));
        };
        if params.name == askgate_core::ask_tool::NAME && self.offers_ask_tool() {
            return self.ask_tool(&params, &cx, &principal).await;
        }
        let Some(found) = self.tool(&params.name).await else {
            let said = self.unlisted(
                &format!("unknown tool {:?}", params.name),
                Some("(tools/list names every tool)"),
            );
            return Err(ErrorData::invalid_params(said, None));
        };
        let target = self.target(found, params.arguments.clone().unwrap_or_default());
        self.call(target, &params, &cx, &principal).await
    }
}
