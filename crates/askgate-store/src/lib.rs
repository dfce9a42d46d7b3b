//! askgate-store: the durable journal of askgate.
//!
//! A pending ask can wait for hours; a restart must not lose it, and an
//! answer must never be applied twice. This crate keeps asks and their
//! settlement (first answer wins, expiry is explicit), single-use tokens and
//! a tamper-evident audit chain and durable tasks, on SQLite (one embedded file, the default)
//! or PostgreSQL (several gateway replicas), behind one API. It knows nothing
//! about MCP: requests, replies and outcomes are opaque JSON to it.
//!
//! # Why sqlx
//! One async driver family covers both backends with the same pool,
//! transaction and row APIs, so one body of SQL and code serves both
//! (`$N` placeholders work on SQLite and PostgreSQL alike). SQLite is bundled
//! (no system library), PostgreSQL is spoken natively (including
//! LISTEN/NOTIFY for waking waiters held by another replica), and queries are
//! checked at run time, so building needs no database.
//!
//! # Writes
//! Writes commit in groups (see the `writer` module): concurrent writers
//! share one durable commit, and a write returns only once it is durable.
//! On SQLite every write goes through one connection; parking and answering
//! an ask — one statement each — are run by a committer task, many per
//! command. On PostgreSQL those two run through one connection too, many per
//! statement (`UNNEST`), so that answers share a commit (each notifies);
//! other writes are one autocommitted statement each on the pool. Triggers
//! notify every listening process as an ask is parked and as it settles.
//!
//! Times are passed in (`now`), as everywhere in askgate: tests run on a fake
//! clock.
//!
//! # Errors
//! One enum, [`Error`] (`#[non_exhaustive]`), names the store and what is
//! wrong: it cannot be opened, is locked, full, foreign or newer, a query
//! failed, a row is unreadable. A move the store refuses on purpose — a
//! second answer ([`SettleError`]), a ledger move from the wrong state
//! ([`LedgerError`]), a task move after its end ([`TaskError`]) — is
//! returned as that specific kind by the function that makes the move,
//! because callers act on which it was (the first answer stands; a call
//! sent twice); each converts into [`Error`] with `?`, its `Store` case into
//! the store failure it holds. [`Error::Misuse`] ([`Misuse`]) is kept apart:
//! the calling code broke the API's contract (an answer that settles an ask
//! to `pending`, an ask id reused for another call), nothing was written,
//! and the fix is in that code.

mod asks;
mod audit;
mod audit_head;
mod backend;
mod columns;
mod deployment;
mod direct;
mod error;
mod fault;
mod inline;
mod ledger;
mod listing;
mod news;
mod open;
mod outage;
#[cfg(test)]
mod plans;
mod private;
mod schema;
mod statement;
mod stats;
mod tasks;
mod tokens;
mod tries;
mod writer;

pub use asks::{
    AskAnswered, AskParked, AskRow, AskSettled, AskStatus, Count, Counted, NewAsk, Page,
    PersonAnswer, RecordedAnswer, SealedArguments, Settlement,
};
pub use audit::{AuditEntry, AuditRecord, ChainBreak, Decision, Verification};
pub use backend::Store;
pub use error::{Error, LedgerError, Misuse, SettleError, TaskError};
pub use ledger::{
    CallEnd, CallOutcome, CallRow, CallState, EndedCall, Finishing, NewCall, RecordedCall, Retried,
    Retry,
};
pub use listing::AskFilter;
pub use outage::Backoff;
pub use schema::SCHEMA_VERSION;
pub use tasks::{NewTask, TaskAnswered, TaskEnd, TaskRow, TaskStatus};
pub use tries::{RetryOf, Tries};
