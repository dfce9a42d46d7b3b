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
mod audit;
mod hidden;
mod prompt;
mod show;
mod table;

pub(crate) use audit::{AuditCommand, run_audit};

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
    #[command(after_help = "Examples:\n  \
        askgate asks list\n  \
        askgate asks list --status settled --server github --limit 20\n  \
        askgate asks list --risk destructive --json --config askgate.toml")]
    List {
        /// How many on a page (1 to 1000).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
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
        #[arg(long, value_parser = risk_level)]
        risk: Option<String>,
        /// Only asks for this principal.
        #[arg(long)]
        principal: Option<String>,
        /// `pending` (the default), `settled` (answered, declined,
        /// cancelled, skipped or expired), or one status.
        #[arg(long, default_value = "pending")]
        status: String,
    },
    /// Show one ask: what it asks, where it stands, who decided, its audit.
    #[command(after_help = "Examples:\n  \
        askgate asks show ask_01J9ZC5W6M\n  \
        askgate asks show ask_01J9ZC5W6M --json")]
    Show {
        /// The ask's id.
        id: String,
    },
    /// Answer an ask, as the person whose token is in $ASKGATE_TOKEN (or
    /// typed at the prompt); the answer goes through the same checks as
    /// any other surface. Without --content, each field is asked for at the
    /// terminal.
    #[command(after_help = "Examples:\n  \
        askgate asks answer ask_01J9ZC5W6M          # each field asked for here\n  \
        askgate asks answer ask_01J9ZC5W6M --content '{\"replicas\": 3}'")]
    Answer {
        /// The ask's id.
        id: String,
        /// The answer as a JSON object: form properties, or question id ->
        /// values. Without it, each open field is prompted on the terminal.
        #[arg(long)]
        content: Option<String>,
    },
    /// Run the call a confirmation asks about ("Allow files to run
    /// delete?"), as the person whose token is in $ASKGATE_TOKEN (or typed
    /// at the prompt).
    #[command(
        after_help = "Example:\n  ASKGATE_TOKEN=... askgate asks approve ask_01J9ZC5W6M --config askgate.toml"
    )]
    Approve {
        /// The ask's id.
        id: String,
    },
    /// Don't run the call a confirmation asks about: the model is told a
    /// person said no.
    #[command(after_help = "Example:\n  askgate asks deny ask_01J9ZC5W6M --config askgate.toml")]
    Deny {
        /// The ask's id.
        id: String,
    },
    /// Decline an ask, as the person whose token is in $ASKGATE_TOKEN (or
    /// typed at the prompt).
    #[command(after_help = "Example:\n  askgate asks decline ask_01J9ZC5W6M")]
    Decline {
        /// The ask's id.
        id: String,
    },
    /// Skip a question set: proceed on the pre-picked answers (as the
    /// person whose token is in $ASKGATE_TOKEN, or typed at the prompt).
    #[command(after_help = "Example:\n  askgate asks skip ask_01J9ZC5W6M")]
    Skip {
        /// The ask's id.
        id: String,
    },
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
                let Some(store) = open_existing(&url).await? else {
                    return table::nothing_stored(&url, &filter, json);
                };
                return list(&store, &filter, limit, after, json).await;
            }
            AsksCommand::Show { id } => {
                return show::show(&existing(&url, &id).await?, &id, json).await;
            }
            AsksCommand::Answer {
                id,
                content: Some(content),
            } => (
                "answer",
                id,
                Answering::Act(Act::Answer(parse_object(&content)?)),
            ),
            AsksCommand::Answer { id, content: None } => ("answer", id, Answering::AtTerminal),
            AsksCommand::Approve { id } => ("approve", id, Answering::Confirm(true)),
            AsksCommand::Deny { id } => ("deny", id, Answering::Confirm(false)),
            AsksCommand::Decline { id } => ("decline", id, Answering::Act(Act::Decline)),
            AsksCommand::Skip { id } => ("skip", id, Answering::Act(Act::Skip)),
        };
        // Who answers is known before the store is opened: without a
        // person's credential nothing is read.
        let person = answerer::answerer(verb, config.as_ref(), &url)?;
        let store = existing(&url, &id).await?;
        let act = match act {
            Answering::Act(act) => act,
            Answering::AtTerminal | Answering::Confirm(_) => {
                let row = visible_to(&store, &id, &person).await?;
                match act {
                    Answering::Confirm(run) => prompt::confirmation(&row, run)?,
                    _ => prompt::at_terminal(&row).await?,
                }
            }
        };
        settle_as(&store, &id, act, &person, json).await
    })
}

/// How a person's answer is had.
enum Answering {
    /// As given on the command line.
    Act(Act),
    /// Each open field prompted at the terminal.
    AtTerminal,
    /// A confirmation: run the call (`true`) or not.
    Confirm(bool),
}

/// `--risk`: one of the risk levels.
fn risk_level(text: &str) -> Result<String, String> {
    text.parse::<askgate_core::Risk>()
        .map(|_| text.to_owned())
        .map_err(|_| "expected read, low_write, medium_write, high_write or destructive".to_owned())
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
        table::print(&page, filter)?;
    }
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
        (None, None) => {
            askgate_gateway::config::store_url_made_or_not(None).map_err(Failure::malformed)
        }
    }
}

/// The ask `id`, when `person` may answer it.
async fn visible_to(store: &Store, id: &str, person: &Person) -> Result<AskRow, Failure> {
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
    Ok(row)
}

/// Settle ask `id` by `act`, as `person`, if they may answer it.
async fn settle_as(
    store: &Store,
    id: &str,
    act: Act,
    person: &Person,
    json: bool,
) -> Result<u8, Failure> {
    let row = visible_to(store, id, person).await?;
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

/// The store URL: the flag, `$ASKGATE_STORE`, or the default file.
pub(crate) fn store_url(
    flag: Option<String>,
) -> Result<String, askgate_gateway::config::NoStoreDir> {
    askgate_gateway::config::store_url(flag)
}

/// The file a `sqlite:` URL names (not `:memory:`).
fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next()?;
    (!path.is_empty() && !path.starts_with(":memory:")).then(|| path.into())
}

/// Why there is nothing at `url`: no store file yet.
pub(crate) fn no_store(url: &str) -> Option<String> {
    sqlite_file(url).filter(|file| !file.exists()).map(|file| {
        format!(
            "no store at {} yet: nothing was asked there (the gateway makes it when it first \
             starts; --config or --store names another)",
            file.display()
        )
    })
}

/// The store at `url` when it exists: a command that reads or answers
/// never makes one (see [`open`]).
async fn open_existing(url: &str) -> Result<Option<Store>, Failure> {
    match no_store(url) {
        Some(_) => Ok(None),
        None => open(url).await.map(Some),
    }
}

/// The store at `url`, which must exist: the ask `id` is not anywhere else.
async fn existing(url: &str, id: &str) -> Result<Store, Failure> {
    match no_store(url) {
        Some(why) => Err(Failure::new(REFUSED, format!("no ask {id}: {why}"))),
        None => open(url).await,
    }
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
