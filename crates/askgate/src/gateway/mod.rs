//! `askgate gateway`: put MCP servers behind typed, durable, audited human
//! confirmation.
//!
//! The gateway speaks MCP to the client (stdio) and to each upstream server
//! (a child process on stdio, or Streamable HTTP). Every tool call goes
//! risk (the rules) -> confirmation (askgate-mcp: whatever the client can
//! show, or the inbox) -> audit -> ledger -> upstream -> ledger -> result.

pub(crate) mod background;
pub(crate) mod child;
pub(crate) mod config;
pub(crate) mod downstream;
pub(crate) mod express;
pub(crate) mod holds;
pub(crate) mod listen;
pub(crate) mod metrics;
pub(crate) mod proxy;
pub(crate) mod questions;
pub(crate) mod reads;
pub(crate) mod rules;
pub(crate) mod stdio;
pub(crate) mod upcall;
pub(crate) mod upstream;
pub(crate) mod url_mode;
pub(crate) mod watch;
pub(crate) mod wire;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use askgate_core::Risk;
use askgate_mcp::{Inbox, Rounds};
use askgate_store::Store;
use clap::Args;
use rmcp::ServiceExt;

use config::Config;
use downstream::Downstream;
use proxy::{Gateway, Settings};
use upstream::Endpoint;

/// `askgate gateway [--config FILE] [-- <command...>]`.
#[derive(Debug, Args)]
pub(crate) struct GatewayArgs {
    #[command(flatten)]
    setup: Setup,
    /// Log format on stderr: `human` or `json` (stdout is the MCP channel).
    #[arg(long, default_value = "human")]
    log_format: LogFormat,
}

/// `askgate tools [--config FILE] [-- <command...>]`: the operator's dry
/// run.
#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    #[command(flatten)]
    setup: Setup,
    /// One JSON object per tool instead of a table.
    #[arg(long)]
    json: bool,
}

/// What both commands are given.
#[derive(Debug, Args)]
struct Setup {
    /// The configuration file (TOML): upstreams, risk rules, threshold,
    /// store, inbox. Without it: the command after `--`, default policy.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The store (`sqlite://PATH` or `postgres://...`), over the config's.
    #[arg(long)]
    store: Option<String>,
    /// Serve clients over Streamable HTTP at this address (over the
    /// config's `[listen]`), instead of stdio.
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// The auto-approve threshold (a risk level), over the config's;
    /// `ASKGATE_AUTO_APPROVE_RISK` may lower it further.
    #[arg(long)]
    auto_approve: Option<Risk>,
    /// The stdio MCP server to wrap (without `--config`), after `--`.
    #[arg(last = true)]
    command: Vec<String>,
}

impl Setup {
    /// The configuration: the file's, or the default around the command.
    fn config(&self) -> Result<Config, String> {
        let mut config = match (&self.config, self.command.is_empty()) {
            (Some(path), true) => Config::load(path).map_err(|e| e.to_string())?,
            (Some(_), false) => {
                return Err("give either --config FILE or a command after --, not both".into());
            }
            (None, false) => {
                Config::for_command(self.command.clone()).map_err(|e| e.to_string())?
            }
            (None, true) => {
                return Err(
                    "nothing to put behind askgate: give --config FILE or a command after -- \
                     (askgate gateway -- npx -y @modelcontextprotocol/server-everything)"
                        .into(),
                );
            }
        };
        if let Some(risk) = self.auto_approve {
            config.auto_approve = Some(risk);
        }
        if let Some(addr) = self.listen {
            if !addr.ip().is_loopback() && config.principals.is_empty() {
                return Err(format!(
                    "--listen {addr} is not a loopback address: configure [[principals]] with tokens first"
                ));
            }
            config.listen = Some(config::Listen { addr });
        }
        Ok(config)
    }
}

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Lines for people.
    Human,
    /// One JSON object per line.
    Json,
}

/// Logs to stderr, filtered by `ASKGATE_LOG` (default `info`). They carry
/// ids, names, risks and decisions — never arguments, answers or tokens.
pub(crate) fn init_logs(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("ASKGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Run the gateway until the client goes away.
pub(crate) fn run(args: GatewayArgs) -> ExitCode {
    init_logs(args.log_format);
    // Multi-threaded, measured against a current-thread runtime on the
    // gateway benchmark (README, "The gateway"): at one call in flight the
    // two are alike; at ten the second core makes about 10-20% more calls/s.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("askgate gateway: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("askgate gateway: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The inbox page, bound and ready to serve.
struct InboxPage {
    page: askgate_inbox::Inbox,
    listener: tokio::net::TcpListener,
}

/// Open the store and connect every upstream (one that fails is left out,
/// unless none is left); with `serve_inbox`, bind the inbox page first, so
/// links name the address it is served at.
async fn start(
    setup: &Setup,
    serve_inbox: bool,
) -> Result<(Config, Gateway, Option<InboxPage>), String> {
    let config = setup.config()?;
    let store_url = match &setup.store {
        Some(url) => url.clone(),
        None => config.store.expose().to_owned(),
    };
    let store = Store::open(&store_url).await.map_err(|e| e.to_string())?;
    let key_file = key_path(&store_url);
    let key = load_or_create_key(&key_file)?;
    let listener = if serve_inbox {
        match askgate_inbox::bind(config.inbox.listen).await {
            Ok(listener) => Some(listener),
            Err(error) => {
                tracing::warn!(
                    "{error}; the inbox page is not served (answer with `askgate asks`)"
                );
                None
            }
        }
    } else {
        None
    };
    let bound = listener
        .as_ref()
        .and_then(|l| l.local_addr().ok())
        .unwrap_or(config.inbox.listen);
    let base = config
        .inbox
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{bound}/"));
    let links = askgate_core::LinkSigner::new(key.clone());
    let inbox = Inbox::new(&base)?.with_links(links.clone(), LINK_TTL);
    let page = match listener {
        Some(listener) => {
            let people =
                askgate_inbox::people(config.inbox.token.as_deref(), &config.people, &key_file)
                    .map_err(|e| e.to_string())?;
            let page = askgate_inbox::Inbox::new(store.clone(), people, links, &base)
                .map_err(|e| e.to_string())?;
            Some(InboxPage { page, listener })
        }
        None => None,
    };
    let rounds = Rounds::new(key, store)
        .with_inbox(inbox)
        .with_confirmations(config.confirmations.clone());
    let downstream = Downstream::default();
    let mut upstreams = Vec::new();
    for upstream in &config.upstreams {
        let endpoint = Endpoint::from(&upstream.transport);
        match upstream::connect(
            &upstream.name,
            &endpoint,
            upstream.protocol,
            downstream.clone(),
        )
        .await
        {
            Ok(connected) => upstreams.push(connected),
            Err(error) => tracing::error!(upstream = %upstream.name, %error, "left out"),
        }
    }
    if upstreams.is_empty() {
        return Err("no upstream server could be started; see the errors above".into());
    }
    let threshold = config.auto_approve_from_env().map_err(|e| e.to_string())?;
    let owner = format!(
        "gateway:{}",
        config
            .upstreams
            .iter()
            .map(|u| u.name.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    let gateway = Gateway::new(
        Settings {
            rounds,
            judge: Box::new(config.rules.clone()),
            threshold,
            allow_raise: config.allow_session_raise,
            owner,
            replay: config.replay,
            metrics: metrics::Metrics::default(),
            offer_ask_tool: config.offer_ask_tool,
            intake: config.intake.clone(),
            // As long as a sealed state lives (the rounds' default).
            hold_for: std::time::Duration::from_secs(60 * 60),
            durable_reads: config.durable_reads,
            background: background::Background::default(),
        },
        upstreams,
        downstream,
    );
    Ok((config, gateway, page))
}

/// How long a link sent to a client in URL mode stays good.
const LINK_TTL: std::time::Duration = std::time::Duration::from_secs(60 * 60);

async fn serve(args: GatewayArgs) -> Result<(), String> {
    let (config, gateway, page) = start(&args.setup, true).await?;
    let mut base = config
        .inbox
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{}/", config.inbox.listen));
    match page {
        Some(InboxPage { page, listener }) => {
            if config.inbox.base_url.is_none()
                && let Ok(addr) = listener.local_addr()
            {
                base = format!("http://{addr}/");
            }
            eprintln!(
                "askgate gateway: asks a client cannot show wait in the inbox at {base} (or: askgate asks list)"
            );
            let app = page
                .router()
                .merge(metrics::beside_inbox(gateway.clone(), page.clone()));
            tokio::spawn(askgate_inbox::serve(app, listener));
        }
        None => eprintln!(
            "askgate gateway: asks a client cannot show wait in the store: askgate asks list"
        ),
    }
    // Posts as asks are parked and settle, until the gateway stops.
    let _notifier = match &config.notify {
        Some(webhook) => {
            let store = gateway.metrics().1.clone();
            let notifier =
                askgate_inbox::notify::Notifier::new(store, webhook.clone(), Inbox::new(&base)?)
                    .map_err(|e| e.to_string())?;
            Some(AbortOnDrop(notifier.listen()))
        }
        None => None,
    };
    gateway.recover().await?;
    // Know the tools before the first call: the express lane takes a call
    // only of a tool listed.
    gateway.refresh_tools().await;
    let served = match &config.listen {
        Some(listen) => listen::serve(gateway.clone(), listen.addr, &config.principals).await,
        None => serve_stdio(gateway.for_session(), config.express_lane).await,
    };
    // Keep what the answers did not wait for: a clean stop loses nothing.
    gateway.settle_writes().await;
    gateway.metrics().1.close().await;
    served
}

/// Serve one client on stdin and stdout until it goes away. When both are
/// pipes, the express lane takes the calls that need no person (see
/// [`express`]); rmcp serves everything else.
async fn serve_stdio(gateway: Gateway, express_lane: bool) -> Result<(), String> {
    let pipes = if express_lane {
        stdio::pipes().map_err(|why| why.to_string())
    } else {
        Err("express_lane = false".to_owned())
    };
    let (reader, writer) = match pipes {
        Ok(pipes) => pipes,
        Err(why) => {
            tracing::debug!(%why, "no express lane");
            let running = gateway
                .serve(stdio::channel())
                .await
                .map_err(|e| format!("the client handshake failed: {e}"))?;
            let _ = running.waiting().await;
            return Ok(());
        }
    };
    let out = wire::Out::new(writer);
    let (handover, rest) = wire::handover();
    let mut express = express::Express::new(gateway.clone(), std::sync::Arc::clone(&out));
    let tap = tokio::spawn(async move {
        wire::tap(reader, move |line| express.offer(line), rest, "client").await;
    });
    let served = match gateway
        .clone()
        .serve((handover, wire::OutWriter(std::sync::Arc::clone(&out))))
        .await
    {
        Ok(running) => {
            let _ = running.waiting().await;
            Ok(())
        }
        Err(e) => Err(format!("the client handshake failed: {e}")),
    };
    tap.abort();
    gateway.abandon_express();
    out.drained().await;
    served
}

/// Run `askgate tools`.
pub(crate) fn tools(args: ToolsArgs) -> ExitCode {
    init_logs(LogFormat::Human);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("askgate tools: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(list_tools(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("askgate tools: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn list_tools(args: ToolsArgs) -> Result<(), String> {
    let (config, gateway, _) = start(&args.setup, false).await?;
    let threshold = gateway.threshold();
    let mut out = String::new();
    let listed = gateway.refresh_tools().await;
    let rows: Vec<[String; 4]> = listed
        .iter()
        .map(|(name, _server, _tool, risk, rule)| {
            let now = match askgate_core::gate(*risk, threshold) {
                askgate_core::Gate::Proceed(method) => format!("proceed ({})", method.as_str()),
                askgate_core::Gate::Ask => "ask".to_owned(),
            };
            [name.clone(), risk.as_str().to_owned(), rule.clone(), now]
        })
        .collect();
    use std::fmt::Write;
    if args.json {
        for [name, risk, rule, now] in &rows {
            let line = serde_json::json!({"tool": name, "risk": risk, "rule": rule, "now": now});
            let _ = writeln!(out, "{line}");
        }
    } else {
        let width = |i: usize| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
                .max(4)
        };
        let (w0, w1, w2) = (width(0), width(1), width(2));
        let _ = writeln!(out, "{:w0$}  {:w1$}  {:w2$}  NOW", "TOOL", "RISK", "RULE");
        for [name, risk, rule, now] in &rows {
            let _ = writeln!(out, "{name:w0$}  {risk:w1$}  {rule:w2$}  {now}");
        }
        let _ = writeln!(
            out,
            "\nconfig: {}; default risk: {}; read-only hints trusted: {}; auto-approve threshold: {}",
            config.file.as_ref().map_or_else(
                || "none (the default policy)".to_owned(),
                |f| f.display().to_string()
            ),
            config.rules.default_risk(),
            if config.rules.trusts_read_only_hints() {
                "yes"
            } else {
                "no"
            },
            threshold.map_or("none", Risk::as_str)
        );
    }
    use std::io::Write as _;
    std::io::stdout()
        .write_all(out.as_bytes())
        .map_err(|e| format!("cannot write the list: {e}"))
}

/// Stops a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Where the gateway's sealing key lives: beside a SQLite store, else in
/// the data directory.
pub(crate) fn key_path(store_url: &str) -> PathBuf {
    if let Some(path) = store_url
        .strip_prefix("sqlite://")
        .or_else(|| store_url.strip_prefix("sqlite:"))
    {
        return PathBuf::from(format!("{path}.key"));
    }
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("askgate")
        .join("gateway.key")
}

/// The 32-byte key sealing request state and keying digests: the same
/// across restarts (a state sealed before a restart still opens), created
/// on first start, readable by its owner only.
pub(crate) fn load_or_create_key(path: &Path) -> Result<Vec<u8>, String> {
    match std::fs::read(path) {
        Ok(key) if key.len() >= 32 => return Ok(key),
        Ok(_) => {
            return Err(format!(
                "the key file {} is shorter than 32 bytes",
                path.display()
            ));
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(format!(
                "cannot read the key file {}: {error}",
                path.display()
            ));
        }
    }
    let mut key = vec![0u8; 32];
    getrandom::fill(&mut key).map_err(|e| format!("no randomness for a key: {e}"))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    use std::io::Write;
    let mut file = options
        .open(path)
        .map_err(|e| format!("cannot create the key file {}: {e}", path.display()))?;
    file.write_all(&key)
        .map_err(|e| format!("cannot write the key file {}: {e}", path.display()))?;
    Ok(key)
}
