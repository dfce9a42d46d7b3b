//! Keyed digests of tool arguments: what the audit log and the ledger keep
//! instead of the arguments themselves.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value as Json;
use sha2::Sha256;

/// `hmac-sha256:<hex>` of the arguments in canonical form (object keys
/// sorted at every level, no spaces), under `key`. The same arguments give
/// the same digest whatever order a client wrote their keys in; without the
/// key, a digest says nothing about the arguments.
///
/// # Example
/// ```
/// use askgate_core::arguments_digest;
/// let a = arguments_digest(b"key", &serde_json::json!({"path": "/tmp", "force": true}));
/// let b = arguments_digest(b"key", &serde_json::json!({"force": true, "path": "/tmp"}));
/// assert_eq!(a, b);
/// assert!(a.starts_with("hmac-sha256:"));
/// assert_ne!(a, arguments_digest(b"other key", &serde_json::json!({"path": "/tmp", "force": true})));
/// ```
pub fn arguments_digest(key: &[u8], arguments: &Json) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key)
        .expect("HMAC takes keys of any length, so new_from_slice cannot fail");
    let mut canonical = String::new();
    write_canonical(arguments, &mut canonical);
    mac.update(canonical.as_bytes());
    format!("hmac-sha256:{}", hex(&mac.finalize().into_bytes()))
}

/// `bytes` in lowercase hex: how askgate writes digests, tags and
/// fingerprints.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut text, byte| {
            let _ = write!(text, "{byte:02x}");
            text
        })
}

/// The bytes of `text` in hex; `None` when it is not hex.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// `json` in canonical form: object keys sorted at every level, no
/// whitespace — the same text for the same value, whatever order a client
/// sent its keys in (what [`arguments_digest`] hashes, and what a preview
/// of the arguments shows).
pub fn canonical_json(json: &Json) -> String {
    let mut out = String::new();
    write_canonical(json, &mut out);
    out
}

fn write_canonical(json: &Json, out: &mut String) {
    match json {
        Json::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Json::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key.as_str()], out);
            }
            out.push('}');
        }
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
