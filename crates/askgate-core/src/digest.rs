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
    DigestKey::new(key).arguments(arguments)
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
    DigestKey::new(key).object(arguments)
}

/// A key of [`arguments_digest`] and [`object_digest`], made ready once.
/// Before each digest, HMAC hashes a key longer than SHA-256's block (a
/// derived key, `hmac-sha256:` and 64 hex digits, is) and pads it: two to
/// four compressions of SHA-256 that a digest of small arguments otherwise
/// repeats for every call. A `DigestKey` has done them, and each digest
/// starts from a copy. `Debug` never shows the key.
///
/// # Example
/// ```
/// use askgate_core::{DigestKey, arguments_digest};
/// let key = DigestKey::new(b"key");
/// let arguments = serde_json::json!({"path": "/tmp"});
/// assert_eq!(key.arguments(&arguments), arguments_digest(b"key", &arguments));
/// assert_eq!(key.object(arguments.as_object().unwrap()), key.arguments(&arguments));
/// ```
#[derive(Clone)]
pub struct DigestKey {
    mac: Hmac<Sha256>,
}

impl DigestKey {
    /// The ready form of `key`.
    pub fn new(key: &[u8]) -> DigestKey {
        DigestKey {
            mac: Hmac::<Sha256>::new_from_slice(key)
                .expect("HMAC takes keys of any length, so new_from_slice cannot fail"),
        }
    }

    /// [`arguments_digest`] under this key.
    pub fn arguments(&self, arguments: &Json) -> String {
        let mut canonical = canonical_buffer();
        write_canonical(arguments, &mut canonical);
        self.digest_of(&canonical)
    }

    /// [`object_digest`] under this key.
    pub fn object(&self, arguments: &serde_json::Map<String, Json>) -> String {
        let mut canonical = canonical_buffer();
        write_object(arguments, &mut canonical);
        self.digest_of(&canonical)
    }

    /// `hmac-sha256:<hex>` of `canonical`.
    fn digest_of(&self, canonical: &[u8]) -> String {
        let mut mac = self.mac.clone();
        mac.update(canonical);
        let mut digest = String::with_capacity(PREFIX.len() + 64);
        digest.push_str(PREFIX);
        push_hex(&mut digest, &mac.finalize().into_bytes());
        digest
    }
}

impl std::fmt::Debug for DigestKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DigestKey(<redacted>)")
    }
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
    // Most objects a client sends have one key, or keys in order already:
    // those are written as they are, without a sorted copy of the entries.
    if map.keys().is_sorted() {
        write_entries(map.iter(), out);
    } else {
        let mut entries: Vec<(&String, &Json)> = map.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        write_entries(entries.into_iter(), out);
    }
}

fn write_entries<'a>(entries: impl Iterator<Item = (&'a String, &'a Json)>, out: &mut Vec<u8>) {
    out.push(b'{');
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(key, out);
        out.push(b':');
        write_canonical(value, out);
    }
    out.push(b'}');
}

/// A buffer for a canonical form: room for a small call's arguments in
/// one allocation.
fn canonical_buffer() -> Vec<u8> {
    Vec::with_capacity(256)
}

/// What every digest begins with: the algorithm.
const PREFIX: &str = "hmac-sha256:";

/// `bytes` in lowercase hex, as `hex::encode` writes them.
///
/// # Example
/// ```
/// assert_eq!(askgate_core::lower_hex(&[0x0f, 0xa0]), "0fa0");
/// ```
pub fn lower_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    out
}

/// Append `bytes` to `out` in lowercase hex. By `hex::encode_to_slice`, a
/// table lookup a byte: `hex::encode` collects its digits a `char` at a
/// time, some 1,700 instructions for a SHA-256 digest, of which a read call
/// makes three.
fn push_hex(out: &mut String, bytes: &[u8]) {
    let mut digits = [0u8; 128];
    for chunk in bytes.chunks(digits.len() / 2) {
        let digits = &mut digits[..chunk.len() * 2];
        // The slice is twice the chunk's length: the one way it fails.
        if hex::encode_to_slice(chunk, digits).is_ok() {
            // Hex digits are ASCII.
            out.push_str(std::str::from_utf8(digits).unwrap_or_default());
        }
    }
}

/// `value` as serde_json writes it, compact.
fn write_json(value: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    // Writing a string or a scalar into memory cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

#[cfg(test)]
mod tests {
    use super::{DigestKey, arguments_digest, canonical_json, lower_hex, object_digest};

    /// The same digits as the `hex` crate writes, for every byte and for
    /// inputs longer than one chunk.
    #[test]
    fn lower_hex_writes_what_hex_encode_writes() {
        let every: Vec<u8> = (0..=255).collect();
        for bytes in [
            &[][..],
            &[0xab][..],
            &every[..32],
            &every[..],
            &[every.clone(), every.clone()].concat()[..],
        ] {
            assert_eq!(lower_hex(bytes), hex::encode(bytes));
        }
    }

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
        // The same value with its keys in order at every level already
        // (written without sorting them): the same text and digest.
        let sorted = serde_json::json!({
            "a\"b": {"x": -3, "y": 1}, "force": true,
            "n": [1, 2.5, null, {"a": "é", "z": "\"q\""}], "path": "/tmp",
        });
        assert_eq!(canonical_json(&sorted), canonical_json(&arguments));
        assert_eq!(arguments_digest(b"key", &sorted), expected);
    }

    /// A key longer than SHA-256's block (as the derived keys of the
    /// ledger and the rounds are) is hashed before use: a ready key digests
    /// the same as the key given each time, and again the same after many
    /// digests from it. Computed apart from askgate, as above.
    #[test]
    fn a_ready_long_key_digests_as_the_key_given_each_time() {
        let long = format!("hmac-sha256:{}", "ab".repeat(32));
        let arguments = serde_json::json!({"path": "/tmp", "force": true});
        let expected =
            "hmac-sha256:064f6daf14f5d0eb7269e0c0f5c26bc662f71eae8695e5f428aadf1cd175557a";
        assert_eq!(arguments_digest(long.as_bytes(), &arguments), expected);
        let key = DigestKey::new(long.as_bytes());
        let object = arguments.as_object().expect("an object");
        for _ in 0..3 {
            assert_eq!(key.object(object), expected);
            assert_eq!(key.arguments(&arguments), expected);
        }
        assert_eq!(format!("{key:?}"), "DigestKey(<redacted>)");
    }
}
