//! Why the gateway could not start or serve: one error type for the
//! library's public API, each variant naming what failed (never a token,
//! an argument or a password).

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
    /// The gateway's key file cannot be read or made (the text names it).
    #[error("{0}")]
    Key(String),
    /// The inbox page or its webhook cannot be set up.
    #[error(transparent)]
    Inbox(#[from] askgate_inbox::Error),
    /// Not one upstream server could be started (each is logged).
    #[error("no upstream server could be started; see the errors above")]
    NoUpstream,
    /// Something the gateway needs could not be set up (the inbox's
    /// address for links, the ledger's recovery).
    #[error("{0}")]
    Setup(String),
    /// Serving the client failed: its handshake, or the HTTP listener.
    #[error("{0}")]
    Serve(String),
}
