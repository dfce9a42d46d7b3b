//! The caller's own mistakes: uses of the API that cannot work, whatever
//! the peer or the person does. A leaf: every part of the crate may
//! report one, and [`crate::Error`] carries it.

use std::time::Duration;

/// A use of the API that cannot work, whatever the peer or the person
/// does: what was given, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// The inbox's base URL does not parse as an absolute URL.
    #[error(
        "the inbox URL {url:?} is not an absolute URL: {reason}; expected one like \
         https://askgate.example/"
    )]
    InboxUrl {
        /// The URL given.
        url: String,
        /// Why it does not parse.
        reason: url::ParseError,
    },
    /// The inbox's base URL has no host to send people to.
    #[error("the inbox URL {url:?} has no host; expected one like https://askgate.example/")]
    InboxUrlWithoutHost {
        /// The URL given.
        url: String,
    },
    /// A link to an inbox page was asked for where no page is served
    /// (see [`InboxLinks::without_page`](crate::InboxLinks::without_page)).
    #[error("no inbox page is served here to link to; the ask waits in the store (askgate asks)")]
    NoInboxPage,
    /// A lifetime reaches past the last instant askgate can write down.
    #[error(
        "{what} of {} s reaches past the year 9999; expected a lifetime of days or hours",
        .lifetime.as_secs()
    )]
    LifetimeOutOfRange {
        /// Whose lifetime it is.
        what: &'static str,
        /// The lifetime given.
        lifetime: Duration,
    },
}
