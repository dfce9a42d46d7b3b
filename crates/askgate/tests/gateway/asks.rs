//! The person's asks: the ask tool, intake questions, the upstream's own ask
//! and the webhook.

use askgate_testkit::mcp::text;
use askgate_testkit::person::accept;
use askgate_testkit::webhook::Receiver;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

use super::{gateway, in_process_on, on_notes};

#[tokio::test]
async fn the_model_asks_the_person_through_the_ask_tool() {
    let h = gateway(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"env": "prod"}))],
    )
    .await;
    let tools = h.client.list_all_tools().await.expect("tools");
    assert!(
        tools.iter().any(|t| t.name == "ask"),
        "the ask tool is offered"
    );
    let mut params = CallToolRequestParams::new("ask");
    params.arguments = json!({"questions": [{
        "id": "env", "prompt": "Which environment?", "defaults": ["staging"],
        "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]
    }]})
    .as_object()
    .cloned();
    let result = h.client.call_tool(params).await.expect("a result");
    assert!(
        text(&result).contains("Which environment? → Production"),
        "{}",
        text(&result)
    );

    // A malformed set is a tool error addressed to the model.
    let mut params = CallToolRequestParams::new("ask");
    params.arguments = json!({"questions": []}).as_object().cloned();
    let result = h.client.call_tool(params).await.expect("a result");
    assert_eq!(result.is_error, Some(true));
    assert!(!text(&result).is_empty());
}

#[tokio::test]
async fn intake_questions_come_before_a_tools_first_call_only() {
    let config = r#"
[[rules]]
tool = "append_note"
risk = "read"

[[intake]]
tool = "append_note"
when = "once"
preamble = "Before the first note:"
questions = [{ id = "team", prompt = "Which team?", options = [{ value = "ops", label = "Ops" }, { value = "dev", label = "Dev" }], defaults = ["ops"] }]
"#;
    let h = in_process_on(
        json!({"elicitation": {"form": {}}}),
        vec![accept(json!({"team": "dev"}))],
        config,
        "",
    )
    .await;
    let mut params = CallToolRequestParams::new("append_note");
    params.arguments = json!({"name": "log", "text": "one"}).as_object().cloned();
    let first = h.client.call_tool(params.clone()).await.expect("a result");
    assert!(
        text(&first).contains("Which team? → Dev"),
        "{}",
        text(&first)
    );
    let second = h.client.call_tool(params).await.expect("a result");
    assert!(!text(&second).contains("Which team?"), "{}", text(&second));
    assert_eq!(
        h.person.asked.len(),
        1,
        "asked once; a read needs no confirmation"
    );
}

#[tokio::test]
async fn a_parked_ask_is_posted_to_the_configured_webhook_without_arguments() {
    // A local receiver records what is posted to it.
    let receiver = Receiver::start().await;
    let config = format!("[notify]\nwebhook = {:?}\n", receiver.url);
    let h = in_process_on(json!({}), vec![], &config, "").await;
    let parked = on_notes(
        &h.client,
        "delete_all_notes",
        json!({"reason": "a-secret-argument"}),
    )
    .await;
    assert_eq!(parked.is_error, Some(true), "parked: {}", text(&parked));
    receiver.at_least(1).await;
    let seen = receiver.bodies();
    assert_eq!(seen.len(), 1, "one post for the parked ask: {seen:?}");
    let post = &seen[0];
    assert_eq!(post["event"], "parked");
    assert_eq!(
        (post["server"].as_str(), post["tool"].as_str()),
        (Some("notes"), Some("delete_all_notes"))
    );
    assert_eq!(post["risk"], "destructive");
    assert!(post["link"].as_str().is_some_and(|l| l.contains("/asks/")));
    assert!(
        !post.to_string().contains("a-secret-argument"),
        "no argument is posted: {post}"
    );
}

#[tokio::test]
async fn an_upstream_knows_the_client_cannot_show_its_ask_as_it_would_directly() {
    // A stdio client that declared no elicitation: the upstream's
    // handshake says so (askgate could not carry the server's form to it),
    // so the server answers as it would that client directly.
    let h = super::gateway_with(
        json!({}),
        vec![],
        "[[rules]]\ntool = \"ask_name\"\nrisk = \"read\"",
    )
    .await;
    let result = super::call(&h, "ask_name", json!({})).await;
    assert!(
        text(&result).contains("declared no elicitation capability"),
        "{}",
        text(&result)
    );
}

#[tokio::test]
async fn a_question_the_upstream_withdraws_is_withdrawn_from_the_client() {
    // A person who leaves the question up: only its withdrawal ends it.
    let person = askgate_testkit::Person::new(json!({"elicitation": {"form": {}}}))
        .speaking(rmcp::model::ProtocolVersion::V_2025_11_25)
        .in_manner(askgate_testkit::Manner::Away);
    let rule = "[[rules]]\ntool = \"ask_name_then_withdraw\"\nrisk = \"read\"";
    let h = super::setup().config(rule).connect(person).await;
    let result = super::call(&h, "ask_name_then_withdraw", json!({"within_ms": "200"})).await;
    assert!(text(&result).contains("withdrawn"), "{}", text(&result));
    // The server's notifications/cancelled reached the client, which took
    // the question down.
    h.person
        .withdrawn
        .at_least("the question withdrawn", 1)
        .await;
    assert_eq!(h.person.asked.len(), 1, "asked once");
}

#[tokio::test]
async fn a_confirmed_calls_secret_arguments_are_not_kept_in_the_store() {
    // A token by its look, and one by its argument's name.
    const LOOKS: &str = "ghp_0123456789abcdefABCDEF0123456789";
    const NAMED: &str = "plain-words-for-a-password";
    let args = json!({"name": "plan", "text": LOOKS, "api_token": NAMED});
    // A client that shows no forms: the ask is parked in the store, and a
    // person confirms it there.
    let h = super::gateway(json!({}), vec![]).await;
    let parked = super::call(&h, "write_note", args.clone()).await;
    assert_eq!(parked.is_error, Some(true), "parked: {}", text(&parked));
    let store = h.store().await;
    let pending = askgate_testkit::wait::first_pending(&store).await;
    askgate_testkit::answer_in_inbox(
        &store,
        &pending.ask.id,
        askgate_testkit::answer(json!({"confirm": true})),
        "ada",
        askgate_core::Surface::Web,
    )
    .await;
    let ran = super::call(&h, "write_note", args).await;
    assert!(text(&ran).contains("wrote"), "{}", text(&ran));
    store.close().await;
    let stopped = h.stop().await;
    let request: String =
        askgate_testkit::sqlite_value(stopped.store_url(), "SELECT request FROM asks").await;
    // What the person read of the call is there, its secrets hidden.
    assert!(request.contains("[hidden: "), "{request}");
    for secret in [LOOKS, NAMED] {
        assert!(!request.contains(secret), "{secret} kept: {request}");
    }
}
