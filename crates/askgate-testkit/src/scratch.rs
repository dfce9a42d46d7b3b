//! Scratch directories and SQLite stores, removed when dropped.

use std::ops::Deref;
use std::path::{Path, PathBuf};

use askgate_store::Store;

use crate::postgres::FreshSchema;

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

/// A fresh, empty store's URL (it dereferences to it), kept for as long
/// as this lives: a SQLite file in a scratch directory, or a PostgreSQL
/// schema of its own.
#[derive(Debug)]
pub struct Fresh {
    url: String,
    _keep: Keep,
}

/// What a [`Fresh`] store lives in: removed, or dropped, with it.
#[derive(Debug)]
enum Keep {
    Dir(#[allow(dead_code, reason = "kept for its drop")] Scratch),
    Schema(#[allow(dead_code, reason = "kept for its drop")] FreshSchema),
}

impl Fresh {
    /// A SQLite store's URL in a scratch directory of its own.
    pub fn sqlite() -> Fresh {
        let dir = Scratch::new();
        Fresh {
            url: dir.store_url(),
            _keep: Keep::Dir(dir),
        }
    }

    /// A fresh SQLite store, and a fresh PostgreSQL one when the test
    /// database is configured (otherwise a notice says `what` is skipped).
    pub async fn every(what: &str) -> Vec<Fresh> {
        let mut fresh = vec![Fresh::sqlite()];
        if let Some(schema) = FreshSchema::create(what).await {
            fresh.push(Fresh {
                url: schema.url().to_owned(),
                _keep: Keep::Schema(schema),
            });
        }
        fresh
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Open the store.
    pub async fn open(&self) -> Store {
        Store::open(&self.url).await.expect("a fresh store opens")
    }
}

impl Deref for Fresh {
    type Target = str;

    fn deref(&self) -> &str {
        &self.url
    }
}

impl std::fmt::Display for Fresh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

/// A fresh store, open (it dereferences to the [`Store`]): SQLite in a
/// scratch directory of its own, or a PostgreSQL schema of its own.
#[derive(Debug)]
pub struct TempStore {
    store: Store,
    fresh: Fresh,
}

impl TempStore {
    /// Open a fresh SQLite store.
    pub async fn open() -> TempStore {
        TempStore::at(Fresh::sqlite()).await
    }

    /// Open the store `fresh` names.
    pub async fn at(fresh: Fresh) -> TempStore {
        TempStore {
            store: fresh.open().await,
            fresh,
        }
    }

    /// Every backend, open: SQLite, and PostgreSQL when the test database
    /// is configured (see [`Fresh::every`]).
    pub async fn every(what: &str) -> Vec<TempStore> {
        let mut stores = Vec::new();
        for fresh in Fresh::every(what).await {
            stores.push(TempStore::at(fresh).await);
        }
        stores
    }

    /// The store (a clone shares it).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Its URL, for another process or another handle.
    pub fn url(&self) -> &str {
        self.fresh.url()
    }
}

impl Deref for TempStore {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}
