//! `askgate asks ...` and `askgate audit ...` against a real SQLite store,
//! as a person runs them: answering needs a person's credential
//! (`ASKGATE_TOKEN`), checked against the config's `[[people]]` and the
//! inbox's operator token, and records that person.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use askgate_core::{Ask, Form, QuestionSet};
use askgate_store::{AskStatus, AuditEntry, Decision, NewAsk, Store};
use askgate_testkit::{Scratch, binaries};
use jiff::Timestamp;
use serde_json::{Value as Json, json};

/// Alice answers the asks of the principal alice (the asks parked here).
const ALICE: &str = "alice-token-0123456789abcdef";
/// Bob answers the asks of the principal bob only.
const BOB: &str = "bob-token-0123456789abcdef00";
/// The agent alice's calls come from: its MCP bearer token.
const AGENT: &str = "alice-agent-token-0123456789";

/// A fresh store's URL, in a scratch directory that lives as long as it.
fn store_url() -> (Scratch, String) {
    let dir = Scratch::new();
    let url = dir.store_url();
    (dir, url)
}

/// When the asks here were made.
fn at() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("in range")
}

fn db_path(url: &str) -> PathBuf {
    PathBuf::from(url.trim_start_matches("sqlite://"))
}

/// The gateway's config beside the store: the agent `alice` and the
/// people alice and bob.
fn config(url: &str) -> PathBuf {
    let path = db_path(url).with_file_name("askgate.toml");
    std::fs::write(
        &path,
        format!(
            "store = {url:?}\n\n[[upstreams]]\nname = \"files\"\ncommand = \"true\"\n\n\
             [[principals]]\nname = \"alice\"\ntoken = {AGENT:?}\n\n\
             [[people]]\nname = \"alice\"\ntoken = {ALICE:?}\nanswers_for = [\"alice\"]\n\n\
             [[people]]\nname = \"bob\"\ntoken = {BOB:?}\nanswers_for = [\"bob\"]\n"
        ),
    )
    .expect("writes the config");
    path
}

/// `askgate ARGS --store URL`, with no credential and no terminal.
fn askgate(url: &str, args: &[&str]) -> Output {
    run(url, None, None, args)
}

/// `askgate ARGS --config CONFIG --store URL` with `ASKGATE_TOKEN=token`.
fn askgate_as(url: &str, token: &str, args: &[&str]) -> Output {
    run(url, Some(&config(url)), Some(token), args)
}

fn run(url: &str, config: Option<&Path>, token: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(binaries!().askgate);
    command
        .args(args)
        .args(["--store", url])
        .env_remove("ASKGATE_TOKEN")
        .stdin(Stdio::null());
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    if let Some(token) = token {
        command.env("ASKGATE_TOKEN", token);
    }
    command.output().expect("askgate runs")
}

async fn status_of(store: &Store, id: &str) -> AskStatus {
    store.ask(id).await.expect("reads").expect("exists").status
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `output` exited with `code`, its stderr saying `words`.
fn says(output: &Output, code: i32, words: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(words), "{stderr}");
}

fn form_request() -> Json {
    let form: Form = serde_json::from_value(json!({
        "message": "Delete 40 files?",
        "fields": [
            {"id": "confirm", "title": "Delete them", "type": "boolean"},
            {"id": "keep", "title": "Keep a backup for", "type": "integer", "minimum": 1, "maximum": 30, "default": 7}
        ]
    }))
    .expect("a form");
    json!({"kind": "form", "ask": Ask::new(form).expect("askable").to_record()})
}

fn set_request() -> Json {
    let set: QuestionSet = serde_json::from_value(json!({"source": "ask", "questions": [
        {"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
         "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]}]}))
    .expect("a set");
    json!({"kind": "question_set", "set": set})
}

async fn park(url: &str, id: &str, request: Json) -> Store {
    let store = Store::open(url).await.expect("opens");
    store
        .park(&NewAsk {
            server: Some("files".into()),
            tool: Some("delete".into()),
            risk: Some("destructive".into()),
            ..askgate_testkit::new_ask(id, "alice", request, at())
        })
        .await
        .expect("parks");
    store
}

#[tokio::test]
async fn a_parked_ask_is_listed_and_answered_through_the_same_checks() {
    let (_dir, url) = store_url();
    let store = park(&url, "a1", form_request()).await;

    let list = askgate(&url, &["asks", "list"]);
    says(&list, 0, "");
    assert!(text(&list.stdout).contains("a1") && text(&list.stdout).contains("files/delete"));
    let listed: Json =
        serde_json::from_slice(&askgate(&url, &["asks", "list", "--json"]).stdout).expect("JSON");
    assert_eq!(listed["asks"][0]["id"], "a1");

    let wrong = askgate_as(
        &url,
        ALICE,
        &[
            "asks",
            "answer",
            "a1",
            "--content",
            r#"{"confirm": true, "keep": 90}"#,
        ],
    );
    says(&wrong, 1, "Keep a backup for: 90 is too large");
    let row = store.ask("a1").await.expect("reads").expect("exists");
    assert_eq!(
        row.status,
        AskStatus::Pending,
        "a refused answer is not applied"
    );

    let right = askgate_as(
        &url,
        ALICE,
        &["asks", "answer", "a1", "--content", r#"{"confirm": true}"#],
    );
    says(&right, 0, "");
    let row = store.ask("a1").await.expect("reads").expect("exists");
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(
        (row.answered_by.as_deref(), row.answered_via.as_deref()),
        (Some("alice"), Some("cli"))
    );
    let outcome = row.outcome.expect("an outcome");
    assert_eq!(outcome["values"]["keep"]["source"], "defaulted");

    let again = askgate_as(&url, ALICE, &["asks", "decline", "a1"]);
    says(&again, 1, "already answered");

    settled_it_is_listed_as_the_inbox_lists_it(&url);
}

#[tokio::test]
async fn a_form_is_declined_and_only_a_question_set_is_skipped() {
    let (_dir, url) = store_url();
    let store = park(&url, "f1", form_request()).await;
    park(&url, "q1", set_request()).await;

    let skip_form = askgate_as(&url, ALICE, &["asks", "skip", "f1"]);
    says(&skip_form, 1, "skip is for question sets");
    assert_eq!(
        askgate_as(&url, ALICE, &["asks", "decline", "f1"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        store
            .ask("f1")
            .await
            .expect("reads")
            .expect("exists")
            .status,
        AskStatus::Declined
    );

    assert_eq!(
        askgate_as(&url, ALICE, &["asks", "skip", "q1"])
            .status
            .code(),
        Some(0)
    );
    let row = store.ask("q1").await.expect("reads").expect("exists");
    assert_eq!(row.status, AskStatus::Skipped);
    assert_eq!(row.outcome.expect("an outcome")["skipped"], true);
}

#[tokio::test]
async fn answering_without_a_credential_is_refused_and_the_ask_stays_pending() {
    let (_dir, url) = store_url();
    let store = park(&url, "a1", form_request()).await;
    let config = config(&url);
    let content = r#"{"confirm": true, "keep": 3}"#;
    for verb in ["answer", "decline"] {
        let mut args = vec!["asks", verb, "a1"];
        if verb == "answer" {
            args.extend(["--content", content]);
        }
        let refused = run(&url, Some(&config), None, &args);
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
        let said = text(&refused.stderr);
        assert_eq!(
            said.trim(),
            format!(
                "askgate: `askgate asks {verb}` needs a person's credential: set ASKGATE_TOKEN \
                 to your inbox token, or run it in a terminal to be asked for it"
            )
        );
    }
    // With no config there is nobody to answer as, whatever is set.
    let bare = askgate(&url, &["asks", "answer", "a1", "--content", content]);
    says(&bare, 1, "nobody to answer as");
    assert_eq!(status_of(&store, "a1").await, AskStatus::Pending);
}

#[tokio::test]
async fn a_persons_token_settles_the_ask_and_records_that_person() {
    let (_dir, url) = store_url();
    let store = park(&url, "a1", form_request()).await;
    let answered = askgate_as(
        &url,
        ALICE,
        &[
            "asks",
            "answer",
            "a1",
            "--content",
            r#"{"confirm": true}"#,
            "--json",
        ],
    );
    says(&answered, 0, "");
    let row = store.ask("a1").await.expect("reads").expect("exists");
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(row.answered_by.as_deref(), Some("alice"));
    assert_eq!(row.answered_via.as_deref(), Some("cli"));
    assert!(
        !text(&answered.stdout).contains(ALICE),
        "the token is never printed"
    );
}

#[tokio::test]
async fn a_wrong_token_or_an_agents_is_refused_alike() {
    let (_dir, url) = store_url();
    let store = park(&url, "a1", form_request()).await;
    let mut said = Vec::new();
    for token in [
        "not-anyones-token-0123456789",
        AGENT,
        "alice-token-0123456789abcdeX",
    ] {
        let refused = askgate_as(&url, token, &["asks", "decline", "a1"]);
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
        let stderr = text(&refused.stderr);
        assert!(
            !stderr.contains(token),
            "the token is never echoed: {stderr}"
        );
        said.push(stderr);
    }
    assert!(
        said.iter().all(|s| *s == said[0]),
        "nothing says which part was wrong: {said:?}"
    );
    assert!(said[0].contains("no person's credential"), "{}", said[0]);
    assert_eq!(status_of(&store, "a1").await, AskStatus::Pending);
}

#[tokio::test]
async fn a_person_who_does_not_answer_for_the_asks_principal_is_refused() {
    let (_dir, url) = store_url();
    let store = park(&url, "a1", form_request()).await;
    let refused = askgate_as(
        &url,
        BOB,
        &["asks", "answer", "a1", "--content", r#"{"confirm": true}"#],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert_eq!(
        text(&refused.stderr).trim(),
        "askgate: the person \"bob\" may not answer ask a1: it is for the principal \"alice\", \
         which is not in their answers_for; nothing was changed"
    );
    assert_eq!(status_of(&store, "a1").await, AskStatus::Pending);
}

#[tokio::test]
async fn the_generated_operator_token_answers_as_the_operator() {
    use sha2::Digest;
    let (_dir, url) = store_url();
    let store = park(&url, "a1", form_request()).await;
    // What the inbox keeps of the token it generated: its SHA-256, beside
    // the store's key.
    let token = "generated-operator-token-0123456789abcdef";
    let digest: String = sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let key = format!("{}.key.inbox", db_path(&url).display());
    std::fs::write(&key, format!("{digest}\n")).expect("writes the digest");
    let answered = run(&url, None, Some(token), &["asks", "decline", "a1"]);
    says(&answered, 0, "");
    let row = store.ask("a1").await.expect("reads").expect("exists");
    assert_eq!(
        (row.status, row.answered_by.as_deref()),
        (AskStatus::Declined, Some("operator"))
    );
}

#[tokio::test]
async fn the_old_as_flag_is_gone() {
    let (_dir, url) = store_url();
    let store = park(&url, "a1", form_request()).await;
    let old = askgate_as(&url, ALICE, &["asks", "decline", "a1", "--as", "mallory"]);
    assert_eq!(old.status.code(), Some(2), "a usage error");
    assert!(
        text(&old.stderr).contains("'--as'"),
        "{}",
        text(&old.stderr)
    );
    assert_eq!(status_of(&store, "a1").await, AskStatus::Pending);
}

#[tokio::test]
async fn the_config_names_the_store_for_asks_and_audit() {
    let (_dir, url) = store_url();
    let config = config(&url);
    park(&url, "a1", form_request()).await.close().await;
    let listed = Command::new(binaries!().askgate)
        .args(["asks", "list", "--json", "--config"])
        .arg(&config)
        .env_remove("ASKGATE_STORE")
        .output()
        .expect("runs");
    says(&listed, 0, "");
    let listed: Json = serde_json::from_slice(&listed.stdout).expect("JSON");
    assert_eq!(listed["asks"][0]["id"], "a1", "the config's store was read");
    let verified = Command::new(binaries!().askgate)
        .args(["audit", "verify", "--structure", "--json", "--config"])
        .arg(&config)
        .env_remove("ASKGATE_STORE")
        .output()
        .expect("runs");
    let verification: Json = serde_json::from_slice(&verified.stdout).expect("JSON");
    assert_eq!(verification["entries"], 0);
}

#[tokio::test]
async fn audit_verify_says_whether_the_chain_holds_and_where_it_breaks() {
    let (_dir, url) = store_url();
    let store = Store::open(&url).await.expect("opens");
    for tool in ["a", "b", "c"] {
        store
            .append_audit(&AuditEntry {
                answered_by: Some("alice".into()),
                answered_via: Some("mcp".into()),
                ..askgate_testkit::audit_entry(at(), "files", tool, Decision::Blocked)
            })
            .await
            .expect("appends");
    }
    // No deployment key beside this store (no gateway ever ran on it):
    // the head's signature cannot be checked, and verify says so rather
    // than pass; --structure checks the links alone.
    let keyless = askgate(&url, &["audit", "verify"]);
    assert_eq!(keyless.status.code(), Some(2), "{keyless:?}");
    assert!(
        text(&keyless.stderr).contains("no deployment key")
            && text(&keyless.stderr).contains("--structure"),
        "{}",
        text(&keyless.stderr)
    );
    let intact = askgate(&url, &["audit", "verify", "--structure"]);
    says(&intact, 0, "");
    assert!(
        text(&intact.stdout).contains("intact in structure: 3 entries")
            && text(&intact.stdout).contains("signature was not checked"),
        "{}",
        text(&intact.stdout)
    );
    let list = askgate(&url, &["audit", "list", "--json"]);
    let entries: Json = serde_json::from_slice(&list.stdout).expect("JSON");
    assert_eq!(entries.as_array().map(Vec::len), Some(3));

    let pool = sqlx::sqlite::SqlitePool::connect(&url)
        .await
        .expect("connects");
    sqlx::query(
        "UPDATE audit SET entry = replace(entry, 'blocked', 'auto_approved') WHERE seq = 2",
    )
    .execute(&pool)
    .await
    .expect("tampers");
    let broken = askgate(&url, &["audit", "verify", "--structure"]);
    assert_eq!(broken.status.code(), Some(1));
    assert!(
        text(&broken.stdout).contains("entry 2 was edited"),
        "{}",
        text(&broken.stdout)
    );
}

#[test]
fn an_unknown_store_url_is_malformed_input() {
    let output = askgate("mysql://localhost/x", &["asks", "list"]);
    says(&output, 2, "expected sqlite://PATH or postgres://");
}

/// Once a1 is answered: no longer pending; listed among the settled ones,
/// narrowed by server and risk; a status filter that is not one is
/// refused; shown with its audit.
fn settled_it_is_listed_as_the_inbox_lists_it(url: &str) {
    let pending: Json =
        serde_json::from_slice(&askgate(url, &["asks", "list", "--json"]).stdout).expect("JSON");
    assert_eq!(pending["asks"], json!([]), "a1 is no longer pending");
    let settled: Json = serde_json::from_slice(
        &askgate(
            url,
            &[
                "asks",
                "list",
                "--json",
                "--status",
                "settled",
                "--server",
                "files",
                "--risk",
                "destructive",
            ],
        )
        .stdout,
    )
    .expect("JSON");
    assert_eq!(settled["asks"][0]["id"], "a1");
    let elsewhere: Json = serde_json::from_slice(
        &askgate(
            url,
            &[
                "asks", "list", "--json", "--status", "settled", "--server", "mail",
            ],
        )
        .stdout,
    )
    .expect("JSON");
    assert_eq!(elsewhere["asks"], json!([]));
    let bad = askgate(url, &["asks", "list", "--status", "sometime"]);
    says(&bad, 2, "expected pending, settled");
    let shown: Json =
        serde_json::from_slice(&askgate(url, &["asks", "show", "a1", "--json"]).stdout)
            .expect("JSON");
    assert_eq!(shown["status"], "answered");
    assert!(shown["audit"].is_array());
}

#[tokio::test]
async fn an_ask_past_its_expiry_is_shown_expired_and_is_not_answered() {
    let (_dir, url) = store_url();
    let store = Store::open(&url).await.expect("opens");
    let now = Timestamp::now();
    store
        .park(&NewAsk {
            expires_at: Some(now - jiff::SignedDuration::from_secs(60)),
            ..askgate_testkit::new_ask(
                "late",
                "alice",
                form_request(),
                now - jiff::SignedDuration::from_secs(120),
            )
        })
        .await
        .expect("parks");

    let listed: Json =
        serde_json::from_slice(&askgate(&url, &["asks", "list", "--json"]).stdout).expect("JSON");
    let pending = listed["asks"]
        .as_array()
        .expect("asks")
        .iter()
        .any(|ask| ask["id"] == "late" && ask["status"] == "pending");
    assert!(
        !pending,
        "an ask past its time is not listed as pending: {listed}"
    );
    let shown: Json =
        serde_json::from_slice(&askgate(&url, &["asks", "show", "late", "--json"]).stdout)
            .expect("JSON");
    assert_eq!(shown["status"], "expired", "{shown}");
    let late = askgate_as(
        &url,
        ALICE,
        &[
            "asks",
            "answer",
            "late",
            "--content",
            r#"{"confirm": true}"#,
        ],
    );
    assert_ne!(late.status.code(), Some(0), "a late answer is refused");
    assert_eq!(status_of(&store, "late").await, AskStatus::Expired);
    let row = store.ask("late").await.expect("reads").expect("exists");
    assert!(row.reply.is_none(), "no answer, no default was applied");
}

#[tokio::test]
async fn a_checkpoint_shows_the_newest_entries_were_deleted_where_the_chain_cannot() {
    let (dir, url) = store_url();
    std::fs::write(askgate_gateway::keys::key_path(&url), [9u8; 32]).expect("a key");
    let store = Store::open(&url).await.expect("opens");
    // As a gateway on the deployment's key writes it: the head signed.
    store.sign_audit_head(&[9u8; 32]);
    let append = |tool: &'static str| {
        let store = store.clone();
        async move {
            store
                .append_audit(&askgate_testkit::audit_entry(
                    at(),
                    "files",
                    tool,
                    Decision::Blocked,
                ))
                .await
                .expect("appends");
        }
    };
    for tool in ["a", "b", "c"] {
        append(tool).await;
    }
    let exported = askgate(&url, &["audit", "export"]);
    says(&exported, 0, "");
    let checkpoint = dir.write("checkpoint.json", &text(&exported.stdout));
    let checkpoint = checkpoint.to_str().expect("utf-8");
    append("d").await;
    let holds = askgate(&url, &["audit", "verify", "--checkpoint", checkpoint]);
    says(&holds, 0, "");
    assert!(
        text(&holds.stdout).contains("holds the checkpoint"),
        "{}",
        text(&holds.stdout)
    );

    // The newest entries deleted: the chain's head record names entry 4,
    // so the chain alone shows the cut.
    let pool = sqlx::sqlite::SqlitePool::connect(&url)
        .await
        .expect("connects");
    let hash_of = |seq: i64| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT hash FROM audit WHERE seq = $1")
                .bind(seq)
                .fetch_one(&pool)
                .await
                .expect("reads")
        }
    };
    let second = hash_of(2).await;
    sqlx::query("DELETE FROM audit WHERE seq >= 3")
        .execute(&pool)
        .await
        .expect("deletes");
    let alone = askgate(&url, &["audit", "verify"]);
    assert_eq!(alone.status.code(), Some(1), "{alone:?}");
    assert!(
        text(&alone.stdout)
            .contains("the chain is cut: it ends at entry 2, and its head record names entry 4"),
        "{}",
        text(&alone.stdout)
    );
    // The head record deleted too: that shows.
    sqlx::query("DELETE FROM audit_head")
        .execute(&pool)
        .await
        .expect("deletes");
    let headless = askgate(&url, &["audit", "verify"]);
    assert_eq!(headless.status.code(), Some(1), "{headless:?}");
    assert!(
        text(&headless.stdout).contains("head record is missing"),
        "{}",
        text(&headless.stdout)
    );
    // A head record put back by hand to match the cut chain, unsigned:
    // named, since the deployment's key is known — and the checkpoint,
    // kept elsewhere, shows the cut too.
    sqlx::query("INSERT INTO audit_head (id, seq, hash, tag) VALUES (1, 2, $1, NULL)")
        .bind(&second)
        .execute(&pool)
        .await
        .expect("inserts");
    let unsigned = askgate(&url, &["audit", "verify"]);
    assert_eq!(unsigned.status.code(), Some(1), "{unsigned:?}");
    assert!(
        text(&unsigned.stdout).contains("head record is not signed"),
        "{}",
        text(&unsigned.stdout)
    );
    // Someone with the key and the database rewinds the schema, so that a
    // process migrating it records and signs a head over the cut chain:
    // the chain alone holds, and only the checkpoint, kept elsewhere,
    // shows the cut.
    sqlx::raw_sql("DROP TABLE audit_head; UPDATE askgate_schema SET version = 10")
        .execute(&pool)
        .await
        .expect("rewinds");
    let rewound = Store::open(&url).await.expect("migrates again");
    assert!(
        rewound
            .sign_seeded_audit_head(&[9u8; 32])
            .await
            .expect("signs")
    );
    rewound.close().await;
    says(&askgate(&url, &["audit", "verify"]), 0, "");
    let cut = askgate(&url, &["audit", "verify", "--checkpoint", checkpoint]);
    assert_eq!(cut.status.code(), Some(1), "{cut:?}");
    assert!(
        text(&cut.stdout).contains("audit chain cut: it ends at entry 2"),
        "{}",
        text(&cut.stdout)
    );

    // A checkpoint changed by hand is refused.
    let forged = std::fs::read_to_string(checkpoint)
        .expect("reads")
        .replace("\"seq\": 3", "\"seq\": 0");
    let forged = dir.write("forged.json", &forged);
    let refused = askgate(
        &url,
        &[
            "audit",
            "verify",
            "--checkpoint",
            forged.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stdout).contains("not signed with this deployment's key"),
        "{}",
        text(&refused.stdout)
    );
    // All of them.
    sqlx::query("DELETE FROM audit")
        .execute(&pool)
        .await
        .expect("deletes");
    let emptied = askgate(&url, &["audit", "verify"]);
    assert_eq!(emptied.status.code(), Some(1), "{emptied:?}");
    assert!(
        text(&emptied.stdout).contains("it ends at entry 0"),
        "{}",
        text(&emptied.stdout)
    );
    pool.close().await;
}

#[cfg(unix)]
#[test]
fn the_default_store_and_its_folder_are_their_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let home = Scratch::new();
    let form = home.path().join("form.json");
    std::fs::write(
        &form,
        r#"{"message": "Go?", "fields": [{"id": "go", "title": "Go", "type": "boolean"}]}"#,
    )
    .expect("writes the form");
    let run = |args: &[&str]| {
        Command::new(binaries!().askgate)
            .args(args)
            .env("XDG_DATA_HOME", home.path())
            .env("HOME", home.path())
            .env_remove("ASKGATE_STORE")
            .env("ASKGATE_LOG", "warn")
            .stdin(Stdio::null())
            .output()
            .expect("runs")
    };
    let folder = home.path().join("askgate");
    // Listing makes nothing; the first ask makes the store.
    says(&run(&["asks", "list"]), 0, "");
    assert!(
        !folder.join("askgate.db").exists(),
        "a listing made a store"
    );
    let form = form.display().to_string();
    says(&run(&["ask", &form, "--json"]), 0, "");
    for (path, kind) in [
        (folder.clone(), "folder"),
        (folder.join("askgate.db"), "store"),
    ] {
        let mode = std::fs::metadata(&path).expect("made").permissions().mode();
        assert_eq!(mode & 0o077, 0, "the {kind} {}: {mode:o}", path.display());
    }
}

#[cfg(unix)]
#[tokio::test]
async fn an_existing_store_others_may_read_is_warned_about_and_one_they_may_write_refused() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, url) = store_url();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    park(&url, "a1", form_request()).await.close().await;
    let file = db_path(&url);
    let chmod = |mode| {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    chmod(0o644);
    let listed = askgate(&url, &["asks", "list"]);
    let stderr = text(&listed.stderr);
    assert_eq!(listed.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("readable by others")
            && stderr.contains(&file.display().to_string())
            && stderr.contains("0644")
            && stderr.contains("chmod 600"),
        "{stderr}"
    );
    assert!(text(&listed.stdout).contains("a1"), "still listed");
    chmod(0o666);
    let refused = askgate(&url, &["audit", "verify", "--structure"]);
    says(
        &refused,
        2,
        &format!(
            "{}: others than its owner may write this store file (mode 0666)",
            file.display()
        ),
    );
    assert!(text(&refused.stderr).contains("chmod 600"));
}
