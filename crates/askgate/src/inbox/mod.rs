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
//! Safety (see [`auth`]): a token to sign in (the operator's, configured or
//! generated on first start and printed once, or a principal's), an
//! HttpOnly, SameSite=Strict session cookie, a CSRF token on every form,
//! the Origin checked on every post, and each person seeing only their own
//! asks unless they are an operator. Signed, single-use links open one ask
//! for the person it is for ([`link`]).

pub(crate) mod auth;
mod events;
mod fields;
mod link;
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
/// `[inbox] token`, or one generated on first start (printed once to
/// stderr; only its SHA-256 is kept, beside the gateway's key) — and every
/// configured principal, with its token.
///
/// # Errors
/// When the kept digest cannot be read or written, naming the file.
pub(crate) fn people(
    config: &crate::gateway::config::Config,
    key_file: &std::path::Path,
) -> Result<People, String> {
    let operator = Person {
        name: "operator".into(),
        operator: true,
    };
    let mut people = match &config.inbox.token {
        Some(token) => People::default().with_token(token, operator),
        None => People::default().with_digest(operator_digest(key_file)?, operator),
    };
    for principal in &config.principals {
        people = people.with_token(
            &principal.token,
            Person {
                name: principal.name.clone(),
                operator: principal.operator,
            },
        );
    }
    Ok(people)
}

/// The digest of the generated operator token: read, or made now (and the
/// token printed, this once).
fn operator_digest(key_file: &std::path::Path) -> Result<[u8; 32], String> {
    let path = std::path::PathBuf::from(format!("{}.inbox", key_file.display()));
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let text = text.trim();
            let mut digest = [0u8; 32];
            if text.len() != 64 {
                return Err(format!("{} does not hold a SHA-256 in hex", path.display()));
            }
            for (i, byte) in digest.iter_mut().enumerate() {
                *byte = u8::from_str_radix(&text[i * 2..i * 2 + 2], 16)
                    .map_err(|_| format!("{} does not hold a SHA-256 in hex", path.display()))?;
            }
            return Ok(digest);
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a token: {e}"))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let digest = auth::digest(&token);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    use std::io::Write;
    options
        .open(&path)
        .and_then(|mut file| file.write_all(format!("{hex}\n").as_bytes()))
        .map_err(|e| {
            format!(
                "cannot keep the inbox token's digest in {}: {e}",
                path.display()
            )
        })?;
    eprintln!(
        "askgate: the inbox's operator token, shown this once (keep it; only its digest is stored in {}): {token}",
        path.display()
    );
    Ok(digest)
}

/// `askgate inbox`: serve the inbox page on its own, over a store (for
/// asks parked by `askgate ask`, or by gateways that do not serve it).
#[derive(Debug, clap::Args)]
pub(crate) struct InboxArgs {
    /// The gateway's config file: the store, `[inbox]` and `[[principals]]`.
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
