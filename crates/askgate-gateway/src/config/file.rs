//! The config file as written: the TOML shape, before the checks that turn
//! it into a [`Config`](super::Config). Every struct denies unknown keys, so
//! a typo is an error that lists the keys accepted there; values that a
//! later check may reject keep their span. None of these is `Debug`: they
//! hold tokens, header values and environment values.

use std::collections::BTreeMap;

use askgate_core::{IntakeWhen, Question, Risk};
use serde::Deserialize;
use toml::Spanned;

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    #[serde(default)]
    pub(super) upstreams: Vec<Spanned<UpstreamFile>>,
    pub(super) separator: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) rules: Vec<Spanned<RuleFile>>,
    pub(super) default_risk: Option<Spanned<Risk>>,
    pub(super) auto_approve: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) allow_session_raise: bool,
    #[serde(default)]
    pub(super) trust_read_only_hints: bool,
    #[serde(default)]
    pub(super) intake: Vec<Spanned<IntakeFile>>,
    pub(super) offer_ask_tool: Option<bool>,
    pub(super) store: Option<Spanned<String>>,
    pub(super) inbox: Option<InboxFile>,
    #[serde(default)]
    pub(super) principals: Vec<Spanned<PrincipalFile>>,
    /// The people the caller no token names acts for (stdio's client, a
    /// loopback listener's without principals).
    #[serde(default)]
    pub(super) acts_for: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) people: Vec<Spanned<PersonFile>>,
    #[serde(default)]
    pub(super) approvals: Vec<Spanned<ApprovalFile>>,
    pub(super) replay: Option<super::Replay>,
    #[serde(default)]
    pub(super) durable_reads: bool,
    pub(super) express_lane: Option<bool>,
    pub(super) listen: Option<ListenFile>,
    pub(super) notify: Option<NotifyFile>,
    pub(super) caller_confirm: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) danger_caller_confirm_high_risk: bool,
    pub(super) min_answer_ms: Option<Spanned<i64>>,
    pub(super) inbox_wait: Option<Spanned<String>>,
    pub(super) ask_expires: Option<Spanned<String>>,
    pub(super) retry_window: Option<Spanned<String>>,
    pub(super) stop_grace: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) clients: BTreeMap<String, Spanned<ClientFile>>,
    pub(super) limits: Option<super::limits::LimitsFile>,
}

/// `[clients."<name>"]`: settings for the clients that give this
/// `clientInfo.name`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClientFile {
    pub(super) min_answer_ms: Option<Spanned<i64>>,
}

/// `[[upstreams]]`: stdio (`command`) or Streamable HTTP (`url`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UpstreamFile {
    pub(super) name: Spanned<String>,
    pub(super) command: Option<Spanned<String>>,
    pub(super) args: Option<Spanned<Vec<String>>>,
    pub(super) env: Option<Spanned<BTreeMap<String, String>>>,
    pub(super) inherit_env: Option<Spanned<Vec<String>>>,
    pub(super) cwd: Option<Spanned<String>>,
    pub(super) url: Option<Spanned<String>>,
    pub(super) headers: Option<Spanned<BTreeMap<String, String>>>,
    pub(super) protocol: Option<Spanned<String>>,
    pub(super) namespace: Option<Spanned<toml::Value>>,
    pub(super) start_timeout: Option<Spanned<String>>,
    pub(super) call_timeout: Option<Spanned<String>>,
}

/// `[[rules]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RuleFile {
    pub(super) server: Option<Spanned<String>>,
    pub(super) tool: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) arguments: BTreeMap<Spanned<String>, Spanned<String>>,
    pub(super) risk: Spanned<Risk>,
}

/// `[[intake]]`: which calls, and the question set (askgate-core's
/// `QuestionSet` shape without `source`, which is always `intake` here).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IntakeFile {
    pub(super) server: Option<Spanned<String>>,
    pub(super) tool: Spanned<String>,
    #[serde(default = "once")]
    pub(super) when: IntakeWhen,
    pub(super) preamble: Option<String>,
    pub(super) questions: Spanned<Vec<Question>>,
}

fn once() -> IntakeWhen {
    IntakeWhen::Once
}

/// `[inbox]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct InboxFile {
    pub(super) listen: Option<Spanned<String>>,
    pub(super) base_url: Option<Spanned<String>>,
    pub(super) token: Option<Spanned<String>>,
    pub(super) metrics_token: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) allow_plain_http: bool,
    pub(super) oidc: Option<Spanned<OidcFile>>,
}

/// `[inbox.oidc]`: people sign in with an OpenID provider.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OidcFile {
    pub(super) issuer: Spanned<String>,
    pub(super) client_id: Spanned<String>,
    pub(super) client_secret: Spanned<String>,
    #[serde(default)]
    pub(super) scopes: Vec<String>,
    pub(super) name_claim: Option<String>,
    pub(super) groups_claim: Option<String>,
    pub(super) groups: Spanned<Vec<Spanned<String>>>,
    pub(super) answers_for: Option<Vec<String>>,
}

/// `[[principals]]`: agents and their MCP bearer tokens.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PrincipalFile {
    pub(super) name: Spanned<String>,
    pub(super) token: Spanned<String>,
    /// Read only to refuse it with the reason: an agent is never an
    /// operator (that is a `[[people]]` entry's).
    pub(super) operator: Option<Spanned<bool>>,
    /// The people this agent acts for (see `[[approvals]]`).
    #[serde(default)]
    pub(super) acts_for: Vec<Spanned<String>>,
}

/// `[[people]]`: who signs in to the inbox and answers with the CLI.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PersonFile {
    pub(super) name: Spanned<String>,
    pub(super) token: Spanned<String>,
    #[serde(default)]
    pub(super) answers_for: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) operator: bool,
    /// The groups they belong to, as `[[approvals]]` name them.
    #[serde(default)]
    pub(super) groups: Vec<Spanned<String>>,
    /// Their subject at the OpenID provider (`[inbox.oidc]`).
    pub(super) oidc_sub: Option<Spanned<String>>,
}

/// `[[approvals]]`: which calls (matched as `[[rules]]` are, and by
/// risk), and who approves them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApprovalFile {
    pub(super) server: Option<Spanned<String>>,
    pub(super) tool: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) arguments: BTreeMap<Spanned<String>, Spanned<String>>,
    /// A risk, or a list of them.
    pub(super) risk: Option<Spanned<toml::Value>>,
    pub(super) any_of: Option<Spanned<Vec<String>>>,
    pub(super) quorum: Option<Spanned<QuorumFile>>,
    pub(super) not: Option<Spanned<String>>,
    pub(super) not_requester: Option<bool>,
    pub(super) veto: Option<bool>,
    pub(super) escalate: Option<Spanned<EscalateFile>>,
    pub(super) expires: Option<Spanned<String>>,
}

/// `quorum = { of = "sre", need = 2 }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct QuorumFile {
    pub(super) of: String,
    pub(super) need: u16,
}

/// `escalate = { after = "30m", to = "oncall" }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EscalateFile {
    pub(super) after: Spanned<String>,
    pub(super) to: String,
}

/// `[listen]`: Streamable HTTP downstream.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListenFile {
    pub(super) addr: Spanned<String>,
    #[serde(default)]
    pub(super) allowed_origins: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) allow_plain_http: bool,
    pub(super) oauth: Option<OAuthFile>,
}

/// `[listen.oauth]`: MCP authorization by an OAuth authorization server.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OAuthFile {
    pub(super) issuer: Spanned<String>,
    pub(super) resource: Spanned<String>,
    pub(super) jwks_url: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) scopes: Vec<String>,
    pub(super) principal_claim: Option<String>,
    pub(super) introspection: Option<Spanned<IntrospectionFile>>,
    #[serde(default)]
    pub(super) scope_principals: BTreeMap<String, Spanned<String>>,
    /// The people each agent a token names acts for, by the agent's
    /// principal name (`"oauth:<claim>"`, or a scope's principal).
    #[serde(default)]
    pub(super) acts_for: BTreeMap<String, Spanned<Vec<Spanned<String>>>>,
}

/// `[listen.oauth.introspection]`: opaque tokens, checked by the issuer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct IntrospectionFile {
    pub(super) client_id: Spanned<String>,
    pub(super) client_secret: Spanned<String>,
    pub(super) url: Option<Spanned<String>>,
}

/// `[notify]`: the webhook posted when an ask is parked and when it settles.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NotifyFile {
    pub(super) webhook: Spanned<String>,
    pub(super) preset: Option<Spanned<String>>,
    pub(super) headers: Option<Spanned<BTreeMap<String, String>>>,
}
