//! Asks the client cannot show go to the inbox: by URL (a client offering
//! only URL mode, or a secret field), or parked with a message saying where
//! to answer (a client with no elicitation). The inbox's answer is given
//! here through the store, as the inbox page and the CLI give it.

use askgate_core::{Ask, Form, Surface};
use askgate_mcp::{Fallback, InboxLinks, Request, Rounds};
use askgate_store::Store;
use askgate_testkit::mcp::{Tools, connect};
use askgate_testkit::{Person, TempStore};
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitResult,
    ElicitationAction, InputResponses, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, RoleClient, RunningService};
use serde_json::{Value as Json, json};

fn form(secret: bool) -> Form {
    serde_json::from_value(json!({
        "message": "Rotate the billing key?",
        "fields": [
            {"id": "replicas", "title": "Replicas", "type": "integer", "minimum": 1, "maximum": 5},
            {"id": "token", "title": "New token", "type": "text", "sensitive": secret, "required": false}
        ]
    }))
    .expect("a form")
}

/// A server whose tool `rotate` asks the form and answers its outcome.
fn server(rounds: Rounds, secret: bool) -> Tools {
    Tools::new(move |params, cx| {
        let rounds = rounds.clone();
        async move {
            let mut round = rounds.begin(&cx, Request::tool(&params)).await?;
            let ask = Ask::new(form(secret)).expect("askable");
            let Some(outcome) = round.ask("rotate", ask).await? else {
                return Ok(round.respond()?);
            };
            let text = serde_json::to_string(&outcome).expect("json");
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
        }
    })
}

/// Answer a parked ask as the inbox does: the same checks, then the store.
async fn answer_in_inbox(store: &Store, id: &str, content: Json) {
    let answer = askgate_testkit::answer(content);
    askgate_testkit::answer_in_inbox(store, id, answer, "alice", Surface::Web).await;
}

struct Harness {
    client: RunningService<RoleClient, Person>,
    store: TempStore,
    person: Person,
}

/// A client that declares `capabilities` and, asked by URL, has "the
/// person" answer in the inbox (through the store) before accepting.
async fn harness(
    capabilities: Json,
    fallback: Fallback,
    secret: bool,
    lifecycle: ClientLifecycleMode,
) -> Harness {
    let store = TempStore::open().await;
    let mut inbox = InboxLinks::new("https://askgate.example/inbox").expect("an absolute URL");
    inbox.fallback = fallback;
    let rounds = Rounds::new([3u8; 32], store.store().clone()).with_inbox(inbox);
    let answering = store.store().clone();
    let person = Person::new(capabilities)
        .named("inbox-test")
        .speaking(ProtocolVersion::V_2025_11_25)
        .otherwise(ElicitResult::new(ElicitationAction::Accept))
        .before_answering(move |asked| {
            let store = answering.clone();
            async move {
                let id = asked["elicitationId"].as_str().expect("an id").to_owned();
                answer_in_inbox(&store, &id, json!({"replicas": 3})).await;
            }
        });
    let client = connect(server(rounds, secret), person.clone(), lifecycle).await;
    Harness {
        client,
        store,
        person,
    }
}

fn initialize() -> ClientLifecycleMode {
    ClientLifecycleMode::Initialize
}

fn discover() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

/// A client that opens links only (URL mode), the inbox parking asks.
async fn url_only(lifecycle: ClientLifecycleMode) -> Harness {
    harness(
        json!({"elicitation": {"url": {}}}),
        Fallback::Park,
        false,
        lifecycle,
    )
    .await
}

impl Harness {
    /// Call the tool once with `args`: the result's text, and whether it
    /// is an error.
    async fn called(&self, args: Json) -> (String, bool) {
        text(
            self.client
                .call_tool_once(call(args))
                .await
                .expect("a result"),
        )
    }
}

fn call(args: Json) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("rotate");
    params.arguments = args.as_object().cloned();
    params
}

fn text(response: CallToolResponse) -> (String, bool) {
    match response {
        CallToolResponse::Complete(result) => (
            result.content[0].as_text().expect("text").text.clone(),
            result.is_error == Some(true),
        ),
        other => panic!("expected a complete result, got {other:?}"),
    }
}

/// The ask id named in a parked message.
fn ask_id(message: &str) -> String {
    let start = message.find("ask_").expect("names the ask");
    message[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect()
}

#[tokio::test]
async fn a_url_only_client_gets_the_inbox_page_and_the_completion_notice() {
    let h = url_only(initialize()).await;
    let (text, is_error) = h.called(json!({})).await;
    assert!(!is_error);
    let outcome: Json = serde_json::from_str(&text).expect("the outcome");
    assert_eq!(outcome["outcome"], "accepted");
    assert_eq!(outcome["values"]["replicas"]["value"], 3);

    let asked = h.person.asked.all();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["mode"], "url");
    let id = asked[0]["elicitationId"].as_str().expect("an id");
    assert_eq!(
        asked[0]["url"],
        format!("https://askgate.example/inbox/asks/{id}")
    );
    // The notice may trail the result by a moment.
    h.person.told.at_least("the completion notice", 1).await;
    let completed = h.person.told.all();
    assert_eq!(
        completed,
        vec![
            json!({"method": "notifications/elicitation/complete", "params": {"elicitationId": id}})
        ]
    );
    let row = h.store.ask(id).await.expect("reads").expect("kept");
    assert_eq!(row.answered_via.as_deref(), Some("web"));
}

#[tokio::test]
async fn a_secret_goes_by_url_even_to_a_client_that_shows_forms() {
    let h = harness(
        json!({"elicitation": {"form": {}, "url": {}}}),
        Fallback::Park,
        true,
        initialize(),
    )
    .await;
    let (text, _) = h.called(json!({})).await;
    assert!(text.contains("accepted"), "{text}");
    let asked = h.person.asked.all();
    assert_eq!(asked[0]["mode"], "url", "never a form with a secret in it");
}

#[tokio::test]
async fn without_elicitation_the_call_says_where_to_answer_and_the_retry_settles() {
    for lifecycle in [initialize(), discover()] {
        let h = harness(json!({}), Fallback::Park, false, lifecycle).await;
        let args = json!({"service": "billing"});
        let (message, is_error) = h.called(args.clone()).await;
        assert!(is_error, "the tool has not run");
        let id = ask_id(&message);
        assert!(
            message.contains(&format!("https://askgate.example/inbox/asks/{id}")),
            "{message}"
        );
        // Where to answer, and nothing that answers by itself: no command,
        // no signed link.
        assert!(!message.contains("askgate asks"), "{message}");
        assert!(!message.contains("?link="), "{message}");
        assert!(message.contains("call rotate again"), "{message}");

        // Before the answer, a retry says the same, about the same ask.
        let (again, _) = h.called(args.clone()).await;
        assert_eq!(ask_id(&again), id);
        // Other arguments are another call: another ask.
        let (other, _) = h.called(json!({"service": "payroll"})).await;
        assert_ne!(ask_id(&other), id);

        answer_in_inbox(&h.store, &id, json!({"replicas": 2})).await;
        let (done, is_error) = h.called(args).await;
        assert!(!is_error);
        let outcome: Json = serde_json::from_str(&done).expect("the outcome");
        assert_eq!(outcome["values"]["replicas"]["value"], 2);
    }
}

#[tokio::test]
async fn the_block_fallback_refuses_a_client_without_elicitation() {
    let h = harness(json!({}), Fallback::Block, false, initialize()).await;
    match h.client.call_tool_once(call(json!({}))).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code.0, -32021);
            assert_eq!(
                error.data,
                Some(json!({"requiredCapabilities": {"elicitation": {}}}))
            );
        }
        other => panic!("expected -32021, got {other:?}"),
    }
}

#[tokio::test]
async fn on_2026_a_url_goes_out_as_an_input_request_and_the_retry_reads_the_inbox() {
    let h = url_only(discover()).await;
    let first = match h
        .client
        .call_tool_once(call(json!({})))
        .await
        .expect("a result")
    {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required, got {other:?}"),
    };
    let request = serde_json::to_value(&first.input_requests.as_ref().expect("requests")["rotate"])
        .expect("json");
    assert_eq!(request["params"]["mode"], "url");
    let url = request["params"]["url"].as_str().expect("a url");
    let id = url.rsplit('/').next().expect("an id").to_owned();
    let state = first.request_state.clone().expect("a state");

    let retry = |state: String| {
        let mut params = call(json!({}));
        params.input_responses = Some(
            serde_json::from_value::<InputResponses>(json!({"rotate": {"action": "accept"}}))
                .expect("responses"),
        );
        params.request_state = Some(state);
        params
    };
    // Accepted (the person went to the page) but not answered yet: asked again.
    let second = match h
        .client
        .call_tool_once(retry(state))
        .await
        .expect("a result")
    {
        CallToolResponse::InputRequired(result) => result,
        other => panic!("expected input_required again, got {other:?}"),
    };
    answer_in_inbox(&h.store, &id, json!({"replicas": 5})).await;
    let (done, _) = text(
        h.client
            .call_tool_once(retry(second.request_state.clone().expect("a state")))
            .await
            .expect("a result"),
    );
    let outcome: Json = serde_json::from_str(&done).expect("the outcome");
    assert_eq!(outcome["values"]["replicas"]["value"], 5);
}

#[tokio::test]
async fn an_inbox_answer_lets_exactly_one_call_through() {
    let h = harness(json!({}), Fallback::Park, false, initialize()).await;
    let args = json!({"service": "billing"});
    let (message, _) = h.called(args.clone()).await;
    let id = ask_id(&message);
    answer_in_inbox(&h.store, &id, json!({"replicas": 2})).await;
    let (done, is_error) = h.called(args.clone()).await;
    assert!(!is_error, "{done}");
    // The same call again: the answer was used; a new ask is parked.
    let (again, is_error) = h.called(args).await;
    assert!(is_error, "parked again: {again}");
    assert_ne!(ask_id(&again), id, "a new ask, not the used answer");
}
