//! The gateway's server side: every upstream's tools under namespaced
//! names, and every `tools/call` through risk -> confirmation -> audit and
//! ledger (one write) -> upstream -> result, the ledger told the end
//! without the answer waiting for it. A `read` call that proceeds without a
//! person does not wait for the store at all (unless `durable_reads`):
//! replaying a read is harmless, so its audit entry and ledger row are
//! written when it ends, in one write. Prompts and resources are not
//! gated; what their servers ask on the way is relayed (see the `reads`
//! module).

use std::collections::HashMap;
use std::sync::Arc;

use askgate_core::{Call, Method, Risk};
use askgate_mcp::{Decided, Policy, Request, Round, Rounds, session_threshold};
use askgate_store::{AuditEntry, CallEnd, EndedCall, NewCall};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::Timestamp;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, JsonObject, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceError};
use serde_json::{Map, Value as Json, json};
use tokio::sync::RwLock;

use super::express::Lane;

use super::background::Background;
use super::config::{Intake, Replay};
use super::downstream::Downstream;
use super::holds::Holds;
use super::metrics::Metrics;
use super::questions::{self, Asked};
use super::reads::Reads;
use super::rules::{Hints, Rules};
use super::upcall::{self, Asks, Entered, Followed, Held, Resumable};
use super::upstream::Upstream;
use askgate_mcp::replay::MARKER_KEY;

/// Between a namespace and a tool or prompt name.
pub(crate) const SEPARATOR: &str = "__";

/// Decides a tool's risk.
pub(crate) trait Judge: Send + Sync + 'static {
    /// The risk of calling `tool` of `server` with `arguments`, and the
    /// rule that gave it (for the operator).
    fn judge(&self, server: &str, tool: &Tool, arguments: &JsonObject) -> (Risk, String);
}

impl Judge for Rules {
    fn judge(&self, server: &str, tool: &Tool, arguments: &JsonObject) -> (Risk, String) {
        let judged = self.risk_with_hints(server, &tool.name, Hints::of(tool), arguments);
        (judged.risk, judged.rule.to_string())
    }
}

/// What the gateway is configured with.
pub(crate) struct Settings {
    /// How to ask and where asks are kept.
    pub(crate) rounds: Rounds,
    /// The tools' risks.
    pub(crate) judge: Box<dyn Judge>,
    /// The auto-approve threshold.
    pub(crate) threshold: Option<Risk>,
    /// Whether a session may raise it.
    pub(crate) allow_raise: bool,
    /// This gateway's name in the ledger (stable across restarts).
    pub(crate) owner: String,
    /// The replay policy.
    pub(crate) replay: Replay,
    /// Counts for /metrics.
    pub(crate) metrics: Metrics,
    /// Whether the model is offered the `ask` tool.
    pub(crate) offer_ask_tool: bool,
    /// Intake question sets before configured tools.
    pub(crate) intake: Vec<Intake>,
    /// How long an upstream call waiting on a 2026-07-28 client's retry is
    /// held (as long as a sealed state lives).
    pub(crate) hold_for: std::time::Duration,
    /// Whether a `read` call waits for its audit and ledger record to be
    /// durable before it is sent, as calls above `read` always do.
    pub(crate) durable_reads: bool,
    /// The store writes the answers do not wait for.
    pub(crate) background: Background,
}

/// The gateway, as one client session sees it: what every session shares,
/// and this session's id (see [`Gateway::for_session`]).
#[derive(Clone)]
pub(crate) struct Gateway {
    inner: Arc<Inner>,
    /// This client session: one stdio connection, or one Streamable HTTP
    /// session. Random, so no two runs share one.
    session: Arc<str>,
}

struct Inner {
    settings: Settings,
    upstreams: Vec<Upstream>,
    downstream: Downstream,
    /// Namespaced tool name -> (upstream, tool). Never held across an
    /// await: the express lane reads it without one.
    tools: std::sync::RwLock<HashMap<String, (usize, Tool)>>,
    /// Resource URI -> upstream.
    resources: RwLock<HashMap<String, usize>>,
    /// Upstream calls waiting on a client's retry, by handle.
    held: Holds,
    /// Prompts and resources read through the gateway, and their
    /// upstream requests waiting on a client's retry.
    reads: Reads,
}

impl Gateway {
    /// A gateway over `upstreams`, relaying their asks to `downstream`.
    pub(crate) fn new(
        settings: Settings,
        upstreams: Vec<Upstream>,
        downstream: Downstream,
    ) -> Gateway {
        let (held, reads) = (Holds::new(settings.hold_for), Reads::new(settings.hold_for));
        Gateway {
            session: session_id(),
            inner: Arc::new(Inner {
                settings,
                upstreams,
                downstream,
                tools: std::sync::RwLock::new(HashMap::new()),
                resources: RwLock::new(HashMap::new()),
                held,
                reads,
            }),
        }
    }

    /// The metrics, and the store they count pending asks in.
    pub(crate) fn metrics(&self) -> (&Metrics, &askgate_store::Store) {
        (
            &self.inner.settings.metrics,
            self.inner.settings.rounds.store(),
        )
    }

    /// The gateway for a new client session (a stdio connection, a
    /// Streamable HTTP session): the same upstreams, store and settings,
    /// its own session id.
    pub(crate) fn for_session(&self) -> Gateway {
        Gateway {
            inner: Arc::clone(&self.inner),
            session: session_id(),
        }
    }

    /// Note the client of this session, for `principal`: from now on an
    /// upstream's asks outside any call may go to it, when it is the only
    /// principal connected (see the `downstream` module).
    fn note_client(&self, principal: &str, peer: rmcp::service::Peer<RoleServer>) {
        self.inner.downstream.note(&self.session, principal, peer);
    }

    /// Whether the intake `which` is due for `principal` in this session,
    /// from what the store recorded — never from process memory.
    async fn intake_due(
        &self,
        which: usize,
        when: askgate_core::IntakeWhen,
        principal: &str,
    ) -> Result<bool, ErrorData> {
        let settled = self
            .inner
            .settings
            .rounds
            .store()
            .token_consumed(&self.intake_token(which, principal))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the ask store failed: {e}"), None))?;
        // Every call of the tool is a turn.
        let thread = askgate_core::ThreadState {
            turn: 1,
            intake_settled_turn: settled.then_some(0),
            intake_pending: false,
        };
        Ok(when.is_due(thread))
    }

    /// Record that the intake `which` settled for `principal` in this
    /// session.
    async fn intake_settled(&self, which: usize, principal: &str) -> Result<(), ErrorData> {
        let now = Timestamp::now();
        let kept = now
            .checked_add(jiff::SignedDuration::from_hours(24 * 30))
            .unwrap_or(Timestamp::MAX);
        self.inner
            .settings
            .rounds
            .store()
            .consume_token(&self.intake_token(which, principal), kept, now)
            .await
            .map(|_| ())
            .map_err(|e| ErrorData::internal_error(format!("the ask store failed: {e}"), None))
    }

    /// The store's token that says an intake settled for a principal in
    /// this session.
    fn intake_token(&self, which: usize, principal: &str) -> String {
        use sha2::Digest;
        let principal = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(principal.as_bytes()));
        format!("intake:{which}:{principal}:{}", self.session)
    }

    /// The configured auto-approve threshold.
    pub(crate) fn threshold(&self) -> Option<Risk> {
        self.inner.settings.threshold
    }

    /// Every upstream tool, namespaced, with its risk and the rule that
    /// gave it — re-read from the upstreams. An upstream that fails is
    /// left out (and logged), not fatal.
    pub(crate) async fn refresh_tools(&self) -> Vec<Catalogued> {
        let mut listed = Vec::new();
        let mut map = HashMap::new();
        for (index, upstream) in self.inner.upstreams.iter().enumerate() {
            match upstream.service.list_all_tools().await {
                Ok(tools) => {
                    for tool in tools {
                        let name = format!("{}{SEPARATOR}{}", upstream.name, tool.name);
                        let (risk, rule) = self.inner.settings.judge.judge(
                            &upstream.name,
                            &tool,
                            &JsonObject::new(),
                        );
                        map.insert(name.clone(), (index, tool.clone()));
                        listed.push(Catalogued {
                            name,
                            server: upstream.name.clone(),
                            tool,
                            risk,
                            rule,
                        });
                    }
                }
                Err(error) => {
                    tracing::warn!(upstream = %upstream.name, %error, "listing tools failed; its tools are left out");
                }
            }
        }
        *self
            .inner
            .tools
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = map;
        listed
    }

    /// The upstream and tool listed as `name`, as last listed.
    fn listed_tool(&self, name: &str) -> Option<(usize, Tool)> {
        self.inner
            .tools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    async fn tool(&self, name: &str) -> Option<(usize, Tool)> {
        if let Some(found) = self.listed_tool(name) {
            return Some(found);
        }
        self.refresh_tools().await;
        self.listed_tool(name)
    }

    /// The plan for a call of `name` with `arguments` when its upstream's
    /// express lane is open, it needs no person and nothing waits for its
    /// record (see [`super::express`]):
    /// `None` for any call that must go through a round.
    pub(crate) fn unattended(&self, name: &str, arguments: JsonObject) -> Option<Plan> {
        let settings = &self.inner.settings;
        if settings.offer_ask_tool && name == askgate_core::ask_tool::NAME {
            return None;
        }
        let (index, tool) = self.listed_tool(name)?;
        // First what is cheap to check: a lane to an upstream that answers
        // on a classic revision.
        if !self.lane(index).is_some_and(|lane| lane.is_open()) {
            return None;
        }
        let server = &self.inner.upstreams[index].name;
        if super::config::intake_for(&settings.intake, server, &tool.name).is_some() {
            return None;
        }
        // Bound the records not yet written, as `forward` does.
        if !settings.background.has_room() {
            return None;
        }
        let mut arguments = arguments;
        take_confirm(&tool, &mut arguments);
        let (risk, rule) = settings.judge.judge(server, &tool, &arguments);
        let call = Call {
            server,
            tool: &tool.name,
            risk,
            preview: None,
        };
        // The lane serves stdio: one client, whom nothing authenticates.
        let decided = settings.rounds.decide_unattended(
            &call,
            settings.threshold,
            askgate_mcp::Principal::ANONYMOUS,
            &Json::Object(arguments.clone()),
        )?;
        if self.waits_for_record(risk, &decided) {
            return None;
        }
        tracing::debug!(server = %server, tool = %tool.name, risk = risk.as_str(), rule, "judged");
        Some(Plan {
            index,
            server: server.clone(),
            tool: tool.name.to_string(),
            arguments,
            decided,
        })
    }

    /// The upstream `index`'s express lane, when it has one.
    pub(crate) fn lane(&self, index: usize) -> Option<&Arc<Lane>> {
        self.inner.upstreams.get(index)?.lane.as_ref()
    }

    /// Whether upstream calls carry the replay contract's marker.
    pub(crate) fn marks_calls(&self) -> bool {
        self.inner.settings.replay == Replay::AppAuthorized
    }

    /// The ledger call of `plan`, about to be sent on the express lane:
    /// its id, its marker, and how its end is recorded (with its decision,
    /// in one write, when it ends). Logs and counts the decision.
    pub(crate) fn express_record(&self, plan: &Plan) -> Result<(String, String, End), ErrorData> {
        let (call, marker) = self.new_call(plan.index, &plan.tool, &plan.arguments)?;
        let settings = &self.inner.settings;
        settings
            .metrics
            .decision(plan.decided.verdict.method.as_str());
        plan.decided.log();
        let id = call.id.clone();
        let end = End::Record(Box::new(Unrecorded {
            store: settings.rounds.store().clone(),
            background: settings.background.clone(),
            entry: Some(plan.decided.entry.clone()),
            call,
            marker: marker.clone(),
        }));
        Ok((id, marker, end))
    }

    /// Count an upstream call that ended with `outcome` after `took`.
    pub(crate) fn count_call(&self, server: &str, outcome: &str, took: std::time::Duration) {
        self.inner.settings.metrics.call(server, outcome, took);
    }

    /// Record the end of ledger call `id` without waiting for it.
    pub(crate) fn finish_call(&self, end: End, id: &str, answered: bool, summary: Json) {
        end.finish(&self.inner.settings.background, id, answered, summary);
    }

    /// Leave every call on the express lanes (the gateway stops): each is
    /// ledgered as sent.
    pub(crate) fn abandon_express(&self) {
        for lane in self.inner.upstreams.iter().filter_map(|u| u.lane.as_ref()) {
            lane.abandon();
        }
    }

    /// A new ledger call of `tool` on upstream `index`, and its marker.
    fn new_call(
        &self,
        index: usize,
        tool: &str,
        arguments: &JsonObject,
    ) -> Result<(NewCall, String), ErrorData> {
        let digest =
            askgate_core::arguments_digest(b"askgate ledger", &Json::Object(arguments.clone()));
        let call = NewCall {
            id: random("call")?,
            owner: self.inner.settings.owner.clone(),
            server: self.inner.upstreams[index].name.clone(),
            tool: tool.to_owned(),
            arguments_digest: Some(digest),
            at: Timestamp::now(),
        };
        Ok((call, random("m")?))
    }

    /// Report calls a crash may have left run-but-unanswered.
    pub(crate) async fn recover(&self) -> Result<(), String> {
        let store = self.inner.settings.rounds.store();
        let lost = store
            .recover_calls(&self.inner.settings.owner, Timestamp::now())
            .await
            .map_err(|e| e.to_string())?;
        for call in lost {
            tracing::warn!(
                call = %call.call.id,
                server = %call.call.server,
                tool = %call.call.tool,
                "sent before the last stop and never answered: it may have run; it is not sent again"
            );
        }
        Ok(())
    }

    /// Wait for the store writes the answers did not wait for.
    pub(crate) async fn settle_writes(&self) {
        self.inner.settings.background.idle().await;
    }

    /// Whether a call let through by `decided` waits for its record to be
    /// durable before it is sent: every call above `read`, and a `read`
    /// call that a person decided, or when the operator asked for it.
    fn waits_for_record(&self, risk: Risk, decided: &Decided) -> bool {
        let unattended = matches!(
            decided.verdict.method,
            Method::NotRequired | Method::AutoApproved
        );
        self.inner.settings.durable_reads || risk > Risk::Read || !unattended
    }

    /// Forward an approved call to its upstream, recorded in the ledger
    /// with its decision's audit entry — durable before the request leaves
    /// when `durable`, else written when the call ends: the call, to follow
    /// (see [`Held::follow`]). The answer never waits for the end's record.
    /// `None` when the client cancelled the call before it was sent: it is
    /// not sent (and its ledger row, if written, says so).
    async fn forward(
        &self,
        approved: Approved<'_>,
        resumed: Option<&Resumable>,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Option<Held>, ErrorData> {
        let Approved {
            index,
            tool,
            arguments,
            principal,
            decided,
            durable,
        } = approved;
        let upstream = &self.inner.upstreams[index];
        let start = match resumed.map(Resumable::needed).transpose() {
            Ok(start) => start,
            Err(why) => {
                return Err(ErrorData::invalid_params(
                    format!("the retry's state cannot resume the call to {tool}: {why}"),
                    None,
                ));
            }
        };
        let store = self.inner.settings.rounds.store();
        let background = &self.inner.settings.background;
        let (call, marker) = self.new_call(index, tool, &arguments)?;
        let id = call.id.clone();
        let end = if durable {
            let mut recording: Recording = {
                let (store, entry, call, marker) = (
                    store.clone(),
                    decided.entry.clone(),
                    call.clone(),
                    marker.clone(),
                );
                Box::pin(async move {
                    store
                        .record_sent_call(&entry, &call, &marker, call.at)
                        .await
                        .map(|_| ())
                })
            };
            let recorded = tokio::select! {
                recorded = &mut recording => recorded,
                // Cancelled while its record is written (a stalled store):
                // it is not sent, and its record, once written, says so.
                () = cx.ct.cancelled() => {
                    self.not_sent(recording, &call.id, tool, &upstream.name);
                    return Ok(None);
                }
            };
            recorded.map_err(|e| {
                ErrorData::internal_error(
                    format!(
                        "the ledger failed to record the call to {tool} on {}: {e}; the request was not sent",
                        upstream.name
                    ),
                    None,
                )
            })?;
            if cx.ct.is_cancelled() {
                self.not_sent(Box::pin(async { Ok(()) }), &call.id, tool, &upstream.name);
                return Ok(None);
            }
            End::Queue(store.clone())
        } else {
            // Bounded: a store that falls behind slows reads down rather
            // than letting their records pile up in memory.
            background.room().await;
            End::Record(Box::new(Unrecorded {
                store: store.clone(),
                background: background.clone(),
                entry: Some(decided.entry.clone()),
                call: call.clone(),
                marker: marker.clone(),
            }))
        };
        decided.log();
        let (asks, asked) = tokio::sync::mpsc::unbounded_channel();
        let entered = upstream.inflight.enter(&id, principal, asks.clone());
        let call = Upcall {
            gateway: self.clone(),
            index,
            tool: tool.to_owned(),
            id,
            end: Some(end),
        };
        if resumed.is_some() {
            tracing::info!(call = %call.id, server = %upstream.name, tool, "resuming a call held before a restart: sending its server's round again with the retry's answers");
        }
        let held = Held::new(call.run(arguments, marker, asks, entered, start), asked);
        Ok(Some(match resumed {
            Some(resumed) => held.with_keys(resumed.keys()),
            None => held,
        }))
    }

    /// The call `id` is recorded as sent by `recording` (still running, or
    /// done), and its client cancelled it before it left: once the record
    /// is written, its end is recorded as not sent.
    fn not_sent(&self, recording: Recording, id: &str, tool: &str, server: &str) {
        tracing::info!(call = %id, server, tool, "cancelled by its client before it was sent; not sent");
        let store = self.inner.settings.rounds.store().clone();
        let id = id.to_owned();
        self.inner.settings.background.spawn(async move {
            if recording.await.is_err() {
                // Not recorded: nothing says it was sent.
                return;
            }
            let summary = json!({"not_sent": "cancelled by the caller"});
            if let Err(error) = store
                .finish_call(&id, false, &summary, Timestamp::now())
                .await
            {
                tracing::warn!(call = %id, %error, "the ledger did not record that a cancelled call was not sent");
            }
        });
    }

    /// Follow `held` in `round`: its result, or the round's input requests
    /// with the call held for the retry.
    async fn follow(
        &self,
        held: Held,
        mut round: Round,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match held.follow(&mut round, &cx.peer).await {
            Followed::Done(response) => response,
            Followed::Waiting(held) => {
                let resumable = held.resumable().and_then(|r| serde_json::to_value(r).ok());
                let handle = self.inner.held.hold(held)?;
                round.carry(HELD, Json::String(handle));
                // Null: an earlier round's, if any, no longer applies.
                round.carry(RESUME, resumable.unwrap_or(Json::Null));
                Ok(round.respond()?)
            }
        }
    }

    /// A retry of a call whose upstream was waiting on the client's
    /// answers, no longer held: its server's round to send again with the
    /// retry's answers, when its server asked in an `InputRequiredResult`
    /// (carried as [`RESUME`]); else an error — the call may have run, and
    /// is not sent again.
    fn resumable(round: &Round, tool: &str) -> Result<Resumable, ErrorData> {
        round
            .carried(RESUME)
            .and_then(|r| serde_json::from_value::<Resumable>(r.clone()).ok())
            .ok_or_else(|| {
                ErrorData::invalid_request(
                    format!(
                        "the call to {tool} was sent and its server was waiting on an answer that askgate no longer holds (askgate restarted, or the wait passed its limit); it may have run, and it is not sent again — call again to start over"
                    ),
                    None,
                )
            })
    }
}

/// The write that records a call as sent, run to its end even when the
/// call is cancelled meanwhile.
type Recording =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), askgate_store::Error>> + Send>>;

/// An upstream tool as the gateway lists it.
pub(crate) struct Catalogued {
    /// Its name downstream: `<server>__<tool>`.
    pub(crate) name: String,
    /// Its upstream.
    pub(crate) server: String,
    /// The tool as its upstream lists it.
    pub(crate) tool: Tool,
    /// Its risk.
    pub(crate) risk: Risk,
    /// The rule that gave it.
    pub(crate) rule: String,
}

/// A call approved to go upstream, as [`Gateway::forward`] takes it.
struct Approved<'a> {
    /// The upstream.
    index: usize,
    /// The tool, by its upstream name.
    tool: &'a str,
    /// The arguments to send.
    arguments: JsonObject,
    /// Who asked for it.
    principal: &'a str,
    /// The decision, and its audit entry.
    decided: Decided,
    /// Whether its record is durable before it is sent.
    durable: bool,
}

/// A call the express lane may take: it needs no person, and nothing
/// waits for its record.
pub(crate) struct Plan {
    /// The upstream.
    pub(crate) index: usize,
    /// The upstream's name.
    pub(crate) server: String,
    /// The tool, by its upstream name.
    pub(crate) tool: String,
    /// The arguments to send (the caller's `confirm` taken out).
    pub(crate) arguments: JsonObject,
    /// The decision, and its audit entry.
    pub(crate) decided: Decided,
}

/// The key in a round's carried state of a held call's server's round
/// (see [`Resumable`]).
pub(crate) const RESUME: &str = "resume";

/// The key in a round's carried state of a held upstream call.
pub(crate) const HELD: &str = "held";

/// One upstream call, from the ledger's `sent` to its end.
struct Upcall {
    gateway: Gateway,
    index: usize,
    tool: String,
    /// The ledger's id.
    id: String,
    /// How its end reaches the ledger (taken when it ends).
    end: Option<End>,
}

impl Upcall {
    /// Send the call, relay what its server asks in `InputRequiredResult`s
    /// through `asks` and send it again with the answers, until it
    /// completes; record its end in the ledger.
    async fn run(
        mut self,
        arguments: JsonObject,
        mut marker: String,
        asks: Asks,
        entered: Entered,
        start: Option<rmcp::model::InputRequiredResult>,
    ) -> upcall::Response {
        let mut end = self.end.take();
        let upstream = &self.gateway.inner.upstreams[self.index];
        let settings = &self.gateway.inner.settings;
        let tool = self.tool.as_str();
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        let started = std::time::Instant::now();
        let mut rounds = 0;
        let mut needed = start;
        let result = loop {
            if let Some(needed) = needed.take() {
                let responses = match upcall::answers(&needed, &asks).await {
                    Ok(responses) => responses,
                    Err(why) => {
                        finish(
                            &mut end,
                            &settings.background,
                            &self.id,
                            false,
                            json!({"failure": "an input its server asked for was not given"}),
                        );
                        return Err(ErrorData::invalid_request(
                            format!(
                                "{} asked for input to run {tool}, and askgate could not get it: {why}; the call did not complete",
                                upstream.name
                            ),
                            None,
                        ));
                    }
                };
                params.input_responses = Some(responses);
                params.request_state = needed.request_state;
                marker = match random("m") {
                    Ok(marker) => marker,
                    Err(error) => break Err(ServiceError::McpError(error)),
                };
            }
            if settings.replay == Replay::AppAuthorized {
                let mut meta = rmcp::model::RequestMetaObject::default();
                meta.insert(MARKER_KEY.to_owned(), Json::String(marker.clone()));
                params.meta = Some(meta);
                upstream.watch.expect(&marker, &self.id);
            }
            let result = upstream.service.call_tool_once(params.clone()).await;
            let Ok(CallToolResponse::InputRequired(asked)) = &result else {
                break result;
            };
            rounds += 1;
            if rounds > askgate_mcp::client::MAX_ROUNDS {
                break result;
            }
            needed = Some(asked.clone());
        };
        drop(entered);
        let took = started.elapsed();
        let observed = upstream.watch.answered(&self.id);
        let refused = result.as_ref().err().and_then(askgate_mcp::replay::refusal);
        let outcome = match (&result, refused) {
            (Ok(CallToolResponse::Complete(_)), _) => "answered",
            (Err(_), Some(_)) => "not_sent",
            _ => "failed",
        };
        settings.metrics.call(&upstream.name, outcome, took);
        match result {
            Ok(CallToolResponse::Complete(result)) => {
                if settings.replay == Replay::AppAuthorized && !observed {
                    tracing::warn!(upstream = %upstream.name, tool, "an answer arrived that the watcher did not see");
                }
                finish(
                    &mut end,
                    &settings.background,
                    &self.id,
                    true,
                    json!({"is_error": result.is_error.unwrap_or(false), "blocks": result.content.len()}),
                );
                Ok(upcall::complete(result))
            }
            Ok(CallToolResponse::InputRequired(_)) => {
                finish(
                    &mut end,
                    &settings.background,
                    &self.id,
                    false,
                    json!({"failure": "the server kept asking for input"}),
                );
                Err(ErrorData::internal_error(
                    format!(
                        "{} kept asking for input to run {tool}, past {} rounds; askgate stopped",
                        upstream.name,
                        askgate_mcp::client::MAX_ROUNDS
                    ),
                    None,
                ))
            }
            Ok(_) => {
                finish(
                    &mut end,
                    &settings.background,
                    &self.id,
                    false,
                    json!({"failure": "the upstream answered with a task"}),
                );
                Err(ErrorData::internal_error(
                    format!(
                        "{} answered {tool} with a task, which askgate does not relay yet",
                        upstream.name
                    ),
                    None,
                ))
            }
            Err(_) if refused.is_some() => {
                upstream.watch.forget(&marker);
                let reason = refused.map_or("request-unmatched", |why| why.as_str());
                finish(
                    &mut end,
                    &settings.background,
                    &self.id,
                    false,
                    json!({"not_sent": reason}),
                );
                Err(ErrorData::new(
                    rmcp::model::ErrorCode::INTERNAL_ERROR,
                    format!(
                        "ERR_MCP_REPLAY_UNAVAILABLE ({reason}): the call to {tool} on {} could not be watched, so it was not sent",
                        upstream.name
                    ),
                    Some(
                        json!({"code": "ERR_MCP_REPLAY_UNAVAILABLE", "reason": reason,
                                "server": upstream.name, "tool": tool, "sent": false}),
                    ),
                ))
            }
            Err(error) => {
                finish(
                    &mut end,
                    &settings.background,
                    &self.id,
                    false,
                    json!({"failure": "transport or upstream error"}),
                );
                Err(ErrorData::internal_error(
                    format!("{} failed on {tool}: {error}", upstream.name),
                    None,
                ))
            }
        }
    }
}

/// Record the end of call `id` in the ledger, once, without waiting for it.
fn finish(end: &mut Option<End>, background: &Background, id: &str, answered: bool, summary: Json) {
    if let Some(end) = end.take() {
        end.finish(background, id, answered, summary);
    }
}

/// How the end of a call reaches the ledger.
pub(crate) enum End {
    /// Its record is durable: queue the end in the store's next batch.
    Queue(askgate_store::Store),
    /// Nothing is recorded yet (a read): record the call as it ended, with
    /// its decision, in one write.
    Record(Box<Unrecorded>),
}

impl End {
    /// Record the end of call `id` without waiting for it.
    pub(crate) fn finish(self, background: &Background, id: &str, answered: bool, result: Json) {
        match self {
            End::Queue(store) => {
                let finishing = store.queue_finish_call(id, answered, &result, Timestamp::now());
                let id = id.to_owned();
                background.spawn(async move {
                    if let Err(error) = finishing.await {
                        tracing::warn!(call = %id, %error, "the ledger did not record the end of a call");
                    }
                });
            }
            End::Record(unrecorded) => unrecorded.ended(answered, result),
        }
    }
}

/// A read call sent before its audit entry and ledger record were written:
/// they are written when it ends, in one write — or, if the call is
/// dropped before it ends (the client went away), as `sent`.
pub(crate) struct Unrecorded {
    store: askgate_store::Store,
    background: Background,
    /// `None` once handed to the write.
    entry: Option<AuditEntry>,
    call: NewCall,
    marker: String,
}

impl Unrecorded {
    fn ended(mut self, answered: bool, result: Json) {
        self.write(Some(CallEnd {
            answered,
            result,
            at: Timestamp::now(),
        }));
    }

    fn write(&mut self, end: Option<CallEnd>) {
        let Some(entry) = self.entry.take() else {
            return;
        };
        let (call, marker) = (self.call.clone(), std::mem::take(&mut self.marker));
        if let Some(end) = end {
            let sent_at = call.at;
            let ended = EndedCall {
                entry,
                call,
                marker,
                sent_at,
                end,
            };
            self.background.record_ended(&self.store, ended);
            return;
        }
        let store = self.store.clone();
        self.background.spawn(async move {
            if let Err(error) = store.record_sent_call(&entry, &call, &marker, call.at).await {
                tracing::warn!(call = %call.id, %error, "the audit entry and ledger record of a read call were not written");
            }
        });
    }
}

impl Drop for Unrecorded {
    fn drop(&mut self) {
        self.write(None);
    }
}

/// Who a request is for: its authenticated principal, else the anonymous
/// one (stdio).
fn principal_of(cx: &RequestContext<RoleServer>) -> String {
    askgate_mcp::Principal::of(cx)
        .map_or_else(|| askgate_mcp::Principal::ANONYMOUS.to_owned(), |p| p.0)
}

/// A new session's id: random, so no two sessions (nor two runs) share
/// one.
fn session_id() -> Arc<str> {
    let id = random("session")
        .unwrap_or_else(|_| format!("session_{}", Timestamp::now().as_nanosecond()));
    Arc::from(id)
}

/// A random id with a prefix.
pub(crate) fn random(prefix: &str) -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| ErrorData::internal_error(format!("no randomness: {e}"), None))?;
    Ok(format!("{prefix}_{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// The caller's `confirm: true`, taken out of the arguments unless the
/// tool has a `confirm` argument of its own.
fn take_confirm(tool: &Tool, arguments: &mut JsonObject) -> bool {
    let own = tool
        .input_schema
        .get("properties")
        .and_then(Json::as_object)
        .is_some_and(|p| p.contains_key("confirm"));
    if own {
        return false;
    }
    arguments.remove("confirm") == Some(Json::Bool(true))
}

/// A short view of the arguments for the person: values cut short, and
/// values of secret-sounding keys hidden.
pub(crate) fn preview(arguments: &JsonObject) -> String {
    const SECRET: [&str; 6] = ["token", "secret", "password", "key", "credential", "auth"];
    let mut parts = Vec::new();
    for (key, value) in arguments {
        let lower = key.to_ascii_lowercase();
        let shown = if SECRET.iter().any(|s| lower.contains(s)) {
            "[hidden]".to_owned()
        } else {
            let text = match value {
                Json::String(s) => format!("{s:?}"),
                other => other.to_string(),
            };
            if text.chars().count() > 80 {
                format!("{}…", text.chars().take(80).collect::<String>())
            } else {
                text
            }
        };
        parts.push(format!("{key}: {shown}"));
    }
    parts.join(", ")
}

/// The tool as listed downstream: namespaced, with `confirm` offered only
/// where the caller's word may stand in for a person (`caller_confirm`):
/// elsewhere it would only tempt the model.
fn listed(name: String, tool: &Tool, risk: Risk, caller_confirm: Option<Risk>) -> Tool {
    let mut tool = tool.clone();
    tool.name = name.into();
    if risk > Risk::LowWrite && caller_confirm.is_some_and(|most| risk <= most) {
        let mut schema: Map<String, Json> = (*tool.input_schema).clone();
        let properties = schema
            .entry("properties")
            .or_insert_with(|| Json::Object(Map::new()));
        if let Json::Object(properties) = properties
            && !properties.contains_key("confirm")
        {
            properties.insert(
                "confirm".into(),
                json!({"type": "boolean", "description":
                    "Pass true only if the user already confirmed this exact call in the conversation and this client cannot show askgate's confirmation."}),
            );
        }
        tool.input_schema = Arc::new(schema);
    }
    let note = format!("[askgate: risk {risk}]");
    tool.description = Some(match tool.description.take() {
        Some(text) => format!("{text} {note}").into(),
        None => note.into(),
    });
    tool
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .build(),
        )
        .with_instructions(
            "askgate: the tools of the servers behind it, each call confirmed by a person when its risk calls for it.",
        )
    }

    /// The client is connected: from now on an upstream's asks outside a
    /// call the gateway handles — during a call on the express lane, say —
    /// go to it.
    async fn on_initialized(&self, cx: NotificationContext<RoleServer>) {
        let principal = cx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<askgate_mcp::Principal>())
            .map_or(askgate_mcp::Principal::ANONYMOUS, |p| p.0.as_str())
            .to_owned();
        self.note_client(&principal, cx.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.note_client(&principal_of(&cx), cx.peer.clone());
        let caller_confirm = self.inner.settings.rounds.confirmations().caller_confirm;
        let tools = self
            .refresh_tools()
            .await
            .into_iter()
            .map(|found| listed(found.name, &found.tool, found.risk, caller_confirm))
            .chain(
                self.inner
                    .settings
                    .offer_ask_tool
                    .then(questions::ask_tool)
                    .flatten(),
            )
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let principal = principal_of(&cx);
        self.note_client(&principal, cx.peer.clone());
        if self.inner.settings.offer_ask_tool && params.name == askgate_core::ask_tool::NAME {
            let mut round = self
                .inner
                .settings
                .rounds
                .begin(&cx, Request::tool(&params))
                .await?;
            let arguments = params.arguments.clone().unwrap_or_default();
            return match questions::ask(&mut round, &arguments, &principal).await? {
                Some(result) => Ok(result.into()),
                None => Ok(round.respond()?),
            };
        }
        let Some((index, tool)) = self.tool(&params.name).await else {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}; tools/list names them as <server>{SEPARATOR}<tool>",
                    params.name
                ),
                None,
            ));
        };
        let server = self.inner.upstreams[index].name.clone();
        let mut arguments = params.arguments.clone().unwrap_or_default();
        let caller_confirmed = take_confirm(&tool, &mut arguments);
        let (risk, rule) = self.inner.settings.judge.judge(&server, &tool, &arguments);
        let threshold = session_threshold(
            &cx,
            self.inner.settings.threshold,
            self.inner.settings.allow_raise,
        )?;
        let shown = preview(&arguments);
        let call = Call {
            server: &server,
            tool: &tool.name,
            risk,
            preview: (!shown.is_empty()).then_some(shown.as_str()),
        };
        // The call with and without the caller's confirm is one call: its
        // asks, a person's answer to them and its sealed state are bound to
        // the arguments without it.
        let request = Request::tool(&params).with_arguments(Json::Object(arguments.clone()));
        let mut round = self.inner.settings.rounds.begin(&cx, request).await?;
        let mut resumed = None;
        if let Some(Json::String(handle)) = round.carried(HELD).cloned() {
            // Approved and sent in an earlier round; its server waits on
            // answers this retry brings.
            if let Some(held) = self.inner.held.take(&handle) {
                return self.follow(held, round, &cx).await;
            }
            // No longer held (a restart), its server's round carried:
            // decide again (the decision is recorded once, under its key)
            // and send that round again with this retry's answers.
            resumed = Some(Self::resumable(&round, &params.name)?);
        }
        let policy = Policy {
            threshold,
            caller_confirmed,
        };
        // Intake first: questions configured before this tool's calls.
        let mut intake_text = None;
        let intake = super::config::intake_for(&self.inner.settings.intake, &server, &tool.name);
        if let Some((which, intake)) = intake
            && self.intake_due(which, intake.when, &principal).await?
        {
            match questions::put(&mut round, "intake", intake.questions.clone(), &principal).await?
            {
                Asked::Settled(text) => {
                    self.intake_settled(which, &principal).await?;
                    intake_text = Some(text);
                }
                Asked::Waiting => return Ok(round.respond()?),
            }
        }
        let Some(decided) = round.decide("confirm", &call, policy).await? else {
            return Ok(round.respond()?);
        };
        tracing::debug!(server = %server, tool = %tool.name, risk = risk.as_str(), rule, "judged");
        self.inner
            .settings
            .metrics
            .decision(decided.verdict.method.as_str());
        if !decided.verdict.proceed {
            decided.audit(&round).await?;
            return Ok(
                CallToolResult::error(vec![ContentBlock::text(decided.verdict.for_model)]).into(),
            );
        }
        // Cancelled while it was being decided: it is not sent.
        if round.is_cancelled() {
            let cancelled = round.cancelled("confirm", &call);
            cancelled.audit(&round).await?;
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                cancelled.verdict.for_model,
            )])
            .into());
        }
        let durable = self.waits_for_record(risk, &decided);
        let approved = Approved {
            index,
            tool: &tool.name,
            arguments,
            principal: &principal,
            decided,
            durable,
        };
        let Some(held) = self.forward(approved, resumed.as_ref(), &cx).await? else {
            let cancelled = round.cancelled("confirm", &call);
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                cancelled.verdict.for_model,
            )])
            .into());
        };
        let response = self.follow(held, round, &cx).await?;
        Ok(match (intake_text, response) {
            (Some(text), CallToolResponse::Complete(mut result)) => {
                result.content.insert(0, ContentBlock::text(text));
                result.into()
            }
            (_, response) => response,
        })
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut prompts = Vec::new();
        for upstream in &self.inner.upstreams {
            match upstream.service.list_all_prompts().await {
                Ok(listed) => prompts.extend(listed.into_iter().map(|mut prompt: Prompt| {
                    prompt.name = format!("{}{SEPARATOR}{}", upstream.name, prompt.name);
                    prompt
                })),
                Err(error) => tracing::debug!(upstream = %upstream.name, %error, "no prompts"),
            }
        }
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let (namespace, name) = params.name.split_once(SEPARATOR).ok_or_else(|| {
            ErrorData::invalid_params(format!("unknown prompt {:?}", params.name), None)
        })?;
        let upstream = self
            .inner
            .upstreams
            .iter()
            .find(|u| u.name == namespace)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("unknown prompt {:?}", params.name), None)
            })?;
        let rounds = &self.inner.settings.rounds;
        self.inner
            .reads
            .prompt(upstream, name, &params, rounds, &cx)
            .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut resources = Vec::new();
        let mut map = HashMap::new();
        for (index, upstream) in self.inner.upstreams.iter().enumerate() {
            match upstream.service.list_all_resources().await {
                Ok(listed) => {
                    for resource in listed {
                        map.entry(resource.uri.clone()).or_insert(index);
                        resources.push(resource);
                    }
                }
                Err(error) => tracing::debug!(upstream = %upstream.name, %error, "no resources"),
            }
        }
        *self.inner.resources.write().await = map;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if !self.inner.resources.read().await.contains_key(&params.uri) {
            let _ = self.list_resources(None, cx.clone()).await;
        }
        let Some(index) = self.inner.resources.read().await.get(&params.uri).copied() else {
            return Err(ErrorData::invalid_params(
                format!("unknown resource {:?}", params.uri),
                None,
            ));
        };
        let upstream = &self.inner.upstreams[index];
        let rounds = &self.inner.settings.rounds;
        self.inner
            .reads
            .resource(upstream, &params, rounds, &cx)
            .await
    }
}
