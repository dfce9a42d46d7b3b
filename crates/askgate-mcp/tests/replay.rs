//! The replay contract's transport: a `tools/call` goes out only with the
//! marker of a call its caller recorded, its answer is noted, and one
//! without a marker is refused unsent — a refusal the caller can tell
//! apart, by type, from a failure after which the call may have run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use askgate_mcp::replay::{MARKER_KEY, Unwatched, Watch, Watched, refusal};
use askgate_testkit::Person;
use askgate_testkit::mcp::Tools;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, RequestMetaObject};
use rmcp::transport::IntoTransport;
use serde_json::{Value as Json, json};

/// A server that counts the calls it ran in `ran`.
fn counting(ran: Arc<AtomicUsize>) -> Tools {
    Tools::new(move |_params, _cx| {
        ran.fetch_add(1, Ordering::SeqCst);
        async { Ok(CallToolResult::success(vec![ContentBlock::text("ran")]).into()) }
    })
}

fn marked(marker: &str) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("delete");
    let mut meta = RequestMetaObject::default();
    meta.insert(MARKER_KEY.to_owned(), Json::String(marker.to_owned()));
    params.meta = Some(meta);
    params
}

/// A client of a [`counting`] server through a watched transport: the
/// client, its watch, and how many calls the server ran.
async fn watched() -> (
    rmcp::service::RunningService<rmcp::service::RoleClient, Person>,
    Watch,
    Arc<AtomicUsize>,
) {
    let ran = Arc::new(AtomicUsize::new(0));
    let server = counting(ran.clone());
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let watch = Watch::default();
    let transport = IntoTransport::<rmcp::service::RoleClient, _, _>::into_transport(client_io);
    let client = Person::new(json!({}))
        .named("replay-test")
        .serve(Watched::new(transport, watch.clone()))
        .await
        .expect("connects");
    (client, watch, ran)
}

#[tokio::test]
async fn only_a_recorded_call_goes_out_and_its_answer_is_noted() {
    let (client, watch, ran) = watched().await;

    // Recorded: it goes out, and its answer is seen.
    watch.expect("m_1", "call_1");
    let answered = client.call_tool(marked("m_1")).await.expect("runs");
    assert_ne!(answered.is_error, Some(true));
    assert!(watch.answered("call_1"), "the answer was noted");
    assert_eq!(ran.load(Ordering::SeqCst), 1);

    // Not recorded (no marker, or one nobody expects): refused unsent.
    for params in [CallToolRequestParams::new("delete"), marked("m_unknown")] {
        let error = client.call_tool(params).await.expect_err("refused");
        assert_eq!(
            refusal(&error),
            Some(Unwatched::RequestUnmatched),
            "{error}"
        );
    }
    // A marker is good once.
    let error = client.call_tool(marked("m_1")).await.expect_err("refused");
    assert!(refusal(&error).is_some());
    assert_eq!(ran.load(Ordering::SeqCst), 1, "nothing unrecorded ran");
}

#[tokio::test]
async fn a_call_sent_as_written_is_held_to_the_same_contract() {
    use rmcp::model::{ClientRequest, CustomRequest};
    let (client, watch, ran) = watched().await;
    // A 2025-11-25 call with its task, which rmcp's model cannot hold, goes
    // as written: without a recorded marker it is refused unsent.
    let written = |marker: Option<&str>| {
        let mut params = json!({"name": "delete", "arguments": {}, "task": {"ttl": 1000}});
        if let Some(marker) = marker {
            params["_meta"] = json!({MARKER_KEY: marker});
        }
        ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params)))
    };
    let error = client
        .send_request(written(None))
        .await
        .expect_err("refused");
    assert_eq!(
        refusal(&error),
        Some(Unwatched::RequestUnmatched),
        "{error}"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0, "nothing unrecorded ran");
    // Recorded: it goes out, and its answer is seen.
    watch.expect("m_2", "call_2");
    client
        .send_request(written(Some("m_2")))
        .await
        .expect("runs");
    assert!(watch.answered("call_2"), "the answer was noted");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}
