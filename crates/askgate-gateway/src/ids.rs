//! The gateway's random ids: ledger calls, their markers, sessions, held
//! requests. One generator, from the system's random source.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::ErrorData;

/// A random id, `<prefix>_<22 url-safe characters>` (128 bits).
///
/// # Errors
/// The system's random source failed.
pub(crate) fn random(prefix: &str) -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorData::internal_error(format!("no randomness: {e}"), None))?;
    Ok(format!("{prefix}_{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// A new session's id: random, so no two sessions (nor two runs) share
/// one; if the random source fails, this process's id and a count — still
/// unique among the sessions one gateway serves.
pub(crate) fn session() -> Arc<str> {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let id = random("session").unwrap_or_else(|_| {
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        format!("session_{}_{n}", std::process::id())
    });
    Arc::from(id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_carry_their_prefix_and_never_repeat() {
        let (a, b) = (super::random("call"), super::random("call"));
        let (a, b) = (a.expect("random"), b.expect("random"));
        assert!(
            a.starts_with("call_") && a.len() == "call_".len() + 22,
            "{a}"
        );
        assert_ne!(a, b);
    }
}
