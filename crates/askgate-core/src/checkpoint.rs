//! A signed checkpoint of the audit chain: the position and hash of its
//! newest entry at a moment, signed with the deployment's key. Kept
//! somewhere the store's writer cannot reach (another machine, a ticket, a
//! log service), it proves later that the chain up to that entry was
//! neither changed nor cut: a chain whose entry `seq` is gone, or has
//! another hash, is not the chain that was checkpointed. The chain alone
//! cannot show that its newest entries were deleted; a checkpoint can.

use hmac::{Hmac, KeyInit, Mac};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// What the tag is computed over, so no other HMAC of the key matches.
const CONTEXT: &[u8] = b"askgate audit checkpoint v1";

/// The audit chain's head at `at`, signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The newest entry's position (0: the chain was empty).
    pub seq: i64,
    /// Its hash (the genesis hash when empty).
    pub hash: String,
    /// When the checkpoint was made.
    pub at: Timestamp,
    /// HMAC-SHA256 over the above with the deployment key, in hex.
    pub tag: String,
}

impl Checkpoint {
    /// The head `seq`/`hash` at `at`, signed with `key`.
    pub fn signed(key: &[u8], seq: i64, hash: &str, at: Timestamp) -> Checkpoint {
        let tag = crate::lower_hex(&mac(key, seq, hash, at).finalize().into_bytes());
        Checkpoint {
            seq,
            hash: hash.to_owned(),
            at,
            tag,
        }
    }

    /// Whether it was signed with `key` and not changed since.
    pub fn is_signed_with(&self, key: &[u8]) -> bool {
        let Ok(given) = hex::decode(&self.tag) else {
            return false;
        };
        mac(key, self.seq, &self.hash, self.at)
            .verify_slice(&given)
            .is_ok()
    }
}

fn mac(key: &[u8], seq: i64, hash: &str, at: Timestamp) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .expect("HMAC takes keys of any length, so new_from_slice cannot fail");
    mac.update(CONTEXT);
    for part in [
        seq.to_string().as_bytes(),
        hash.as_bytes(),
        at.as_microsecond().to_string().as_bytes(),
    ] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_holds_under_its_key_only_and_only_unchanged() {
        let at = Timestamp::from_second(1_800_000_000).expect("in range");
        let checkpoint = Checkpoint::signed(&[1; 32], 12, "abc", at);
        assert!(checkpoint.is_signed_with(&[1; 32]));
        assert!(!checkpoint.is_signed_with(&[2; 32]), "another key");
        let moved = Checkpoint {
            seq: 11,
            ..checkpoint.clone()
        };
        assert!(!moved.is_signed_with(&[1; 32]), "an earlier head claimed");
        let garbled = Checkpoint {
            tag: "zz".into(),
            ..checkpoint
        };
        assert!(!garbled.is_signed_with(&[1; 32]));
    }
}
