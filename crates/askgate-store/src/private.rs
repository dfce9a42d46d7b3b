//! A SQLite store's files kept to their owner: the store file (and its
//! `-wal`, `-shm` and `-journal`) made 0600 when new, and — new or found —
//! refused when others than its owner may write it, said when they may
//! read it (it holds answer values and argument previews). Its folder is
//! refused when everyone may write it, sticky folders (`/tmp`) aside:
//! whoever writes the folder can replace the store or its `-wal` with files
//! of their own. A folder only its group may write is accepted: under the
//! common umask 002 every folder a person makes is so, and the group is
//! theirs alone. A folder others may only read is not said: it shows the
//! files' names, and their modes keep what is in them.
//!
//! Unix only: elsewhere permissions are not mode bits, and nothing is
//! checked. PostgreSQL and in-memory stores have no file.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// The files beside the store that SQLite writes its pages to.
const COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// A file of the store that others than its owner may read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exposed {
    /// The file.
    pub(crate) path: PathBuf,
    /// Its permission bits.
    pub(crate) mode: u32,
}

/// The store file of the SQLite URL path `path` (options after `?`), or
/// `None` for an in-memory database.
pub(crate) fn file_of(path: &str) -> Option<&Path> {
    let file = path.split('?').next().unwrap_or_default();
    if file.is_empty() || file == ":memory:" || path.contains("mode=memory") {
        return None;
    }
    Some(Path::new(file))
}

/// Make the store `file` (if missing) its owner's only, and check it, its
/// companions and its folder: the files others may read, to be said.
///
/// # Errors
/// [`Error::OthersMayWrite`] for the folder, the store file or a companion
/// that others may write (nothing is made then, or opened);
/// [`Error::Unreachable`] when the file cannot be made.
pub(crate) fn guard(store: &str, file: &Path) -> Result<Vec<Exposed>, Error> {
    let folder = match file.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    check_folder(folder)?;
    create_private(file).map_err(|e| Error::Unreachable {
        store: store.to_owned(),
        detail: format!("cannot create the store's file: {e}"),
    })?;
    let mut exposed = Vec::new();
    let mut names = vec![file.to_owned()];
    names.extend(COMPANIONS.iter().map(|end| {
        let mut name = file.as_os_str().to_owned();
        name.push(end);
        PathBuf::from(name)
    }));
    for path in names {
        if let Some(found) = check_file(&path)? {
            exposed.push(found);
        }
    }
    Ok(exposed)
}

/// Create the SQLite file at `file` readable and writable by its owner
/// only, if it is missing. SQLite gives its `-wal` and `-shm` files the
/// same mode.
fn create_private(file: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(file) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// The permission bits of `path` (its special bits included), when it
/// exists.
#[cfg(unix)]
fn mode_of(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

/// Refuse the store's folder when everyone may write it and it is not
/// sticky.
fn check_folder(folder: &Path) -> Result<(), Error> {
    #[cfg(unix)]
    if let Some(mode) = mode_of(folder)
        && mode & 0o002 != 0
        && mode & 0o1000 == 0
    {
        return Err(Error::OthersMayWrite {
            path: folder.to_owned(),
            mode: mode & 0o777,
            folder: true,
        });
    }
    #[cfg(not(unix))]
    let _ = folder;
    Ok(())
}

/// Refuse the file at `path` when others may write it; when they may read
/// it, the finding. A missing file is fine.
fn check_file(path: &Path) -> Result<Option<Exposed>, Error> {
    #[cfg(unix)]
    if let Some(mode) = mode_of(path).map(|mode| mode & 0o777) {
        if mode & 0o022 != 0 {
            return Err(Error::OthersMayWrite {
                path: path.to_owned(),
                mode,
                folder: false,
            });
        }
        if mode & 0o044 != 0 {
            return Ok(Some(Exposed {
                path: path.to_owned(),
                mode,
            }));
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(None)
}

/// Say that `exposed` is open to others (on stderr, through the logs).
pub(crate) fn warn(exposed: &Exposed) {
    tracing::warn!(
        file = %exposed.path.display(),
        mode = %format!("{:04o}", exposed.mode),
        "the store's file is readable by others than its owner, and it holds answer values \
         and argument previews; chmod 600 it"
    );
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    /// A folder of the owner's only, holding the store file at `mode`.
    fn store_at(mode: u32) -> (askgate_testkit::Scratch, PathBuf) {
        let dir = askgate_testkit::Scratch::new();
        chmod(dir.path(), 0o700);
        let file = dir.join("askgate.db");
        std::fs::write(&file, b"").expect("writes");
        chmod(&file, mode);
        (dir, file)
    }

    #[test]
    fn a_new_store_file_is_its_owners_only_and_not_said() {
        let dir = askgate_testkit::Scratch::new();
        chmod(dir.path(), 0o755);
        let file = dir.join("askgate.db");
        assert_eq!(guard("s", &file).expect("made"), []);
        assert_eq!(mode_of(&file), Some(0o600));
    }

    #[test]
    fn a_store_file_others_may_read_is_said_with_its_mode() {
        let (_dir, file) = store_at(0o644);
        let found = guard("s", &file).expect("opens");
        assert_eq!(
            found,
            [Exposed {
                path: file,
                mode: 0o644
            }]
        );
    }

    #[test]
    fn a_wal_file_others_may_write_is_refused() {
        let (_dir, file) = store_at(0o600);
        let wal = PathBuf::from(format!("{}-wal", file.display()));
        std::fs::write(&wal, b"").expect("writes");
        chmod(&wal, 0o666);
        let error = guard("s", &file).expect_err("refused");
        assert!(
            matches!(&error, Error::OthersMayWrite { path, mode: 0o666, folder: false } if *path == wal),
            "{error}"
        );
    }

    #[test]
    fn a_folder_everyone_may_write_is_refused_unless_sticky() {
        let (dir, file) = store_at(0o600);
        chmod(dir.path(), 0o775);
        assert_eq!(
            guard("s", &file).expect("its group's, as umask 002 makes"),
            []
        );
        chmod(dir.path(), 0o777);
        let error = guard("s", &file).expect_err("refused");
        assert!(
            matches!(
                &error,
                Error::OthersMayWrite {
                    mode: 0o777,
                    folder: true,
                    ..
                }
            ),
            "{error}"
        );
        chmod(dir.path(), 0o1777);
        assert_eq!(guard("s", &file).expect("sticky, as /tmp"), []);
    }

    #[test]
    fn an_in_memory_store_has_no_file() {
        assert_eq!(file_of(":memory:"), None);
        assert_eq!(file_of("file:x?mode=memory&cache=shared"), None);
        assert_eq!(file_of("/var/a.db?mode=rwc"), Some(Path::new("/var/a.db")));
    }
}
