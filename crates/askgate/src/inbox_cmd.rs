//! `askgate inbox`: the inbox page on its own, over a store.

use std::net::SocketAddr;

use askgate_core::LinkSigner;
use askgate_inbox::Inbox;
use askgate_store::Store;

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
    crate::gateway_cmd::init_logs(crate::gateway_cmd::LogFormat::Human);
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
    use askgate_gateway::Config;
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
    let key_file = askgate_gateway::keys::key_path(&store_url);
    let key = askgate_gateway::keys::load_or_create_key(&key_file).map_err(|e| e.to_string())?;
    let listener = askgate_inbox::bind(config.inbox.listen)
        .await
        .map_err(|e| e.to_string())?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("the inbox's address: {e}"))?;
    let base = config
        .inbox
        .base_url
        .clone()
        .unwrap_or_else(|| format!("http://{bound}/"));
    let people = askgate_inbox::people(config.inbox.token.as_deref(), &config.people, &key_file)
        .map_err(|e| e.to_string())?;
    let inbox =
        Inbox::new(store, people, LinkSigner::new(key), &base).map_err(|e| e.to_string())?;
    eprintln!(
        "askgate inbox: serving {base} over {store_url_shown}",
        store_url_shown = inbox.store().name()
    );
    tokio::select! {
        () = askgate_inbox::serve(inbox.router(), listener) => Ok(()),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
