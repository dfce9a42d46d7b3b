//! A gateway killed mid-ask: the retry gets its result and the call runs once.

use askgate_store::Store;
use askgate_testkit::gateway::ledger;
use askgate_testkit::mcp::text;
use askgate_testkit::person::READING;
use askgate_testkit::process::sigkill;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value as Json, json};

use super::{
    answered_from_the_ledger, done, input_requests, needs, retried, round_tripper, setup, tool,
};

#[tokio::test]
async fn a_gateway_killed_mid_ask_gives_the_retry_its_result_and_runs_the_call_once() {
    let setup = setup();
    let params =
        askgate_testkit::mcp::call(&tool("append_note"), json!({"name": "log", "text": "once"}));
    let (client, pid) = round_tripper(&setup).await;
    let first = needs(
        client
            .call_tool_once(params.clone())
            .await
            .expect("a result"),
    );
    // The gateway dies while the person decides.
    sigkill(&pid.to_string());
    drop(client);

    let (client, _) = round_tripper(&setup).await;
    // The person reads the confirmation before answering it.
    tokio::time::sleep(READING).await;
    let retry = retried(
        &params,
        json!({"confirm": {"action": "accept", "content": {"confirm": true}}}),
        first.request_state.clone(),
    );
    let done = done(
        client
            .call_tool_once(retry.clone())
            .await
            .expect("a result"),
    );
    assert_ne!(done.is_error, Some(true), "{}", text(&done));
    // The same retry again is answered from the ledger: the state was
    // used, and the call ran.
    answered_from_the_ledger(&client, retry).await;
    client.cancel().await.expect("the gateway stops");
    assert_eq!(ledger(setup.store_url()).await, ["answered"], "ran once");
}

#[tokio::test]
async fn a_2026_upstreams_ask_outlives_a_killed_gateway_and_the_retry_gets_the_result() {
    // ask_name, ruled high_write: the person confirms, then the server
    // asks in its own InputRequiredResult.
    let setup = setup()
        .config("[[rules]]\ntool = \"ask_name\"\nrisk = \"high_write\"")
        .upstream_keys("protocol = \"2026-07-28\"");
    let params = CallToolRequestParams::new("ask_name");
    let answer_all = |needed: &rmcp::model::InputRequiredResult, name: &str| {
        let mut responses = serde_json::Map::new();
        for (key, _) in input_requests(needed) {
            let content = if key == "confirm" {
                json!({"confirm": true})
            } else {
                json!({"name": name})
            };
            responses.insert(key, json!({"action": "accept", "content": content}));
        }
        retried(
            &params,
            Json::Object(responses),
            needed.request_state.clone(),
        )
    };

    let (client, pid) = round_tripper(&setup).await;
    let confirm = needs(
        client
            .call_tool_once(params.clone())
            .await
            .expect("a result"),
    );
    // The person reads the confirmation before answering it.
    tokio::time::sleep(READING).await;
    let retry = answer_all(&confirm, "unused");
    let asked = needs(client.call_tool_once(retry).await.expect("a result"));
    let keys: Vec<String> = input_requests(&asked).keys().cloned().collect();
    // The server's ask, under its own key.
    assert_eq!(keys, ["name"], "the server's ask: {keys:?}");
    // The gateway, and its upstream with it, die while the person types.
    sigkill(&pid.to_string());
    drop(client);

    let (client, _) = round_tripper(&setup).await;
    let retry = answer_all(&asked, "Ada");
    let done = done(
        client
            .call_tool_once(retry.clone())
            .await
            .expect("a result"),
    );
    assert!(text(&done).contains("Hello, Ada"), "{}", text(&done));
    // The same retry again is answered from the ledger: its state was
    // used, and the call ran.
    answered_from_the_ledger(&client, retry).await;
    client.cancel().await.expect("the gateway stops");
    let store = Store::open(setup.store_url()).await.expect("opens");
    let decisions: Vec<String> = store
        .audit_entries()
        .await
        .expect("reads")
        .into_iter()
        .map(|r| format!("{} {:?}", r.entry.tool, r.entry.decision))
        .collect();
    assert_eq!(decisions.len(), 1, "decided once: {decisions:?}");
    // The round before the kill was answered with the server's ask; the
    // round after it, with the result.
    let states = ledger(setup.store_url()).await;
    assert!(states.contains(&"answered".to_owned()), "{states:?}");
}

#[tokio::test]
async fn a_2026_upstreams_resource_ask_outlives_a_killed_gateway() {
    let setup = setup()
        .config("")
        .upstream_keys("protocol = \"2026-07-28\"");
    let params = rmcp::model::ReadResourceRequestParams::new("notes://owner");
    let (client, pid) = round_tripper(&setup).await;
    let asked = match client
        .read_resource_once(params.clone())
        .await
        .expect("a result")
    {
        rmcp::model::ReadResourceResponse::InputRequired(needed) => needed,
        other => panic!("expected the server's ask, got {other:?}"),
    };
    sigkill(&pid.to_string());
    drop(client);

    let (client, _) = round_tripper(&setup).await;
    let mut responses = serde_json::Map::new();
    for (key, _) in input_requests(&asked) {
        responses.insert(key, json!({"action": "accept", "content": {"name": "Ada"}}));
    }
    let mut retry = params.clone();
    retry.input_responses =
        Some(serde_json::from_value(Json::Object(responses)).expect("responses"));
    retry.request_state = asked.request_state.clone();
    let done = match client.read_resource_once(retry).await.expect("a result") {
        rmcp::model::ReadResourceResponse::Complete(result) => result,
        other => panic!("expected the resource, got {other:?}"),
    };
    let text = serde_json::to_string(&done).expect("serializes");
    assert!(text.contains("These notes belong to Ada."), "{text}");
    client.cancel().await.expect("the gateway stops");
}

#[tokio::test]
async fn a_second_process_over_the_store_never_marks_a_live_ones_call() {
    // A read recorded before it is sent (durable_reads): `sent` while it
    // runs, as every call above `read` is.
    let config = "durable_reads = true\n\n[[rules]]\ntool = \"wait_for_note\"\nrisk = \"read\"\n";
    let first = super::setup()
        .config(config)
        .logging("askgate_gateway=info")
        .connect(super::person(json!({}), vec![]))
        .await;
    let waiting = tokio::spawn({
        let peer = first.client.peer().clone();
        async move {
            peer.call_tool(askgate_testkit::mcp::call(
                "wait_for_note",
                json!({"name": "later", "wait_ms": 4000}),
            ))
            .await
        }
    });
    first
        .log
        .line_with(&["askgate-example-upstream: call wait_for_note"])
        .await;
    // Another session over the same store starts meanwhile (a second
    // stdio client, or a replica) and recovers what crashed processes left.
    let second = over_the_store(first.store_url(), config, super::person(json!({}), vec![])).await;
    let answered = waiting.await.expect("ends").expect("answered");
    assert!(
        askgate_testkit::mcp::text(&answered).contains("no note named"),
        "{answered:?}"
    );
    second.stop().await;
    let stopped = first.stop().await;
    assert_eq!(
        askgate_testkit::gateway::ledger(stopped.store_url()).await,
        ["answered"],
        "the live process's call is its own: answered, never may_have_run"
    );
}

/// Another gateway, with `config` and a client of `person`, over the
/// store at `store_url`: a second session, a replica, or a restart.
async fn over_the_store(
    store_url: &str,
    config: &str,
    person: askgate_testkit::Person,
) -> askgate_testkit::gateway::Gateway {
    super::setup()
        .store(store_url)
        .config(config)
        .logging("askgate_gateway=info")
        .connect(person)
        .await
}

/// What the upstream logs as a call of `wait_for_note` reaches it.
const WAIT_CALLED: &str = "askgate-example-upstream: call wait_for_note";

/// A call of `wait_for_note` long enough to kill its gateway under, short
/// enough to run again.
fn waiting_call() -> CallToolRequestParams {
    askgate_testkit::mcp::call("wait_for_note", json!({"name": "later", "wait_ms": 2000}))
}

/// Start a gateway from `setup` with a client of `person`, call
/// `waiting_call` through it, and SIGKILL the gateway once the upstream
/// has the call: the killed gateway (its scratch directory holds the
/// store it leaves).
async fn killed_while_in_flight(
    setup: askgate_testkit::gateway::Setup,
    person: askgate_testkit::Person,
) -> askgate_testkit::gateway::Gateway {
    let first = setup.logging("askgate_gateway=info").connect(person).await;
    let peer = first.client.peer().clone();
    let waiting = tokio::spawn(async move { peer.call_tool(waiting_call()).await });
    first.log.line_with(&[WAIT_CALLED]).await;
    sigkill(&first.pid.to_string());
    assert!(
        waiting.await.expect("ends").is_err(),
        "the call died with its gateway"
    );
    first
}

#[tokio::test]
async fn a_classic_retry_of_a_call_that_may_have_run_is_not_sent_again_and_is_told_once() {
    // A write nobody need confirm: recorded before it is sent.
    let config = "[[rules]]\ntool = \"wait_for_note\"\nrisk = \"low_write\"\n";
    let killed = killed_while_in_flight(
        super::setup().config(config),
        super::person(json!({}), vec![]),
    )
    .await;
    // The client starts askgate again and retries the call it lost.
    let second = over_the_store(killed.store_url(), config, super::person(json!({}), vec![])).await;
    let retry = second
        .client
        .call_tool(waiting_call())
        .await
        .expect("a result");
    let told = text(&retry);
    assert_eq!(retry.is_error, Some(true), "{told}");
    assert!(
        told.contains("This exact call may already have run at ")
            && told.contains("was not sent again"),
        "{told}"
    );
    assert!(
        !second.log.has_line_with(&[WAIT_CALLED]),
        "the retry never reached the upstream"
    );
    // Told once: the model that calls again means it, and the call runs.
    let again = second
        .client
        .call_tool(waiting_call())
        .await
        .expect("a result");
    assert!(text(&again).contains("no note named"), "{}", text(&again));
    let stopped = second.stop().await;
    assert_eq!(
        ledger(stopped.store_url()).await,
        ["sent", "answered"],
        "the lost call, then the one called knowingly"
    );
}

#[tokio::test]
async fn a_person_asked_to_confirm_a_retry_is_told_the_call_may_already_have_run() {
    let config = "[[rules]]\ntool = \"wait_for_note\"\nrisk = \"high_write\"\n";
    let forms = || {
        super::person(
            json!({"elicitation": {"form": {}}}),
            vec![askgate_testkit::person::accept(json!({"confirm": true}))],
        )
    };
    let killed = killed_while_in_flight(super::setup().config(config), forms()).await;
    let second = over_the_store(killed.store_url(), config, forms()).await;
    let retry = second
        .client
        .call_tool(waiting_call())
        .await
        .expect("a result");
    // The person confirmed knowing: the call runs again.
    assert!(text(&retry).contains("no note named"), "{}", text(&retry));
    let messages = second.person.messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(
        messages[0].contains("This exact call may already have run at ")
            && messages[0].ends_with("Run it again?"),
        "{}",
        messages[0]
    );
    let stopped = second.stop().await;
    assert_eq!(ledger(stopped.store_url()).await, ["sent", "answered"]);
}

#[tokio::test]
async fn a_2026_retry_of_a_call_that_may_have_run_is_answered_from_the_ledger_not_started_over() {
    let setup = setup().config("[[rules]]\ntool = \"wait_for_note\"\nrisk = \"high_write\"\n");
    let params = waiting_call();
    let (client, pid) = round_tripper(&setup).await;
    let confirm = needs(
        client
            .call_tool_once(params.clone())
            .await
            .expect("a result"),
    );
    tokio::time::sleep(READING).await;
    let retry = retried(
        &params,
        json!({"confirm": {"action": "accept", "content": {"confirm": true}}}),
        confirm.request_state.clone(),
    );
    // The confirmed call is in flight when the gateway dies.
    let peer = client.peer().clone();
    let in_flight = tokio::spawn({
        let retry = retry.clone();
        async move { peer.call_tool(retry).await }
    });
    askgate_testkit::wait::within("the call is sent", async {
        while !ledger(setup.store_url()).await.contains(&"sent".to_owned()) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    sigkill(&pid.to_string());
    assert!(in_flight.await.expect("ends").is_err());
    drop(client);

    // The client retries with the same state, as it would after losing
    // its connection.
    let (client, _) = round_tripper(&setup).await;
    let answered = done(
        client
            .call_tool_once(retry.clone())
            .await
            .expect("a result"),
    );
    let told = text(&answered);
    assert_eq!(answered.is_error, Some(true), "{told}");
    assert!(
        told.contains("This exact call may already have run at ")
            && told.contains("It was not sent again")
            && !told.contains("start over"),
        "{told}"
    );
    // A call made anew after that goes as any call: a person is asked.
    let anew = needs(
        client
            .call_tool_once(params.clone())
            .await
            .expect("a result"),
    );
    assert!(!input_requests(&anew).is_empty());
    client.cancel().await.expect("the gateway stops");
    assert_eq!(
        ledger(setup.store_url()).await,
        ["sent"],
        "sent once, never again"
    );
}

#[tokio::test]
async fn the_same_call_in_two_live_sessions_is_no_retry_and_both_run() {
    let config = "[[rules]]\ntool = \"wait_for_note\"\nrisk = \"low_write\"\n";
    let first = super::setup()
        .config(config)
        .logging("askgate_gateway=info")
        .connect(super::person(json!({}), vec![]))
        .await;
    let peer = first.client.peer().clone();
    let waiting = tokio::spawn(async move { peer.call_tool(waiting_call()).await });
    first.log.line_with(&[WAIT_CALLED]).await;
    // Another session over the store makes the same call while the first
    // one's is in flight, in a process that beats.
    let second = over_the_store(first.store_url(), config, super::person(json!({}), vec![])).await;
    let same = second
        .client
        .call_tool(waiting_call())
        .await
        .expect("a result");
    assert!(text(&same).contains("no note named"), "{}", text(&same));
    let answered = waiting.await.expect("ends").expect("answered");
    assert!(text(&answered).contains("no note named"), "{answered:?}");
    second.stop().await;
    let stopped = first.stop().await;
    assert_eq!(ledger(stopped.store_url()).await, ["answered", "answered"]);
}
