//! What can go wrong setting up the inbox: each error names what was wrong
//! and, where it is a file or an address, which one — never a token.
//!
//! One enum for the crate ([`Error`]); a caller's bug — an argument the API
//! documents as not allowed — is [`Error::Misuse`], apart from what the
//! system or the configuration caused. What a request to the inbox's page
//! can be refused for is not an `Error` but a rejection
//! ([`crate::rejection`]), which carries its HTTP status.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the inbox (or its webhook) could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The inbox's base URL is not an absolute URL.
    #[error("the inbox URL {url:?} is not an absolute URL: {source}")]
    Url {
        /// The URL given.
        url: String,
        /// Why it does not parse.
        #[source]
        source: url::ParseError,
    },
    /// The inbox's base URL is neither http nor https.
    #[error("the inbox URL {url:?} is {scheme}:, expected http: or https:")]
    UrlScheme {
        /// The URL given.
        url: String,
        /// Its scheme.
        scheme: String,
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
    /// A file of the generated operator token cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    TokenFileRead {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file of the generated operator token cannot be written.
    #[error("cannot write {file} to {}: {source}", path.display())]
    TokenFileWrite {
        /// Which of the two files.
        file: TokenFile,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Others than its owner may write a file of the generated operator
    /// token: whoever writes the digest signs in as the operator.
    #[error(
        "{}: others than its owner may write {file} (mode {mode:04o}); chmod 600 it (and check \
         that nobody changed it)",
        path.display()
    )]
    TokenFileShared {
        /// Which of the two files.
        file: TokenFile,
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The digest file does not hold a SHA-256 in hex.
    #[error("{} does not hold a SHA-256 in hex", path.display())]
    TokenDigestGarbled {
        /// The file.
        path: PathBuf,
    },
    /// The generated token's file is there but empty.
    #[error("{} is empty; remove it to have a token made", path.display())]
    TokenFileEmpty {
        /// The file.
        path: PathBuf,
    },
    /// A webhook header's name is not a valid HTTP header name.
    #[error("the webhook header name {name:?} is not valid")]
    WebhookHeaderName {
        /// The name.
        name: String,
    },
    /// A webhook header's value is not a valid HTTP header value (the
    /// value is never quoted: it may be a credential).
    #[error("the value of webhook header {name:?} is not valid")]
    WebhookHeaderValue {
        /// The header's name.
        name: String,
    },
    /// The webhook's HTTP client cannot be built.
    #[error("cannot build the webhook client: {source}")]
    WebhookClient {
        /// Why (without the URL, which may be a secret).
        #[source]
        source: reqwest::Error,
    },
    /// The system's random source failed.
    #[error("no randomness: {0}")]
    Random(#[source] getrandom::Error),
    /// The caller passed what the API documents as not allowed.
    #[error("{0}")]
    Misuse(#[from] Misuse),
}

/// Which file of the generated operator token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenFile {
    /// The token itself (`<key file>.operator-token`).
    Token,
    /// Its SHA-256 (`<key file>.inbox`).
    Digest,
}

impl std::fmt::Display for TokenFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TokenFile::Token => "the inbox's operator token",
            TokenFile::Digest => "the inbox operator token's digest",
        })
    }
}

/// A caller's bug: an argument the API does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// A person's (or the operator's) token is empty or blank: it would
    /// sign them in with an empty form.
    #[error("the token of {who:?} is blank: every person needs a token of their own")]
    BlankToken {
        /// Whose token (a name, never the token).
        who: String,
    },
}
