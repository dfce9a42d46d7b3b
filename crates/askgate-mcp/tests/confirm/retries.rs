//! A decision reached again on a retry, an instant answer on 2026, and a
//! session's threshold header.

use std::sync::Arc;

use askgate_core::Risk;
use askgate_mcp::{Rounds, THRESHOLD_HEADER};
use askgate_store::Decision;
use askgate_testkit::{Person, Seen, TempStore};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, InputResponses, ProtocolVersion};
use serde_json::{Value as Json, json};

use super::{Harness, Server, Setup, audit, form_client, last, pending, run};

/// The answers of a retry whose confirmation the client declined.
fn declined() -> Option<Json> {
    Some(json!({"confirm": {"action": "decline"}}))
}

/// Call the tool once: the response.
async fn once(h: &Harness, params: CallToolRequestParams) -> CallToolResponse {
    h.client.call_tool_once(params).await.expect("a result")
}

/// A call of `delete` with `arguments`, carrying `responses` and `state`
/// when it is a retry.
fn delete(
    arguments: Json,
    responses: Option<Json>,
    state: Option<String>,
) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("delete");
    params.arguments = arguments.as_object().cloned();
    params.input_responses =
        responses.map(|r| serde_json::from_value::<InputResponses>(r).expect("responses"));
    params.request_state = state;
    params
}

#[tokio::test]
async fn a_decision_reached_again_on_a_retry_is_audited_once() {
    // 2026-07-28: round 1 asks the confirmation; round 2 decides it and asks
    // a note; round 3 replays the decision and completes.
    let mut setup = Setup::new(form_client(), vec![]);
    setup.version = ProtocolVersion::V_2026_07_28;
    let h = setup.start().await;
    let call = |responses: Option<Json>, state: Option<String>| {
        delete(
            json!({"risk": "high_write", "note": true}),
            responses,
            state,
        )
    };
    let input_required = |response: CallToolResponse| match response {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    };
    let first = input_required(once(&h, call(None, None)).await);
    let second = input_required(
        once(
            &h,
            call(
                Some(json!({"confirm": {"action": "accept", "content": {"confirm": true}}})),
                first.request_state,
            ),
        )
        .await,
    );
    assert!(
        second
            .input_requests
            .as_ref()
            .expect("requests")
            .contains_key("note")
    );
    let done = once(
        &h,
        call(
            Some(json!({"note": {"action": "accept", "content": {"why": "cleanup"}}})),
            second.request_state,
        ),
    )
    .await;
    assert!(matches!(done, CallToolResponse::Complete(_)));
    let entries = audit(&h.store).await;
    assert_eq!(entries.len(), 1, "decided in rounds 2 and 3, recorded once");
    assert_eq!(entries[0].entry.decision, Decision::Elicited);

    // A second call with the same arguments is another decision.
    let again = input_required(once(&h, call(None, None)).await);
    let _ = once(&h, call(declined(), again.request_state)).await;
    assert_eq!(audit(&h.store).await.len(), 2);
}

#[tokio::test]
async fn on_2026_an_instant_answer_in_the_retry_is_not_a_persons() {
    let mut setup = Setup::new(form_client(), vec![]);
    setup.version = ProtocolVersion::V_2026_07_28;
    setup.name = "headless";
    setup.inbox = true;
    let h = setup.start().await;
    let call = |responses: Option<Json>, state: Option<String>| {
        delete(json!({"risk": "high_write"}), responses, state)
    };
    let CallToolResponse::InputRequired(first) = once(&h, call(None, None)).await else {
        panic!("asks")
    };
    // The retry comes back at once with a decline: nobody read it.
    let done = once(&h, call(declined(), first.request_state)).await;
    assert!(matches!(done, CallToolResponse::Complete(_)));
    let entry = last(&h.store).await;
    assert_eq!(entry.decision, Decision::Waiting, "{}", entry.reason);
    assert!(entry.reason.starts_with("not shown: "), "{}", entry.reason);
    assert_eq!(pending(&h.store).await.len(), 1);
}

#[tokio::test]
async fn a_session_lowers_its_threshold_by_header_but_cannot_raise_it() {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let store = TempStore::open().await;
    let server = Server {
        rounds: Rounds::new([1u8; 32], store.store().clone()),
        configured: Some(Risk::MediumWrite),
        ended: Seen::default(),
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone().tools()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await;
    });
    let connect = |header: &'static str| async move {
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(format!("http://{address}/mcp"));
        config.custom_headers.insert(
            THRESHOLD_HEADER.parse().expect("a header name"),
            header.parse().expect("a header value"),
        );
        Person::new(json!({}))
            .speaking(ProtocolVersion::V_2025_11_25)
            .serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("connects over HTTP")
    };
    // Lowered to read: a medium write now needs a person (and this client
    // has no elicitation, so it is blocked).
    let lowered = connect("read").await;
    let verdict = run(&lowered, json!({"risk": "medium_write"})).await;
    assert_eq!(verdict["method"], "blocked");
    // Raising to destructive is not allowed: medium_write stays the line.
    let raised = connect("destructive").await;
    assert_eq!(
        run(&raised, json!({"risk": "medium_write"})).await["method"],
        "auto_approved"
    );
    assert_eq!(
        run(&raised, json!({"risk": "high_write"})).await["method"],
        "blocked"
    );
    // A value that is not a level is refused, naming the header.
    let wrong = connect("yolo").await;
    let mut params = CallToolRequestParams::new("delete");
    params.arguments = json!({"risk": "read"}).as_object().cloned();
    match wrong.call_tool_once(params).await {
        Err(rmcp::ServiceError::McpError(error)) => {
            assert_eq!(error.code.0, -32602);
            assert!(
                error.message.contains(THRESHOLD_HEADER),
                "{}",
                error.message
            );
        }
        other => panic!("expected -32602, got {other:?}"),
    }
}
