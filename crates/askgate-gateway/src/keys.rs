//! The gateway's key: 32 random bytes that seal request state, key the
//! arguments' digests and sign inbox links — the same across restarts (a
//! state sealed before a restart still opens) and on every replica, kept
//! beside a SQLite store or in the data directory, readable by its owner
//! only.

use std::path::{Path, PathBuf};

use crate::error::KeyError;

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
/// [`KeyError::NotTheStores`] naming both fingerprints and the file to
/// share; the store's failure.
pub async fn bind_to_store(
    store: &askgate_store::Store,
    key: &[u8],
    path: &Path,
) -> Result<(), crate::Error> {
    let mine = askgate_core::LinkSigner::new(key.to_vec()).fingerprint();
    match store.bind_key(&mine).await? {
        None => Ok(()),
        Some(recorded) => Err(KeyError::NotTheStores {
            path: path.to_owned(),
            store: store.name().to_owned(),
            mine,
            recorded,
        }
        .into()),
    }
}

/// The 32-byte key sealing request state and keying digests: the same
/// across restarts (a state sealed before a restart still opens), created
/// on first start, readable by its owner only.
///
/// # Errors
/// The file cannot be read or made, or is shorter than 32 bytes, naming
/// it.
pub fn load_or_create_key(path: &Path) -> Result<Vec<u8>, KeyError> {
    match std::fs::read(path) {
        Ok(key) if key.len() >= 32 => return Ok(key),
        Ok(_) => return Err(KeyError::Short(path.to_owned())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(KeyError::Read {
                path: path.to_owned(),
                source,
            });
        }
    }
    let mut key = vec![0u8; 32];
    getrandom::fill(&mut key).map_err(KeyError::Random)?;
    fn create(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
        move |source| KeyError::Create {
            path: path.to_owned(),
            source,
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(create(dir))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    use std::io::Write;
    let mut file = options.open(path).map_err(create(path))?;
    file.write_all(&key).map_err(create(path))?;
    Ok(key)
}
