//! askgate-core: the pure engine of askgate.
//!
//! An agent or an MCP server needs to ask a person something and to trust the
//! answer. This crate turns a declared [`Form`] of typed fields into the
//! `elicitation/create` params of the MCP revision the client speaks, and the
//! person's [`Response`] back into a settled [`Outcome`] — every value
//! checked, every value carrying its [`Provenance`] — or into a re-ask that
//! says what was wrong.
//!
//! Like a protocol core that never does IO, this crate has no async runtime,
//! no files, no network, no clock and no randomness: times, ids and keys come
//! in as arguments, so every step is deterministic and testable.
//!
//! # Errors
//! A person's decline, cancel or wrong answer is never an error: it is an
//! [`Outcome`] or a re-ask carrying [`Problem`]s. What is an error is one
//! enum, [`Error`] (`#[non_exhaustive]`), so a caller has one type to
//! propagate and one place to look; its variants carry the specific kinds
//! as payloads — [`FormError`] for a form that cannot be asked as declared,
//! [`ReplyError`] for a reply that does not fit its set, [`ContentError`]
//! for answer text that is not one object, [`StateError`] and
//! [`LinkError`] for a sealed state or link a peer sent back wrong, and so
//! on. Functions that fail with one kind only (`Sealer::open`,
//! `LinkSigner::open`, `Ask::settle_text`, `ask_tool::parse_input`, the
//! `FromStr` impls)
//! return that kind, so callers match it directly; each converts into
//! [`Error`] with `?`. [`Error::Misuse`] ([`Misuse`]) is kept apart from the
//! rest: it means the calling code broke the API's contract — asking a form
//! with nothing open, a zero re-ask cap, reading values as a form they were
//! not settled from — and the fix is in that code, never in what a person
//! or a peer sends.
//!
//! # Example
//! ```
//! use askgate_core::{Ask, Form, Outcome, Provenance, Response, Revision, Step};
//!
//! let form: Form = serde_json::from_str(r#"{
//!   "message": "Schedule the deploy",
//!   "fields": [
//!     {"id": "env", "title": "Environment", "type": "choice", "default": "staging",
//!      "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]},
//!     {"id": "at", "title": "When", "type": "instant", "zone": "Europe/Paris"}
//!   ]
//! }"#)?;
//! let ask = Ask::new(form)?;
//! let params = ask.request(Revision::V2025_06_18)?;
//! // 2025-06-18 has no defaults on strings: the default is named instead.
//! assert!(params.requested_schema.property("env").unwrap().description.as_deref()
//!     .unwrap().contains("Default: Staging"));
//!
//! // A local time in the field's zone; the environment is left to its default.
//! let response: Response = serde_json::from_str(
//!     r#"{"action": "accept", "content": {"at": "2026-07-01T09:30:00"}}"#)?;
//! let Step::Settled(Outcome::Accepted { values }) = ask.settle(Revision::V2025_06_18, &response)
//! else { panic!("the answer is valid") };
//! assert_eq!(values.get("env").unwrap().source, Provenance::Defaulted);
//! assert_eq!(values.get("at").unwrap().value.to_json(), "2026-07-01T09:30:00+02:00");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod approval;
mod ask;
pub mod ask_tool;
mod checkpoint;
mod digest;
mod error;
mod field;
mod form;
mod intake;
mod link;
mod outcome;
mod problem;
mod question;
mod render;
mod reply;
mod revision;
mod risk;
mod seal;
mod sealed_arguments;
mod time;
mod trust;
mod typed;
mod value;
pub mod wire;

pub use ask::{Ask, AskRecord, DEFAULT_MAX_ATTEMPTS, RecordedValue, Step};
pub use checkpoint::Checkpoint;
pub use digest::{DigestKey, arguments_digest, canonical_json, lower_hex, object_digest};
pub use error::{ContentError, Error, FormError, Misuse, ReplyError};
pub use form::{
    BooleanSpec, ChoiceOption, ChoiceSpec, DateSpec, Field, FieldKind, Form, InstantSpec,
    IntegerSpec, NumberSpec, TextFormat, TextSpec, TimeRangeSpec, ZoneSpec,
};
pub use intake::{IntakeWhen, ThreadState};
pub use link::{LinkError, LinkSigner, OpenedLink};
pub use outcome::{Action, Outcome, Response};
pub use problem::{Echo, Problem, ProblemKind, looks_secret, names_secret};
pub use question::{MAX_QUESTIONS, Question, QuestionSet, Source};
pub use reply::{
    Awaiting, CheckedSet, Chosen, Decision, Delivery, QuestionAnswer, QuestionOutcome, Reply,
    Surface,
};
pub use revision::{Revision, UnknownRevision};
pub use risk::{
    CONFIRM_FIELD, Call, Gate, Method, Risk, UnknownRisk, confirmation_form, gate,
    may_have_run_note, threshold,
};
pub use seal::{Binding, Opened, Sealer, StateError};
pub use sealed_arguments::{ArgumentSeal, NONCE_LEN, SealError};
pub use trust::{
    Answered, Channel, Earlier, Facts, Heard, Reach, Ruling, Said, Trust, Verdict, Waiting, rule,
    withdrawn,
};
pub use typed::{AskChoice, AskField, AskForm, TimeRange, ValuesMismatch, private as __private};
pub use value::{Instant, Provenance, Settled, Value, Values};
