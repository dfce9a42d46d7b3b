//! Asking a person through a real rmcp client and server, connected in
//! process: the client answers each `elicitation/create` from a script, as a
//! person (or a misbehaving client) would.

use askgate_core::{Ask, Form, Outcome};
use askgate_mcp::{AskOptions, Unanswered, ask_person};
use askgate_testkit::Person;
use askgate_testkit::mcp::{Tools, connect, text};
use askgate_testkit::person::accept;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ElicitResult, ElicitationAction,
    ProtocolVersion,
};
use rmcp::service::ClientLifecycleMode;
use serde_json::{Value as Json, json};

/// A server with one tool, `deploy`, that asks a person and reports the
/// outcome as JSON text (or why nobody could be asked).
fn server() -> Tools {
    Tools::new(|_params, cx| async move {
        let ask = Ask::new(deploy_form()).expect("MCP can carry the form");
        let text = match ask_person(&cx, ask, &AskOptions::default()).await {
            Ok(outcome) => serde_json::to_string(&outcome).expect("serializes"),
            Err(unanswered) => format!("unanswered: {unanswered}"),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    })
}

/// The environment, the replicas (2 by default) and a confirmation (on
/// by default).
fn deploy_form() -> Form {
    askgate_testkit::deploy_form(json!([
        {"id": "replicas", "title": "Replicas", "type": "integer",
         "minimum": 1, "maximum": 5, "default": 2},
        {"id": "confirm", "title": "Deploy now", "type": "boolean", "default": true}
    ]))
}

/// [`call`] of a 2025-11-25 client that shows forms.
async fn call_2025(script: Vec<ElicitResult>) -> (String, Vec<Json>) {
    call(ProtocolVersion::V_2025_11_25, form_only(), script).await
}

/// Run one call of `deploy` with this client; the tool's text and what the
/// client was asked.
async fn call(
    version: ProtocolVersion,
    capabilities: Json,
    script: Vec<ElicitResult>,
) -> (String, Vec<Json>) {
    let person = Person::new(capabilities)
        .named("scripted-person")
        .speaking(version)
        .answering(script);
    let client = connect(server(), person.clone(), ClientLifecycleMode::Initialize).await;
    let result = client
        .call_tool(CallToolRequestParams::new("deploy"))
        .await
        .expect("the call returns");
    let text = text(&result);
    let _ = client.cancel().await;
    (text, person.asked.all())
}

fn form_only() -> Json {
    json!({"elicitation": {}})
}

#[tokio::test]
async fn an_accepted_answer_settles_with_defaults_applied() {
    let (text, asked) = call_2025(vec![accept(json!({"env": "prod"}))]).await;
    assert_eq!(asked.len(), 1, "asked once");
    // 2025-11-25 carries titled choices and defaults.
    let schema = &asked[0]["requestedSchema"]["properties"];
    assert_eq!(
        schema["env"]["oneOf"][1],
        json!({"const": "prod", "title": "Production"})
    );
    assert_eq!(schema["replicas"]["default"], 2);
    let outcome: Json = serde_json::from_str(&text).expect("an outcome");
    assert_eq!(outcome["outcome"], "accepted");
    let values = outcome["values"].to_string();
    assert!(
        values.contains("prod") && values.contains("defaulted"),
        "{values}"
    );
}

#[tokio::test]
async fn a_wrong_answer_is_asked_again_with_the_reason_and_only_what_was_wrong() {
    let (text, asked) = call_2025(vec![
        accept(json!({"env": "prod", "replicas": 9})),
        accept(json!({"replicas": 3})),
    ])
    .await;
    assert_eq!(asked.len(), 2, "asked again once");
    let again = &asked[1];
    let properties = again["requestedSchema"]["properties"]
        .as_object()
        .expect("properties");
    assert!(properties.contains_key("replicas"));
    assert!(
        !properties.contains_key("env"),
        "a valid answer is not asked again"
    );
    let message = again["message"].as_str().expect("a message");
    assert!(
        message.contains("Replicas"),
        "the reason names the field: {message}"
    );
    let outcome: Json = serde_json::from_str(&text).expect("an outcome");
    assert_eq!(outcome["outcome"], "accepted");
    assert!(outcome["values"].to_string().contains('3'));
}

#[tokio::test]
async fn decline_and_cancel_are_outcomes_not_errors() {
    for (action, expected) in [
        (ElicitationAction::Decline, Outcome::Declined),
        (ElicitationAction::Cancel, Outcome::Cancelled),
    ] {
        let (text, _) = call_2025(vec![ElicitResult::new(action)]).await;
        assert_eq!(text, serde_json::to_string(&expected).expect("serializes"));
    }
}

#[tokio::test]
async fn on_2025_06_18_choices_go_as_enum_names_and_defaults_still_apply() {
    let (text, asked) = call(
        ProtocolVersion::V_2025_06_18,
        form_only(),
        vec![accept(json!({"env": "staging"}))],
    )
    .await;
    let env = &asked[0]["requestedSchema"]["properties"]["env"];
    assert_eq!(env["enum"], json!(["staging", "prod"]));
    assert_eq!(env["enumNames"], json!(["Staging", "Production"]));
    let outcome: Json = serde_json::from_str(&text).expect("an outcome");
    assert_eq!(outcome["outcome"], "accepted");
    assert!(outcome["values"].to_string().contains("defaulted"));
}

#[tokio::test]
async fn a_client_without_elicitation_is_never_sent_an_ask() {
    let (text, asked) = call(ProtocolVersion::V_2025_11_25, json!({}), vec![]).await;
    assert!(asked.is_empty());
    assert_eq!(text, format!("unanswered: {}", Unanswered::NoElicitation));
}

#[tokio::test]
async fn endless_wrong_answers_end_in_gave_up_at_the_cap() {
    let wrong = (0..10)
        .map(|_| accept(json!({"env": "moon"})))
        .collect::<Vec<_>>();
    let (text, asked) = call_2025(wrong).await;
    let cap = Ask::new(deploy_form()).expect("a form").max_attempts() as usize;
    assert_eq!(asked.len(), cap, "asked exactly up to the cap");
    let outcome: Json = serde_json::from_str(&text).expect("an outcome");
    assert_eq!(outcome["outcome"], "gave_up");
}
