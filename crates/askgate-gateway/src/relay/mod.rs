//! An upstream call in flight, and what its server asks on the way.
//!
//! A server may need the person while it works on a call: a classic
//! `elicitation/create`, `sampling/createMessage` or `roots/list` request
//! (2025-06-18, 2025-11-25), or the input requests of an
//! `InputRequiredResult` (2026-07-28). Either way the ask goes to the
//! handler of the downstream call that caused it ([`Inflight`]), which asks
//! the client the way the client's revision allows: a request it waits on
//! (classic clients), or input requests in its own `InputRequiredResult`
//! (2026-07-28 clients) — the upstream call is then [`Held`] in memory until
//! the client's retry brings the answers. Every answer is checked against
//! what was asked before the server gets it.
//!
//! One upstream connection serves every downstream session, and a classic
//! request does not say which call it is for. The calls in flight to that
//! upstream say it: when they are all for one principal, the ask goes to the
//! most recent; when they are for several, the ask is refused rather than
//! shown to the wrong person.
//!
//! The same machinery serves `tools/call`, `prompts/get` and
//! `resources/read`: [`Held`] follows any upstream request, [`answers`]
//! gets the person's answers to one `InputRequiredResult`, and the `holds`
//! module keeps the requests waiting on a retry.
//!
//! The parts: [`inflight`] (where a server's asks go, and the answers
//! back), [`held`] (a request followed across the client's rounds),
//! [`resume`] (what a sealed state carries over a restart), [`ask`] (a
//! classic client asked, every answer checked), [`rounds`] (the one
//! loop that sends a request upstream again with its answers) and
//! [`idle`] (what a request's `call_timeout` counts: not the time its
//! server's asks wait on a person).

// Sampling and roots are deprecated in rmcp (SEP-2577); upstreams still
// send them, and the gateway relays them.
#![allow(deprecated)]

mod as_written;
pub(crate) mod ask;
pub(crate) mod held;
pub(crate) mod idle;
pub(crate) mod inflight;
pub(crate) mod resume;
pub(crate) mod rounds;
#[cfg(test)]
mod tests;

use std::future::Future;

use rmcp::ErrorData;
use rmcp::model::CallToolResponse;

pub(crate) use ask::{ask_peer, complete};
pub(crate) use held::{Followed, Held};
// The express lane's (unix pipes only) and the relay's own.
#[cfg_attr(any(not(unix), askgate_portable), allow(unused_imports))]
pub(crate) use idle::Idle;
pub(crate) use inflight::{Answer, Asks, Entered, Inflight, Route, ask_through};
pub(crate) use resume::Resumable;

/// What a finished upstream call gives the client: a tool's result
/// unless said otherwise (a prompt, a resource).
pub(crate) type Response<R = CallToolResponse> = Result<R, ErrorData>;

/// How many times a person is asked again when an answer does not fit the
/// server's form, before the server is told the ask was cancelled.
const MOST_ASKS: usize = 3;

/// How the keys of relayed asks begin.
const KEY_PREFIX: &str = "upstream-";

/// Tells a peer its request is cancelled (the future given) when dropped
/// before [`CancelOnDrop::disarm`]: a wait given up, whoever gave it up.
pub(crate) struct CancelOnDrop(Option<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>>);

impl CancelOnDrop {
    /// Send `cancel` if dropped while armed.
    pub(crate) fn new(cancel: impl Future<Output = ()> + Send + 'static) -> CancelOnDrop {
        CancelOnDrop(Some(Box::pin(cancel)))
    }

    /// The request was answered: nothing to tell.
    pub(crate) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(cancel);
        }
    }
}
