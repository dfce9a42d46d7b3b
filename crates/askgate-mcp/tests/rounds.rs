//! A request's rounds on MCP 2026-07-28 (multi round-trip), through a real
//! rmcp client and server connected in process: the client drives each
//! round by hand (`call_tool_once`), so every retry can be shaped as an
//! honest, a careless or a hostile client would shape it.

use std::time::Duration;

use askgate_core::{Ask, Form};
use askgate_mcp::{Request, Rounds};
use askgate_store::Store;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, Implementation, InputRequiredResult, InputResponses, ProtocolVersion,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RoleServer};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceError, ServiceExt};
use serde_json::{Value as Json, json};

/// A server whose tool `deploy` asks a person, and reports the outcome as
/// JSON text.
#[derive(Clone)]
struct Server {
    rounds: Rounds,
}

fn deploy_form() -> Form {
    serde_json::from_value(json!({
        "message": "Deploy billing?",
        "fields": [
            {"id": "env", "title": "Environment", "type": "choice",
             "options": [{"value": "staging", "label": "Staging"},
                         {"value": "prod", "label": "Production"}]},
            {"id": "replicas", "title": "Replicas", "type": "integer", "minimum": 1, "maximum": 5}
        ]
    }))
    .expect("a form")
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut round = self.rounds.begin(&cx, Request::tool(&params)).await?;
        let ask = Ask::new(deploy_form()).expect("MCP can carry the form");
        let Some(outcome) = round.ask("deploy", ask).await? else {
            return Ok(round.input_required()?.into());
        };
        let text = serde_json::to_string(&outcome).expect("serializes");
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// A 2026-07-28 client declaring `capabilities`; it answers nothing by
/// itself: the test drives every round.
#[derive(Clone)]
struct Client {
    capabilities: Json,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(self.capabilities.clone()).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("round-driver", "1.0"))
    }
}

struct Harness {
    client: RunningService<RoleClient, Client>,
    _store_dir: TempDir,
}

/// A scratch directory, removed on drop.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn harness(capabilities: Json, ttl: Duration) -> Harness {
    let dir = std::env::temp_dir().join(format!(
        "askgate-rounds-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond()
    ));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let store = Store::open(&format!("sqlite://{}", dir.join("store.db").display()))
        .await
        .expect("the store opens");
    let rounds = Rounds::new([9u8; 32], store).with_ttl(ttl);
    let (server_io, client_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        let running = Server { rounds }
            .serve(server_io)
            .await
            .expect("the server starts");
        let _ = running.waiting().await;
    });
    let client = Client { capabilities }
        .serve_with_lifecycle(
            client_io,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("the client discovers the server");
    Harness {
        client,
        _store_dir: TempDir(dir),
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
    let replay = h.error(call(json!({}), answer(), Some(&state))).await;
    assert_eq!(replay.code.0, -32602);
    assert!(
        replay.message.contains("already used"),
        "{}",
        replay.message
    );
}

#[tokio::test]
async fn altered_foreign_and_expired_states_are_refused() {
    let h = harness(form_client(), Duration::from_secs(600)).await;
    let args = json!({"service": "billing"});
    let state = state_of(&h.input_required(call(args.clone(), None, None)).await);
    let answer = || Some(accept(json!({"env": "prod", "replicas": 1})));

    let tampered = h
        .error(call(
            args.clone(),
            answer(),
            Some(&format!("{state}-TAMPERED")),
        ))
        .await;
    assert_eq!(tampered.code.0, -32602);
    assert!(
        tampered.message.contains("integrity check failed"),
        "{}",
        tampered.message
    );

    let other_args = h
        .error(call(json!({"service": "payroll"}), answer(), Some(&state)))
        .await;
    assert_eq!(other_args.code.0, -32602);
    assert!(
        other_args.message.contains("set of arguments"),
        "{}",
        other_args.message
    );

    let garbage = h.error(call(args.clone(), answer(), Some("hello"))).await;
    assert_eq!(garbage.code.0, -32602);
    assert!(garbage.message.contains("malformed"), "{}", garbage.message);

    // The refusals above did not use the state up: it still works once.
    let outcome = h.complete(call(args, answer(), Some(&state))).await;
    assert_eq!(outcome["outcome"], "accepted");

    let expiring = harness(form_client(), Duration::ZERO).await;
    let state = state_of(&expiring.input_required(call(json!({}), None, None)).await);
    let expired = expiring
        .error(call(json!({}), answer(), Some(&state)))
        .await;
    assert_eq!(expired.code.0, -32602);
    assert!(expired.message.contains("expired"), "{}", expired.message);
}

#[tokio::test]
async fn an_answer_that_is_not_an_elicitation_result_is_refused_by_name() {
    let h = harness(form_client(), Duration::from_secs(600)).await;
    let state = state_of(&h.input_required(call(json!({}), None, None)).await);
    let error = h
        .error(call(
            json!({}),
            Some(json!({"deploy": 12345})),
            Some(&state),
        ))
        .await;
    assert_eq!(error.code.0, -32602);
    assert!(error.message.contains("\"deploy\""), "{}", error.message);
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
