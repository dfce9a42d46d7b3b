//! `askgate ask`: the real binary parks an ask, another `askgate` process
//! answers it, and the waiting one prints the outcome with the exit code
//! of that outcome. SQLite always; PostgreSQL when
//! `ASKGATE_TEST_POSTGRES_URL` is set.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use askgate_testkit::gateway::{as_person, people_config};
use askgate_testkit::postgres::FreshSchema;
use askgate_testkit::process::Process;
use askgate_testkit::webhook::Receiver;
use askgate_testkit::{Scratch, binaries};
use serde_json::{Value as Json, json};

/// A fresh directory with a SQLite store URL and the form files.
struct Dir {
    scratch: Scratch,
    store: String,
}

impl Dir {
    fn new() -> Dir {
        let scratch = Scratch::new();
        let store = scratch.store_url();
        Dir { scratch, store }
    }

    fn file(&self, name: &str, body: &str) -> PathBuf {
        self.scratch.write(name, body)
    }

    /// The deploy form: approve, and pick the window.
    fn deploy_form(&self) -> PathBuf {
        self.file(
            "deploy.json",
            &json!({
                "message": "Approve the billing deploy, and pick the window",
                "fields": [
                    {"id": "confirm", "title": "Deploy", "type": "boolean", "default": true},
                    {"id": "window", "title": "Window", "type": "choice", "options": [
                        {"value": "tonight", "label": "Tonight"},
                        {"value": "tomorrow", "label": "Tomorrow morning"}
                    ]}
                ]
            })
            .to_string(),
        )
    }

    fn question_set(&self) -> PathBuf {
        self.file(
            "questions.json",
            &json!({
                "preamble": "Before the release:",
                "questions": [{"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
                    "options": [{"value": "staging", "label": "Staging"},
                                {"value": "prod", "label": "Production"}]}]
            })
            .to_string(),
        )
    }

    /// `askgate ask --store STORE ARGS FORM`, to its end.
    fn ask(&self, args: &[&str], form: &Path) -> Output {
        askgate()
            .args(["ask", "--store", &self.store])
            .args(args)
            .arg(form)
            .output()
            .expect("runs")
    }
}

fn askgate() -> Command {
    let mut command = Command::new(binaries!().askgate);
    command
        .env_remove("ASKGATE_STORE")
        .env_remove("ASKGATE_WEBHOOK");
    command
}

/// `askgate ask FORM --wait ...` in the background, and the id it parked
/// (read from the line on stderr that names it).
fn ask_and_wait(store: &str, form: &Path, extra: &[&str]) -> (Process, String) {
    let mut command = askgate();
    command
        .args(["ask", "--store", store, "--wait"])
        .arg(form)
        .args(extra)
        .stdout(Stdio::piped());
    let child = Process::spawn(command);
    let line = child
        .log
        .find_blocking("askgate ask says which ask it parked", |line| {
            line.starts_with("askgate: ask ")
        });
    let id = line
        .trim_start_matches("askgate: ask ")
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    (child, id)
}

/// The token of the person who answers here: alice, for every principal.
const ALICE: &str = "alice-person-token-0123456789";

/// `askgate asks ARGS` over `store`, as the person alice (a config over
/// `store` names her).
fn act(store: &str, args: &[&str]) -> Output {
    let dir = Scratch::new();
    let config = people_config(&dir, store, "alice", ALICE);
    let mut with_store = vec!["--store", store];
    with_store.extend(args);
    as_person(&binaries!().askgate, &config, ALICE, &with_store)
}

fn outcome_of(output: &Output) -> Json {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is the outcome as JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn answer_settles_the_waiting_ask(store: &str, form: &Path) {
    let (child, id) = ask_and_wait(store, form, &["--principal", "alice"]);
    let answered = act(
        store,
        &[
            "answer",
            &id,
            "--content",
            r#"{"confirm": true, "window": "tonight"}"#,
        ],
    );
    assert!(answered.status.success(), "{answered:?}");
    let output = child.finish();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let outcome = outcome_of(&output);
    assert_eq!(outcome["id"], id.as_str());
    assert_eq!(outcome["status"], "answered");
    assert_eq!(outcome["answered_by"], "alice");
    assert_eq!(outcome["answered_via"], "cli");
    assert_eq!(outcome["outcome"]["values"]["window"]["value"], "tonight");
}

#[test]
fn an_answer_from_another_process_ends_the_wait_with_the_outcome() {
    let scratch = Dir::new();
    answer_settles_the_waiting_ask(&scratch.store, &scratch.deploy_form());
}

#[test]
fn a_decline_ends_the_wait_with_its_own_exit_code() {
    let scratch = Dir::new();
    let (child, id) = ask_and_wait(&scratch.store, &scratch.deploy_form(), &[]);
    assert!(act(&scratch.store, &["decline", &id]).status.success());
    let output = child.finish();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    assert_eq!(outcome_of(&output)["status"], "declined");
}

#[test]
fn a_skipped_question_set_ends_the_wait_with_its_own_exit_code_and_the_defaults() {
    let scratch = Dir::new();
    let (child, id) = ask_and_wait(&scratch.store, &scratch.question_set(), &[]);
    assert!(act(&scratch.store, &["skip", &id]).status.success());
    let output = child.finish();
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    let outcome = outcome_of(&output);
    assert_eq!(outcome["status"], "skipped");
    assert!(
        outcome["outcome"].to_string().contains("staging"),
        "the pre-picked answer: {outcome}"
    );
}

#[test]
fn a_timeout_expires_the_ask_in_the_store_and_exits_expired() {
    let scratch = Dir::new();
    let output = scratch.ask(&["--wait", "--timeout", "1s"], &scratch.deploy_form());
    assert_eq!(output.status.code(), Some(5), "{output:?}");
    let outcome = outcome_of(&output);
    assert_eq!(outcome["status"], "expired");
    assert_eq!(outcome["outcome"], Json::Null, "expiry applies no default");
    let id = outcome["id"].as_str().expect("an id");
    let shown = act(&scratch.store, &["show", id, "--json"]);
    assert_eq!(outcome_of(&shown)["status"], "expired");
    let late = act(&scratch.store, &["decline", id]);
    assert_eq!(late.status.code(), Some(1), "a late answer is refused");
}

#[test]
fn without_wait_the_ask_is_parked_and_its_link_printed() {
    let scratch = Dir::new();
    let link = ["--json", "--inbox-url", "https://inbox.example/team/"];
    let output = scratch.ask(
        &[&link[..], &["--risk", "high_write"]].concat(),
        &scratch.deploy_form(),
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let parked = outcome_of(&output);
    let id = parked["id"].as_str().expect("an id");
    assert_eq!(parked["status"], "pending");
    assert_eq!(
        parked["link"],
        format!("https://inbox.example/team/asks/{id}").as_str()
    );
    let shown = outcome_of(&act(&scratch.store, &["show", id, "--json"]));
    assert_eq!(shown["status"], "pending");
    assert_eq!(shown["server"], "script");
    assert_eq!(shown["tool"], "deploy");
    assert_eq!(shown["risk"], "high_write");
}

#[test]
fn the_same_key_finds_the_same_ask() {
    let scratch = Dir::new();
    let form = scratch.deploy_form();
    let park = || {
        let output = scratch.ask(&["--json", "--key", "deploy-42"], &form);
        assert!(output.status.success(), "{output:?}");
        outcome_of(&output)["id"].clone()
    };
    assert_eq!(park(), park());
}

#[test]
fn a_malformed_form_file_exits_2_naming_the_file_and_the_problem() {
    let scratch = Dir::new();
    let broken = scratch.file("broken.json", "{\"message\": \"Deploy?\",\n \"fields\": [}");
    let output = scratch.ask(&[], &broken);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{}:2:", broken.display())) && stderr.contains("not valid JSON"),
        "{stderr}"
    );

    let wrong = scratch.file(
        "wrong.json",
        r#"{"message": "Deploy?", "fields": [{"id": "n", "title": "N", "type": "integer", "minimum": 5, "maximum": 1}]}"#,
    );
    let output = scratch.ask(&[], &wrong);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&wrong.display().to_string()), "{stderr}");
    let pending = outcome_of(&act(&scratch.store, &["list", "--json"]));
    assert_eq!(pending["asks"], json!([]), "nothing was parked");
}

#[test]
fn a_timeout_that_is_not_a_duration_is_refused() {
    let scratch = Dir::new();
    let output = scratch.ask(&["--timeout", "soon"], &scratch.deploy_form());
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("\"soon\" is not a duration"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_webhook_hears_of_the_ask_parked_and_settled_without_the_answer() {
    let receiver = Receiver::start().await;
    let url = receiver.url.clone();
    let scratch = Dir::new();
    let store = scratch.store.clone();
    let form = scratch.deploy_form();
    let ended = tokio::task::spawn_blocking(move || {
        let (child, id) = ask_and_wait(&store, &form, &["--webhook", &url]);
        let answered = act(
            &store,
            &[
                "answer",
                &id,
                "--content",
                r#"{"confirm": true, "window": "tomorrow"}"#,
            ],
        );
        assert!(answered.status.success(), "{answered:?}");
        (id, child.finish())
    });
    let (id, output) = ended.await.expect("joins");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let notified = &outcome_of(&output)["notified"];
    assert_eq!(
        notified,
        &json!([
            {"event": "parked", "delivered": true, "tries": 1, "status": 200},
            {"event": "settled", "delivered": true, "tries": 1, "status": 200}
        ]),
        "the report says which posts were made"
    );
    // `askgate ask` ends once its posts have ended.
    let posts = receiver.bodies();
    let mut events: Vec<&str> = posts
        .iter()
        .map(|p| p["event"].as_str().unwrap_or(""))
        .collect();
    events.sort_unstable();
    assert_eq!(events, ["parked", "settled"], "{posts:?}");
    for post in &posts {
        assert_eq!(post["id"], id.as_str());
        // askgate's words, not the form's message (a script's, or a
        // model's, words).
        assert_eq!(post["title"], "script asks for input (deploy)");
        assert!(
            !post.to_string().contains("tomorrow"),
            "no answer values: {post}"
        );
    }
    let settled = posts.iter().find(|p| p["event"] == "settled");
    assert_eq!(settled.expect("a settled post")["status"], "answered");
}

#[tokio::test]
async fn on_postgres_an_answer_from_another_process_ends_the_wait() {
    let Some(schema) = FreshSchema::create("the PostgreSQL `askgate ask` test").await else {
        return;
    };
    let store = schema.url().to_owned();
    let scratch = Dir::new();
    let form = scratch.deploy_form();
    tokio::task::spawn_blocking(move || answer_settles_the_waiting_ask(&store, &form))
        .await
        .expect("the PostgreSQL round passes");
}

#[test]
fn asks_show_never_prints_a_sensitive_fields_value() {
    let scratch = Dir::new();
    let form = scratch.file(
        "token.json",
        &json!({
            "message": "The deploy key, please",
            "fields": [
                {"id": "key", "title": "Deploy key", "type": "text", "sensitive": true},
                {"id": "note", "title": "Note", "type": "text"}
            ]
        })
        .to_string(),
    );
    let parked = outcome_of(&scratch.ask(&["--json"], &form));
    let id = parked["id"].as_str().expect("an id");
    let answered = act(
        &scratch.store,
        &[
            "answer",
            id,
            "--content",
            r#"{"key": "s3cr3t-deploy-key", "note": "for billing"}"#,
        ],
    );
    assert!(answered.status.success(), "{answered:?}");
    for args in [&["show", id, "--json"][..], &["show", id][..]] {
        let shown = act(&scratch.store, args);
        assert!(shown.status.success(), "{shown:?}");
        let stdout = String::from_utf8_lossy(&shown.stdout);
        assert!(
            !stdout.contains("s3cr3t"),
            "{args:?} printed the secret: {stdout}"
        );
        assert!(stdout.contains("(hidden)"), "{args:?}: {stdout}");
        assert!(
            stdout.contains("for billing"),
            "the rest is shown: {stdout}"
        );
    }
}
