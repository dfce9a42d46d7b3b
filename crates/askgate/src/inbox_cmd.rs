//! `askgate inbox`: the inbox page on its own, over a store.

use std::net::SocketAddr;

use askgate_inbox::Inbox;
use askgate_store::Store;

use crate::failure::Failure;

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
    crate::logs::init(crate::logs::LogFormat::Human, "info");
    crate::failure::serve("askgate inbox", serve_alone(args))
}

async fn serve_alone(args: InboxArgs) -> Result<(), Failure> {
    use askgate_gateway::Config;
    let mut config = match &args.config {
        Some(path) => Config::load(path).map_err(Failure::stopped)?,
        None => Config::for_command(vec!["(none)".into()]).map_err(Failure::stopped)?,
    };
    if let Some(listen) = args.listen {
        config.inbox.listen = listen;
    }
    let store_url = match (&args.store, &args.config) {
        (Some(url), _) => url.clone(),
        (None, Some(_)) => config.store.expose().to_owned(),
        (None, None) => crate::store_cmd::store_url(None).map_err(Failure::stopped)?,
    };
    crate::logs::hide(config.secrets());
    crate::logs::hide_url_password(&store_url);
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
    let inbox = Inbox::new(store, people, keys.links(), &base).map_err(Failure::stopped)?;
    askgate_inbox::say::say(&format!(
        "askgate inbox: serving {base} over {store_url_shown}",
        store_url_shown = inbox.store().name()
    ));
    tokio::spawn(inbox.sweep_expired());
    tokio::select! {
        () = askgate_inbox::serve(inbox.router(), listener) => Ok(()),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
