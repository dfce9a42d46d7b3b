//! `askgate asks ...` and `askgate audit ...`: the store from the command
//! line.
//!
//! Answering (`asks answer|decline|skip`) takes a person's credential —
//! `$ASKGATE_TOKEN`, or typed at a prompt on a terminal — checked against
//! the config's `[[people]]` and the inbox's operator token, and records
//! that person as `answered_by`. An agent's token answers nothing.
//!
//! Exit codes: 0 done; 1 refused (no credential or a wrong one, a person
//! who may not answer that ask, an answer that fails its checks, a second
//! answer, an answer after expiry, a broken audit chain); 2 malformed input,
//! a config or a store that cannot be used.

use std::path::PathBuf;
use std::process::ExitCode;

use askgate_core::Surface;
use askgate_store::{AskFilter, AskRow, AskStatus, SettleError, Store};
use clap::{Args, Subcommand};
use jiff::Timestamp;
use serde_json::{Map, Value as Json};

use askgate_mcp::stored::{self, Act};

mod answerer;
mod hidden;
mod show;

use askgate_gateway::Config;
use askgate_inbox::Person;

use crate::failure::{Failure, MALFORMED, print_json, print_line, runtime};

const DONE: u8 = 0;
const REFUSED: u8 = 1;

/// Where the store is, and who may answer.
#[derive(Debug, Args)]
pub(crate) struct StoreArg {
    /// The gateway's config file: its store, and who may answer (its
    /// `[[people]]` and `[inbox] token`).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// The store: sqlite://PATH or postgres://... (default: the config's,
    /// else $ASKGATE_STORE, else askgate.db in the platform data directory).
    #[arg(long, global = true)]
    store: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
}

/// `askgate asks ...`
#[derive(Debug, Subcommand)]
pub(crate) enum AsksCommand {
    /// List asks, newest first: pending ones unless --status says otherwise.
    List {
        /// How many on a page.
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// The `next` cursor of the previous page.
        #[arg(long)]
        after: Option<String>,
        /// Only asks from this server.
        #[arg(long)]
        server: Option<String>,
        /// Only asks about this tool.
        #[arg(long)]
        tool: Option<String>,
        /// Only asks of this risk (read, low_write, medium_write,
        /// high_write, destructive).
        #[arg(long)]
        risk: Option<String>,
        /// Only asks for this principal.
        #[arg(long)]
        principal: Option<String>,
        /// `pending` (the default), `settled` (answered, declined,
        /// cancelled, skipped or expired), or one status.
        #[arg(long, default_value = "pending")]
        status: String,
    },
    /// Show one ask: its request, and its outcome once settled.
    Show {
        /// The ask's id.
        id: String,
    },
    /// Answer an ask, as the person whose token is in $ASKGATE_TOKEN (or
    /// typed at the prompt); the answer goes through the same checks as
    /// any other surface.
    Answer {
        /// The ask's id.
        id: String,
        /// The answer as a JSON object: form properties, or question id -> values.
        #[arg(long)]
        content: String,
    },
    /// Decline an ask, as the person whose token is in $ASKGATE_TOKEN (or
    /// typed at the prompt).
    Decline {
        /// The ask's id.
        id: String,
    },
    /// Skip a question set: proceed on the pre-picked answers (as the
    /// person whose token is in $ASKGATE_TOKEN, or typed at the prompt).
    Skip {
        /// The ask's id.
        id: String,
    },
}

/// `askgate audit ...`
#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// List audit entries, oldest first.
    List,
    /// Check the hash chain and its signed head with the deployment's
    /// key; exit 1 and name the entry when it is broken.
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
    Export,
}

pub(crate) fn run_asks(store: StoreArg, command: AsksCommand) -> ExitCode {
    runtime(|| async move {
        let json = store.json;
        let config = load(store.config.as_deref())?;
        let url = resolve_store(store.store, config.as_ref())?;
        let (verb, id, act) = match command {
            AsksCommand::List {
                limit,
                after,
                server,
                tool,
                risk,
                principal,
                status,
            } => {
                let filter = AskFilter {
                    statuses: statuses(&status)?,
                    principal,
                    server,
                    tool,
                    risk,
                };
                return list(&open(&url).await?, &filter, limit, after, json).await;
            }
            AsksCommand::Show { id } => return show::show(&open(&url).await?, &id, json).await,
            AsksCommand::Answer { id, content } => {
                ("answer", id, Act::Answer(parse_object(&content)?))
            }
            AsksCommand::Decline { id } => ("decline", id, Act::Decline),
            AsksCommand::Skip { id } => ("skip", id, Act::Skip),
        };
        // Who answers is known before the store is opened: without a
        // person's credential nothing is read.
        let person = answerer::answerer(verb, config.as_ref(), &url)?;
        settle_as(&open(&url).await?, &id, act, &person, json).await
    })
}

/// `asks list`: a page of the asks `filter` holds.
async fn list(
    store: &Store,
    filter: &AskFilter,
    limit: u32,
    after: Option<String>,
    json: bool,
) -> Result<u8, Failure> {
    let page = store
        .asks_where(filter, limit, after.as_deref())
        .await
        .map_err(Failure::from)?;
    if json {
        print_json(&page)?;
    } else {
        for row in &page.asks {
            print_line(&summary(row))?;
        }
        if let Some(next) = &page.next {
            print_line(&format!("(more: --after {next})"))?;
        }
    }
    Ok(DONE)
}

pub(crate) fn run_audit(store: StoreArg, command: AuditCommand) -> ExitCode {
    runtime(|| async move {
        let json = store.json;
        let config = load(store.config.as_deref())?;
        let url = resolve_store(store.store, config.as_ref())?;
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

impl StoreArg {
    /// The store's URL (`--store`, else the config's, else the default),
    /// and whether JSON is asked for.
    pub(crate) fn resolve(self) -> Result<(String, bool), Failure> {
        let config = load(self.config.as_deref())?;
        Ok((resolve_store(self.store, config.as_ref())?, self.json))
    }
}

/// The config file, when one is given.
fn load(path: Option<&std::path::Path>) -> Result<Option<Config>, Failure> {
    path.map(|path| Config::load(path).map_err(Failure::malformed))
        .transpose()
}

/// The store's URL: `--store`, else the config's, else the default.
fn resolve_store(flag: Option<String>, config: Option<&Config>) -> Result<String, Failure> {
    match (flag, config) {
        (Some(url), _) => Ok(url),
        (None, Some(config)) => Ok(config.store.expose().to_owned()),
        (None, None) => store_url(None).map_err(Failure::malformed),
    }
}

/// Settle ask `id` by `act`, as `person`, if they may answer it.
async fn settle_as(
    store: &Store,
    id: &str,
    act: Act,
    person: &Person,
    json: bool,
) -> Result<u8, Failure> {
    let row = store
        .ask(id)
        .await
        .map_err(Failure::from)?
        .ok_or_else(|| Failure::new(REFUSED, format!("no ask {id} in {}", store.name())))?;
    if !person.may_see(&row.ask.principal) {
        return Err(Failure::new(
            REFUSED,
            format!(
                "the person {:?} may not answer ask {id}: it is for the principal {:?}, which \
                 is not in their answers_for; nothing was changed",
                person.name, row.ask.principal
            ),
        ));
    }
    let settlement = match stored::settle(&row.ask.request, act, &person.name, Surface::Cli) {
        Ok(settlement) => settlement,
        Err(refused) => {
            let mut message = format!("ask {id}: the answer was not applied:");
            for reason in refused.reasons {
                message.push_str("\n- ");
                message.push_str(&reason.message);
            }
            return Err(Failure::new(REFUSED, message));
        }
    };
    let now = Timestamp::now();
    match askgate_mcp::approvals::settle_as_person(store, &row, &settlement, &person.name, &[], now)
        .await
    {
        Ok(row) if json => print_json(&row).map(|()| DONE),
        Ok(row) if row.status == AskStatus::Pending => print_line(&format!(
            "ask {id}: your answer is counted; it waits for more approvals"
        ))
        .map(|()| DONE),
        Ok(row) => print_line(&format!("ask {id}: {}", row.status.as_str())).map(|()| DONE),
        Err(SettleError::Store(error)) => Err(error.into()),
        Err(refusal) => Err(Failure::new(REFUSED, refusal.to_string())),
    }
}

/// The statuses `--status` names.
fn statuses(status: &str) -> Result<Vec<AskStatus>, Failure> {
    Ok(match status {
        "pending" => vec![AskStatus::Pending],
        "settled" => vec![
            AskStatus::Answered,
            AskStatus::Declined,
            AskStatus::Cancelled,
            AskStatus::Skipped,
            AskStatus::Expired,
        ],
        "answered" => vec![AskStatus::Answered],
        "declined" => vec![AskStatus::Declined],
        "cancelled" => vec![AskStatus::Cancelled],
        "skipped" => vec![AskStatus::Skipped],
        "expired" => vec![AskStatus::Expired],
        other => {
            return Err(Failure::new(
                MALFORMED,
                format!(
                    "--status {other:?}: expected pending, settled, answered, declined, cancelled, skipped or expired"
                ),
            ));
        }
    })
}

fn summary(row: &AskRow) -> String {
    let origin = match (&row.ask.server, &row.ask.tool) {
        (Some(server), Some(tool)) => format!("{server}/{tool}"),
        _ => "-".into(),
    };
    let expires = row
        .ask
        .expires_at
        .map(|at| format!(" expires {at}"))
        .unwrap_or_default();
    format!(
        "{}  {}  {:<9} {origin} risk {} for {}{expires}",
        row.ask.id,
        row.ask.created_at,
        row.status.as_str(),
        row.ask.risk.as_deref().unwrap_or("-"),
        row.ask.principal
    )
}

/// The store URL: the flag, `$ASKGATE_STORE`, or the default file.
pub(crate) fn store_url(
    flag: Option<String>,
) -> Result<String, askgate_gateway::config::NoStoreDir> {
    askgate_gateway::config::store_url(flag)
}

/// The store at `url`, its overdue asks expired first (as the gateway's
/// and the inbox's sweeps do): nothing past its time is shown, or
/// answered, as pending. Warnings (a store file others may read) are
/// logged on stderr.
async fn open(url: &str) -> Result<Store, Failure> {
    crate::logs::init(crate::logs::LogFormat::Human, "warn");
    let store = Store::open(url).await.map_err(Failure::malformed)?;
    askgate_inbox::expiry::sweep_once(&store, jiff::Timestamp::now()).await;
    Ok(store)
}

fn parse_object(text: &str) -> Result<Map<String, Json>, Failure> {
    match serde_json::from_str::<Json>(text) {
        Ok(Json::Object(map)) => Ok(map),
        Ok(_) => Err(Failure::new(
            MALFORMED,
            "--content: expected a JSON object".into(),
        )),
        Err(e) => Err(Failure::new(
            MALFORMED,
            format!("--content:{}:{}: not valid JSON", e.line(), e.column()),
        )),
    }
}
