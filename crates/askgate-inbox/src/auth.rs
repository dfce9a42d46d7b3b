//! Who is looking at the inbox, and whether a post may be acted on.
//!
//! - **Tokens**: a person signs in with a token — the operator's (sees
//!   every ask) or a `[[people]]` entry's from the config (sees the asks of
//!   the principals it answers for). An agent's token (`[[principals]]`)
//!   signs nobody in. Only SHA-256 digests of tokens are kept, compared in
//!   constant time.
//! - **Sessions**: a random id in an `HttpOnly; SameSite=Strict` cookie
//!   (`Secure` behind https), kept in memory for 12 hours; a restart signs
//!   everyone out.
//! - **CSRF**: every form carries the session's token; a post without it,
//!   or with another, is refused. The sign-in form, before any session,
//!   carries a token that must match a cookie set with the form.
//! - **Origin**: a post whose `Origin` is not the inbox's is refused.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

// tokio's, so a test on paused time can see a session expire.
use tokio::time::Instant;

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::error::Error;

/// The session cookie.
pub(crate) const SESSION_COOKIE: &str = "askgate_session";
/// The sign-in form's CSRF cookie.
pub(crate) const LOGIN_COOKIE: &str = "askgate_login";
/// How long a session lasts.
const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);

/// Someone who may sign in: a person, never an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// Who they are, recorded as `answered_by` on what they answer.
    pub name: String,
    /// The principals whose asks they see and answer; `"*"` is every one.
    pub answers_for: Vec<String>,
    /// Sees and answers every ask, and may scrape `/metrics`.
    pub operator: bool,
    /// The groups their sign-in put them in (an OpenID provider's groups
    /// claim, those of `[inbox.oidc] groups`); empty for a token's person,
    /// whose groups are the config's.
    pub groups: Vec<String>,
}

/// Whose asks a person's listing holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Whose<'a> {
    /// Every principal's.
    Every,
    /// These principals' only.
    These(&'a [String]),
}

impl Person {
    /// The operator: sees and answers every ask.
    pub fn operator(name: &str) -> Person {
        Person {
            name: name.to_owned(),
            answers_for: Vec::new(),
            operator: true,
            groups: Vec::new(),
        }
    }

    /// Whether this person may see and answer an ask for `principal`.
    pub fn may_see(&self, principal: &str) -> bool {
        matches!(self.whose(), Whose::Every)
            || self.answers_for.iter().any(|name| name == principal)
    }

    /// Whose asks this person sees.
    pub(crate) fn whose(&self) -> Whose<'_> {
        if self.operator || self.answers_for.iter().any(|name| name == "*") {
            Whose::Every
        } else {
            Whose::These(&self.answers_for)
        }
    }
}

/// Everyone who may sign in, by the digest of their token.
#[derive(Default)]
pub struct People {
    by_digest: Vec<([u8; 32], Person)>,
    /// The people an OpenID provider signs in as themselves: their name by
    /// their subject there (`sub`).
    subjects: Vec<(String, String)>,
}

impl std::fmt::Debug for People {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.by_digest.iter().map(|(_, p)| &p.name))
            .finish()
    }
}

impl People {
    /// Add `person`, signing in with `token`.
    pub fn with_token(mut self, token: &str, person: Person) -> People {
        self.by_digest.push((digest(token), person));
        self
    }

    /// Add `person`, signing in with the token whose SHA-256 is `digest`.
    pub fn with_digest(mut self, digest: [u8; 32], person: Person) -> People {
        self.by_digest.push((digest, person));
        self
    }

    /// Let the person named `name` also sign in with the OpenID provider,
    /// whose subject `sub` is theirs: that sign-in is theirs, under their
    /// name (an agent's person kept out of its asks stays out).
    pub fn with_subject(mut self, sub: &str, name: &str) -> People {
        self.subjects.push((sub.to_owned(), name.to_owned()));
        self
    }

    /// The person whose subject at the OpenID provider is `sub`, if one is.
    pub fn by_subject(&self, sub: &str) -> Option<&Person> {
        let (_, name) = self.subjects.iter().find(|(s, _)| s == sub)?;
        self.by_digest
            .iter()
            .map(|(_, person)| person)
            .find(|person| &person.name == name)
    }

    /// Whether nobody may sign in.
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }

    /// Whether someone signing in with a token is named `name`.
    pub fn has_name(&self, name: &str) -> bool {
        self.by_digest.iter().any(|(_, person)| person.name == name)
    }

    /// Who `token` signs in, if anyone.
    pub fn find(&self, token: &str) -> Option<&Person> {
        let given = digest(token);
        // Compare every digest, in constant time each: no early exit that
        // says how far a guess got.
        let mut found = None;
        for (digest, person) in &self.by_digest {
            if constant_eq(digest, &given) && found.is_none() {
                found = Some(person);
            }
        }
        found
    }
}

/// The SHA-256 of a token.
pub(crate) fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A signed-in person: an extractor of the inbox's routes (from the
/// session cookie), refused with a
/// [`SessionRejection`](crate::rejection::SessionRejection) — a page's
/// reader is sent to sign in. `Option<Session>` is whoever is signed in,
/// if anyone. `Debug` never shows the session's CSRF token.
#[derive(Clone)]
pub struct Session {
    pub(crate) person: Person,
    /// The token every form of this session carries.
    pub(crate) csrf: String,
    /// Set for a session opened by a link: the one ask it may see.
    pub(crate) only_ask: Option<String>,
    started: Instant,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("person", &self.person)
            .field("csrf", &"<redacted>")
            .field("only_ask", &self.only_ask)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Who is signed in.
    pub fn person(&self) -> &Person {
        &self.person
    }

    /// The one ask this session may see, for a session a signed link
    /// opened; `None` for a person who signed in.
    pub fn only_ask(&self) -> Option<&str> {
        self.only_ask.as_deref()
    }

    /// Whether this session may see the ask `id` for `principal`.
    pub fn may_see(&self, id: &str, principal: &str) -> bool {
        self.only_ask.as_deref().is_none_or(|only| only == id) && self.person.may_see(principal)
    }
}

/// The sessions, by cookie value.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    by_id: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Start a session for `person`: its cookie value.
    ///
    /// # Errors
    /// [`Error::Random`] when there is no randomness for its id.
    pub(crate) fn start(&self, person: Person, only_ask: Option<String>) -> Result<String, Error> {
        let id = random()?;
        let session = Session {
            person,
            csrf: random()?,
            only_ask,
            started: Instant::now(),
        };
        let mut map = self.map();
        map.retain(|_, s| s.started.elapsed() < SESSION_TTL);
        map.insert(id.clone(), session);
        Ok(id)
    }

    /// The session of the request's cookie, if any and not expired.
    pub(crate) fn of(&self, headers: &HeaderMap) -> Option<Session> {
        let id = cookie(headers, SESSION_COOKIE)?;
        self.map()
            .get(&id)
            .filter(|s| s.started.elapsed() < SESSION_TTL)
            .cloned()
    }

    /// End the request's session.
    pub(crate) fn end(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, SESSION_COOKIE) {
            self.map().remove(&id);
        }
    }
}

/// A cookie's value from the request.
pub(crate) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Strict, the whole site.
pub(crate) fn set_cookie(name: &str, value: &str, secure: bool, max_age: Option<u64>) -> String {
    let mut text = format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict");
    if secure {
        text.push_str("; Secure");
    }
    if let Some(age) = max_age {
        text.push_str(&format!("; Max-Age={age}"));
    }
    text
}

/// Whether `given` is the session's CSRF token (constant time).
pub(crate) fn csrf_ok(session: &Session, given: Option<&str>) -> bool {
    given.is_some_and(|given| constant_eq(given.as_bytes(), session.csrf.as_bytes()))
}

/// Whether the sign-in form's token matches the cookie set with the form
/// (constant time).
pub(crate) fn login_csrf_ok(cookie: Option<&str>, given: Option<&str>) -> bool {
    matches!((cookie, given), (Some(a), Some(b)) if !a.is_empty() && constant_eq(a.as_bytes(), b.as_bytes()))
}

/// Why a post's `Origin` is not the inbox's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CrossOrigin {
    /// Posted from a page of another origin.
    From { given: String, expected: String },
    /// The header is not text.
    Unreadable,
}

impl CrossOrigin {
    pub(crate) fn message(&self) -> String {
        match self {
            CrossOrigin::From { given, expected } => {
                format!("this form was posted from {given}, not from the inbox ({expected})")
            }
            CrossOrigin::Unreadable => "the Origin header is not readable".to_owned(),
        }
    }
}

/// Why a post is refused by its `Origin`, if it is: a post from a page of
/// another origin (a browser always says where a form was posted from).
pub(crate) fn origin_problem(headers: &HeaderMap, origin: &str) -> Option<CrossOrigin> {
    let given = headers.get(header::ORIGIN)?;
    match given.to_str() {
        Ok(given) if given == origin => None,
        Ok(given) => Some(CrossOrigin::From {
            given: given.to_owned(),
            expected: origin.to_owned(),
        }),
        Err(_) => Some(CrossOrigin::Unreadable),
    }
}

/// 24 random bytes, base64url.
///
/// # Errors
/// [`Error::Random`] when the system's random source fails.
pub(crate) fn random() -> Result<String, Error> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(Error::Random)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answering_for(name: &str, principals: &[&str]) -> Person {
        Person {
            name: name.into(),
            answers_for: principals.iter().map(|p| (*p).to_owned()).collect(),
            operator: false,
            groups: Vec::new(),
        }
    }

    #[test]
    fn a_token_signs_in_its_person_only() {
        let people = People::default()
            .with_token("operator-token-0001", Person::operator("ops"))
            .with_token("alice-token-000001", answering_for("alice", &["ci-agent"]));
        assert_eq!(
            people.find("alice-token-000001").map(|p| p.name.as_str()),
            Some("alice")
        );
        assert!(people.find("alice-token-000002").is_none());
        assert!(people.find("").is_none());
        let alice = people.find("alice-token-000001").cloned().expect("alice");
        assert!(alice.may_see("ci-agent") && !alice.may_see("alice") && !alice.may_see("bob"));
        assert!(
            people
                .find("operator-token-0001")
                .expect("ops")
                .may_see("bob")
        );
    }

    #[test]
    fn a_person_sees_the_principals_they_answer_for_or_every_one_with_a_star() {
        let some = answering_for("carol", &["ci-agent", "deployer"]);
        assert!(some.may_see("ci-agent") && some.may_see("deployer") && !some.may_see("other"));
        let names = ["ci-agent".to_owned(), "deployer".to_owned()];
        assert_eq!(some.whose(), Whose::These(&names));
        let every = answering_for("dave", &["*"]);
        assert!(every.may_see("anything") && every.whose() == Whose::Every);
        assert!(!answering_for("nobody", &[]).may_see("ci-agent"));
    }

    #[test]
    fn a_cookie_is_read_by_name_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            "a=1; askgate_session=xyz; b=2".parse().expect("header"),
        );
        assert_eq!(cookie(&headers, SESSION_COOKIE).as_deref(), Some("xyz"));
        assert_eq!(cookie(&headers, LOGIN_COOKIE), None);
    }

    #[test]
    fn a_post_from_another_origin_is_refused() {
        let mut headers = HeaderMap::new();
        assert_eq!(origin_problem(&headers, "http://127.0.0.1:7878"), None);
        headers.insert(
            header::ORIGIN,
            "http://127.0.0.1:7878".parse().expect("header"),
        );
        assert_eq!(origin_problem(&headers, "http://127.0.0.1:7878"), None);
        headers.insert(
            header::ORIGIN,
            "https://evil.example".parse().expect("header"),
        );
        assert!(origin_problem(&headers, "http://127.0.0.1:7878").is_some());
    }
}
