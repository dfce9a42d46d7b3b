//! askgate-derive: a flat Rust struct as a typed ask, and the settled
//! outcome back as that struct.
//!
//! `#[derive(AskForm)]` implements askgate-core's `AskForm` for a struct
//! with named fields: `T::form()` is the [`Form`] to ask, one field per
//! struct field in declaration order, and `T::from_values(&values)` reads
//! the values of an accepted outcome back. `#[derive(AskChoice)]` makes a
//! fieldless enum the options of a choice; a `Vec` of it is a multiple
//! choice.
//!
//! Which Rust type is which kind of field is askgate-core's `AskField`
//! (see its table): text, numbers, integers, booleans, choices, dates,
//! instants, zones and time ranges, each in an `Option` when it may be
//! left empty. A struct MCP cannot carry — a nested struct, a map, a tuple,
//! a number-valued enum — does not compile, and the error says why.
//!
//! The generated code names askgate-core as `::askgate_core`, so the crate
//! using the derive depends on askgate-core (as any user of askgate-mcp
//! does, for `Ask`); `#[ask(crate = "path")]` names it otherwise.
//!
//! # Attributes
//!
//! On the struct:
//! - `message = "..."` (required): what the person reads above the fields.
//! - `crate = "path"`: where askgate-core is, if not `::askgate_core`.
//!
//! On a field:
//! - `title = "..."`: the field's name as the person reads it (default: the
//!   Rust name in words, `notify_list` is "Notify list").
//! - `description = "..."`: a longer explanation beside the field.
//! - `rename = "..."`: the field's id, the answer's key (default: the Rust name).
//! - `default = <value of the field's type>`: the pre-picked answer —
//!   `"text"`, `3`, `true`, `Env::Staging`, `[Notify::Slack]`,
//!   `jiff::civil::date(2026, 7, 1)`, a zone name for a `TimeZone`; for an
//!   `Option<T>`, a value of `T`.
//! - `min = ..`, `max = ..`: bounds of a number or integer (inclusive).
//! - `min_length = ..`, `max_length = ..`: characters of a text.
//! - `format = "email" | "uri"`: a format a text must have.
//! - `min_items = ..`, `max_items = ..`: picks of a multiple choice; a
//!   `Vec` with `min_items` of one or more must be answered.
//! - `zone = "Europe/Paris"`: the IANA zone of an instant or a time range,
//!   in which local times are read and shown.
//! - `secret`: a secret, never asked in form mode (only through URL mode).
//!
//! A constraint on a type it does not apply to (`min_length` on an integer)
//! is a compile error.
//!
//! On an enum: `crate = "path"`. On a variant: `value = "..."` (the
//! answer's text; default: the name in snake case), `label = "..."` (what
//! the person reads; default: the name in words), `hotkey = 'c'`.
//!
//! # Example
//! ```
//! use askgate_core::{Ask, AskForm, Outcome, Response, Revision, Step, TimeRange};
//! use askgate_derive::{AskChoice, AskForm};
//!
//! #[derive(Debug, PartialEq, AskChoice)]
//! enum Environment {
//!     Staging,
//!     #[ask(label = "Production", hotkey = 'p')]
//!     Prod,
//! }
//!
//! #[derive(Debug, PartialEq, AskChoice)]
//! enum Channel {
//!     Slack,
//!     Email,
//!     #[ask(label = "PagerDuty")]
//!     PagerDuty,
//! }
//!
//! #[derive(Debug, AskForm)]
//! #[ask(message = "Schedule the billing deploy")]
//! struct Deploy {
//!     #[ask(default = Environment::Staging)]
//!     environment: Environment,
//!     #[ask(title = "When", zone = "Europe/Paris")]
//!     at: jiff::ZonedDateTime,
//!     #[ask(min = 1, max = 5, default = 2)]
//!     replicas: u8,
//!     #[ask(description = "Who hears about it")]
//!     notify: Vec<Channel>,
//!     #[ask(max_length = 200)]
//!     reason: Option<String>,
//! }
//!
//! let ask = Ask::new(Deploy::form())?;
//! let response: Response = serde_json::from_str(r#"{"action": "accept", "content": {
//!     "environment": "prod", "at": "2026-07-01T09:30", "notify": ["slack", "pager_duty"]
//! }}"#)?;
//! let Step::Settled(Outcome::Accepted { values }) = ask.settle(Revision::V2025_11_25, &response)
//! else { panic!("a valid answer") };
//! let deploy = Deploy::from_values(&values)?;
//! assert_eq!(deploy.environment, Environment::Prod);
//! assert_eq!(deploy.at.to_string(), "2026-07-01T09:30:00+02:00[Europe/Paris]");
//! assert_eq!(deploy.replicas, 2);
//! assert_eq!(deploy.notify, [Channel::Slack, Channel::PagerDuty]);
//! assert_eq!(deploy.reason, None);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Form`]: https://docs.rs/askgate-core/latest/askgate_core/struct.Form.html

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

mod attr;
mod choice;
mod emit;
mod form;
mod words;

/// Derive `askgate_core::AskForm` for a struct with named fields: the
/// struct as a form, and settled values back as the struct.
///
/// See the [crate documentation](crate) for the attributes and an example.
#[proc_macro_derive(AskForm, attributes(ask))]
pub fn derive_ask_form(input: TokenStream) -> TokenStream {
    expand(input, form::derive)
}

/// Derive `askgate_core::AskChoice` (and `AskField`) for a fieldless enum:
/// each variant is one option of a choice, a `Vec` of the enum a multiple
/// choice.
///
/// See the [crate documentation](crate) for the attributes and an example.
#[proc_macro_derive(AskChoice, attributes(ask))]
pub fn derive_ask_choice(input: TokenStream) -> TokenStream {
    expand(input, choice::derive)
}

/// Run one derive on the item it is attached to: its code, or its errors
/// as `compile_error!`s where they apply.
fn expand(
    input: TokenStream,
    derive: fn(&DeriveInput) -> syn::Result<proc_macro2::TokenStream>,
) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    derive(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
