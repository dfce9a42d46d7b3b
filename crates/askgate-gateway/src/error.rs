//! Why the gateway could not start or serve: one error type for the
//! library's public API, each variant naming what failed (never a token,
//! an argument or a password), its cause kept as a typed source.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the gateway could not start, or stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot be used (it names the file, line and key).
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The store cannot be opened or failed.
    #[error(transparent)]
    Store(#[from] askgate_store::Error),
    /// The gateway's key file cannot be read or made.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The inbox page or its webhook cannot be set up.
    #[error(transparent)]
    Inbox(#[from] askgate_inbox::Error),
    /// Two upstreams' tools or prompts would have one name downstream.
    #[error(transparent)]
    Collision(#[from] Collision),
    /// Not one upstream server could be started (each is logged).
    #[error("no upstream server could be started; see the errors above")]
    NoUpstream,
    /// The calling code broke the library's contract: a config built by
    /// hand that [`Config::load`](crate::Config::load)'s checks would have
    /// refused.
    #[error(transparent)]
    Misuse(#[from] Misuse),
    /// Serving the client failed: its handshake, or the HTTP listener.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

/// Two upstreams offer a tool (or a prompt) under one name downstream: a
/// client could not tell them apart, so the gateway does not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {kind} {first_name:?} of upstream {first:?} and the {kind} {second_name:?} of upstream \
     {second:?} would both be named {name:?}; give one of them a namespace \
     (namespace = \"<prefix>\" or true in its [[upstreams]] table)"
)]
pub struct Collision {
    /// What collides: `tool` or `prompt`.
    pub kind: &'static str,
    /// The one name downstream.
    pub name: String,
    /// The first upstream listed.
    pub first: String,
    /// Its tool or prompt, as it names it.
    pub first_name: String,
    /// The other upstream.
    pub second: String,
    /// Its tool or prompt, as it names it.
    pub second_name: String,
}

/// A contract of the library broken by the calling code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// The inbox's address cannot serve as the base of links to it (a
    /// config file's `[inbox] base_url` is checked as it loads).
    #[error("the inbox's address cannot be used for links: {0}")]
    InboxAddress(#[source] askgate_mcp::Misuse),
}

/// Why the gateway's key file cannot be used; each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The file holds fewer than the 32 bytes a key needs.
    #[error("the key file {} is shorter than 32 bytes", .0.display())]
    Short(PathBuf),
    /// The file exists but cannot be read.
    #[error("cannot read the key file {}: {source}", .path.display())]
    Read {
        /// The key file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Others than its owner may write the key file: anyone could put a
    /// key of theirs in it. Refused, whatever reads it.
    #[error(
        "the key file {} is writable by others than its owner (mode {mode:04o}): anyone could put a \
         key of their own in it; chmod 600 it (and check that nobody changed it)",
        .path.display()
    )]
    OthersMayWrite {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The system gave no randomness for a new key.
    #[error("no randomness for a key: {0}")]
    Random(#[source] getrandom::Error),
    /// The new key (or its directory) cannot be written.
    #[error("cannot create {}: {source}", .path.display())]
    Create {
        /// The key file or its directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The key is not the one the store was first used with: another
    /// replica (or an earlier run) sealed its state and signed its links
    /// with another key.
    #[error(
        "the key file {} (fingerprint {mine}) is not the key of the store {store} (fingerprint \
         {recorded}): every gateway and inbox over one store must share one key; copy the key \
         file of the first process over it to {} (or point ASKGATE_KEY_FILE at it)",
        .path.display(),
        .path.display()
    )]
    NotTheStores {
        /// The key file this process read.
        path: PathBuf,
        /// The store, as it names itself (no credentials).
        store: String,
        /// This key's fingerprint.
        mine: String,
        /// The fingerprint the store recorded.
        recorded: String,
    },
    /// The key is the one the store's key was rotated from (`askgate key
    /// rotate` ran on another host): this process has not been given the
    /// new key yet.
    #[error(
        "the key file {} (fingerprint {mine}) was rotated out of the store {store}, whose key is \
         now {recorded}: copy the key file and its .previous file from the host that ran \
         `askgate key rotate` to {} and {}.previous (or point ASKGATE_KEY_FILE at them)",
        .path.display(),
        .path.display(),
        .path.display()
    )]
    RotatedAway {
        /// The key file this process read.
        path: PathBuf,
        /// The store, as it names itself (no credentials).
        store: String,
        /// This key's fingerprint.
        mine: String,
        /// The fingerprint the store recorded.
        recorded: String,
    },
    /// A rotation of the key at `path` wrote its files but did not move
    /// the store (it failed, or was cut short).
    #[error(
        "the rotation of the key {} was not finished ({detail}): run `askgate key rotate` again to finish it",
        .path.display()
    )]
    Unfinished {
        /// The key file.
        path: PathBuf,
        /// What stopped it.
        detail: String,
    },
}

/// Why serving a client stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The HTTP address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The stdio client's MCP handshake failed.
    #[error("the client handshake failed: {0}")]
    Handshake(#[source] Box<rmcp::service::ServerInitializeError>),
}

impl From<rmcp::service::ServerInitializeError> for ServeError {
    fn from(error: rmcp::service::ServerInitializeError) -> Self {
        Self::Handshake(Box::new(error))
    }
}
