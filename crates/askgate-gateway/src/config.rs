//! The gateway's configuration: the upstream servers, the risk rules and the
//! policy around them, the store, the inbox and the downstream listener.
//!
//! It comes from a TOML file (`askgate gateway --config askgate.toml`; the
//! annotated example is `examples/askgate.toml`) or, with no file, from the
//! server command alone ([`Config::for_command`]). A file that cannot be used
//! is refused as a whole, with a [`ConfigError`] that names the file, the
//! line and the key: `askgate.toml:12: rules[1].risk: unknown variant ...`.
//! Unknown keys are errors that list the keys accepted there.

mod approving;
pub(crate) use approving::{Approvals, OAUTH_AGENT};
mod check;
mod credentials;
mod error;
mod file;
mod inbox;
mod inheriting;
mod limits;
mod listen;
mod naming;
mod secrets;
mod store_place;
#[cfg(test)]
mod tests;
mod trusting;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use askgate_core::{IntakeWhen, QuestionSet, Risk, threshold};
use serde::Deserialize;

use check::check;
pub use error::ConfigError;
use error::Source;
use file::File;
pub use inbox::Inbox;
pub(crate) use inbox::plain_http_refused;
pub use limits::Limits;
pub use listen::{Introspection, LOOPBACK_ORIGINS, Listen, OAuth};
use naming::server_name;
pub(crate) use naming::{MODEL_NAME_LIMIT, Namespace, usable_name};
pub use store_place::{NoStoreDir, store_url, store_url_made_or_not};

use super::rules::{Pattern, Rules};

/// The environment variable that lowers (or, with `allow_session_raise`,
/// raises) the auto-approve threshold for this process.
pub(crate) const AUTO_APPROVE_ENV: &str = "ASKGATE_AUTO_APPROVE_RISK";

/// Where the inbox listens when the config does not say.
const DEFAULT_INBOX: &str = "127.0.0.1:7878";

/// The longest upstream name: it prefixes every tool name, and MCP tool
/// names should stay within 128 characters.
const MAX_NAME: usize = 32;

/// The shortest token (a principal's, a person's, the inbox's): guessable
/// tokens are refused.
const MIN_TOKEN: usize = 16;

/// A usable configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from; `None` for [`Config::for_command`].
    pub file: Option<PathBuf>,
    /// The servers behind the gateway, in the order listed.
    pub(crate) upstreams: Vec<Upstream>,
    /// Whether the upstreams' names were given (a file, `--name`); without
    /// a config the one server is named after its own `serverInfo.name`
    /// once it answers, rather than after its script file.
    pub(crate) names_given: bool,
    /// Between an upstream's namespace and a tool or prompt name
    /// (`separator`; default `__`).
    pub(crate) separator: String,
    /// The risk rules, compiled.
    pub(crate) rules: Rules,
    /// Calls at or below this risk proceed without asking; `None` approves
    /// nothing by itself. See [`Config::auto_approve_with`] for overrides.
    pub auto_approve: Option<Risk>,
    /// Whether a session (header, environment) may raise the threshold.
    pub(crate) allow_session_raise: bool,
    /// Question sets asked before a tool's first call, in the order listed.
    pub(crate) intake: Vec<Intake>,
    /// Whether the model is offered the `ask` tool.
    pub(crate) offer_ask_tool: bool,
    /// The store.
    pub store: StoreUrl,
    /// The inbox's web page.
    pub inbox: Inbox,
    /// The agents (HTTP clients) and their MCP bearer tokens.
    pub principals: Vec<Principal>,
    /// The people who sign in to the inbox and answer with the CLI, and
    /// whose asks each may answer.
    pub people: Vec<Person>,
    /// Who approves which calls (`[[approvals]]`), and the people's groups
    /// and agents' people they name.
    pub(crate) approvals: Approvals,
    /// The replay policy.
    pub(crate) replay: Replay,
    /// Whether a `read` call that proceeds without a person waits for its
    /// audit entry and ledger record to be durable before it is sent (as
    /// every call above `read` does). Default `false`: a read is sent at
    /// once and its records are committed with the next batch, since
    /// replaying a read is harmless; a crash may lose the records of the
    /// reads of its last moments.
    pub(crate) durable_reads: bool,
    /// Whether calls to stdio upstreams take the express lane (DESIGN.md):
    /// on stdio, the client's calls that need no person are relayed as
    /// bytes, and the calls the gateway's handler sends (a call a person
    /// confirmed) go as bytes to their upstream. Default `true`; `false`
    /// sends every call through rmcp, for an operator who suspects the
    /// lane.
    pub(crate) express_lane: bool,
    /// Serve Streamable HTTP downstream here; `None`: stdio.
    pub listen: Option<Listen>,
    /// The webhook posted as asks are parked and settle; `None`: no posts.
    pub(crate) notify: Option<askgate_inbox::notify::Webhook>,
    /// How confirmations are asked and trusted: who may stand in for a
    /// person, what counts as a person's answer, how long a call waits for
    /// the inbox, how long an ask (and a person's no) lives.
    pub(crate) confirmations: askgate_mcp::Confirmations,
    /// How long after a call that may have run (askgate stopped while it
    /// was in flight) the same call — the same principal, tool and
    /// arguments — is taken for its retry, and not sent again silently
    /// (`retry_window`; default 10 minutes, `"0s"`: never).
    pub(crate) retry_window: std::time::Duration,
    /// How long the calls in flight may finish once the gateway is told to
    /// stop (SIGINT, SIGTERM); those still running then are cancelled
    /// (`stop_grace`; default 10 s, at most 10 minutes).
    pub(crate) stop_grace: std::time::Duration,
    /// How much it takes on at once (`[limits]`).
    pub limits: Limits,
}

/// How long a call that may have run is remembered for its retry, unless
/// `retry_window` says otherwise.
pub(crate) const RETRY_WINDOW: std::time::Duration = std::time::Duration::from_secs(600);

/// How long the calls in flight may finish at a stop, unless `stop_grace`
/// says otherwise.
pub(crate) const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// One upstream server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Upstream {
    /// The namespace prefix of its tools: `[a-z0-9_-]`, up to 32 characters.
    pub(crate) name: String,
    /// How to reach it.
    pub(crate) transport: Transport,
    /// The revision askgate speaks to it.
    pub(crate) protocol: UpstreamProtocol,
    /// How its tools and prompts are named downstream.
    pub(crate) namespace: Namespace,
    /// How long it may take to answer.
    pub(crate) timeouts: Timeouts,
}

/// How long an upstream may take to answer (`start_timeout` and
/// `call_timeout` in its `[[upstreams]]` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeouts {
    /// Its handshake: one that does not answer within it is stopped and
    /// started again later, as a failed start is. Its lists (tools,
    /// prompts, resources) are waited for as long: past it, it is left out
    /// of that list.
    pub(crate) start: std::time::Duration,
    /// How long a tool call (and a prompt or resource read) may find its
    /// server idle: no answer, no progress notification, no ask of the
    /// server's waiting on a person (see [`crate::relay::idle`]). Past
    /// it, the server is told to cancel and the client that the call may
    /// have run. An hour by default; `None` (`"0s"`): no limit.
    pub(crate) call: Option<std::time::Duration>,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            start: std::time::Duration::from_secs(30),
            call: Some(std::time::Duration::from_secs(60 * 60)),
        }
    }
}

/// The revision askgate speaks to an upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum UpstreamProtocol {
    /// `2025-11-25` through `initialize` (the default: every server built
    /// before 2026-07-28 speaks it, and most after it still do).
    #[default]
    Initialize,
    /// `2026-07-28` through `server/discover`: the server's asks come back
    /// as `InputRequiredResult`s.
    Discover,
}

impl UpstreamProtocol {
    /// The values `protocol` takes in the config.
    pub(crate) const EXPECTED: &'static str = "\"2025-11-25\" (the default) or \"2026-07-28\"";

    /// Read a config value.
    pub(crate) fn parse(text: &str) -> Option<UpstreamProtocol> {
        match text {
            "2025-11-25" => Some(UpstreamProtocol::Initialize),
            "2026-07-28" => Some(UpstreamProtocol::Discover),
            _ => None,
        }
    }
}

/// How to reach an upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio(Stdio),
    /// A Streamable HTTP endpoint.
    Http(Http),
}

/// A stdio upstream: the command to spawn.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Stdio {
    /// The program.
    pub(crate) command: String,
    /// Its arguments.
    pub(crate) args: Vec<String>,
    /// Variables added to its environment (values may be secrets: `Debug`
    /// shows only the names).
    pub(crate) env: BTreeMap<String, String>,
    /// Which of askgate's own environment it inherits (`inherit_env`, see
    /// [`crate::environment`]).
    pub(crate) inherit: crate::environment::Inherit,
    /// Its working directory; the gateway's when `None`.
    pub(crate) cwd: Option<PathBuf>,
}

impl fmt::Debug for Stdio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stdio")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &Redacted(&self.env))
            .field("inherit", &self.inherit)
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// A Streamable HTTP upstream.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Http {
    /// The MCP endpoint: `https://host/mcp`.
    pub(crate) url: String,
    /// Headers sent with every request (values may be credentials: `Debug`
    /// shows only the names).
    pub(crate) headers: BTreeMap<String, String>,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("url", &self.url)
            .field("headers", &Redacted(&self.headers))
            .finish()
    }
}

/// A map shown with its keys only.
struct Redacted<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|key| (key, "<redacted>")))
            .finish()
    }
}

/// A configured intake: which calls it precedes, and what is asked.
#[derive(Debug, Clone)]
pub(crate) struct Intake {
    /// The upstreams it applies to; all when `None`.
    pub(crate) server: Option<Pattern>,
    /// The tools it applies to.
    pub(crate) tool: Pattern,
    /// How often it is asked.
    pub(crate) when: IntakeWhen,
    /// The questions (checked; `source` is `intake`).
    pub(crate) questions: QuestionSet,
}

/// The store's URL: `sqlite://PATH` or `postgres://...`. `Debug` and
/// `Display` leave out a password.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl(String);

impl StoreUrl {
    /// The URL, password included, to open the store with.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0.find("://"), self.0.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                let user = self.0[scheme + 3..at].split(':').next().unwrap_or("");
                write!(f, "{}{user}@{}", &self.0[..scheme + 3], &self.0[at + 1..])
            }
            _ => f.write_str(&self.0),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({:?})", self.to_string())
    }
}

/// An agent — an HTTP client of the gateway — and the MCP bearer token it
/// presents. A principal's token never signs in to the inbox nor answers
/// from the CLI: the agent must not hold what approves its own asks.
#[derive(Clone, PartialEq, Eq)]
pub struct Principal {
    /// Who it is: the asks of its calls are for it, and the audit names it.
    pub(crate) name: String,
    /// Its bearer token. Never logged: `Debug` redacts it.
    pub(crate) token: String,
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("name", &self.name)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// A person: signs in to the inbox, and answers with `askgate asks`, with
/// a token of their own — never an agent's.
pub use askgate_inbox::Credential as Person;

/// The replay policy for upstream tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Replay {
    /// Every upstream call is matched to its request and its answer in the
    /// ledger; one that cannot be is refused before it is sent.
    #[default]
    AppAuthorized,
    /// Calls that cannot be watched are sent anyway (for upstreams the
    /// gateway cannot watch), and recorded as such.
    Compatibility,
}

impl Config {
    /// The risk of a tool no rule describes.
    pub fn default_risk(&self) -> Risk {
        self.rules.default_risk()
    }

    /// This config, a tool's `readOnlyHint: true` taken at its word (a
    /// tool that says it only reads is `read`, unless a rule says
    /// otherwise): `--trust-read-only-hints`.
    #[must_use]
    pub fn trusting_read_only_hints(mut self) -> Config {
        self.rules = self.rules.trusting_read_only_hints();
        self
    }

    /// Whether a tool's `readOnlyHint` is taken at its word.
    pub fn trusts_read_only_hints(&self) -> bool {
        self.rules.trusts_read_only_hints()
    }

    /// Read and check the config file at `path`.
    ///
    /// # Errors
    /// The file cannot be read, is not TOML, has an unknown key, or a value
    /// that is not usable; the error names the file, the line and the key.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: Some(path.to_owned()),
            line: None,
            key: None,
            message: format!("cannot read the config file: {e}"),
        })?;
        Config::parse(path, &text)
    }

    /// Check the config `text`, read from `path` (named in errors).
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let source = Source::new(path, text);
        let file: File =
            toml::from_str(text).map_err(|e| explain(source.toml_error(&e), &source))?;
        check(file, &source, path)
    }

    /// The same config with its one server named `name` (`--name`): its
    /// tools' namespace, the name rules and the ledger know it by.
    ///
    /// # Errors
    /// The config has more than one upstream, or `name` is not a usable
    /// upstream name (1 to 32 of a-z, 0-9, `_`, `-`).
    pub fn with_upstream_name(mut self, name: &str) -> Result<Config, ConfigError> {
        if let Some(problem) = check::name_problem(name)
            .or_else(|| naming::separator_inside(name, "upstream name", &self.separator))
        {
            return Err(ConfigError::bare(Some("--name"), problem));
        }
        match self.upstreams.as_mut_slice() {
            [upstream] => name.clone_into(&mut upstream.name),
            _ => {
                return Err(ConfigError::bare(
                    Some("--name"),
                    "--name names the one server behind the gateway; with several, name each \
                     in the config file",
                ));
            }
        }
        self.names_given = true;
        Ok(self)
    }

    /// The prefix of upstream `index`'s tools and prompts downstream, if
    /// any: by default its name when there are several upstreams, none
    /// when it is alone (its names kept exactly).
    pub(crate) fn prefix_of(&self, index: usize) -> Option<String> {
        let upstream = self.upstreams.get(index)?;
        match &upstream.namespace {
            Namespace::Auto if self.upstreams.len() == 1 => None,
            Namespace::Auto | Namespace::Name => Some(upstream.name.clone()),
            Namespace::Prefix(prefix) => Some(prefix.clone()),
            Namespace::Off => None,
        }
    }

    /// The no-config default: the one stdio server `argv` starts, named after
    /// its program, under the default policy (every tool `medium_write`, so
    /// each call is confirmed), on a SQLite file in the platform data
    /// directory (or `$ASKGATE_STORE`), speaking stdio to the client.
    ///
    /// # Errors
    /// `argv` is empty, or there is no data directory for the store.
    pub fn for_command(argv: Vec<String>) -> Result<Config, ConfigError> {
        let store =
            store_url(None).map_err(|why| ConfigError::bare(Some("store"), why.to_string()))?;
        Config::for_command_with_store(argv, store)
    }

    fn for_command_with_store(argv: Vec<String>, store: String) -> Result<Config, ConfigError> {
        let mut argv = argv.into_iter();
        let Some(command) = argv.next().filter(|c| !c.trim().is_empty()) else {
            return Err(ConfigError::bare(
                None,
                "no server command: run `askgate gateway -- COMMAND [ARGS...]`, \
                 or pass --config FILE",
            ));
        };
        let args: Vec<String> = argv.collect();
        Ok(Config {
            file: None,
            names_given: false,
            upstreams: vec![Upstream {
                name: server_name(&command, &args),
                transport: Transport::Stdio(Stdio {
                    command,
                    args,
                    env: BTreeMap::new(),
                    inherit: crate::environment::Inherit::default(),
                    cwd: None,
                }),
                protocol: UpstreamProtocol::default(),
                timeouts: Timeouts::default(),
                namespace: Namespace::Auto,
            }],
            separator: naming::DEFAULT_SEPARATOR.to_owned(),
            rules: Rules::fail_closed(),
            auto_approve: None,
            allow_session_raise: false,
            intake: Vec::new(),
            offer_ask_tool: true,
            store: StoreUrl(store),
            inbox: Inbox::on_loopback(),
            principals: Vec::new(),
            people: Vec::new(),
            approvals: Approvals::default(),
            replay: Replay::AppAuthorized,
            durable_reads: false,
            express_lane: true,
            listen: None,
            notify: None,
            confirmations: askgate_mcp::Confirmations::default(),
            retry_window: RETRY_WINDOW,
            stop_grace: STOP_GRACE,
            limits: Limits::default(),
        })
    }

    /// The threshold in force when a session asks for `requested` (the
    /// value of [`AUTO_APPROVE_ENV`] or a header: a risk level or `none`;
    /// absent or empty: no request). The more restrictive of the config's
    /// and the request wins, unless `allow_session_raise`; `none` always
    /// stands, since approving nothing is the most restrictive.
    ///
    /// # Errors
    /// `requested` is not a risk level nor `none`.
    pub fn auto_approve_with(&self, requested: Option<&str>) -> Result<Option<Risk>, ConfigError> {
        let Some(requested) = requested.map(str::trim).filter(|r| !r.is_empty()) else {
            return Ok(self.auto_approve);
        };
        match parse_threshold(requested) {
            Ok(None) => Ok(None),
            Ok(Some(risk)) => Ok(threshold(
                self.auto_approve,
                Some(risk),
                self.allow_session_raise,
            )),
            Err(message) => Err(ConfigError::bare(Some(AUTO_APPROVE_ENV), message)),
        }
    }

    /// [`Config::auto_approve_with`] the value of [`AUTO_APPROVE_ENV`].
    ///
    /// # Errors
    /// The variable holds something other than a risk level or `none`.
    pub fn auto_approve_from_env(&self) -> Result<Option<Risk>, ConfigError> {
        match std::env::var_os(AUTO_APPROVE_ENV) {
            None => self.auto_approve_with(None),
            Some(value) => match value.to_str() {
                Some(value) => self.auto_approve_with(Some(value)),
                None => Err(ConfigError::bare(
                    Some(AUTO_APPROVE_ENV),
                    "not valid UTF-8; expected none, read, low_write, medium_write, \
                     high_write or destructive",
                )),
            },
        }
    }
}

/// The intake that precedes a call to `tool` on `server`: the first one
/// listed that matches, with its place in the list.
pub(crate) fn intake_for<'a>(
    intakes: &'a [Intake],
    server: &str,
    tool: &str,
) -> Option<(usize, &'a Intake)> {
    intakes.iter().enumerate().find(|(_, intake)| {
        intake.server.as_ref().is_none_or(|p| p.is_match(server)) && intake.tool.is_match(tool)
    })
}

/// Add the likely cause to an error a TOML beginner meets: a rule's `risk`
/// written below its `[rules.arguments]` header belongs to that table.
fn explain(mut error: ConfigError, src: &Source<'_>) -> ConfigError {
    if let Some(key) = &error.key
        && error.message == "missing field `risk`"
        && src.has_key(&format!("{key}.arguments.risk"))
    {
        error.message.push_str(
            "; the `risk` below [rules.arguments] belongs to that table (as an argument \
             named risk): write the rule's risk above the [rules.arguments] header",
        );
    }
    error
}

fn default_inbox() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7878))
}

/// `none` or a risk level.
fn parse_threshold(text: &str) -> Result<Option<Risk>, String> {
    if text == "none" {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| {
        format!(
            "unknown threshold {text:?}; expected none, read, low_write, medium_write, \
             high_write or destructive"
        )
    })
}
