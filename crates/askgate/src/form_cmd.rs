//! `askgate form schema` and `askgate form check`.
//!
//! Exit codes (also in `askgate form check --help`):
//! - 0: settled (accepted, declined, cancelled, or gave up after the last attempt)
//! - 1: refused: the answer needs another look; the re-ask is printed
//! - 2: malformed input: an unreadable or invalid form file, content or flag

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use askgate_core::wire::ElicitRequest;
use askgate_core::{Action, Ask, Form, Outcome, Response, Revision, Step};
use clap::{Args, Subcommand};
use serde::Serialize;
use serde_json::{Map, Value as Json};

use crate::failure::{Failure, print_json};

/// Exit code: the answer settled.
const SETTLED: u8 = 0;
/// Exit code: the answer was refused; a re-ask was printed.
const REFUSED: u8 = 1;

/// The `form` commands.
#[derive(Debug, Subcommand)]
pub(crate) enum FormCommand {
    /// Print the `elicitation/create` params for a form, as JSON.
    #[command(after_help = "Examples:\n  askgate form schema deploy.json\n  \
        askgate form schema deploy.json --revision 2025-06-18")]
    Schema(SchemaArgs),
    /// Settle an answer against a form; print the outcome or the re-ask as JSON.
    ///
    /// Exit codes: 0 settled (accepted, declined, cancelled, gave up),
    /// 1 refused (the re-ask is printed), 2 malformed input.
    #[command(after_help = "Examples:\n  \
        askgate form check deploy.json --content '{\"replicas\": 3}'\n  \
        askgate form check deploy.json --action decline")]
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// The form file (JSON), or `-` for standard input.
    form: PathBuf,
    /// The MCP revision the client speaks.
    #[arg(long, default_value = "2025-11-25")]
    revision: Revision,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The form file (JSON), or `-` for standard input.
    form: PathBuf,
    /// The MCP revision the client speaks.
    #[arg(long, default_value = "2025-11-25")]
    revision: Revision,
    /// What the person did.
    #[arg(long, value_enum, default_value = "accept")]
    action: ActionArg,
    /// The `content` of the answer, as a JSON object.
    #[arg(long, conflicts_with = "content_file")]
    content: Option<String>,
    /// A file holding the `content` JSON object.
    #[arg(long)]
    content_file: Option<PathBuf>,
    /// How many times the person may be asked in all.
    #[arg(long, default_value_t = askgate_core::DEFAULT_MAX_ATTEMPTS)]
    max_attempts: u32,
    /// Which attempt this answer is (1 for the first).
    #[arg(long, default_value_t = 1)]
    attempt: u32,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ActionArg {
    Accept,
    Decline,
    Cancel,
}

/// Run a `form` command.
pub(crate) fn run(command: FormCommand) -> ExitCode {
    let result = match command {
        FormCommand::Schema(args) => schema(args),
        FormCommand::Check(args) => check(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(failure) => failure.exit("askgate"),
    }
}

fn schema(args: SchemaArgs) -> Result<u8, Failure> {
    let ask = load(&args.form)?;
    let params = ask
        .request(args.revision)
        .map_err(|e| Failure::malformed(format!("{}: {e}", args.form.display())))?;
    print_json(&params)?;
    Ok(SETTLED)
}

#[derive(Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum Report<'a> {
    /// The ask settled.
    Settled {
        #[serde(flatten)]
        outcome: &'a Outcome,
    },
    /// The answer was refused; `reask` is what to send next.
    Refused {
        attempt: u32,
        max_attempts: u32,
        problems: Vec<String>,
        reask: ElicitRequest,
    },
}

fn check(args: CheckArgs) -> Result<u8, Failure> {
    let ask = load(&args.form)?
        .with_max_attempts(args.max_attempts)
        .map_err(|e| Failure::malformed(format!("--max-attempts: {e}")))?;
    let ask = if args.attempt > 1 {
        let mut record = ask.to_record();
        record.attempt = args.attempt;
        Ask::from_record(record).map_err(Failure::malformed)?
    } else {
        ask
    };
    let content = match (&args.content, &args.content_file) {
        (Some(text), _) => Some(parse_content(text, "--content")?),
        (None, Some(path)) => {
            let text = read(path)?;
            Some(parse_content(&text, &path.display().to_string())?)
        }
        (None, None) => None,
    };
    let action = match args.action {
        ActionArg::Accept => Action::Accept,
        ActionArg::Decline => Action::Decline,
        ActionArg::Cancel => Action::Cancel,
    };
    let response = Response { action, content };
    match ask.settle(args.revision, &response) {
        Step::Settled(outcome) => {
            print_json(&Report::Settled { outcome: &outcome })?;
            Ok(SETTLED)
        }
        Step::ReAsk(next) => {
            let reask = next.request(args.revision).map_err(Failure::malformed)?;
            print_json(&Report::Refused {
                attempt: next.attempt(),
                max_attempts: next.max_attempts(),
                problems: next.reasons().to_vec(),
                reask,
            })?;
            Ok(REFUSED)
        }
    }
}

fn load(path: &Path) -> Result<Ask, Failure> {
    let text = read(path)?;
    let form: Form = serde_json::from_str(&text).map_err(|e| {
        Failure::malformed(format!(
            "{}:{}:{}: not a valid form: {}",
            path.display(),
            e.line(),
            e.column(),
            strip_position(&e)
        ))
    })?;
    Ask::new(form).map_err(|e| Failure::malformed(format!("{}: {e}", path.display())))
}

fn parse_content(text: &str, origin: &str) -> Result<Map<String, Json>, Failure> {
    match serde_json::from_str::<Json>(text) {
        Ok(Json::Object(map)) => Ok(map),
        Ok(_) => Err(Failure::malformed(format!(
            "{origin}: expected a JSON object of answered properties"
        ))),
        Err(e) => Err(Failure::malformed(format!(
            "{origin}:{}:{}: not valid JSON: {}",
            e.line(),
            e.column(),
            strip_position(&e)
        ))),
    }
}

/// serde_json appends " at line L column C"; the position is printed first instead.
pub(crate) fn strip_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

pub(crate) fn read(path: &Path) -> Result<String, Failure> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| Failure::malformed(format!("standard input: {e}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .map_err(|e| Failure::malformed(format!("{}: {e}", path.display())))
}
