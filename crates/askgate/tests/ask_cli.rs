//! `askgate ask`: the real binary parks an ask, another `askgate` process
//! answers it, and the waiting one prints the outcome with the exit code
//! of that outcome. SQLite always; PostgreSQL when
//! `ASKGATE_TEST_POSTGRES_URL` is set.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value as Json, json};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A fresh directory with a SQLite store URL and the form files.
struct Scratch {
    dir: PathBuf,
    store: String,
}

impl Scratch {
    fn new() -> Scratch {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("askgate-ask-cli-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let store = format!("sqlite://{}", dir.join("askgate.db").display());
        Scratch { dir, store }
    }

    fn file(&self, name: &str, body: &str) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, body).expect("writes the file");
        path
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
}

fn askgate() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_askgate"));
    command
        .env_remove("ASKGATE_STORE")
        .env_remove("ASKGATE_WEBHOOK");
    command
}

/// `askgate ask FORM --wait ...` in the background, and the id it parked
/// (read from the line on stderr that names it).
fn ask_and_wait(store: &str, form: &Path, extra: &[&str]) -> (Child, String) {
    let mut child = askgate()
        .args(["ask", "--store", store, "--wait"])
        .arg(form)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askgate ask starts");
    let stderr = child.stderr.take().expect("piped");
    let mut lines = BufReader::new(stderr).lines();
    let id = loop {
        let line = lines
            .next()
            .expect("askgate ask says which ask it parked")
            .expect("reads stderr");
        if let Some(rest) = line.strip_prefix("askgate: ask ") {
            break rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
        }
    };
    // Keep draining stderr so the child never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    (child, id)
}

/// The token of the person who answers here: alice, for every principal.
const ALICE: &str = "alice-person-token-0123456789";

/// A config over `store` naming the person alice.
fn people_config(store: &str) -> PathBuf {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let path = std::env::temp_dir().join(format!(
        "askgate-ask-cli-people-{}-{n}.toml",
        std::process::id()
    ));
    std::fs::write(
        &path,
        format!(
            "store = {store:?}\n\n[[upstreams]]\nname = \"none\"\ncommand = \"true\"\n\n\
             [[people]]\nname = \"alice\"\ntoken = {ALICE:?}\nanswers_for = [\"*\"]\n"
        ),
    )
    .expect("writes the config");
    path
}

/// `askgate asks ARGS` over `store`, as the person alice.
fn act(store: &str, args: &[&str]) -> Output {
    askgate()
        .args(["asks", "--store", store, "--config"])
        .arg(people_config(store))
        .args(args)
        .env("ASKGATE_TOKEN", ALICE)
        .stdin(Stdio::null())
        .output()
        .expect("askgate asks runs")
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
    let output = child.wait_with_output().expect("askgate ask ends");
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
    let scratch = Scratch::new();
    answer_settles_the_waiting_ask(&scratch.store, &scratch.deploy_form());
}

#[test]
fn a_decline_ends_the_wait_with_its_own_exit_code() {
    let scratch = Scratch::new();
    let (child, id) = ask_and_wait(&scratch.store, &scratch.deploy_form(), &[]);
    assert!(act(&scratch.store, &["decline", &id]).status.success());
    let output = child.wait_with_output().expect("ends");
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    assert_eq!(outcome_of(&output)["status"], "declined");
}

#[test]
fn a_skipped_question_set_ends_the_wait_with_its_own_exit_code_and_the_defaults() {
    let scratch = Scratch::new();
    let (child, id) = ask_and_wait(&scratch.store, &scratch.question_set(), &[]);
    assert!(act(&scratch.store, &["skip", &id]).status.success());
    let output = child.wait_with_output().expect("ends");
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
    let scratch = Scratch::new();
    let output = askgate()
        .args([
            "ask",
            "--store",
            &scratch.store,
            "--wait",
            "--timeout",
            "1s",
        ])
        .arg(scratch.deploy_form())
        .output()
        .expect("runs");
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
    let scratch = Scratch::new();
    let output = askgate()
        .args(["ask", "--store", &scratch.store, "--json"])
        .args([
            "--inbox-url",
            "https://inbox.example/team/",
            "--risk",
            "high_write",
        ])
        .arg(scratch.deploy_form())
        .output()
        .expect("runs");
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
    let scratch = Scratch::new();
    let form = scratch.deploy_form();
    let park = || {
        let output = askgate()
            .args([
                "ask",
                "--store",
                &scratch.store,
                "--json",
                "--key",
                "deploy-42",
            ])
            .arg(&form)
            .output()
            .expect("runs");
        assert!(output.status.success(), "{output:?}");
        outcome_of(&output)["id"].clone()
    };
    assert_eq!(park(), park());
}

#[test]
fn a_malformed_form_file_exits_2_naming_the_file_and_the_problem() {
    let scratch = Scratch::new();
    let broken = scratch.file("broken.json", "{\"message\": \"Deploy?\",\n \"fields\": [}");
    let output = askgate()
        .args(["ask", "--store", &scratch.store])
        .arg(&broken)
        .output()
        .expect("runs");
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
    let output = askgate()
        .args(["ask", "--store", &scratch.store])
        .arg(&wrong)
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&wrong.display().to_string()), "{stderr}");
    let pending = outcome_of(&act(&scratch.store, &["list", "--json"]));
    assert_eq!(pending["asks"], json!([]), "nothing was parked");
}

#[test]
fn a_timeout_that_is_not_a_duration_is_refused() {
    let scratch = Scratch::new();
    let output = askgate()
        .args(["ask", "--store", &scratch.store, "--timeout", "soon"])
        .arg(scratch.deploy_form())
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("\"soon\" is not a duration"), "{stderr}");
}

/// A local webhook receiver recording every body.
async fn receiver() -> (String, Arc<Mutex<Vec<Json>>>) {
    let posts: Arc<Mutex<Vec<Json>>> = Arc::default();
    let recorded = Arc::clone(&posts);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<Json>| {
            let recorded = Arc::clone(&recorded);
            async move {
                recorded.lock().expect("not poisoned").push(body);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, posts)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_webhook_hears_of_the_ask_parked_and_settled_without_the_answer() {
    let (url, posts) = receiver().await;
    let scratch = Scratch::new();
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
        (id, child.wait_with_output().expect("ends"))
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
    let posts = posts.lock().expect("not poisoned").clone();
    let mut events: Vec<&str> = posts
        .iter()
        .map(|p| p["event"].as_str().unwrap_or(""))
        .collect();
    events.sort_unstable();
    assert_eq!(events, ["parked", "settled"], "{posts:?}");
    for post in &posts {
        assert_eq!(post["id"], id.as_str());
        assert_eq!(
            post["title"],
            "Approve the billing deploy, and pick the window"
        );
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
    let Ok(base) = std::env::var("ASKGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "notice: ASKGATE_TEST_POSTGRES_URL is not set; the PostgreSQL `askgate ask` test is skipped"
        );
        return;
    };
    let schema = format!(
        "askgate_askcli_{}_{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond()
    );
    let admin = sqlx::postgres::PgPool::connect(&base)
        .await
        .expect("PostgreSQL is reachable");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await
        .expect("creates a schema");
    let separator = if base.contains('?') { '&' } else { '?' };
    let store = format!("{base}{separator}options=-c%20search_path%3D{schema}");
    let scratch = Scratch::new();
    let form = scratch.deploy_form();
    tokio::task::spawn_blocking(move || answer_settles_the_waiting_ask(&store, &form))
        .await
        .expect("the PostgreSQL round passes");
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(&admin)
        .await;
}
