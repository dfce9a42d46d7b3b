//! The inbox: a web page where a person answers the asks their client
//! could not show — listed newest first, live, each rendered as a form by
//! its fields' types, answered through exactly the same checks as an MCP
//! answer (`askgate_mcp::stored`).
//!
//! Served by the gateway (and by `askgate inbox` on its own), loopback by
//! default. Server-rendered HTML ([`maud`]: compiled in, escaped by
//! default) with a little plain JavaScript for live updates and hotkeys;
//! answering works with JavaScript off.
//!
//! Safety (see [`auth`]): a person's token to sign in (the operator's,
//! configured or generated on first start into a file only its owner can
//! read ([`operator`]), or a `[[people]]` entry's — never an agent's), an
//! HttpOnly, SameSite=Strict session cookie, a CSRF token on every form,
//! the Origin checked on every post, and each person seeing only the asks
//! of the principals they answer for unless they are an operator. Signed,
//! single-use links open one ask for the person it is for ([`link`]).

pub(crate) mod auth;
mod events;
mod fields;
mod link;
mod listed;
pub(crate) mod operator;
mod pages;
mod routes;

use std::net::SocketAddr;
use std::sync::Arc;

use askgate_core::LinkSigner;
use askgate_store::Store;

pub(crate) use auth::{People, Person};

/// What every request of the inbox shares.
#[derive(Debug, Clone)]
pub(crate) struct Inbox {
    inner: Arc<Inner>,
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
}

impl Inbox {
    /// An inbox over `store`, for `people`, at `base_url` (what people
    /// open), signing links with `links`.
    ///
    /// # Errors
    /// When `base_url` is not an absolute http(s) URL.
    pub(crate) fn new(
        store: Store,
        people: People,
        links: LinkSigner,
        base_url: &str,
    ) -> Result<Inbox, String> {
        let url = url::Url::parse(base_url)
            .map_err(|e| format!("the inbox URL {base_url:?} is not an absolute URL: {e}"))?;
        let secure = match url.scheme() {
            "https" => true,
            "http" => false,
            other => {
                return Err(format!(
                    "the inbox URL {base_url:?} is {other}:, expected http: or https:"
                ));
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
            }),
        })
    }

    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The routes, to serve.
    pub(crate) fn router(&self) -> axum::Router {
        routes::router(self.clone())
    }

    /// Whether `headers` carry an operator's token as
    /// `Authorization: Bearer <token>` (how a scraper of the gateway's
    /// `/metrics` on this listener signs in).
    pub(crate) fn operator_bearer(&self, headers: &axum::http::HeaderMap) -> bool {
        headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .and_then(|token| self.inner.people.find(token.trim()))
            .is_some_and(|person| person.operator)
    }
}

/// Bind `addr` for the inbox (before the rest starts, so the address
/// people are told is the one bound).
///
/// # Errors
/// When the address cannot be bound, naming it.
pub(crate) async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("the inbox cannot listen on {addr}: {e}"))
}

/// Serve `app` — the inbox's routes, and what the gateway adds to them —
/// on `listener` until the process ends.
pub(crate) async fn serve(app: axum::Router, listener: tokio::net::TcpListener) {
    let addr = listener
        .local_addr()
        .map_or_else(|_| "?".to_owned(), |a| a.to_string());
    if let Err(error) = axum::serve(listener, app).await {
        tracing::error!(%addr, %error, "the inbox stopped");
    }
}

/// Who may sign in to the inbox: the operator — with the config's
/// `[inbox] token`, or one generated on first start (written to a file only
/// its owner can read; see [`operator`]) — and every `[[people]]` entry,
/// with its token. An agent's token (`[[principals]]`) signs nobody in.
///
/// # Errors
/// When the generated token's files cannot be read or written, naming the
/// file.
pub(crate) fn people(
    config: &crate::gateway::config::Config,
    key_file: &std::path::Path,
) -> Result<People, String> {
    let operator = match &config.inbox.token {
        Some(_) => None,
        None => Some(operator::digest_or_create(key_file)?),
    };
    Ok(people_with(
        config.inbox.token.as_deref(),
        &config.people,
        operator,
    ))
}

/// Who may answer from the CLI: as [`people`] (with no config: the
/// operator alone), but the generated operator token is only read — its
/// digest, if the inbox ever made one — never made.
///
/// # Errors
/// When the digest file cannot be read, naming it.
pub(crate) fn people_known(
    config: Option<&crate::gateway::config::Config>,
    key_file: &std::path::Path,
) -> Result<People, String> {
    let token = config.and_then(|c| c.inbox.token.as_deref());
    let operator = match token {
        Some(_) => None,
        None => operator::digest(key_file)?,
    };
    let people = config.map_or(&[][..], |c| &c.people);
    Ok(people_with(token, people, operator))
}

/// The operator — with `token`, or without one the generated token's
/// `digest` — and `configured`, the config's `[[people]]`.
fn people_with(
    token: Option<&str>,
    configured: &[crate::gateway::config::Person],
    digest: Option<[u8; 32]>,
) -> People {
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
            },
        );
    }
    people
}

/// `askgate inbox`: serve the inbox page on its own, over a store (for
/// asks parked by `askgate ask`, or by gateways that do not serve it).
#[derive(Debug, clap::Args)]
pub(crate) struct InboxArgs {
    /// The gateway's config file: the store, `[inbox]` and `[[people]]`.
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// The store (`sqlite://PATH` or `postgres://...`), over the config's
    /// (default: $ASKGATE_STORE, else askgate.db in the data directory).
    #[arg(long)]
    store: Option<String>,
    /// Where to listen, over the config's (default 127.0.0.1:7878).
    #[arg(long)]
    listen: Option<SocketAddr>,
}

/// Run `askgate inbox` until interrupted.
pub(crate) fn run(args: InboxArgs) -> std::process::ExitCode {
    crate::gateway::init_logs(crate::gateway::LogFormat::Human);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("askgate inbox: cannot start the runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve_alone(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("askgate inbox: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve_alone(args: InboxArgs) -> Result<(), String> {
    use crate::gateway::config::Config;
    let mut config = match &args.config {
        Some(path) => Config::load(path).map_err(|e| e.to_string())?,
        None => Config::for_command(vec!["(none)".into()]).map_err(|e| e.to_string())?,
    };
    if let Some(listen) = args.listen {
        config.inbox.listen = listen;
    }
    let store_url = match (&args.store, &args.config) {
        (Some(url), _) => url.clone(),
        (None, Some(_)) => config.store.expose().to_owned(),
        (None, None) => crate::store_cmd::store_url(None)?,
    };
    let store = Store::open(&store_url).await.map_err(|e| e.to_string())?;
    let key_file = crate::gateway::key_path(&store_url);
    let key = crate::gateway::load_or_create_key(&key_file)?;
    let listener = bind(config.inbox.listen).await?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("the inbox's address: {e}"))?;
    let base = config
        .inbox
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{bound}/"));
    let inbox = Inbox::new(
        store,
        people(&config, &key_file)?,
        LinkSigner::new(key),
        &base,
    )?;
    eprintln!(
        "askgate inbox: serving {base} over {store_url_shown}",
        store_url_shown = inbox.store().name()
    );
    tokio::select! {
        () = serve(inbox.router(), listener) => Ok(()),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
