//! The checks of who holds which token: the operator's `[inbox] token`,
//! the agents' (`[[principals]]`, MCP bearer tokens) and the people's
//! (`[[people]]`, inbox and CLI sign-in). Every token is strong and held by
//! one entry only; an agent never holds a person's token nor is an
//! operator, so that it never holds what approves its own asks. No message
//! quotes a token.

use toml::Spanned;

use super::error::{ConfigError, Source};
use super::file::{PersonFile, PrincipalFile};
use super::{MIN_TOKEN, Person, Principal};

/// Whether a token is too easy to guess: shorter than [`MIN_TOKEN`], or
/// with whitespace (a token pasted with a line break).
fn weak(token: &str) -> bool {
    token.chars().count() < MIN_TOKEN || token.chars().any(char::is_whitespace)
}

/// The operator's inbox token: as strong as a principal's. The message
/// never quotes it.
pub(super) fn inbox_token(token: Spanned<String>, src: &Source<'_>) -> Result<String, ConfigError> {
    if weak(token.get_ref()) {
        return Err(src.at(
            token.span(),
            format!(
                "the inbox token is too weak: use at least {MIN_TOKEN} characters, no spaces \
                 (for example 32 random bytes in hex), or leave it out to have one generated"
            ),
        ));
    }
    Ok(token.into_inner())
}

/// The agents: each a name and an MCP bearer token of its own, which is
/// no person's (nor the operator's) and never makes it an operator.
pub(super) fn check_principals(
    principals: Vec<Spanned<PrincipalFile>>,
    inbox_token: Option<&str>,
    src: &Source<'_>,
) -> Result<Vec<Principal>, ConfigError> {
    let mut out: Vec<Principal> = Vec::with_capacity(principals.len());
    for (index, principal) in principals.into_iter().enumerate() {
        let principal = principal.into_inner();
        let (name, token) = (principal.name.get_ref(), principal.token.get_ref());
        if name.trim().is_empty() {
            return Err(src.at(principal.name.span(), "an empty principal name"));
        }
        if name == "*" {
            return Err(src.at(
                principal.name.span(),
                "the principal name \"*\" is taken: in a person's answers_for it means every \
                 principal; give this agent a name of its own",
            ));
        }
        if let Some(why) = askgate_core::approval::name_problem(name) {
            return Err(src.at(
                principal.name.span(),
                format!("the principal name {name:?} is not usable: {why}"),
            ));
        }
        if name.starts_with("oauth:") {
            return Err(src.at(
                principal.name.span(),
                format!(
                    "the principal name {name:?} starts with \"oauth:\", which askgate gives the \
                     agents an OAuth token names by its client_id or sub ([listen.oauth]; say \
                     whom such an agent acts for in [listen.oauth.acts_for]); give this agent a \
                     name without it (scope_principals maps a scope to it)"
                ),
            ));
        }
        if RESERVED_PRINCIPALS.contains(&name.as_str()) {
            return Err(src.at(
                principal.name.span(),
                format!(
                    "the principal name {name:?} is askgate's own (\"local\" is the one user of \
                     a loopback listener without principals, \"anonymous\" a caller no token \
                     names, as on stdio): an agent so named would share their asks; \
                     give this agent a name of its own"
                ),
            ));
        }
        if out.iter().any(|p| &p.name == name) {
            return Err(src.at(
                principal.name.span(),
                format!("duplicate principal {name:?}"),
            ));
        }
        if let Some(operator) = &principal.operator {
            return Err(src.at(
                operator.span(),
                format!(
                    "principals[{index}] ({name:?}) cannot be an operator: [[principals]] are \
                     agents' MCP bearer tokens and never sign in to the inbox, so that an agent \
                     never holds what approves its own asks; put operator = true on a \
                     [[people]] entry, with a token of its own"
                ),
            ));
        }
        // The messages never quote a token.
        if weak(token) {
            return Err(src.at(
                principal.token.span(),
                format!(
                    "the token of {name:?} is too weak: use at least {MIN_TOKEN} characters, \
                     no spaces (for example 32 random bytes in hex)"
                ),
            ));
        }
        if out.iter().any(|p| &p.token == token) {
            return Err(src.at(
                principal.token.span(),
                format!("{name:?} has the same token as another principal"),
            ));
        }
        if inbox_token == Some(token.as_str()) {
            return Err(src.at(
                principal.token.span(),
                format!(
                    "principals[{index}] ({name:?}) has the same token as [inbox] token (the \
                     operator's): an agent must never hold a person's credential; give each \
                     its own token"
                ),
            ));
        }
        out.push(Principal {
            name: name.clone(),
            token: token.clone(),
        });
    }
    Ok(out)
}

/// The principal names askgate gives callers itself.
const RESERVED_PRINCIPALS: [&str; 2] = ["local", "anonymous"];

/// The metrics token (`[inbox] metrics_token`): as strong as any, and held
/// by nobody else — it reads only `/metrics`, so it is not the operator's,
/// an agent's or a person's.
pub(super) fn metrics_token_of(
    token: Spanned<String>,
    inbox: &super::Inbox,
    principals: &[Principal],
    people: &[Person],
    src: &Source<'_>,
) -> Result<String, ConfigError> {
    let span = token.span();
    let token = token.into_inner();
    if weak(&token) {
        return Err(src.at(
            span,
            format!(
                "the metrics token is too weak: use at least {MIN_TOKEN} characters, no spaces \
                 (for example 32 random bytes in hex)"
            ),
        ));
    }
    let holder = if inbox.token.as_deref() == Some(token.as_str()) {
        Some("[inbox] token (the operator's)".to_owned())
    } else if let Some(principal) = principals.iter().find(|p| p.token == token) {
        Some(format!("the principal {:?}", principal.name))
    } else {
        people
            .iter()
            .find(|p| p.token == token)
            .map(|person| format!("the person {:?}", person.name))
    };
    match holder {
        Some(holder) => Err(src.at(
            span,
            format!(
                "the metrics token is also {holder}'s token: it reads only /metrics, so give it \
                 a token of its own"
            ),
        )),
        None => Ok(token),
    }
}

/// The people: each a name, a token of their own (no agent's, no other
/// person's, not the operator's), and whose asks they answer.
pub(super) fn check_people(
    people: Vec<Spanned<PersonFile>>,
    principals: &[Principal],
    inbox_token: Option<&str>,
    oidc: bool,
    src: &Source<'_>,
) -> Result<Vec<Person>, ConfigError> {
    let mut out: Vec<Person> = Vec::with_capacity(people.len());
    for (index, person) in people.into_iter().enumerate() {
        let span = person.span();
        let person = person.into_inner();
        let (name, token) = (person.name.get_ref(), person.token.get_ref());
        if let Some(problem) = person_name_problem(name) {
            return Err(src.at(person.name.span(), problem));
        }
        if out.iter().any(|p| &p.name == name) {
            return Err(src.at(
                person.name.span(),
                format!(
                    "duplicate person {name:?}; each person needs a name of their own, \
                     recorded on what they answer"
                ),
            ));
        }
        // The messages never quote a token.
        if weak(token) {
            return Err(src.at(
                person.token.span(),
                format!(
                    "the token of {name:?} is too weak: use at least {MIN_TOKEN} characters, \
                     no spaces (for example 32 random bytes in hex)"
                ),
            ));
        }
        let this = format!("people[{index}] ({name:?})");
        let taken = Taken {
            principals,
            people: &out,
            inbox_token,
        };
        if let Some(problem) = taken.problem(&this, token) {
            return Err(src.at(person.token.span(), problem));
        }
        let oidc_sub = person
            .oidc_sub
            .map(|sub| oidc_subject(sub, oidc, &out, src))
            .transpose()?;
        let answers_for = answers_for(person.answers_for, src)?;
        if !person.operator && answers_for.is_empty() {
            return Err(src.at_key(
                Some(span),
                &format!("people[{index}]"),
                format!(
                    "{this} may answer nobody's asks: give them answers_for = [\"PRINCIPAL\", \
                     ...] (the principals whose asks they answer, or [\"*\"] for every \
                     principal), or operator = true"
                ),
            ));
        }
        out.push(Person {
            name: name.clone(),
            token: token.clone(),
            answers_for,
            operator: person.operator,
            oidc_sub,
        });
    }
    Ok(out)
}

/// A person's subject at the OpenID provider: there is one, and it is
/// nobody else's.
fn oidc_subject(
    sub: Spanned<String>,
    oidc: bool,
    people: &[Person],
    src: &Source<'_>,
) -> Result<String, ConfigError> {
    if !oidc {
        return Err(src.at(
            sub.span(),
            "oidc_sub is a person's subject at the OpenID provider of [inbox.oidc], and there \
             is no [inbox.oidc]: remove it, or configure the provider",
        ));
    }
    if sub.get_ref().trim().is_empty() {
        return Err(src.at(sub.span(), "an empty oidc_sub"));
    }
    if let Some(other) = people
        .iter()
        .find(|p| p.oidc_sub.as_deref() == Some(sub.get_ref()))
    {
        return Err(src.at(
            sub.span(),
            format!(
                "{:?} has this oidc_sub too: a subject at the provider is one person's",
                other.name
            ),
        ));
    }
    Ok(sub.into_inner())
}

/// What is wrong with a person's name, if anything: empty, or one the
/// inbox gives to someone else (the operator of `[inbox] token`, a link's
/// session), which would make the audit ambiguous.
fn person_name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        Some("an empty person name".into())
    } else if let Some(why) = askgate_core::approval::name_problem(name) {
        Some(format!(
            "the person name {name:?} cannot be recorded on answers: {why}"
        ))
    } else if name == "operator" || name.starts_with("link:") {
        Some(format!(
            "the name {name:?} is the inbox's own (\"operator\" is whoever signs in with \
             [inbox] token, \"link:...\" a signed link's session): give this person their \
             own name, recorded on what they answer"
        ))
    } else {
        None
    }
}

/// The tokens a person's may not be: the principals', the people's
/// checked so far, the operator's.
struct Taken<'a> {
    principals: &'a [Principal],
    people: &'a [Person],
    inbox_token: Option<&'a str>,
}

impl Taken<'_> {
    /// Why `this` person may not have `token`, if they may not. Never
    /// quotes a token.
    fn problem(&self, this: &str, token: &str) -> Option<String> {
        let agents = self
            .principals
            .iter()
            .map(|p| (p.name.as_str(), p.token.as_str()));
        if let Some((at, agent)) = holder(agents, token) {
            return Some(format!(
                "{this} has the same token as principals[{at}] ({agent:?}): an agent must \
                 never hold a person's credential; give each its own token"
            ));
        }
        let people = self
            .people
            .iter()
            .map(|p| (p.name.as_str(), p.token.as_str()));
        if let Some((at, other)) = holder(people, token) {
            return Some(format!(
                "{this} has the same token as people[{at}] ({other:?}): each person needs a \
                 token of their own, so that an answer names who gave it"
            ));
        }
        (self.inbox_token == Some(token)).then(|| {
            format!(
                "{this} has the same token as [inbox] token (the operator's): each person \
                 needs a token of their own, so that an answer names who gave it"
            )
        })
    }
}

/// The place and name of the first of `holders` (name, token) that holds
/// `token`.
fn holder<'a>(
    holders: impl Iterator<Item = (&'a str, &'a str)>,
    token: &str,
) -> Option<(usize, &'a str)> {
    holders
        .enumerate()
        .find(|(_, (_, held))| *held == token)
        .map(|(at, (name, _))| (at, name))
}

/// The principals a person answers for, as written: none empty, each
/// once.
fn answers_for(
    written: Vec<Spanned<String>>,
    src: &Source<'_>,
) -> Result<Vec<String>, ConfigError> {
    let mut answers_for: Vec<String> = Vec::with_capacity(written.len());
    for principal in written {
        if principal.get_ref().trim().is_empty() {
            return Err(src.at(
                principal.span(),
                "an empty principal name; expected a principal's name, or \"*\" for every \
                 principal",
            ));
        }
        if !answers_for.contains(principal.get_ref()) {
            answers_for.push(principal.into_inner());
        }
    }
    Ok(answers_for)
}

impl super::Config {
    /// What the config allows but likely does not mean, one sentence each,
    /// for the log at start (nothing secret: names only).
    ///
    /// With `[listen.oauth]`, a person's `answers_for` naming a principal
    /// no agent has: an agent a token's claim names is `"oauth:<name>"`,
    /// so `answers_for = ["ci"]` does not reach the OAuth client `ci` (an
    /// ask `askgate ask --principal` parks is the one thing it reaches).
    pub fn notices(&self) -> Vec<String> {
        let Some(oauth) = self
            .listen
            .as_ref()
            .and_then(|listen| listen.oauth.as_ref())
        else {
            return Vec::new();
        };
        let known = |name: &str| {
            ["*", "local", "anonymous"].contains(&name)
                || name.starts_with(super::OAUTH_AGENT)
                || self.principals.iter().any(|p| p.name == name)
                || oauth.scope_principals.values().any(|p| p == name)
        };
        let mut notices = Vec::new();
        for person in &self.people {
            for name in person.answers_for.iter().filter(|name| !known(name)) {
                notices.push(format!(
                    "{:?} answers for {name:?}, which is no [[principals]] entry nor a principal \
                     of scope_principals: an agent an OAuth token names by its claim is \
                     \"oauth:{name}\" (write that in answers_for, and say whom it acts for in \
                     [listen.oauth.acts_for]), or map a scope to {name:?} with scope_principals",
                    person.name
                ));
            }
        }
        notices
    }
}
