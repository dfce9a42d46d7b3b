//! Opening a store: foreign files, newer and older schemas, unreachable
//! servers.

use askgate_store::{Error, SCHEMA_VERSION, Store};
use askgate_testkit::Scratch;

use super::{call, urls};

#[tokio::test]
async fn a_foreign_database_file_is_refused_naming_the_store() {
    let dir = Scratch::new();
    let path = dir.join("foreign.db");
    let url = format!("sqlite://{}", path.display());
    run_sql(
        &format!("{url}?mode=rwc"),
        "CREATE TABLE invoices (id INTEGER)",
    )
    .await;
    let error = Store::open(&url).await.expect_err("foreign");
    assert!(matches!(error, Error::Foreign { .. }), "{error}");
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );

    let garbage = dir.join("askgate-garbage.db");
    std::fs::write(
        &garbage,
        b"this is not a database, just some text that is long enough",
    )
    .expect("writes");
    let error = Store::open(&format!("sqlite://{}", garbage.display()))
        .await
        .expect_err("corrupt");
    assert!(error.to_string().contains("askgate-garbage"), "{error}");
}

#[tokio::test]
async fn a_store_from_a_newer_askgate_is_refused() {
    let dir = Scratch::new();
    let url = dir.store_url();
    Store::open(&url).await.expect("creates").close().await;
    run_sql(&url, "UPDATE askgate_schema SET version = 99").await;
    let error = Store::open(&url).await.expect_err("newer");
    assert!(
        matches!(error, Error::NewerSchema { found: 99, .. }),
        "{error}"
    );
}

/// Run `sql` on the SQLite file at `url`, as someone with the file at hand
/// would.
async fn run_sql(url: &str, sql: &'static str) {
    let pool = sqlx::sqlite::SqlitePool::connect(url)
        .await
        .expect("connects");
    sqlx::raw_sql(sql).execute(&pool).await.expect("runs");
    pool.close().await;
}

#[tokio::test]
async fn an_unreachable_postgres_is_a_clear_error_without_the_password() {
    let error = Store::open("postgres://app:hunter2@127.0.0.1:1/none")
        .await
        .expect_err("unreachable");
    let text = error.to_string();
    assert!(text.contains("postgres://app@127.0.0.1:1/none"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

#[tokio::test]
async fn an_older_store_is_migrated_on_open() {
    let url = urls().await.remove(0);
    Store::open(&url).await.expect("creates").close().await;
    // Take the store back to schema 1, as an older askgate left it.
    let downgrade = "DROP TRIGGER asks_approved_by_count; DROP TABLE audit_head; DROP TABLE owners; DROP TABLE calls; DROP TABLE tasks; DROP TABLE deployment; \
        DROP INDEX audit_decision_key; ALTER TABLE audit DROP COLUMN decision_key; \
        DROP INDEX asks_of_call; ALTER TABLE asks DROP COLUMN call_key; \
        DROP TABLE ask_answers; ALTER TABLE asks DROP COLUMN panel; \
        UPDATE askgate_schema SET version = 1";
    run_sql(&url, downgrade).await;
    // Asks an older askgate-mcp parked: a call's first ask, and its second.
    run_sql(
        &url,
        "INSERT INTO asks (id, resume_key, principal, request, created_at, status) VALUES \
        ('old1', 'mcp:abc:confirm', 'alice', '{}', 1, 'pending'), \
        ('old2', 'mcp:abc:confirm#2', 'alice', '{}', 1, 'pending')",
    )
    .await;
    let store = Store::open(&url).await.expect("migrates");
    store
        .prepare_call(&call("c1", "gw-1"))
        .await
        .expect("the new table exists");
    let of_call: Vec<String> = store
        .asks_of_call("mcp:abc:confirm", 10)
        .await
        .expect("lists")
        .into_iter()
        .map(|row| row.ask.id)
        .collect();
    assert_eq!(
        of_call.len(),
        2,
        "both old asks found by their call: {of_call:?}"
    );
    store.close().await;
    let version: i64 =
        askgate_testkit::sqlite_value(&url, "SELECT version FROM askgate_schema").await;
    assert_eq!(version, SCHEMA_VERSION, "migrated to the newest schema");
}

#[tokio::test]
async fn a_store_keeps_its_keys_fingerprint_and_moves_it_only_from_the_key_it_has() {
    for store in super::stores().await {
        assert_eq!(store.recorded_key().await.expect("reads"), None);
        assert_eq!(
            store.bind_key("fp-a").await.expect("binds"),
            None,
            "the first binds"
        );
        assert_eq!(
            store.bind_key("fp-b").await.expect("compares"),
            Some("fp-a".into())
        );
        assert_eq!(store.retired_key().await.expect("reads"), None);

        assert_eq!(
            store.rotate_key("fp-a", "fp-b").await.expect("rotates"),
            None
        );
        assert_eq!(
            store.rotate_key("fp-a", "fp-b").await.expect("again"),
            None,
            "done already"
        );
        assert_eq!(
            store.recorded_key().await.expect("reads").as_deref(),
            Some("fp-b")
        );
        assert_eq!(
            store.retired_key().await.expect("reads").as_deref(),
            Some("fp-a")
        );
        assert_eq!(
            store.bind_key("fp-a").await.expect("compares"),
            Some("fp-b".into())
        );
        // A rotation from a key the store no longer has changes nothing.
        assert_eq!(
            store.rotate_key("fp-a", "fp-c").await.expect("refused"),
            Some("fp-b".into())
        );
        assert_eq!(
            store.retired_key().await.expect("reads").as_deref(),
            Some("fp-a")
        );
        store.close().await;
    }
}

#[cfg(unix)]
#[tokio::test]
async fn a_new_sqlite_store_and_its_journal_are_readable_by_their_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new();
    let path = dir.join("private.db");
    let store = Store::open(&format!("sqlite://{}", path.display()))
        .await
        .expect("opens");
    // A write, so that the write-ahead log exists.
    store
        .append_audit(&super::entry("one"))
        .await
        .expect("appends");
    for file in [path.clone(), dir.join("private.db-wal")] {
        let mode = std::fs::metadata(&file)
            .expect("there")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{}: {mode:o}", file.display());
    }
    store.close().await;
}

/// A store made and closed in a folder of its owner's only, then set to
/// `mode`: its URL and file.
#[cfg(unix)]
async fn existing_store_at(dir: &Scratch, mode: u32) -> (String, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let url = dir.store_url();
    Store::open(&url).await.expect("creates").close().await;
    let file = std::path::PathBuf::from(url.trim_start_matches("sqlite://"));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod");
    (url, file)
}

#[cfg(unix)]
#[tokio::test]
async fn an_existing_store_others_may_read_still_opens() {
    let dir = Scratch::new();
    let (url, _file) = existing_store_at(&dir, 0o644).await;
    // Said on stderr (the warning is checked from the CLI, in
    // askgate's store_cli tests); opened all the same.
    Store::open(&url).await.expect("opens").close().await;
}

#[cfg(unix)]
#[tokio::test]
async fn an_existing_store_others_may_write_is_refused_naming_it_and_the_fix() {
    let dir = Scratch::new();
    let (url, file) = existing_store_at(&dir, 0o666).await;
    let error = Store::open(&url).await.expect_err("refused");
    assert!(
        matches!(
            &error,
            Error::OthersMayWrite {
                mode: 0o666,
                folder: false,
                ..
            }
        ),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{0}: others than its owner may write this store file (mode 0666): they could \
             change its asks and answers or replace it; chmod 600 {0} (and check that nobody \
             changed it)",
            file.display()
        )
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_store_in_a_folder_everyone_may_write_is_refused_with_chmod_700() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new();
    let (url, _file) = existing_store_at(&dir, 0o600).await;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let error = Store::open(&url).await.expect_err("refused");
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
    assert!(error.to_string().contains("chmod 700"), "{error}");
}
