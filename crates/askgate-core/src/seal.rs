//! Sealed request state for multi round-trip requests (MCP 2026-07-28).
//!
//! A server that answers `tools/call` with `InputRequiredResult` hands the
//! client a `requestState` to echo on the retry. The client is not to be
//! trusted with it: here it is sealed — HMAC-SHA256 over what it carries —
//! and bound to the principal, the request (method and name), a digest of
//! the arguments, an expiry and a single-use nonce. Opening checks all of
//! it; the caller then consumes the nonce in the store, so a state is good
//! for exactly one retry.
//!
//! The seal signs, it does not encrypt: the carried JSON is readable by the
//! client. Carry ids and progress, never secrets or answer values.
//!
//! Format: `as1.<base64url payload>.<base64url tag>`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use sha2::Sha256;

/// What a sealed state is bound to: a retry of anything else is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// Who the request is for.
    pub principal: String,
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub method: String,
    /// The tool or prompt name, or the resource URI.
    pub name: String,
    /// The keyed digest of the arguments (see
    /// [`arguments_digest`](crate::arguments_digest)).
    pub arguments: String,
}

/// A state opened and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    /// The single-use nonce: consume it before acting on the state.
    pub nonce: String,
    /// When the state stops being good.
    pub expires_at: Timestamp,
    /// What the server carried across the round trip.
    pub carried: Json,
}

/// Why a state was refused. Each names what was wrong; none echoes the
/// state back. Converts into [`Error::State`](crate::Error::State).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Not a sealed state of this format.
    #[error("requestState is malformed: {0}; expected the value the server sent, echoed verbatim")]
    Malformed(&'static str),
    /// The seal does not match: the state was altered, or sealed with
    /// another key.
    #[error("requestState integrity check failed: it was altered or was not issued by this server")]
    Tampered,
    /// The state is past its expiry.
    #[error("requestState expired at {0}; call again without it to start over")]
    Expired(Timestamp),
    /// The state belongs to another principal, request or arguments.
    #[error("requestState was issued for a different {0}; call again without it to start over")]
    Foreign(&'static str),
}

#[derive(Serialize, Deserialize)]
struct Payload {
    #[serde(rename = "b")]
    binding: Binding,
    #[serde(rename = "x")]
    expires_at: Timestamp,
    #[serde(rename = "n")]
    nonce: String,
    #[serde(rename = "c")]
    carried: Json,
}

const PREFIX: &str = "as1.";

/// Seals and opens request state under a key (and, while a key is being
/// rotated out, opens states sealed under the previous ones).
#[derive(Clone)]
pub struct Sealer {
    current: Vec<u8>,
    previous: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a key.
        f.debug_struct("Sealer")
            .field("previous_keys", &self.previous.len())
            .finish_non_exhaustive()
    }
}

impl Sealer {
    /// A sealer with `key` (at least 32 random bytes, kept by the server).
    pub fn new(key: impl Into<Vec<u8>>) -> Sealer {
        Sealer {
            current: key.into(),
            previous: Vec::new(),
        }
    }

    /// Also open states sealed under `key` (a key being rotated out).
    pub fn with_previous(mut self, key: impl Into<Vec<u8>>) -> Sealer {
        self.previous.push(key.into());
        self
    }

    /// Seal `carried`, bound to `binding`, good until `expires_at`, usable
    /// once (`nonce`: unique, unpredictable, made by the caller).
    ///
    /// # Example
    /// ```
    /// use askgate_core::{Binding, Sealer, StateError};
    /// use jiff::Timestamp;
    ///
    /// let sealer = Sealer::new([7u8; 32]);
    /// let binding = Binding {
    ///     principal: "alice".into(), method: "tools/call".into(),
    ///     name: "deploy".into(), arguments: "hmac-sha256:ab".into(),
    /// };
    /// let now: Timestamp = "2026-11-29T12:00:00Z".parse()?;
    /// let expires = "2026-11-29T12:10:00Z".parse()?;
    /// let state = sealer.seal(&binding, expires, "n-1", &serde_json::json!({"round": 1}));
    /// let opened = sealer.open(&state, &binding, now)?;
    /// assert_eq!(opened.nonce, "n-1");
    /// assert_eq!(sealer.open(&format!("{state}-TAMPERED"), &binding, now), Err(StateError::Tampered));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seal(
        &self,
        binding: &Binding,
        expires_at: Timestamp,
        nonce: &str,
        carried: &Json,
    ) -> String {
        let payload = Payload {
            binding: binding.clone(),
            expires_at,
            nonce: nonce.to_owned(),
            carried: carried.clone(),
        };
        let body = URL_SAFE_NO_PAD.encode(
            serde_json::to_vec(&payload)
                .expect("a payload of strings, a timestamp and JSON always serializes"),
        );
        let tag = URL_SAFE_NO_PAD.encode(tag(&self.current, &body));
        format!("{PREFIX}{body}.{tag}")
    }

    /// Open `sealed` and check it: the seal, the binding, the expiry.
    ///
    /// # Errors
    /// [`StateError`], naming what was wrong.
    pub fn open(
        &self,
        sealed: &str,
        binding: &Binding,
        now: Timestamp,
    ) -> Result<Opened, StateError> {
        let rest = sealed
            .strip_prefix(PREFIX)
            .ok_or(StateError::Malformed("it does not start with as1."))?;
        let (body, tag_text) = rest
            .split_once('.')
            .ok_or(StateError::Malformed("it has no seal"))?;
        // A state altered anywhere fails here, whatever part was altered.
        let given = URL_SAFE_NO_PAD
            .decode(tag_text)
            .map_err(|_| StateError::Tampered)?;
        let sealed_here = std::iter::once(&self.current)
            .chain(&self.previous)
            .any(|key| verify(key, body, &given));
        if !sealed_here {
            return Err(StateError::Tampered);
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| StateError::Malformed("its payload is not base64url"))?;
        let payload: Payload = serde_json::from_slice(&bytes)
            .map_err(|_| StateError::Malformed("its payload is not a request state"))?;
        let mine = &payload.binding;
        if mine.principal != binding.principal {
            return Err(StateError::Foreign("principal"));
        }
        if mine.method != binding.method || mine.name != binding.name {
            return Err(StateError::Foreign("request"));
        }
        if mine.arguments != binding.arguments {
            return Err(StateError::Foreign("set of arguments"));
        }
        if now >= payload.expires_at {
            return Err(StateError::Expired(payload.expires_at));
        }
        Ok(Opened {
            nonce: payload.nonce,
            expires_at: payload.expires_at,
            carried: payload.carried,
        })
    }
}

fn mac(key: &[u8]) -> Hmac<Sha256> {
    Hmac::<Sha256>::new_from_slice(key)
        .expect("HMAC takes keys of any length, so new_from_slice cannot fail")
}

fn tag(key: &[u8], body: &str) -> Vec<u8> {
    let mut mac = mac(key);
    mac.update(body.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Constant-time comparison of the tag (by `hmac`).
fn verify(key: &[u8], body: &str, given: &[u8]) -> bool {
    let mut mac = mac(key);
    mac.update(body.as_bytes());
    mac.verify_slice(given).is_ok()
}
