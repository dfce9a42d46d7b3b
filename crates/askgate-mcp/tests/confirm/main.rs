//! Risk-gated confirmation through a real rmcp client and server: the
//! trust rules as a person and a model meet them — a person's no is final
//! and stands for the same call, the caller's word counts only where the
//! operator allows it and no ask can be shown, what no person saw moves the
//! ask to the inbox, a cancelled call never runs — what the model and the
//! audit are told, the session's threshold header over Streamable HTTP,
//! and a decision reached again on a retry audited once.

use std::time::Duration;

use askgate_core::{Ask, Call, Form, Risk, Surface};
use askgate_mcp::stored::Act;
use askgate_mcp::{
    AskOptions, Confirmations, InboxLinks, Policy, Request, Rounds, session_threshold,
};
use askgate_store::{AuditRecord, Store};
use askgate_testkit::mcp::{Tools, connect, send_call};
use askgate_testkit::person::accept;
use askgate_testkit::{Manner, Person, Seen, TempStore};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitResult,
    ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, RequestContext, RoleClient, RoleServer, RunningService};
use serde_json::{Value as Json, json};

mod approvals;
mod inbox;
mod person;
mod retries;

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
        // The same call may already have run (its gateway says so): a
        // fact about the call, not one of its arguments.
        let doubt = args.remove("doubt") == Some(json!(true));
        let risk: Risk = args["risk"]
            .as_str()
            .expect("a risk")
            .parse()
            .expect("a level");
        // Under a team's rule (see the `approvals` module): who the agent
        // acts for.
        // `veto: false`: two no's block it, not one.
        let veto = args.remove("veto") != Some(json!(false));
        let approval = args.remove("acts_for").map(|acts_for| {
            let acts_for: Vec<String> = serde_json::from_value(acts_for).expect("names");
            approvals::two_of_the_team(risk, acts_for, veto)
        });
        let threshold = session_threshold(&cx, self.configured, false)?;
        let policy = Policy {
            threshold,
            caller_confirmed,
            approval,
            arguments: Some(serde_json::Value::Object(args.clone())),
        };
        let call = Call {
            server: "files",
            tool: "delete",
            risk,
            why: None,
            preview: Some("path: /srv/data"),
            may_have_run: doubt
                .then(|| jiff::Timestamp::from_second(1_800_000_000).expect("in range")),
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
            rounds = rounds.with_inbox(InboxLinks::new("https://askgate.example/").expect("a URL"));
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
