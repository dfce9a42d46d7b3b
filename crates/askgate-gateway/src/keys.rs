//! The gateway's key: 32 random bytes that seal request state, key the
//! arguments' digests and sign inbox links — the same across restarts (a
//! state sealed before a restart still opens) and on every replica, kept
//! beside a SQLite store or in the data directory, readable by its owner
//! only.

use std::path::{Path, PathBuf};

use crate::Error;

/// Where the gateway's sealing key lives: beside a SQLite store, else in
/// the data directory.
pub fn key_path(store_url: &str) -> PathBuf {
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

/// The 32-byte key sealing request state and keying digests: the same
/// across restarts (a state sealed before a restart still opens), created
/// on first start, readable by its owner only.
///
/// # Errors
/// The file cannot be read or made, or is shorter than 32 bytes, naming
/// it.
pub fn load_or_create_key(path: &Path) -> Result<Vec<u8>, Error> {
    load_or_create(path).map_err(Error::Key)
}

fn load_or_create(path: &Path) -> Result<Vec<u8>, String> {
    match std::fs::read(path) {
        Ok(key) if key.len() >= 32 => return Ok(key),
        Ok(_) => {
            return Err(format!(
                "the key file {} is shorter than 32 bytes",
                path.display()
            ));
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(format!(
                "cannot read the key file {}: {error}",
                path.display()
            ));
        }
    }
    let mut key = vec![0u8; 32];
    getrandom::fill(&mut key).map_err(|e| format!("no randomness for a key: {e}"))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    use std::io::Write;
    let mut file = options
        .open(path)
        .map_err(|e| format!("cannot create the key file {}: {e}", path.display()))?;
    file.write_all(&key)
        .map_err(|e| format!("cannot write the key file {}: {e}", path.display()))?;
    Ok(key)
}
