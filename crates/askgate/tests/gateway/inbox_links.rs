//! Where an ask's message sends the person: the inbox the gateway serves,
//! or — its address taken — this deployment's own `askgate inbox` there;
//! never an inbox over another store. With none, no link: the person
//! answers with `askgate asks`.

use std::process::{Command, Stdio};

use askgate_testkit::process::Process;
use serde_json::json;

use super::{on_notes, person, setup};

/// A loopback address nothing listens on now.
fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    listener.local_addr().expect("bound").to_string()
}

/// What a client that can show no form is told when `write_note` needs a
/// person, from a gateway whose inbox listens at `addr` (in `setup`).
async fn parked_message(setup: askgate_testkit::gateway::Setup) -> String {
    let h = setup.connect(person(json!({}), vec![])).await;
    let result = on_notes(
        &h.client,
        "write_note",
        json!({"name": "todo", "text": "x"}),
    )
    .await;
    askgate_testkit::mcp::text(&result)
}

#[tokio::test]
async fn an_inbox_address_taken_by_something_else_gets_no_link() {
    // Something that is not an askgate inbox holds the address.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let addr = taken.local_addr().expect("bound").to_string();
    let message = parked_message(
        setup()
            .config("")
            .tables(&format!("[inbox]\nlisten = {addr:?}\n")),
    )
    .await;
    assert!(
        !message.contains("http://"),
        "no link to whatever holds {addr}: {message}"
    );
    assert!(
        message.contains("askgate asks answer"),
        "the person is told how to answer: {message}"
    );
    drop(taken);
}

#[tokio::test]
async fn an_inbox_address_held_by_this_deployments_inbox_is_linked_to() {
    let addr = free_address();
    let setup = setup()
        .config("")
        .tables(&format!("[inbox]\nlisten = {addr:?}\n"));
    // Writes the config file, which `askgate inbox` reads too.
    let _ = setup.command();
    let mut inbox = Command::new(&setup.binaries().askgate);
    inbox
        .args(["inbox", "--config"])
        .arg(setup.config_path())
        .env("ASKGATE_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let inbox = Process::spawn(inbox);
    inbox.log.line_with(&["askgate inbox: serving "]).await;
    let message = parked_message(setup).await;
    assert!(
        message.contains(&format!("http://{addr}/asks/")),
        "the ask's page in this deployment's inbox: {message}"
    );
}
