//! `askgate ask FORM.json [--wait] [--timeout D]`: a script or a CI
//! pipeline puts a typed ask to a person ("approve this deploy, and pick the
//! window"), and waits for the answer if it likes.
//!
//! The ask is parked in the store like any ask the gateway parks, so it is
//! answered the same ways (the web inbox, `askgate asks answer`), through
//! the same checks. Its inbox link is printed; with `--wait` a live waiting
//! line is drawn on stderr when stderr is a terminal (quiet otherwise), and
//! the settled outcome is printed on stdout as JSON — answer values
//! included: they are this command's output, for the script that asked;
//! they are never logged.
//!
//! `--timeout D` gives the ask an expiry in the store (a late answer is
//! refused even if this process is gone); a waiting `askgate ask` expires
//! it explicitly at that time. Ctrl-C while waiting leaves the ask pending
//! (it is never lost, and may still be answered): run the same command with
//! the same `--key` to wait on it again.
//!
//! Exit codes (also in `askgate ask --help`): 0 answered (or parked, without
//! `--wait`); 2 malformed input or a store that cannot be used; 3 declined;
//! 4 skipped; 5 expired (the timeout passed); 6 cancelled; 130 interrupted
//! (the ask stays pending).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use askgate_core::{Ask, Form, QuestionSet, Risk};
use askgate_mcp::InboxLinks;
use askgate_mcp::stored::StoredRequest;
use askgate_store::{AskRow, AskStatus, NewAsk, Store};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clap::Args;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::Value as Json;
use tokio::sync::broadcast;

use crate::failure::{Failure, MALFORMED, print_json, print_line};
use crate::form_cmd::{read, strip_position};
use askgate_inbox::notify::{Delivery, Event, Notifier, Preset, Webhook};

/// Exit code: answered; or, without `--wait`, parked.
const ANSWERED: u8 = 0;
/// Exit code: the person declined.
const DECLINED: u8 = 3;
/// Exit code: the person skipped (a question set: proceed on the
/// pre-picked answers, which the outcome holds).
const SKIPPED: u8 = 4;
/// Exit code: nobody answered before the timeout; the ask is expired.
const EXPIRED: u8 = 5;
/// Exit code: the ask was cancelled (dismissed through an MCP client).
const CANCELLED: u8 = 6;
/// Exit code: interrupted (Ctrl-C); the ask stays pending.
const INTERRUPTED: u8 = 130;

/// The inbox's address when neither the flag nor `$ASKGATE_INBOX_URL` says.
const DEFAULT_INBOX_URL: &str = "http://127.0.0.1:7878/";

/// How long a wait on the store lasts before it is started again, when the
/// ask never expires.
const WAIT_CHUNK: Duration = Duration::from_secs(24 * 60 * 60);

/// `askgate ask FORM.json`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    askgate ask deploy.json --wait --timeout 2h\n  \
    askgate ask deploy.json --json --principal release-bot --key deploy-4711\n\n\
    Exit codes: 0 answered (or parked, without --wait); 2 malformed input \
    or a store that cannot be used; 3 declined; 4 skipped; 5 expired (the timeout passed, the \
    ask is expired in the store); 6 cancelled; 130 interrupted by Ctrl-C (the ask stays pending: \
    run again with the same --key to wait on it again).")]
pub(crate) struct AskArgs {
    /// The form file (JSON): a form (`message`, `fields`), or a question set
    /// (`questions`, `preamble`); `-` for standard input.
    form: PathBuf,
    /// Wait for the answer, and print the settled outcome as JSON.
    #[arg(long)]
    wait: bool,
    /// How long the ask stays open, such as `30m`, `2h` or `1h30m`: it
    /// expires then, in the store (a late answer is refused), and --wait
    /// gives up. Default: no expiry.
    #[arg(long, value_parser = parse_timeout)]
    timeout: Option<SignedDuration>,
    /// The store: sqlite://PATH or postgres://... (default: $ASKGATE_STORE,
    /// else askgate.db in the platform data directory).
    #[arg(long)]
    store: Option<String>,
    /// Without --wait: print the parked ask as JSON instead of a line.
    #[arg(long)]
    json: bool,
    /// Who the ask is for (default: $USER).
    #[arg(long)]
    principal: Option<String>,
    /// Where the ask comes from, shown beside it in the inbox and in
    /// notifications (the place a gateway shows the server).
    #[arg(long, default_value = "script")]
    server: String,
    /// What it is about, shown beside it (default: the form file's name).
    #[arg(long)]
    tool: Option<String>,
    /// How risky the thing asked about is: read, low_write, medium_write,
    /// high_write or destructive (shown, not acted on).
    #[arg(long)]
    risk: Option<Risk>,
    /// Park at most one ask per key (and principal): running the command
    /// again with the same key finds the same ask — still pending, or
    /// settled — instead of asking again.
    #[arg(long)]
    key: Option<String>,
    /// The inbox's base URL; an ask's page is <BASE>asks/<id> (default:
    /// $ASKGATE_INBOX_URL, else http://127.0.0.1:7878/).
    #[arg(long)]
    inbox_url: Option<String>,
    /// Post to this webhook as the ask is parked and as it settles
    /// (default: $ASKGATE_WEBHOOK; none when unset).
    #[arg(long)]
    webhook: Option<String>,
    /// The webhook body: generic (JSON) or slack (incoming webhook).
    #[arg(long, default_value = "generic", value_parser = parse_preset)]
    webhook_preset: Preset,
}

/// Run `askgate ask`.
pub(crate) fn run(args: AskArgs) -> ExitCode {
    // Warnings (a webhook post that failed); `ASKGATE_LOG` for more.
    crate::logs::init(crate::logs::LogFormat::Human, "warn");
    crate::failure::runtime(|| ask(args))
}

async fn ask(args: AskArgs) -> Result<u8, Failure> {
    let request = load(&args.form)?;
    let inbox_url = args
        .inbox_url
        .clone()
        .or_else(|| std::env::var("ASKGATE_INBOX_URL").ok())
        .unwrap_or_else(|| DEFAULT_INBOX_URL.into());
    let inbox =
        InboxLinks::new(&inbox_url).map_err(|e| Failure::malformed(format!("--inbox-url: {e}")))?;
    let webhook = args
        .webhook
        .clone()
        .or_else(|| std::env::var("ASKGATE_WEBHOOK").ok())
        .filter(|w| !w.is_empty())
        .map(|url| webhook(url, args.webhook_preset))
        .transpose()?;
    let now = Timestamp::now();
    let expires_at = args
        .timeout
        .map(|timeout| {
            now.checked_add(timeout)
                .map_err(|_| Failure::malformed(format!("--timeout {timeout:#}: too far ahead")))
        })
        .transpose()?;
    let url = crate::store_cmd::store_url(args.store.clone()).map_err(Failure::malformed)?;
    let store = Store::open(&url).await?;
    let notifier = webhook
        .map(|webhook| Notifier::new(store.clone(), webhook, inbox.clone()))
        .transpose()
        .map_err(|e| Failure::malformed(format!("--webhook: {e}")))?;
    let mut posts = Posts::new(notifier);
    let row = park(&store, &args, &request, now, expires_at, &posts).await?;
    // Its inbox is always given a page here (`--inbox`, or the default).
    let link = inbox
        .page(&row.ask.id)
        .unwrap_or_else(|| row.ask.id.clone());
    if !args.wait {
        let notified = posts.finish(&row.ask.id).await;
        return print_parked(&row, &link, notified, args.json).map(|()| ANSWERED);
    }
    note(&format!(
        "askgate: ask {} waits for {}: {link}",
        row.ask.id, row.ask.principal
    ));
    let live = std::io::stderr().is_terminal();
    let settled = match wait(&store, &row, live).await? {
        Waited::Settled(settled) => *settled,
        Waited::Interrupted => {
            posts.flush().await;
            let again = match &args.key {
                Some(key) => format!("run again with --key {key} to wait on it again"),
                None => format!("see it with: askgate asks show {}", row.ask.id),
            };
            return Err(Failure::new(
                INTERRUPTED,
                format!(
                    "interrupted; ask {} is still pending at {link} ({again})",
                    row.ask.id
                ),
            ));
        }
    };
    // Posted once, whoever else heard of it (the claim in the store).
    posts.post(Event::Settled, &settled);
    let notified = posts.finish(&settled.ask.id).await;
    print_json(&Report::of(&settled, &link, notified))?;
    Ok(code(settled.status))
}

/// Park the ask for its principal (`--principal`, else `$USER`); with
/// `--key`, find the one parked earlier instead.
async fn park(
    store: &Store,
    args: &AskArgs,
    request: &StoredRequest,
    now: Timestamp,
    expires_at: Option<Timestamp>,
    posts: &Posts,
) -> Result<AskRow, Failure> {
    let principal = args
        .principal
        .clone()
        .or_else(|| std::env::var("USER").ok())
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "cli".into());
    let id = new_id()?;
    let resume_key = match &args.key {
        Some(key) => format!("ask:{principal}:{key}"),
        None => format!("ask:{id}"),
    };
    let row = store
        .park(&NewAsk {
            id: id.clone(),
            resume_key,
            call_key: None,
            principal,
            request: request.to_json(),
            server: Some(args.server.clone()),
            tool: Some(args.tool.clone().unwrap_or_else(|| tool_name(&args.form))),
            risk: args.risk.map(|r| r.as_str().to_owned()),
            created_at: now,
            expires_at,
            panel: None,
        })
        .await?;
    if row.ask.id == id {
        posts.post(Event::Parked, &row);
    } else {
        note(&format!(
            "askgate: --key found ask {} parked earlier ({}); it stands as it was asked",
            row.ask.id,
            row.status.as_str()
        ));
    }
    Ok(row)
}

/// Without `--wait`: say where the parked ask waits, as a line or JSON.
fn print_parked(
    row: &AskRow,
    link: &str,
    notified: Vec<Notified>,
    json: bool,
) -> Result<(), Failure> {
    if json {
        print_json(&serde_json::json!({
            "id": row.ask.id,
            "status": row.status.as_str(),
            "link": link,
            "principal": row.ask.principal,
            "expires_at": row.ask.expires_at,
            "notified": notified,
        }))
    } else {
        print_line(&format!(
            "ask {} waits for {}: {link}",
            row.ask.id, row.ask.principal
        ))
    }
}

/// The webhook's posts about this ask (none without `--webhook`), and what
/// became of them.
struct Posts {
    notifier: Option<Notifier>,
    deliveries: Option<broadcast::Receiver<Delivery>>,
}

impl Posts {
    fn new(notifier: Option<Notifier>) -> Self {
        let deliveries = notifier.as_ref().map(Notifier::deliveries);
        Self {
            notifier,
            deliveries,
        }
    }

    fn post(&self, event: Event, row: &AskRow) {
        if let Some(notifier) = &self.notifier {
            notifier.post(event, row);
        }
    }

    /// Wait for the posts to end (they are bounded), so a short-lived
    /// command does not drop them.
    async fn flush(&self) {
        if let Some(notifier) = &self.notifier {
            notifier.flush(notifier.longest_post()).await;
        }
    }

    /// Wait for the posts to end; what became of those about ask `id`.
    async fn finish(&mut self, id: &str) -> Vec<Notified> {
        self.flush().await;
        notified(&mut self.deliveries, id)
    }
}

/// The exit code of a settled ask.
fn code(status: AskStatus) -> u8 {
    match status {
        AskStatus::Answered | AskStatus::Pending => ANSWERED,
        AskStatus::Declined => DECLINED,
        AskStatus::Skipped => SKIPPED,
        AskStatus::Expired => EXPIRED,
        AskStatus::Cancelled => CANCELLED,
    }
}

/// What `--wait` prints: the settled ask, outcome and all.
#[derive(Serialize)]
struct Report<'a> {
    id: &'a str,
    status: &'static str,
    /// The settled outcome (`null` when it expired unanswered).
    outcome: Option<&'a Json>,
    answered_by: Option<&'a str>,
    answered_via: Option<&'a str>,
    settled_at: Option<Timestamp>,
    link: &'a str,
    /// The webhook posts this process made (none without a webhook).
    notified: Vec<Notified>,
}

impl<'a> Report<'a> {
    fn of(row: &'a AskRow, link: &'a str, notified: Vec<Notified>) -> Report<'a> {
        Report {
            id: &row.ask.id,
            status: row.status.as_str(),
            outcome: row.outcome.as_ref(),
            answered_by: row.answered_by.as_deref(),
            answered_via: row.answered_via.as_deref(),
            settled_at: row.settled_at,
            link,
            notified,
        }
    }
}

/// A webhook post this process made, as reported.
#[derive(Serialize)]
struct Notified {
    event: Event,
    delivered: bool,
    tries: u32,
    /// The receiver's last HTTP status, when it answered.
    status: Option<u16>,
}

/// The posts for ask `id` that ended so far (after a flush: all of them).
/// Posts another process claimed are not listed.
fn notified(deliveries: &mut Option<broadcast::Receiver<Delivery>>, id: &str) -> Vec<Notified> {
    let mut out = Vec::new();
    let Some(deliveries) = deliveries else {
        return out;
    };
    while let Ok(delivery) = deliveries.try_recv() {
        if delivery.claimed && delivery.id == id {
            out.push(Notified {
                event: delivery.event,
                delivered: delivery.delivered,
                tries: delivery.tries,
                status: delivery.status,
            });
        }
    }
    out
}

/// How a wait ended.
enum Waited {
    /// The ask settled (or expired: explicitly, at its expiry).
    Settled(Box<AskRow>),
    /// Ctrl-C: the ask stays pending.
    Interrupted,
}

/// Wait until the ask settles, drawing the waiting line when `live`; at
/// its expiry, expire it in the store.
async fn wait(store: &Store, row: &AskRow, live: bool) -> Result<Waited, Failure> {
    let id = row.ask.id.as_str();
    let mut line = WaitingLine {
        live,
        started: std::time::Instant::now(),
        principal: row.ask.principal.clone(),
        expires_at: row.ask.expires_at,
    };
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        let chunk = match row.ask.expires_at {
            Some(at) => until(at),
            None => WAIT_CHUNK,
        };
        let settled = store.wait_settled(id, chunk);
        tokio::pin!(settled);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let settled = loop {
            tokio::select! {
                settled = &mut settled => break settled.map_err(Failure::from)?,
                _ = tick.tick() => line.draw(),
                _ = &mut interrupted => {
                    line.clear();
                    return Ok(Waited::Interrupted);
                }
            }
        };
        if let Some(settled) = settled {
            line.clear();
            return Ok(Waited::Settled(Box::new(settled)));
        }
        if row.ask.expires_at.is_some_and(|at| Timestamp::now() >= at) {
            line.clear();
            // Expired now, explicitly, unless it settled just before.
            let expired = store
                .expire(id, Timestamp::now())
                .await
                .map_err(Failure::from)?
                .ok_or_else(|| {
                    Failure::new(
                        MALFORMED,
                        format!("ask {id} vanished from {}", store.name()),
                    )
                })?;
            return Ok(Waited::Settled(Box::new(expired)));
        }
        if store.ask(id).await.map_err(Failure::from)?.is_none() {
            line.clear();
            return Err(Failure::new(
                MALFORMED,
                format!("ask {id} vanished from {}", store.name()),
            ));
        }
    }
}

/// The live line on stderr while waiting: elapsed, and the expiry.
struct WaitingLine {
    live: bool,
    started: std::time::Instant,
    principal: String,
    expires_at: Option<Timestamp>,
}

impl WaitingLine {
    fn draw(&mut self) {
        if !self.live {
            return;
        }
        let elapsed = SignedDuration::from_secs(
            i64::try_from(self.started.elapsed().as_secs()).unwrap_or(i64::MAX),
        );
        let expiry = match self.expires_at {
            Some(at) => {
                let left = SignedDuration::from_secs(
                    i64::try_from(until(at).as_secs()).unwrap_or(i64::MAX),
                );
                let at = Timestamp::from_second(at.as_second()).unwrap_or(at);
                format!("expires {at} (in {left:#})")
            }
            None => "no expiry".to_owned(),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2Kwaiting for {}: {elapsed:#}, {expiry} (Ctrl-C leaves it pending)",
            self.principal
        );
        let _ = err.flush();
    }

    fn clear(&mut self) {
        if self.live {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

/// Time left until `at` (zero once past).
fn until(at: Timestamp) -> Duration {
    Duration::try_from(at.duration_since(Timestamp::now())).unwrap_or(Duration::ZERO)
}

/// Read the form file: a form, or a question set (told apart by its
/// `questions` key), checked as it would be when asked.
fn load(path: &Path) -> Result<StoredRequest, Failure> {
    let malformed = Failure::malformed;
    let text = read(path)?;
    let name = path.display();
    let position = |e: &serde_json::Error, what: &str| {
        malformed(format!(
            "{name}:{}:{}: {what}: {}",
            e.line(),
            e.column(),
            strip_position(e)
        ))
    };
    let value: Json = serde_json::from_str(&text).map_err(|e| position(&e, "not valid JSON"))?;
    let Json::Object(mut object) = value else {
        return Err(malformed(format!(
            "{name}: expected a JSON object: a form (message, fields) or a question set \
             (questions)"
        )));
    };
    if object.contains_key("questions") {
        let set: QuestionSet = if object.contains_key("source") {
            serde_json::from_str(&text).map_err(|e| position(&e, "not a valid question set"))?
        } else {
            // A script's questions: `source` is `ask` unless it says.
            object.insert("source".into(), Json::from("ask"));
            serde_json::from_value(Json::Object(object))
                .map_err(|e| malformed(format!("{name}: not a valid question set: {e}")))?
        };
        set.check()
            .map_err(|e| malformed(format!("{name}: the question set cannot be asked: {e}")))?;
        return Ok(StoredRequest::QuestionSet { set });
    }
    let form: Form = serde_json::from_str(&text).map_err(|e| position(&e, "not a valid form"))?;
    let ask = Ask::new(form).map_err(|e| malformed(format!("{name}: {e}")))?;
    Ok(StoredRequest::form(&ask))
}

/// The form file's name without its extension (`deploy.json` -> `deploy`).
fn tool_name(path: &Path) -> String {
    path.file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|stem| !stem.is_empty() && *stem != "-")
        .unwrap_or("ask")
        .to_owned()
}

fn new_id() -> Result<String, Failure> {
    let mut id = [0u8; 12];
    getrandom::fill(&mut id)
        .map_err(|e| Failure::malformed(format!("no randomness for an id: {e}")))?;
    Ok(format!("ask_{}", URL_SAFE_NO_PAD.encode(id)))
}

fn webhook(url: String, preset: Preset) -> Result<Webhook, Failure> {
    // Not quoted: a webhook URL may hold a secret (Slack's do).
    match reqwest::Url::parse(&url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => {
            Ok(Webhook::new(url, preset, std::collections::BTreeMap::new()))
        }
        _ => Err(Failure::new(
            MALFORMED,
            "--webhook: not an http:// or https:// URL".to_owned(),
        )),
    }
}

fn parse_timeout(text: &str) -> Result<SignedDuration, String> {
    let duration: SignedDuration = text
        .parse()
        .map_err(|_| format!("{text:?} is not a duration; expected such as 30m, 2h or 1h30m"))?;
    if duration.is_positive() {
        Ok(duration)
    } else {
        Err(format!("{text:?}: expected a duration above zero"))
    }
}

fn parse_preset(text: &str) -> Result<Preset, String> {
    Preset::parse(text).ok_or_else(|| format!("expected {}", Preset::EXPECTED))
}

fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}
