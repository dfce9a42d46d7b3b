//! The trust rules end to end, through `askgate gateway` on stdio with a
//! real rmcp client: a person's no is final on every path, the caller's
//! `confirm: true` counts only where the operator allows it and no ask can
//! be shown, what no person saw moves the ask to the inbox (and is said so
//! in the audit), a call cancelled while the person is asked never reaches
//! the upstream, and answers are strict on every surface.

use askgate_store::{AskStatus, Decision};
use askgate_testkit::Manner;
use askgate_testkit::gateway::Gateway;
use askgate_testkit::mcp::{cancel_once_asked, send_call, text};
use askgate_testkit::person::{accept, cancel, decline};
use rmcp::model::ElicitResult;
use serde_json::{Value as Json, json};

use super::{on_notes as call, person, setup};

/// A person of the inbox, and the token they answer with.
const CAROL: &str = "carol-token-0123456789";

/// The config every test here adds: a person who answers for everyone, and
/// `extra`.
fn config(extra: &str) -> String {
    format!(
        "{extra}\n\n[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n\n\
         [[people]]\nname = \"carol\"\ntoken = {CAROL:?}\nanswers_for = [\"*\"]\n"
    )
}

/// A gateway over the example upstream (`notes`) with [`config`]`(extra)`,
/// and a client that answers in `manner`. Its log says each decision
/// (askgate_mcp's "call decided"), for a test to wait on.
async fn gateway(
    manner: Manner,
    capabilities: Json,
    script: Vec<ElicitResult>,
    extra: &str,
) -> Gateway {
    setup()
        .config(&config(extra))
        .logging("askgate_mcp=info")
        .connect(person(capabilities, script).in_manner(manner))
        .await
}

/// The newest audit entry.
async fn last(h: &Gateway) -> askgate_store::AuditEntry {
    let store = h.store().await;
    let entry = askgate_testkit::last_audited(&store).await;
    store.close().await;
    entry
}

/// The asks waiting in the inbox.
async fn pending(h: &Gateway) -> Vec<askgate_store::AskRow> {
    let store = h.store().await;
    let asks = store.pending(50, None).await.expect("pending").asks;
    store.close().await;
    asks
}

/// `askgate asks ARGS` as carol, with the gateway's config.
fn as_carol(h: &Gateway, args: &[&str]) -> std::process::Output {
    h.as_person(CAROL, args)
}

/// What the upstream has in the note `todo` (a read: no person asked).
async fn notes_note(h: &Gateway) -> String {
    text(&call(&h.client, "read_note", json!({"name": "todo"})).await)
}

#[tokio::test]
async fn a_decline_in_the_inbox_is_final_even_against_confirm_true() {
    // Clients that show nothing, and a client that offers only links (a
    // person could be reached through them), with an operator who lets the
    // caller stand in for every risk where nothing can be shown.
    let extra = "caller_confirm = \"destructive\"\ndanger_caller_confirm_high_risk = true";
    for capabilities in [json!({}), json!({"elicitation": {"url": {}}})] {
        let h = gateway(
            Manner::Headless,
            capabilities.clone(),
            // The link is dismissed at once: nobody opened it.
            vec![cancel()],
            extra,
        )
        .await;
        let args = json!({"name": "todo", "text": "gone"});
        let first = call(&h.client, "write_note", args.clone()).await;
        assert_eq!(
            first.is_error,
            Some(true),
            "{capabilities}: {}",
            text(&first)
        );
        let waiting = pending(&h).await;
        assert_eq!(
            waiting.len(),
            1,
            "{capabilities}: the ask waits in the inbox"
        );
        let id = waiting[0].ask.id.clone();
        let declined = as_carol(&h, &["decline", &id]);
        assert!(declined.status.success(), "{declined:?}");
        // The model calls again with confirm: true: refused, the person's no.
        let mut confirmed = args.clone();
        confirmed["confirm"] = json!(true);
        let again = call(&h.client, "write_note", confirmed).await;
        assert_eq!(again.is_error, Some(true));
        assert!(
            text(&again).contains("already declined this exact call"),
            "{capabilities}: {}",
            text(&again)
        );
        let entry = last(&h).await;
        assert_eq!(entry.decision, Decision::Blocked);
        assert_eq!(entry.answered_by.as_deref(), Some("carol"));
        assert_eq!(entry.principal.as_deref(), Some("anonymous"));
        assert!(
            h.ledger().await.is_empty(),
            "{capabilities}: nothing was sent"
        );
        assert!(!notes_note(&h).await.contains("gone"));
    }
}

#[tokio::test]
async fn by_default_the_callers_word_runs_nothing() {
    let h = gateway(Manner::Person, json!({}), vec![], "").await;
    let result = call(
        &h.client,
        "write_note",
        json!({"name": "todo", "text": "x", "confirm": true}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(last(&h).await.decision, Decision::Waiting);
    assert!(h.ledger().await.is_empty());
    let tools = h.client.list_all_tools().await.expect("tools");
    assert!(
        tools
            .iter()
            .all(|t| t.input_schema["properties"].get("confirm").is_none()),
        "no confirm argument is offered"
    );
}

#[tokio::test]
async fn at_caller_confirm_medium_write_the_callers_word_runs_only_medium_writes() {
    let h = gateway(
        Manner::Person,
        json!({}),
        vec![],
        "caller_confirm = \"medium_write\"\n\n[[rules]]\ntool = \"write_note\"\nrisk = \"medium_write\"",
    )
    .await;
    let tools = h.client.list_all_tools().await.expect("tools");
    let offered = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .is_some_and(|t| t.input_schema["properties"].get("confirm").is_some())
    };
    assert!(offered("write_note"), "a medium write offers confirm");
    assert!(!offered("delete_all_notes"), "a destructive call does not");
    let written = call(
        &h.client,
        "write_note",
        json!({"name": "todo", "text": "milk", "confirm": true}),
    )
    .await;
    assert_ne!(written.is_error, Some(true), "{}", text(&written));
    assert_eq!(last(&h).await.decision, Decision::CallerConfirmed);
    let deleted = call(&h.client, "delete_all_notes", json!({"confirm": true})).await;
    assert_eq!(deleted.is_error, Some(true));
    assert_eq!(last(&h).await.decision, Decision::Waiting);
    assert!(notes_note(&h).await.contains("milk"), "nothing was deleted");
}

#[tokio::test]
async fn what_no_person_saw_moves_the_ask_to_the_inbox() {
    for (manner, answer, words) in [
        (Manner::Headless, decline(), "the client declined "),
        (
            Manner::Person,
            accept(json!({})),
            "the client accepted without the confirm field",
        ),
        (
            Manner::Failing,
            accept(json!({})),
            "asking through the client failed",
        ),
    ] {
        let h = gateway(
            manner,
            json!({"elicitation": {"form": {}}}),
            vec![answer],
            "",
        )
        .await;
        let args = json!({"name": "todo", "text": "x"});
        let result = call(&h.client, "write_note", args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{manner:?}");
        let entry = last(&h).await;
        assert_eq!(entry.decision, Decision::Waiting, "{manner:?}");
        assert!(
            entry.reason.starts_with(&format!("not shown: {words}")),
            "{manner:?}: {}",
            entry.reason
        );
        assert_eq!(
            entry.answered_by, None,
            "{manner:?}: not a person's decision"
        );
        assert!(h.ledger().await.is_empty(), "{manner:?}: not run");
        // A person answers in the inbox; the retry runs, theirs.
        let waiting = pending(&h).await;
        assert_eq!(waiting.len(), 1, "{manner:?}");
        let answered = as_carol(
            &h,
            &[
                "answer",
                &waiting[0].ask.id,
                "--content",
                r#"{"confirm": true}"#,
            ],
        );
        assert!(answered.status.success(), "{answered:?}");
        let done = call(&h.client, "write_note", args).await;
        assert_ne!(done.is_error, Some(true), "{manner:?}: {}", text(&done));
        let entry = last(&h).await;
        assert_eq!(entry.decision, Decision::Elicited);
        assert_eq!(entry.answered_by.as_deref(), Some("carol"));
        assert_eq!(entry.answered_via.as_deref(), Some("cli"));
        assert_eq!(h.person.asked.len(), 1, "asked once");
    }
}

#[tokio::test]
async fn a_call_cancelled_while_the_person_is_asked_never_reaches_the_upstream() {
    let h = gateway(
        Manner::Away,
        json!({"elicitation": {"form": {}}}),
        vec![],
        "caller_confirm = \"destructive\"\ndanger_caller_confirm_high_risk = true",
    )
    .await;
    let params = askgate_testkit::mcp::call(
        "write_note",
        json!({"name": "todo", "text": "gone", "confirm": true}),
    );
    let handle = send_call(h.client.peer(), params).await;
    // The Stop button, once the person is asked: the gateway withdraws its
    // ask from the client.
    cancel_once_asked(&h.person, handle, Some("stopped".into())).await;
    // The decision is in the audit once the gateway's handler says so.
    h.log.line_with(&["call decided", "blocked"]).await;
    let entry = last(&h).await;
    assert_eq!(entry.decision, Decision::Blocked);
    assert!(
        entry.reason.contains("cancelled by the caller"),
        "{}",
        entry.reason
    );
    assert!(h.ledger().await.is_empty(), "nothing was sent upstream");
    assert!(!notes_note(&h).await.contains("gone"));
}

#[tokio::test]
async fn a_mistyped_answer_is_refused_on_every_surface() {
    // Through the client: the answer is refused and asked again, naming the
    // property; it never settles on the checkbox's default.
    let h = gateway(
        Manner::Person,
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"confrim": false})), decline()],
        "",
    )
    .await;
    let result = call(
        &h.client,
        "write_note",
        json!({"name": "todo", "text": "x"}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    let asked = h.person.messages();
    assert_eq!(asked.len(), 2, "asked again");
    let again = &asked[1];
    assert!(
        again.contains("\"confrim\"") && again.contains("it asks for \"confirm\""),
        "{again}"
    );
    assert!(h.ledger().await.is_empty());

    // Through the CLI: refused, the ask still pending.
    let h = gateway(Manner::Person, json!({}), vec![], "").await;
    let _ = call(
        &h.client,
        "write_note",
        json!({"name": "todo", "text": "x"}),
    )
    .await;
    let waiting = pending(&h).await;
    let id = waiting[0].ask.id.clone();
    let typo = as_carol(&h, &["answer", &id, "--content", r#"{"confrim": false}"#]);
    assert_eq!(typo.status.code(), Some(1), "{typo:?}");
    let said = String::from_utf8_lossy(&typo.stderr);
    assert!(
        said.contains("\"confrim\"") && said.contains("\"confirm\""),
        "{said}"
    );
    let store = h.store().await;
    let row = store.ask(&id).await.expect("reads").expect("the ask");
    assert_eq!(row.status, AskStatus::Pending, "nothing was settled");
    store.close().await;
}

#[tokio::test]
async fn a_confirmed_call_its_client_cancels_is_cancelled_at_its_server_and_its_retry_told_it_may_have_run()
 {
    // A write the person confirms (sent on the express lane by its handler).
    let rules = "[[rules]]\ntool = \"wait_for_note\"\nrisk = \"medium_write\"";
    let h = setup()
        .config(&config(rules))
        .logging("askgate_gateway::proxy=info")
        .connect(person(
            json!({"elicitation": {"form": {}}}),
            vec![accept(json!({"confirm": true})), decline()],
        ))
        .await;
    let params = askgate_testkit::mcp::call(
        "wait_for_note",
        json!({"name": "never", "wait_ms": 3_600_000}),
    );
    let handle = send_call(h.client.peer(), params.clone()).await;
    h.log
        .line_with(&["askgate-example-upstream: call wait_for_note"])
        .await;
    // The client gives up while the server works.
    handle.cancel(None).await.expect("the cancel is sent");
    // The server hears it and stops; the ledger says how the call ended.
    h.log
        .line_with(&["askgate-example-upstream: wait_for_note cancelled"])
        .await;
    h.log
        .line_with(&["cancelled by its client while its server worked on it"])
        .await;
    // Its server worked on it before the cancel: it may have run, and the
    // person asked about the same call again is told so.
    askgate_testkit::within("the call ledgered as one that may have run", async {
        while h.ledger().await != ["may_have_run"] {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    let again = h.client.call_tool(params).await.expect("a result");
    assert_eq!(again.is_error, Some(true), "declined: {}", text(&again));
    let messages = h.person.messages();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        !messages[0].contains("may already have run")
            && messages[1].contains("This exact call may already have run at"),
        "{messages:?}"
    );
    let stopped = h.stop().await;
    assert_eq!(
        askgate_testkit::gateway::ledger(stopped.store_url()).await,
        ["may_have_run"],
        "the declined retry was not sent"
    );
}

#[tokio::test]
async fn a_call_cancelled_while_the_store_is_locked_never_runs() {
    // The caller's word confirms the write (no ask can be shown), so the
    // call goes as far as its durable record — which waits on a store
    // another process holds locked.
    let h = setup()
        .config(&config(
            "caller_confirm = \"destructive\"\ndanger_caller_confirm_high_risk = true",
        ))
        .logging("askgate_gateway=info,askgate_gateway::express=debug,askgate_mcp=info,rmcp::service=info")
        .connect(person(json!({}), vec![]))
        .await;
    let mut other = <sqlx::SqliteConnection as sqlx::Connection>::connect(h.store_url())
        .await
        .expect("connects");
    sqlx::raw_sql("BEGIN EXCLUSIVE")
        .execute(&mut other)
        .await
        .expect("locks");
    let params = askgate_testkit::mcp::call(
        "write_note",
        json!({"name": "todo", "text": "gone", "confirm": true}),
    );
    let handle = send_call(h.client.peer(), params).await;
    handle
        .cancel(Some("stopped".into()))
        .await
        .expect("the cancel is sent");
    // The gateway has heard the cancel while the store is still locked.
    h.log.line_with(&["cancelled id=", "stopped"]).await;
    sqlx::raw_sql("ROLLBACK")
        .execute(&mut other)
        .await
        .expect("unlocks");
    drop(other);
    // Whatever the store does once it is back, the call is not sent.
    h.log
        .line_with(&["cancelled by its client before it was sent", "write_note"])
        .await;
    assert!(
        !notes_note(&h).await.contains("gone"),
        "the write never ran"
    );
    let stopped = h.stop().await;
    let pool = sqlx::sqlite::SqlitePool::connect(stopped.store_url())
        .await
        .expect("connects");
    let rows: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT state, result FROM calls WHERE tool = 'write_note'")
            .fetch_all(&pool)
            .await
            .expect("reads the ledger");
    pool.close().await;
    // Cancelled during its decision: never ledgered; during its record:
    // ledgered as cancelled by the caller, not sent.
    for (state, result) in &rows {
        assert_eq!(state, "cancelled", "{rows:?}");
        assert!(
            result
                .as_deref()
                .is_some_and(|r| r.contains("not_sent") && r.contains("cancelled")),
            "{rows:?}"
        );
    }
}
