//! The audit chain's head record: the newest entry's position and hash,
//! moved in the same write as every append ([`move_head`]), signed with a
//! key derived from the deployment's when the store has one
//! ([`Store::sign_audit_head`]), and what it says of a chain
//! ([`check_head`]): cut at its tail, passed, altered or missing. And the
//! other anchor a chain is checked against: an entry's hash, as a
//! checkpoint kept elsewhere holds it ([`Store::audit_hash_at`]).

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::audit::ChainBreak;
use crate::backend::{Store, with_pool, with_writer};
use crate::error::Error;

/// What the head record's signature covers, besides the head.
const HEAD_CONTEXT: &[u8] = b"askgate audit head v1";

/// What the head record's key is derived with, from the deployment's.
pub(crate) const HEAD_KEY_CONTEXT: &[u8] = b"askgate audit head key v1";

/// Move the chain's head record to entry `$seq` (hash `$hash`), signed
/// when `$store` has a key, on `$conn` inside a `with_writer!` body: in the
/// same write as the entries that moved it (a SQLite batch is one
/// transaction). Never back: a head past `$seq` stays.
macro_rules! move_head {
    ($store:expr, $conn:ident, $seq:expr, $hash:expr) => {{
        let (seq, hash): (i64, &str) = ($seq, $hash);
        sqlx::query($crate::audit_head::move_head_sql!())
            .bind(seq)
            .bind(hash)
            .bind($store.head_tag(seq, hash))
            .execute(&mut *$conn)
            .await
            .map_err(|e| $store.fail(e))?;
    }};
}
pub(crate) use move_head;

/// The statement [`move_head`] runs, as a literal (for `concat!`): the
/// head to entry `$1` (hash `$2`), signed `$3`.
macro_rules! move_head_sql {
    () => {
        "INSERT INTO audit_head (id, seq, hash, tag) VALUES (1, $1, $2, $3) \
         ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, tag = excluded.tag \
         WHERE audit_head.seq < excluded.seq"
    };
}
pub(crate) use move_head_sql;

impl Store {
    /// The hash of entry `seq`, if the chain has it (what a checkpoint is
    /// checked against).
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn audit_hash_at(&self, seq: i64) -> Result<Option<String>, Error> {
        with_pool!(self, |pool| {
            let row = sqlx::query("SELECT hash FROM audit WHERE seq = $1")
                .bind(seq)
                .fetch_optional(pool)
                .await
                .map_err(|e| self.fail(e))?;
            row.map(|row| row.try_get::<String, _>("hash").map_err(|e| self.fail(e)))
                .transpose()
        })
    }

    /// Sign the audit chain's head record, from now on, with a key derived
    /// from `deployment_key` (the deployment's key, as
    /// [`Rounds`](https://docs.rs/askgate-mcp) are built with): then a head
    /// record changed by hand no longer verifies. The first key given
    /// stays; every clone of this store shares it.
    pub fn sign_audit_head(&self, deployment_key: &[u8]) {
        let _ = self
            .audit_key
            .set(derive_key(deployment_key, HEAD_KEY_CONTEXT));
    }

    /// The signature of the head (`seq`, `hash`) under this store's key,
    /// if it has one.
    pub(crate) fn head_tag(&self, seq: i64, hash: &str) -> Option<String> {
        self.audit_key.get().map(|key| tag(key, seq, hash))
    }

    /// Sign the head record again under a key derived from `to`, when it
    /// is signed under one derived from any of `from` (a key rotation:
    /// the head keeps verifying once the key that signed it is gone).
    /// `true` when it was signed again; `false` when it was unsigned, or
    /// signed by none of `from` (then it is left as it is: evidence).
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn resign_audit_head(&self, from: &[Vec<u8>], to: &[u8]) -> Result<bool, Error> {
        let Some((seq, hash, Some(signature))) = self.audit_head().await? else {
            return Ok(false);
        };
        if !from
            .iter()
            .any(|key| tag(&derive_key(key, HEAD_KEY_CONTEXT), seq, &hash) == signature)
        {
            return Ok(false);
        }
        // Only the head read: one an append moved meanwhile is signed by
        // the process that moved it.
        self.set_head_tag(seq, &hash, Some(&signature), to).await
    }

    /// Sign, under a key derived from `deployment_key`, the head record the
    /// migration to it recorded in this process, if it is still as
    /// recorded and unsigned: a store migrated (or made) here then has a
    /// signed head before its first append. `true` when it was signed. A
    /// head recorded unsigned by any other hand is never signed: once the
    /// deployment's key is known, `askgate audit verify` names it.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn sign_seeded_audit_head(&self, deployment_key: &[u8]) -> Result<bool, Error> {
        let Some((seq, hash)) = self.seeded_head.get().cloned() else {
            return Ok(false);
        };
        self.set_head_tag(seq, &hash, None, deployment_key).await
    }

    /// Sign the head (`seq`, `hash`) under a key derived from
    /// `deployment_key`, if it is still that head, signed `was` (`None`:
    /// unsigned). `true` when it was signed.
    async fn set_head_tag(
        &self,
        seq: i64,
        hash: &str,
        was: Option<&str>,
        deployment_key: &[u8],
    ) -> Result<bool, Error> {
        let signed = tag(&derive_key(deployment_key, HEAD_KEY_CONTEXT), seq, hash);
        // A tag is hex, never empty: '' stands for none on both backends.
        let moved = with_writer!(self, |conn| {
            sqlx::query(
                "UPDATE audit_head SET tag = $1 WHERE id = 1 AND seq = $2 AND hash = $3 \
                 AND COALESCE(tag, '') = $4",
            )
            .bind(&signed)
            .bind(seq)
            .bind(hash)
            .bind(was.unwrap_or_default())
            .execute(&mut *conn)
            .await
            .map(|done| done.rows_affected())
            .map_err(|e| self.fail(e))
        })?;
        Ok(moved == 1)
    }

    /// The head record: its position, hash and signature, if any.
    pub(crate) async fn audit_head(&self) -> Result<Option<(i64, String, Option<String>)>, Error> {
        with_pool!(self, |pool| {
            let row = sqlx::query("SELECT seq, hash, tag FROM audit_head WHERE id = 1")
                .fetch_optional(pool)
                .await
                .map_err(|e| self.fail(e))?;
            row.map(|row| -> Result<_, Error> {
                Ok((
                    row.try_get::<i64, _>("seq").map_err(|e| self.fail(e))?,
                    row.try_get::<String, _>("hash").map_err(|e| self.fail(e))?,
                    row.try_get::<Option<String>, _>("tag")
                        .map_err(|e| self.fail(e))?,
                ))
            })
            .transpose()
        })
    }
}

/// What the head record says of a chain that verifies, whose last entry is
/// `last`: where it breaks, if it does. Where `keys` are known, the head
/// must be signed with one of them — or be the one this process's
/// migration recorded (`seeded`), not signed yet; else (a store with no
/// key) it is held to the chain only.
pub(crate) fn check_head(
    head: Option<(i64, String, Option<String>)>,
    last: Option<(i64, &str)>,
    keys: &[Vec<u8>],
    seeded: Option<&(i64, String)>,
) -> Option<ChainBreak> {
    // Every store has one from its creation (or migration) on.
    let Some((seq, hash, signature)) = head else {
        return Some(ChainBreak::HeadMissing);
    };
    let held = match last {
        None if seq == 0 => None,
        None => Some(ChainBreak::Cut {
            ends_at: 0,
            head: seq,
        }),
        Some((at, _)) if at < seq => Some(ChainBreak::Cut {
            ends_at: at,
            head: seq,
        }),
        Some((at, last_hash)) if at > seq || last_hash != hash => {
            Some(ChainBreak::PastHead { head: seq })
        }
        Some(_) => None,
    };
    // What the chain shows first; then whether the head is askgate's.
    if held.is_some() || keys.is_empty() {
        return held;
    }
    match &signature {
        Some(signature) if keys.iter().any(|key| tag(key, seq, &hash) == *signature) => None,
        Some(_) => Some(ChainBreak::HeadAltered),
        // Recorded by this process's migration, not yet signed: its own.
        None if seeded.is_some_and(|(at, seeded)| *at == seq && *seeded == hash) => None,
        None => Some(ChainBreak::HeadUnsigned),
    }
}

/// HMAC-SHA256 of `context` under `key`: a key of its own for one use.
pub(crate) fn derive_key(key: &[u8], context: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .expect("HMAC takes keys of any length, so new_from_slice cannot fail");
    mac.update(context);
    mac.finalize().into_bytes().to_vec()
}

/// The head record's signature: hex HMAC-SHA256 of the head under `key`.
pub(crate) fn tag(key: &[u8], seq: i64, hash: &str) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .expect("HMAC takes keys of any length, so new_from_slice cannot fail");
    mac.update(HEAD_CONTEXT);
    mac.update(b"\n");
    mac.update(seq.to_string().as_bytes());
    mac.update(b"\n");
    mac.update(hash.as_bytes());
    sha256_hex(&mac.finalize().into_bytes())
}

/// An entry's hash in the chain: the hex SHA-256 of the previous hash,
/// its position and its text, a line each.
pub(crate) fn chain_hash(prev: &str, seq: i64, entry: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prev.as_bytes());
    hasher.update(b"\n");
    hasher.update(seq.to_string().as_bytes());
    hasher.update(b"\n");
    hasher.update(entry.as_bytes());
    sha256_hex(&hasher.finalize())
}

/// A SHA-256 digest (or an HMAC-SHA256 tag) in lowercase hex, as
/// `hex::encode` writes it, by `hex::encode_to_slice`: `hex::encode`
/// collects its digits a `char` at a time, some 1,700 instructions a
/// digest, and every entry appended makes one or two.
pub(crate) fn sha256_hex(digest: &[u8]) -> String {
    let mut digits = [0u8; 64];
    match hex::encode_to_slice(digest, &mut digits) {
        // Hex digits are ASCII.
        Ok(()) => String::from_utf8_lossy(&digits).into_owned(),
        // Not 32 bytes: no SHA-256 output (none is made here).
        Err(_) => hex::encode(digest),
    }
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    /// Every chain already stored was hashed so: the hex written by
    /// `hex::encode`, over the previous hash, the position and the text.
    #[test]
    fn an_entrys_hash_is_the_hex_sha256_of_its_link_as_stored_chains_have_it() {
        let hash = super::chain_hash("ab12", 7, r#"{"tool":"echo"}"#);
        let expected = hex::encode(Sha256::digest(b"ab12\n7\n{\"tool\":\"echo\"}"));
        assert_eq!(hash, expected);
        assert_eq!(hash.len(), 64);
        let every: Vec<u8> = (0..32).map(|b| b * 8).collect();
        assert_eq!(super::sha256_hex(&every), hex::encode(&every));
    }
}
