//! Upstreams and clients on MCP 2026: their asks cross to the other protocol
//! and their answers are checked.

use askgate_testkit::Person;
use askgate_testkit::gateway::ledger;
use askgate_testkit::mcp::{discover, text};
use askgate_testkit::person::{READING, accept};
use rmcp::model::{CallToolRequestParams, CallToolResponse, ElicitResult, ElicitationAction};
use rmcp::service::ClientServiceExt;
use serde_json::{Value as Json, json};

use super::{
    answered_from_the_ledger, in_process_on, input_requests, retried, round_tripper, setup, tool,
};

#[tokio::test]
async fn the_upstreams_own_ask_reaches_a_2026_client_as_input_requests_and_its_answer_is_checked() {
    let setup = setup();
    let (client, _) = round_tripper(&setup).await;
    let params = CallToolRequestParams::new(tool("ask_name"));
    let mut call = params.clone();
    let mut asked_name = Vec::new();
    let mut states = Vec::new();
    let mut answers = [json!({"name": 42}), json!({"name": "Grace"})].into_iter();
    let done = loop {
        let needed = match client.call_tool_once(call.clone()).await.expect("a result") {
            CallToolResponse::Complete(result) => break result,
            CallToolResponse::InputRequired(needed) => needed,
            other => panic!("expected a result or input requests, got {other:?}"),
        };
        assert!(states.len() < 6, "too many rounds");
        let mut responses = serde_json::Map::new();
        for (key, request) in input_requests(&needed) {
            let message = request["params"]["message"].as_str().unwrap_or_default();
            let content = if key == "confirm" {
                // The person reads the confirmation before answering it.
                tokio::time::sleep(READING).await;
                json!({"confirm": true})
            } else {
                assert!(key.starts_with("upstream-"), "{key}");
                asked_name.push(message.to_owned());
                answers.next().expect("asked at most twice")
            };
            responses.insert(key, json!({"action": "accept", "content": content}));
        }
        let state = needed.request_state.clone().expect("a sealed state");
        states.push(state.clone());
        call = retried(&params, Json::Object(responses), Some(state));
    };
    assert!(text(&done).contains("Hello, Grace"), "{}", text(&done));
    assert_eq!(
        asked_name.len(),
        2,
        "asked, then asked again: {asked_name:?}"
    );
    assert_eq!(asked_name[0], "What is your name?");
    assert!(
        asked_name[1].contains("name") && asked_name[1].contains("What is your name?"),
        "the re-ask says what did not fit: {:?}",
        asked_name[1]
    );
    assert!(
        !asked_name[1].contains("42"),
        "the reason never echoes the value"
    );
    // A used state does not run anything again.
    let replay = retried(
        &params,
        json!({"upstream-2": {"action": "accept", "content": {"name": "Eve"}}}),
        states.last().cloned(),
    );
    answered_from_the_ledger(&client, replay).await;
    // A read's record is written as it ends: a clean stop keeps it.
    client.cancel().await.expect("the gateway stops");
    assert_eq!(ledger(setup.store_url()).await, ["answered"], "ran once");
}

#[tokio::test]
async fn an_upstream_on_2026_asks_a_classic_client_through_elicitation() {
    let h = in_process_on(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"name": ""})), accept(json!({"name": "Ada"}))],
        "[[rules]]\nserver = \"notes\"\ntool = \"ask_name\"\nrisk = \"read\"",
        "protocol = \"2026-07-28\"",
    )
    .await;
    let params = CallToolRequestParams::new("ask_name");
    let result = h.client.call_tool(params).await.expect("a result");
    assert!(text(&result).contains("Hello, Ada"), "{}", text(&result));
    asked_again_after_an_empty_name(&h.person.asked.all());
    // A read's record is written as it ends, without the answer waiting:
    // a clean stop keeps it.
    let stopped = h.stop().await;
    assert_eq!(ledger(stopped.store_url()).await, ["answered"]);
}

#[tokio::test]
async fn a_2026_upstreams_prompt_asks_a_classic_client_and_gets_its_checked_answer() {
    let h = in_process_on(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"name": ""})), accept(json!({"name": "Ada"}))],
        "",
        "protocol = \"2026-07-28\"",
    )
    .await;
    let prompt = h
        .client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("greet_me"))
        .await
        .expect("the prompt");
    let prompt = serde_json::to_value(&prompt).expect("json");
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "Greet Ada by name, warmly.",
        "the prompt the upstream built from the answer: {prompt}"
    );
    asked_again_after_an_empty_name(&h.person.asked.all());
}

#[tokio::test]
async fn a_2026_upstreams_resource_asks_a_2026_client_which_answers_on_its_retry() {
    let setup = setup()
        .config("")
        .upstream_keys("protocol = \"2026-07-28\"");
    let (client, _) = round_tripper(&setup).await;
    let params = rmcp::model::ReadResourceRequestParams::new("notes://owner");
    let mut read = params.clone();
    let mut asked = Vec::new();
    let mut answers = [json!({"name": 42}), json!({"name": "Grace"})].into_iter();
    let done = loop {
        let needed = match client
            .read_resource_once(read.clone())
            .await
            .expect("a result")
        {
            rmcp::model::ReadResourceResponse::Complete(result) => break result,
            rmcp::model::ReadResourceResponse::InputRequired(needed) => needed,
            other => panic!("expected a result or input requests, got {other:?}"),
        };
        assert!(asked.len() < 4, "too many rounds");
        let mut responses = serde_json::Map::new();
        for (key, request) in input_requests(&needed) {
            // The server's own key first; the re-ask with the reason under
            // one of askgate's (a key is never given twice in a call).
            if asked.is_empty() {
                assert_eq!(key, "name");
            } else {
                assert!(key.starts_with("upstream-"), "{key}");
            }
            asked.push(request["params"]["message"].clone());
            let content = answers.next().expect("asked at most twice");
            responses.insert(key, json!({"action": "accept", "content": content}));
        }
        read = params.clone();
        read.input_responses =
            Some(serde_json::from_value(Json::Object(responses)).expect("responses"));
        read.request_state = Some(needed.request_state.clone().expect("a sealed state"));
    };
    let done = serde_json::to_value(&done).expect("json");
    assert_eq!(
        done["contents"][0]["text"], "These notes belong to Grace.",
        "the resource the upstream built from the answer: {done}"
    );
    assert_eq!(asked.len(), 2, "asked, then asked again: {asked:?}");
    let again = asked[1].as_str().unwrap_or_default();
    assert!(
        again.contains("name") && !again.contains("42"),
        "the re-ask says what did not fit, never the value: {again:?}"
    );
    client.cancel().await.expect("the gateway stops");
}

#[tokio::test]
async fn the_completion_of_a_url_mode_ask_reaches_the_classic_client_it_went_to() {
    let h = in_process_on(
        json!({"elicitation": {"form": {}, "url": {}}}),
        vec![ElicitResult::new(ElicitationAction::Accept)],
        "[[rules]]\nserver = \"notes\"\ntool = \"sign_in\"\nrisk = \"read\"",
        "",
    )
    .await;
    let result = h
        .client
        .call_tool(CallToolRequestParams::new("sign_in"))
        .await
        .expect("a result");
    assert!(text(&result).starts_with("Signed in"), "{}", text(&result));
    let asked = h.person.asked.all();
    assert_eq!(asked.len(), 1, "one ask: {asked:?}");
    assert_eq!(asked[0]["mode"], "url");
    let id = asked[0]["elicitationId"].clone();
    assert!(
        id.as_str().is_some_and(|id| id.starts_with("sign-in-")),
        "{id}"
    );
    let told = h.person.told.at_least("a notification", 1).await[0].clone();
    assert_eq!(told["method"], "notifications/elicitation/complete");
    assert_eq!(told["params"]["elicitationId"], id, "{told}");
}

/// The person was asked their name, then asked again, told why.
fn asked_again_after_an_empty_name(asked: &[serde_json::Value]) {
    assert_eq!(
        asked.len(),
        2,
        "asked, then asked again after an empty name"
    );
    assert_eq!(asked[0]["message"], "What is your name?");
    let again = asked[1]["message"].as_str().unwrap_or_default();
    assert!(
        again.contains("name") && again.ends_with("What is your name?"),
        "the re-ask says why: {again:?}"
    );
}

#[tokio::test]
async fn a_2026_upstreams_input_requests_reach_a_2026_client_under_the_servers_own_keys() {
    let setup = setup()
        .config("[[rules]]\ntool = \"ask_name\"\nrisk = \"read\"")
        .upstream_keys("protocol = \"2026-07-28\"");
    let (client, _) = round_tripper(&setup).await;
    let params = CallToolRequestParams::new(tool("ask_name"));
    let needed = match client
        .call_tool_once(params.clone())
        .await
        .expect("a result")
    {
        CallToolResponse::InputRequired(needed) => needed,
        other => panic!("expected the server's input requests, got {other:?}"),
    };
    // The server asked under "name": so does the gateway, as a client of
    // the server directly would see it.
    let keys: Vec<String> = input_requests(&needed).keys().cloned().collect();
    assert_eq!(keys, ["name"]);
    // Tested after a person read it: the answer goes back under that key.
    tokio::time::sleep(READING).await;
    let answer = json!({"name": {"action": "accept", "content": {"name": "Grace"}}});
    let retry = retried(&params, answer, needed.request_state.clone());
    let done = match client.call_tool_once(retry).await.expect("a result") {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected the result, got {other:?}"),
    };
    assert!(text(&done).contains("Hello, Grace"), "{}", text(&done));
    client.cancel().await.expect("the gateway stops");
}

/// A gateway over the example upstream on 2026-07-28, `ask_name` a read.
fn on_2026() -> askgate_testkit::gateway::Setup {
    setup()
        .config("[[rules]]\ntool = \"ask_name\"\nrisk = \"read\"")
        .upstream_keys("protocol = \"2026-07-28\"")
}

#[tokio::test]
async fn a_2026_upstream_hears_what_each_requests_client_has_and_refuses_what_it_lacks() {
    let setup = on_2026();
    let (transport, _pid, _log) = setup.spawn();
    // A client of 2026-07-28 that cannot show a form.
    let client = Person::new(json!({}))
        .named("formless")
        .serve_with_lifecycle(transport, discover())
        .await
        .expect("discovers the gateway");
    let params = CallToolRequestParams::new(tool("ask_name"));
    // The server is told this client has no elicitation (not what askgate
    // could do for another client), so it says what it needs, as it
    // would to that client directly.
    match client.call_tool_once(params).await {
        Err(rmcp::ServiceError::McpError(error)) => {
            assert_eq!(error.code.0, -32021, "{error:?}");
            let required = &error.data.expect("the required capabilities")["requiredCapabilities"];
            assert!(required["elicitation"].is_object(), "{required}");
        }
        other => panic!("expected the server's -32021, got {other:?}"),
    }
    client.cancel().await.expect("the gateway stops");
}

#[tokio::test]
async fn answers_a_2026_client_gives_before_it_is_asked_reach_the_upstream_as_given() {
    let setup = on_2026();
    let (client, _) = round_tripper(&setup).await;
    let mut params = CallToolRequestParams::new(tool("ask_name"));
    // No requestState: answers given before any ask, with a key the
    // server does not know besides its own.
    params.input_responses = Some(
        serde_json::from_value(json!({
            "name": {"action": "accept", "content": {"name": "Ada"}},
            "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}}
        }))
        .expect("responses"),
    );
    let done = match client.call_tool_once(params).await.expect("a result") {
        CallToolResponse::Complete(result) => result,
        other => panic!("the server took its answer as given, so it completes: got {other:?}"),
    };
    assert!(text(&done).contains("Hello, Ada"), "{}", text(&done));
    client.cancel().await.expect("the gateway stops");
}
