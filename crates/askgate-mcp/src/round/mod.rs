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

mod asking;
mod error;
mod request;
mod rounds;
mod state;

pub use error::RoundError;
pub use request::Request;
pub use rounds::Rounds;
use state::Carried;

use std::time::Duration;

use askgate_core::{Binding, Revision};
use jiff::Timestamp;
use rmcp::model::{ClientCapabilities, InputRequest, InputRequests, InputResponses};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value as Json;

use crate::ask::modes;
use crate::inbox::Parked;
use crate::input::InputKind;

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
    /// The asks of a call read ahead of its decision
    /// ([`Round::look_ahead`]), by the call's key, and when.
    looked_ahead: Option<(String, tokio::time::Instant, Vec<askgate_store::AskRow>)>,
    /// The approval rule the call being decided is under, if one is: its
    /// ask is parked with the rule's panel.
    approving: Option<crate::approvals::Approving>,
    /// The arguments of the call being decided, when its ask is to keep
    /// them (sealed) for its page.
    arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

/// How long the asks read ahead of a decision ([`Round::look_ahead`]) are
/// taken for the store's word: about as long as a read of the ledger
/// takes, not as long as one that waited on another process.
pub(crate) const LOOKED_AHEAD_FRESH: Duration = Duration::from_millis(100);

/// The key in the carried state naming the request.
const REQUEST_ID: &str = "askgate.request";

/// The key in the carried state of when the ask `key` was sent.
fn asked_at_key(key: &str) -> String {
    format!("askgate.asked_at.{key}")
}

/// The key in the carried state of the digest of the ask `key` as sent.
fn asked_key(key: &str) -> String {
    format!("askgate.asked.{key}")
}

/// The SHA-256 (hex) of `request` as it goes on the wire: what an answer
/// carried back was given to.
fn request_digest(request: &InputRequest) -> String {
    use sha2::{Digest, Sha256};
    let wire = serde_json::to_vec(request).unwrap_or_default();
    askgate_core::lower_hex(&Sha256::digest(&wire))
}

impl Round {
    /// Read the asks of the call `key` is about now, for its decision
    /// ([`Round::decide`]) to start from: run it beside what else the
    /// caller reads before deciding (the gateway's ledger), and the store
    /// is visited once in that time, not twice. Read a moment before
    /// rather than at once, what it finds is as true: a decision already
    /// takes each read as it was when it was made. Only the decision's
    /// first look uses it, and only within a tenth of a second (the
    /// ledger may wait seconds on another process): every other look reads
    /// the store again.
    ///
    /// # Errors
    /// A store failure.
    pub async fn look_ahead(&mut self, key: &str) -> Result<(), RoundError> {
        let asks = self.asks_of_call(key).await?;
        let at = tokio::time::Instant::now();
        self.looked_ahead = Some((key.to_owned(), at, asks));
        Ok(())
    }

    /// [`Round::look_ahead`], the asks read by the caller's `read` together
    /// with what else it reads before deciding, in one visit to the store
    /// (the gateway's ledger: [`askgate_store::Store::tries_of_call`]).
    /// `read` is given the store's key of the asks of the call `key` is
    /// about, and how many to read (newest first); it returns what it read
    /// besides them, which this returns.
    ///
    /// # Errors
    /// `read`'s.
    pub async fn look_ahead_with<T, E, F, Fut>(&mut self, key: &str, read: F) -> Result<T, E>
    where
        F: FnOnce(String, u32) -> Fut,
        Fut: std::future::Future<Output = Result<(T, Vec<askgate_store::AskRow>), E>>,
    {
        let (besides, asks) = read(self.call_key(key), crate::park::ASKS_OF_A_CALL).await?;
        let at = tokio::time::Instant::now();
        self.looked_ahead = Some((key.to_owned(), at, asks));
        Ok(besides)
    }

    /// The asks [`Round::look_ahead`] read for `key`, once, while fresh;
    /// else read now.
    pub(crate) async fn asks_looked_ahead(
        &mut self,
        key: &str,
    ) -> Result<Vec<askgate_store::AskRow>, RoundError> {
        match self.looked_ahead.take() {
            Some((looked, at, asks)) if looked == key && at.elapsed() <= LOOKED_AHEAD_FRESH => {
                Ok(asks)
            }
            _ => self.asks_of_call(key).await,
        }
    }

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

    /// The approval rule the call being decided is under, if one is.
    pub(crate) fn approving(&self) -> Option<&crate::approvals::Approving> {
        self.approving.as_ref()
    }

    pub(crate) fn set_approving(&mut self, approving: Option<crate::approvals::Approving>) {
        self.approving = approving;
    }

    /// The arguments of the call being decided, kept sealed with its ask.
    pub(crate) fn arguments(&self) -> Option<&serde_json::Map<String, serde_json::Value>> {
        self.arguments.as_ref()
    }

    pub(crate) fn set_arguments(
        &mut self,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    ) {
        self.arguments = arguments;
    }

    /// The client's request this round belongs to, the same in every
    /// round of it (a sealed `requestState` carries it): `None` for a
    /// classic revision's call, which has one round.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// The audit key of the decision made under `key` in this request.
    pub(crate) fn decision_key(&self, key: &str) -> Option<String> {
        self.request_id.as_ref().map(|id| format!("{id}:{key}"))
    }

    /// [`Round::queue`], noting when it was asked (carried in the sealed
    /// state, so the retry knows how long the answer took).
    pub(crate) fn queue_timed(&mut self, key: &str, request: InputRequest) {
        self.carried
            .data
            .insert(asked_key(key), Json::String(request_digest(&request)));
        self.pending.insert(key.to_owned(), request);
        self.carried.data.insert(
            asked_at_key(key),
            Json::String(self.rounds.now().to_string()),
        );
    }

    /// Whether an answer under `key` was given to `request`: the ask this
    /// round would send is the one the round that asked sent (its digest
    /// carried in the sealed state). An answer to another question — the
    /// ask changed between rounds: a note added, a field, a default — is
    /// not taken; the new ask is sent. A state that names no digest (from
    /// before askgate kept one) is taken as it was.
    pub(crate) fn answers(&self, key: &str, request: &InputRequest) -> bool {
        match self
            .carried
            .data
            .get(&asked_key(key))
            .and_then(Json::as_str)
        {
            Some(asked) => asked == request_digest(request),
            None => true,
        }
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

    /// The input responses of a request that carried no sealed state —
    /// a client answering before it was asked — as it sent them, when it
    /// sent any: for a relaying side to pass on to the server it relays
    /// for, which may take answers so (askgate's own asks never do,
    /// unless [`Round::accept_unsealed`]).
    pub fn unsealed_responses(&self) -> Option<&InputResponses> {
        (!self.sealed && !self.responses.is_empty()).then_some(&self.responses)
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
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use askgate_core::Ask;
    use askgate_testkit::TempStore;
    use rmcp::model::InputResponses;
    use serde_json::json;

    use super::LOOKED_AHEAD_FRESH;
    use crate::Rounds;

    /// How many asks the decision's look at the call `confirm` finds.
    async fn looked(round: &mut super::Round) -> usize {
        round
            .asks_looked_ahead("confirm")
            .await
            .expect("reads")
            .len()
    }

    #[tokio::test]
    async fn the_asks_read_ahead_are_the_first_look_only_once_for_their_call_and_while_fresh() {
        let store = TempStore::open().await;
        let rounds = Rounds::new([7u8; 32], store.store().clone());
        let mut round = rounds.for_task(
            "task-1",
            "alice",
            "deploy",
            &json!({}),
            None,
            InputResponses::default(),
        );
        let ask = Ask::new(askgate_testkit::deploy_form(json!([
            {"id": "replicas", "title": "Replicas", "type": "integer"}
        ])))
        .expect("MCP can carry the form");
        // Read ahead while the call had no ask; one is parked since.
        round.look_ahead("confirm").await.expect("reads");
        round
            .park_new("confirm", 0, &ask, None)
            .await
            .expect("parks");
        // At once, the read ahead is the first look (as true as a read
        // made a moment before the decision)...
        assert_eq!(looked(&mut round).await, 0);
        // ...once: the next look reads the store.
        assert_eq!(looked(&mut round).await, 1);
        // Another call's read ahead is not this call's.
        round.look_ahead("another").await.expect("reads");
        assert_eq!(looked(&mut round).await, 1);
        // Older than a tenth of a second (the ledger's look beside it
        // waited): read again.
        round.look_ahead("confirm").await.expect("reads");
        round
            .park_new("confirm", 1, &ask, None)
            .await
            .expect("parks");
        tokio::time::sleep(LOOKED_AHEAD_FRESH + Duration::from_millis(20)).await;
        assert_eq!(looked(&mut round).await, 2);
    }
}
