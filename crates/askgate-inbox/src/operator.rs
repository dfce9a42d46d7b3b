//! The generated operator token: made on first start when the config sets
//! no `[inbox] token`, written to a file only its owner can read
//! (`<key file>.operator-token`), and known afterwards by its SHA-256 alone
//! (`<key file>.inbox`). Neither the token nor the file's contents are ever
//! printed or logged: stderr names the file.
//!
//! The inbox makes the token ([`digest_or_create`]); `askgate asks` only
//! reads its digest ([`digest`]), to know the operator's credential.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::auth;
use crate::error::{Error, TokenFile};

/// Where the digest of the generated token is kept, beside the key file.
pub(crate) fn digest_path(key_file: &Path) -> PathBuf {
    PathBuf::from(format!("{}.inbox", key_file.display()))
}

/// Where the generated token itself is written, beside the key file.
pub(crate) fn token_path(key_file: &Path) -> PathBuf {
    PathBuf::from(format!("{}.operator-token", key_file.display()))
}

/// The digest of the generated operator token, if one was made. On unix,
/// a token file others may read is warned about.
///
/// # Errors
/// When the digest file cannot be read or does not hold a SHA-256 in hex,
/// naming the file; [`Error::TokenFileShared`] when others may write the
/// digest or the token file.
pub(crate) fn digest(key_file: &Path) -> Result<Option<[u8; 32]>, Error> {
    for (file, path) in [
        (TokenFile::Digest, digest_path(key_file)),
        (TokenFile::Token, token_path(key_file)),
    ] {
        if let Some(mode) = check_shared(file, &path)? {
            tracing::warn!(
                file = %path.display(),
                mode = %format!("{mode:04o}"),
                "the inbox's operator token file is readable by others than its owner: whoever \
                 reads it answers every ask as the operator; chmod 600 it"
            );
        }
    }
    let path = digest_path(key_file);
    match std::fs::read_to_string(&path) {
        Ok(text) => match parse_hex(text.trim()) {
            Some(digest) => Ok(Some(digest)),
            None => Err(Error::TokenDigestGarbled { path }),
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::TokenFileRead { path, source }),
    }
}

/// The digest of the generated operator token: read, or — on first start —
/// made now: the token written to [`token_path`] (mode 0600, never over an
/// existing file), its digest to [`digest_path`], and stderr told where the
/// token is. An older install, with a digest and no token file, is left as
/// it is.
///
/// # Errors
/// When a file cannot be read or written, naming it.
pub(crate) fn digest_or_create(key_file: &Path) -> Result<[u8; 32], Error> {
    if let Some(digest) = digest(key_file)? {
        return Ok(digest);
    }
    let path = token_path(key_file);
    let token = match std::fs::read_to_string(&path) {
        // Written by a start that stopped before keeping the digest.
        Ok(token) if !token.trim().is_empty() => token.trim().to_owned(),
        Ok(_) => return Err(Error::TokenFileEmpty { path }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let token = random_token()?;
            write_private(&path, &token).map_err(|source| Error::TokenFileWrite {
                file: TokenFile::Token,
                path: path.clone(),
                source,
            })?;
            token
        }
        Err(source) => return Err(Error::TokenFileRead { path, source }),
    };
    let digest = auth::digest(&token);
    let digest_file = digest_path(key_file);
    write_private(&digest_file, &hex::encode(digest)).map_err(|source| Error::TokenFileWrite {
        file: TokenFile::Digest,
        path: digest_file.clone(),
        source,
    })?;
    crate::say::say(&format!(
        "askgate: the inbox's operator token is in {} (readable by you only)",
        path.display()
    ));
    Ok(digest)
}

/// Refuse the token's `file` at `path` when others than its owner may
/// write it (whoever writes the digest signs in as the operator with a
/// token of theirs); the token file's mode when others may read it (whoever
/// reads it answers as the operator). A missing file is fine, and a digest
/// others may read is no secret.
///
/// # Errors
/// [`Error::TokenFileShared`], naming the file and its mode.
fn check_shared(file: TokenFile, path: &Path) -> Result<Option<u32>, Error> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(metadata) = std::fs::metadata(path) {
            let mode = metadata.permissions().mode() & 0o777;
            if mode & 0o022 != 0 {
                return Err(Error::TokenFileShared {
                    file,
                    path: path.to_owned(),
                    mode,
                });
            }
            if file == TokenFile::Token && mode & 0o044 != 0 {
                return Ok(Some(mode));
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (file, path);
    Ok(None)
}

/// 32 random bytes in hex.
fn random_token() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(Error::Random)?;
    Ok(hex::encode(bytes))
}

/// Write `text` and a line break to a new file at `path` that only its
/// owner can read and write; an existing file is an error, never replaced.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(format!("{text}\n").as_bytes())?;
    file.sync_all()
}

fn parse_hex(text: &str) -> Option<[u8; 32]> {
    let mut digest = [0u8; 32];
    hex::decode_to_slice(text, &mut digest).ok()?;
    Some(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key file's path in a scratch directory of its own (kept for as
    /// long as the test holds it).
    fn scratch() -> (askgate_testkit::Scratch, PathBuf) {
        let dir = askgate_testkit::Scratch::new();
        let key = dir.join("s.db.key");
        (dir, key)
    }

    #[test]
    fn a_made_token_is_kept_by_its_digest_and_in_a_private_file() {
        let (_dir, key) = scratch();
        let digest = digest_or_create(&key).expect("made");
        let token = std::fs::read_to_string(token_path(&key)).expect("the token file");
        assert_eq!(auth::digest(token.trim()), digest);
        assert_eq!(
            super::digest(&key).expect("reads"),
            Some(digest),
            "read back, not made again"
        );
        assert_eq!(digest_or_create(&key).expect("reads"), digest);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(token_path(&key))
                .expect("there")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn an_older_install_with_a_digest_only_gets_no_token_file() {
        let (_dir, key) = scratch();
        let digest = auth::digest("an-older-operator-token-000000");
        std::fs::write(digest_path(&key), format!("{}\n", hex::encode(digest))).expect("writes");
        assert_eq!(digest_or_create(&key).expect("reads"), digest);
        assert!(!token_path(&key).exists());
    }

    #[cfg(unix)]
    fn chmod(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_others_may_read_is_said_and_still_used() {
        let (_dir, key) = scratch();
        let digest = digest_or_create(&key).expect("made");
        chmod(&token_path(&key), 0o644);
        assert_eq!(
            check_shared(TokenFile::Token, &token_path(&key)).expect("not refused"),
            Some(0o644)
        );
        assert_eq!(super::digest(&key).expect("reads"), Some(digest));
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_others_may_write_is_refused_naming_it_and_the_fix() {
        let (_dir, key) = scratch();
        digest_or_create(&key).expect("made");
        chmod(&token_path(&key), 0o666);
        let error = super::digest(&key).expect_err("refused").to_string();
        assert_eq!(
            error,
            format!(
                "{}: others than its owner may write the inbox's operator token (mode 0666); \
                 chmod 600 it (and check that nobody changed it)",
                token_path(&key).display()
            )
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_digest_file_others_may_write_is_refused() {
        let (_dir, key) = scratch();
        digest_or_create(&key).expect("made");
        chmod(&digest_path(&key), 0o664);
        let error = digest_or_create(&key).expect_err("refused");
        assert!(
            matches!(
                error,
                Error::TokenFileShared {
                    file: TokenFile::Digest,
                    mode: 0o664,
                    ..
                }
            ),
            "{error}"
        );
        // Readable by others, a digest is no secret.
        chmod(&digest_path(&key), 0o644);
        assert!(digest_or_create(&key).is_ok());
    }

    #[test]
    fn a_digest_file_that_is_not_hex_is_named() {
        let (_dir, key) = scratch();
        std::fs::write(digest_path(&key), "not a digest\n").expect("writes");
        let error = digest(&key).expect_err("garbled").to_string();
        assert!(
            error.ends_with(".inbox does not hold a SHA-256 in hex"),
            "{error}"
        );
    }
}
