//! Two gateway processes on one PostgreSQL store: an ask held by one
//! gateway (a URL-mode call waiting on the person) is answered from another
//! process (`askgate asks answer`, as the inbox would), and the waiting call
//! resumes through PostgreSQL's notifications. Runs when
//! `ASKGATE_TEST_POSTGRES_URL` is set (`.ci/run` sets it).

use askgate_testkit::gateway::{Setup, as_person, people_config};
use askgate_testkit::postgres::FreshSchema;
use askgate_testkit::{Person, Scratch, binaries, within};
use rmcp::model::{CallToolRequestParams, ElicitResult, ElicitationAction, ProtocolVersion};
use serde_json::json;

/// The token of alice, a person of the CLI's config.
const ALICE: &str = "alice-person-token-0123456789";

/// A client whose person opens URL-mode pages (accepting at once).
fn opens_links() -> Person {
    Person::new(json!({"elicitation": {"url": {}}}))
        .named("opens-links")
        .speaking(ProtocolVersion::V_2025_11_25)
        .otherwise(ElicitResult::new(ElicitationAction::Accept))
}

#[tokio::test]
async fn an_answer_from_another_process_resumes_the_call_a_gateway_holds() {
    let Some(schema) = FreshSchema::create("the two-gateway PostgreSQL test").await else {
        return;
    };
    let store = schema.url().to_owned();
    // Two replicas; the client talks to the first one.
    let first = Setup::new(binaries!())
        .store(&store)
        .connect(opens_links())
        .await;
    let second = Setup::new(binaries!())
        .store(&store)
        .connect(opens_links())
        .await;
    assert!(
        !second
            .client
            .list_all_tools()
            .await
            .expect("tools")
            .is_empty()
    );

    let asked = first.person.asked.clone();
    let peer = first.client.peer().clone();
    let call = tokio::spawn(async move {
        peer.call_tool(CallToolRequestParams::new("delete_all_notes"))
            .await
    });
    // The person was sent the inbox page; the call waits on the store.
    let sent = asked.at_least("a URL-mode ask is sent", 1).await;
    let id = sent[0]["elicitationId"]
        .as_str()
        .expect("a URL-mode ask")
        .to_owned();
    assert!(!call.is_finished(), "the call waits for the person");

    // Answered from another process, as the inbox does, by a person of
    // the config.
    let dir = Scratch::new();
    let config = people_config(&dir, &store, "alice", ALICE);
    let answered = as_person(
        &binaries!().askgate,
        &config,
        ALICE,
        &["answer", &id, "--content", r#"{"confirm": true}"#],
    );
    assert!(
        answered.status.success(),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );
    let result = within("the held call resumes", call)
        .await
        .expect("joins")
        .expect("a result");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text = result.content[0].as_text().expect("text").text.clone();
    assert!(text.to_lowercase().contains("deleted"), "{text}");
    drop((first, second));
}

#[tokio::test]
async fn a_replica_starting_never_marks_a_live_replicas_call() {
    let Some(schema) = FreshSchema::create("the replicas' owners test").await else {
        return;
    };
    // A read recorded before it is sent: `sent` while it runs.
    let config = "durable_reads = true\n\n[[rules]]\ntool = \"wait_for_note\"\nrisk = \"read\"\n";
    let client = || Person::new(json!({})).speaking(ProtocolVersion::V_2025_11_25);
    let first = Setup::new(binaries!())
        .store(schema.url())
        .config(config)
        .connect(client())
        .await;
    let peer = first.client.peer().clone();
    let waiting = tokio::spawn(async move {
        peer.call_tool(askgate_testkit::mcp::call(
            "wait_for_note",
            json!({"name": "later", "wait_ms": 4000}),
        ))
        .await
    });
    within("the call is sent", async {
        while ledger_states(schema.url()).await != ["sent"] {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    // The second replica starts, and recovers what dead replicas left.
    let second = Setup::new(binaries!())
        .store(schema.url())
        .config(config)
        .connect(client())
        .await;
    waiting.await.expect("ends").expect("answered");
    second.stop().await;
    first.stop().await;
    assert_eq!(
        ledger_states(schema.url()).await,
        ["answered"],
        "the live replica's call is its own"
    );
}

/// The ledger's states in the PostgreSQL store at `url`.
async fn ledger_states(url: &str) -> Vec<String> {
    let pool = sqlx::postgres::PgPool::connect(url)
        .await
        .expect("connects");
    let states = sqlx::query_scalar("SELECT state FROM calls ORDER BY prepared_at")
        .fetch_all(&pool)
        .await
        .expect("reads the ledger");
    pool.close().await;
    states
}
