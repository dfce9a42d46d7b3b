//! `[listen]`: the Streamable HTTP listener for clients, and the origins
//! a browser's request to it may come from.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::SocketAddr;

use askgate_core::approval::name_problem;
use toml::Spanned;

use super::approving::{ActsFor, OAUTH_AGENT};
use super::check::socket_addr;
use super::error::{ConfigError, Source};
use super::file::{IntrospectionFile, ListenFile, OAuthFile, PrincipalFile};

/// The Streamable HTTP listener for clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    /// The address.
    pub addr: SocketAddr,
    /// The origins a browser's request may come from (`Origin`), besides
    /// the loopback ones ([`LOOPBACK_ORIGINS`]), as `scheme://host[:port]`
    /// (`:*` for any port). A request from any other origin is refused
    /// (403), against DNS rebinding and cross-site requests; a request
    /// with no `Origin` (not a browser's) is not checked.
    pub allowed_origins: Vec<String>,
    /// Whether it may listen on an address other machines reach
    /// (`allow_plain_http`; `--allow-plain-http`): askgate serves plain
    /// HTTP, so the operator says TLS is terminated in front of it.
    pub allow_plain_http: bool,
    /// MCP authorization: OAuth access tokens from an authorization
    /// server (`[listen.oauth]`), besides the principals' static tokens.
    pub oauth: Option<OAuth>,
}

/// `[listen.oauth]`: askgate as an OAuth 2.1 resource server for MCP
/// clients (the MCP authorization spec; RFC 9728's metadata, RFC 9068's
/// JWT access tokens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuth {
    /// The authorization server, as its tokens name it (`iss`); its keys
    /// are found through its metadata.
    pub issuer: String,
    /// askgate's MCP endpoint as the authorization server knows it: the
    /// audience (`aud`) a token must be minted for.
    pub resource: String,
    /// The issuer's key set, when its metadata does not say where it is.
    pub jwks_url: Option<String>,
    /// The scopes every token must grant (none: any token of the issuer
    /// for this resource).
    pub scopes: Vec<String>,
    /// The claim that names the principal (default: `client_id`, else
    /// `sub`).
    pub principal_claim: Option<String>,
    /// Opaque (non-JWT) tokens are checked at the issuer's introspection
    /// endpoint (RFC 7662), askgate signing in as this client; without it
    /// only JWTs are taken.
    pub introspection: Option<Introspection>,
    /// Principals by scope (`scope_principals`): a token that grants one of
    /// these scopes acts as its principal, whoever it was issued to.
    pub scope_principals: BTreeMap<String, String>,
}

/// `[listen.oauth.introspection]`: how askgate asks the issuer about an
/// opaque token.
#[derive(Clone, PartialEq, Eq)]
pub struct Introspection {
    /// askgate's client id at the issuer.
    pub client_id: String,
    /// Its secret. Never logged: `Debug` redacts it.
    pub client_secret: String,
    /// The endpoint, when the issuer's metadata does not name one.
    pub url: Option<String>,
}

impl fmt::Debug for Introspection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Introspection")
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("url", &self.url)
            .finish()
    }
}

/// The origins always allowed on the listener: pages on this machine.
pub const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

impl Listen {
    /// On `addr`, with the loopback origins only.
    pub fn on(addr: SocketAddr) -> Listen {
        Listen {
            addr,
            allowed_origins: Vec::new(),
            allow_plain_http: false,
            oauth: None,
        }
    }

    /// Every origin allowed: the loopback ones and the configured ones.
    pub fn origins(&self) -> Vec<String> {
        LOOPBACK_ORIGINS
            .iter()
            .map(|&origin| origin.to_owned())
            .chain(self.allowed_origins.iter().cloned())
            .collect()
    }
}

/// The address the gateway serves Streamable HTTP on: only a loopback
/// one when no principal needs a token (`no_principals`).
pub(super) fn check_listen(
    listen: super::file::ListenFile,
    no_principals: bool,
    src: &Source<'_>,
) -> Result<Listen, ConfigError> {
    let addr = &listen.addr;
    let parsed = socket_addr(addr, src)?;
    let oauth = listen
        .oauth
        .map(|oauth| check_oauth(oauth, src))
        .transpose()?;
    if !parsed.ip().is_loopback() && no_principals && oauth.is_none() {
        return Err(src.at(
            addr.span(),
            format!(
                "{parsed} is reachable from other machines and no [[principals]] are \
                 configured, so anyone who can reach it could call the tools; listen \
                 on a loopback address (127.0.0.1), add principals with tokens, or \
                 [listen.oauth]"
            ),
        ));
    }
    if let Some(why) = super::plain_http_refused(parsed, listen.allow_plain_http, "[listen]") {
        return Err(src.at(addr.span(), why));
    }
    let allowed_origins = listen
        .allowed_origins
        .into_iter()
        .map(|origin| match origin_problem(origin.get_ref()) {
            None => Ok(origin.into_inner()),
            Some(problem) => Err(src.at(origin.span(), problem)),
        })
        .collect::<Result<_, _>>()?;
    Ok(Listen {
        addr: parsed,
        allowed_origins,
        allow_plain_http: listen.allow_plain_http,
        oauth,
    })
}

/// What is wrong with an allowed origin, if anything: it is
/// `http(s)://host[:port]` (`:*` for any port), with no path.
fn origin_problem(origin: &str) -> Option<String> {
    let rest = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    let host_ok = rest.is_some_and(|rest| {
        !rest.is_empty() && !rest.contains(['/', '?', '#', '@', ' ']) && !rest.starts_with(':')
    });
    (!host_ok).then(|| {
        format!(
            "invalid allowed origin {origin:?}; expected how a browser names a page's origin: \
             http:// or https://, a host and a port or :* for any (\"https://app.example.com:443\"), \
             with no path"
        )
    })
}

/// An issuer's URL (`key = value`): https, or http on this machine only
/// (localhost, 127.0.0.0/8, [::1]): tokens, codes and secrets cross it.
pub(super) fn issuer_url(
    value: Spanned<String>,
    key: &str,
    src: &Source<'_>,
) -> Result<String, ConfigError> {
    let text = value.get_ref().trim().to_owned();
    let on_this_machine = |url: &url::Url| match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url::Url::parse(&text) {
        Ok(parsed) if parsed.scheme() == "https" && parsed.host().is_some() => Ok(text),
        Ok(parsed) if parsed.scheme() == "http" && on_this_machine(&parsed) => Ok(text),
        _ => Err(src.at(
            value.span(),
            format!(
                "{key} = {text:?}: expected an https:// URL (http:// only on this machine: \
                 localhost, 127.0.0.1, [::1])"
            ),
        )),
    }
}

/// `[listen.oauth]`, each URL checked.
fn check_oauth(oauth: OAuthFile, src: &Source<'_>) -> Result<OAuth, ConfigError> {
    let url = |value: Spanned<String>, key: &str| issuer_url(value, key, src);
    let introspection = oauth
        .introspection
        .map(|file| check_introspection(file, src))
        .transpose()?;
    let mut scope_principals = BTreeMap::new();
    for (scope, principal) in oauth.scope_principals {
        let name = principal.get_ref().trim();
        if name.is_empty() || ["local", "anonymous", "*"].contains(&name) {
            return Err(src.at(
                principal.span(),
                format!(
                    "scope_principals: {scope:?} names {name:?}, which is no agent's name \
                     (\"local\", \"anonymous\" and \"*\" are askgate's own)"
                ),
            ));
        }
        if let Some(why) = name_problem(name).or(name.starts_with(OAUTH_AGENT).then_some(
            "it starts with \"oauth:\", which askgate gives agents by their token's claim",
        )) {
            return Err(src.at(
                principal.span(),
                format!("scope_principals: {scope:?} names {name:?}, which cannot be an agent's name: {why}"),
            ));
        }
        scope_principals.insert(scope, name.to_owned());
    }
    Ok(OAuth {
        issuer: url(oauth.issuer, "issuer")?,
        resource: url(oauth.resource, "resource")?,
        jwks_url: oauth
            .jwks_url
            .map(|jwks| url(jwks, "jwks_url"))
            .transpose()?,
        scopes: oauth.scopes,
        principal_claim: oauth.principal_claim,
        introspection,
        scope_principals,
    })
}

/// `[listen.oauth.introspection]`: a client id and secret, not blank.
fn check_introspection(
    file: Spanned<IntrospectionFile>,
    src: &Source<'_>,
) -> Result<Introspection, ConfigError> {
    let file = file.into_inner();
    let filled = |value: Spanned<String>, key: &str| {
        if value.get_ref().trim().is_empty() {
            Err(src.at(
                value.span(),
                format!("[listen.oauth.introspection] {key} is blank"),
            ))
        } else {
            Ok(value.into_inner())
        }
    };
    Ok(Introspection {
        client_id: filled(file.client_id, "client_id")?,
        client_secret: filled(file.client_secret, "client_secret")?,
        url: file
            .url
            .map(|url| issuer_url(url, "url", src))
            .transpose()?,
    })
}

/// `[listen.oauth.acts_for]`, taken from the file: whom each agent a token
/// names acts for, by the agent's principal name. That is
/// `"oauth:<client_id or sub>"` for an agent its token's claim names, or a
/// principal of `scope_principals` no `[[principals]]` entry declares (an
/// entry's own `acts_for` says it). Without it, an agent named by its
/// claim acts for nobody the config knows, and a rule that keeps the
/// requester's people out refuses its calls (see `Approvals::for_call`).
pub(super) fn oauth_acts_for(
    listen: Option<&mut ListenFile>,
    principals: &[Spanned<PrincipalFile>],
    src: &Source<'_>,
) -> Result<OAuthAgents, ConfigError> {
    let Some(oauth) = listen.and_then(|listen| listen.oauth.as_mut()) else {
        return Ok(OAuthAgents::default());
    };
    let scoped: BTreeSet<String> = oauth
        .scope_principals
        .values()
        .map(|name| name.get_ref().trim().to_owned())
        .collect();
    let mut agents = Vec::with_capacity(oauth.acts_for.len());
    for (agent, people) in std::mem::take(&mut oauth.acts_for) {
        let declared = principals
            .iter()
            .any(|p| p.get_ref().name.get_ref() == &agent);
        let problem = match agent.strip_prefix(OAUTH_AGENT) {
            Some(claim) => name_problem(claim).map(|why| format!("the name after \"oauth:\" is not usable: {why}")),
            None if declared => Some(
                "it is a [[principals]] entry's name: say whom it acts for with that entry's acts_for"
                    .to_owned(),
            ),
            None if scoped.contains(&agent) => None,
            None => Some(format!(
                "no token names an agent so: write \"oauth:<client_id>\" (or \"oauth:<sub>\", or the \
                 claim principal_claim names) for an agent its token's claim names, or a principal \
                 of scope_principals{}",
                if scoped.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", scoped.iter().cloned().collect::<Vec<_>>().join(", "))
                }
            )),
        };
        if let Some(why) = problem {
            return Err(src.at(
                people.span(),
                format!("[listen.oauth.acts_for] names the agent {agent:?}: {why}"),
            ));
        }
        if people.get_ref().is_empty() {
            return Err(src.at(
                people.span(),
                format!(
                    "[listen.oauth.acts_for] says the agent {agent:?} acts for nobody: a token's \
                     agent is anybody's until the config names its people, so its calls are \
                     refused wherever a rule keeps the requester's people out; name them, or \
                     leave it out"
                ),
            ));
        }
        agents.push((agent, people.into_inner()));
    }
    let names_users = oauth
        .principal_claim
        .as_deref()
        .is_some_and(|claim| claim != "client_id");
    Ok(OAuthAgents {
        acts_for: agents,
        naming: OAuthNaming {
            scoped,
            names_users,
        },
    })
}

/// What `[listen.oauth]` says of the agents its tokens name.
#[derive(Default)]
pub(super) struct OAuthAgents {
    /// Whom each acts for (`[listen.oauth.acts_for]`).
    pub(super) acts_for: Vec<ActsFor>,
    /// How its tokens name their agents.
    pub(super) naming: OAuthNaming,
}

/// How the tokens of `[listen.oauth]` name their agents: what an agent's
/// name says of who runs it.
#[derive(Debug, Clone, Default)]
pub(crate) struct OAuthNaming {
    /// The principals of `scope_principals`: whoever holds the scope acts
    /// as one, an agent of the issuer's, not one token the operator
    /// handed out.
    pub(crate) scoped: BTreeSet<String>,
    /// Whether a token's agent is named by a claim of its user
    /// (`principal_claim`, such as `sub`), not by its application's
    /// `client_id`, which all the application's users share.
    pub(crate) names_users: bool,
}
