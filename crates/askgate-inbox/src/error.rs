//! What can go wrong setting up the inbox: each error names what was wrong
//! and, where it is a file or an address, which one — never a token.

use std::net::SocketAddr;

/// Why the inbox (or its webhook) could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The inbox's base URL cannot be used.
    #[error("the inbox URL {url:?} {problem}")]
    Url {
        /// The URL given.
        url: String,
        /// What is wrong with it, and what was expected.
        problem: String,
    },
    /// The inbox's address cannot be listened on.
    #[error("the inbox cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The generated operator token's files cannot be read or written; the
    /// text names the file (never the token).
    #[error("{0}")]
    OperatorToken(String),
    /// The webhook cannot be set up: a header that is not valid HTTP, or no
    /// HTTP client (the text never quotes a header value).
    #[error("{0}")]
    Webhook(String),
    /// The system's random source failed.
    #[error("no randomness: {0}")]
    Random(String),
}
