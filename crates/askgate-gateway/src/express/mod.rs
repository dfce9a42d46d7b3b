//! The express lane: a `tools/call` that needs no person, relayed as bytes.
//!
//! Most calls an agent makes are reads that proceed without asking anyone.
//! Through rmcp, each costs two decodes and two encodes of every message,
//! and a hop between tasks at each end. On stdio, with an upstream that
//! runs as a child process, the lane relays such a call straight from the
//! client's pipe to the upstream's and its answer straight back (see
//! [`super::lines`]), while keeping every promise the gateway makes about
//! it:
//!
//! - the same decision: the tool's risk from the rules, and rule 1 of
//!   askgate-core ([`askgate_mcp::Rounds::decide_unattended`]) — a call a
//!   person must confirm, a call before a configured intake, a read under
//!   `durable_reads`, anything above `read`, or a request the lane does not
//!   know (a retry with `requestState`, a task) goes through rmcp as
//!   before;
//! - the same records: its audit entry and ledger row, written when it
//!   ends, in one write (as `sent` if it never ends: the gateway stopped);
//! - the same replay contract: the request carries its marker, and the
//!   lane is the transport that sends it and sees its answer;
//! - the same metrics, and the same error when the upstream fails.
//!
//! Only classic revisions take the lane at either end (a 2026-07-28
//! upstream may answer with input requests; a 2026-07-28 client's results
//! carry a `resultType`), and a client's `notifications/cancelled` for a
//! call on the lane is passed on to its upstream.
//!
//! The lane's two sides: [`lane`] is an upstream's (its pipe, its calls in
//! flight, their ends told once through [`super::record`]); the client's
//! side, which the stdio downstream offers every line, is
//! `super::stdio::express`.

pub(crate) mod decided;
pub(crate) mod lane;
mod params;
pub(crate) mod take;

pub(crate) use params::{CallParams, Meta, Params};

use std::borrow::Cow;
use std::collections::HashMap;

use rmcp::ErrorData;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

pub(crate) use lane::{Lane, Pending, ReplyTo};

/// The first request id the lane gives upstream calls: rmcp counts its
/// own from 0 in 32 bits, and JavaScript servers read ids up to 2^53
/// exactly.
pub(crate) const FIRST_ID: u64 = 1 << 40;

/// The revisions whose `tools/call` results the lane relays unchanged.
const CLASSIC: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Whether `version` is a classic revision.
pub(crate) fn is_classic(version: &str) -> bool {
    CLASSIC.contains(&version)
}

/// What the lane reads of a client's message.
#[derive(Deserialize)]
pub(crate) struct Incoming<'a> {
    /// Its `jsonrpc` member: `"2.0"` in any message rmcp reads.
    #[serde(borrow)]
    pub(crate) jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) params: Option<&'a RawValue>,
    /// An answer's result, as the client wrote it.
    #[serde(borrow)]
    pub(crate) result: Option<&'a RawValue>,
    /// An error answer's error, as the client wrote it.
    #[serde(borrow)]
    pub(crate) error: Option<&'a RawValue>,
}

impl Incoming<'_> {
    /// Whether rmcp reads this message's envelope: a `jsonrpc` of `"2.0"`,
    /// and an id, if it has one, that is a string or an integer. The lane
    /// acts on nothing else: rmcp refuses it (and the screen answers a
    /// request of it `-32600`), so the lane must not answer it, count it
    /// as the handshake, or cancel by it.
    pub(crate) fn is_read_by_rmcp(&self) -> bool {
        self.jsonrpc.as_deref() == Some("2.0")
            && self.id.is_none_or(|id| {
                serde_json::from_str::<rmcp::model::NumberOrString>(id.get()).is_ok()
            })
    }
}

/// What the lane reads of `initialize`.
#[derive(Deserialize)]
pub(crate) struct Initialize<'a> {
    #[serde(rename = "protocolVersion", borrow)]
    pub(crate) protocol_version: Cow<'a, str>,
    /// The client's capabilities: whether it follows tasks.
    pub(crate) capabilities: Option<Capabilities>,
}

/// What the lane reads of a client's capabilities.
#[derive(Deserialize)]
pub(crate) struct Capabilities {
    /// Its extensions, by id.
    pub(crate) extensions: Option<HashMap<String, IgnoredAny>>,
}

impl Initialize<'_> {
    /// Whether the client declared the tasks extension: its calls to an
    /// upstream that runs tasks are rmcp's (the lane cannot follow a
    /// task).
    pub(crate) fn follows_tasks(&self) -> bool {
        self.capabilities
            .as_ref()
            .and_then(|c| c.extensions.as_ref())
            .is_some_and(|e| e.contains_key(rmcp::model::TASKS_EXTENSION_ID))
    }
}

/// A client's `notifications/cancelled`.
#[derive(Deserialize)]
pub(crate) struct Cancelled<'a> {
    #[serde(rename = "requestId", borrow)]
    pub(crate) request_id: &'a RawValue,
    #[serde(borrow)]
    pub(crate) reason: Option<&'a RawValue>,
}

/// The call as it goes upstream.
#[derive(Serialize)]
pub(crate) struct Outgoing<'a> {
    pub(crate) jsonrpc: &'static str,
    pub(crate) id: u64,
    pub(crate) method: &'static str,
    pub(crate) params: &'a Params<'a>,
}

/// What the lane reads of an upstream's message.
#[derive(Deserialize)]
pub(crate) struct Reply<'a> {
    #[serde(borrow)]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) method: Option<&'a RawValue>,
    /// A notification's or request's parameters.
    #[serde(borrow)]
    pub(crate) params: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) result: Option<&'a RawValue>,
    /// Read as an [`ErrorData`] when settled: a malformed one still
    /// settles its call.
    #[serde(borrow)]
    pub(crate) error: Option<&'a RawValue>,
}

/// What the lane reads of an upstream's progress notification: its token,
/// when a string.
#[derive(Deserialize)]
pub(crate) struct ProgressOf<'a> {
    #[serde(rename = "progressToken", borrow, default)]
    pub(crate) token: Option<Cow<'a, str>>,
}

/// What the ledger keeps of a result.
#[derive(Deserialize, Default)]
pub(crate) struct Summary {
    #[serde(rename = "isError")]
    pub(crate) is_error: Option<bool>,
    pub(crate) content: Option<Vec<IgnoredAny>>,
}

#[derive(Serialize)]
pub(crate) struct ErrorResponse<'a> {
    pub(crate) jsonrpc: &'static str,
    pub(crate) id: &'a RawValue,
    pub(crate) error: ErrorData,
}
