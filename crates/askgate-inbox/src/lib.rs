//! askgate-inbox: the web page where a person answers the asks their client
//! could not show — listed newest first, live, each rendered as a form by
//! its fields' types, answered through exactly the same checks as an MCP
//! answer (`askgate_mcp::stored`).
//!
//! Served by the gateway (and by `askgate inbox` on its own), loopback by
//! default. Server-rendered HTML ([`maud`]: compiled in, escaped by
//! default) with a little plain JavaScript for live updates and hotkeys;
//! answering works with JavaScript off.
//!
//! Safety (see the `auth` module): a person's token to sign in (the operator's,
//! configured or generated on first start into a file only its owner can
//! read (the `operator` module), or a `[[people]]` entry's — never an agent's), an
//! HttpOnly, SameSite=Strict session cookie, a CSRF token on every form,
//! the Origin checked on every post, and each person seeing only the asks
//! of the principals they answer for unless they are an operator. Signed,
//! single-use links open one ask for the person it is for (the `link` module).

//!
//! It also posts webhooks as asks are parked and settle ([`notify`]).
//!
//! In axum's manner: who a request is from is an extractor ([`Session`],
//! from the session cookie; [`Operator`], from a bearer token), and every
//! refusal is a `*Rejection` type carrying its HTTP status and the page a
//! person reads ([`rejection`]). Setting the inbox up fails with the one
//! [`Error`] of the crate.
//!
//! The library serves the page; who may sign in is given to it
//! ([`people`], from [`Credential`]s), and so is the store and the key
//! links are signed with: the `askgate` binary reads them from the
//! gateway's config.

mod approvals;
mod arguments;
mod auth;
mod decision;
pub mod deployment;
mod error;
mod events;
pub mod expiry;
mod fields;
pub mod issuer;
mod link;
mod listed;
pub mod notify;
mod oidc;
mod operator;
mod pages;
pub mod rejection;
mod routes;
pub mod say;

/// How many live pages (`/events` streams) an inbox serves at once, unless
/// [`Inbox::with_most_live_pages`] says otherwise.
pub const MOST_LIVE_PAGES: usize = events::MOST_STREAMS;
pub mod serving;
mod session;
mod signin;
mod values;

use std::net::SocketAddr;
use std::sync::Arc;

use askgate_core::LinkSigner;
use askgate_store::Store;

pub use auth::{People, Person, Session};
pub use error::{Error, Misuse, TokenFile};
pub use oidc::OidcSettings;
pub use session::Operator;

/// The inbox: what every request of its page shares.
#[derive(Debug, Clone)]
pub struct Inbox {
    inner: Arc<Inner>,
    /// Where the inbox reads the time (settling, links, the audit).
    clock: Arc<dyn askgate_mcp::Clock>,
}

#[derive(Debug)]
struct Inner {
    store: Store,
    people: People,
    sessions: auth::Sessions,
    links: LinkSigner,
    /// The origin pages are served from (`http://127.0.0.1:7878`), which
    /// every post must come from.
    origin: String,
    /// Whether cookies get `Secure` (an https base URL).
    secure: bool,
    /// The live pages open, and their one look at the store.
    events: events::Hub,
    /// Sign-in with an OpenID provider, when configured.
    oidc: std::sync::OnceLock<oidc::SignIn>,
    /// Opens the arguments the gateway kept sealed with a parked call's
    /// ask, when the inbox holds the deployment key.
    argument_seal: std::sync::OnceLock<askgate_core::ArgumentSeal>,
}

impl Inbox {
    /// An inbox over `store`, for `people`, at `base_url` (what people
    /// open), signing links with `links`.
    ///
    /// # Errors
    /// When `base_url` is not an absolute http(s) URL.
    pub fn new(
        store: Store,
        people: People,
        links: LinkSigner,
        base_url: &str,
    ) -> Result<Inbox, Error> {
        let url = url::Url::parse(base_url).map_err(|source| Error::Url {
            url: base_url.to_owned(),
            source,
        })?;
        let secure = match url.scheme() {
            "https" => true,
            "http" => false,
            other => {
                return Err(Error::UrlScheme {
                    url: base_url.to_owned(),
                    scheme: other.to_owned(),
                });
            }
        };
        Ok(Inbox {
            inner: Arc::new(Inner {
                store,
                people,
                sessions: auth::Sessions::default(),
                links,
                origin: url.origin().ascii_serialization(),
                secure,
                events: events::Hub::default(),
                oidc: std::sync::OnceLock::new(),
                argument_seal: std::sync::OnceLock::new(),
            }),
            clock: Arc::new(askgate_mcp::SystemClock),
        })
    }

    /// Read the time from `clock` (default: the system's): when an answer
    /// settles an ask, when a link is opened, when a refusal is audited —
    /// the gateway passes the clock its rounds read, so one clock dates
    /// everything.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn askgate_mcp::Clock>) -> Inbox {
        self.clock = clock;
        self
    }

    /// People sign in with the OpenID provider `settings` name, besides
    /// their tokens (see `oidc.rs`). Set once: a second call changes
    /// nothing.
    #[must_use]
    pub fn with_oidc(self, settings: OidcSettings) -> Inbox {
        let _ = self.inner.oidc.set(oidc::SignIn::new(settings));
        self
    }

    /// Open the arguments the gateway keeps sealed with a parked call's ask
    /// with `seal` (the deployment key's), to show them in full on its page
    /// to the people who may answer it. Without it the page shows the
    /// call's one-line preview. Set once.
    #[must_use]
    pub fn with_argument_seal(self, seal: askgate_core::ArgumentSeal) -> Inbox {
        let _ = self.inner.argument_seal.set(seal);
        self
    }

    /// The seal that opens parked calls' arguments, if the inbox holds it.
    pub(crate) fn argument_seal(&self) -> Option<&askgate_core::ArgumentSeal> {
        self.inner.argument_seal.get()
    }

    /// What the sign-in page offers.
    pub(crate) fn sign_in_page(&self) -> pages::SignInPage {
        pages::SignInPage {
            secure: self.inner.secure,
            oidc: self.inner.oidc.get().is_some(),
        }
    }

    /// Serve at most `most` live pages (`/events` streams) at once
    /// (default [`MOST_LIVE_PAGES`]; at least one).
    #[must_use]
    pub fn with_most_live_pages(self, most: usize) -> Inbox {
        self.inner
            .events
            .most
            .store(most.max(1), std::sync::atomic::Ordering::Relaxed);
        self
    }

    /// The current time, on the inbox's clock.
    pub fn now(&self) -> jiff::Timestamp {
        self.clock.now()
    }

    /// Move the store's overdue asks to `expired` on the inbox's clock,
    /// every [`expiry::SWEEP_EVERY`], while the future runs.
    pub fn sweep_expired(&self) -> impl Future<Output = ()> + Send + 'static {
        expiry::sweep(self.inner.store.clone(), Arc::clone(&self.clock))
    }

    /// The fingerprint of its key (see [`deployment`]).
    pub fn fingerprint(&self) -> String {
        self.inner.links.fingerprint()
    }

    /// The store its asks are in.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The routes, to serve.
    pub fn router(&self) -> axum::Router {
        routes::router(self.clone())
    }

    /// Whether `headers` carry an operator's token as
    /// `Authorization: Bearer <token>` (how a scraper of the gateway's
    /// `/metrics` on this listener signs in).
    ///
    /// The [`Operator`] extractor does the same for a route of its own.
    pub fn operator_bearer(&self, headers: &axum::http::HeaderMap) -> bool {
        session::bearer_operator(self, headers).is_some()
    }
}

/// Bind `addr` for the inbox (before the rest starts, so the address
/// people are told is the one bound).
///
/// # Errors
/// When the address cannot be bound, naming it.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, Error> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })?;
    if !addr.ip().is_loopback() {
        tracing::warn!(
            %addr,
            "the inbox serves plain HTTP to other machines: sign-in tokens and answers cross the \
             network unencrypted unless a TLS reverse proxy is in front of it (and [inbox] base_url \
             names its https:// address)"
        );
    }
    Ok(listener)
}

/// Serve `app` — the inbox's routes, and what the gateway adds to them —
/// on `listener`, within `limits`, until the process ends.
pub async fn serve(app: axum::Router, listener: tokio::net::TcpListener, limits: serving::Limits) {
    serving::serve(listener, app, "the inbox", limits, std::future::pending()).await;
}

/// Someone who may answer, as configured (`[[people]]`): a name, a token
/// of their own — never an agent's — and whose asks they answer. `Debug`
/// never shows the token.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// Who they are, recorded as `answered_by` on what they answer.
    pub name: String,
    /// Their token.
    pub token: String,
    /// The principals whose asks they see and answer; `"*"` is every
    /// principal. Empty only for an operator.
    pub answers_for: Vec<String>,
    /// Sees and answers every ask, and may scrape `/metrics`.
    pub operator: bool,
    /// Their subject (`sub`) at the OpenID provider (`[inbox.oidc]`), when
    /// they may also sign in there: as themselves.
    pub oidc_sub: Option<String>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("name", &self.name)
            .field("token", &"<redacted>")
            .field("answers_for", &self.answers_for)
            .field("operator", &self.operator)
            .finish()
    }
}

/// Where the generated operator token is kept beside the deployment's
/// key file (readable by its owner only).
pub fn operator_token_path(key_file: &std::path::Path) -> std::path::PathBuf {
    operator::token_path(key_file)
}

/// Who may sign in to the inbox: the operator — with `operator_token` (the
/// config's `[inbox] token`), or without one a token generated on first
/// start beside `key_file` (written to a file only its owner can read) — and every one of `people`, with their token. An agent's
/// token signs nobody in.
///
/// # Errors
/// When the generated token's files cannot be read or written, naming the
/// file; [`Error::Misuse`] when a token is blank.
pub fn people(
    operator_token: Option<&str>,
    people: &[Credential],
    key_file: &std::path::Path,
) -> Result<People, Error> {
    let operator = match operator_token {
        Some(_) => None,
        None => Some(operator::digest_or_create(key_file)?),
    };
    people_with(operator_token, people, operator)
}

/// Who may answer from the CLI: as [`people`], but the generated operator
/// token is only read — its digest, if the inbox ever made one — never
/// made.
///
/// # Errors
/// When the digest file cannot be read, naming it; [`Error::Misuse`] when
/// a token is blank.
pub fn people_known(
    operator_token: Option<&str>,
    people: &[Credential],
    key_file: &std::path::Path,
) -> Result<People, Error> {
    let operator = match operator_token {
        Some(_) => None,
        None => operator::digest(key_file)?,
    };
    people_with(operator_token, people, operator)
}

/// The operator — with `token`, or without one the generated token's
/// `digest` — and `configured`, the config's `[[people]]`; a blank token
/// is refused (it would sign someone in with an empty form).
fn people_with(
    token: Option<&str>,
    configured: &[Credential],
    digest: Option<[u8; 32]>,
) -> Result<People, Error> {
    let blank = |who: &str, token: &str| {
        token.trim().is_empty().then(|| Misuse::BlankToken {
            who: who.to_owned(),
        })
    };
    if let Some(misuse) = token.and_then(|token| blank("operator", token)) {
        return Err(misuse.into());
    }
    if let Some(misuse) = configured.iter().find_map(|p| blank(&p.name, &p.token)) {
        return Err(misuse.into());
    }
    let operator = Person::operator("operator");
    let mut people = match (token, digest) {
        (Some(token), _) => People::default().with_token(token, operator),
        (None, Some(digest)) => People::default().with_digest(digest, operator),
        (None, None) => People::default(),
    };
    for person in configured {
        people = people.with_token(
            &person.token,
            Person {
                name: person.name.clone(),
                answers_for: person.answers_for.clone(),
                operator: person.operator,
                groups: Vec::new(),
            },
        );
        if let Some(sub) = &person.oidc_sub {
            people = people.with_subject(sub, &person.name);
        }
    }
    Ok(people)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(name: &str, token: &str) -> Credential {
        Credential {
            name: name.to_owned(),
            token: token.to_owned(),
            answers_for: vec![name.to_owned()],
            operator: false,
            oidc_sub: None,
        }
    }

    #[test]
    fn a_blank_token_is_refused_as_misuse_naming_whose_it_is() {
        let key = std::path::Path::new("/nonexistent/s.db.key");
        let people = [
            credential("alice", "alice-token-0123456789abcdef"),
            credential("bob", "  "),
        ];
        let error = people_known(Some("operator-token-0123456789"), &people, key)
            .expect_err("a blank token");
        assert!(
            matches!(&error, Error::Misuse(Misuse::BlankToken { who }) if who == "bob"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "the token of \"bob\" is blank: every person needs a token of their own"
        );
        let error = people_known(Some(""), &[], key).expect_err("a blank operator token");
        assert!(matches!(error, Error::Misuse(Misuse::BlankToken { .. })));
    }

    #[test]
    fn a_person_with_an_oidc_sub_is_found_by_that_subject_alone() {
        let key = std::path::Path::new("/nonexistent/s.db.key");
        let mut cy = credential("cy", "cy-token-0123456789abcdef");
        cy.oidc_sub = Some("8c1f".to_owned());
        let people = people_known(Some("operator-token-0123456789"), &[cy], key).expect("people");
        let found = people.by_subject("8c1f").map(|p| p.name.as_str());
        assert_eq!(found, Some("cy"));
        assert!(people.by_subject("cy").is_none(), "a name is no subject");
    }
}
