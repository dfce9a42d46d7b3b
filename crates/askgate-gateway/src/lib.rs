//! askgate-gateway: put MCP servers behind typed, durable, audited human
//! confirmation — as a library; the `askgate gateway` command is its CLI.
//!
//! The gateway speaks MCP to the client (stdio, or Streamable HTTP with
//! [`config::Listen`]) and to each upstream server (a child process on
//! stdio, or Streamable HTTP). Every tool call goes risk (the rules) ->
//! confirmation (askgate-mcp: whatever the client can show, or the inbox)
//! -> audit -> ledger -> upstream -> ledger -> result.
//!
//! [`start`] opens the store, binds the inbox page and connects the
//! upstreams; [`Started::serve`] serves the client until it goes away.

// Without unix pipes there is no express lane, and what serves it is
// unused.
#![cfg_attr(any(not(unix), askgate_portable), allow(dead_code))]

mod background;
#[cfg(all(unix, not(askgate_portable)))]
mod child;
pub mod config;
mod downstream;
mod dry_run;
mod environment;
mod error;
#[cfg_attr(any(not(unix), askgate_portable), path = "express/off.rs")]
mod express;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod health;
mod holds;
mod ids;
pub mod keys;
mod legacy_tasks;
mod lifecycle;
#[cfg(all(unix, not(askgate_portable)))]
mod lines;
mod list_changes;
mod listen;
mod metrics;
mod prompts_resources;
mod proxy;
mod questions;
mod record;
mod relay;
mod rules;
mod stdio;
mod stopping;
mod tasks;
mod upstream;
pub mod upstream_stderr;
mod upstreams;
mod url_mode;

use askgate_core::Risk;
use askgate_mcp::InboxLinks;
use askgate_store::Store;

pub use config::Config;
pub use dry_run::{DryRun, Listed, Now, RefusedTool};
pub use error::{Collision, Error, KeyError, Misuse, ServeError};

use std::sync::Arc;

use downstream::Downstream;
use proxy::{Gateway, Settings};
use upstream::Endpoint;
use upstreams::Upstreams;

/// The inbox page, bound and ready to serve.
struct InboxPage {
    page: askgate_inbox::Inbox,
    listener: tokio::net::TcpListener,
}

/// A gateway started: its store open, its upstreams connected, its inbox
/// page bound (when asked for). Serve it with [`Started::serve`].
pub struct Started {
    config: Config,
    gateway: Gateway,
    page: Option<InboxPage>,
    /// Where people are sent to answer (see `inbox_base`).
    inbox_base: Option<String>,
    /// The deployment's key file, beside which the operator's token is
    /// kept when the config gives none.
    key_file: std::path::PathBuf,
}

/// Open the store at `store_url` and connect every upstream of `config`
/// (one that fails is left out, unless none is left); with `serve_inbox`,
/// bind the inbox page first, so links name the address it is served at.
///
/// # Errors
/// The store cannot be opened, the key cannot be read or made, the inbox
/// cannot be set up, no upstream can be started, or the threshold in the
/// environment is not a risk level.
pub async fn start(config: Config, store_url: &str, serve_inbox: bool) -> Result<Started, Error> {
    // The one clock the rounds, the ledger, the inbox and the webhooks read.
    let clock: std::sync::Arc<dyn askgate_mcp::Clock> =
        std::sync::Arc::new(askgate_mcp::SystemClock);
    let store = Store::open(store_url).await?;
    let key_file = keys::key_path(store_url);
    let keys = keys::Keys::load_or_create(&key_file)?;
    keys::bind_to_store(&store, &keys.current, &key_file).await?;
    let listener = if serve_inbox {
        bind_inbox(&config).await
    } else {
        None
    };
    let links = keys.links();
    let base = inbox_base(&config, listener.as_ref(), serve_inbox, &links).await;
    let inbox = match &base {
        Some(base) => InboxLinks::new(base)
            .map_err(Misuse::InboxAddress)?
            .with_links(links.clone(), LINK_TTL),
        None => InboxLinks::without_page(),
    };
    let page = match listener {
        Some(listener) => {
            let people =
                askgate_inbox::people(config.inbox.token.as_deref(), &config.people, &key_file)?;
            let base = base.as_deref().unwrap_or(DEFAULT_INBOX_BASE);
            let mut page = askgate_inbox::Inbox::new(store.clone(), people, links, base)?
                .with_clock(std::sync::Arc::clone(&clock))
                .with_most_live_pages(config.limits.live_pages)
                .with_argument_seal(keys.argument_seal());
            if let Some(oidc) = &config.inbox.oidc {
                page = page.with_oidc(oidc.clone());
            }
            Some(InboxPage { page, listener })
        }
        None => None,
    };
    let rounds = keys
        .rounds(store)
        .with_clock(clock)
        .with_inbox(inbox)
        .with_confirmations(config.confirmations.clone());
    let threshold = config.auto_approve_from_env()?;
    let downstream = Downstream::default();
    // They start once the client is known (see `Started::run`).
    let upstreams = start_upstreams(&config, &downstream);
    let gateway = Gateway::new(
        Settings {
            rounds,
            judge: Box::new(config.rules.clone()),
            approvals: config.approvals.clone(),
            threshold,
            allow_raise: config.allow_session_raise,
            owner: owner(&config),
            replay: config.replay,
            metrics: metrics::Metrics::default(),
            offer_ask_tool: config.offer_ask_tool,
            intake: config.intake.clone(),
            // As long as a sealed state lives (the rounds' default).
            hold_for: std::time::Duration::from_secs(60 * 60),
            most_held: holds::Most::of(&config.limits),
            durable_reads: config.durable_reads,
            express_lane: config.express_lane,
            retry_window: config.retry_window,
            background: background::Background::default(),
            separator: config.separator.clone(),
            ledger: keys.ledger_digest(),
        },
        std::sync::Arc::clone(&upstreams),
        downstream,
    );
    tokio::spawn(tell_of_arrivals(gateway.clone(), upstreams));
    Ok(Started {
        config,
        gateway,
        page,
        inbox_base: base,
        key_file,
    })
}

/// The inbox page's listener, when its address can be bound (else the
/// page is not served, and the CLI answers).
async fn bind_inbox(config: &Config) -> Option<tokio::net::TcpListener> {
    match askgate_inbox::bind(config.inbox.listen).await {
        Ok(listener) => Some(listener),
        Err(error) => {
            tracing::warn!("{error}; the inbox page is not served (answer with `askgate asks`)");
            None
        }
    }
}

/// How long the start waits for the upstreams' first tries before it
/// serves the client anyway (a desktop client gives up its first probe
/// after about 2.5 s).
pub(crate) const FIRST_WAIT: std::time::Duration = std::time::Duration::from_millis(1500);

/// Start every upstream of `config` at once, each in a task of its own
/// that keeps trying until it connects (see the `upstreams` module), its
/// asks outside a call going to `downstream`.
fn start_upstreams(config: &Config, downstream: &Downstream) -> Arc<Upstreams> {
    let upstreams = Arc::new(Upstreams::new(
        config.upstreams.iter().map(|u| u.name.clone()).collect(),
    ));
    // Without a config the one server is named after its handshake.
    let rename = !config.names_given && config.upstreams.len() == 1;
    for (index, configured) in config.upstreams.iter().enumerate() {
        let endpoint = Endpoint::from(&configured.transport);
        let (name, protocol) = (configured.name.clone(), configured.protocol);
        let timeouts = configured.timeouts;
        let answer_size = config.limits.answer_size;
        let prefix = config.prefix_of(index);
        let downstream = downstream.clone();
        let waiting = Arc::clone(&upstreams);
        let connect = move || {
            let (name, endpoint, downstream, prefix, upstreams) = (
                name.clone(),
                endpoint.clone(),
                downstream.clone(),
                prefix.clone(),
                Arc::clone(&waiting),
            );
            async move {
                let declared = upstreams.declared().await;
                let mut upstream = upstream::connect(
                    &name,
                    &endpoint,
                    protocol,
                    downstream,
                    declared,
                    answer_size,
                )
                .await?;
                if rename {
                    name_after_the_server(&mut upstream);
                }
                upstream.prefix = prefix;
                upstream.call_timeout = timeouts.call;
                upstream.list_timeout = timeouts.start;
                if let Some(lane) = &upstream.lane {
                    lane.limit(timeouts.call);
                }
                Ok(upstream)
            }
        };
        tokio::spawn(upstreams::start(
            Arc::clone(&upstreams),
            index,
            configured.name.clone(),
            timeouts.start,
            connect,
        ));
    }
    upstreams
}

/// As upstreams join, list their tools and tell the clients the lists
/// changed; until every one has.
async fn tell_of_arrivals(gateway: Gateway, upstreams: Arc<Upstreams>) {
    let mut seen = 0;
    while seen < upstreams.len() {
        seen = upstreams.more_than(seen).await;
        gateway.arrived().await;
    }
}

/// Without a config (and `--name`), the one server is named after its own
/// `serverInfo.name` — `@modelcontextprotocol/server-filesystem` is
/// `server-filesystem`, not `index` after its script — when that name
/// gives a usable one and is not an SDK's default (rmcp's servers say
/// `rmcp` unless their author names them); else it keeps the name its
/// command gave. The ledger knows it by the command's name (stable
/// across restarts, however soon the server answers).
fn name_after_the_server(upstream: &mut upstream::Upstream) {
    const SDK_DEFAULTS: [&str; 1] = ["rmcp"];
    let Some(name) = upstream
        .reported_name()
        .and_then(|reported| config::usable_name(reported.rsplit('/').next().unwrap_or_default()))
        .filter(|name| !SDK_DEFAULTS.contains(&name.as_str()))
    else {
        return;
    };
    tracing::debug!(from = %upstream.name, to = %name, "named after the server's serverInfo");
    upstream.rename(&name);
}

/// This gateway's name in the ledger: its upstreams' names, stable across
/// restarts (calls a crash left unanswered are found by it).
fn owner(config: &Config) -> String {
    let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
    // This process's own: a second session or replica over the store is
    // another owner (see the store's ledger owners).
    let process = ids::random("p").unwrap_or_else(|_| format!("p_{}", std::process::id()));
    format!("gateway:{}:{process}", names.join(","))
}

/// How long a link sent to a client in URL mode stays good.
const LINK_TTL: std::time::Duration = std::time::Duration::from_secs(60 * 60);

impl Started {
    /// The config it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The auto-approve threshold in force.
    pub fn threshold(&self) -> Option<Risk> {
        self.gateway.threshold()
    }

    /// Serve the client — on stdio, or over Streamable HTTP when the config
    /// says `[listen]` — until it goes away; then keep what the answers did
    /// not wait for, and close the store.
    ///
    /// # Errors
    /// The client's handshake failed, the HTTP listener failed, or the
    /// store could not report the calls a crash left.
    pub async fn serve(self) -> Result<(), Error> {
        self.run(Client::<tokio::io::Empty, tokio::io::Sink>::Configured)
            .await
    }

    /// Serve one client over `reader` and `writer` — any byte stream, such
    /// as a [`tokio::io::duplex`] pair in a test — through rmcp (no
    /// express lane), until it goes away; then, as [`Started::serve`],
    /// keep what the answers did not wait for and close the store.
    ///
    /// # Errors
    /// The client's handshake failed, or the store could not report the
    /// calls a crash left.
    pub async fn serve_over<R, W>(self, reader: R, writer: W) -> Result<(), Error>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        self.run(Client::Over(reader, writer)).await
    }

    /// Make ready, serve `client`, and finish: the life of every started
    /// gateway.
    async fn run<R, W>(self, client: Client<R, W>) -> Result<(), Error>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let Started {
            config,
            gateway,
            page,
            inbox_base,
            key_file,
        } = self;
        let _background = ready(&config, &gateway, page, inbox_base.as_deref()).await?;
        let stop = stop_when_signalled(gateway.clone(), config.stop_grace);
        let served = match (client, &config.listen) {
            (Client::Over(reader, writer), _) => {
                tokio::select! {
                    served = stdio::serve_over(gateway.for_session(), reader, writer) => served,
                    () = stop => Ok(()),
                }
            }
            (Client::Configured, Some(listen)) => {
                // Clients come and go: the upstreams start now, told what
                // any client may have. Not one starting: nothing to serve.
                let upstreams = gateway.upstreams();
                upstreams.release(upstream::Declared::ANY_CLIENT);
                upstreams.settled(FIRST_WAIT, true).await;
                if upstreams.tried_all() && upstreams.connected().next().is_none() {
                    finish(&gateway).await;
                    return Err(Error::NoUpstream);
                }
                let operator = std::sync::Arc::new(askgate_inbox::people(
                    config.inbox.token.as_deref(),
                    &config.people,
                    &key_file,
                )?);
                listen::serve(gateway.clone(), listen, &config, operator, stop).await
            }
            (Client::Configured, None) => {
                tokio::select! {
                    served = stdio::serve(
                        gateway.for_session(),
                        config.express_lane,
                        config.limits.request_size(),
                    ) => served,
                    () = stop => Ok(()),
                }
            }
        };
        finish(&gateway).await;
        Ok(served?)
    }
}

/// Whom a started gateway serves.
enum Client<R, W> {
    /// As the config says: stdio (with the express lane), or `[listen]`.
    Configured,
    /// One client over this byte stream, through rmcp.
    Over(R, W),
}

/// Make a started gateway ready for its first client: the inbox page
/// served (when bound), the webhook's posts started (kept while the
/// returned guard lives), the calls a crash left reported, the tools
/// known.
async fn ready(
    config: &Config,
    gateway: &Gateway,
    page: Option<InboxPage>,
    base: Option<&str>,
) -> Result<Vec<AbortOnDrop>, Error> {
    match (page, base) {
        (Some(InboxPage { page, listener }), _) => {
            let base = base.unwrap_or(DEFAULT_INBOX_BASE);
            askgate_inbox::say::say(&format!(
                "askgate gateway: asks a client cannot show wait in the inbox at {base} (or: askgate asks list)"
            ));
            let app = page
                .router()
                .merge(health::beside_inbox(gateway, &page, &config.inbox));
            tokio::spawn(askgate_inbox::serve(app, listener, config.limits.serving));
        }
        (None, Some(base)) => askgate_inbox::say::say(&format!(
            "askgate gateway: asks a client cannot show wait in the inbox at {base} (or: askgate asks list)"
        )),
        (None, None) => askgate_inbox::say::say(&format!(
            "askgate gateway: no inbox page is served here (its address {} is taken by something else); \
             asks a client cannot show wait in the store: answer them with askgate asks, or run askgate inbox \
             with another [inbox] listen",
            config.inbox.listen
        )),
    }
    // Posts as asks are parked and settle, until the gateway stops.
    let notifier = match &config.notify {
        Some(webhook) => {
            let store = gateway.store().clone();
            let links = match base {
                Some(base) => InboxLinks::new(base).map_err(Misuse::InboxAddress)?,
                None => InboxLinks::without_page(),
            };
            let notifier = askgate_inbox::notify::Notifier::new(store, webhook.clone(), links)?
                .with_clock(std::sync::Arc::clone(gateway.clock()))
                .on_failed_post(gateway.metrics().webhook_failed());
            Some(AbortOnDrop(notifier.listen()))
        }
        None => None,
    };
    // Overdue asks become expired, in every process over the store.
    let sweeper = AbortOnDrop(tokio::spawn(askgate_inbox::expiry::sweep(
        gateway.store().clone(),
        std::sync::Arc::clone(gateway.clock()),
    )));
    gateway.recover().await?;
    // Alive while it beats; the calls of a process whose beat lapsed are
    // reported as they are found.
    let beating = AbortOnDrop(tokio::spawn({
        let gateway = gateway.clone();
        async move { gateway.keep_beating().await }
    }));
    // Know the tools before the first call: the express lane takes a call
    // only of a tool listed. Two upstreams' tools under one name would
    // leave a client unable to tell them apart: that stops the start.
    let catalogue = gateway.refresh_tools().await;
    if let Some(collision) = catalogue.collisions.into_iter().next() {
        return Err(collision.into());
    }
    for tool in &catalogue.tools {
        if let Some(warning) = tool.warning() {
            tracing::warn!(tool = %tool.name, server = %tool.server, "{warning}");
        }
    }
    Ok(notifier.into_iter().chain([sweeper, beating]).collect())
}

/// Where people are sent to answer: the config's `[inbox] base_url`; else
/// the address the inbox page is bound at; else — its address taken — the
/// inbox serving there, when it is this deployment's (`askgate inbox` over
/// the same store: it says the same key fingerprint); else nowhere: no
/// link is handed out that could lead to another store's inbox, and asks
/// are answered with `askgate asks`.
async fn inbox_base(
    config: &Config,
    listener: Option<&tokio::net::TcpListener>,
    serve_inbox: bool,
    links: &askgate_core::LinkSigner,
) -> Option<String> {
    if let Some(base) = &config.inbox.base_url {
        return Some(base.clone());
    }
    if let Some(bound) = listener.and_then(|l| l.local_addr().ok()) {
        return Some(format!("http://{bound}/"));
    }
    let addr = config.inbox.listen;
    if !serve_inbox {
        // `askgate tools`: nobody is sent anywhere.
        return Some(format!("http://{addr}/"));
    }
    if askgate_inbox::deployment::is_ours(addr, links).await {
        tracing::info!(%addr, "the inbox's address is this deployment's own askgate inbox: asks link there");
        return Some(format!("http://{addr}/"));
    }
    None
}

/// What the inbox page calls itself when nothing else is known (never
/// handed out: without a base no page is served).
const DEFAULT_INBOX_BASE: &str = "http://127.0.0.1:7878/";

/// Keep what the answers did not wait for, and close the store: a clean
/// stop loses nothing.
async fn finish(gateway: &Gateway) {
    // Calls the client's end (or the grace's) cancelled unwind: each
    // tells its upstream and queues its record before it is counted out.
    gateway.stopping().begin();
    gateway.abandon_express();
    if tokio::time::timeout(stopping::CLOSING, gateway.stopping().quiet())
        .await
        .is_err()
    {
        tracing::warn!(
            in_flight = gateway.stopping().in_flight(),
            "calls did not unwind in time; their ledger rows say sent"
        );
    }
    gateway.settle_writes().await;
    gateway.release().await;
    gateway.close_upstreams().await;
    gateway.store().close().await;
}

/// Wait for SIGINT or SIGTERM, then stop taking calls and give those in
/// flight `grace` (`stop_grace`) to finish (see [`stopping`]).
async fn stop_when_signalled(gateway: Gateway, grace: std::time::Duration) {
    let signal = stopping::signalled().await;
    let stopping = gateway.stopping();
    stopping.begin();
    tracing::info!(
        signal,
        in_flight = stopping.in_flight(),
        grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
        "stopping: no new calls; those in flight may finish"
    );
    if tokio::time::timeout(grace, stopping.quiet()).await.is_err() {
        tracing::warn!(
            in_flight = stopping.in_flight(),
            "calls still in flight after the grace are cancelled"
        );
    }
}

/// Stops a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
