//! Scratch directories and SQLite stores, removed when dropped.

use std::ops::Deref;
use std::path::{Path, PathBuf};

use askgate_store::Store;

/// A directory of its own for one test, removed with all it holds when
/// dropped.
#[derive(Debug)]
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// A new, empty scratch directory.
    pub fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("askgate-test-")
            .tempdir()
            .expect("the temporary directory is writable");
        Scratch { dir }
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The path of `name` in it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Write `body` to the file `name` in it; its path.
    pub fn write(&self, name: &str, body: &str) -> PathBuf {
        let path = self.join(name);
        std::fs::write(&path, body).expect("the scratch directory is writable");
        path
    }

    /// The URL of a SQLite store in it (the file is made when the store is
    /// first opened).
    pub fn store_url(&self) -> String {
        format!("sqlite://{}", self.join("s.db").display())
    }
}

impl Default for Scratch {
    fn default() -> Scratch {
        Scratch::new()
    }
}

/// A fresh SQLite store in a scratch directory of its own (dereferences
/// to the [`Store`]).
#[derive(Debug)]
pub struct TempStore {
    store: Store,
    url: String,
    dir: Scratch,
}

impl TempStore {
    /// Open a fresh store.
    pub async fn open() -> TempStore {
        let dir = Scratch::new();
        let url = dir.store_url();
        let store = Store::open(&url).await.expect("a fresh store opens");
        TempStore { store, url, dir }
    }

    /// The store (a clone shares it).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Its URL, for another process or another handle.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The scratch directory it is in.
    pub fn dir(&self) -> &Scratch {
        &self.dir
    }
}

impl Deref for TempStore {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}
