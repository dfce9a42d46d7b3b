//! Signed inbox links: the page of one ask, good for a short while and for
//! one opening (the nonce is consumed in the store by whoever opens it).
//!
//! A link carries nothing personal — the ask's id is in the path, and the
//! token is an expiry, a nonce and an HMAC-SHA256 tag over the three.
//! Who the ask is for stays in the store, where the inbox checks the person
//! who opened the link against it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use jiff::Timestamp;
use sha2::Sha256;

/// Signs and checks inbox links.
#[derive(Clone)]
pub struct LinkSigner {
    key: Vec<u8>,
    /// Keys rotated out: links they signed still open.
    previous: Vec<Vec<u8>>,
}

impl std::fmt::Debug for LinkSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkSigner").finish_non_exhaustive()
    }
}

/// A link token that was checked: consume its nonce before acting on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedLink {
    /// The single-use nonce.
    pub nonce: String,
    /// When the link stops being good.
    pub expires_at: Timestamp,
}

/// Why a link was refused. None echoes the token. Converts into
/// [`Error::Link`](crate::Error::Link).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// Not a link token of this format.
    #[error("the link is malformed: {0}; open the link exactly as it was sent")]
    Malformed(&'static str),
    /// The tag does not match: altered, made for another ask, or signed
    /// with another key.
    #[error("the link's signature does not match: it was altered, or is for another ask")]
    Tampered,
    /// Past its expiry.
    #[error("the link expired at {0}; ask for a new one")]
    Expired(Timestamp),
}

/// Domain separation: a link tag can never pass as any other tag.
const CONTEXT: &[u8] = b"askgate inbox link v1\0";

impl LinkSigner {
    /// A signer with `key` (at least 32 random bytes, the same on every
    /// replica serving the inbox).
    pub fn new(key: impl Into<Vec<u8>>) -> LinkSigner {
        LinkSigner {
            key: key.into(),
            previous: Vec::new(),
        }
    }

    /// Also open links signed with `key` (a key being rotated out); new
    /// links are signed with the current key only.
    #[must_use]
    pub fn with_previous(mut self, key: impl Into<Vec<u8>>) -> LinkSigner {
        self.previous.push(key.into());
        self
    }

    /// What names this deployment's key without giving it away: the
    /// first 16 bytes of an HMAC of a fixed text, in hex. A gateway and an
    /// inbox with the same key — over the same store — say the same; a
    /// gateway compares it to tell its own inbox from another one.
    pub fn fingerprint(&self) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key)
            .expect("HMAC takes keys of any length, so new_from_slice cannot fail");
        mac.update(b"askgate deployment fingerprint v1");
        hex::encode(&mac.finalize().into_bytes()[..16])
    }

    /// The token of a link to `ask_id`'s page, good until `expires_at`,
    /// once (`nonce`).
    pub fn sign(&self, ask_id: &str, expires_at: Timestamp, nonce: &str) -> String {
        let expires = expires_at.as_second();
        let tag = URL_SAFE_NO_PAD.encode(self.tag(ask_id, expires, nonce));
        format!("{expires}.{nonce}.{tag}")
    }

    /// Check `token` for `ask_id` at `now`.
    ///
    /// # Errors
    /// [`LinkError`], naming what was wrong.
    pub fn open(&self, ask_id: &str, token: &str, now: Timestamp) -> Result<OpenedLink, LinkError> {
        let mut parts = token.splitn(3, '.');
        let (Some(expires), Some(nonce), Some(tag)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(LinkError::Malformed("it does not have three parts"));
        };
        let expires: i64 = expires
            .parse()
            .map_err(|_| LinkError::Malformed("its expiry is not a number"))?;
        if nonce.is_empty()
            || !nonce
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(LinkError::Malformed("its nonce is not base64url"));
        }
        let given = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| LinkError::Tampered)?;
        let signed_here = std::iter::once(&self.key).chain(&self.previous).any(|key| {
            mac(key, ask_id, expires, nonce)
                .verify_slice(&given)
                .is_ok()
        });
        if !signed_here {
            return Err(LinkError::Tampered);
        }
        let expires_at = Timestamp::from_second(expires)
            .map_err(|_| LinkError::Malformed("its expiry is out of range"))?;
        if now >= expires_at {
            return Err(LinkError::Expired(expires_at));
        }
        Ok(OpenedLink {
            nonce: nonce.to_owned(),
            expires_at,
        })
    }

    fn tag(&self, ask_id: &str, expires: i64, nonce: &str) -> Vec<u8> {
        mac(&self.key, ask_id, expires, nonce)
            .finalize()
            .into_bytes()
            .to_vec()
    }
}

/// The MAC of a link to `ask_id` under `key`.
fn mac(key: &[u8], ask_id: &str, expires: i64, nonce: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key)
        .expect("HMAC takes keys of any length, so new_from_slice cannot fail");
    mac.update(CONTEXT);
    for part in [
        ask_id.as_bytes(),
        expires.to_string().as_bytes(),
        nonce.as_bytes(),
    ] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).expect("in range")
    }

    #[test]
    fn a_link_opens_for_its_ask_until_it_expires() {
        let signer = LinkSigner::new(*b"0123456789abcdef0123456789abcdef");
        let token = signer.sign("ask_1", at(2_000), "n0nce");
        let opened = signer.open("ask_1", &token, at(1_000)).expect("good");
        assert_eq!(opened.nonce, "n0nce");
        assert_eq!(
            signer.open("ask_1", &token, at(2_000)),
            Err(LinkError::Expired(at(2_000)))
        );
        assert_eq!(
            signer.open("ask_2", &token, at(1_000)),
            Err(LinkError::Tampered)
        );
        let other = LinkSigner::new(*b"another key, thirty-two bytes..!");
        assert_eq!(
            other.open("ask_1", &token, at(1_000)),
            Err(LinkError::Tampered)
        );
    }

    #[test]
    fn a_link_signed_before_a_rotation_still_opens_and_new_ones_use_the_new_key() {
        let old = *b"0123456789abcdef0123456789abcdef";
        let new = *b"another key, thirty-two bytes..!";
        let before = LinkSigner::new(old).sign("ask_1", at(2_000), "n0nce");
        let rotated = LinkSigner::new(new).with_previous(old);
        assert!(rotated.open("ask_1", &before, at(1_000)).is_ok());
        let after = rotated.sign("ask_1", at(2_000), "n1nce");
        assert!(
            LinkSigner::new(new)
                .open("ask_1", &after, at(1_000))
                .is_ok()
        );
        assert_eq!(
            LinkSigner::new(old).open("ask_1", &after, at(1_000)),
            Err(LinkError::Tampered),
            "signed with the new key only"
        );
        assert_eq!(
            rotated.fingerprint(),
            LinkSigner::new(new).fingerprint(),
            "the fingerprint is the current key's"
        );
    }

    #[test]
    fn an_altered_link_is_refused() {
        let signer = LinkSigner::new(*b"0123456789abcdef0123456789abcdef");
        let token = signer.sign("ask_1", at(2_000), "n0nce");
        let later = token.replacen("2000", "9000", 1);
        assert_eq!(
            signer.open("ask_1", &later, at(1_000)),
            Err(LinkError::Tampered)
        );
        let renonced = token.replacen("n0nce", "n1nce", 1);
        assert_eq!(
            signer.open("ask_1", &renonced, at(1_000)),
            Err(LinkError::Tampered)
        );
        assert!(matches!(
            signer.open("ask_1", "garbage", at(1_000)),
            Err(LinkError::Malformed(_))
        ));
    }
}
