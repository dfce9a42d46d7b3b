//! `askgate asks ...` as a person at a terminal uses it (issue 21): a
//! confirmation approved or denied by name, a table with a header and a
//! sentence when there is nothing, a store never made by a command that
//! only reads, filters checked, completions, and an example in every help.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use askgate_core::{Ask, Call, Form, Risk, confirmation_form};
use askgate_store::{AskStatus, NewAsk, Store};
use askgate_testkit::{Scratch, binaries};
use jiff::Timestamp;
use serde_json::{Value as Json, json};

const ALICE: &str = "alice-token-0123456789abcdef";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `askgate ARGS` with no terminal, as alice when `token` is set, over the
/// config beside the store.
fn askgate(dir: &Scratch, token: Option<&str>, args: &[&str]) -> Output {
    let config = dir.path().join("askgate.toml");
    std::fs::write(
        &config,
        format!(
            "store = {:?}\n\n[[upstreams]]\nname = \"files\"\ncommand = \"true\"\n\n\
             [[people]]\nname = \"alice\"\ntoken = {ALICE:?}\nanswers_for = [\"alice\"]\n",
            dir.store_url()
        ),
    )
    .expect("writes the config");
    let mut command = Command::new(binaries!().askgate);
    command
        .args(args)
        .arg("--config")
        .arg(&config)
        .env_remove("ASKGATE_TOKEN")
        .env_remove("ASKGATE_STORE")
        .stdin(Stdio::null());
    if let Some(token) = token {
        command.env("ASKGATE_TOKEN", token);
    }
    command.output().expect("askgate runs")
}

fn db_file(dir: &Scratch) -> PathBuf {
    PathBuf::from(dir.store_url().trim_start_matches("sqlite://"))
}

fn confirmation() -> Json {
    let call = Call {
        server: "files",
        tool: "delete",
        risk: Risk::Destructive,
        why: None,
        preview: None,
        may_have_run: None,
    };
    let ask = Ask::new(confirmation_form(&call)).expect("askable");
    json!({"kind": "form", "ask": ask.to_record()})
}

fn two_fields() -> Json {
    let form: Form = serde_json::from_value(json!({
        "message": "Deploy?",
        "fields": [
            {"id": "replicas", "title": "Replicas", "type": "integer", "minimum": 1, "maximum": 5},
            {"id": "note", "title": "Note", "type": "text"}
        ]
    }))
    .expect("a form");
    json!({"kind": "form", "ask": Ask::new(form).expect("askable").to_record()})
}

async fn park(dir: &Scratch, id: &str, request: Json, second: i64) -> Store {
    let store = Store::open(&dir.store_url()).await.expect("opens");
    let at = Timestamp::from_second(1_800_000_000 + second).expect("in range");
    store
        .park(&NewAsk {
            server: Some("files".into()),
            tool: Some("delete".into()),
            risk: Some("destructive".into()),
            ..askgate_testkit::new_ask(id, "alice", request, at)
        })
        .await
        .expect("parks");
    store
}

#[tokio::test]
async fn a_confirmation_is_approved_or_denied_by_name_and_a_form_is_not() {
    let dir = Scratch::new();
    let store = park(&dir, "c1", confirmation(), 0).await;
    park(&dir, "c2", confirmation(), 1).await;
    park(&dir, "f1", two_fields(), 2).await;
    let approved = askgate(&dir, Some(ALICE), &["asks", "approve", "c1"]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        text(&approved.stderr)
    );
    let row = store.ask("c1").await.expect("reads").expect("exists");
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(
        row.reply.as_ref().map(|r| r["content"]["confirm"].clone()),
        Some(json!(true))
    );
    assert_eq!(
        (row.answered_by.as_deref(), row.answered_via.as_deref()),
        (Some("alice"), Some("cli"))
    );
    let denied = askgate(&dir, Some(ALICE), &["asks", "deny", "c2"]);
    assert_eq!(denied.status.code(), Some(0), "{}", text(&denied.stderr));
    assert_eq!(
        store
            .ask("c2")
            .await
            .expect("reads")
            .expect("exists")
            .status,
        AskStatus::Declined
    );
    let not_one = askgate(&dir, Some(ALICE), &["asks", "approve", "f1"]);
    assert_eq!(not_one.status.code(), Some(1));
    assert!(
        text(&not_one.stderr).contains("ask f1 is not a confirmation")
            && text(&not_one.stderr).contains("askgate asks answer f1"),
        "{}",
        text(&not_one.stderr)
    );
    // Without a terminal and without --content, nothing to prompt on.
    let blind = askgate(&dir, Some(ALICE), &["asks", "answer", "f1"]);
    assert_eq!(blind.status.code(), Some(2));
    assert!(text(&blind.stderr).contains("--content is needed when stdin is not a terminal"));
    assert_eq!(
        store
            .ask("f1")
            .await
            .expect("reads")
            .expect("exists")
            .status,
        AskStatus::Pending
    );
    // Approving needs a person, as answering does.
    park(&dir, "c3", confirmation(), 3).await;
    let nobody = askgate(&dir, None, &["asks", "approve", "c3"]);
    assert_eq!(nobody.status.code(), Some(1), "{}", text(&nobody.stderr));
    assert_eq!(
        store
            .ask("c3")
            .await
            .expect("reads")
            .expect("exists")
            .status,
        AskStatus::Pending
    );
}

#[tokio::test]
async fn the_list_is_a_table_with_a_header_and_says_when_there_is_nothing() {
    let dir = Scratch::new();
    let store = Store::open(&dir.store_url()).await.expect("opens");
    let empty = askgate(&dir, None, &["asks", "list"]);
    assert_eq!(empty.status.code(), Some(0));
    assert_eq!(text(&empty.stdout), "No pending asks.\n");
    let filtered = askgate(&dir, None, &["asks", "list", "--server", "github"]);
    assert_eq!(
        text(&filtered.stdout),
        "No pending asks match these filters.\n"
    );
    park(&dir, "ask-short", confirmation(), 0).await;
    park(&dir, "ask-a-longer-id", two_fields(), 60).await;
    let listed = text(&askgate(&dir, None, &["asks", "list"]).stdout);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 3, "{listed}");
    assert!(
        lines[0].starts_with("ID  ") && lines[0].contains("STATUS"),
        "{listed}"
    );
    // Aligned: every column starts where its header does.
    let column = lines[0].find("STATUS").expect("a STATUS column");
    for line in &lines[1..] {
        assert_eq!(&line[column..column + 7], "pending", "{listed}");
        assert!(
            line.contains("files/delete") && line.contains("destructive"),
            "{line}"
        );
    }
    assert!(
        lines[1].starts_with("ask-a-longer-id"),
        "newest first: {listed}"
    );
    store.close().await;
}

#[test]
fn a_command_that_only_reads_never_makes_a_store() {
    let dir = Scratch::new();
    let file = db_file(&dir);
    let listed = askgate(&dir, None, &["asks", "list"]);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    assert!(
        text(&listed.stdout).starts_with("No pending asks (no store at ")
            && text(&listed.stdout).contains(&file.display().to_string()),
        "{}",
        text(&listed.stdout)
    );
    let json: Json =
        serde_json::from_slice(&askgate(&dir, None, &["asks", "list", "--json"]).stdout)
            .expect("JSON");
    assert_eq!(json, json!({"asks": [], "next": null}));
    let shown = askgate(&dir, None, &["asks", "show", "a1"]);
    assert_eq!(shown.status.code(), Some(1));
    assert!(
        text(&shown.stderr).contains("no ask a1: no store at"),
        "{}",
        text(&shown.stderr)
    );
    let verified = askgate(&dir, None, &["audit", "verify", "--structure"]);
    assert_eq!(verified.status.code(), Some(2));
    let answered = askgate(&dir, Some(ALICE), &["asks", "approve", "a1"]);
    assert_eq!(answered.status.code(), Some(1));
    assert!(!file.exists(), "{} was made", file.display());
}

#[test]
fn filters_are_checked_and_say_what_they_take() {
    let dir = Scratch::new();
    for (args, expected) in [
        (
            &["asks", "list", "--risk", "dangerous"][..],
            "expected read, low_write, medium_write, high_write or destructive",
        ),
        (
            &["asks", "list", "--limit", "0"][..],
            "0 is not in 1..=1000",
        ),
        (
            &["asks", "list", "--status", "done"][..],
            "expected pending, settled, answered",
        ),
    ] {
        let refused = askgate(&dir, None, args);
        assert_eq!(refused.status.code(), Some(2), "{args:?}");
        assert!(
            text(&refused.stderr).contains(expected),
            "{args:?}: {}",
            text(&refused.stderr)
        );
    }
}

#[test]
fn completions_are_printed_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "_askgate()"),
        ("zsh", "#compdef askgate"),
        ("fish", "complete -c askgate"),
    ] {
        let printed = Command::new(binaries!().askgate)
            .args(["completions", shell])
            .output()
            .expect("runs");
        assert_eq!(printed.status.code(), Some(0), "{shell}");
        let script = text(&printed.stdout);
        assert!(
            script.contains(marker) && script.contains("approve"),
            "{shell}: {}",
            &script[..script.len().min(200)]
        );
    }
}

#[test]
fn every_command_shows_an_example_in_its_help() {
    let commands: &[&[&str]] = &[
        &["ask"],
        &["init"],
        &["gateway"],
        &["inbox"],
        &["tools"],
        &["completions"],
        &["form", "schema"],
        &["form", "check"],
        &["asks", "list"],
        &["asks", "show"],
        &["asks", "answer"],
        &["asks", "approve"],
        &["asks", "deny"],
        &["asks", "decline"],
        &["asks", "skip"],
        &["audit", "list"],
        &["audit", "verify"],
        &["audit", "export"],
        &["key", "show"],
        &["key", "rotate"],
    ];
    for command in commands {
        let help = Command::new(binaries!().askgate)
            .args(*command)
            .arg("--help")
            .output()
            .expect("runs");
        let said = text(&help.stdout);
        assert!(
            said.contains("Example"),
            "askgate {} --help has no example:\n{said}",
            command.join(" ")
        );
        assert!(said.contains("askgate "), "{said}");
    }
}

#[tokio::test]
async fn at_a_terminal_each_field_is_prompted_checked_as_typed_and_answered() {
    let dir = Scratch::new();
    let store = park(&dir, "f1", two_fields(), 0).await;
    park(&dir, "f2", two_fields(), 1).await;
    let config = dir.path().join("askgate.toml");
    // The config, as `askgate` above writes it.
    askgate(&dir, None, &["asks", "list"]);
    let at_terminal = |id: &str, input: &str| {
        askgate_testkit::terminal::typed(
            binaries!().askgate,
            &[
                "asks",
                "answer",
                id,
                "--config",
                &config.display().to_string(),
            ],
            &[("ASKGATE_TOKEN", ALICE)],
            input,
        )
    };
    // 9 is past the maximum: said, and asked again.
    let Some(answered) = at_terminal("f1", "9\n3\nship it\n") else {
        return;
    };
    let shown = text(&answered.stdout);
    assert_eq!(answered.status.code(), Some(0), "{shown}");
    assert!(shown.contains("Replicas (required)"), "{shown}");
    assert!(shown.contains("too large: at most 5"), "{shown}");
    let row = store.ask("f1").await.expect("reads").expect("exists");
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(
        row.reply.as_ref().map(|r| r["content"].clone()),
        Some(json!({"replicas": 3, "note": "ship it"}))
    );
    assert_eq!(row.answered_via.as_deref(), Some("cli"));
    // !decline says no.
    let declined = at_terminal("f2", "!decline\n").expect("script is there");
    assert_eq!(
        declined.status.code(),
        Some(0),
        "{}",
        text(&declined.stdout)
    );
    let row = store.ask("f2").await.expect("reads").expect("exists");
    assert_eq!(row.status, AskStatus::Declined);
}
