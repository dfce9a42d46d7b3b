//! `askgate init`: from an MCP server's command to a gateway a desktop
//! client can start — the server's tools listed with the risk each would
//! get, its read-only hints trusted or not (asked, or a flag), the config
//! written, the deployment's key and the operator's token made (owner-only
//! files), and the client's JSON and the inbox's address printed. The
//! token itself is never printed: where it is, is.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use askgate_core::Risk;
use askgate_gateway::{Config, Listed, Now};
use clap::Args;
use serde_json::json;

use crate::failure::{Failure, Workers};

/// `askgate init [--config FILE] [-- COMMAND ARGS...]`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    askgate init -- npx -y @modelcontextprotocol/server-filesystem ~/projects\n  \
    askgate init --trust-read-only-hints --config ~/.config/askgate/askgate.toml -- uvx mcp-server-git\n  \
    askgate init          # asks for the command at the terminal")]
pub(crate) struct InitArgs {
    /// Where to write the config.
    #[arg(long, default_value = "askgate.toml")]
    config: PathBuf,
    /// The server's name (its tools' namespace, what the inbox calls it).
    /// Default: its own name from its handshake, else its command's.
    #[arg(long)]
    name: Option<String>,
    /// Trust the server's `readOnlyHint: true` without asking: a tool
    /// that says it only reads runs without asking.
    #[arg(long, conflicts_with = "no_trust_read_only_hints")]
    trust_read_only_hints: bool,
    /// Do not trust them, without asking (every tool asks first).
    #[arg(long)]
    no_trust_read_only_hints: bool,
    /// The store (default: askgate.db in the platform's data directory).
    #[arg(long)]
    store: Option<String>,
    /// Write over an existing config file.
    #[arg(long)]
    force: bool,
    /// The stdio MCP server to put behind askgate, after `--`.
    #[arg(last = true)]
    command: Vec<String>,
}

/// Run `askgate init`.
pub(crate) fn run(args: InitArgs) -> ExitCode {
    crate::logs::init(crate::logs::LogFormat::Human, "warn");
    crate::failure::serve("askgate init", Workers::One, init(args))
}

async fn init(args: InitArgs) -> Result<(), Failure> {
    if args.config.exists() && !args.force {
        return Err(Failure::stopped(format!(
            "{} exists already; pass --force to write over it, or --config another path",
            args.config.display()
        )));
    }
    let mut command = match args.command.is_empty() {
        false => args.command.clone(),
        true => ask_command()?,
    };
    // A path of this directory, as the client that starts the gateway
    // elsewhere must find it.
    if command[0].contains('/')
        && let Ok(absolute) = std::fs::canonicalize(&command[0])
    {
        command[0] = absolute.display().to_string();
    }
    let store = match &args.store {
        Some(url) => url.clone(),
        None => askgate_gateway::config::store_url(None).map_err(Failure::stopped)?,
    };
    let mut config = Config::for_command(command.clone()).map_err(Failure::stopped)?;
    if let Some(name) = &args.name {
        config = config.with_upstream_name(name).map_err(Failure::stopped)?;
    }
    let default_risk = config.default_risk();
    // The server started once, its hints believed: which tools say they
    // only read.
    let started = askgate_gateway::start(config.trusting_read_only_hints(), &store, false)
        .await
        .map_err(Failure::stopped)?;
    let dry_run = started
        .tools()
        .await
        .map_err(|collision| Failure::stopped(collision.to_string()))?;
    // The server's name as the gateway gave it (its handshake's, else its
    // command's).
    let name = dry_run
        .tools
        .first()
        .map(|tool| tool.server.clone())
        .or_else(|| dry_run.refused.first().map(|tool| tool.server.clone()))
        .or_else(|| args.name.clone())
        .unwrap_or_else(|| "server".to_owned());
    let hinted: Vec<&Listed> = dry_run
        .tools
        .iter()
        .filter(|tool| tool.rule.contains("readOnlyHint"))
        .collect();
    let trust = if args.trust_read_only_hints {
        true
    } else if args.no_trust_read_only_hints || hinted.is_empty() {
        false
    } else {
        ask_trust(&hinted)?
    };
    let mut out = String::new();
    out.push_str(&format!("The tools of {name}, and what a call does:\n\n"));
    out.push_str(&table(&dry_run.tools, trust, default_risk));
    if !trust && !hinted.is_empty() {
        out.push_str(&format!(
            "\n{} tool(s) say they only read; not trusted, so they ask first \
             (--trust-read-only-hints, or trust_read_only_hints = true, trusts them).\n",
            hinted.len()
        ));
    }
    let config_text = config_file(&store, &name, &command, trust);
    write_config(&args.config, &config_text)?;
    let key_file = askgate_gateway::keys::key_path(&store);
    askgate_gateway::keys::Keys::load_or_create(&key_file).map_err(Failure::stopped)?;
    askgate_inbox::people(None, &[], &key_file).map_err(Failure::stopped)?;
    let token_file = askgate_inbox::operator_token_path(&key_file);
    let config_path = std::fs::canonicalize(&args.config).unwrap_or(args.config.clone());
    let askgate = std::env::current_exe()
        .map(|path| path.display().to_string())
        .unwrap_or_else(|_| "askgate".into());
    let desktop = json!({"mcpServers": {name.clone(): {
        "command": askgate,
        "args": ["gateway", "--config", config_path.display().to_string()],
    }}});
    out.push_str(&format!(
        "\nWrote {config}.\nThe deployment's key: {key} (owner only).\n\
         The inbox's operator token: {token} (owner only; paste it to sign in).\n\n\
         For a desktop client (Claude Desktop, Cursor, ...), add to its MCP servers:\n\n{desktop}\n\n\
         The inbox, where asks the client cannot show wait: http://127.0.0.1:7878/ \
         while the gateway runs.\nSee what each call would do: askgate tools --config {config}\n",
        config = config_path.display(),
        key = key_file.display(),
        token = token_file.display(),
        desktop = serde_json::to_string_pretty(&desktop).unwrap_or_default(),
    ));
    std::io::stdout()
        .write_all(out.as_bytes())
        .map_err(|e| Failure::stopped(format!("cannot write: {e}")))
}

/// The server's command, asked at the terminal.
fn ask_command() -> Result<Vec<String>, Failure> {
    if !std::io::stdin().is_terminal() {
        return Err(Failure::stopped(
            "give the MCP server's command after -- (askgate init -- npx -y \
             @modelcontextprotocol/server-filesystem ~/projects)",
        ));
    }
    let line = prompt(
        "The MCP server to put behind askgate (its command, e.g. npx -y \
         @modelcontextprotocol/server-filesystem ~/projects): ",
    )?;
    let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    if words.is_empty() {
        return Err(Failure::stopped("no command given; nothing was written"));
    }
    Ok(words)
}

/// Whether to trust `hinted`'s read-only hints: asked at a terminal, no
/// (fail closed) elsewhere.
fn ask_trust(hinted: &[&Listed]) -> Result<bool, Failure> {
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    let names: Vec<&str> = hinted.iter().map(|t| t.name.as_str()).collect();
    let answer = prompt(&format!(
        "{} tool(s) say they only read ({}). Trust these hints, so they run without asking? [y/N] ",
        names.len(),
        names.join(", ")
    ))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

fn prompt(question: &str) -> Result<String, Failure> {
    let mut stderr = std::io::stderr();
    let _ = write!(stderr, "{question}");
    let _ = stderr.flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Failure::stopped(format!("the terminal: {e}")))?;
    Ok(line.trim().to_owned())
}

/// The tools as a table: name, risk, what a call does, with the hints
/// trusted or not.
fn table(tools: &[Listed], trust: bool, default_risk: Risk) -> String {
    let rows: Vec<[String; 3]> = tools
        .iter()
        .map(|tool| {
            let by_hint = tool.rule.contains("readOnlyHint");
            let (risk, why) = match (by_hint, trust) {
                (true, false) => (default_risk, "asks first (its read-only hint not trusted)"),
                (true, true) => (tool.risk, "runs (it says it only reads)"),
                (false, _) => match tool.now {
                    Now::Proceed(_) => (tool.risk, "runs"),
                    Now::Ask => (tool.risk, "asks first"),
                },
            };
            [tool.name.clone(), risk.as_str().to_owned(), why.to_owned()]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].len()).max().unwrap_or(0).max(4);
    let (w0, w1) = (width(0), width(1));
    let mut text = format!("  {:w0$}  {:w1$}  A CALL\n", "TOOL", "RISK");
    for [name, risk, why] in &rows {
        text.push_str(&format!("  {name:w0$}  {risk:w1$}  {why}\n"));
    }
    text
}

/// The config `askgate init` writes.
fn config_file(store: &str, name: &str, command: &[String], trust: bool) -> String {
    let quoted = |s: &str| toml_string(s);
    let args: Vec<String> = command[1..].iter().map(|a| quoted(a)).collect();
    format!(
        "# Written by `askgate init`. The whole reference: examples/askgate.toml.\n\
         store = {store}\n\
         # A tool that says it only reads (readOnlyHint) runs without asking.\n\
         trust_read_only_hints = {trust}\n\n\
         [[upstreams]]\nname = {name}\ncommand = {command}\nargs = [{args}]\n\n\
         # Give a tool a risk of your own (read, low_write, medium_write, high_write,\n\
         # destructive): calls from medium_write up ask a person first.\n\
         # [[rules]]\n# tool = \"write_*\"\n# risk = \"high_write\"\n\n\
         [inbox]\nlisten = \"127.0.0.1:7878\"\n",
        store = quoted(store),
        name = quoted(name),
        command = quoted(&command[0]),
        args = args.join(", "),
    )
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// Write the config, its owner's only (it may come to hold tokens).
fn write_config(path: &Path, text: &str) -> Result<(), Failure> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| Failure::stopped(format!("cannot write {}: {e}", path.display())))
}
