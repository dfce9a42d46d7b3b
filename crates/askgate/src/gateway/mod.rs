//! `askgate gateway`: put MCP servers behind typed, durable, audited human
//! confirmation.
//!
//! The gateway speaks MCP to the client (stdio) and to each upstream server
//! (a child process on stdio, or Streamable HTTP). Every tool call goes
//! risk (the rules) -> confirmation (askgate-mcp: whatever the client can
//! show, or the inbox) -> audit -> ledger -> upstream -> ledger -> result.

// Intake questions, the `ask` tool, principals and the HTTP listener are
// configured but not served yet (issue 6's remaining work).
pub(crate) mod background;
pub(crate) mod config;
pub(crate) mod listen;
pub(crate) mod metrics;
pub(crate) mod proxy;
pub(crate) mod questions;
pub(crate) mod rules;
pub(crate) mod stdio;
pub(crate) mod upstream;
pub(crate) mod watch;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use askgate_core::Risk;
use askgate_mcp::{Inbox, Rounds};
use askgate_store::Store;
use clap::Args;
use rmcp::ServiceExt;

use config::Config;
use proxy::{Gateway, Settings};
use upstream::{Downstream, Endpoint};

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
fn init_logs(format: LogFormat) {
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

/// Open the store and connect every upstream (one that fails is left out,
/// unless none is left).
async fn start(setup: &Setup) -> Result<(Config, Gateway), String> {
    let config = setup.config()?;
    let store_url = match &setup.store {
        Some(url) => url.clone(),
        None => config.store.expose().to_owned(),
    };
    let store = Store::open(&store_url).await.map_err(|e| e.to_string())?;
    let key = load_or_create_key(&key_path(&store_url))?;
    let base = config
        .inbox
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{}/", config.inbox.listen));
    let inbox = Inbox::new(&base)?;
    let rounds = Rounds::new(key, store).with_inbox(inbox);
    let downstream = Downstream::default();
    let mut upstreams = Vec::new();
    for upstream in &config.upstreams {
        let endpoint = Endpoint::from(&upstream.transport);
        match upstream::connect(&upstream.name, &endpoint, downstream.clone()).await {
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
            durable_reads: config.durable_reads,
            background: background::Background::default(),
        },
        upstreams,
        downstream,
    );
    Ok((config, gateway))
}

async fn serve(args: GatewayArgs) -> Result<(), String> {
    let (config, gateway) = start(&args.setup).await?;
    let base = config
        .inbox
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{}/", config.inbox.listen));
    eprintln!(
        "askgate gateway: asks a client cannot show wait in the inbox at {base} (or: askgate asks list)"
    );
    gateway.recover().await?;
    let served = match &config.listen {
        Some(listen) => listen::serve(gateway.clone(), listen.addr, &config.principals).await,
        None => serve_stdio(gateway.clone()).await,
    };
    // Keep what the answers did not wait for: a clean stop loses nothing.
    gateway.settle_writes().await;
    gateway.metrics().1.close().await;
    served
}

/// Serve one client on stdin and stdout until it goes away.
async fn serve_stdio(gateway: Gateway) -> Result<(), String> {
    let running = gateway
        .serve(stdio::channel())
        .await
        .map_err(|e| format!("the client handshake failed: {e}"))?;
    let _ = running.waiting().await;
    Ok(())
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
    let (config, gateway) = start(&args.setup).await?;
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

/// Where the gateway's sealing key lives: beside a SQLite store, else in
/// the data directory.
fn key_path(store_url: &str) -> PathBuf {
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
fn load_or_create_key(path: &Path) -> Result<Vec<u8>, String> {
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
