//! The checks that turn the file as written into a usable [`Config`]: each
//! refuses the first value that is not usable, at its line and key.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};

use askgate_core::{QuestionSet, Risk, Source as Asker};
use toml::Spanned;

use super::approving::{Named, check_approvals};
use super::credentials::{check_people, check_principals, inbox_token, metrics_token_of};
use super::error::{ConfigError, Source};
use super::file::{File, IntakeFile, NotifyFile, RuleFile, UpstreamFile};
use super::listen::oauth_acts_for;
use super::naming;
use super::trusting::{
    MOST_RETRY_WINDOW, MOST_STOP_GRACE, Trusting, check_confirmations, duration,
};
use super::{
    Config, DEFAULT_INBOX, Http, Inbox, Intake, MAX_NAME, Stdio, StoreUrl, Transport, Upstream,
    UpstreamProtocol, default_inbox, parse_threshold,
};
use crate::rules::{ArgumentPath, Pattern, Rule, Rules};
use askgate_inbox::notify::{Preset, Webhook};

/// Turn the file as written into a usable config, refusing the first value
/// that is not usable.
pub(super) fn check(mut file: File, src: &Source<'_>, path: &Path) -> Result<Config, ConfigError> {
    // Checked once the tokens it may not be are known.
    let metrics_token = file.inbox.as_mut().and_then(|i| i.metrics_token.take());
    let separator = naming::separator(file.separator, src)?;
    let upstreams = check_upstreams(file.upstreams, &separator, src)?;
    let names: Vec<&str> = upstreams.iter().map(|u| u.name.as_str()).collect();
    let rules = file
        .rules
        .into_iter()
        .enumerate()
        .map(|(index, rule)| check_rule(index, rule, &names, src))
        .collect::<Result<Vec<_>, _>>()?;
    let default_risk = file
        .default_risk
        .map_or(Risk::MediumWrite, Spanned::into_inner);
    let auto_approve = match file.auto_approve {
        None => None,
        Some(value) => parse_threshold(value.get_ref()).map_err(|e| src.at(value.span(), e))?,
    };
    let intake = file
        .intake
        .into_iter()
        .map(|intake| check_intake(intake, &names, src))
        .collect::<Result<Vec<_>, _>>()?;
    let mut inbox = check_inbox(file.inbox, src)?;
    let oauth_agents = oauth_acts_for(file.listen.as_mut(), &file.principals, src)?;
    let named = Named {
        oauth: oauth_agents.naming,
        signed_in: inbox
            .oidc
            .as_ref()
            .map(|oidc| oidc.groups.clone())
            .unwrap_or_default(),
        people: file
            .people
            .iter_mut()
            .map(|p| {
                let p = p.get_mut();
                (p.name.clone(), std::mem::take(&mut p.groups))
            })
            .collect(),
        acts_for: file
            .principals
            .iter_mut()
            .map(|p| {
                let p = p.get_mut();
                (p.name.get_ref().clone(), std::mem::take(&mut p.acts_for))
            })
            // The caller no token names: stdio's, a loopback listener's.
            .chain(["anonymous", "local"].map(|caller| (caller.to_owned(), file.acts_for.clone())))
            .chain(oauth_agents.acts_for)
            .collect(),
        subjects: file
            .people
            .iter()
            .filter_map(|p| {
                let p = p.get_ref();
                p.oidc_sub.as_ref().map(|_| p.name.get_ref().clone())
            })
            .collect(),
    };
    let principals = check_principals(file.principals, inbox.token.as_deref(), src)?;
    let people = check_people(
        file.people,
        &principals,
        inbox.token.as_deref(),
        inbox.oidc.is_some(),
        src,
    )?;
    let approvals = check_approvals(file.approvals, named, &names, src)?;
    inbox.metrics_token = metrics_token
        .map(|token| metrics_token_of(token, &inbox, &principals, &people, src))
        .transpose()?;
    let listen = file
        .listen
        .map(|listen| super::listen::check_listen(listen, principals.is_empty(), src))
        .transpose()?;
    let (limits, most_pending) = super::limits::check_limits(file.limits, src)?;
    let notify = file
        .notify
        .map(|notify| check_notify(notify, src))
        .transpose()?;
    let confirmations = check_confirmations(
        Trusting {
            caller_confirm: file.caller_confirm,
            danger_high_risk: file.danger_caller_confirm_high_risk,
            min_answer_ms: file.min_answer_ms,
            inbox_wait: file.inbox_wait,
            ask_expires: file.ask_expires,
            clients: file.clients,
        },
        src,
    )?;
    let confirmations = askgate_mcp::Confirmations {
        most_pending_per_principal: most_pending,
        ..confirmations
    };
    let retry_window = file
        .retry_window
        .map(|window| {
            duration(
                &window,
                "retry_window",
                jiff::SignedDuration::ZERO,
                MOST_RETRY_WINDOW,
                src,
            )
        })
        .transpose()?
        .unwrap_or(super::RETRY_WINDOW);
    let stop_grace = file
        .stop_grace
        .map(|grace| {
            duration(
                &grace,
                "stop_grace",
                jiff::SignedDuration::ZERO,
                MOST_STOP_GRACE,
                src,
            )
        })
        .transpose()?
        .unwrap_or(super::STOP_GRACE);
    // Last: the default store may create the data directory.
    let store = match file.store {
        Some(store) => store_url(store, src)?,
        None => super::store_url(None).map_err(|why| src.at_key(None, "store", why.to_string()))?,
    };
    Ok(Config {
        file: Some(path.to_owned()),
        names_given: true,
        upstreams,
        separator,
        rules: Rules::new(rules, default_risk, file.trust_read_only_hints),
        auto_approve,
        allow_session_raise: file.allow_session_raise,
        intake,
        offer_ask_tool: file.offer_ask_tool.unwrap_or(true),
        store: StoreUrl(store),
        inbox,
        principals,
        people,
        approvals,
        replay: file.replay.unwrap_or_default(),
        durable_reads: file.durable_reads,
        express_lane: file.express_lane.unwrap_or(true),
        listen,
        notify,
        confirmations,
        retry_window,
        stop_grace,
        limits,
    })
}

/// The inbox's settings, defaults where none are written.
fn check_inbox(
    inbox: Option<super::file::InboxFile>,
    src: &Source<'_>,
) -> Result<Inbox, ConfigError> {
    let Some(inbox) = inbox else {
        return Ok(Inbox::on_loopback());
    };
    let listen = match &inbox.listen {
        None => default_inbox(),
        Some(listen) => {
            let addr = socket_addr(listen, src)?;
            if let Some(why) = super::plain_http_refused(addr, inbox.allow_plain_http, "[inbox]") {
                return Err(src.at(listen.span(), why));
            }
            addr
        }
    };
    Ok(Inbox {
        listen,
        oidc: inbox
            .oidc
            .map(|oidc| super::inbox::check_oidc(oidc, src))
            .transpose()?,
        metrics_token: None,
        allow_plain_http: inbox.allow_plain_http,
        base_url: inbox.base_url.map(|url| http_url(url, src)).transpose()?,
        token: inbox
            .token
            .map(|token| inbox_token(token, src))
            .transpose()?,
    })
}

fn check_notify(notify: NotifyFile, src: &Source<'_>) -> Result<Webhook, ConfigError> {
    let preset = match notify.preset {
        None => Preset::default(),
        Some(text) => Preset::parse(text.get_ref()).ok_or_else(|| {
            src.at(
                text.span(),
                format!(
                    "unknown preset {:?}: expected {}",
                    text.get_ref(),
                    Preset::EXPECTED
                ),
            )
        })?,
    };
    let headers = notify
        .headers
        .map(|headers| {
            let span = headers.span();
            let headers = headers.into_inner();
            match headers.iter().find_map(|(k, v)| header_problem(k, v)) {
                Some(problem) => Err(src.at(span, problem)),
                None => Ok(headers),
            }
        })
        .transpose()?
        .unwrap_or_default();
    // Not quoted in errors: a webhook URL may hold a secret (Slack's do).
    let span = notify.webhook.span();
    let url = http_url(notify.webhook, src).map_err(|_| {
        src.at(
            span,
            "invalid webhook URL; expected http://HOST/... or https://HOST/...",
        )
    })?;
    Ok(Webhook::new(url, preset, headers))
}

fn check_upstreams(
    upstreams: Vec<Spanned<UpstreamFile>>,
    separator: &str,
    src: &Source<'_>,
) -> Result<Vec<Upstream>, ConfigError> {
    if upstreams.is_empty() {
        return Err(src.at_key(
            None,
            "upstreams",
            "no upstream servers; add an [[upstreams]] table with a name and a command \
             (stdio) or a url (Streamable HTTP)",
        ));
    }
    let mut seen: HashMap<String, Range<usize>> = HashMap::new();
    let mut out = Vec::with_capacity(upstreams.len());
    for upstream in upstreams {
        let span = upstream.span();
        let upstream = upstream.into_inner();
        let name = upstream.name.get_ref();
        if let Some(problem) = name_problem(name) {
            return Err(src.at(upstream.name.span(), problem));
        }
        if let Some(first) = seen.get(name) {
            return Err(src.at(
                upstream.name.span(),
                format!(
                    "duplicate upstream name {name:?} (first at line {}); each upstream \
                     needs its own name, the prefix of its tools",
                    src.line_of(first.start)
                ),
            ));
        }
        seen.insert(name.clone(), upstream.name.span());
        out.push(check_transport(upstream, span, separator, src)?);
    }
    Ok(out)
}

/// What is wrong with an upstream name, if anything.
pub(super) fn name_problem(name: &str) -> Option<String> {
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
    if name.is_empty() || name.len() > MAX_NAME || !name.chars().all(allowed) {
        Some(format!(
            "invalid upstream name {name:?}; expected 1 to {MAX_NAME} characters of a-z, 0-9, \
             _ and - (it prefixes the server's tool names)"
        ))
    } else {
        None
    }
}

fn check_transport(
    mut upstream: UpstreamFile,
    span: Range<usize>,
    separator: &str,
    src: &Source<'_>,
) -> Result<Upstream, ConfigError> {
    let name = upstream.name.get_ref().clone();
    let namespace = naming::namespace(upstream.namespace.take(), separator, src)?;
    if namespace != naming::Namespace::Off
        && let Some(problem) = naming::separator_inside(&name, "upstream name", separator)
    {
        return Err(src.at(upstream.name.span(), problem));
    }
    let protocol = match upstream.protocol.take() {
        None => UpstreamProtocol::default(),
        Some(text) => UpstreamProtocol::parse(text.get_ref()).ok_or_else(|| {
            src.at(
                text.span(),
                format!(
                    "unknown protocol {:?}: expected {}",
                    text.get_ref(),
                    UpstreamProtocol::EXPECTED
                ),
            )
        })?,
    };
    let mut timeouts = super::Timeouts::default();
    if let Some(text) = upstream.start_timeout.take() {
        timeouts.start = duration(
            &text,
            "start_timeout",
            jiff::SignedDuration::from_secs(1),
            jiff::SignedDuration::from_mins(10),
            src,
        )?;
    }
    if let Some(text) = upstream.call_timeout.take() {
        let limit = duration(
            &text,
            "call_timeout",
            jiff::SignedDuration::ZERO,
            jiff::SignedDuration::from_hours(24),
            src,
        )?;
        timeouts.call = (!limit.is_zero()).then_some(limit);
    }
    let transport = match (upstream.command.take(), upstream.url.take()) {
        (Some(_), Some(url)) => {
            return Err(src.at(
                url.span(),
                "an upstream has either a command (a stdio server) or a url (a Streamable \
                 HTTP server), not both",
            ));
        }
        (None, None) => {
            return Err(src.at(
                span,
                format!(
                    "upstream {name:?} needs a command (a stdio server) or a url (a \
                     Streamable HTTP server)"
                ),
            ));
        }
        (Some(command), None) => stdio_transport(command, upstream, src)?,
        (None, Some(url)) => http_transport(url, upstream, src)?,
    };
    Ok(Upstream {
        name,
        transport,
        protocol,
        namespace,
        timeouts,
    })
}

/// A stdio upstream: its command, args, env and working directory.
fn stdio_transport(
    command: Spanned<String>,
    upstream: UpstreamFile,
    src: &Source<'_>,
) -> Result<Transport, ConfigError> {
    if let Some(headers) = upstream.headers {
        return Err(src.at(
            headers.span(),
            "headers apply to url upstreams only; a stdio server takes env",
        ));
    }
    if command.get_ref().trim().is_empty() {
        return Err(src.at(command.span(), "an empty command"));
    }
    let inherit = match upstream.inherit_env {
        None => crate::environment::Inherit::default(),
        Some(names) => {
            crate::environment::Inherit::parse(names.get_ref().iter().map(String::as_str))
                .map_err(|why| src.at(names.span(), why))?
        }
    };
    Ok(Transport::Stdio(Stdio {
        command: command.into_inner(),
        args: upstream.args.map(Spanned::into_inner).unwrap_or_default(),
        env: upstream.env.map(Spanned::into_inner).unwrap_or_default(),
        inherit,
        cwd: upstream.cwd.map(|cwd| PathBuf::from(cwd.into_inner())),
    }))
}

/// A Streamable HTTP upstream: its URL and headers.
fn http_transport(
    url: Spanned<String>,
    upstream: UpstreamFile,
    src: &Source<'_>,
) -> Result<Transport, ConfigError> {
    let stdio_only = [
        upstream.args.map(|v| v.span()),
        upstream.env.map(|v| v.span()),
        upstream.inherit_env.map(|v| v.span()),
        upstream.cwd.map(|v| v.span()),
    ];
    if let Some(span) = stdio_only.into_iter().flatten().next() {
        return Err(src.at(
            span,
            "args, env, inherit_env and cwd apply to command (stdio) upstreams only; a url \
             upstream takes headers",
        ));
    }
    let headers = upstream.headers.map(|headers| {
        let span = headers.span();
        let headers = headers.into_inner();
        match headers.iter().find_map(|(k, v)| header_problem(k, v)) {
            Some(problem) => Err(src.at(span, problem)),
            None => Ok(headers),
        }
    });
    Ok(Transport::Http(Http {
        url: http_url(url, src)?,
        headers: headers.transpose()?.unwrap_or_default(),
    }))
}

/// What is wrong with a header, if anything. Never quotes the value.
fn header_problem(name: &str, value: &str) -> Option<String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        Some(format!("invalid header name {name:?}"))
    } else if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
        Some(format!(
            "the value of header {name:?} has a line break or NUL"
        ))
    } else {
        None
    }
}

fn check_rule(
    index: usize,
    rule: Spanned<RuleFile>,
    upstreams: &[&str],
    src: &Source<'_>,
) -> Result<Rule, ConfigError> {
    let span = rule.span();
    let rule = rule.into_inner();
    if rule.server.is_none() && rule.tool.is_none() && rule.arguments.is_empty() {
        return Err(src.at_key(
            Some(span),
            &format!("rules[{index}]"),
            "a rule with no server, tool or arguments matches every call; set default_risk \
             instead",
        ));
    }
    let server = rule
        .server
        .map(|server| server_glob(&server, upstreams, src))
        .transpose()?;
    let tool = rule
        .tool
        .map(|tool| Pattern::name(tool.get_ref()).map_err(|e| src.at(tool.span(), e)))
        .transpose()?;
    let arguments = argument_conditions(rule.arguments, src)?;
    Ok(Rule {
        server,
        tool,
        arguments,
        risk: rule.risk.into_inner(),
    })
}

/// Conditions on argument values (`arguments = { path = "glob" }`), each
/// path and glob checked.
pub(super) fn argument_conditions(
    arguments: std::collections::BTreeMap<Spanned<String>, Spanned<String>>,
    src: &Source<'_>,
) -> Result<Vec<(ArgumentPath, Pattern)>, ConfigError> {
    arguments
        .into_iter()
        .map(|(key, glob)| {
            let path = ArgumentPath::parse(key.get_ref()).map_err(|e| src.at(key.span(), e))?;
            let glob = Pattern::value(glob.get_ref()).map_err(|e| src.at(glob.span(), e))?;
            Ok((path, glob))
        })
        .collect()
}

/// A glob on upstream names that must match at least one: a rule for a
/// server that is not there is a typo.
pub(super) fn server_glob(
    server: &Spanned<String>,
    upstreams: &[&str],
    src: &Source<'_>,
) -> Result<Pattern, ConfigError> {
    let pattern = Pattern::name(server.get_ref()).map_err(|e| src.at(server.span(), e))?;
    if upstreams.iter().any(|name| pattern.is_match(name)) {
        Ok(pattern)
    } else {
        Err(src.at(
            server.span(),
            format!(
                "{:?} matches no upstream; the upstreams are {}",
                server.get_ref(),
                upstreams.join(", ")
            ),
        ))
    }
}

fn check_intake(
    intake: Spanned<IntakeFile>,
    upstreams: &[&str],
    src: &Source<'_>,
) -> Result<Intake, ConfigError> {
    let intake = intake.into_inner();
    let server = intake
        .server
        .map(|server| server_glob(&server, upstreams, src))
        .transpose()?;
    let tool = Pattern::name(intake.tool.get_ref()).map_err(|e| src.at(intake.tool.span(), e))?;
    let span = intake.questions.span();
    let questions = QuestionSet {
        preamble: intake.preamble,
        questions: intake.questions.into_inner(),
        source: Asker::Intake,
    };
    questions
        .check()
        .map_err(|e| src.at(span, format!("the question set cannot be asked: {e}")))?;
    Ok(Intake {
        server,
        tool,
        when: intake.when,
        questions,
    })
}

pub(super) fn socket_addr(
    addr: &Spanned<String>,
    src: &Source<'_>,
) -> Result<SocketAddr, ConfigError> {
    addr.get_ref().parse().map_err(|_| {
        src.at(
            addr.span(),
            format!(
                "invalid address {:?}; expected IP:PORT, such as {DEFAULT_INBOX}",
                addr.get_ref()
            ),
        )
    })
}

fn http_url(url: Spanned<String>, src: &Source<'_>) -> Result<String, ConfigError> {
    let text = url.get_ref();
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(url.into_inner()),
        _ => Err(src.at(
            url.span(),
            format!("invalid URL {text:?}; expected http://HOST/... or https://HOST/..."),
        )),
    }
}

fn store_url(store: Spanned<String>, src: &Source<'_>) -> Result<String, ConfigError> {
    let text = store.get_ref();
    let known = ["sqlite:", "postgres://", "postgresql://"];
    if known.iter().any(|scheme| text.starts_with(scheme)) {
        Ok(store.into_inner())
    } else {
        // Not quoted: a URL may hold a password.
        Err(src.at(
            store.span(),
            "unknown store; expected sqlite://PATH or postgres://USER@HOST/DB",
        ))
    }
}
