//! The trust settings as written, checked: who may stand in for a person,
//! what counts as a person's answer, how long calls wait and asks live,
//! and how long a call in doubt is taken to be retried.

use askgate_core::Risk;
use toml::Spanned;

use super::error::{ConfigError, Source};
use super::parse_threshold;

/// The trust settings as written.
pub(super) struct Trusting {
    pub(super) caller_confirm: Option<Spanned<String>>,
    pub(super) danger_high_risk: bool,
    pub(super) min_answer_ms: Option<Spanned<i64>>,
    pub(super) inbox_wait: Option<Spanned<String>>,
    pub(super) ask_expires: Option<Spanned<String>>,
    pub(super) clients: std::collections::BTreeMap<String, Spanned<super::file::ClientFile>>,
}

/// The longest a call may wait for the inbox, and the longest an ask may
/// live: beyond these a client's request or a person's no outlives what
/// anyone remembers of it.
const MOST_INBOX_WAIT: jiff::SignedDuration = jiff::SignedDuration::from_hours(1);
const MOST_ASK_LIFE: jiff::SignedDuration = jiff::SignedDuration::from_hours(24 * 30);

/// The longest a call that may have run is taken to be retried.
pub(super) const MOST_RETRY_WINDOW: jiff::SignedDuration = jiff::SignedDuration::from_hours(24);

/// The longest `stop_grace`: a supervisor waits for a stop, and a client
/// closing its session does not wait for ever.
pub(super) const MOST_STOP_GRACE: jiff::SignedDuration = jiff::SignedDuration::from_mins(10);

pub(super) fn check_confirmations(
    t: Trusting,
    src: &Source<'_>,
) -> Result<askgate_mcp::Confirmations, ConfigError> {
    let mut out = askgate_mcp::Confirmations::default();
    if let Some(value) = t.caller_confirm {
        let risk = parse_threshold(value.get_ref()).map_err(|_| {
            src.at(
                value.span(),
                format!(
                    "unknown caller_confirm {:?}; expected none (the default: only a person approves), read, low_write or medium_write",
                    value.get_ref()
                ),
            )
        })?;
        if risk.is_some_and(|risk| risk > Risk::MediumWrite) && !t.danger_high_risk {
            return Err(src.at(
                value.span(),
                format!(
                    "caller_confirm = {:?} lets the model approve its own {} calls where the client shows no ask; if that is really meant, also set danger_caller_confirm_high_risk = true",
                    value.get_ref(),
                    value.get_ref()
                ),
            ));
        }
        out.caller_confirm = risk;
    }
    if let Some(ms) = t.min_answer_ms {
        out.min_answer = min_answer(&ms, src)?;
    }
    for (name, client) in t.clients {
        let client = client.into_inner();
        if let Some(ms) = client.min_answer_ms {
            out.min_answer_by_client.insert(name, min_answer(&ms, src)?);
        }
    }
    if let Some(wait) = t.inbox_wait {
        out.inbox_wait = duration(
            &wait,
            "inbox_wait",
            jiff::SignedDuration::ZERO,
            MOST_INBOX_WAIT,
            src,
        )?;
    }
    if let Some(life) = t.ask_expires {
        out.ask_lifetime = duration(
            &life,
            "ask_expires",
            jiff::SignedDuration::from_mins(1),
            MOST_ASK_LIFE,
            src,
        )?;
    }
    Ok(out)
}

/// `min_answer_ms`: 0 to 60,000.
fn min_answer(ms: &Spanned<i64>, src: &Source<'_>) -> Result<std::time::Duration, ConfigError> {
    match u64::try_from(*ms.get_ref()) {
        Ok(ms) if ms <= 60_000 => Ok(std::time::Duration::from_millis(ms)),
        _ => Err(src.at(
            ms.span(),
            format!(
                "min_answer_ms = {}: expected 0 to 60000 (milliseconds; an answer faster than this after the ask is not taken for a person's)",
                ms.get_ref()
            ),
        )),
    }
}

/// A duration written as `30s`, `5m`, `1h 30m`, between `least` and
/// `most`.
pub(super) fn duration(
    text: &Spanned<String>,
    key: &str,
    least: jiff::SignedDuration,
    most: jiff::SignedDuration,
    src: &Source<'_>,
) -> Result<std::time::Duration, ConfigError> {
    let parsed: Option<jiff::SignedDuration> = text.get_ref().parse().ok();
    match parsed.filter(|d| *d >= least && *d <= most) {
        Some(duration) => std::time::Duration::try_from(duration).map_err(|e| {
            src.at(text.span(), format!("{key}: {e}"))
        }),
        None => Err(src.at(
            text.span(),
            format!(
                "{key} = {:?}: expected a duration from {least:#} to {most:#}, written like \"30s\", \"5m\" or \"2h\"",
                text.get_ref()
            ),
        )),
    }
}
