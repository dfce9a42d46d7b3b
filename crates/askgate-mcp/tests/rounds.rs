//! A request's rounds on MCP 2026-07-28 (multi round-trip), through a real
//! rmcp client and server connected in process: the client drives each
//! round by hand (`call_tool_once`), so every retry can be shaped as an
//! honest, a careless or a hostile client would shape it.

use std::time::Duration;

use askgate_core::{Ask, Form};
use askgate_mcp::{Request, Rounds};
use askgate_testkit::mcp::{Tools, connect, discover};
use askgate_testkit::{Person, TempStore};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InputRequiredResult,
    InputResponses,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ErrorData, ServiceError};
use serde_json::{Value as Json, json};

/// The environment and the replicas, neither with a default.
fn deploy_form() -> Form {
    askgate_testkit::deploy_form(json!([
        {"id": "replicas", "title": "Replicas", "type": "integer", "minimum": 1, "maximum": 5}
    ]))
}

/// A server whose tool `deploy` asks a person, and reports the outcome as
/// JSON text.
fn server(rounds: Rounds) -> Tools {
    Tools::new(move |params, cx| {
        let rounds = rounds.clone();
        async move {
            let mut round = rounds.begin(&cx, Request::tool(&params)).await?;
            let ask = Ask::new(deploy_form()).expect("MCP can carry the form");
            let Some(outcome) = round.ask("deploy", ask).await? else {
                return Ok(round.input_required()?.into());
            };
            let text = serde_json::to_string(&outcome).expect("serializes");
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
        }
    })
}

struct Harness {
    client: RunningService<RoleClient, Person>,
    _store: TempStore,
}

/// A 2026-07-28 client declaring `capabilities`; it answers nothing by
/// itself: the test drives every round.
async fn harness(capabilities: Json, ttl: Duration) -> Harness {
    let store = TempStore::open().await;
    let rounds = Rounds::new([9u8; 32], store.store().clone()).with_ttl(ttl);
    let client = Person::new(capabilities).named("round-driver");
    Harness {
        client: connect(server(rounds), client, discover()).await,
        _store: store,
    }
}

fn call(arguments: Json, responses: Option<Json>, state: Option<&str>) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("deploy");
    params.arguments = arguments.as_object().cloned();
    params.input_responses =
        responses.map(|r| serde_json::from_value::<InputResponses>(r).expect("input responses"));
    params.request_state = state.map(str::to_owned);
    params
}

fn accept(content: Json) -> Json {
    json!({"deploy": {"action": "accept", "content": content}})
}

impl Harness {
    async fn send(&self, params: CallToolRequestParams) -> Result<CallToolResponse, ServiceError> {
        self.client.call_tool_once(params).await
    }

    async fn input_required(&self, params: CallToolRequestParams) -> InputRequiredResult {
        match self.send(params).await.expect("a result") {
            CallToolResponse::InputRequired(result) => result,
            other => panic!("expected input_required, got {other:?}"),
        }
    }

    async fn complete(&self, params: CallToolRequestParams) -> Json {
        match self.send(params).await.expect("a result") {
            CallToolResponse::Complete(result) => {
                let text = result.content[0].as_text().expect("text").text.clone();
                serde_json::from_str(&text).expect("the outcome as JSON")
            }
            other => panic!("expected a complete result, got {other:?}"),
        }
    }

    async fn error(&self, params: CallToolRequestParams) -> ErrorData {
        match self.send(params).await {
            Err(ServiceError::McpError(error)) => error,
            other => panic!("expected a JSON-RPC error, got {other:?}"),
        }
    }

    /// The call is refused as invalid params, saying `why`.
    async fn refused(&self, params: CallToolRequestParams, why: &str) {
        let error = self.error(params).await;
        assert_eq!(error.code.0, -32602, "{}", error.message);
        assert!(error.message.contains(why), "{}", error.message);
    }
}

const FORM: &str = r#"{"elicitation": {"form": {}}}"#;

fn form_client() -> Json {
    serde_json::from_str(FORM).expect("json")
}

fn state_of(result: &InputRequiredResult) -> String {
    result.request_state.clone().expect("a sealed requestState")
}

#[tokio::test]
async fn an_answer_on_the_retry_settles_the_ask() {
    let h = harness(form_client(), Duration::from_secs(600)).await;
    let args = json!({"service": "billing"});
    let first = h.input_required(call(args.clone(), None, None)).await;
    let state = state_of(&first);
    assert!(state.starts_with("as1."), "sealed by askgate: {state}");
    let request = serde_json::to_value(&first.input_requests.as_ref().expect("requests")["deploy"])
        .expect("serializes");
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["message"], "Deploy billing?");
    let schema = &request["params"]["requestedSchema"]["properties"];
    assert_eq!(
        schema["env"]["oneOf"][1],
        json!({"const": "prod", "title": "Production"})
    );
    assert_eq!(schema["replicas"]["maximum"], 5);

    let outcome = h
        .complete(call(
            args,
            Some(accept(json!({"env": "prod", "replicas": 3}))),
            Some(&state),
        ))
        .await;
    assert_eq!(outcome["outcome"], "accepted");
    assert_eq!(outcome["values"]["env"]["value"], "prod");
    assert_eq!(outcome["values"]["replicas"]["value"], 3);
}

#[tokio::test]
async fn a_wrong_answer_is_asked_again_and_the_right_half_is_kept() {
    let h = harness(form_client(), Duration::from_secs(600)).await;
    let args = json!({});
    let state = state_of(&h.input_required(call(args.clone(), None, None)).await);
    let again = h
        .input_required(call(
            args.clone(),
            Some(accept(json!({"env": "staging", "replicas": 9}))),
            Some(&state),
        ))
        .await;
    let request = serde_json::to_value(&again.input_requests.as_ref().expect("requests")["deploy"])
        .expect("serializes");
    let message = request["params"]["message"].as_str().expect("a message");
    assert!(
        message.contains("Replicas"),
        "the reason names the field: {message}"
    );
    let properties = request["params"]["requestedSchema"]["properties"]
        .as_object()
        .expect("properties");
    assert_eq!(
        properties.keys().collect::<Vec<_>>(),
        ["replicas"],
        "only the wrong field is asked again"
    );
    let second = state_of(&again);
    assert_ne!(second, state, "each round has its own state");

    let outcome = h
        .complete(call(
            args,
            Some(accept(json!({"replicas": 2}))),
            Some(&second),
        ))
        .await;
    assert_eq!(outcome["outcome"], "accepted");
    assert_eq!(
        outcome["values"]["env"]["value"], "staging",
        "kept from round one"
    );
    assert_eq!(outcome["values"]["replicas"]["value"], 2);
}

#[tokio::test]
async fn a_decline_is_an_outcome_not_an_error() {
    let h = harness(form_client(), Duration::from_secs(600)).await;
    let state = state_of(&h.input_required(call(json!({}), None, None)).await);
    let outcome = h
        .complete(call(
            json!({}),
            Some(json!({"deploy": {"action": "decline"}})),
            Some(&state),
        ))
        .await;
    assert_eq!(outcome["outcome"], "declined");
}

#[tokio::test]
async fn a_state_is_good_for_one_retry_only() {
    let h = harness(form_client(), Duration::from_secs(600)).await;
    let state = state_of(&h.input_required(call(json!({}), None, None)).await);
    let answer = || Some(accept(json!({"env": "prod", "replicas": 1})));
    h.complete(call(json!({}), answer(), Some(&state))).await;
    h.refused(call(json!({}), answer(), Some(&state)), "already used")
        .await;
}

#[tokio::test]
async fn a_malformed_answer_does_not_spend_the_state_so_the_mended_one_is_taken() {
    let h = harness(form_client(), Duration::from_secs(600)).await;
    let state = state_of(&h.input_required(call(json!({}), None, None)).await);
    let garbled = Some(json!({"deploy": {"act": "accept"}}));
    h.refused(
        call(json!({}), garbled, Some(&state)),
        "inputResponses[\"deploy\"] is malformed",
    )
    .await;
    let answer = Some(accept(json!({"env": "prod", "replicas": 1})));
    let outcome = h.complete(call(json!({}), answer, Some(&state))).await;
    assert_eq!(outcome["outcome"], "accepted");
}

#[tokio::test]
async fn altered_foreign_and_expired_states_are_refused() {
    let h = harness(form_client(), Duration::from_secs(600)).await;
    let args = json!({"service": "billing"});
    let state = state_of(&h.input_required(call(args.clone(), None, None)).await);
    let answer = || Some(accept(json!({"env": "prod", "replicas": 1})));

    let tampered = format!("{state}-TAMPERED");
    h.refused(
        call(args.clone(), answer(), Some(&tampered)),
        "integrity check failed",
    )
    .await;
    let other_args = json!({"service": "payroll"});
    h.refused(call(other_args, answer(), Some(&state)), "set of arguments")
        .await;
    h.refused(call(args.clone(), answer(), Some("hello")), "malformed")
        .await;

    // The refusals above did not use the state up: it still works once.
    let outcome = h.complete(call(args, answer(), Some(&state))).await;
    assert_eq!(outcome["outcome"], "accepted");

    let expiring = harness(form_client(), Duration::ZERO).await;
    let state = state_of(&expiring.input_required(call(json!({}), None, None)).await);
    expiring
        .refused(call(json!({}), answer(), Some(&state)), "expired")
        .await;
}

#[tokio::test]
async fn an_answer_that_is_not_an_elicitation_result_is_refused_by_name() {
    let h = harness(form_client(), Duration::from_secs(600)).await;
    let state = state_of(&h.input_required(call(json!({}), None, None)).await);
    let answer = Some(json!({"deploy": 12345}));
    h.refused(call(json!({}), answer, Some(&state)), "\"deploy\"")
        .await;
}

#[tokio::test]
async fn an_unsealed_answer_is_not_taken_by_default() {
    let h = harness(form_client(), Duration::from_secs(600)).await;
    // A client answering what it was never asked: askgate asks, sealed.
    let result = h
        .input_required(call(
            json!({}),
            Some(accept(json!({"env": "prod", "replicas": 1}))),
            None,
        ))
        .await;
    assert!(
        result
            .input_requests
            .expect("requests")
            .contains_key("deploy")
    );
}

#[tokio::test]
async fn a_client_without_elicitation_is_told_what_it_lacks() {
    let h = harness(json!({"sampling": {}}), Duration::from_secs(600)).await;
    let error = h.error(call(json!({}), None, None)).await;
    assert_eq!(error.code.0, -32021);
    assert_eq!(
        error.data,
        Some(json!({"requiredCapabilities": {"elicitation": {}}}))
    );
}

#[tokio::test]
async fn an_answer_given_to_another_question_is_not_taken_the_new_one_is_asked() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    // What the server asks changes between the rounds: a warning comes up
    // (say, the same deploy may already have run) after the person saw the
    // first question.
    let warned = Arc::new(AtomicBool::new(false));
    let store = TempStore::open().await;
    let rounds = Rounds::new([9u8; 32], store.store().clone());
    let flag = warned.clone();
    let tools = Tools::new(move |params, cx| {
        let (rounds, flag) = (rounds.clone(), flag.clone());
        async move {
            let message = if flag.load(Ordering::SeqCst) {
                "Deploy billing? It may already have run at 10:31."
            } else {
                "Deploy billing?"
            };
            let form: Form = serde_json::from_value(json!({"message": message, "fields": [
                {"id": "go", "title": "Go ahead", "type": "boolean"}
            ]}))
            .expect("a form");
            let mut round = rounds.begin(&cx, Request::tool(&params)).await?;
            let ask = Ask::new(form).expect("MCP can carry the form");
            let Some(outcome) = round.ask("deploy", ask).await? else {
                return Ok(round.input_required()?.into());
            };
            let text = serde_json::to_string(&outcome).expect("serializes");
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
        }
    });
    let h = Harness {
        client: connect(tools, Person::new(form_client()).named("d"), discover()).await,
        _store: store,
    };
    let first = h.input_required(call(json!({}), None, None)).await;
    warned.store(true, Ordering::SeqCst);
    let yes = || Some(accept(json!({"go": true})));
    // The yes was given to the question without the warning.
    let again = h
        .input_required(call(json!({}), yes(), Some(&state_of(&first))))
        .await;
    let request = serde_json::to_value(&again.input_requests.as_ref().expect("requests")["deploy"])
        .expect("serializes");
    assert_eq!(
        request["params"]["message"],
        "Deploy billing? It may already have run at 10:31."
    );
    // The yes given to the question with the warning is taken.
    let outcome = h
        .complete(call(json!({}), yes(), Some(&state_of(&again))))
        .await;
    assert_eq!(outcome["outcome"], "accepted");
    assert_eq!(outcome["values"]["go"]["value"], true);
}
