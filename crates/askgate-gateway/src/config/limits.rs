//! `[limits]`: how much the gateway takes on at once, each limit with its
//! key, its default and the range it may be set in — one place for them
//! all (the README's "Limits" table lists them).
//!
//! Past a limit nothing is lost and nothing hangs: a new session, call,
//! ask or connection is refused with an answer that says which limit it
//! met, and the log says so.

use std::time::Duration;

use askgate_inbox::serving;
use serde::Deserialize;
use toml::Spanned;

use super::error::{ConfigError, Source};
use super::trusting::duration;

/// What the gateway takes on at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `sessions`: Streamable HTTP sessions open at once on `--listen`.
    /// Past it, the session idle longest is closed to make room, if one
    /// has been idle a minute; else the new session is refused (503).
    pub sessions: usize,
    /// `held_calls`: upstream calls held open while a 2026-07-28 client
    /// answers their server's asks.
    pub held_calls: usize,
    /// `held_calls_per_principal`: of those, how many one principal's.
    pub held_calls_per_principal: usize,
    /// `live_pages`: inbox pages following the store live (`/events`).
    pub live_pages: usize,
    /// `answer_mib`: the longest message read from an upstream (a stdio
    /// line, an HTTP JSON body or SSE event), in bytes. A longer answer ends its call with an error naming both
    /// lengths (the call ran; its answer is lost).
    pub answer_size: usize,
    /// `connections`, `connections_per_peer`, `header_timeout`,
    /// `body_pause`: what each HTTP listener (the inbox, `--listen`)
    /// takes on; and `request_mib`, the longest message read from a
    /// client (a line on stdio, a request's body over HTTP), in bytes: a
    /// longer request is refused, naming both lengths.
    pub serving: serving::Limits,
}

impl Limits {
    /// The longest message read from a client, in bytes.
    pub fn request_size(&self) -> usize {
        self.serving.body_size
    }
}

/// One MiB.
const MIB: usize = 1024 * 1024;

/// The longest answer read from a stdio upstream, by default: a 10 MB
/// result, encoded, fits.
pub(crate) const ANSWER_SIZE: usize = 64 * MIB;

/// Sessions open at once, by default.
pub(super) const SESSIONS: usize = 1024;

/// Calls held at once, by default.
pub(super) const HELD_CALLS: usize = 1024;

/// Calls of one principal held at once, by default.
pub(super) const HELD_CALLS_PER_PRINCIPAL: usize = 256;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            sessions: SESSIONS,
            held_calls: HELD_CALLS,
            held_calls_per_principal: HELD_CALLS_PER_PRINCIPAL,
            live_pages: askgate_inbox::MOST_LIVE_PAGES,
            answer_size: ANSWER_SIZE,
            serving: serving::Limits::default(),
        }
    }
}

/// `[limits]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LimitsFile {
    sessions: Option<Spanned<i64>>,
    held_calls: Option<Spanned<i64>>,
    held_calls_per_principal: Option<Spanned<i64>>,
    pending_asks_per_principal: Option<Spanned<i64>>,
    live_pages: Option<Spanned<i64>>,
    connections: Option<Spanned<i64>>,
    connections_per_peer: Option<Spanned<i64>>,
    header_timeout: Option<Spanned<String>>,
    body_pause: Option<Spanned<String>>,
    request_mib: Option<Spanned<i64>>,
    answer_mib: Option<Spanned<i64>>,
}

/// The limits, and how many asks of one principal may wait for a person
/// (which the confirmations keep).
pub(super) fn check_limits(
    file: Option<LimitsFile>,
    src: &Source<'_>,
) -> Result<(Limits, usize), ConfigError> {
    let mut limits = Limits::default();
    let mut pending = askgate_mcp::Confirmations::MOST_PENDING;
    let Some(file) = file else {
        return Ok((limits, pending));
    };
    let count = |value: Option<Spanned<i64>>, key: &str, most: usize, default: usize| {
        value.map_or(Ok(default), |value| {
            usize::try_from(*value.get_ref())
                .ok()
                .filter(|n| (1..=most).contains(n))
                .ok_or_else(|| {
                    src.at(
                        value.span(),
                        format!(
                            "limits.{key} = {}: expected a whole number from 1 to {most}",
                            value.get_ref()
                        ),
                    )
                })
        })
    };
    limits.sessions = count(file.sessions, "sessions", 1_000_000, SESSIONS)?;
    limits.held_calls = count(file.held_calls, "held_calls", 100_000, HELD_CALLS)?;
    limits.held_calls_per_principal = count(
        file.held_calls_per_principal,
        "held_calls_per_principal",
        limits.held_calls,
        limits.held_calls.min(HELD_CALLS_PER_PRINCIPAL),
    )?;
    pending = count(
        file.pending_asks_per_principal,
        "pending_asks_per_principal",
        100_000,
        pending,
    )?;
    limits.live_pages = count(file.live_pages, "live_pages", 10_000, limits.live_pages)?;
    limits.answer_size = count(file.answer_mib, "answer_mib", 1024, ANSWER_SIZE / MIB)? * MIB;
    limits.serving.body_size = count(
        file.request_mib,
        "request_mib",
        256,
        serving::BODY_SIZE / MIB,
    )? * MIB;
    let serving = &mut limits.serving;
    serving.connections = count(file.connections, "connections", 65_536, serving.connections)?;
    serving.connections_per_peer = count(
        file.connections_per_peer,
        "connections_per_peer",
        serving.connections,
        serving.connections.min(serving.connections_per_peer),
    )?;
    let within = |value: Option<Spanned<String>>, key: &str, most, default: Duration| {
        value.map_or(Ok(default), |value| {
            duration(
                &value,
                &format!("limits.{key}"),
                jiff::SignedDuration::from_secs(1),
                most,
                src,
            )
        })
    };
    serving.headers_within = within(
        file.header_timeout,
        "header_timeout",
        jiff::SignedDuration::from_mins(5),
        serving.headers_within,
    )?;
    serving.body_pause = within(
        file.body_pause,
        "body_pause",
        jiff::SignedDuration::from_mins(10),
        serving.body_pause,
    )?;
    Ok((limits, pending))
}
