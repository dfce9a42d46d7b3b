//! The revision a client negotiated, as askgate-core knows it.

use askgate_core::Revision;
use rmcp::model::ProtocolVersion;

/// The askgate revision of a negotiated protocol version; `None` for
/// revisions without elicitation (2024-11-05, 2025-03-26) or unknown ones.
/// A version newer than every known one (rmcp keeps unknown strings) maps to
/// nothing rather than to a guess.
pub fn revision_of(version: &ProtocolVersion) -> Option<Revision> {
    version.as_str().parse().ok()
}
