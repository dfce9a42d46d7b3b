//! `askgate key ...`: the deployment's key — the one that seals request
//! state, keys argument digests, signs inbox links and audit checkpoints —
//! shown by its fingerprint (never the key), and rotated.

use askgate_store::Store;
use clap::Subcommand;
use serde_json::json;

use crate::failure::{Failure, print_json, print_line, runtime};
use crate::store_cmd::StoreArg;

/// `askgate key ...`
#[derive(Debug, Subcommand)]
pub(crate) enum KeyCommand {
    /// Where the key is, its fingerprint, and the store's.
    #[command(after_help = "Example:\n  askgate key show --config askgate.toml")]
    Show,
    /// Make a new key: the current one is kept as `<key file>.previous`, so
    /// request state sealed and inbox links signed before still open (the
    /// one before it is dropped); the store records the new key's
    /// fingerprint, and a replica or inbox still holding the old key alone
    /// is refused at start until both files are copied to it.
    #[command(after_help = "Example:\n  askgate key rotate --config askgate.toml")]
    Rotate,
}

/// Run `askgate key COMMAND` over the store `store` names.
pub(crate) fn run(store: StoreArg, command: KeyCommand) -> std::process::ExitCode {
    runtime(|| async move {
        let (url, json) = store.resolve()?;
        let store = Store::open(&url).await.map_err(Failure::malformed)?;
        let path = askgate_gateway::keys::key_path(&url);
        let previous = askgate_gateway::keys::previous_path(&path);
        match command {
            KeyCommand::Show => {
                if !path.exists() {
                    return Err(Failure::malformed(format!(
                        "no key at {} yet: a gateway or inbox over the store {} makes it on first start",
                        path.display(),
                        store.name()
                    )));
                }
                let keys = askgate_gateway::keys::Keys::load_or_create(&path)
                    .map_err(Failure::malformed)?;
                let mine = keys.links().fingerprint();
                let recorded = store.recorded_key().await.map_err(Failure::malformed)?;
                let theirs = recorded.as_deref().filter(|other| *other != mine);
                let previous_shown = keys
                    .previous
                    .as_ref()
                    .map(|_| previous.display().to_string());
                if json {
                    print_json(&json!({
                        "path": path.display().to_string(),
                        "fingerprint": mine,
                        "store_fingerprint": recorded,
                        "previous_path": previous_shown,
                    }))?;
                } else {
                    print_line(&format!("key {}: fingerprint {mine}", path.display()))?;
                    if let Some(previous) = &previous_shown {
                        print_line(&format!(
                            "previous key {previous}: still opens what it sealed and signed"
                        ))?;
                    }
                    print_line(&match (&recorded, theirs) {
                        (None, _) => {
                            format!("the store {} is not bound to a key yet", store.name())
                        }
                        (Some(_), None) => format!("the store {} uses this key", store.name()),
                        (Some(_), Some(other)) => format!(
                            "the store {} uses another key (fingerprint {other})",
                            store.name()
                        ),
                    })?;
                }
                Ok(u8::from(theirs.is_some()))
            }
            KeyCommand::Rotate => {
                let rotated = askgate_gateway::keys::rotate(&store, &path)
                    .await
                    .map_err(Failure::malformed)?;
                if json {
                    print_json(&json!({
                        "path": rotated.path.display().to_string(),
                        "fingerprint": rotated.fingerprint,
                        "previous_path": rotated.previous_path.display().to_string(),
                        "previous_fingerprint": rotated.previous_fingerprint,
                    }))?;
                } else {
                    print_line(&format!(
                        "rotated: the new key {} (fingerprint {}); the key it replaces ({}) is kept \
                         in {} and still opens what it sealed and signed",
                        rotated.path.display(),
                        rotated.fingerprint,
                        rotated.previous_fingerprint,
                        rotated.previous_path.display()
                    ))?;
                    print_line(
                        "copy both files to every gateway replica and inbox over this store and \
                         restart them: one still holding the old key alone is refused at start",
                    )?;
                }
                store.close().await;
                Ok(0)
            }
        }
    })
}
