//! One request's rounds: ask a person (or the client's model, or its
//! roots) from a `tools/call`, `prompts/get` or `resources/read` handler,
//! whatever revision the client speaks.
//!
//! - On 2025-06-18 and 2025-11-25 a [`Round`] sends the request to the
//!   client (`elicitation/create`, `sampling/createMessage`, `roots/list`)
//!   and waits for the answer.
//! - On 2026-07-28 (multi round-trip) it cannot send requests: each ask the
//!   handler makes is collected as an input request, and the handler
//!   returns [`Round::input_required`] — an `InputRequiredResult` with a
//!   sealed `requestState`. On the retry the state is opened and checked
//!   (seal, principal, request, arguments digest, expiry), its single-use
//!   nonce consumed in the store, and the answers settled; every answer
//!   given in earlier rounds is carried, sealed, in the state and replayed,
//!   so a handler written once runs the same on every round.
//!
//! ```no_run
//! # use askgate_core::{Ask, Form, Outcome};
//! # use askgate_mcp::{Request, Rounds};
//! # use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
//! # use rmcp::{ErrorData, service::{RequestContext, RoleServer}};
//! # async fn handler(rounds: &Rounds, form: Form, params: CallToolRequestParams,
//! #                  cx: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
//! let mut round = rounds.begin(&cx, Request::tool(&params)).await?;
//! let ask = Ask::new(form).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
//! let Some(outcome) = round.ask("deploy", ask).await? else {
//!     return Ok(round.input_required()?.into());
//! };
//! // `outcome` is settled: accepted with checked values, declined, cancelled or given up.
//! # let _ = outcome; Ok(CallToolResult::success(vec![]).into())
//! # }
//! ```

// Sampling and roots are deprecated in rmcp (SEP-2577) but carried by
// 2026-07-28 and still sent by servers.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use askgate_core::{Ask, Binding, Outcome, Revision, Sealer, StateError, Step, arguments_digest};
use askgate_store::Store;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::Timestamp;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ContentBlock,
    CreateMessageRequestParams, CreateMessageResult, GetPromptRequestParams, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, JsonObject, ListRootsResult,
    ReadResourceRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::ask::{AskOptions, Unanswered, ask_person_timed, modes, response_of};
use crate::clock::{Clock, SystemClock};
use crate::confirm::Confirmations;
use crate::input::{self, InputError, InputKind};
use crate::park::{Inbox, Parked};
use crate::revision::revision_of;

/// Who a request is for, when an authentication layer knows: put it in the
/// request's extensions (rmcp's, or on Streamable HTTP the HTTP request's),
/// and sealed state, parked asks and tasks are bound to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(pub String);

impl Principal {
    /// Who a request is for when no authentication layer says: a stdio
    /// client, say.
    pub const ANONYMOUS: &'static str = "anonymous";

    /// The principal of a request, if an authentication layer set one.
    pub fn of(cx: &RequestContext<RoleServer>) -> Option<Principal> {
        cx.extensions.get::<Principal>().cloned().or_else(|| {
            cx.extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Principal>())
                .cloned()
        })
    }
}

/// The settings shared by every request of a server: the sealing key, the
/// store that makes each state single-use, how long a state lives.
#[derive(Debug, Clone)]
pub struct Rounds {
    inner: Arc<Settings>,
}

#[derive(Debug, Clone)]
struct Settings {
    sealer: Sealer,
    digest_key: Vec<u8>,
    store: Store,
    ttl: Duration,
    options: AskOptions,
    inbox: Option<Inbox>,
    confirmations: Confirmations,
    clock: Arc<dyn Clock>,
}

impl Rounds {
    /// Rounds sealed under `key` (at least 32 random bytes, the same on
    /// every replica), with single use enforced in `store`.
    pub fn new(key: impl Into<Vec<u8>>, store: Store) -> Rounds {
        let key = key.into();
        // The arguments digest gets its own key, derived so the two never
        // coincide.
        let digest_key =
            askgate_core::arguments_digest(&key, &json!("askgate arguments digest")).into_bytes();
        Rounds {
            inner: Arc::new(Settings {
                sealer: Sealer::new(key),
                digest_key,
                store,
                ttl: Duration::from_secs(3600),
                options: AskOptions::default(),
                inbox: None,
                confirmations: Confirmations::default(),
                clock: Arc::new(SystemClock),
            }),
        }
    }

    /// How long a sealed state stays good (default one hour: a person may
    /// take a while to answer).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Rounds {
        Arc::make_mut(&mut self.inner).ttl = ttl;
        self
    }

    /// How to wait on revisions that send requests (default: 10 minutes per
    /// answer).
    #[must_use]
    pub fn with_options(mut self, options: AskOptions) -> Rounds {
        Arc::make_mut(&mut self.inner).options = options;
        self
    }

    /// Park in `inbox` what a client cannot show: asks with a secret field
    /// or for a client offering only URL mode go there by URL; asks for a
    /// client with no elicitation at all go there per its
    /// [`Fallback`](crate::Fallback). Without an inbox those asks fail
    /// (`-32021`, or "needs URL mode").
    #[must_use]
    pub fn with_inbox(mut self, inbox: Inbox) -> Rounds {
        Arc::make_mut(&mut self.inner).inbox = Some(inbox);
        self
    }

    /// How confirmations are asked and trusted (see
    /// [`Confirmations`]; the defaults: only a person approves).
    #[must_use]
    pub fn with_confirmations(mut self, confirmations: Confirmations) -> Rounds {
        Arc::make_mut(&mut self.inner).confirmations = confirmations;
        self
    }

    /// Read the time from `clock` (default: [`SystemClock`]): when a
    /// sealed state expires, when an ask was parked and until when it
    /// lives, when a person's no stops standing, when an audit entry was
    /// made, and the leases of [`Tasks`](crate::Tasks) built on these
    /// rounds.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Rounds {
        Arc::make_mut(&mut self.inner).clock = clock;
        self
    }

    /// The current time, on the rounds' clock.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// How confirmations are asked and trusted.
    pub fn confirmations(&self) -> &Confirmations {
        &self.inner.confirmations
    }

    /// The inbox, if any.
    pub fn inbox(&self) -> Option<&Inbox> {
        self.inner.inbox.as_ref()
    }

    /// The store single use is enforced in.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The keyed digest of a request's `arguments`, as rounds bind them
    /// and audit entries record them.
    pub(crate) fn arguments_digest(&self, arguments: &Json) -> String {
        arguments_digest(&self.inner.digest_key, arguments)
    }

    /// Start a round of `request`: on a retry, open and check its
    /// `requestState` and consume the state's nonce.
    ///
    /// # Errors
    /// `-32602` for a state that is malformed, tampered with, expired, used
    /// before, or issued for another principal, request or set of
    /// arguments; `-32603` when the store fails; `-32602` for a revision
    /// without any way to ask.
    pub async fn begin(
        &self,
        cx: &RequestContext<RoleServer>,
        request: Request<'_>,
    ) -> Result<Round, RoundError> {
        let version = cx.protocol_version();
        let revision = version.as_ref().and_then(revision_of).ok_or_else(|| {
            RoundError::Unanswered(Unanswered::OldRevision(
                version.map_or_else(|| "(not negotiated)".into(), |v| v.as_str().to_owned()),
            ))
        })?;
        let principal = request
            .principal
            .or_else(|| Principal::of(cx).map(|p| p.0))
            .unwrap_or_else(|| Principal::ANONYMOUS.to_owned());
        let binding = Binding {
            principal,
            method: request.method.to_owned(),
            name: request.name.to_owned(),
            arguments: arguments_digest(&self.inner.digest_key, &request.arguments),
        };
        let mode = if revision < Revision::V2026_07_28 {
            Mode::Classic
        } else {
            Mode::RoundTrip
        };
        let mut round = Round {
            cx: (mode == Mode::Classic).then(|| cx.clone()),
            waits: Some(cx.clone()),
            client: cx.client_info().map(|info| info.name),
            capabilities: cx.client_capabilities(),
            rounds: self.clone(),
            revision,
            mode,
            binding,
            responses: request.input_responses.cloned().unwrap_or_default(),
            carried: Carried::default(),
            sealed: false,
            accept_unsealed: false,
            pending: InputRequests::new(),
            parked: Vec::new(),
            request_id: None,
            origin: None,
        };
        if mode == Mode::Classic {
            return Ok(round);
        }
        if let Some(state) = request.request_state {
            let now = self.now();
            let opened = self.inner.sealer.open(state, &round.binding, now)?;
            let first = self
                .inner
                .store
                .consume_token(&opened.nonce, opened.expires_at, now)
                .await
                .map_err(|e| RoundError::Store(e.to_string()))?;
            if !first {
                return Err(RoundError::Replayed);
            }
            round.carried = serde_json::from_value(opened.carried).map_err(|_| {
                RoundError::State(StateError::Malformed("its carried state is not askgate's"))
            })?;
            round.sealed = true;
        }
        let request_id = match round.carried.data.get(REQUEST_ID).and_then(Json::as_str) {
            Some(id) => id.to_owned(),
            None => {
                let id = random_id()?;
                round
                    .carried
                    .data
                    .insert(REQUEST_ID.to_owned(), Json::String(id.clone()));
                id
            }
        };
        round.request_id = Some(request_id);
        Ok(round)
    }

    /// The round of a task's work (see [`Tasks`](crate::Tasks)): every
    /// answer the task was given is at hand (they came through
    /// `tasks/update` and were kept in the store), and what is still to ask
    /// is queued as the task's input requests. A re-ask goes under a new
    /// key (`key#2`, `key#3`...), since a task's keys are never reused.
    pub fn for_task(
        &self,
        task_id: &str,
        principal: &str,
        tool: &str,
        arguments: &Json,
        capabilities: Option<ClientCapabilities>,
        answers: InputResponses,
    ) -> Round {
        Round {
            cx: None,
            waits: None,
            client: None,
            capabilities,
            rounds: self.clone(),
            revision: Revision::V2026_07_28,
            mode: Mode::Task,
            binding: Binding {
                principal: principal.to_owned(),
                method: "tools/call".to_owned(),
                name: tool.to_owned(),
                arguments: arguments_digest(&self.inner.digest_key, arguments),
            },
            responses: answers,
            carried: Carried::default(),
            sealed: true,
            accept_unsealed: false,
            pending: InputRequests::new(),
            parked: Vec::new(),
            request_id: Some(task_id.to_owned()),
            origin: None,
        }
    }
}

/// The request a round belongs to: what sealed state is bound to, and the
/// answers the retry carries.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    method: &'static str,
    name: &'a str,
    arguments: Json,
    input_responses: Option<&'a InputResponses>,
    request_state: Option<&'a str>,
    principal: Option<String>,
}

impl<'a> Request<'a> {
    /// A `tools/call`.
    pub fn tool(params: &'a CallToolRequestParams) -> Request<'a> {
        Request {
            method: "tools/call",
            name: &params.name,
            arguments: object(params.arguments.as_ref()),
            input_responses: params.input_responses.as_ref(),
            request_state: params.request_state.as_deref(),
            principal: None,
        }
    }

    /// A `prompts/get`.
    pub fn prompt(params: &'a GetPromptRequestParams) -> Request<'a> {
        Request {
            method: "prompts/get",
            name: &params.name,
            arguments: object(params.arguments.as_ref()),
            input_responses: params.input_responses.as_ref(),
            request_state: params.request_state.as_deref(),
            principal: None,
        }
    }

    /// A `resources/read`.
    pub fn resource(params: &'a ReadResourceRequestParams) -> Request<'a> {
        Request {
            method: "resources/read",
            name: &params.uri,
            arguments: Json::Object(JsonObject::new()),
            input_responses: params.input_responses.as_ref(),
            request_state: params.request_state.as_deref(),
            principal: None,
        }
    }

    /// Bind the request (its sealed state, its parked asks, the audit's
    /// digest) to `arguments` instead of the request's own: the arguments
    /// that say which call this is — without a caller's `confirm`, say, so
    /// the call with and without it is one call.
    #[must_use]
    pub fn with_arguments(mut self, arguments: Json) -> Request<'a> {
        self.arguments = arguments;
        self
    }

    /// Bind sealed state to `principal` (default: the request's
    /// [`Principal`] extension, else `anonymous`).
    #[must_use]
    pub fn for_principal(mut self, principal: impl Into<String>) -> Request<'a> {
        self.principal = Some(principal.into());
        self
    }
}

fn object(arguments: Option<&JsonObject>) -> Json {
    Json::Object(arguments.cloned().unwrap_or_default())
}

/// How a round reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Send each request and wait (2025-06-18, 2025-11-25).
    Classic,
    /// Return input requests; answers come on the retry (2026-07-28).
    RoundTrip,
    /// A task's work: answers come through `tasks/update`.
    Task,
}

/// The key of the `attempt`th ask under `key` in a task.
fn attempt_key(key: &str, attempt: usize) -> String {
    if attempt <= 1 {
        key.to_owned()
    } else {
        format!("{key}#{attempt}")
    }
}

/// What a sealed state carries from round to round: every answer given so
/// far, replayed on the next round, and the handler's own data.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Carried {
    /// Per elicitation key, the responses given, in order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    asks: BTreeMap<String, Vec<Json>>,
    /// Per sampling or roots key, the answer.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    inputs: BTreeMap<String, Json>,
    /// The handler's data.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    data: BTreeMap<String, Json>,
}

/// One round of a request. Ask with [`Round::ask`], [`Round::sample`] and
/// [`Round::roots`]; each returns the answer when it has one, or `None`
/// when the client must be asked — then return
/// [`Round::input_required`].
#[derive(Debug)]
pub struct Round {
    /// The request, on revisions that send requests to the client.
    cx: Option<RequestContext<RoleServer>>,
    /// The request, on every revision (not a task's work): what a wait
    /// for the inbox watches for cancellation and sends progress on.
    waits: Option<RequestContext<RoleServer>>,
    /// The client's name (`clientInfo.name`), when it said.
    client: Option<String>,
    /// What the client declared it can answer.
    capabilities: Option<ClientCapabilities>,
    rounds: Rounds,
    revision: Revision,
    mode: Mode,
    binding: Binding,
    responses: InputResponses,
    carried: Carried,
    sealed: bool,
    accept_unsealed: bool,
    pending: InputRequests,
    parked: Vec<Parked>,
    /// Names this request across its rounds (multi round-trip: carried in
    /// the state; a task: its id), so a decision reached again on a retry
    /// is recorded once.
    request_id: Option<String>,
    /// What an ask parked now is about (server, tool, risk), for people
    /// reading the inbox.
    origin: Option<(String, String, String)>,
}

/// The key in the carried state naming the request.
const REQUEST_ID: &str = "askgate.request";

/// The key in the carried state of when the ask `key` was sent.
fn asked_at_key(key: &str) -> String {
    format!("askgate.asked_at.{key}")
}

impl Round {
    /// The client's revision.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    pub(crate) fn binding(&self) -> &Binding {
        &self.binding
    }

    pub(crate) fn rounds(&self) -> &Rounds {
        &self.rounds
    }

    pub(crate) fn context(&self) -> Option<&RequestContext<RoleServer>> {
        self.cx.as_ref()
    }

    /// The request, on every revision but a task's work.
    pub(crate) fn waits(&self) -> Option<&RequestContext<RoleServer>> {
        self.waits.as_ref()
    }

    /// What the client declared it can answer.
    pub(crate) fn capabilities(&self) -> Option<&ClientCapabilities> {
        self.capabilities.as_ref()
    }

    /// The client's name, when it said.
    pub(crate) fn client(&self) -> Option<&str> {
        self.client.as_deref()
    }

    /// This round's answer under `key`, taken (not replayed later).
    pub(crate) fn take_answer(&mut self, key: &str) -> Option<Json> {
        let given = self.answer(key)?;
        self.responses.remove(key);
        Some(given)
    }

    /// Say what asks parked from now on are about: the server, the tool and
    /// its risk (shown in the inbox and `askgate asks list`).
    pub fn about(&mut self, server: &str, tool: &str, risk: &str) {
        self.origin = Some((server.to_owned(), tool.to_owned(), risk.to_owned()));
    }

    pub(crate) fn origin(&self) -> Option<&(String, String, String)> {
        self.origin.as_ref()
    }

    pub(crate) fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// The audit key of the decision made under `key` in this request.
    pub(crate) fn decision_key(&self, key: &str) -> Option<String> {
        self.request_id.as_ref().map(|id| format!("{id}:{key}"))
    }

    /// [`Round::queue`], noting when it was asked (carried in the sealed
    /// state, so the retry knows how long the answer took).
    pub(crate) fn queue_timed(&mut self, key: &str, request: InputRequest) {
        self.pending.insert(key.to_owned(), request);
        self.carried.data.insert(
            asked_at_key(key),
            Json::String(self.rounds.now().to_string()),
        );
    }

    /// How long ago the round that asked `key` sent it (its time carried
    /// in the sealed state), if known.
    pub(crate) fn since_asked(&self, key: &str) -> Option<Duration> {
        let asked: Timestamp = self
            .carried
            .data
            .get(&asked_at_key(key))?
            .as_str()?
            .parse()
            .ok()?;
        let elapsed = self.rounds.now().duration_since(asked);
        Duration::try_from(elapsed).ok()
    }

    pub(crate) fn park_note(&mut self, parked: Parked) {
        self.parked.push(parked);
    }

    /// The asks of this round waiting in the inbox.
    pub fn parked(&self) -> &[Parked] {
        &self.parked
    }

    /// Whether this round answers by returning input requests (2026-07-28
    /// and later) rather than by sending requests and waiting.
    pub fn is_multi_round_trip(&self) -> bool {
        self.mode != Mode::Classic
    }

    /// Whether this round is a task's work.
    pub fn is_task(&self) -> bool {
        self.mode == Mode::Task
    }

    /// Whether this is a retry that presented a valid sealed state.
    pub fn is_sealed_retry(&self) -> bool {
        self.sealed
    }

    /// Whether the client declared it can answer `kind`.
    pub fn can(&self, kind: InputKind) -> bool {
        let capabilities = self.capabilities.as_ref();
        match kind {
            InputKind::Elicitation => modes(capabilities).0,
            InputKind::Sampling => capabilities.is_some_and(|c| c.sampling.is_some()),
            InputKind::Roots => capabilities.is_some_and(|c| c.roots.is_some()),
        }
    }

    /// Also take answers sent without a sealed state (a client that answers
    /// before it was asked). Off by default: without a state an answer is
    /// not bound to this request nor single-use, so the ask is sent again,
    /// sealed. Turn it on only where replaying an answer is harmless.
    pub fn accept_unsealed(&mut self, accept: bool) {
        self.accept_unsealed = accept;
    }

    /// Keep `value` for the next round (sealed, so the client cannot alter
    /// it, but readable: never a secret).
    pub fn carry(&mut self, key: &str, value: Json) {
        self.carried.data.insert(key.to_owned(), value);
    }

    /// What an earlier round kept with [`Round::carry`].
    pub fn carried(&self, key: &str) -> Option<&Json> {
        self.carried.data.get(key)
    }

    /// Ask a person the `ask` under `key` (unique within the request). On a
    /// revision that sends requests, waits for the settled outcome (with
    /// checks and re-asks); on a multi round-trip revision, returns the
    /// outcome when this round's answers settle it, else `None` after
    /// queueing the (re-)ask for [`Round::input_required`].
    ///
    /// # Errors
    /// `-32021` when the client cannot show a form; `-32602` when the
    /// answer under `key` is not an elicitation result; others as
    /// [`RoundError`] says. A decline or cancel is an outcome, not an error.
    pub async fn ask(&mut self, key: &str, ask: Ask) -> Result<Option<Outcome>, RoundError> {
        Ok(self.ask_timed(key, ask).await?.map(|(outcome, _)| outcome))
    }

    /// [`Round::ask`], and how long after the ask was sent its settling
    /// answer came, where that is known: a classic request's round trip;
    /// on 2026-07-28, from the round that asked (its time carried in the
    /// sealed state) to the retry that answered. `None` for answers
    /// replayed from earlier rounds, a task's answers and asks settled
    /// without asking.
    pub(crate) async fn ask_timed(
        &mut self,
        key: &str,
        ask: Ask,
    ) -> Result<Option<(Outcome, Option<Duration>)>, RoundError> {
        if let Some(outcome) = ask.settle_without_asking() {
            return Ok(Some((outcome, None)));
        }
        let (form, url) = modes(self.capabilities.as_ref());
        if ask.needs_url_mode() || !form {
            // A secret goes by URL only; a client without forms gets the URL
            // if it takes URLs, else the inbox's fallback.
            return Ok(self
                .ask_in_inbox(key, &ask, url)
                .await?
                .map(|outcome| (outcome, None)));
        }
        if let Some(cx) = &self.cx {
            if !self.can(InputKind::Elicitation) {
                return Err(RoundError::Missing(InputKind::Elicitation));
            }
            let answered = ask_person_timed(cx, ask, &self.rounds.inner.options).await?;
            return Ok(Some(answered));
        }
        if self.mode == Mode::Task {
            return Ok(self.ask_in_task(key, ask)?.map(|outcome| (outcome, None)));
        }
        let mut ask = ask;
        // Replay what earlier rounds settled: the same answers give the same
        // steps.
        for given in self.carried.asks.get(key).into_iter().flatten() {
            let result = input::read_elicitation(given).map_err(|_| {
                RoundError::State(StateError::Malformed("a carried answer is unreadable"))
            })?;
            match ask.settle(self.revision, &response_of(result)) {
                Step::Settled(outcome) => return Ok(Some((outcome, None))),
                Step::ReAsk(next) => ask = *next,
            }
        }
        if !self.can(InputKind::Elicitation) {
            return Err(RoundError::Missing(InputKind::Elicitation));
        }
        if ask.needs_url_mode() {
            return Err(RoundError::Unanswered(Unanswered::NeedsUrlMode));
        }
        if let Some(given) = self.answer(key) {
            let result = input::read_elicitation(&given).map_err(|e| malformed(key, e))?;
            self.carried
                .asks
                .entry(key.to_owned())
                .or_default()
                .push(given);
            let took = self.since_asked(key);
            match ask.settle(self.revision, &response_of(result)) {
                Step::Settled(outcome) => return Ok(Some((outcome, took))),
                Step::ReAsk(next) => ask = *next,
            }
        }
        let params = ask
            .request(self.revision)
            .map_err(|e| RoundError::Unanswered(Unanswered::Unsendable(e.to_string())))?;
        let request = input::elicit_form(&params)
            .map_err(|e| RoundError::Unanswered(Unanswered::Unsendable(e.to_string())))?;
        self.queue_timed(key, request);
        Ok(None)
    }

    /// A task's ask: replay the answers given under `key`, `key#2`, ...;
    /// queue the next attempt under the next key.
    fn ask_in_task(&mut self, key: &str, mut ask: Ask) -> Result<Option<Outcome>, RoundError> {
        let mut attempt = 1;
        loop {
            let current = attempt_key(key, attempt);
            let Some(given) = self.responses.get(&current) else {
                if !self.can(InputKind::Elicitation) {
                    return Err(RoundError::Missing(InputKind::Elicitation));
                }
                if ask.needs_url_mode() {
                    return Err(RoundError::Unanswered(Unanswered::NeedsUrlMode));
                }
                let params = ask
                    .request(self.revision)
                    .map_err(|e| RoundError::Unanswered(Unanswered::Unsendable(e.to_string())))?;
                let request = input::elicit_form(&params)
                    .map_err(|e| RoundError::Unanswered(Unanswered::Unsendable(e.to_string())))?;
                self.pending.insert(current, request);
                return Ok(None);
            };
            let result = input::read_elicitation(given).map_err(|e| malformed(&current, e))?;
            match ask.settle(self.revision, &response_of(result)) {
                Step::Settled(outcome) => return Ok(Some(outcome)),
                Step::ReAsk(next) => ask = *next,
            }
            attempt += 1;
        }
    }

    /// Ask the client's model (`sampling/createMessage`) under `key`.
    ///
    /// # Errors
    /// `-32021` when the client cannot sample; `-32602` when the answer is
    /// not a sampling result; a failed request on older revisions.
    pub async fn sample(
        &mut self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<Option<CreateMessageResult>, RoundError> {
        if !self.can(InputKind::Sampling) {
            return Err(RoundError::Missing(InputKind::Sampling));
        }
        if let Some(cx) = &self.cx {
            let result = cx.peer.create_message(params).await;
            return result
                .map(Some)
                .map_err(|e| RoundError::Unanswered(Unanswered::Failed(e.to_string())));
        }
        self.input(key, input::sample(params), input::read_sampling)
    }

    /// Ask for the client's roots (`roots/list`) under `key`.
    ///
    /// # Errors
    /// `-32021` when the client has no roots; `-32602` when the answer is
    /// not a roots result; a failed request on older revisions.
    pub async fn roots(&mut self, key: &str) -> Result<Option<ListRootsResult>, RoundError> {
        if !self.can(InputKind::Roots) {
            return Err(RoundError::Missing(InputKind::Roots));
        }
        if let Some(cx) = &self.cx {
            let result = cx.peer.list_roots().await;
            return result
                .map(Some)
                .map_err(|e| RoundError::Unanswered(Unanswered::Failed(e.to_string())));
        }
        self.input(key, input::list_roots(), input::read_roots)
    }

    fn input<T>(
        &mut self,
        key: &str,
        request: InputRequest,
        read: fn(&Json) -> Result<T, InputError>,
    ) -> Result<Option<T>, RoundError> {
        if let Some(given) = self.carried.inputs.get(key) {
            let answer = read(given).map_err(|_| {
                RoundError::State(StateError::Malformed("a carried answer is unreadable"))
            })?;
            return Ok(Some(answer));
        }
        if let Some(given) = self.answer(key) {
            let answer = read(&given).map_err(|e| malformed(key, e))?;
            self.carried.inputs.insert(key.to_owned(), given);
            return Ok(Some(answer));
        }
        self.pending.insert(key.to_owned(), request);
        Ok(None)
    }

    /// The answer this retry carries under `key` to an input request that
    /// was relayed for another server (see [`Round::relay`]), raw: checking
    /// it is the relaying side's job. Answers are taken only on a sealed
    /// retry (or with [`Round::accept_unsealed`]), and are not carried into
    /// later rounds.
    pub fn relayed_answer(&self, key: &str) -> Option<Json> {
        self.answer(key)
    }

    /// Queue `request` — an input another server asked for, passed through
    /// as it is — under `key`, for [`Round::respond`] or
    /// [`Round::input_required`] to send.
    ///
    /// # Errors
    /// [`RoundError::Missing`] when the client did not declare the
    /// capability the request needs; [`RoundError::Malformed`] for a
    /// request of no kind a client answers.
    pub fn relay(&mut self, key: &str, request: InputRequest) -> Result<(), RoundError> {
        let kind = InputKind::of(&request).ok_or_else(|| RoundError::Malformed {
            key: key.to_owned(),
            detail: "not an elicitation, sampling or roots request".into(),
        })?;
        if !self.can(kind) {
            return Err(RoundError::Missing(kind));
        }
        self.pending.insert(key.to_owned(), request);
        Ok(())
    }

    /// This round's answer under `key`, if it may be taken.
    fn answer(&self, key: &str) -> Option<Json> {
        if !(self.sealed || self.accept_unsealed) {
            return None;
        }
        self.responses.get(key).cloned()
    }

    /// The input requests queued so far, by key.
    pub fn pending(&self) -> &InputRequests {
        &self.pending
    }

    /// End a `tools/call` round that still needs answers: the input
    /// requests (see [`Round::input_required`]), or, when asks wait in the
    /// inbox, a tool result saying where to answer them and how to retry.
    ///
    /// # Errors
    /// As [`Round::input_required`].
    pub fn respond(self) -> Result<CallToolResponse, RoundError> {
        if self.pending.is_empty()
            && let Some(parked) = self.parked.first()
        {
            let mut result = parked.tool_result();
            for more in &self.parked[1..] {
                result.content.push(ContentBlock::text(more.message()));
            }
            return Ok(result.into());
        }
        Ok(self.input_required()?.into())
    }

    /// End the round: the queued input requests and a new sealed state
    /// (fresh nonce, bound to this request) carrying every answer so far.
    ///
    /// # Errors
    /// [`RoundError::NothingPending`] when nothing was queued (the handler
    /// has all it needs and should complete), a failure of the system's
    /// random source.
    pub fn input_required(self) -> Result<InputRequiredResult, RoundError> {
        if self.pending.is_empty() {
            return Err(match self.parked.into_iter().next() {
                Some(parked) => RoundError::Parked(parked),
                None => RoundError::NothingPending,
            });
        }
        if self.mode == Mode::Task {
            // A task keeps its answers in the store, not in a state.
            return Ok(InputRequiredResult::new(Some(self.pending), None));
        }
        let state = self.seal()?;
        Ok(InputRequiredResult::new(Some(self.pending), Some(state)))
    }

    fn seal(&self) -> Result<String, RoundError> {
        let nonce = random_id()?;
        let expires_at = self
            .rounds
            .now()
            .checked_add(self.rounds.inner.ttl)
            .map_err(|e| RoundError::Random(e.to_string()))?;
        let carried = serde_json::to_value(&self.carried)
            .map_err(|e| RoundError::Unanswered(Unanswered::Unsendable(e.to_string())))?;
        Ok(self
            .rounds
            .inner
            .sealer
            .seal(&self.binding, expires_at, &nonce, &carried))
    }
}

/// 18 random bytes, base64url: a nonce or an id nobody can guess.
fn random_id() -> Result<String, RoundError> {
    let mut bytes = [0u8; 18];
    getrandom::fill(&mut bytes).map_err(|e| RoundError::Random(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

fn malformed(key: &str, error: InputError) -> RoundError {
    RoundError::Malformed {
        key: key.to_owned(),
        detail: error.to_string(),
    }
}

/// Why a round could not go on. Converts into the JSON-RPC error the client
/// gets (`?` in a handler).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoundError {
    /// The request state was refused.
    #[error(transparent)]
    State(#[from] StateError),
    /// The request state was used before.
    #[error(
        "requestState was already used: each state is good for one retry; call again without it to start over"
    )]
    Replayed,
    /// An answer is not what was asked for.
    #[error("inputResponses[{key:?}] is malformed: {detail}")]
    Malformed {
        /// The input request's key.
        key: String,
        /// What was wrong.
        detail: String,
    },
    /// The client did not declare the capability the input needs.
    #[error("the client did not declare the capability for {}", .0.method())]
    Missing(InputKind),
    /// No person could be asked (older revisions).
    #[error(transparent)]
    Unanswered(#[from] Unanswered),
    /// The ask waits in the inbox (a request whose answer cannot say so in
    /// a tool result, such as `prompts/get`).
    #[error("{}", .0.message())]
    Parked(Parked),
    /// [`Round::input_required`] with nothing to ask.
    #[error("input_required called with no input request queued")]
    NothingPending,
    /// The store failed.
    #[error("the ask store failed: {0}")]
    Store(String),
    /// The system's random source failed.
    #[error("cannot seal the request state: {0}")]
    Random(String),
}

impl RoundError {
    /// The capabilities the client lacks, as `requiredCapabilities` names
    /// them.
    pub fn required_capabilities(&self) -> Option<ClientCapabilities> {
        let key = match self {
            RoundError::Missing(InputKind::Elicitation)
            | RoundError::Unanswered(Unanswered::NoElicitation) => "elicitation",
            RoundError::Missing(InputKind::Sampling) => "sampling",
            RoundError::Missing(InputKind::Roots) => "roots",
            _ => return None,
        };
        serde_json::from_value(json!({ key: {} })).ok()
    }
}

impl From<RoundError> for ErrorData {
    fn from(error: RoundError) -> ErrorData {
        if let Some(capabilities) = error.required_capabilities() {
            let mut data = ErrorData::missing_required_client_capability(capabilities);
            data.message = error.to_string().into();
            return data;
        }
        match &error {
            RoundError::Parked(_) => ErrorData::invalid_request(error.to_string(), None),
            RoundError::State(_)
            | RoundError::Replayed
            | RoundError::Malformed { .. }
            | RoundError::Unanswered(Unanswered::OldRevision(_)) => {
                ErrorData::invalid_params(error.to_string(), None)
            }
            _ => ErrorData::internal_error(error.to_string(), None),
        }
    }
}
