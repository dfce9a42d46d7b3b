//! The gateway's key: 32 random bytes that seal request state, key the
//! arguments' digests and sign inbox links — the same across restarts (a
//! state sealed before a restart still opens) and on every replica, kept
//! beside a SQLite store or in the data directory, readable by its owner
//! only.

use std::path::{Path, PathBuf};

use crate::error::KeyError;
use file::{private_folder, publish_private, read_key, replace_private};

mod file;

/// The environment variable naming the key file, over the default.
pub const KEY_FILE_ENV: &str = "ASKGATE_KEY_FILE";

/// Where the gateway's sealing key lives: `ASKGATE_KEY_FILE` when set
/// (how replicas on PostgreSQL share one file); else beside a SQLite
/// store, else in the data directory.
pub fn key_path(store_url: &str) -> PathBuf {
    if let Some(file) = std::env::var_os(KEY_FILE_ENV).filter(|f| !f.is_empty()) {
        return PathBuf::from(file);
    }
    if let Some(path) = store_url
        .strip_prefix("sqlite://")
        .or_else(|| store_url.strip_prefix("sqlite:"))
    {
        return PathBuf::from(format!("{path}.key"));
    }
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("askgate")
        .join("gateway.key")
}

/// Check that `key` (read from `path`) is the key of `store`: the first
/// process over a store records its fingerprint, every later one must
/// have the same (see [`askgate_store::Store::bind_key`]).
///
/// # Errors
/// [`KeyError::RotatedAway`] for the key the store was rotated from (the
/// new files are to be copied), [`KeyError::NotTheStores`] for another,
/// naming both fingerprints and the file to share; the store's failure.
pub async fn bind_to_store(
    store: &askgate_store::Store,
    key: &[u8],
    path: &Path,
) -> Result<(), crate::Error> {
    let mine = fingerprint(key);
    let kept = read_key(&previous_path(path))?;
    let Some(recorded) = store.bind_key(&mine).await? else {
        // A head still signed under the key rotated out (by a process
        // that ran on it after the rotation) is signed again under this
        // one, so it still verifies once that key is gone too.
        if let Some(kept) = kept {
            store.resign_audit_head(&[kept], key).await?;
        }
        // A store migrated to the head record here has it signed now.
        store.sign_seeded_audit_head(key).await?;
        return Ok(());
    };
    if kept.is_some_and(|kept| fingerprint(&kept) == recorded) {
        return Err(KeyError::Unfinished {
            path: path.to_owned(),
            detail: "the store still names the key in its .previous file".into(),
        }
        .into());
    }
    if store.retired_key().await?.as_deref() == Some(mine.as_str()) {
        return Err(KeyError::RotatedAway {
            path: path.to_owned(),
            store: store.name().to_owned(),
            mine,
            recorded,
        }
        .into());
    }
    Err(KeyError::NotTheStores {
        path: path.to_owned(),
        store: store.name().to_owned(),
        mine,
        recorded,
    }
    .into())
}

/// The 32-byte key sealing request state and keying digests: the same
/// across restarts (a state sealed before a restart still opens), created
/// on first start, readable by its owner only.
///
/// # Errors
/// The file cannot be read or made, or is shorter than 32 bytes, naming
/// it.
pub fn load_or_create_key(path: &Path) -> Result<Vec<u8>, KeyError> {
    if let Some(key) = read_key(path)? {
        return Ok(key);
    }
    let key = new_key()?;
    if let Some(dir) = path.parent() {
        private_folder(dir).map_err(create(dir))?;
    }
    if publish_private(path, &key).map_err(create(path))? {
        return Ok(key);
    }
    // Another process starting at the same moment made it first (two
    // gateways on one fresh machine, a gateway and `askgate inbox`): its
    // key is the deployment's.
    read_key(path)?.ok_or_else(|| KeyError::Create {
        path: path.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "another process made the key file and it was gone when read",
        ),
    })
}

/// The deployment's keys: the one that seals and signs now, and the one
/// rotated out last, which still opens what it sealed and signed.
#[derive(Clone)]
pub struct Keys {
    /// The key in use.
    pub current: Vec<u8>,
    /// The key rotated out last (`<key file>.previous`), if any.
    pub previous: Option<Vec<u8>>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a key.
        f.debug_struct("Keys")
            .field("previous", &self.previous.is_some())
            .finish_non_exhaustive()
    }
}

impl Keys {
    /// The keys at `path` (made on first start) and beside it.
    ///
    /// # Errors
    /// As [`load_or_create_key`]; the previous key's file cannot be read
    /// or is shorter than 32 bytes.
    pub fn load_or_create(path: &Path) -> Result<Keys, KeyError> {
        Ok(Keys {
            current: load_or_create_key(path)?,
            previous: read_key(&previous_path(path))?,
        })
    }

    /// Sealed request state opens under either key; new state is sealed
    /// under the current one.
    pub fn rounds(&self, store: askgate_store::Store) -> askgate_mcp::Rounds {
        let rounds = askgate_mcp::Rounds::new(self.current.clone(), store);
        match &self.previous {
            Some(previous) => rounds.with_previous_key(previous.clone()),
            None => rounds,
        }
    }

    /// The ledger's digests of arguments: under the current key, and the
    /// previous one for calls recorded before the last rotation.
    pub(crate) fn ledger_digest(&self) -> LedgerDigest {
        LedgerDigest::new(
            std::iter::once(&self.current)
                .chain(self.previous.as_ref())
                .map(|key| key.as_slice()),
        )
    }

    /// Parked calls' arguments open under either key; new ones are sealed
    /// under the current one.
    pub fn argument_seal(&self) -> askgate_core::ArgumentSeal {
        let seal = askgate_core::ArgumentSeal::new(&self.current);
        match &self.previous {
            Some(previous) => seal.with_previous(previous),
            None => seal,
        }
    }

    /// Inbox links open under either key; new ones are signed with the
    /// current one.
    pub fn links(&self) -> askgate_core::LinkSigner {
        let links = askgate_core::LinkSigner::new(self.current.clone());
        match &self.previous {
            Some(previous) => links.with_previous(previous.clone()),
            None => links,
        }
    }
}

/// The key the ledger's digest had before it was keyed by the deployment.
const LEGACY_LEDGER_KEY: &[u8; 14] = b"askgate ledger";

/// How the ledger digests a call's arguments, and a retry finds the call
/// by: HMAC-SHA-256 of their canonical JSON under a key derived from the
/// deployment's. Keyed with the deployment's secret, so that nobody who
/// reads the store (a backup, a replica's disk) can match its rows to
/// arguments they guess; a constant key would let them.
#[derive(Clone)]
pub(crate) struct LedgerDigest {
    /// Derived from the key in use, then from the one rotated out last.
    keys: Vec<askgate_core::DigestKey>,
    /// The constant key of askgate before the digest was keyed.
    legacy: askgate_core::DigestKey,
}

impl LedgerDigest {
    /// The digest of keys derived from `keys`, the key in use first.
    fn new<'a>(keys: impl IntoIterator<Item = &'a [u8]>) -> LedgerDigest {
        LedgerDigest {
            keys: keys.into_iter().map(LedgerDigest::derived).collect(),
            legacy: askgate_core::DigestKey::new(LEGACY_LEDGER_KEY),
        }
    }

    fn derived(key: &[u8]) -> askgate_core::DigestKey {
        let derived =
            askgate_core::arguments_digest(key, &serde_json::json!("askgate ledger digest"));
        askgate_core::DigestKey::new(derived.as_bytes())
    }

    /// The digest of `arguments` a new ledger row records.
    pub(crate) fn digest(&self, arguments: &serde_json::Map<String, serde_json::Value>) -> String {
        self.keys.first().unwrap_or(&self.legacy).object(arguments)
    }

    /// The digests `arguments` may have been recorded under: the key in
    /// use first, then the previous one, then the constant key of askgate
    /// before the digest was keyed (so that a retry across that upgrade,
    /// or between replicas mid-upgrade, is still found; a lookup only).
    pub(crate) fn digests(
        &self,
        arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> Vec<String> {
        self.keys
            .iter()
            .chain([&self.legacy])
            .map(|key| key.object(arguments))
            .collect()
    }
}

/// Where the key rotated out last is kept: `<key file>.previous`.
pub fn previous_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".previous");
    PathBuf::from(name)
}

/// What [`rotate`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rotated {
    /// The new key's file (the key file, rewritten).
    pub path: PathBuf,
    /// Where the key rotated out now is.
    pub previous_path: PathBuf,
    /// The new key's fingerprint, as the store now records it.
    pub fingerprint: String,
    /// The fingerprint of the key rotated out.
    pub previous_fingerprint: String,
}

/// Rotate the deployment's key at `path` over `store`: the current key
/// becomes the previous one (`<path>.previous`, replacing the one before
/// it: it no longer opens anything), a new key is written to `path`, and
/// the store records the new key's fingerprint — from then on a process
/// starting with the old key alone is refused, naming the files to copy.
/// What the old key sealed or signed still opens wherever the new files
/// are.
///
/// A rotation cut short between its files and the store (a crash) is
/// finished by the next `rotate`: the key file already new and
/// `.previous` the store's, only the store is moved.
///
/// # Errors
/// The key at `path` is missing or is not the store's; a file cannot be
/// written; the store fails ([`KeyError::Unfinished`]: run it again).
pub async fn rotate(store: &askgate_store::Store, path: &Path) -> Result<Rotated, crate::Error> {
    let current = read_key(path)?.ok_or_else(|| KeyError::Read {
        path: path.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no key to rotate (a gateway or inbox over the store makes it on first start)",
        ),
    })?;
    let previous = previous_path(path);
    // A rotation stopped after its files were written and before the
    // store moved: the key file is new, `.previous` is the store's. It is
    // finished, not started again.
    if let (Some(recorded), Some(kept)) = (store.recorded_key().await?, read_key(&previous)?)
        && recorded == fingerprint(&kept)
        && recorded != fingerprint(&current)
    {
        let (before, after) = (recorded, fingerprint(&current));
        if let Some(other) = store.rotate_key(&before, &after).await? {
            return Err(KeyError::NotTheStores {
                path: path.to_owned(),
                store: store.name().to_owned(),
                mine: after,
                recorded: other,
            }
            .into());
        }
        store.resign_audit_head(&[kept], &current).await?;
        return Ok(Rotated {
            path: path.to_owned(),
            previous_path: previous,
            fingerprint: after,
            previous_fingerprint: before,
        });
    }
    bind_to_store(store, &current, path).await?;
    let before = fingerprint(&current);
    let next = new_key()?;
    let after = fingerprint(&next);
    // The head may be signed under either key known before: the one in
    // use, or one rotated out that a process still ran on.
    let known: Vec<Vec<u8>> = std::iter::once(current.clone())
        .chain(read_key(&previous)?)
        .collect();
    replace_private(&previous, &current).map_err(create(&previous))?;
    if let Err(error) = replace_private(path, &next) {
        return Err(KeyError::Create {
            path: path.to_owned(),
            source: error,
        }
        .into());
    }
    match store.rotate_key(&before, &after).await {
        Ok(None) => {
            // Signed again under the new key, the head verifies after the
            // next rotation too. A store failing here is told; the next
            // start of a process on the new key signs it again.
            store.resign_audit_head(&known, &next).await?;
            Ok(Rotated {
                path: path.to_owned(),
                previous_path: previous,
                fingerprint: after,
                previous_fingerprint: before,
            })
        }
        // Whether the store moved is not known (its answer was lost):
        // the files stay as they are, new key and `.previous`, and the
        // next rotate finishes whichever way the store went.
        Err(error) => Err(KeyError::Unfinished {
            path: path.to_owned(),
            detail: error.to_string(),
        }
        .into()),
        // Another rotation moved the store meanwhile: the key it names is
        // not this one, so this one is put back.
        Ok(Some(recorded)) => {
            replace_private(path, &current).map_err(create(path))?;
            Err(KeyError::NotTheStores {
                path: path.to_owned(),
                store: store.name().to_owned(),
                mine: before,
                recorded,
            }
            .into())
        }
    }
}

/// The fingerprint the store records of `key`.
fn fingerprint(key: &[u8]) -> String {
    askgate_core::LinkSigner::new(key.to_vec()).fingerprint()
}

/// 32 new random bytes.
fn new_key() -> Result<Vec<u8>, KeyError> {
    let mut key = vec![0u8; 32];
    getrandom::fill(&mut key).map_err(KeyError::Random)?;
    Ok(key)
}

fn create(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Create {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Processes that start at the same moment on a fresh machine each
    /// find no key and make one: every one of them ends with the same key,
    /// none fails on the file another made, none reads it half written.
    #[test]
    fn starts_racing_to_make_the_key_all_end_with_the_one_that_was_made() {
        let dir = tempfile::tempdir().expect("a scratch dir");
        for round in 0..40 {
            let path = dir
                .path()
                .join(format!("fresh-{round}"))
                .join("gateway.key");
            let start = std::sync::Barrier::new(8);
            let keys: Vec<_> = std::thread::scope(|scope| {
                let racers: Vec<_> = (0..8)
                    .map(|_| {
                        scope.spawn(|| {
                            start.wait();
                            load_or_create_key(&path)
                        })
                    })
                    .collect();
                racers
                    .into_iter()
                    .map(|racer| racer.join().expect("no panic"))
                    .collect()
            });
            let kept = std::fs::read(&path).expect("the key file");
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = |p: &Path| {
                    std::fs::metadata(p)
                        .expect("it is there")
                        .permissions()
                        .mode()
                };
                assert_eq!(mode(&path) & 0o777, 0o600, "the key is its owner's only");
                let folder = path.parent().expect("a folder");
                assert_eq!(mode(folder) & 0o777, 0o700, "so is the folder made for it");
            }
            for key in keys {
                let key = key.unwrap_or_else(|e| panic!("round {round}: a start failed: {e}"));
                assert_eq!(
                    key, kept,
                    "round {round}: a start took a key other than the file's"
                );
            }
            let left: Vec<_> = std::fs::read_dir(path.parent().expect("a folder"))
                .expect("the folder")
                .map(|entry| entry.expect("an entry").file_name())
                .collect();
            assert_eq!(
                left,
                ["gateway.key"],
                "round {round}: nothing but the key is left"
            );
        }
    }

    #[test]
    fn the_ledgers_digest_is_keyed_by_the_deployment_and_a_rotation_keeps_the_old_one() {
        let arguments = serde_json::json!({"path": "/srv/notes/plan.md"});
        let arguments = arguments.as_object().expect("an object");
        let ours = Keys {
            current: vec![1; 32],
            previous: None,
        };
        let theirs = Keys {
            current: vec![2; 32],
            previous: None,
        };
        let digest = ours.ledger_digest().digest(arguments);
        // Nobody without the key computes it: not with a constant key, not
        // with another deployment's.
        let constant = askgate_core::arguments_digest(
            b"askgate ledger",
            &serde_json::Value::Object(arguments.clone()),
        );
        assert_ne!(digest, constant);
        assert_ne!(digest, theirs.ledger_digest().digest(arguments));
        assert_eq!(digest, ours.ledger_digest().digest(arguments));
        // After a rotation, a row recorded before it is still found.
        let rotated = Keys {
            current: vec![3; 32],
            previous: Some(vec![1; 32]),
        };
        let digests = rotated.ledger_digest().digests(arguments);
        assert_eq!(digests.len(), 3);
        assert_ne!(digests[0], digest);
        assert_eq!(digests[1], digest);
        // New rows are recorded under the key in use.
        assert_eq!(rotated.ledger_digest().digest(arguments), digests[0]);
        // A row of the askgate before this one is still found by its
        // retry; new rows are never written so.
        assert_eq!(digests[2], constant);
    }
}
