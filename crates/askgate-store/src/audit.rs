//! The audit log: append-only decisions, each hashing the one before it
//! (SHA-256), so an edited, deleted, inserted or reordered entry is found.
//!
//! Tool arguments are never stored: only a keyed digest the caller computes.

use std::fmt;

use crate::audit_head::{HEAD_KEY_CONTEXT, chain_hash, check_head, derive_key};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::backend::{Store, with_pool, with_writer};
use crate::columns::Fields;
use crate::error::Error;

/// The hash before the first entry.
pub(crate) const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How a tool call was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// A person was asked and confirmed.
    Elicited,
    /// No person could be asked; the caller passed `confirm: true`.
    CallerConfirmed,
    /// At or below the auto-approve threshold.
    AutoApproved,
    /// A read or low-risk write: no confirmation needed.
    NotRequired,
    /// Not run: a person said no, the caller cancelled, or no person can
    /// be asked.
    Blocked,
    /// Not run yet: the ask waits for a person in the inbox.
    Waiting,
    /// One person's answer to an ask an approval rule decides, counted
    /// toward it; the decision that runs or blocks the call follows once
    /// the rule's people have answered.
    Answered,
}

/// One audited decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When it was decided.
    pub at: Timestamp,
    /// The upstream server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The tool's risk.
    pub risk: String,
    /// How it was decided.
    pub decision: Decision,
    /// Why, in words (never a person's answer or an argument).
    pub reason: String,
    /// Who answered, when a person did.
    pub answered_by: Option<String>,
    /// The principal (the agent) the call and its ask were for, when
    /// known. Absent from entries written before it was recorded, so their
    /// hashes still verify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Through which surface.
    pub answered_via: Option<String>,
    /// A keyed digest of the arguments (never the arguments).
    pub arguments_digest: Option<String>,
    /// The ask that decided it, if any.
    pub ask_id: Option<String>,
    /// Names the decision, for decisions that may be reached more than once
    /// (a handler run again on a retry): the chain keeps the first entry
    /// with a key, and appending the same key again returns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_key: Option<String>,
}

/// A stored entry with its place in the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditRecord {
    /// Its position, from 1.
    pub seq: i64,
    /// The entry.
    pub entry: AuditEntry,
    /// The hash of the entry before it.
    pub prev_hash: String,
    /// This entry's hash.
    pub hash: String,
}

/// Where the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChainBreak {
    /// The entry's content no longer matches its hash.
    Edited {
        /// Its position.
        seq: i64,
    },
    /// An entry that belongs at another position stands here.
    Reordered {
        /// Where it stands.
        seq: i64,
        /// Where it was written.
        written_at: i64,
    },
    /// Entries are missing before this one (deleted).
    Missing {
        /// The first position missing.
        expected: i64,
    },
    /// The entry does not follow the one before it (inserted, or the one
    /// before was replaced).
    Unlinked {
        /// Its position.
        seq: i64,
    },
    /// The chain ends before the entry its head record names: its newest
    /// entries (or all of them) were deleted.
    Cut {
        /// Its last entry (0: none is left).
        ends_at: i64,
        /// The entry the head record names.
        head: i64,
    },
    /// The chain goes on past the entry its head record names, or holds
    /// another entry there: what follows was not written by askgate.
    PastHead {
        /// The entry the head record names.
        head: i64,
    },
    /// The head record's signature does not match it: it was altered.
    HeadAltered,
    /// The chain has entries and no head record: it was deleted, and with
    /// it what would show a cut.
    HeadMissing,
    /// The head record is not signed, where the deployment's key is known:
    /// every process holding the key signs it (a store migrated to the
    /// head record has it signed by the first one to start), so an
    /// unsigned head was put there by hand — to match a cut chain.
    HeadUnsigned,
}

impl fmt::Display for ChainBreak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainBreak::Edited { seq } => write!(f, "entry {seq} was edited"),
            ChainBreak::Reordered { seq, written_at } => {
                write!(
                    f,
                    "entry {seq} was moved (it was written as entry {written_at})"
                )
            }
            ChainBreak::Missing { expected } => write!(f, "entry {expected} is missing (deleted)"),
            ChainBreak::Unlinked { seq } => write!(
                f,
                "entry {seq} does not follow entry {} (an entry was inserted or replaced)",
                seq - 1
            ),
            ChainBreak::Cut { ends_at, head } => write!(
                f,
                "the chain is cut: it ends at entry {ends_at}, and its head record names entry {head} (the newest entries were deleted)"
            ),
            ChainBreak::PastHead { head } => write!(
                f,
                "the chain does not end at entry {head}, as its head record says (entries were added or replaced by hand)"
            ),
            ChainBreak::HeadAltered => {
                write!(
                    f,
                    "the chain's head record does not match its signature (it was altered)"
                )
            }
            ChainBreak::HeadMissing => write!(
                f,
                "the chain's head record is missing (deleted, and with it what shows whether the newest entries were)"
            ),
            ChainBreak::HeadUnsigned => write!(
                f,
                "the chain's head record is not signed (put back by hand, or no gateway or inbox has run on the store with its key since it was migrated: start one once)"
            ),
        }
    }
}

/// The result of checking the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// How many entries were read.
    pub entries: u64,
    /// The last entry's hash: publish it elsewhere to catch a truncated tail.
    pub head: String,
    /// The first break found, if any.
    pub broken: Option<ChainBreak>,
}

/// An entry's place in the chain: its position and the hashes that link it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) seq: i64,
    pub(crate) prev_hash: String,
    pub(crate) hash: String,
}

impl Link {
    /// The place of the entry `text` appended after the head `last`
    /// (`(seq, hash)`; `None` for an empty chain), and its hash.
    pub(crate) fn after(last: Option<(i64, String)>, text: &str) -> Link {
        let (seq, prev_hash) = match last {
            Some((seq, hash)) => (seq + 1, hash),
            None => (1, GENESIS.to_owned()),
        };
        let hash = chain_hash(&prev_hash, seq, text);
        Link {
            seq,
            prev_hash,
            hash,
        }
    }

    /// The record of `entry` at this place.
    pub(crate) fn record(self, entry: &AuditEntry) -> AuditRecord {
        AuditRecord {
            seq: self.seq,
            entry: entry.clone(),
            prev_hash: self.prev_hash,
            hash: self.hash,
        }
    }
}

/// An entry as stored: its place and its text (as chained and hashed).
struct StoredEntry {
    link: Link,
    text: String,
}

/// Where the chain stands for an entry about to be appended: the columns
/// of one row, `$key` the placeholder of the entry's decision key (`"$1"`).
/// The entry already recorded under the key (`key_seq`, `key_prev`,
/// `key_hash`: NULL when none is) and the chain's head (`head_seq`,
/// `head_hash`: NULL when the chain is empty). [`place_in!`] reads them.
/// The call ledger reads them in the `RETURNING` of the insert that begins
/// a call's record, saving the append a statement of its own (a trip to
/// SQLite's thread).
macro_rules! place_columns {
    ($key:literal) => {
        concat!(
            "(SELECT seq FROM audit WHERE decision_key = ",
            $key,
            ") AS key_seq, \
             (SELECT prev_hash FROM audit WHERE decision_key = ",
            $key,
            ") AS key_prev, \
             (SELECT hash FROM audit WHERE decision_key = ",
            $key,
            ") AS key_hash, \
             (SELECT seq FROM audit ORDER BY seq DESC LIMIT 1) AS head_seq, \
             (SELECT hash FROM audit ORDER BY seq DESC LIMIT 1) AS head_hash"
        )
    };
}
pub(crate) use place_columns;

/// Where an entry goes in the chain, as read in the writer's transaction.
#[derive(Debug)]
pub(crate) enum Place {
    /// Already recorded under its decision key: its link.
    Recorded(Link),
    /// After the head, `(seq, hash)`; first, when the chain is empty.
    After(Option<(i64, String)>),
}

impl Place {
    /// The place a row with [`place_columns!`] says, of either backend or
    /// of the store's own SQLite thread.
    pub(crate) fn of<R: Fields>(row: &R) -> Result<Place, sqlx::Error> {
        Ok(
            match (
                row.number("key_seq")?,
                row.text("key_prev")?,
                row.text("key_hash")?,
            ) {
                (Some(seq), Some(prev_hash), Some(hash)) => Place::Recorded(Link {
                    seq,
                    prev_hash,
                    hash,
                }),
                _ => Place::After(row.number("head_seq")?.zip(row.text("head_hash")?)),
            },
        )
    }
}

/// The [`Place`] in `$row`, a row with [`place_columns!`].
macro_rules! place_in {
    ($store:expr, $row:expr) => {
        $crate::audit::Place::of($row).map_err(|e| $store.fail(e))
    };
}
pub(crate) use place_in;

/// Append the entry `$text` (keyed by `$key`, an `Option<&str>`) to the
/// chain on `$conn`, inside a `with_writer!` body: the [`Link`] of the entry
/// already recorded under the key, or of the new entry.
/// The chain's head is read on the writer's connection, so appends made
/// one after another — in one batch or across batches — link up. (On
/// PostgreSQL a concurrent appender may take the place first: the insert
/// then fails on `seq`, and the caller retries.)
macro_rules! append_entry {
    ($store:expr, $conn:ident, $text:expr, $key:expr) => {
        async {
            let key: Option<&str> = $key;
            let found = sqlx::query(concat!("SELECT ", $crate::audit::place_columns!("$1")))
                .bind(key)
                .fetch_one(&mut *$conn)
                .await
                .map_err(|e| $store.fail(e))?;
            let place = $crate::audit::place_in!($store, &found)?;
            $crate::audit::append_at!($store, $conn, $text, key, place)
        }
        .await
    };
}
pub(crate) use append_entry;

/// SQLite's append: the entry ($1 seq, $4 text, $5 previous hash, $2
/// hash, $6 decision key) and the head's move ($3 its tag).
macro_rules! append_sql {
    () => {
        concat!(
            $crate::audit::append_entry_sql!(),
            ";\n",
            $crate::audit_head::move_head_sql!()
        )
    };
}
pub(crate) use append_sql;

/// The entry's insert of [`append_sql!`], by itself: its parameters are
/// numbered as there.
macro_rules! append_entry_sql {
    () => {
        "INSERT INTO audit (seq, entry, prev_hash, hash, decision_key) \
         VALUES ($1, $4, $5, $2, $6)"
    };
}
pub(crate) use append_entry_sql;

/// [`append_entry!`] at `$place`, the [`Place`] read for it in the same
/// write. With `commit = true` (SQLite, a writer alone in its batch: see
/// `with_writer!`), the command that appends ends with `COMMIT`, when
/// `$place` is [`Place::After`] (a [`Place::Recorded`] runs nothing).
macro_rules! append_at {
    ($store:expr, $conn:ident, $text:expr, $key:expr, $place:expr) => {
        $crate::audit::append_at!($store, $conn, $text, $key, $place, commit = false)
    };
    ($store:expr, $conn:ident, $text:expr, $key:expr, $place:expr, commit = $commit:expr) => {
        async {
            let (text, key): (&str, Option<&str>) = ($text, $key);
            let last = match $place {
                $crate::audit::Place::Recorded(link) => return Ok::<_, Error>(link),
                $crate::audit::Place::After(last) => last,
            };
            let link = $crate::audit::Link::after(last, text);
            let (seq, prev, hash) = (link.seq, &link.prev_hash, &link.hash);
            if matches!($store.pool, $crate::backend::Pool::Postgres(_)) {
                // A PostgreSQL write runs statement by statement: the entry
                // and the head move in one statement, so neither is kept
                // without the other.
                sqlx::query(
                    "WITH entry AS (INSERT INTO audit (seq, entry, prev_hash, hash, decision_key) \
                     VALUES ($1, $2, $3, $4, $5) RETURNING seq, hash) \
                     INSERT INTO audit_head (id, seq, hash, tag) SELECT 1, seq, hash, $6 FROM entry \
                     ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, \
                     tag = excluded.tag WHERE audit_head.seq < excluded.seq",
                )
                .bind(seq)
                .bind(text)
                .bind(prev)
                .bind(hash)
                .bind(key)
                .bind($store.head_tag(seq, hash))
                .execute(&mut *$conn)
                .await
                .map_err(|e| $store.fail(e))?;
            } else {
                // The entry and the head's move in one command (two
                // statements, one trip to the connection's thread), in the
                // writer's transaction — and its commit, when asked.
                let sql = if $commit {
                    concat!($crate::audit::append_sql!(), ";\nCOMMIT")
                } else {
                    $crate::audit::append_sql!()
                };
                sqlx::query(sql)
                .bind(seq)
                .bind(hash)
                .bind($store.head_tag(seq, hash))
                .bind(text)
                .bind(prev)
                .bind(key)
                .execute(&mut *$conn)
                .await
                .map_err(|e| $store.fail(e))?;
            }
            Ok(link)
        }
        .await
    };
}
pub(crate) use append_at;

impl Store {
    /// Append an entry to the chain. An entry whose `decision_key` is
    /// already in the chain is not appended again: the entry recorded
    /// first is returned.
    ///
    /// # Errors
    /// [`Error`] when the store fails (after retrying a lost race with a
    /// concurrent appender).
    pub async fn append_audit(&self, entry: &AuditEntry) -> Result<AuditRecord, Error> {
        let text = self.audit_text(entry)?;
        let mut last_error = None;
        for _ in 0..50 {
            match self.try_append(&text, entry.decision_key.as_deref()).await {
                Ok(link) => return Ok(link.record(entry)),
                // No race to win while the server is out of reach.
                Err(error @ Error::Unavailable { .. }) => return Err(error),
                Err(error) => last_error = Some(error),
            }
            tokio::task::yield_now().await;
        }
        Err(last_error.unwrap_or_else(|| Error::Database {
            store: self.name.to_string(),
            detail: "could not append to the audit chain".into(),
        }))
    }

    async fn try_append(&self, text: &str, key: Option<&str>) -> Result<Link, Error> {
        with_writer!(self, |conn| append_entry!(self, conn, text, key))
    }

    /// The entry's text as chained (and hashed): its JSON.
    pub(crate) fn audit_text(&self, entry: &AuditEntry) -> Result<String, Error> {
        // An entry's text is some 400 bytes: written in one allocation,
        // not grown from serde_json's 128.
        let mut text = Vec::with_capacity(512);
        serde_json::to_writer(&mut text, entry)
            .map_err(|e| e.to_string())
            .and_then(|()| String::from_utf8(text).map_err(|e| e.to_string()))
            .map_err(|detail| Error::Corrupt {
                store: self.name.to_string(),
                what: "audit entry",
                detail,
            })
    }

    /// Every entry, oldest first.
    ///
    /// # Errors
    /// [`Error`] when the store fails or an entry is unreadable.
    pub async fn audit_entries(&self) -> Result<Vec<AuditRecord>, Error> {
        let rows = self.audit_rows().await?;
        rows.into_iter()
            .map(|StoredEntry { link, text }| {
                let entry = serde_json::from_str(&text).map_err(|e| Error::Corrupt {
                    store: self.name.to_string(),
                    what: "audit entry",
                    detail: format!("entry {}: {e}", link.seq),
                })?;
                Ok(AuditRecord {
                    seq: link.seq,
                    entry,
                    prev_hash: link.prev_hash,
                    hash: link.hash,
                })
            })
            .collect()
    }

    /// Check the chain and its head record, and say where it breaks: an
    /// entry edited, moved, deleted or inserted; the newest entries
    /// deleted (the chain ends before its head record); the head record
    /// deleted, or — when this store signs it — altered.
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn verify_audit(&self) -> Result<Verification, Error> {
        let keys: Vec<Vec<u8>> = self.audit_key.get().cloned().into_iter().collect();
        self.verify_chain(&keys).await
    }

    /// [`Store::verify_audit`], the head record's signature checked
    /// against keys derived from each of `deployment_keys` (the current
    /// key and the one rotated out: a head is signed by the key in use
    /// when it was written).
    ///
    /// # Errors
    /// [`Error`] when the store fails.
    pub async fn verify_audit_signed(
        &self,
        deployment_keys: &[Vec<u8>],
    ) -> Result<Verification, Error> {
        let keys: Vec<Vec<u8>> = deployment_keys
            .iter()
            .map(|key| derive_key(key, HEAD_KEY_CONTEXT))
            .collect();
        self.verify_chain(&keys).await
    }

    async fn verify_chain(&self, keys: &[Vec<u8>]) -> Result<Verification, Error> {
        let rows = self.audit_rows().await?;
        let mut prev = GENESIS.to_owned();
        let mut broken = None;
        for (index, StoredEntry { link, text }) in rows.iter().enumerate() {
            let Link {
                seq,
                prev_hash,
                hash,
            } = link;
            let expected = index as i64 + 1;
            if chain_hash(prev_hash, *seq, text) != *hash {
                let written_at = rows
                    .iter()
                    .map(|row| row.link.seq)
                    .find(|other| chain_hash(prev_hash, *other, text) == *hash);
                broken = Some(match written_at {
                    Some(written_at) if written_at != *seq => ChainBreak::Reordered {
                        seq: *seq,
                        written_at,
                    },
                    _ => ChainBreak::Edited { seq: *seq },
                });
                break;
            }
            if *seq > expected {
                broken = Some(ChainBreak::Missing { expected });
                break;
            }
            if *prev_hash != prev {
                broken = Some(ChainBreak::Unlinked { seq: *seq });
                break;
            }
            prev.clone_from(hash);
        }
        if broken.is_none() {
            let last = rows
                .last()
                .map(|row| (row.link.seq, row.link.hash.as_str()));
            broken = check_head(self.audit_head().await?, last, keys, self.seeded_head.get());
        }
        Ok(Verification {
            entries: rows.len() as u64,
            head: prev,
            broken,
        })
    }

    async fn audit_rows(&self) -> Result<Vec<StoredEntry>, Error> {
        with_pool!(self, |pool| {
            let rows = sqlx::query("SELECT seq, entry, prev_hash, hash FROM audit ORDER BY seq")
                .fetch_all(pool)
                .await
                .map_err(|e| self.fail(e))?;
            rows.iter()
                .map(|row| {
                    let get =
                        |column: &str| row.try_get::<String, _>(column).map_err(|e| self.fail(e));
                    Ok(StoredEntry {
                        link: Link {
                            seq: row.try_get::<i64, _>("seq").map_err(|e| self.fail(e))?,
                            prev_hash: get("prev_hash")?,
                            hash: get("hash")?,
                        },
                        text: get("entry")?,
                    })
                })
                .collect()
        })
    }
}
