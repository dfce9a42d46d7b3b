//! Risk-gated confirmation through a real rmcp client and server: the
//! trust rules as a person and a model meet them — a person's no is final
//! and stands for the same call, the caller's word counts only where the
//! operator allows it and no ask can be shown, what no person saw moves the
//! ask to the inbox, a cancelled call never runs — what the model and the
//! audit are told, the session's threshold header over Streamable HTTP,
//! and a decision reached again on a retry audited once.

use std::sync::Arc;
use std::time::Duration;

use askgate_core::{Ask, Call, Form, Risk, Surface};
use askgate_mcp::stored::Act;
use askgate_mcp::{
    AskOptions, Confirmations, Inbox, Policy, Request, Rounds, THRESHOLD_HEADER, session_threshold,
};
use askgate_store::{AskStatus, AuditRecord, Decision, Store};
use askgate_testkit::mcp::{Tools, cancel_once_asked, connect, send_call};
use askgate_testkit::person::{accept, cancel, decline};
use askgate_testkit::{Manner, Person, Seen, TempStore};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitResult,
    InputResponses, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::{ErrorData, ServiceExt};
use serde_json::{Value as Json, json};

/// A server with one tool, `delete`, whose arguments say its risk, whether
/// the caller confirmed, and whether a note is asked after the decision.
#[derive(Clone)]
struct Server {
    rounds: Rounds,
    configured: Option<Risk>,
    /// Once as each call's handler ends.
    ended: Seen<()>,
}

impl Server {
    /// As an MCP server.
    fn tools(self) -> Tools {
        Tools::new(move |params, cx| {
            let server = self.clone();
            async move {
                let result = server.decide(params, cx).await;
                server.ended.ring();
                result
            }
        })
    }

    async fn decide(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut args = params.arguments.clone().unwrap_or_default();
        let caller_confirmed = args.remove("confirm") == Some(json!(true));
        let risk: Risk = args["risk"]
            .as_str()
            .expect("a risk")
            .parse()
            .expect("a level");
        let threshold = session_threshold(&cx, self.configured, false)?;
        let policy = Policy {
            threshold,
            caller_confirmed,
        };
        let call = Call {
            server: "files",
            tool: "delete",
            risk,
            preview: Some("path: /srv/data"),
        };
        // The call with and without the caller's confirm is one call.
        let request = Request::tool(&params).with_arguments(Json::Object(args.clone()));
        let mut round = self.rounds.begin(&cx, request).await?;
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

struct Harness {
    client: RunningService<RoleClient, Person>,
    person: Person,
    store: TempStore,
    ended: Seen<()>,
}

/// How a harness is set up: the client, and the server's settings.
struct Setup {
    name: &'static str,
    capabilities: Json,
    script: Vec<ElicitResult>,
    configured: Option<Risk>,
    version: ProtocolVersion,
    confirmations: Confirmations,
    inbox: bool,
    hold: bool,
    /// How long each ask waits for the client (the rounds' default when
    /// `None`).
    timeout: Option<Duration>,
}

impl Setup {
    /// A person's form client, a server with the default settings and no
    /// inbox.
    fn new(capabilities: Json, script: Vec<ElicitResult>) -> Setup {
        let mut confirmations = Confirmations::default();
        // The scripted person answers at once; the timing rule has tests
        // of its own, with a client of another name.
        confirmations
            .min_answer_by_client
            .insert("person".into(), Duration::ZERO);
        Setup {
            name: "person",
            capabilities,
            script,
            configured: None,
            version: ProtocolVersion::V_2025_11_25,
            confirmations,
            inbox: false,
            hold: false,
            timeout: None,
        }
    }

    async fn start(self) -> Harness {
        let store = TempStore::open().await;
        let mut rounds =
            Rounds::new([1u8; 32], store.store().clone()).with_confirmations(self.confirmations);
        if self.inbox {
            rounds = rounds.with_inbox(Inbox::new("https://askgate.example/").expect("a URL"));
        }
        if let Some(timeout) = self.timeout {
            rounds = rounds.with_options(AskOptions {
                timeout: Some(timeout),
            });
        }
        let ended = Seen::default();
        let server = Server {
            rounds,
            configured: self.configured,
            ended: ended.clone(),
        };
        let lifecycle = if self.version == ProtocolVersion::V_2026_07_28 {
            ClientLifecycleMode::Discover {
                preferred_versions: vec![self.version.clone()],
            }
        } else {
            ClientLifecycleMode::Initialize
        };
        let mut person = Person::new(self.capabilities)
            .named(self.name)
            .speaking(self.version)
            .answering(self.script);
        if self.hold {
            // Away until withdrawn; then a late accept, which must count
            // for nothing.
            person = person
                .in_manner(Manner::Away)
                .answering(vec![accept(json!({"confirm": true}))]);
        }
        let client = connect(server.tools(), person.clone(), lifecycle).await;
        Harness {
            client,
            person,
            store,
            ended,
        }
    }
}

fn form_client() -> Json {
    json!({"elicitation": {"form": {}}})
}

/// The `delete` call with `args`.
fn delete(args: Json) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("delete");
    params.arguments = args.as_object().cloned();
    params
}

/// The verdict the tool answered with.
fn verdict_of(response: CallToolResponse) -> Json {
    match response {
        CallToolResponse::Complete(result) => {
            serde_json::from_str(&result.content[0].as_text().expect("text").text).expect("json")
        }
        other => panic!("expected a complete result, got {other:?}"),
    }
}

async fn run(client: &RunningService<RoleClient, Person>, args: Json) -> Json {
    verdict_of(client.call_tool_once(delete(args)).await.expect("a result"))
}

/// The call with `args`, made on a task of its own.
fn spawn_call(
    h: &Harness,
    args: Json,
) -> tokio::task::JoinHandle<Result<CallToolResponse, rmcp::ServiceError>> {
    let client = h.client.peer().clone();
    tokio::spawn(async move { client.call_tool_once(delete(args)).await })
}

/// The call with `args`, sent so that it can be cancelled.
async fn cancellable(h: &Harness, args: Json) -> rmcp::service::RequestHandle<RoleClient> {
    send_call(h.client.peer(), delete(args)).await
}

async fn audit(store: &Store) -> Vec<AuditRecord> {
    store.audit_entries().await.expect("reads")
}

async fn last(store: &Store) -> askgate_store::AuditEntry {
    audit(store).await.pop().expect("an entry").entry
}

/// The asks waiting in the store.
async fn pending(store: &Store) -> Vec<askgate_store::AskRow> {
    store.pending(50, None).await.expect("lists").asks
}

/// A person answers the ask `id` in the inbox (as the CLI does).
async fn answer_in_inbox(store: &Store, id: &str, act: Act) {
    askgate_testkit::answer_in_inbox(store, id, act, "alice", Surface::Cli).await;
}

fn confirmed() -> Act {
    askgate_testkit::answer(json!({"confirm": true}))
}

#[tokio::test]
async fn reads_and_low_writes_never_prompt_and_the_threshold_auto_approves() {
    let mut setup = Setup::new(form_client(), vec![]);
    setup.configured = Some(Risk::MediumWrite);
    let h = setup.start().await;
    for (risk, method) in [
        ("read", "auto_approved"),
        ("low_write", "auto_approved"),
        ("medium_write", "auto_approved"),
    ] {
        let verdict = run(&h.client, json!({"risk": risk})).await;
        assert_eq!(verdict["proceed"], true, "{risk}");
        assert_eq!(verdict["method"], method, "{risk}");
    }
    assert_eq!(h.person.asked.len(), 0, "nobody was asked");
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
    let h = Setup::new(form_client(), vec![]).start().await;
    let verdict = run(&h.client, json!({"risk": "read"})).await;
    assert_eq!(verdict["method"], "not_required");
    assert_eq!(last(&h.store).await.decision, Decision::NotRequired);
}

#[tokio::test]
async fn a_person_confirms_and_the_audit_says_who_and_where() {
    let h = Setup::new(form_client(), vec![accept(json!({"confirm": true}))])
        .start()
        .await;
    let verdict = run(
        &h.client,
        json!({"risk": "high_write", "path": "/srv/data"}),
    )
    .await;
    assert_eq!(verdict["proceed"], true);
    assert_eq!(verdict["method"], "elicited");
    let asked = h.person.asked.all();
    let message = asked[0]["message"].as_str().expect("a message");
    assert!(
        message.contains("files") && message.contains("delete") && message.contains("high write"),
        "{message}"
    );
    assert_eq!(
        asked[0]["requestedSchema"]["properties"]["confirm"]["default"],
        true
    );
    let entry = last(&h.store).await;
    assert_eq!(entry.decision, Decision::Elicited);
    assert_eq!(entry.answered_via.as_deref(), Some("mcp"));
    assert_eq!(entry.answered_by.as_deref(), Some("anonymous"));
    assert_eq!(entry.principal.as_deref(), Some("anonymous"));
    assert!(
        entry
            .arguments_digest
            .as_deref()
            .is_some_and(|d| d.starts_with("hmac-sha256:"))
    );
    let raw = serde_json::to_string(&entry).expect("json");
    assert!(
        !raw.contains("/srv/data"),
        "arguments are never stored: {raw}"
    );
}

#[tokio::test]
async fn a_persons_no_is_final_and_stands_for_the_same_call() {
    for (answer, words) in [
        (decline(), "declined"),
        (cancel(), "cancelled"),
        (accept(json!({"confirm": false})), "unticked"),
    ] {
        let h = Setup::new(form_client(), vec![answer]).start().await;
        // Even with confirm: true from the caller.
        let args = json!({"risk": "destructive", "path": "/srv", "confirm": true});
        let verdict = run(&h.client, args.clone()).await;
        assert_eq!(verdict["proceed"], false);
        assert_eq!(verdict["method"], "blocked");
        assert_eq!(verdict["final"], true);
        let for_model = verdict["for_model"].as_str().expect("text");
        assert!(
            for_model.contains("final") && for_model.contains("do not pass confirm: true"),
            "{for_model}"
        );
        let entry = last(&h.store).await;
        assert_eq!(entry.decision, Decision::Blocked);
        assert!(entry.reason.contains(words), "{}", entry.reason);

        // The same call again — with or without confirm — meets the same
        // answer, and nobody is asked again.
        for again in [args.clone(), json!({"risk": "destructive", "path": "/srv"})] {
            let verdict = run(&h.client, again).await;
            assert_eq!(verdict["final"], true, "{verdict}");
            assert_eq!(h.person.asked.len(), 1, "the person is not asked twice");
            let entry = last(&h.store).await;
            assert!(
                entry.reason.contains("this exact call earlier"),
                "{}",
                entry.reason
            );
            assert!(
                entry.ask_id.is_some(),
                "the audit names the ask that said no"
            );
        }
        // Other arguments are another call: the person is asked.
        let _ = run(&h.client, json!({"risk": "destructive", "path": "/tmp"})).await;
        assert_eq!(h.person.asked.len(), 2);
    }
}

#[tokio::test]
async fn an_accept_without_the_checkbox_is_no_persons_decision() {
    // A client that accepts without showing the prompt sends no confirm.
    let h = Setup::new(form_client(), vec![accept(json!({})), accept(json!({}))])
        .start()
        .await;
    let verdict = run(&h.client, json!({"risk": "high_write"})).await;
    assert_eq!(verdict["proceed"], false);
    assert_eq!(verdict["final"], false, "not a person's no");
    let reason = last(&h.store).await.reason;
    assert!(
        reason.starts_with("not shown: ") && reason.contains("no person saw the prompt"),
        "{reason}"
    );
    assert!(!reason.contains("the person"), "{reason}");
    // The caller's confirm: true does not turn it into an approval.
    let verdict = run(&h.client, json!({"risk": "high_write", "confirm": true})).await;
    assert_eq!(verdict["proceed"], false);
    assert_ne!(verdict["method"], "caller_confirmed");

    // With an inbox, the ask moves there.
    let mut setup = Setup::new(form_client(), vec![accept(json!({}))]);
    setup.inbox = true;
    let h = setup.start().await;
    let verdict = run(&h.client, json!({"risk": "high_write"})).await;
    assert_eq!(verdict["method"], "waiting");
    let waiting = pending(&h.store).await;
    assert_eq!(waiting.len(), 1, "parked in the inbox");
    assert_eq!(
        last(&h.store).await.ask_id.as_ref(),
        Some(&waiting[0].ask.id)
    );
}

#[tokio::test]
async fn an_answer_faster_than_a_person_reads_moves_the_ask_to_the_inbox() {
    // A headless client declines every ask at once.
    let mut setup = Setup::new(form_client(), vec![decline(), decline()]);
    setup.name = "headless";
    setup.inbox = true;
    let h = setup.start().await;
    let args = json!({"risk": "high_write"});
    let verdict = run(&h.client, args.clone()).await;
    assert_eq!(verdict["method"], "waiting");
    assert_eq!(verdict["final"], false);
    let for_model = verdict["for_model"].as_str().expect("text");
    assert!(
        for_model.contains("https://askgate.example/asks/ask_")
            && for_model.contains("call delete again"),
        "{for_model}"
    );
    let entry = last(&h.store).await;
    assert_eq!(entry.decision, Decision::Waiting);
    assert!(
        entry.reason.starts_with("not shown: the client declined ")
            && entry
                .reason
                .contains("ms after asking, before a person could have read it"),
        "{}",
        entry.reason
    );
    assert_eq!(entry.answered_by, None, "nobody answered");
    // A retry before anyone answered waits on the same ask, unasked.
    let _ = run(&h.client, args.clone()).await;
    assert_eq!(h.person.asked.len(), 1);
    let waiting = pending(&h.store).await;
    assert_eq!(waiting.len(), 1);
    // A person approves in the inbox: the retry goes ahead, theirs.
    answer_in_inbox(&h.store, &waiting[0].ask.id, confirmed()).await;
    let verdict = run(&h.client, args.clone()).await;
    assert_eq!(verdict["method"], "elicited");
    let entry = last(&h.store).await;
    assert_eq!(entry.answered_by.as_deref(), Some("alice"));
    assert_eq!(entry.answered_via.as_deref(), Some("cli"));
    // One approval, one call: the next identical call asks again.
    let verdict = run(&h.client, args).await;
    assert_eq!(verdict["method"], "waiting");
    assert_eq!(h.person.asked.len(), 2);
}

#[tokio::test]
async fn an_ask_nobody_answers_in_time_moves_to_the_inbox_and_is_withdrawn() {
    let mut setup = Setup::new(form_client(), vec![]);
    setup.hold = true;
    setup.inbox = true;
    setup.timeout = Some(Duration::from_millis(200));
    let h = setup.start().await;
    let verdict = run(&h.client, json!({"risk": "high_write"})).await;
    assert_eq!(verdict["method"], "waiting", "{verdict}");
    assert_eq!(verdict["final"], false, "nobody answered: not a no");
    h.person
        .withdrawn
        .at_least("the timed-out ask is withdrawn from the client", 1)
        .await;
    let entry = last(&h.store).await;
    assert!(
        entry
            .reason
            .starts_with("not shown: nobody answered in the client within 200 ms"),
        "{}",
        entry.reason
    );
    assert_eq!(pending(&h.store).await.len(), 1, "it waits in the inbox");
}

#[tokio::test]
async fn the_callers_word_counts_only_where_the_operator_allows_it() {
    // By default only a person approves, even where nobody can be asked.
    let h = Setup::new(json!({}), vec![]).start().await;
    let verdict = run(&h.client, json!({"risk": "medium_write", "confirm": true})).await;
    assert_eq!(verdict["proceed"], false);
    let for_model = verdict["for_model"].as_str().expect("text");
    assert!(!for_model.contains("confirm: true"), "{for_model}");

    let mut setup = Setup::new(json!({}), vec![]);
    setup.confirmations.caller_confirm = Some(Risk::MediumWrite);
    let h = setup.start().await;
    let verdict = run(&h.client, json!({"risk": "medium_write", "confirm": true})).await;
    assert_eq!(verdict["method"], "caller_confirmed");
    let entry = last(&h.store).await;
    assert_eq!(entry.answered_via, None, "no person answered");
    assert!(
        entry.reason.contains("allowed up to medium_write"),
        "{}",
        entry.reason
    );
    // Above what the operator allows: no.
    let verdict = run(&h.client, json!({"risk": "high_write", "confirm": true})).await;
    assert_eq!(verdict["proceed"], false);
    // A client that can show the ask: the person is asked, whatever the caller says.
    let mut setup = Setup::new(form_client(), vec![decline()]);
    setup.confirmations.caller_confirm = Some(Risk::Destructive);
    let h = setup.start().await;
    let verdict = run(&h.client, json!({"risk": "medium_write", "confirm": true})).await;
    assert_eq!(verdict["final"], true);
    assert_eq!(h.person.asked.len(), 1);
}

#[tokio::test]
async fn a_decline_in_the_inbox_is_not_undone_by_the_callers_word() {
    for capabilities in [json!({}), json!({"elicitation": {"url": {}}})] {
        let mut setup = Setup::new(
            capabilities.clone(),
            // A URL-only client that dismisses the link at once.
            vec![cancel()],
        );
        setup.name = "headless";
        setup.inbox = true;
        setup.confirmations.caller_confirm = Some(Risk::Destructive);
        let h = setup.start().await;
        let args = json!({"risk": "destructive"});
        let verdict = run(&h.client, args.clone()).await;
        assert_eq!(verdict["method"], "waiting", "{capabilities}: {verdict}");
        let waiting = pending(&h.store).await;
        assert_eq!(waiting.len(), 1);
        // While it waits, the caller's word does not stand in.
        let verdict = run(&h.client, json!({"risk": "destructive", "confirm": true})).await;
        assert_eq!(verdict["method"], "waiting", "{capabilities}");
        // A person declines in the inbox: final, for the same call.
        answer_in_inbox(&h.store, &waiting[0].ask.id, Act::Decline).await;
        let verdict = run(&h.client, json!({"risk": "destructive", "confirm": true})).await;
        assert_eq!(verdict["method"], "blocked", "{capabilities}");
        assert_eq!(verdict["final"], true, "{capabilities}");
        let entry = last(&h.store).await;
        assert_eq!(entry.answered_by.as_deref(), Some("alice"));
        assert!(
            entry
                .reason
                .starts_with("alice declined this exact call earlier (via cli)"),
            "{}",
            entry.reason
        );
    }
}

#[tokio::test]
async fn a_call_waits_for_the_inbox_and_keeps_its_request_alive() {
    let mut setup = Setup::new(json!({}), vec![]);
    setup.inbox = true;
    setup.confirmations.inbox_wait = Duration::from_secs(120);
    let h = setup.start().await;
    let waiting = spawn_call(&h, json!({"risk": "high_write"}));
    // The first progress notification says the call waits for the inbox.
    h.person
        .progress
        .at_least("progress while waiting", 1)
        .await;
    let parked = pending(&h.store).await;
    assert_eq!(parked.len(), 1);
    answer_in_inbox(&h.store, &parked[0].ask.id, confirmed()).await;
    let verdict = verdict_of(waiting.await.expect("joins").expect("a result"));
    assert_eq!(verdict["method"], "elicited", "answered within the wait");
    assert_eq!(last(&h.store).await.answered_by.as_deref(), Some("alice"));
}

#[tokio::test]
async fn a_cancelled_call_withdraws_its_ask_and_never_proceeds() {
    // The person is asked and never answers; the caller cancels the call.
    let mut setup = Setup::new(form_client(), vec![]);
    setup.hold = true;
    setup.confirmations.caller_confirm = Some(Risk::Destructive);
    let h = setup.start().await;
    let handle = cancellable(&h, json!({"risk": "high_write", "confirm": true})).await;
    // Once the person is being asked, the caller stops the call: the
    // dialog is withdrawn from the client.
    cancel_once_asked(&h.person, handle, Some("the user pressed stop".into())).await;
    h.ended.at_least("the call's handler ends", 1).await;
    let entry = last(&h.store).await;
    assert_eq!(entry.decision, Decision::Blocked);
    assert!(
        entry.reason.contains("cancelled by the caller"),
        "{}",
        entry.reason
    );
}

#[tokio::test]
async fn a_cancelled_wait_for_the_inbox_withdraws_the_ask() {
    let mut setup = Setup::new(json!({}), vec![]);
    setup.inbox = true;
    setup.confirmations.inbox_wait = Duration::from_secs(120);
    let h = setup.start().await;
    let handle = cancellable(&h, json!({"risk": "high_write"})).await;
    h.person.progress.at_least("waiting", 1).await;
    handle.cancel(None).await.expect("cancels");
    h.ended.at_least("the call's handler ends", 1).await;
    assert!(pending(&h.store).await.is_empty(), "withdrawn");
    let entry = last(&h.store).await;
    let ask = h
        .store
        .ask(entry.ask_id.as_deref().expect("names the ask"))
        .await
        .expect("reads")
        .expect("the ask");
    assert_eq!(ask.status, AskStatus::Cancelled);
    assert_eq!(ask.answered_via.as_deref(), Some("caller"));
    // Withdrawn by the caller is not a person's no: the same call asks
    // again, and a person's answer to the new ask lets it through.
    let seen = h.person.progress.len();
    let again = spawn_call(&h, json!({"risk": "high_write"}));
    h.person.progress.at_least("waiting again", seen + 1).await;
    let parked = pending(&h.store).await;
    assert_eq!(parked.len(), 1, "a new ask");
    assert_ne!(Some(&parked[0].ask.id), entry.ask_id.as_ref());
    answer_in_inbox(&h.store, &parked[0].ask.id, confirmed()).await;
    let verdict = verdict_of(again.await.expect("joins").expect("a result"));
    assert_eq!(verdict["method"], "elicited", "{verdict}");
}

#[tokio::test]
async fn a_decision_reached_again_on_a_retry_is_audited_once() {
    // 2026-07-28: round 1 asks the confirmation; round 2 decides it and asks
    // a note; round 3 replays the decision and completes.
    let mut setup = Setup::new(form_client(), vec![]);
    setup.version = ProtocolVersion::V_2026_07_28;
    let h = setup.start().await;
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
async fn on_2026_an_instant_answer_in_the_retry_is_not_a_persons() {
    let mut setup = Setup::new(form_client(), vec![]);
    setup.version = ProtocolVersion::V_2026_07_28;
    setup.name = "headless";
    setup.inbox = true;
    let h = setup.start().await;
    let call = |responses: Option<Json>, state: Option<String>| {
        let mut params = CallToolRequestParams::new("delete");
        params.arguments = json!({"risk": "high_write"}).as_object().cloned();
        params.input_responses =
            responses.map(|r| serde_json::from_value::<InputResponses>(r).expect("responses"));
        params.request_state = state;
        params
    };
    let CallToolResponse::InputRequired(first) = h
        .client
        .call_tool_once(call(None, None))
        .await
        .expect("a result")
    else {
        panic!("asks")
    };
    // The retry comes back at once with a decline: nobody read it.
    let done = h
        .client
        .call_tool_once(call(
            Some(json!({"confirm": {"action": "decline"}})),
            first.request_state,
        ))
        .await
        .expect("a result");
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
