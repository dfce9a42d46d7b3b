//! The key file on disk: read (and refused when others may write it),
//! made whole or not at all, replaced whole, in a folder of its owner's.

use std::path::{Path, PathBuf};

use crate::error::KeyError;

/// Make `dir` (and what leads to it) if missing, its owner's only where
/// askgate makes it.
pub(super) fn private_folder(dir: &Path) -> std::io::Result<()> {
    let mut folder = std::fs::DirBuilder::new();
    folder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        folder.mode(0o700);
    }
    folder.create(dir)
}

/// The key at `path`, `None` when there is no such file.
pub(super) fn read_key(path: &Path) -> Result<Option<Vec<u8>>, KeyError> {
    match std::fs::read(path) {
        Ok(key) if key.len() >= 32 => {
            check_shared(path)?;
            Ok(Some(key))
        }
        Ok(_) => Err(KeyError::Short(path.to_owned())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(KeyError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Refuse the key file at `path` when others than its owner may write it
/// (anyone could put a key of theirs in it), and say so when they may read
/// it: whoever reads it can forge every sealed state, link and audit
/// signature. Reading is a warning, not a refusal: a key mounted from a
/// secret store (a Kubernetes secret is 0644 by default) is often so.
fn check_shared(path: &Path) -> Result<(), KeyError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(metadata) = std::fs::metadata(path) {
            let mode = metadata.permissions().mode() & 0o777;
            if mode & 0o022 != 0 {
                return Err(KeyError::OthersMayWrite {
                    path: path.to_owned(),
                    mode,
                });
            }
            if mode & 0o077 != 0 {
                tracing::warn!(
                    file = %path.display(),
                    mode = %format!("{mode:04o}"),
                    "the key file is open to others than its owner: whoever reads it can forge \
                     askgate's sealed states, links and audit signatures; chmod 600 it"
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Write `key` to the new file `path`, readable by its owner only, and
/// make it durable.
fn write_private(path: &Path, key: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(key)?;
    file.sync_all()
}

/// Put `key` at `path` unless a file is there: `false` when one is (it is
/// left as it is). The file appears whole or not at all — written and
/// made durable under a name of this process's beside it, then linked to
/// `path`, which fails if `path` exists — so a process that finds it never
/// reads a key half written.
pub(super) fn publish_private(path: &Path, key: &[u8]) -> std::io::Result<bool> {
    let mut suffix = [0u8; 8];
    getrandom::fill(&mut suffix).map_err(std::io::Error::other)?;
    let mut name = path.as_os_str().to_owned();
    name.push(format!(
        ".{}.{:016x}",
        std::process::id(),
        u64::from_le_bytes(suffix)
    ));
    let beside = PathBuf::from(name);
    write_private(&beside, key)?;
    let linked = std::fs::hard_link(&beside, path);
    let removed = std::fs::remove_file(&beside);
    match linked {
        Ok(()) => {
            removed?;
            sync_dir(path)?;
            Ok(true)
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        // A file system without hard links: made in place, as before,
        // still never over another's.
        Err(_) => match write_private(path, key) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(error) => Err(error),
        },
    }
}

/// Put `key` at `path` whole or not at all: written beside it, then
/// renamed over it, the rename made durable (the directory synced) before
/// the store is told of the new key — a crash after cannot bring the old
/// file back.
pub(super) fn replace_private(path: &Path, key: &[u8]) -> std::io::Result<()> {
    let mut name = path.as_os_str().to_owned();
    name.push(".new");
    let beside = PathBuf::from(name);
    match std::fs::remove_file(&beside) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    write_private(&beside, key)?;
    std::fs::rename(&beside, path)?;
    sync_dir(path)
}

/// Sync the directory holding `path`, so that a rename in it is durable.
#[cfg(unix)]
fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)?.sync_all()
}

/// Elsewhere a directory cannot be opened to sync: the rename stands as
/// the platform keeps it.
#[cfg(not(unix))]
fn sync_dir(_path: &Path) -> std::io::Result<()> {
    Ok(())
}
