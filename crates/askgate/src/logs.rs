//! askgate's logs, on stderr (stdout is the MCP channel on stdio): filtered
//! by `ASKGATE_LOG`, as lines for people or as JSON (`--log-format json`),
//! coloured only on a terminal (and never with `NO_COLOR` set), and with
//! every secret of the config written as `[redacted]`.
//!
//! askgate's own events carry ids, names, risks and decisions, never
//! arguments, answers or tokens. Two things could still carry them, and
//! are kept out here:
//!
//! - **rmcp's own events** log whole messages (a notification at INFO,
//!   every request at DEBUG, an error's text at WARN, and an upstream's
//!   error text often echoes its arguments). They are logged at `error`
//!   only, unless `ASKGATE_LOG` names `rmcp` itself (`rmcp=debug`, for a
//!   developer at their own machine).
//! - **Secrets inside error texts**: a failed connection's error names its
//!   URL, query string and all. Every line written is searched for the
//!   config's secrets ([`askgate_gateway::Config::secrets`], see [`hide`])
//!   before it leaves.

use std::io::{self, IsTerminal, Write};
use std::sync::{PoisonError, RwLock};

use tracing_subscriber::fmt::MakeWriter;

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Lines for people.
    Human,
    /// One JSON object per line.
    Json,
}

/// What stands in for a secret in a log line.
const REDACTED: &str = "[redacted]";

/// The secrets no log line may hold, longest first.
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Keep `secrets` out of every log line written from now on.
pub(crate) fn hide(secrets: impl IntoIterator<Item = String>) {
    let mut known = SECRETS.write().unwrap_or_else(PoisonError::into_inner);
    known.extend(secrets.into_iter().filter(|s| !s.trim().is_empty()));
    known.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    known.dedup();
}

/// The password of a store URL (`postgres://user:password@host/db`), kept
/// out of the logs.
pub(crate) fn hide_url_password(url: &str) {
    if let Ok(parsed) = url::Url::parse(url)
        && let Some(password) = parsed.password()
    {
        hide([password.to_owned()]);
    }
}

/// `line` with every known secret in it replaced.
fn redacted(line: &str) -> std::borrow::Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(PoisonError::into_inner);
    let mut line = std::borrow::Cow::Borrowed(line);
    for secret in secrets.iter() {
        if line.contains(secret.as_str()) {
            line = std::borrow::Cow::Owned(line.replace(secret.as_str(), REDACTED));
        }
    }
    line
}

/// Stderr, through [`redacted`]: each event is formatted whole and then
/// written with one `write`, so a secret is never split across two.
struct Redacting;

impl Write for Redacting {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(bytes);
        io::stderr().lock().write_all(redacted(&text).as_bytes())?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

impl<'a> MakeWriter<'a> for Redacting {
    type Writer = Redacting;

    fn make_writer(&'a self) -> Redacting {
        Redacting
    }
}

/// Start logging, at `default` unless `ASKGATE_LOG` says otherwise.
pub(crate) fn init(format: LogFormat, default: &str) {
    let mut directives = std::env::var("ASKGATE_LOG").unwrap_or_else(|_| default.to_owned());
    if !directives.contains("rmcp") {
        directives.push_str(",rmcp=error");
    }
    let filter = tracing_subscriber::EnvFilter::try_new(&directives).unwrap_or_else(|error| {
        let _ = writeln!(
            io::stderr(),
            "askgate: ASKGATE_LOG is not a log filter ({error}); logging at {default}"
        );
        tracing_subscriber::EnvFilter::new(format!("{default},rmcp=error"))
    });
    let colour = io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour && format == LogFormat::Human)
        .with_writer(Redacting);
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => {
            askgate_inbox::say::as_json();
            askgate_gateway::upstream_stderr::as_events();
            builder.json().try_init()
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_secret_never_leaves_in_a_log_line() {
        hide(["api_key=s3cr3t-q".to_owned(), "s3cr3t".to_owned()]);
        let line = "connecting to https://mcp.example/mcp?api_key=s3cr3t-q failed; token s3cr3t";
        let written = redacted(line);
        assert!(!written.contains("s3cr3t"), "{written}");
        assert_eq!(
            written,
            "connecting to https://mcp.example/mcp?[redacted] failed; token [redacted]"
        );
        assert_eq!(redacted("nothing secret here"), "nothing secret here");
    }
}
