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
    let mut canonical = Vec::new();
    write_canonical(arguments, &mut canonical);
    digest_of(key, &canonical)
}

/// [`arguments_digest`] of `arguments` as an object, without making a
/// [`Json`] of it: what a `tools/call` carries.
///
/// # Example
/// ```
/// use askgate_core::{arguments_digest, object_digest};
/// let arguments = serde_json::json!({"path": "/tmp", "force": true});
/// let object = arguments.as_object().unwrap();
/// assert_eq!(object_digest(b"key", object), arguments_digest(b"key", &arguments));
/// ```
pub fn object_digest(key: &[u8], arguments: &serde_json::Map<String, Json>) -> String {
    let mut canonical = Vec::new();
    write_object(arguments, &mut canonical);
    digest_of(key, &canonical)
}

/// `hmac-sha256:<hex>` of `canonical` under `key`.
fn digest_of(key: &[u8], canonical: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key)
        .expect("HMAC takes keys of any length, so new_from_slice cannot fail");
    mac.update(canonical);
    format!("hmac-sha256:{}", hex::encode(mac.finalize().into_bytes()))
}

/// `json` in canonical form: object keys sorted at every level, no
/// whitespace — the same text for the same value, whatever order a client
/// sent its keys in (what [`arguments_digest`] hashes, and what a preview
/// of the arguments shows).
pub fn canonical_json(json: &Json) -> String {
    let mut out = Vec::new();
    write_canonical(json, &mut out);
    // Written by serde_json from `&str`s and punctuation only.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn write_canonical(json: &Json, out: &mut Vec<u8>) {
    match json {
        Json::Object(map) => write_object(map, out),
        Json::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_json(scalar, out),
    }
}

fn write_object(map: &serde_json::Map<String, Json>, out: &mut Vec<u8>) {
    let mut entries: Vec<(&String, &Json)> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(key, out);
        out.push(b':');
        write_canonical(value, out);
    }
    out.push(b'}');
}

/// `value` as serde_json writes it, compact.
fn write_json(value: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    // Writing a string or a scalar into memory cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

#[cfg(test)]
mod tests {
    use super::{arguments_digest, canonical_json, object_digest};

    /// The digests in every store were made so: a change here would make
    /// the ledger miss the retries of calls recorded before it. The value
    /// was computed apart from askgate (Python's `hmac` over
    /// `json.dumps(sort_keys=True, separators=(",", ":"),
    /// ensure_ascii=False)`).
    #[test]
    fn the_digest_is_the_hmac_of_the_canonical_json_and_stays_so() {
        let arguments = serde_json::json!({
            "path": "/tmp", "force": true,
            "n": [1, 2.5, null, {"z": "\"q\"", "a": "é"}],
            "a\"b": {"y": 1, "x": -3},
        });
        assert_eq!(
            canonical_json(&arguments),
            r#"{"a\"b":{"x":-3,"y":1},"force":true,"n":[1,2.5,null,{"a":"é","z":"\"q\""}],"path":"/tmp"}"#
        );
        let expected =
            "hmac-sha256:ea9a8db314d6b4cea8bf76f43f7270425fb778bf22d86041a8d04fe741370e91";
        assert_eq!(arguments_digest(b"key", &arguments), expected);
        let object = arguments.as_object().expect("an object");
        assert_eq!(object_digest(b"key", object), expected);
    }
}
