//! askgate-mcp: the MCP layer of askgate, on the official Rust SDK `rmcp`.
//!
//! A server asks a person through [`ask_person`]: given the request's
//! context and an [`Ask`](askgate_core::Ask), it picks the way the client
//! negotiated — today, classic `elicitation/create` on 2025-06-18 and
//! 2025-11-25, with that revision's wire mapping, every answer checked by
//! askgate-core and re-asked (only what is open or wrong) up to the cap —
//! and returns the settled [`Outcome`](askgate_core::Outcome). A decline or
//! a cancel is an outcome; only "nobody could be asked" is an error, and it
//! says why ([`Unanswered`]).
//!
//! [`input`] gives the three input requests of the multi round-trip model
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) a typed
//! builder and reader each.
//!
//! [`client`] answers asks from the other side: an rmcp client handler
//! that answers a server's elicitations in a terminal, from the store's
//! inbox, or by policy (defaults, for CI), and drives the multi round-trip
//! retry loop of 2026-07-28.
//!
//! Failures are typed: each function returns the type that says what can
//! go wrong there, and all convert into [`Error`] — whose [`Misuse`]
//! variant is the caller's own mistake (a bad inbox URL, a lifetime out of
//! range), apart from what the peer, the person or the store did. Time is
//! read from a [`Clock`] passed in ([`Rounds::with_clock`]).
//!
//! # Why rmcp
//! It is the official SDK: JSON-RPC framing, the handshake and discovery of
//! every revision, transports (stdio, Streamable HTTP) and the multi
//! round-trip types are its job, and askgate does not re-implement them.
//! What rmcp leaves out — checking answers against the schema, re-asking,
//! durable asks — is askgate's.

pub mod approvals;
mod ask;
pub mod client;
mod clock;
mod confirm;
mod confirmations;
pub mod direct;
mod error;
mod inbox;
pub mod input;
mod misuse;
mod park;
pub mod replay;
mod revision;
mod round;
pub mod stored;
mod tasks;

pub use ask::{AskOptions, Unanswered, Unsendable, ask_person, elicitation_modes};
pub use clock::{Clock, SystemClock};
pub use revision::revision_of;
// A typed ask: each name is both the trait (askgate-core) and its derive.
pub use askgate_core::{AskChoice, AskForm};
pub use askgate_derive::{AskChoice, AskForm};
pub use confirm::{Decided, Policy, THRESHOLD_HEADER, session_threshold, threshold_in};
pub use confirmations::Confirmations;
pub use error::Error;
pub use inbox::{Fallback, InboxLinks, LinkFailed, Parked};
pub use misuse::Misuse;
pub use round::{Principal, Request, Round, RoundError, Rounds};
pub use tasks::{Tasks, WorkFuture};
