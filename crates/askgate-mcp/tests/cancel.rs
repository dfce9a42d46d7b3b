//! Waiting on a person ends when the client cancels the request
//! (`notifications/cancelled`) or the wait times out — as "nobody
//! answered", never as a person's decision.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use askgate_core::{Ask, Form};
use askgate_mcp::{AskOptions, ask_person};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ContentBlock, ElicitRequestParams, ElicitResult, Implementation, ProtocolVersion,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer};
use rmcp::{ClientHandler, ErrorData, ServerHandler, ServiceExt};
use serde_json::json;

/// A server whose tool asks and records why nobody answered.
#[derive(Clone)]
struct Server {
    timeout: Option<Duration>,
    ended: Arc<Mutex<Option<String>>>,
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        _params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let form: Form = serde_json::from_value(json!({
            "message": "Go?", "fields": [{"id": "go", "title": "Go", "type": "boolean"}]
        }))
        .expect("a form");
        let options = AskOptions {
            timeout: self.timeout,
        };
        let ended = match ask_person(&cx, Ask::new(form).expect("askable"), &options).await {
            Ok(outcome) => format!("outcome: {}", serde_json::to_value(&outcome).expect("json")),
            Err(unanswered) => format!("unanswered: {unanswered:?}"),
        };
        *self.ended.lock().expect("not poisoned") = Some(ended.clone());
        Ok(CallToolResult::success(vec![ContentBlock::text(ended)]).into())
    }
}

/// A person who never answers.
#[derive(Clone)]
struct Away;

impl ClientHandler for Away {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"form": {}}})).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("away", "1.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        std::future::pending().await
    }
}

async fn connect(server: Server) -> rmcp::service::RunningService<RoleClient, Away> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    Away.serve(client_io).await.expect("connects")
}

#[tokio::test]
async fn a_cancelled_request_stops_the_wait() {
    let ended = Arc::new(Mutex::new(None));
    let client = connect(Server {
        timeout: None,
        ended: ended.clone(),
    })
    .await;
    // Dropping the call sends notifications/cancelled for it.
    let call = client.call_tool_once(CallToolRequestParams::new("go"));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), call)
            .await
            .is_err(),
        "the person never answers"
    );
    let mut seen = None;
    for _ in 0..100 {
        seen = ended.lock().expect("not poisoned").clone();
        if seen.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.as_deref(), Some("unanswered: RequestCancelled"));
}

#[tokio::test]
async fn a_wait_past_its_timeout_is_a_failure_not_a_decline() {
    let ended = Arc::new(Mutex::new(None));
    let client = connect(Server {
        timeout: Some(Duration::from_millis(100)),
        ended: ended.clone(),
    })
    .await;
    let result = client
        .call_tool_once(CallToolRequestParams::new("go"))
        .await
        .expect("a result");
    let CallToolResponse::Complete(result) = result else {
        panic!("a complete result");
    };
    let text = &result.content[0].as_text().expect("text").text;
    assert!(text.starts_with("unanswered: Failed("), "{text}");
    assert!(text.to_lowercase().contains("timeout"), "{text}");
}
