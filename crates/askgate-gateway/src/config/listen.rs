//! `[listen]`: the Streamable HTTP listener for clients, and the origins
//! a browser's request to it may come from.

use std::net::SocketAddr;

/// The Streamable HTTP listener for clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    /// The address.
    pub addr: SocketAddr,
    /// The origins a browser's request may come from (`Origin`), besides
    /// the loopback ones ([`LOOPBACK_ORIGINS`]), as `scheme://host[:port]`
    /// (`:*` for any port). A request from any other origin is refused
    /// (403), against DNS rebinding and cross-site requests; a request
    /// with no `Origin` (not a browser's) is not checked.
    pub allowed_origins: Vec<String>,
    /// Whether it may listen on an address other machines reach
    /// (`allow_plain_http`; `--allow-plain-http`): askgate serves plain
    /// HTTP, so the operator says TLS is terminated in front of it.
    pub allow_plain_http: bool,
}

/// The origins always allowed on the listener: pages on this machine.
pub const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

impl Listen {
    /// On `addr`, with the loopback origins only.
    pub fn on(addr: SocketAddr) -> Listen {
        Listen {
            addr,
            allowed_origins: Vec::new(),
            allow_plain_http: false,
        }
    }

    /// Every origin allowed: the loopback ones and the configured ones.
    pub fn origins(&self) -> Vec<String> {
        LOOPBACK_ORIGINS
            .iter()
            .map(|&origin| origin.to_owned())
            .chain(self.allowed_origins.iter().cloned())
            .collect()
    }
}
