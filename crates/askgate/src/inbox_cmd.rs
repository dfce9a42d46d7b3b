//! `askgate inbox`: the inbox page on its own, over a store.

use std::net::SocketAddr;

use askgate_inbox::Inbox;
use askgate_store::Store;

use crate::failure::{Failure, Workers};

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
    /// Let `--listen` take an address other machines reach: the inbox
    /// serves plain HTTP, so say so only with TLS in front of it (a
    /// reverse proxy). The config's `[inbox] allow_plain_http` does the
    /// same.
    #[arg(long)]
    allow_plain_http: bool,
}

/// Run `askgate inbox` until interrupted.
pub(crate) fn run(args: InboxArgs) -> std::process::ExitCode {
    crate::logs::init(crate::logs::LogFormat::Human, "info");
    crate::failure::serve("askgate inbox", Workers::PerCore, serve_alone(args))
}

async fn serve_alone(args: InboxArgs) -> Result<(), Failure> {
    use askgate_gateway::Config;
    let mut config = match &args.config {
        Some(path) => Config::load(path).map_err(Failure::stopped)?,
        None => Config::for_command(vec!["(none)".into()]).map_err(Failure::stopped)?,
    };
    if let Some(listen) = args.listen {
        config.inbox.allow_plain_http |= args.allow_plain_http;
        if !listen.ip().is_loopback() && !config.inbox.allow_plain_http {
            return Err(Failure::stopped(format!(
                "--listen {listen} is reachable from other machines, and the inbox serves plain \
                 HTTP there: sign-in tokens and answers would cross the network unencrypted; put TLS \
                 in front of it (a reverse proxy) and add --allow-plain-http, or listen on a \
                 loopback address (127.0.0.1)"
            )));
        }
        config.inbox.listen = listen;
    }
    let store_url = match (&args.store, &args.config) {
        (Some(url), _) => url.clone(),
        (None, Some(_)) => config.store.expose().to_owned(),
        (None, None) => crate::store_cmd::store_url(None).map_err(Failure::stopped)?,
    };
    crate::logs::hide(config.secrets());
    crate::logs::hide_url_password(&store_url);
    for notice in config.notices() {
        tracing::warn!("config: {notice}");
    }
    let store = Store::open(&store_url).await.map_err(Failure::stopped)?;
    let key_file = askgate_gateway::keys::key_path(&store_url);
    let keys = askgate_gateway::keys::Keys::load_or_create(&key_file).map_err(Failure::stopped)?;
    // What the inbox audits (a link opened) moves the chain's head, signed.
    store.sign_audit_head(&keys.current);
    askgate_gateway::keys::bind_to_store(&store, &keys.current, &key_file)
        .await
        .map_err(Failure::stopped)?;
    let listener = askgate_inbox::bind(config.inbox.listen)
        .await
        .map_err(Failure::stopped)?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::stopped(format!("the inbox's address: {e}")))?;
    let base = config
        .inbox
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{bound}/"));
    let people = askgate_inbox::people(config.inbox.token.as_deref(), &config.people, &key_file)
        .map_err(Failure::stopped)?;
    let mut inbox = Inbox::new(store, people, keys.links(), &base)
        .map_err(Failure::stopped)?
        .with_most_live_pages(config.limits.live_pages)
        .with_argument_seal(keys.argument_seal());
    if let Some(oidc) = &config.inbox.oidc {
        inbox = inbox.with_oidc(oidc.clone());
    }
    askgate_inbox::say::say(&format!(
        "askgate inbox: serving {base} over {store_url_shown}",
        store_url_shown = inbox.store().name()
    ));
    tokio::spawn(inbox.sweep_expired());
    // Probes' too: /healthz, and /readyz while the store answers.
    let app = inbox
        .router()
        .merge(askgate_gateway::health::for_store(inbox.store().clone()));
    tokio::select! {
        () = askgate_inbox::serve(app, listener, config.limits.serving) => Ok(()),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
