//! `askgate audit ...`: the audit log from the command line — its
//! entries, the hash chain and its signed head verified, checkpoints
//! exported and checked.

use std::process::ExitCode;

use askgate_store::Store;
use clap::Subcommand;

use super::{DONE, REFUSED, StoreArg, load, open, resolve_store};
use crate::failure::{Failure, print_json, print_line, runtime};

/// `askgate audit ...`
#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// List audit entries, oldest first.
    #[command(
        after_help = "Examples:\n  askgate audit list --config askgate.toml\n  \
        askgate audit list --json"
    )]
    List,
    /// Check the hash chain and its signed head with the deployment's
    /// key; exit 1 and name the entry when it is broken.
    #[command(
        after_help = "Examples:\n  askgate audit verify --config askgate.toml\n  \
        askgate audit verify --checkpoint head-2026-12-01.json\n  \
        askgate audit verify --structure --store sqlite:///srv/askgate/askgate.db"
    )]
    Verify {
        /// Also check the chain against a checkpoint `askgate audit
        /// export` wrote: exit 1 when the chain was cut below it, or
        /// changed up to it.
        #[arg(long, conflicts_with = "structure")]
        checkpoint: Option<std::path::PathBuf>,
        /// Without the key: check only that each entry hashes the one
        /// before it and that the head record names the newest (an edited,
        /// moved or deleted entry shows; a head rebuilt by someone without
        /// the key does not).
        #[arg(long)]
        structure: bool,
    },
    /// Print a checkpoint of the chain's head (JSON), signed with the
    /// deployment's key: keep it where the store's writer cannot reach it,
    /// and `verify --checkpoint FILE` proves later that nothing up to it
    /// was changed or deleted. Refused over a broken chain.
    #[command(
        after_help = "Example:\n  askgate audit export --config askgate.toml > head-$(date +%F).json"
    )]
    Export,
}

pub(crate) fn run_audit(store: StoreArg, command: AuditCommand) -> ExitCode {
    runtime(|| async move {
        let json = store.json;
        let config = load(store.config.as_deref())?;
        let url = resolve_store(store.store, config.as_ref())?;
        if let Some(why) = super::no_store(&url) {
            return Err(Failure::malformed(why));
        }
        let store = open(&url).await?;
        match command {
            AuditCommand::Export => export_checkpoint(&store, &url).await,
            AuditCommand::List => {
                let entries = store.audit_entries().await.map_err(Failure::from)?;
                if json {
                    print_json(&entries)?;
                } else {
                    for record in &entries {
                        let e = &record.entry;
                        let who = match (&e.answered_by, &e.answered_via) {
                            (Some(by), Some(via)) => format!(" by {by} via {via}"),
                            (None, Some(via)) => format!(" via {via}"),
                            _ => String::new(),
                        };
                        print_line(&format!(
                            "{:>5}  {}  {:<16} {}/{} ({}){who}: {}",
                            record.seq,
                            e.at,
                            serde_json::to_value(e.decision)
                                .ok()
                                .and_then(|v| v.as_str().map(str::to_owned))
                                .unwrap_or_default(),
                            e.server,
                            e.tool,
                            e.risk,
                            e.reason
                        ))?;
                    }
                }
                Ok(DONE)
            }
            AuditCommand::Verify {
                checkpoint,
                structure,
            } => {
                let keys = if structure {
                    Vec::new()
                } else {
                    deployment_keys_needed(&url)?
                };
                let verification = store
                    .verify_audit_signed(&keys)
                    .await
                    .map_err(Failure::from)?;
                if verification.broken.is_none()
                    && let Some(file) = checkpoint
                {
                    return check_checkpoint(&store, &url, &file, &verification).await;
                }
                if json {
                    print_json(&verification)?;
                } else {
                    match &verification.broken {
                        None if structure => print_line(&format!(
                            "audit chain intact in structure: {} entries, head {} (its head's \
                             signature was not checked: that needs the deployment's key)",
                            verification.entries, verification.head
                        ))?,
                        None => print_line(&format!(
                            "audit chain intact: {} entries, head {}",
                            verification.entries, verification.head
                        ))?,
                        Some(broken) => print_line(&format!("audit chain broken: {broken}"))?,
                    }
                }
                Ok(if verification.broken.is_some() {
                    REFUSED
                } else {
                    DONE
                })
            }
        }
    })
}

/// The deployment's key, read (never made) from beside the store.
fn deployment_key(url: &str) -> Result<Vec<u8>, Failure> {
    let path = askgate_gateway::keys::key_path(url);
    std::fs::read(&path).map_err(|e| {
        Failure::malformed(format!(
            "cannot read the deployment's key at {} ({e}): checkpoints are signed with it",
            path.display()
        ))
    })
}

/// The deployment's keys that can be read: the current one, and the one
/// rotated out (a head record is signed with the key in use when it was
/// written). None is refused: verifying the head's signature needs one.
fn deployment_keys_needed(url: &str) -> Result<Vec<Vec<u8>>, Failure> {
    let path = askgate_gateway::keys::key_path(url);
    let keys: Vec<Vec<u8>> = [path.clone(), askgate_gateway::keys::previous_path(&path)]
        .iter()
        .filter_map(|file| std::fs::read(file).ok())
        .collect();
    if keys.is_empty() {
        return Err(Failure::malformed(format!(
            "no deployment key at {} (or ASKGATE_KEY_FILE): the chain's head is signed with it, so \
             verifying needs it; askgate audit verify --structure checks the chain's links alone",
            path.display()
        )));
    }
    Ok(keys)
}

/// `audit export`: the chain's head, signed.
async fn export_checkpoint(store: &Store, url: &str) -> Result<u8, Failure> {
    let verification = store
        .verify_audit_signed(&deployment_keys_needed(url)?)
        .await
        .map_err(Failure::from)?;
    if let Some(broken) = &verification.broken {
        print_line(&format!(
            "audit chain broken: {broken}; no checkpoint is signed over a broken chain"
        ))?;
        return Ok(REFUSED);
    }
    let key = deployment_key(url)?;
    let seq = i64::try_from(verification.entries).unwrap_or(i64::MAX);
    let checkpoint =
        askgate_core::Checkpoint::signed(&key, seq, &verification.head, jiff::Timestamp::now());
    print_json(&checkpoint).map(|()| DONE)
}

/// `audit verify --checkpoint FILE` over a chain that holds: whether it
/// still holds the checkpointed head.
async fn check_checkpoint(
    store: &Store,
    url: &str,
    file: &std::path::Path,
    verification: &askgate_store::Verification,
) -> Result<u8, Failure> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::malformed(format!("cannot read {}: {e}", file.display())))?;
    let checkpoint: askgate_core::Checkpoint = serde_json::from_str(&text).map_err(|e| {
        Failure::malformed(format!(
            "{} is not a checkpoint of `askgate audit export`: {e}",
            file.display()
        ))
    })?;
    // One exported before the key was rotated was signed with the key
    // rotated out, kept beside it.
    let previous = std::fs::read(askgate_gateway::keys::previous_path(
        &askgate_gateway::keys::key_path(url),
    ))
    .ok();
    let current = deployment_key(url)?;
    if !std::iter::once(&current)
        .chain(&previous)
        .any(|key| checkpoint.is_signed_with(key))
    {
        print_line(&format!(
            "the checkpoint {} is not signed with this deployment's key, or was changed",
            file.display()
        ))?;
        return Ok(REFUSED);
    }
    let at = checkpoint.at;
    let held = if checkpoint.seq == 0 {
        true
    } else {
        let hash = store
            .audit_hash_at(checkpoint.seq)
            .await
            .map_err(Failure::from)?;
        match hash {
            Some(hash) => hash == checkpoint.hash,
            None => {
                print_line(&format!(
                    "audit chain cut: it ends at entry {}, and the checkpoint of {at} names entry {} (the newest entries were deleted)",
                    verification.entries, checkpoint.seq
                ))?;
                return Ok(REFUSED);
            }
        }
    };
    if !held {
        print_line(&format!(
            "audit chain changed: entry {} is not the entry the checkpoint of {at} names (the chain up to it was rewritten)",
            checkpoint.seq
        ))?;
        return Ok(REFUSED);
    }
    print_line(&format!(
        "audit chain intact: {} entries, head {}; it holds the checkpoint of {at} (entry {})",
        verification.entries, verification.head, checkpoint.seq
    ))?;
    Ok(DONE)
}
