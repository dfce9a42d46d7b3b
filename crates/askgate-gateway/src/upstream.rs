//! One upstream MCP server: its connection (a child process on stdio, or
//! Streamable HTTP), watched for the replay contract, and the client side
//! that relays the server's own asks to the person.

// Sampling and roots are deprecated in rmcp (SEP-2577); upstreams still
// send them, and the gateway relays them.
#![allow(deprecated)]

use std::sync::Arc;

use askgate_mcp::input;
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    CustomNotification, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, InputRequest, ListRootsResult, LoggingMessageNotificationParam,
    ProgressNotificationParam, ResourceUpdatedNotificationParam, ServerNotification,
    TaskStatusNotification, TaskStatusNotificationParams,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RoleClient,
    RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData};
use serde_json::Value as Json;

use super::config::UpstreamProtocol;
use super::downstream::{Downstream, List, Whom};
use super::express::Lane;
use super::relay::{self, Answer, Inflight, Route};
use super::url_mode;

mod carrying;
mod declared;
mod endpoint;
mod http;

pub(crate) use http::answer_not_arrived;

use askgate_mcp::replay::{Watch, Watched};
pub(crate) use declared::Declared;
use declared::{behind, per_request};
pub(crate) use endpoint::Endpoint;

/// How long an upstream's ask outside a call the gateway handles waits
/// for the client to be known.
const CLIENT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The gateway's client side towards one upstream.
#[derive(Debug, Clone)]
pub(crate) struct Relay {
    /// The upstream's name, as its asks are told: it may be renamed once
    /// it answers (see [`Upstream::rename`]).
    server: Arc<std::sync::RwLock<String>>,
    downstream: Downstream,
    inflight: Inflight,
    /// Its number, which its progress notifications are routed by.
    number: u64,
    /// What it declares to its server of the client behind it.
    declared: Declared,
}

impl Relay {
    /// The upstream's name now.
    pub(crate) fn server(&self) -> String {
        self.server.read().map_or_else(
            |poisoned| poisoned.into_inner().clone(),
            |name| name.clone(),
        )
    }
}

fn unavailable(server: &str, what: &str, why: &str) -> ErrorData {
    ErrorData::invalid_request(
        format!("{server} asked for {what}, and askgate could not get it: {why}"),
        None,
    )
}

impl Relay {
    /// Put the server's own `request` to the person behind the call that
    /// caused it (see the `relay` module), or — asked outside any call —
    /// to the connected client, when every connected client is one
    /// principal's (see the `downstream` module).
    async fn ask(&self, request: InputRequest, what: &str) -> Result<Answer, ErrorData> {
        if let Some(task) = crate::legacy_tasks::related_task(&request) {
            // Asked inside a 2025-11-25 task: of the client whose call
            // made it, whatever else is in flight.
            let answer = match self.downstream.tasks.client(self.number, &task) {
                Some(peer) => relay::ask_peer(&peer, &request).await.map(|value| Answer {
                    value,
                    client: Some(peer),
                }),
                None => Err(format!(
                    "it names task {task:?}, which no call through askgate made"
                )),
            };
            return answer.map_err(|why| unavailable(&self.server(), what, &why));
        }
        let answer = match self.inflight.route() {
            Route::Call(asks, idle) => {
                tracing::info!(server = %self.server(), what, "relaying the server's own ask to the person");
                // The call's server waits on the person, not idle.
                let _asking = idle.asking();
                relay::ask_through(&asks, request).await
            }
            Route::NoCall => match self.downstream.whom(CLIENT_WAIT).await {
                Whom::Client(peer, _busy) => {
                    // Perhaps for a call on the express lane: none of
                    // those is given up while the person is asked.
                    let _asking = self.inflight.outside().asking();
                    relay::ask_peer(&peer, &request)
                        .await
                        .map(|value| Answer {
                            value,
                            client: Some(peer),
                        })
                }
                Whom::Refused(why) => {
                    tracing::warn!(server = %self.server(), what, "refused an upstream's ask outside any call: {why}");
                    Err(why)
                }
            },
            Route::Ambiguous => Err(
                "calls of several people are in flight to this server, and its request does not say which one it is for"
                    .to_owned(),
            ),
        };
        answer.map_err(|why| unavailable(&self.server(), what, &why))
    }
}

impl Relay {
    /// The server's `list` changed: the gateway reads it again on the
    /// next request for it; the clients are told.
    pub(crate) async fn lists_changed(&self, list: List) {
        let hearers = self.downstream.classic();
        self.downstream.notices.list_changed(list, hearers).await;
    }
}

/// `asked`, unless the server withdraws its request first (its
/// `notifications/cancelled`): then the ask is given up — the client, when
/// asked, told so — and the server answered that it was withdrawn.
async fn withdrawable(
    asked: impl std::future::Future<Output = Result<Answer, ErrorData>>,
    cx: &RequestContext<RoleClient>,
) -> Result<Answer, ErrorData> {
    tokio::select! {
        answer = asked => answer,
        () = cx.ct.cancelled() => Err(ErrorData::invalid_request(
            "the request was withdrawn (cancelled) before the person answered",
            None,
        )),
    }
}

fn read<T: serde::de::DeserializeOwned>(
    server: &str,
    what: &str,
    answer: Json,
) -> Result<T, ErrorData> {
    serde_json::from_value(answer).map_err(|e| unavailable(server, what, &e.to_string()))
}

impl ClientHandler for Relay {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            self.declared.capabilities(),
            Implementation::new("askgate-gateway", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let what = "a person's answer";
        let url = url_mode::id_of(&request).map(str::to_owned);
        let mut request = ElicitRequest::new(request);
        // What the server's request said beside its params (the task it
        // is for, say) goes on to the client.
        request.extensions.insert(cx.meta.clone());
        let asked = self.ask(InputRequest::Elicitation(request), what);
        let answer = withdrawable(asked, &cx).await?;
        let result: ElicitResult = read(&self.server(), what, answer.value)?;
        if let (Some(id), Some(client)) = (url, answer.client)
            && result.action == ElicitationAction::Accept
        {
            // The person went to the link: the server will say when they
            // are done there.
            self.inflight.urls().went_to(&id, client);
        }
        Ok(result)
    }

    /// Pass `notifications/elicitation/complete` on to the classic client
    /// the URL-mode ask went to (see the `url_mode` module). A 2026-07-28
    /// client is not told: its revision has no such notification, and its
    /// retry gets the server's result once the ask is complete. Other
    /// custom notifications are not relayed.
    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _cx: NotificationContext<RoleClient>,
    ) {
        if crate::proxy::relay_task_status(&self.downstream.tasks, self.number, &notification).await
        {
            return;
        }
        let Some(id) = url_mode::completion(&notification) else {
            tracing::debug!(server = %self.server(), method = %notification.method, "a notification askgate does not relay");
            return;
        };
        let Some(client) = self.inflight.urls().completed(&id) else {
            tracing::debug!(server = %self.server(), elicitation = %id, "the completion of a URL-mode ask no classic client awaits");
            return;
        };
        if let Err(error) = url_mode::tell(&client, &id).await {
            tracing::debug!(server = %self.server(), elicitation = %id, %error, "could not relay the completion of a URL-mode ask");
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        cx: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let what = "a sampled message";
        let answer = withdrawable(self.ask(input::sample(params), what), &cx).await?;
        read(&self.server(), what, answer.value)
    }

    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.lists_changed(List::Tools).await;
    }

    async fn on_prompt_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.lists_changed(List::Prompts).await;
    }

    async fn on_resource_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.lists_changed(List::Resources).await;
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        self.inflight.progressed(&params.progress_token);
        self.downstream
            .notices
            .progressed(self.number, params)
            .await;
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        let hearers = self.downstream.classic();
        self.downstream.notices.logged(params, hearers).await;
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        self.downstream.notices.updated(params).await;
    }

    /// Pass a task's `notifications/tasks` on to the client whose call
    /// made it (see [`crate::tasks`]); of a task the gateway did not make,
    /// nobody is told.
    async fn on_task_status(
        &self,
        params: TaskStatusNotificationParams,
        _cx: NotificationContext<RoleClient>,
    ) {
        let id = params.task.task.task_id.clone();
        let Some(client) = self.downstream.tasks.client(self.number, &id) else {
            tracing::debug!(server = %self.server(), "the status of a task no client of askgate made");
            return;
        };
        let notification =
            ServerNotification::TaskStatusNotification(TaskStatusNotification::new(params));
        if let Err(error) = client.send_notification(notification).await {
            tracing::debug!(server = %self.server(), %error, "could not relay a task's status");
        }
    }

    async fn list_roots(
        &self,
        cx: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let what = "the client's roots";
        let answer = withdrawable(self.ask(input::list_roots(), what), &cx).await?;
        read(&self.server(), what, answer.value)
    }
}

/// `listing`, a list request to `upstream` (its tools, prompts, resources,
/// templates), within the upstream's `start_timeout`: what a server says
/// of itself is waited for as its handshake is. One that takes longer is
/// left out of that list, so that one hung server does not hang every
/// client's list.
///
/// # Errors
/// The upstream's, or [`rmcp::ServiceError::Timeout`].
pub(crate) async fn listed<T>(
    upstream: &Upstream,
    listing: impl std::future::Future<Output = Result<T, rmcp::ServiceError>>,
) -> Result<T, rmcp::ServiceError> {
    let within = upstream.list_timeout;
    tokio::time::timeout(within, listing)
        .await
        .unwrap_or(Err(rmcp::ServiceError::Timeout { timeout: within }))
}

/// A connected upstream.
pub(crate) struct Upstream {
    /// Its name, as rules, the ledger and the person know it.
    pub(crate) name: String,
    /// The prefix of its tools' and prompts' names downstream, if any
    /// (see [`crate::config::Namespace`]).
    pub(crate) prefix: Option<String>,
    /// The connection.
    pub(crate) service: RunningService<RoleClient, Relay>,
    /// What the replay contract sees of it.
    pub(crate) watcher: Watch,
    /// Its calls in flight, where its own asks go.
    pub(crate) inflight: Inflight,
    /// Its express lane, when it runs as a child process.
    pub(crate) lane: Option<Arc<Lane>>,
    /// How long a tool call may take (see [`crate::config::Timeouts`]).
    pub(crate) call_timeout: Option<std::time::Duration>,
    /// How long a list may take (its `start_timeout`).
    pub(crate) list_timeout: std::time::Duration,
    /// Over HTTP, the longest answer read (`[limits] answer_mib`): rmcp
    /// ends a request whose answer is longer as if its connection closed,
    /// so that is what its client is told may have happened.
    pub(crate) http_answer_size: Option<usize>,
}

/// Why a call ended when its upstream's connection closed before its
/// answer came, on either path (rmcp's own words are "Transport closed").
pub(crate) const CONNECTION_CLOSED: &str = "its connection closed";

/// Why a request was never sent: its upstream's connection had closed
/// before it (the server stopped, or was stopped).
pub(crate) const UNREACHABLE: &str = "its connection had closed, so nothing was sent";

impl Upstream {
    /// Whether its connection had closed: it takes no more requests. rmcp
    /// refuses one with the same error as a request whose answer never
    /// came, so a request to a server long gone is looked at first and told
    /// as never sent, not as one that may have run (one whose connection
    /// closes in between is told it may have run). A child's lane sees its
    /// output end a moment before rmcp does.
    pub(crate) fn has_gone(&self) -> bool {
        self.lane.as_ref().is_some_and(|lane| lane.has_ended())
            || self.service.peer().is_transport_closed()
    }

    /// Name it `name` from now on: the name rules and the ledger know it
    /// by, and its asks are told with.
    pub(crate) fn rename(&mut self, name: &str) {
        name.clone_into(&mut self.name);
        match self.service.service().server.write() {
            Ok(mut server) => name.clone_into(&mut server),
            Err(poisoned) => name.clone_into(&mut poisoned.into_inner()),
        }
    }

    /// What the server tells its clients in its handshake
    /// (`instructions`), if anything.
    pub(crate) fn instructions(&self) -> Option<String> {
        self.service
            .peer_info()
            .and_then(|info| info.instructions.clone())
            .filter(|text| !text.trim().is_empty())
    }

    /// Its relay's number, which its progress is routed by.
    pub(crate) fn relay_number(&self) -> u64 {
        self.service.service().number
    }

    /// Whether the server said it runs tools as tasks (the tasks
    /// extension).
    pub(crate) fn runs_tasks(&self) -> bool {
        self.service
            .peer_info()
            .is_some_and(|info| info.capabilities.supports_tasks())
    }

    /// Whether the server speaks a revision whose requests each say what
    /// their client has (2026-07-28 and later), rather than its handshake.
    pub(crate) fn asks_each_request(&self) -> bool {
        self.service
            .peer_info()
            .is_some_and(|info| per_request(&info.protocol_version))
    }

    /// What a request to this server declares of the client behind it,
    /// when it declares anything beyond the handshake: `client` is what
    /// that client declared (`None`: not known), `tasks` whether it
    /// follows tasks.
    ///
    /// - To a server that reads each request's capabilities
    ///   ([`Upstream::asks_each_request`]), the client's elicitation,
    ///   sampling and roots as it declared them — what askgate can
    ///   deliver of the server's asks, since it relays them to that client
    ///   — and the tasks extension when the client follows tasks and the
    ///   server runs them (see [`crate::tasks`]).
    /// - To a classic server, which was told once what the gateway's
    ///   clients have: nothing, unless the client follows tasks; then the
    ///   handshake's capabilities with the extension.
    pub(crate) fn declaring(
        &self,
        client: Option<&ClientCapabilities>,
        tasks: bool,
    ) -> Option<ClientCapabilities> {
        let tasks = tasks && self.runs_tasks();
        let handshake = || self.service.service().get_info().capabilities;
        let mut declared = if self.asks_each_request() {
            client.map_or_else(handshake, behind)
        } else if tasks {
            handshake()
        } else {
            return None;
        };
        if tasks {
            crate::tasks::add_extension(&mut declared);
        }
        Some(declared)
    }

    /// Whether the server said it has resources.
    pub(crate) fn declares_resources(&self) -> bool {
        self.service
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some())
    }

    /// The name the server gives itself in its handshake (`serverInfo`).
    pub(crate) fn reported_name(&self) -> Option<String> {
        self.service
            .peer_info()
            .and_then(|info| info.server_info.clone())
            .map(|server| server.name)
    }
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Connect to `endpoint` as `name`, relaying its asks to `downstream`.
///
/// # Errors
/// What failed, naming the upstream (never its environment).
pub(crate) async fn connect(
    name: &str,
    endpoint: &Endpoint,
    protocol: UpstreamProtocol,
    downstream: Downstream,
    declared: Declared,
    answer_size: usize,
) -> Result<Upstream, String> {
    let lifecycle = match protocol {
        UpstreamProtocol::Initialize => ClientLifecycleMode::Initialize,
        UpstreamProtocol::Discover => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    };
    let inflight = Inflight::default();
    let relay = Relay {
        server: Arc::new(std::sync::RwLock::new(name.to_owned())),
        number: downstream.notices.relay_number(),
        downstream,
        inflight: inflight.clone(),
        declared,
    };
    let watcher = Watch::default();
    #[cfg_attr(any(not(unix), askgate_portable), allow(unused_mut))]
    let mut lane: Option<Arc<Lane>> = None;
    let service = match endpoint {
        Endpoint::Command {
            program,
            args,
            env,
            inherit,
            cwd,
        } => {
            let mut command = tokio::process::Command::new(program);
            command.args(args);
            // Of askgate's environment, the allow-list and what the config
            // names (see `crate::environment`); its `env` table may still
            // set any variable on purpose.
            let left_out = inherit.apply(&mut command);
            if !left_out.is_empty() {
                tracing::info!(
                    upstream = name,
                    left_out = %left_out.join(", "),
                    "variables of askgate's environment not passed to the server (not in the \
                     allow-list; name them in its inherit_env, or --inherit-env)"
                );
            }
            for (key, value) in env {
                command.env(key, value);
            }
            if let Some(cwd) = cwd {
                command.current_dir(cwd);
            }
            #[cfg(all(unix, not(askgate_portable)))]
            let transport = {
                let (transport, child_lane) =
                    super::child::spawn(command, name, inflight.clone(), answer_size)
                        .map_err(|e| format!("upstream {name}: cannot start {program:?}: {e}"))?;
                child_lane.herald(relay.downstream.notices.clone(), relay.number);
                lane = Some(child_lane);
                transport
            };
            // No unix pipes: rmcp's own child transport (and its own
            // longest line), and no lane.
            #[cfg(any(not(unix), askgate_portable))]
            let _ = answer_size;
            #[cfg(any(not(unix), askgate_portable))]
            let transport = rmcp::transport::TokioChildProcess::new(command)
                .map_err(|e| format!("upstream {name}: cannot start {program:?}: {e}"))?;
            relay
                .serve_with_lifecycle(Watched::new(transport, watcher.clone()), lifecycle)
                .await
                .map_err(|e| format!("upstream {name}: the MCP handshake failed: {e}"))?
        }
        Endpoint::Http { url, headers } => {
            let client = carrying::Carrying::new()
                .map_err(|e| format!("upstream {name}: no HTTP client: {e}"))?;
            let transport = StreamableHttpClientTransport::with_client(
                client,
                http::config(name, url, headers, answer_size)?,
            );
            relay
                .serve_with_lifecycle(Watched::new(transport, watcher.clone()), lifecycle)
                .await
                .map_err(|e| {
                    let shown = http::shown_url(url);
                    // An HTTP client's error names the URL it asked: said
                    // here without its query or user part too.
                    let why = http::without_url(&e.to_string(), url, &shown);
                    format!("upstream {name} at {shown}: the MCP handshake failed: {why}")
                })?
        }
    };
    if let (Some(lane), Some(info)) = (&lane, service.peer_info()) {
        lane.negotiated(info.protocol_version.as_str());
    }
    if let Some(info) = service.peer_info()
        && per_request(&info.protocol_version)
        && let Some(filter) = crate::list_changes::filter(&info.capabilities)
    {
        let (peer, relay) = (service.peer().clone(), service.service().clone());
        tokio::spawn(crate::list_changes::listen(peer, relay, filter));
    }
    Ok(Upstream {
        name: name.to_owned(),
        prefix: None,
        service,
        watcher,
        inflight,
        lane,
        call_timeout: crate::config::Timeouts::default().call,
        list_timeout: crate::config::Timeouts::default().start,
        http_answer_size: matches!(endpoint, Endpoint::Http { .. }).then_some(answer_size),
    })
}
