//! Risk-gated confirmation through a real rmcp client and server: every
//! rule of the decision, what the model and the audit are told, the
//! session's threshold header over Streamable HTTP, and a decision reached
//! again on a retry audited once.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use askgate_core::{Ask, Call, Form, Risk};
use askgate_mcp::{Policy, Request, Rounds, THRESHOLD_HEADER, session_threshold};
use askgate_store::{AuditRecord, Decision, Store};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    InputResponses, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RoleServer, RunningService,
};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value as Json, json};

/// A server with one tool, `delete`, whose arguments say its risk, whether
/// the caller confirmed, and whether a note is asked after the decision.
#[derive(Clone)]
struct Server {
    rounds: Rounds,
    configured: Option<Risk>,
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
        let args = params.arguments.clone().unwrap_or_default();
        let risk: Risk = args["risk"]
            .as_str()
            .expect("a risk")
            .parse()
            .expect("a level");
        let threshold = session_threshold(&cx, self.configured, false)?;
        let policy = Policy {
            threshold,
            caller_confirmed: args.get("confirm") == Some(&json!(true)),
        };
        let call = Call {
            server: "files",
            tool: "delete",
            risk,
            preview: Some("path: /srv/data"),
        };
        let mut round = self.rounds.begin(&cx, Request::tool(&params)).await?;
        let Some(verdict) = round.confirm("confirm", &call, policy).await? else {
            return Ok(round.respond()?);
        };
        if args.get("note") == Some(&json!(true)) {
            let form: Form = serde_json::from_value(json!({
                "message": "Why?", "fields": [{"id": "why", "title": "Why", "type": "text"}]
            }))
            .expect("a form");
            if round
                .ask("note", Ask::new(form).expect("askable"))
                .await?
                .is_none()
            {
                return Ok(round.respond()?);
            }
        }
        let text = json!({
            "proceed": verdict.proceed,
            "method": verdict.method.as_str(),
            "final": verdict.final_no,
            "for_model": verdict.for_model,
        });
        Ok(CallToolResult::success(vec![ContentBlock::text(text.to_string())]).into())
    }
}

/// A client answering each elicitation from a script.
#[derive(Clone)]
struct Person {
    capabilities: Json,
    version: ProtocolVersion,
    script: Arc<Mutex<VecDeque<ElicitResult>>>,
    asked: Arc<Mutex<Vec<Json>>>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(self.capabilities.clone()).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("person", "1.0"))
            .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked
            .lock()
            .expect("not poisoned")
            .push(serde_json::to_value(&request).expect("json"));
        Ok(self
            .script
            .lock()
            .expect("not poisoned")
            .pop_front()
            .unwrap_or_else(|| ElicitResult::new(ElicitationAction::Cancel)))
    }
}

struct Harness {
    client: RunningService<RoleClient, Person>,
    store: Store,
    asked: Arc<Mutex<Vec<Json>>>,
    _dir: Scratch,
}

struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn store() -> (Store, Scratch) {
    let dir = std::env::temp_dir().join(format!(
        "askgate-confirm-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond()
    ));
    std::fs::create_dir_all(&dir).expect("scratch");
    let store = Store::open(&format!("sqlite://{}", dir.join("s.db").display()))
        .await
        .expect("opens");
    (store, Scratch(dir))
}

async fn harness(
    capabilities: Json,
    script: Vec<ElicitResult>,
    configured: Option<Risk>,
) -> Harness {
    harness_on(
        capabilities,
        script,
        configured,
        ProtocolVersion::V_2025_11_25,
    )
    .await
}

async fn harness_on(
    capabilities: Json,
    script: Vec<ElicitResult>,
    configured: Option<Risk>,
    version: ProtocolVersion,
) -> Harness {
    let (store, dir) = store().await;
    let rounds = Rounds::new([1u8; 32], store.clone());
    let (server_io, client_io) = tokio::io::duplex(256 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = (Server { rounds, configured }).serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let asked = Arc::new(Mutex::new(Vec::new()));
    let lifecycle = if version == ProtocolVersion::V_2026_07_28 {
        ClientLifecycleMode::Discover {
            preferred_versions: vec![version.clone()],
        }
    } else {
        ClientLifecycleMode::Initialize
    };
    let client = Person {
        capabilities,
        version,
        script: Arc::new(Mutex::new(script.into())),
        asked: asked.clone(),
    }
    .serve_with_lifecycle(client_io, lifecycle)
    .await
    .expect("connects");
    Harness {
        client,
        store,
        asked,
        _dir: dir,
    }
}

fn form_client() -> Json {
    json!({"elicitation": {"form": {}}})
}

fn accept(content: Json) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(content)
}

async fn run(client: &RunningService<RoleClient, Person>, args: Json) -> Json {
    let mut params = CallToolRequestParams::new("delete");
    params.arguments = args.as_object().cloned();
    match client.call_tool_once(params).await.expect("a result") {
        CallToolResponse::Complete(result) => {
            serde_json::from_str(&result.content[0].as_text().expect("text").text).expect("json")
        }
        other => panic!("expected a complete result, got {other:?}"),
    }
}

async fn audit(store: &Store) -> Vec<AuditRecord> {
    store.audit_entries().await.expect("reads")
}

#[tokio::test]
async fn reads_and_low_writes_never_prompt_and_the_threshold_auto_approves() {
    let h = harness(form_client(), vec![], Some(Risk::MediumWrite)).await;
    for (risk, method) in [
        ("read", "auto_approved"),
        ("low_write", "auto_approved"),
        ("medium_write", "auto_approved"),
    ] {
        let verdict = run(&h.client, json!({"risk": risk})).await;
        assert_eq!(verdict["proceed"], true, "{risk}");
        assert_eq!(verdict["method"], method, "{risk}");
    }
    assert!(
        h.asked.lock().expect("not poisoned").is_empty(),
        "nobody was asked"
    );
    let entries = audit(&h.store).await;
    let decisions: Vec<Decision> = entries.iter().map(|r| r.entry.decision).collect();
    assert_eq!(
        decisions,
        [
            Decision::AutoApproved,
            Decision::AutoApproved,
            Decision::AutoApproved
        ],
        "with a threshold of medium_write, even a read is auto-approved"
    );
    let h = harness(form_client(), vec![], None).await;
    let verdict = run(&h.client, json!({"risk": "read"})).await;
    assert_eq!(verdict["method"], "not_required");
    assert_eq!(
        audit(&h.store).await[0].entry.decision,
        Decision::NotRequired
    );
}

#[tokio::test]
async fn a_person_confirms_and_the_audit_says_who_and_where() {
    let h = harness(form_client(), vec![accept(json!({"confirm": true}))], None).await;
    let verdict = run(
        &h.client,
        json!({"risk": "high_write", "path": "/srv/data"}),
    )
    .await;
    assert_eq!(verdict["proceed"], true);
    assert_eq!(verdict["method"], "elicited");
    let asked = h.asked.lock().expect("not poisoned").clone();
    let message = asked[0]["message"].as_str().expect("a message");
    assert!(
        message.contains("files") && message.contains("delete") && message.contains("high write"),
        "{message}"
    );
    assert_eq!(
        asked[0]["requestedSchema"]["properties"]["confirm"]["default"],
        true
    );
    let entry = &audit(&h.store).await[0].entry;
    assert_eq!(entry.decision, Decision::Elicited);
    assert_eq!(entry.answered_via.as_deref(), Some("mcp"));
    assert_eq!(entry.answered_by.as_deref(), Some("anonymous"));
    assert!(
        entry
            .arguments_digest
            .as_deref()
            .is_some_and(|d| d.starts_with("hmac-sha256:"))
    );
    let raw = serde_json::to_string(entry).expect("json");
    assert!(
        !raw.contains("/srv/data"),
        "arguments are never stored: {raw}"
    );
}

#[tokio::test]
async fn a_persons_no_is_final_and_not_overridable() {
    for (answer, words) in [
        (ElicitResult::new(ElicitationAction::Decline), "declined"),
        (ElicitResult::new(ElicitationAction::Cancel), "cancelled"),
        (accept(json!({"confirm": false})), "unticked"),
    ] {
        let h = harness(form_client(), vec![answer], None).await;
        // Even with confirm: true from the caller.
        let verdict = run(&h.client, json!({"risk": "destructive", "confirm": true})).await;
        assert_eq!(verdict["proceed"], false);
        assert_eq!(verdict["method"], "blocked");
        assert_eq!(verdict["final"], true);
        let for_model = verdict["for_model"].as_str().expect("text");
        assert!(
            for_model.contains("final") && for_model.contains("do not pass confirm: true"),
            "{for_model}"
        );
        let entry = &audit(&h.store).await[0].entry;
        assert_eq!(entry.decision, Decision::Blocked);
        assert!(entry.reason.contains(words), "{}", entry.reason);
    }
}

#[tokio::test]
async fn an_accept_without_the_checkbox_is_no_persons_decision() {
    // A client that accepts without showing the prompt sends no confirm.
    let h = harness(form_client(), vec![accept(json!({}))], None).await;
    let verdict = run(&h.client, json!({"risk": "high_write"})).await;
    assert_eq!(verdict["proceed"], false);
    assert_eq!(
        verdict["final"], false,
        "not a person's no: the caller may confirm"
    );
    let for_model = verdict["for_model"].as_str().expect("text");
    assert!(for_model.contains("confirm: true"), "{for_model}");
    let reason = &audit(&h.store).await[0].entry.reason;
    assert!(
        reason.contains("no person saw the prompt") && !reason.contains("declined"),
        "{reason}"
    );

    let h = harness(form_client(), vec![accept(json!({}))], None).await;
    let verdict = run(&h.client, json!({"risk": "high_write", "confirm": true})).await;
    assert_eq!(verdict["method"], "caller_confirmed");
}

#[tokio::test]
async fn without_elicitation_only_the_callers_confirm_proceeds() {
    let h = harness(json!({}), vec![], None).await;
    let verdict = run(&h.client, json!({"risk": "destructive"})).await;
    assert_eq!(verdict["proceed"], false);
    assert_eq!(verdict["final"], false);
    let verdict = run(&h.client, json!({"risk": "destructive", "confirm": true})).await;
    assert_eq!(verdict["proceed"], true);
    assert_eq!(verdict["method"], "caller_confirmed");
    let entries = audit(&h.store).await;
    assert_eq!(entries[0].entry.decision, Decision::Blocked);
    assert!(
        entries[0]
            .entry
            .reason
            .contains("cannot show a confirmation"),
        "{}",
        entries[0].entry.reason
    );
    assert_eq!(entries[1].entry.decision, Decision::CallerConfirmed);
    assert_eq!(entries[1].entry.answered_via, None, "no person answered");
}

#[tokio::test]
async fn a_decision_reached_again_on_a_retry_is_audited_once() {
    // 2026-07-28: round 1 asks the confirmation; round 2 decides it and asks
    // a note; round 3 replays the decision and completes.
    let h = harness_on(form_client(), vec![], None, ProtocolVersion::V_2026_07_28).await;
    let call = |responses: Option<Json>, state: Option<String>| {
        let mut params = CallToolRequestParams::new("delete");
        params.arguments = json!({"risk": "high_write", "note": true})
            .as_object()
            .cloned();
        params.input_responses =
            responses.map(|r| serde_json::from_value::<InputResponses>(r).expect("responses"));
        params.request_state = state;
        params
    };
    let input_required = |response: CallToolResponse| match response {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    };
    let first = input_required(
        h.client
            .call_tool_once(call(None, None))
            .await
            .expect("a result"),
    );
    let second = input_required(
        h.client
            .call_tool_once(call(
                Some(json!({"confirm": {"action": "accept", "content": {"confirm": true}}})),
                first.request_state,
            ))
            .await
            .expect("a result"),
    );
    assert!(
        second
            .input_requests
            .as_ref()
            .expect("requests")
            .contains_key("note")
    );
    let done = h
        .client
        .call_tool_once(call(
            Some(json!({"note": {"action": "accept", "content": {"why": "cleanup"}}})),
            second.request_state,
        ))
        .await
        .expect("a result");
    assert!(matches!(done, CallToolResponse::Complete(_)));
    let entries = audit(&h.store).await;
    assert_eq!(entries.len(), 1, "decided in rounds 2 and 3, recorded once");
    assert_eq!(entries[0].entry.decision, Decision::Elicited);

    // A second call with the same arguments is another decision.
    let again = input_required(
        h.client
            .call_tool_once(call(None, None))
            .await
            .expect("a result"),
    );
    let _ = h
        .client
        .call_tool_once(call(
            Some(json!({"confirm": {"action": "decline"}})),
            again.request_state,
        ))
        .await
        .expect("a result");
    assert_eq!(audit(&h.store).await.len(), 2);
}

#[tokio::test]
async fn a_session_lowers_its_threshold_by_header_but_cannot_raise_it() {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let (store, _dir) = store().await;
    let rounds = Rounds::new([1u8; 32], store.clone());
    let service = StreamableHttpService::new(
        move || {
            Ok(Server {
                rounds: rounds.clone(),
                configured: Some(Risk::MediumWrite),
            })
        },
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
        let person = Person {
            capabilities: json!({}),
            version: ProtocolVersion::V_2025_11_25,
            script: Arc::new(Mutex::new(VecDeque::new())),
            asked: Arc::new(Mutex::new(Vec::new())),
        };
        person
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
