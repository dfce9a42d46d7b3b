//! The store a fixture server makes its sealed request state single-use
//! in: the one named with `--store URL`, or a fresh SQLite file in the temp
//! directory, removed on exit.

use std::path::PathBuf;

use askgate_store::Store;

/// The `--store URL` option of a fixture server.
#[derive(Debug, clap::Args)]
pub struct StoreArg {
    /// The store sealed request state is made single-use in (default: a
    /// fresh SQLite file in the temp directory, removed on exit).
    #[arg(long)]
    store: Option<String>,
}

/// An open fixture store, and the scratch file it may be.
#[derive(Debug)]
pub struct FixtureStore {
    /// The store.
    pub store: Store,
    /// The scratch file, when no store was named.
    scratch: Option<PathBuf>,
}

impl StoreArg {
    /// Open the store named, or a fresh scratch one named for `server` and
    /// this process (`<temp>/<server>-<pid>.db`).
    ///
    /// # Errors
    /// The store cannot be opened.
    pub async fn open(self, server: &str) -> Result<FixtureStore, askgate_store::Error> {
        let (url, scratch) = match self.store {
            Some(url) => (url, None),
            None => {
                let path = std::env::temp_dir().join(format!("{server}-{}.db", std::process::id()));
                (format!("sqlite://{}", path.display()), Some(path))
            }
        };
        let store = Store::open(&url).await?;
        Ok(FixtureStore { store, scratch })
    }
}

impl FixtureStore {
    /// Close the store; a scratch one is removed with SQLite's side files
    /// (a failure only leaves a file in the temp directory).
    pub async fn close(self) {
        self.store.close().await;
        let Some(path) = self.scratch else {
            return;
        };
        for suffix in ["", "-wal", "-shm"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            let _ = std::fs::remove_file(PathBuf::from(name));
        }
    }
}
