//! Where the store is when no URL names it: `askgate.db` in the
//! platform's data directory, in a folder of its owner's only.

use std::path::PathBuf;

/// The store's URL: `flag` (`--store`), else `$ASKGATE_STORE`, else
/// `askgate.db` in the platform data directory (made if need be).
///
/// # Errors
/// There is no data directory, or it cannot be made, naming it.
pub fn store_url(flag: Option<String>) -> Result<String, NoStoreDir> {
    if let Some(url) = flag.or_else(|| std::env::var("ASKGATE_STORE").ok()) {
        return Ok(url);
    }
    let dir = default_dir()?;
    // Its store holds answers: a folder of its owner's only.
    let mut folder = std::fs::DirBuilder::new();
    folder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        folder.mode(0o700);
    }
    folder.create(&dir).map_err(|source| NoStoreDir::Create {
        dir: dir.clone(),
        source,
    })?;
    Ok(format!("sqlite://{}", dir.join("askgate.db").display()))
}

/// The store's URL as [`store_url`] finds it, the default folder not
/// made: for a command that only reads or answers, which never makes a
/// store.
///
/// # Errors
/// [`NoStoreDir::NoDataDir`] when no store is named and the platform has
/// no data directory.
pub fn store_url_made_or_not(flag: Option<String>) -> Result<String, NoStoreDir> {
    if let Some(url) = flag.or_else(|| std::env::var("ASKGATE_STORE").ok()) {
        return Ok(url);
    }
    Ok(format!(
        "sqlite://{}",
        default_dir()?.join("askgate.db").display()
    ))
}

/// The platform's data folder for askgate.
fn default_dir() -> Result<PathBuf, NoStoreDir> {
    Ok(dirs::data_dir()
        .ok_or(NoStoreDir::NoDataDir)?
        .join("askgate"))
}

/// Why no store was named and the default place cannot hold one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NoStoreDir {
    /// The platform has no data directory.
    #[error("no data directory on this platform; pass --store")]
    NoDataDir,
    /// The data directory's `askgate` folder cannot be made.
    #[error("{}: {source}", .dir.display())]
    Create {
        /// The folder.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
