//! `askgate gateway` and `askgate tools`: the gateway's command line —
//! what to put behind askgate, and how it logs; askgate-gateway does the
//! rest.

use crate::logs::LogFormat;
use std::path::PathBuf;
use std::process::ExitCode;

use askgate_core::Risk;
use askgate_gateway::{Config, Now, Started};
use clap::Args;

use crate::failure::{Failure, Workers};

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
    /// Let `--listen` take an address other machines reach: askgate
    /// serves plain HTTP, so say so only with TLS in front of it (a
    /// reverse proxy). The config's `[listen] allow_plain_http` does the
    /// same.
    #[arg(long)]
    allow_plain_http: bool,
    /// The auto-approve threshold (a risk level), over the config's;
    /// `ASKGATE_AUTO_APPROVE_RISK` may lower it further.
    #[arg(long)]
    auto_approve: Option<Risk>,
    /// The name of the one server behind the gateway (its tools'
    /// namespace, what the ledger and the inbox call it). Default: the
    /// config's; without a config, the server's own name from its
    /// handshake, else its command's.
    #[arg(long)]
    name: Option<String>,
    /// A variable of askgate's environment the server after `--` inherits
    /// beyond the allow-list (`PATH`, `HOME`, the locale…): a name
    /// (`GITHUB_TOKEN`), a prefix (`AWS_*`) or `*` for all; repeatable.
    /// With a config file, its `inherit_env` says it per upstream.
    #[arg(long = "inherit-env", value_name = "NAME")]
    inherit_env: Vec<String>,
    /// Believe a tool's `readOnlyHint: true`: a tool that says it only
    /// reads runs without asking (unless a rule gives it a risk). The
    /// config's `trust_read_only_hints = true` does the same.
    #[arg(long)]
    trust_read_only_hints: bool,
    /// The stdio MCP server to wrap (without `--config`), after `--`.
    #[arg(last = true)]
    command: Vec<String>,
}

impl Setup {
    /// Start the gateway as set up: the config, the store it names (or
    /// `--store`), with the inbox page bound when `serve_inbox`.
    async fn start(&self, serve_inbox: bool) -> Result<Started, Failure> {
        self.start_with(self.config()?, serve_inbox).await
    }

    /// [`Setup::start`] with its configuration read already.
    async fn start_with(&self, config: Config, serve_inbox: bool) -> Result<Started, Failure> {
        let store_url = match &self.store {
            Some(url) => url.clone(),
            None => config.store.expose().to_owned(),
        };
        crate::logs::hide(config.secrets());
        crate::logs::hide_url_password(&store_url);
        for notice in config.notices() {
            tracing::warn!("config: {notice}");
        }
        askgate_gateway::start(config, &store_url, serve_inbox)
            .await
            .map_err(Failure::stopped)
    }

    /// The configuration: the file's, or the default around the command.
    fn config(&self) -> Result<Config, Failure> {
        let mut config = match (&self.config, self.command.is_empty()) {
            (Some(path), true) => Config::load(path).map_err(Failure::stopped)?,
            (Some(_), false) => {
                return Err(Failure::stopped(
                    "give either --config FILE or a command after --, not both",
                ));
            }
            (None, false) => Config::for_command(self.command.clone()).map_err(Failure::stopped)?,
            (None, true) => {
                return Err(Failure::stopped(
                    "nothing to put behind askgate: give --config FILE or a command after -- \
                     (askgate gateway -- npx -y @modelcontextprotocol/server-everything)",
                ));
            }
        };
        if let Some(name) = &self.name {
            config = config.with_upstream_name(name).map_err(Failure::stopped)?;
        }
        config = config
            .inheriting_env(&self.inherit_env)
            .map_err(Failure::stopped)?;
        if let Some(risk) = self.auto_approve {
            config.auto_approve = Some(risk);
        }
        if self.trust_read_only_hints {
            config = config.trusting_read_only_hints();
        }
        if let Some(addr) = self.listen {
            if !addr.ip().is_loopback() && config.principals.is_empty() {
                return Err(Failure::stopped(format!(
                    "--listen {addr} is not a loopback address: configure [[principals]] with tokens first"
                )));
            }
            // The origins the config allows stay allowed on the address
            // given here.
            let mut listen = match config.listen.take() {
                Some(listen) => askgate_gateway::config::Listen { addr, ..listen },
                None => askgate_gateway::config::Listen::on(addr),
            };
            listen.allow_plain_http |= self.allow_plain_http;
            if !addr.ip().is_loopback() && !listen.allow_plain_http {
                return Err(Failure::stopped(format!(
                    "--listen {addr} is reachable from other machines, and askgate serves plain HTTP \
                     there: bearer tokens and tool arguments would cross the network unencrypted; put \
                     TLS in front of it (a reverse proxy) and add --allow-plain-http, or listen on a \
                     loopback address (127.0.0.1)"
                )));
            }
            config.listen = Some(listen);
        }
        Ok(config)
    }
}

/// Run the gateway until the client goes away: on one worker thread on
/// stdio (one client), on one a core behind `--listen` (see [`Workers`]).
pub(crate) fn run(args: GatewayArgs) -> ExitCode {
    crate::logs::init(args.log_format, "info");
    let config = match args.setup.config() {
        Ok(config) => config,
        Err(failure) => return failure.exit("askgate gateway"),
    };
    let workers = if config.listen.is_some() {
        Workers::PerCore
    } else {
        Workers::One
    };
    crate::failure::serve("askgate gateway", workers, serve(args, config))
}

/// Run `askgate tools`.
pub(crate) fn tools(args: ToolsArgs) -> ExitCode {
    crate::logs::init(LogFormat::Human, "info");
    crate::failure::serve("askgate tools", Workers::PerCore, list_tools(args))
}

/// A tool as a row of the dry run: name, server, risk, rule, now.
fn row(tool: askgate_gateway::Listed) -> [String; 5] {
    let now = match tool.now {
        Now::Proceed(method) => format!("proceed ({})", method.as_str()),
        Now::Ask => "ask".to_owned(),
    };
    [
        tool.name,
        tool.server,
        tool.risk.as_str().to_owned(),
        tool.rule,
        now,
    ]
}

async fn list_tools(args: ToolsArgs) -> Result<(), Failure> {
    let started = args.setup.start(false).await?;
    let threshold = started.threshold();
    let config = started.config();
    let mut out = String::new();
    let askgate_gateway::DryRun { tools, refused } = started
        .tools()
        .await
        .map_err(|collision| Failure::stopped(collision.to_string()))?;
    let warnings: Vec<(String, String)> = tools
        .iter()
        .filter_map(|tool| Some((tool.name.clone(), tool.warning.clone()?)))
        .collect();
    let rows: Vec<[String; 5]> = tools.into_iter().map(row).collect();
    use std::fmt::Write;
    if args.json {
        for [name, server, risk, rule, now] in &rows {
            let mut line = serde_json::json!(
                {"tool": name, "server": server, "risk": risk, "rule": rule, "now": now}
            );
            if let Some((_, warning)) = warnings.iter().find(|(tool, _)| tool == name) {
                line["warning"] = warning.as_str().into();
            }
            let _ = writeln!(out, "{line}");
        }
        for tool in &refused {
            let line = serde_json::json!(
                {"refused": tool.name, "server": tool.server, "why": tool.why}
            );
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
        let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
        let _ = writeln!(
            out,
            "{:w0$}  {:w1$}  {:w2$}  {:w3$}  NOW",
            "TOOL", "SERVER", "RISK", "RULE"
        );
        for [name, server, risk, rule, now] in &rows {
            let _ = writeln!(
                out,
                "{name:w0$}  {server:w1$}  {risk:w2$}  {rule:w3$}  {now}"
            );
        }
        for (name, warning) in &warnings {
            let _ = writeln!(out, "\nwarning: {name}: {warning}");
        }
        for tool in &refused {
            let _ = writeln!(
                out,
                "\nleft out: {} of {}: {}",
                tool.name, tool.server, tool.why
            );
        }
        let _ = writeln!(
            out,
            "\nconfig: {}; default risk: {}; read-only hints trusted: {}; auto-approve threshold: {}",
            config.file.as_ref().map_or_else(
                || "none (the default policy)".to_owned(),
                |f| f.display().to_string()
            ),
            config.default_risk(),
            if config.trusts_read_only_hints() {
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
        .map_err(|e| Failure::stopped(format!("cannot write the list: {e}")))
}

/// Serve until the client goes away.
async fn serve(args: GatewayArgs, config: Config) -> Result<(), Failure> {
    let started = args.setup.start_with(config, true).await?;
    started.serve().await.map_err(Failure::stopped)
}
