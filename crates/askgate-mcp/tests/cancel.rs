//! Waiting on a person ends when the client cancels the request
//! (`notifications/cancelled`) or the wait times out — as "nobody
//! answered", never as a person's decision — and the ask is withdrawn from
//! the client, so no dialog stays up whose answer nobody reads.

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

/// A person who never answers; notes when an ask shown to them is
/// withdrawn.
#[derive(Clone, Default)]
struct Away {
    withdrawn: Arc<tokio::sync::Notify>,
}

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
        cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // The server's notifications/cancelled for this ask cancels it here.
        cx.ct.cancelled().await;
        self.withdrawn.notify_one();
        std::future::pending().await
    }
}

async fn connect(server: Server, away: Away) -> rmcp::service::RunningService<RoleClient, Away> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    away.serve(client_io).await.expect("connects")
}

#[tokio::test]
async fn a_cancelled_request_stops_the_wait() {
    let ended = Arc::new(Mutex::new(None));
    let away = Away::default();
    let client = connect(
        Server {
            timeout: None,
            ended: ended.clone(),
        },
        away.clone(),
    )
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
    // The dialog the person was shown is withdrawn too.
    tokio::time::timeout(Duration::from_secs(30), away.withdrawn.notified())
        .await
        .expect("the ask is withdrawn from the client");
}

#[tokio::test]
async fn a_wait_past_its_timeout_is_a_failure_not_a_decline() {
    let ended = Arc::new(Mutex::new(None));
    let away = Away::default();
    let client = connect(
        Server {
            timeout: Some(Duration::from_millis(100)),
            ended: ended.clone(),
        },
        away.clone(),
    )
    .await;
    let result = client
        .call_tool_once(CallToolRequestParams::new("go"))
        .await
        .expect("a result");
    let CallToolResponse::Complete(result) = result else {
        panic!("a complete result");
    };
    let text = &result.content[0].as_text().expect("text").text;
    assert_eq!(text, "unanswered: TimedOut(100ms)");
    tokio::time::timeout(Duration::from_secs(30), away.withdrawn.notified())
        .await
        .expect("the timed-out ask is withdrawn from the client");
}
