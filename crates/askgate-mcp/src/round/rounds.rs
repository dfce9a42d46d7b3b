//! The settings shared by every request of a server, and how a request's
//! round begins: a retry's sealed state opened, checked and used up.

use std::sync::Arc;
use std::time::Duration;

use askgate_core::{Binding, DigestKey, Revision, Sealer, StateError, arguments_digest};
use askgate_store::Store;
use jiff::Timestamp;
use rmcp::model::{ClientCapabilities, InputRequests, InputResponses};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value as Json, json};

use super::state::random_id;
use super::{Carried, Mode, Principal, REQUEST_ID, Request, Round, RoundError};
use crate::ask::{AskOptions, Unanswered};
use crate::clock::{Clock, SystemClock};
use crate::confirmations::Confirmations;
use crate::inbox::InboxLinks;
use crate::revision::revision_of;

/// The settings shared by every request of a server: the sealing key, the
/// store that makes each state single-use, how long a state lives.
#[derive(Debug, Clone)]
pub struct Rounds {
    pub(super) inner: Arc<Settings>,
}

#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) sealer: Sealer,
    /// Seals the arguments of a call whose ask is parked (see
    /// [`askgate_core::ArgumentSeal`]).
    pub(super) argument_seal: askgate_core::ArgumentSeal,
    pub(super) digest_key: DigestKey,
    /// The digest keys of keys rotated out: a state they sealed binds its
    /// arguments under them.
    pub(super) previous_digest_keys: Vec<DigestKey>,
    pub(super) store: Store,
    pub(super) ttl: Duration,
    pub(super) options: AskOptions,
    pub(super) inbox: Option<InboxLinks>,
    pub(super) confirmations: Confirmations,
    pub(super) clock: Arc<dyn Clock>,
}

impl Rounds {
    /// Rounds sealed under `key` (at least 32 random bytes, the same on
    /// every replica), with single use enforced in `store` — whose audit
    /// head record is signed with a key derived from `key` from now on
    /// ([`Store::sign_audit_head`]).
    pub fn new(key: impl Into<Vec<u8>>, store: Store) -> Rounds {
        let key = key.into();
        let digest_key = digest_key_of(&key);
        // What these rounds audit moves the chain's head: signed, so that
        // it cannot be moved back by hand to hide deleted entries.
        store.sign_audit_head(&key);
        Rounds {
            inner: Arc::new(Settings {
                argument_seal: askgate_core::ArgumentSeal::new(&key),
                sealer: Sealer::new(key),
                digest_key,
                previous_digest_keys: Vec::new(),
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

    /// Also open states sealed under `key`, a key rotated out (see
    /// `askgate key rotate`): a client's retry that carries one still
    /// resumes. New states are sealed under the current key only.
    #[must_use]
    pub fn with_previous_key(mut self, key: impl Into<Vec<u8>>) -> Rounds {
        let key = key.into();
        let inner = Arc::make_mut(&mut self.inner);
        inner.previous_digest_keys.push(digest_key_of(&key));
        inner.argument_seal = inner.argument_seal.clone().with_previous(&key);
        inner.sealer = inner.sealer.clone().with_previous(key);
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
    pub fn with_inbox(mut self, inbox: InboxLinks) -> Rounds {
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

    /// The rounds' clock, for what else reads the time beside them (a
    /// gateway's ledger dates its calls' ends on it).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.clock
    }

    /// How confirmations are asked and trusted.
    pub fn confirmations(&self) -> &Confirmations {
        &self.inner.confirmations
    }

    /// The inbox, if any.
    pub fn inbox(&self) -> Option<&InboxLinks> {
        self.inner.inbox.as_ref()
    }

    /// `arguments` of the call whose ask `ask_id` is parked, sealed for
    /// the store with a fresh random nonce.
    ///
    /// # Errors
    /// The system's random source failed.
    pub(crate) fn seal_arguments(
        &self,
        ask_id: &str,
        arguments: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, getrandom::Error> {
        let mut nonce = [0u8; askgate_core::NONCE_LEN];
        getrandom::fill(&mut nonce)?;
        Ok(self.inner.argument_seal.seal(ask_id, arguments, nonce))
    }

    /// The store single use is enforced in.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Open `state` for `binding`; a state sealed under a key rotated out
    /// bound the `arguments` under that key's digest key.
    fn open_state(
        &self,
        state: &str,
        binding: &Binding,
        arguments: &Json,
        now: Timestamp,
    ) -> Result<askgate_core::Opened, StateError> {
        let opened = self.inner.sealer.open(state, binding, now);
        if opened != Err(StateError::Foreign("set of arguments")) {
            return opened;
        }
        for key in &self.inner.previous_digest_keys {
            let before = Binding {
                arguments: key.arguments(arguments),
                ..binding.clone()
            };
            if let Ok(opened) = self.inner.sealer.open(state, &before, now) {
                return Ok(opened);
            }
        }
        opened
    }

    /// The keyed digest of a `tools/call`'s `arguments` object, as rounds
    /// bind them and audit entries record them (without making a [`Json`]
    /// of it).
    pub(crate) fn object_digest(&self, arguments: &serde_json::Map<String, Json>) -> String {
        self.inner.digest_key.object(arguments)
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
        // A revision before elicitation (2024-11-05, 2025-03-26): no person
        // can be asked through its client, whatever it declares; a call
        // that needs one waits in the inbox.
        let before_elicitation = version.as_ref().is_some_and(before_elicitation);
        let revision = match version.as_ref().and_then(revision_of) {
            Some(revision) => revision,
            None if before_elicitation => Revision::V2025_06_18,
            None => {
                return Err(RoundError::Unanswered(Unanswered::OldRevision(
                    version.map_or_else(|| "(not negotiated)".into(), |v| v.as_str().to_owned()),
                )));
            }
        };
        let principal = request
            .principal
            .or_else(|| Principal::of(cx).map(|p| p.0))
            .unwrap_or_else(|| Principal::ANONYMOUS.to_owned());
        let binding = Binding {
            principal,
            method: request.method.to_owned(),
            name: request.name.to_owned(),
            arguments: self.inner.digest_key.arguments(&request.arguments),
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
            capabilities: (!before_elicitation)
                .then(|| cx.client_capabilities())
                .flatten(),
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
            looked_ahead: None,
            approving: None,
            arguments: None,
        };
        if mode == Mode::Classic {
            return Ok(round);
        }
        if let Some(state) = request.request_state {
            let now = self.now();
            let opened = self.open_state(state, &round.binding, &request.arguments, now)?;
            // An answer no client could have sent is refused before the
            // state is spent: the client may send it again, mended.
            if let Some(malformed) = unreadable_response(&round.responses) {
                return Err(malformed);
            }
            let first = self
                .inner
                .store
                .consume_token(&opened.nonce, opened.expires_at, now)
                .await
                .map_err(RoundError::Store)?;
            let carried: Carried = serde_json::from_value(opened.carried).map_err(|_| {
                RoundError::State(StateError::Malformed("its carried state is not askgate's"))
            })?;
            if !first {
                let request = carried.data.get(REQUEST_ID).and_then(Json::as_str);
                return Err(RoundError::Replayed {
                    request: request.map(str::to_owned),
                });
            }
            round.carried = carried;
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
                arguments: self.inner.digest_key.arguments(arguments),
            },
            responses: answers,
            carried: Carried::default(),
            sealed: true,
            accept_unsealed: false,
            pending: InputRequests::new(),
            parked: Vec::new(),
            request_id: Some(task_id.to_owned()),
            origin: None,
            looked_ahead: None,
            approving: None,
            arguments: None,
        }
    }
}

/// The first of `responses` that is no answer of any kind a client gives
/// (an elicitation's, a sampling's or a roots list's), as the error that
/// says so.
fn unreadable_response(responses: &rmcp::model::InputResponses) -> Option<RoundError> {
    responses.iter().find_map(|(key, response)| {
        let readable = crate::input::read_sampling(response).is_ok()
            || crate::input::read_roots(response).is_ok();
        match crate::input::read_elicitation(response) {
            Err(source) if !readable => Some(RoundError::Malformed {
                key: key.clone(),
                source,
            }),
            _ => None,
        }
    })
}

/// Whether `version` is a dated revision from before elicitation
/// (2025-06-18): 2024-11-05 and 2025-03-26.
fn before_elicitation(version: &rmcp::model::ProtocolVersion) -> bool {
    let text = version.as_str();
    text.len() == 10 && text.as_bytes()[4] == b'-' && text < Revision::V2025_06_18.as_str()
}

/// The key of the arguments digest, derived from the sealing `key` so the
/// two never coincide.
fn digest_key_of(key: &[u8]) -> DigestKey {
    DigestKey::new(arguments_digest(key, &json!("askgate arguments digest")).as_bytes())
}
