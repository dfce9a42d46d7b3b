//! A parked call's arguments, sealed at rest.
//!
//! To show a person what they are asked to approve, the store keeps a
//! parked call's arguments until its ask settles — but never readable: they
//! are sealed with XChaCha20-Poly1305 under a key derived from the
//! deployment key, and bound to the ask's id (the additional data), so a
//! sealed value copied to another ask does not open. Only a process that
//! holds the deployment key (the gateway, the inbox beside it) opens them;
//! a backup, a replica's disk or a SQL prompt sees bytes. The store erases
//! them when the ask settles or expires; the keyed digest stays.
//!
//! Like [`LinkSigner`](crate::LinkSigner), the seal opens under the key in
//! use and the one rotated out last; it has no randomness of its own: the
//! caller draws each seal's 24-byte nonce (random nonces are safe at that
//! size).
//!
//! Format: `aa1.<base64url(nonce ‖ ciphertext ‖ tag)>`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value as Json};
use sha2::Sha256;

/// The format's prefix.
const PREFIX: &str = "aa1.";
/// The nonce's length.
pub const NONCE_LEN: usize = 24;

/// Seals and opens parked calls' arguments (see the module).
#[derive(Clone)]
pub struct ArgumentSeal {
    /// Derived from the key in use, then from the one rotated out last.
    ciphers: Vec<XChaCha20Poly1305>,
}

impl std::fmt::Debug for ArgumentSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentSeal").finish_non_exhaustive()
    }
}

/// Why sealed arguments did not open. None says anything of what they
/// hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// Not of this format.
    #[error("the sealed arguments are malformed ({0})")]
    Malformed(&'static str),
    /// Sealed for another ask, under another key, or altered.
    #[error(
        "the sealed arguments do not open: sealed for another ask, under a key rotated out, or altered"
    )]
    Refused,
}

impl ArgumentSeal {
    /// The seal of the deployment key `key`.
    pub fn new(key: impl AsRef<[u8]>) -> ArgumentSeal {
        ArgumentSeal {
            ciphers: vec![derived(key.as_ref())],
        }
    }

    /// This seal, also opening what the key rotated out last (`previous`)
    /// sealed.
    #[must_use]
    pub fn with_previous(mut self, previous: impl AsRef<[u8]>) -> ArgumentSeal {
        self.ciphers.push(derived(previous.as_ref()));
        self
    }

    /// `arguments` of the ask `ask_id`, sealed under the key in use with
    /// `nonce` (draw it at random for each seal).
    pub fn seal(
        &self,
        ask_id: &str,
        arguments: &Map<String, Json>,
        nonce: [u8; NONCE_LEN],
    ) -> String {
        let plain = Json::Object(arguments.clone()).to_string();
        let nonce = XNonce::from(nonce);
        let payload = Payload {
            msg: plain.as_bytes(),
            aad: ask_id.as_bytes(),
        };
        // Sealing only fails for a message past the cipher's bound (256
        // GiB), which no call's arguments reach.
        let sealed = self.ciphers[0].encrypt(&nonce, payload).unwrap_or_default();
        let mut bytes = Vec::with_capacity(NONCE_LEN + sealed.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The arguments `sealed` for the ask `ask_id`.
    ///
    /// # Errors
    /// [`SealError`]: not this format, or sealed for another ask, under a
    /// key this seal does not hold, or altered.
    pub fn open(&self, ask_id: &str, sealed: &str) -> Result<Map<String, Json>, SealError> {
        let body = sealed
            .strip_prefix(PREFIX)
            .ok_or(SealError::Malformed("not aa1"))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| SealError::Malformed("not base64url"))?;
        if bytes.len() < NONCE_LEN {
            return Err(SealError::Malformed("too short"));
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).map_err(|_| SealError::Malformed("too short"))?;
        let plain = self
            .ciphers
            .iter()
            .find_map(|cipher| {
                let payload = Payload {
                    msg: sealed,
                    aad: ask_id.as_bytes(),
                };
                cipher.decrypt(&nonce, payload).ok()
            })
            .ok_or(SealError::Refused)?;
        match serde_json::from_slice(&plain) {
            Ok(Json::Object(arguments)) => Ok(arguments),
            _ => Err(SealError::Malformed("not a JSON object inside")),
        }
    }
}

/// The cipher of a key derived from the deployment key: HMAC-SHA-256 of a
/// label, so that this key is used for nothing else.
fn derived(key: &[u8]) -> XChaCha20Poly1305 {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(b"askgate sealed arguments v1");
    let derived = mac.finalize().into_bytes();
    <XChaCha20Poly1305 as KeyInit>::new_from_slice(&derived)
        .unwrap_or_else(|_| unreachable!("HMAC-SHA-256 gives 32 bytes, the cipher's key"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn arguments() -> Map<String, Json> {
        match json!({"path": "/srv/app.conf", "content": "line 1\nline 2\n", "token": "sk-live-1"})
        {
            Json::Object(map) => map,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn sealed_arguments_open_for_their_ask_only_and_show_nothing_of_themselves() {
        let seal = ArgumentSeal::new(b"0123456789abcdef0123456789abcdef");
        let sealed = seal.seal("ask_1", &arguments(), [7; NONCE_LEN]);
        assert!(sealed.starts_with("aa1."), "{sealed}");
        for secret in ["srv", "line", "sk-live", "path"] {
            assert!(!sealed.contains(secret), "{secret} in {sealed}");
        }
        assert_eq!(seal.open("ask_1", &sealed), Ok(arguments()));
        assert_eq!(seal.open("ask_2", &sealed), Err(SealError::Refused));
        // Another deployment's key, and an altered byte.
        let other = ArgumentSeal::new(b"another key, thirty-two bytes..!");
        assert_eq!(other.open("ask_1", &sealed), Err(SealError::Refused));
        let mut altered = sealed.clone().into_bytes();
        let last = altered.len() - 2;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).expect("ascii");
        assert_eq!(seal.open("ask_1", &altered), Err(SealError::Refused));
        assert!(matches!(
            seal.open("ask_1", "plain text"),
            Err(SealError::Malformed(_))
        ));
        assert!(matches!(
            seal.open("ask_1", "aa1.AAAA"),
            Err(SealError::Malformed(_))
        ));
    }

    #[test]
    fn what_the_key_rotated_out_sealed_still_opens() {
        let old = b"0123456789abcdef0123456789abcdef";
        let new = b"another key, thirty-two bytes..!";
        let sealed = ArgumentSeal::new(old).seal("ask_1", &arguments(), [1; NONCE_LEN]);
        let rotated = ArgumentSeal::new(new).with_previous(old);
        assert_eq!(rotated.open("ask_1", &sealed), Ok(arguments()));
        assert_eq!(
            ArgumentSeal::new(new).open("ask_1", &sealed),
            Err(SealError::Refused)
        );
        // Two seals of the same arguments differ by their nonces.
        let seal = ArgumentSeal::new(new);
        assert_ne!(
            seal.seal("ask_1", &arguments(), [1; NONCE_LEN]),
            seal.seal("ask_1", &arguments(), [2; NONCE_LEN])
        );
    }
}
