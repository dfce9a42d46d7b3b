//! `[[approvals]]`: who approves which calls. Each entry matches calls as
//! a `[[rules]]` entry does (server, tool and argument globs) and by risk,
//! first match wins, and names who may answer their asks — `any_of`
//! people and groups, or a `quorum` of a group — with askgate-core's
//! [`Approval`] for the rest (the requester's people kept out, the veto,
//! escalation, expiry). People belong to groups (`[[people]] groups`);
//! agents act for people (`[[principals]] acts_for`). Every name is
//! checked at load: a rule that could never settle is refused, saying why.

use std::collections::{BTreeMap, BTreeSet};

use askgate_core::Risk;
use askgate_core::approval::{
    Approval, Approvers, Asked, Directory, Escalation, Excluded, PolicyError,
};
use askgate_mcp::approvals::Approving;
use serde_json::{Map, Value};
use toml::Spanned;

use super::check::{argument_conditions, server_glob};
use super::error::{ConfigError, Source};
use super::file::ApprovalFile;
use super::listen::OAuthNaming;
use super::trusting::duration;
use crate::rules::{ArgumentPath, Pattern, arguments_hold, names_hold};

/// How the principal an OAuth token names by its claim begins (see
/// `listen::oauth`).
pub(crate) const OAUTH_AGENT: &str = "oauth:";

/// The longest an approval rule's ask may wait (`expires`) or wait
/// before it escalates.
const MOST_WAIT: jiff::SignedDuration = jiff::SignedDuration::from_hours(30 * 24);

/// The approval rules, and the people and agents they name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Approvals {
    rules: Vec<ApprovalRule>,
    directory: Directory,
    /// The people each principal (agent) acts for, by its name.
    acts_for: BTreeMap<String, Vec<String>>,
    /// How OAuth tokens name their agents.
    oauth: OAuthNaming,
}

/// One `[[approvals]]` entry.
#[derive(Debug, Clone)]
struct ApprovalRule {
    /// `approvals[<index>]`, as the ask and the audit name it.
    name: String,
    server: Option<Pattern>,
    tool: Option<Pattern>,
    arguments: Vec<(ArgumentPath, Pattern)>,
    /// The risks it is for; `None`: every risk.
    risks: Option<Vec<Risk>>,
    approval: Approval,
    /// How long its ask waits before it expires, when the rule says.
    expires: Option<std::time::Duration>,
}

impl Approvals {
    /// The approval rule `principal`'s call of `tool` on `server` at `risk`
    /// with `arguments` is under, resolved for it: the first that matches.
    pub(crate) fn for_call(
        &self,
        server: &str,
        tool: &str,
        risk: Risk,
        arguments: &Map<String, Value>,
        principal: &str,
    ) -> Option<Approving> {
        let rule = self.rules.iter().find(|rule| {
            names_hold(rule.server.as_ref(), rule.tool.as_ref(), server, tool)
                && rule
                    .risks
                    .as_ref()
                    .is_none_or(|risks| risks.contains(&risk))
                && arguments_hold(&rule.arguments, arguments)
        })?;
        let acts_for = self.acts_for.get(principal).cloned().unwrap_or_default();
        let asked = Asked {
            risk,
            requester_people: &acts_for,
            escalated: false,
        };
        let mut panel = rule.approval.panel(&rule.name, &self.directory, &asked);
        // An agent an OAuth token names — by its claim, or by a scope
        // whoever holds it acts as — for whom the config names nobody: any
        // client of the issuer, run by anyone. Where the rule keeps the
        // requester's people out (by default from high_write), its person
        // cannot be told apart, so nobody may answer until
        // [listen.oauth.acts_for] (or its [[principals]] entry) says whom
        // it acts for.
        let scoped = self.oauth.scoped.contains(principal);
        let by_token = principal.starts_with(OAUTH_AGENT);
        if acts_for.is_empty() && (by_token || scoped) && rule.approval.excludes_requester(risk) {
            panel.requester_unknown = true;
        }
        // Whose client answers: an agent's name shared by the clients of
        // many people (its application's client_id, a scope) tells none
        // of them apart, so none of their answers is its person's.
        let client_speaks = !scoped && (!by_token || self.oauth.names_users);
        Some(Approving {
            panel,
            acts_for,
            expires: rule.expires,
            client_speaks,
        })
    }
}

/// An agent's name and the people it acts for, as written.
pub(super) type ActsFor = (String, Vec<Spanned<String>>);

/// The people's groups and the agents' people, as the file gives them.
pub(super) struct Named {
    /// Each person's name and groups.
    pub(super) people: Vec<(Spanned<String>, Vec<Spanned<String>>)>,
    /// Each principal's name and the people it acts for.
    pub(super) acts_for: Vec<ActsFor>,
    /// The groups whose members an OpenID provider names
    /// (`[inbox.oidc] groups`).
    pub(super) signed_in: Vec<String>,
    /// The people the provider knows by their subject (`oidc_sub`).
    pub(super) subjects: BTreeSet<String>,
    /// How OAuth tokens name their agents.
    pub(super) oauth: OAuthNaming,
}

/// Check the `[[approvals]]` entries against the people and groups
/// `named`, and the upstreams' `names`.
pub(super) fn check_approvals(
    files: Vec<Spanned<ApprovalFile>>,
    named: Named,
    upstreams: &[&str],
    src: &Source<'_>,
) -> Result<Approvals, ConfigError> {
    let directory = directory(&named, src)?;
    // Whether a rule lets people signed in with the provider answer.
    let signs_in = files.iter().any(|file| {
        let file = file.get_ref();
        let quorum = file.quorum.as_ref().map(|q| &q.get_ref().of);
        file.any_of
            .iter()
            .flat_map(|names| names.get_ref())
            .chain(quorum)
            .chain(file.escalate.as_ref().map(|e| &e.get_ref().to))
            .any(|name| directory.is_signed_in_group(name))
    });
    let mut acts_for = BTreeMap::new();
    for (principal, people) in named.acts_for {
        let mut names = Vec::with_capacity(people.len());
        for person in people {
            let agent = match principal.as_str() {
                "anonymous" | "local" => "the caller without a token (acts_for)".to_owned(),
                name if name.starts_with(OAUTH_AGENT) => {
                    format!("[listen.oauth.acts_for] {name:?}")
                }
                name => format!("principal {name:?}"),
            };
            if !directory.is_person(person.get_ref()) {
                return Err(src.at(
                    person.span(),
                    format!(
                        "{agent} acts for {:?}, who is not in [[people]]",
                        person.get_ref()
                    ),
                ));
            }
            if signs_in && !named.subjects.contains(person.get_ref()) {
                return Err(src.at(
                    person.span(),
                    format!(
                        "{agent} acts for {name:?}, and [[approvals]] let people signed in with \
                         [inbox.oidc] answer: {name:?} could sign in there under another name and \
                         approve the agent's own asks; give {name:?} oidc_sub = \"...\" (their \
                         subject at the provider), so that their sign-in is theirs",
                        name = person.get_ref()
                    ),
                ));
            }
            names.push(person.into_inner());
        }
        acts_for.insert(principal, names);
    }
    let rules = files
        .into_iter()
        .enumerate()
        .map(|(index, file)| check_rule(index, file, &directory, upstreams, src))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Approvals {
        rules,
        directory,
        acts_for,
        oauth: named.oauth,
    })
}

/// The directory of the people and their groups.
fn directory(named: &Named, src: &Source<'_>) -> Result<Directory, ConfigError> {
    let people = named.people.iter().map(|(name, groups)| {
        let groups: Vec<&str> = groups.iter().map(|g| g.get_ref().as_str()).collect();
        (name.get_ref().as_str(), groups)
    });
    Directory::new(people)
        .and_then(|directory| directory.with_signed_in_groups(named.signed_in.iter().cloned()))
        .map_err(|error| {
            // Point at the group that bears a person's name, or the person.
            let span = match &error {
                PolicyError::Ambiguous { name } | PolicyError::BadName { name, .. } => named
                    .people
                    .iter()
                    .flat_map(|(_, groups)| groups)
                    .chain(named.people.iter().map(|(person, _)| person))
                    .find(|named| named.get_ref() == name)
                    .map(Spanned::span),
                _ => None,
            };
            match span {
                Some(span) => src.at(span, error.to_string()),
                None => src.at_key(None, "people", error.to_string()),
            }
        })
}

fn check_rule(
    index: usize,
    file: Spanned<ApprovalFile>,
    directory: &Directory,
    upstreams: &[&str],
    src: &Source<'_>,
) -> Result<ApprovalRule, ConfigError> {
    let name = format!("approvals[{index}]");
    let span = file.span();
    let file = file.into_inner();
    let approvers = match (file.any_of, file.quorum) {
        (Some(any_of), None) => Approvers::AnyOf(any_of.into_inner()),
        (None, Some(quorum)) => {
            let quorum = quorum.into_inner();
            Approvers::Quorum {
                of: quorum.of,
                need: quorum.need,
            }
        }
        (Some(_), Some(quorum)) => {
            return Err(src.at(
                quorum.span(),
                "write any_of or quorum, not both: any_of lets the first of them answer, a \
                 quorum needs `need` of one group",
            ));
        }
        (None, None) => {
            return Err(src.at_key(
                Some(span),
                &name,
                "an approval rule names who approves: any_of = [\"GROUP\", \"PERSON\", ...] or \
                 quorum = { of = \"GROUP\", need = N }",
            ));
        }
    };
    let not = match file.not {
        None => None,
        Some(not) if not.get_ref() == "requester" => Some(Excluded::Requester),
        Some(not) => {
            return Err(src.at(
                not.span(),
                format!(
                    "not = {:?}: the one value is \"requester\" (the people the calling agent \
                     acts for never approve its asks)",
                    not.get_ref()
                ),
            ));
        }
    };
    let least = jiff::SignedDuration::from_secs(1);
    let escalate = file
        .escalate
        .map(|escalate| {
            let escalate = escalate.into_inner();
            let after = duration(&escalate.after, "escalate.after", least, MOST_WAIT, src)?;
            Ok::<_, ConfigError>(Escalation {
                after: signed(after),
                to: escalate.to,
            })
        })
        .transpose()?;
    let expires = file
        .expires
        .as_ref()
        .map(|expires| duration(expires, "expires", least, MOST_WAIT, src))
        .transpose()?;
    let approval = Approval {
        approvers,
        not_requester: file.not_requester,
        not,
        veto: file.veto.unwrap_or(true),
        escalate,
        expires: expires.map(signed),
    };
    approval
        .check(directory)
        .map_err(|error| src.at_key(Some(span.clone()), &name, error.to_string()))?;
    Ok(ApprovalRule {
        name,
        server: file
            .server
            .map(|server| server_glob(&server, upstreams, src))
            .transpose()?,
        tool: file
            .tool
            .map(|tool| Pattern::name(tool.get_ref()).map_err(|e| src.at(tool.span(), e)))
            .transpose()?,
        arguments: argument_conditions(file.arguments, src)?,
        risks: file.risk.map(|risk| risks(&risk, src)).transpose()?,
        approval,
        expires,
    })
}

/// `risk = "destructive"` or `risk = ["high_write", "destructive"]`.
fn risks(value: &Spanned<toml::Value>, src: &Source<'_>) -> Result<Vec<Risk>, ConfigError> {
    let expected = "expected a risk (read, low_write, medium_write, high_write, destructive) or a \
                    list of them";
    let one = |item: &toml::Value| {
        item.as_str()
            .and_then(|text| text.parse::<Risk>().ok())
            .ok_or_else(|| src.at(value.span(), format!("risk = {item}: {expected}")))
    };
    match value.get_ref() {
        toml::Value::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        toml::Value::Array(_) => Err(src.at(value.span(), format!("risk = []: {expected}"))),
        item => Ok(vec![one(item)?]),
    }
}

/// `duration`, as the core's rules keep it (a checked duration of at most
/// 30 days always fits).
fn signed(duration: std::time::Duration) -> jiff::SignedDuration {
    jiff::SignedDuration::try_from(duration).unwrap_or(MOST_WAIT)
}
