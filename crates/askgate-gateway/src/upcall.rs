//! An upstream call in flight, and what its server asks on the way.
//!
//! A server may need the person while it works on a call: a classic
//! `elicitation/create`, `sampling/createMessage` or `roots/list` request
//! (2025-06-18, 2025-11-25), or the input requests of an
//! `InputRequiredResult` (2026-07-28). Either way the ask goes to the
//! handler of the downstream call that caused it ([`Inflight`]), which asks
//! the client the way the client's revision allows: a request it waits on
//! (classic clients), or input requests in its own `InputRequiredResult`
//! (2026-07-28 clients) — the upstream call is then [`Held`] in memory until
//! the client's retry brings the answers. Every answer is checked against
//! what was asked before the server gets it.
//!
//! One upstream connection serves every downstream session, and a classic
//! request does not say which call it is for. The calls in flight to that
//! upstream say it: when they are all for one principal, the ask goes to the
//! most recent; when they are for several, the ask is refused rather than
//! shown to the wrong person.
//!
//! The same machinery serves `tools/call`, `prompts/get` and
//! `resources/read`: [`Held`] follows any upstream request, [`answers`]
//! gets the person's answers to one `InputRequiredResult`, and the `holds`
//! module keeps the requests waiting on a retry.

// Sampling and roots are deprecated in rmcp (SEP-2577); upstreams still
// send them, and the gateway relays them.
#![allow(deprecated)]

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use askgate_mcp::client::{Elicitation, Requested};
use askgate_mcp::input;
use askgate_mcp::{Round, RoundError};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, ElicitRequestParams, ElicitationAction, InputRequest, InputRequiredResult,
    InputResponses, ResultType,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Map, Value as Json, json};
use tokio::sync::{mpsc, oneshot};

use super::url_mode::UrlAsks;

/// What a finished upstream call gives the client: a tool's result
/// unless said otherwise (a prompt, a resource).
pub(crate) type Response<R = CallToolResponse> = Result<R, ErrorData>;

/// How many times a person is asked again when an answer does not fit the
/// server's form, before the server is told the ask was cancelled.
const MOST_ASKS: usize = 3;

/// One thing the upstream's server asked for, on its way to the person.
#[derive(Debug)]
pub(crate) struct Input {
    /// The request, as the server sent it.
    pub(crate) request: InputRequest,
    /// Where the checked answer goes, or why there is none.
    pub(crate) reply: oneshot::Sender<Result<Answer, String>>,
    /// Where it came from, when its server asked in an
    /// `InputRequiredResult` (rather than in a request it waits on).
    pub(crate) from_round: Option<FromRound>,
}

/// An input request of an upstream's `InputRequiredResult`: what it takes
/// to send the server its answer in a new request — after a restart, too.
#[derive(Debug, Clone)]
pub(crate) struct FromRound {
    /// The server's key for it.
    pub(crate) key: String,
    /// The server's `requestState`, to send back with the answers.
    pub(crate) state: Option<String>,
}

/// A checked answer to an [`Input`], and the client that gave it.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The answer, as the server gets it.
    pub(crate) value: Json,
    /// The classic client that was sent the request and answered it —
    /// where later news about the ask goes (the completion of a URL-mode
    /// elicitation, see the `url_mode` module). `None` when the answer
    /// came in a 2026-07-28 client's retry: that revision has no such
    /// news.
    pub(crate) client: Option<Peer<RoleServer>>,
}

/// Where the asks of one upstream call go.
pub(crate) type Asks = mpsc::UnboundedSender<Vec<Input>>;

/// The calls in flight to one upstream, where their asks go, and the
/// URL-mode asks of its server awaiting completion.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inflight {
    calls: Arc<Mutex<Vec<Entry>>>,
    urls: UrlAsks,
}

#[derive(Debug)]
struct Entry {
    call: String,
    principal: String,
    asks: Asks,
}

/// Where an upstream's classic request goes.
#[derive(Debug)]
pub(crate) enum Route {
    /// To the handler of this call.
    Call(Asks),
    /// No call is in flight: the server asks on its own (for example its
    /// roots, right after connecting).
    NoCall,
    /// Calls of several principals are in flight: which person is meant is
    /// not known.
    Ambiguous,
}

impl Inflight {
    fn calls(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Note `call`, for `principal`, in flight until the guard drops.
    pub(crate) fn enter(&self, call: &str, principal: &str, asks: Asks) -> Entered {
        self.calls().push(Entry {
            call: call.to_owned(),
            principal: principal.to_owned(),
            asks,
        });
        Entered {
            inflight: self.clone(),
            call: call.to_owned(),
        }
    }

    /// The server's URL-mode asks awaiting completion.
    pub(crate) fn urls(&self) -> &UrlAsks {
        &self.urls
    }

    /// Where an ask that names no call goes now.
    pub(crate) fn route(&self) -> Route {
        let calls = self.calls();
        match calls.last() {
            None => Route::NoCall,
            Some(last) if calls.iter().all(|c| c.principal == last.principal) => {
                Route::Call(last.asks.clone())
            }
            Some(_) => Route::Ambiguous,
        }
    }
}

/// A call noted in flight; dropping it ends that.
#[derive(Debug)]
pub(crate) struct Entered {
    inflight: Inflight,
    call: String,
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.inflight.calls().retain(|c| c.call != self.call);
    }
}

/// Ask the handler of the call behind `asks` for `request`, and wait.
///
/// # Errors
/// Why nobody answered, in words for the server (no values).
pub(crate) async fn ask_through(asks: &Asks, request: InputRequest) -> Result<Answer, String> {
    let (reply, answer) = oneshot::channel();
    asks.send(vec![Input {
        request,
        reply,
        from_round: None,
    }])
    .map_err(|_| "the call it was asked for has ended".to_owned())?;
    answer
        .await
        .map_err(|_| "nobody answered before the call's wait ended".to_owned())?
}

/// The person's answers to the input requests of `needed` — one round of
/// a 2026-07-28 server's request — asked through the handler behind
/// `asks`, by the keys the server gave them.
///
/// # Errors
/// Why one of them got no answer, in words for the server and the client
/// (no values).
pub(crate) async fn answers(
    needed: &InputRequiredResult,
    asks: &Asks,
) -> Result<InputResponses, String> {
    let mut inputs = Vec::new();
    let mut replies = Vec::new();
    for (key, request) in needed.input_requests.clone().unwrap_or_default() {
        let (reply, answer) = oneshot::channel();
        let from_round = Some(FromRound {
            key: key.clone(),
            state: needed.request_state.clone(),
        });
        inputs.push(Input {
            request,
            reply,
            from_round,
        });
        replies.push((key, answer));
    }
    if !inputs.is_empty() && asks.send(inputs).is_err() {
        return Err("the call it was asked for has ended".to_owned());
    }
    let mut responses = InputResponses::new();
    for (key, answer) in replies {
        let answer = answer.await.map_err(|_| "nobody answered".to_owned())??;
        responses.insert(key, answer.value);
    }
    Ok(responses)
}

/// How the keys of relayed asks begin.
const KEY_PREFIX: &str = "upstream-";

/// A held call's asks of its server's latest `InputRequiredResult`,
/// carried in the client's sealed request state: when the retry finds the
/// call no longer held (the gateway restarted), the call is sent again
/// with the retry's answers and the server's state — the next request of
/// the multi round-trip, not a second run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub(crate) struct Resumable {
    /// The asks, in the order they went to the client.
    pub(crate) asks: Vec<ResumableAsk>,
    /// The server's `requestState`.
    pub(crate) state: Option<String>,
}

/// One ask of a [`Resumable`] call.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub(crate) struct ResumableAsk {
    /// The key it went to the client under.
    pub(crate) ours: String,
    /// The server's key.
    pub(crate) theirs: String,
    /// The server's request.
    pub(crate) request: Json,
}

impl Resumable {
    /// The server's round again: what [`answers`] asks the client for.
    ///
    /// # Errors
    /// A carried request that is not an input request (a state from
    /// another version of askgate).
    pub(crate) fn needed(&self) -> Result<rmcp::model::InputRequiredResult, String> {
        let mut requests = rmcp::model::InputRequests::new();
        for ask in &self.asks {
            let request = serde_json::from_value(ask.request.clone())
                .map_err(|e| format!("a carried input request is not one: {e}"))?;
            requests.insert(ask.theirs.clone(), request);
        }
        Ok(rmcp::model::InputRequiredResult::new(
            Some(requests),
            self.state.clone(),
        ))
    }

    /// The keys the asks went to the client under, in order.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.asks.iter().map(|a| a.ours.clone()).collect()
    }
}

/// The upstream call itself: running here, or sent away to run while its
/// downstream call waits for the client's retry.
enum Upcall<R> {
    Here(Pin<Box<dyn Future<Output = Response<R>> + Send>>),
    Away(tokio::task::JoinHandle<Response<R>>),
    /// Only while being sent away.
    Moving,
}

/// An upstream call (a tool's unless said otherwise) and the asks of its
/// server still waiting for answers.
pub(crate) struct Held<R = CallToolResponse> {
    upcall: Upcall<R>,
    asks: mpsc::UnboundedReceiver<Vec<Input>>,
    asks_open: bool,
    /// Asks sent to the client, by the key they went under.
    waiting: Vec<(String, Input)>,
    /// Keys are never reused within a call: a retry's answers are found
    /// by key.
    next_key: u32,
    /// Keys to give the first asks before counting on (a call resumed
    /// after a restart: its asks go under the keys they went under
    /// before).
    preset: std::collections::VecDeque<String>,
}

impl<R> std::fmt::Debug for Held<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("waiting", &self.waiting.len())
            .finish_non_exhaustive()
    }
}

/// Where following a call got to.
#[derive(Debug)]
pub(crate) enum Followed<R = CallToolResponse> {
    /// The upstream answered.
    Done(Response<R>),
    /// The client must answer the round's input requests first.
    Waiting(Held<R>),
}

impl<R: Send + 'static> Held<R> {
    /// Follow `upcall`, whose server's asks arrive on `asks`.
    pub(crate) fn new(
        upcall: impl Future<Output = Response<R>> + Send + 'static,
        asks: mpsc::UnboundedReceiver<Vec<Input>>,
    ) -> Held<R> {
        Held {
            upcall: Upcall::Here(Box::pin(upcall)),
            asks,
            asks_open: true,
            waiting: Vec::new(),
            next_key: 0,
            preset: std::collections::VecDeque::new(),
        }
    }

    /// Give the first asks `keys`, in order, and count on past them.
    pub(crate) fn with_keys(mut self, keys: Vec<String>) -> Held<R> {
        self.next_key = keys
            .iter()
            .filter_map(|k| k.strip_prefix(KEY_PREFIX)?.parse::<u32>().ok())
            .max()
            .unwrap_or(0);
        self.preset = keys.into();
        self
    }

    fn key(&mut self) -> String {
        if let Some(key) = self.preset.pop_front() {
            return key;
        }
        self.next_key += 1;
        format!("{KEY_PREFIX}{}", self.next_key)
    }

    /// What it takes to resume the call after a restart, when every ask
    /// waiting came in its server's `InputRequiredResult` (a server's
    /// request it waits on dies with the connection): see [`Resumable`].
    pub(crate) fn resumable(&self) -> Option<Resumable> {
        let mut asks = Vec::new();
        let mut state = None;
        for (ours, input) in &self.waiting {
            let from = input.from_round.as_ref()?;
            state.clone_from(&from.state);
            asks.push(ResumableAsk {
                ours: ours.clone(),
                theirs: from.key.clone(),
                request: serde_json::to_value(&input.request).ok()?,
            });
        }
        (!asks.is_empty()).then_some(Resumable { asks, state })
    }

    async fn result(upcall: &mut Upcall<R>) -> Response<R> {
        match upcall {
            Upcall::Here(future) => future.await,
            Upcall::Away(task) => task.await.unwrap_or_else(|e| {
                Err(ErrorData::internal_error(
                    format!("the upstream call stopped: {e}"),
                    None,
                ))
            }),
            Upcall::Moving => Err(ErrorData::internal_error(
                "the upstream call was lost while being held",
                None,
            )),
        }
    }

    /// Keep the upstream call running while nobody waits on it here.
    fn send_away(&mut self) {
        let upcall = std::mem::replace(&mut self.upcall, Upcall::Moving);
        self.upcall = match upcall {
            Upcall::Here(future) => Upcall::Away(tokio::spawn(future)),
            away => away,
        };
    }

    /// Follow the call to its end, answering what its server asks on the
    /// way: through `peer` on revisions that send requests, else as the
    /// round's input requests (the call is then held for the retry).
    pub(crate) async fn follow(
        mut self,
        round: &mut Round,
        peer: &Peer<RoleServer>,
    ) -> Followed<R> {
        loop {
            if !self.waiting.is_empty() {
                if round.is_multi_round_trip() {
                    if self.answer_from(round) {
                        self.send_away();
                        return Followed::Waiting(self);
                    }
                } else {
                    for (_, input) in std::mem::take(&mut self.waiting) {
                        let answer = ask_peer(peer, &input.request).await;
                        let _ = input.reply.send(answer.map(|value| Answer {
                            value,
                            client: Some(peer.clone()),
                        }));
                    }
                }
            }
            let asked = tokio::select! {
                biased;
                inputs = self.asks.recv(), if self.asks_open => inputs,
                response = Held::result(&mut self.upcall) => return Followed::Done(response),
            };
            match asked {
                Some(inputs) => {
                    for input in inputs {
                        let key = self.key();
                        self.waiting.push((key, input));
                    }
                }
                None => self.asks_open = false,
            }
        }
    }

    /// Give the waiting asks the answers this retry carries; queue the rest
    /// (and answers that did not fit, with the reason) as the round's input
    /// requests. Whether any is still waiting.
    fn answer_from(&mut self, round: &mut Round) -> bool {
        let mut still = Vec::new();
        for (key, input) in std::mem::take(&mut self.waiting) {
            let next = match round.relayed_answer(&key) {
                Some(answer) => match check(&input.request, &answer) {
                    Ok(value) => {
                        let client = None;
                        let _ = input.reply.send(Ok(Answer { value, client }));
                        continue;
                    }
                    Err(why) => Some((self.key(), with_reason(&input.request, &why))),
                },
                None => None,
            };
            let (key, request) = next.unwrap_or_else(|| (key, input.request.clone()));
            match round.relay(&key, request) {
                Ok(()) => still.push((key, input)),
                Err(error) => {
                    let _ = input.reply.send(Err(refusal(&error)));
                }
            }
        }
        self.waiting = still;
        !self.waiting.is_empty()
    }
}

fn refusal(error: &RoundError) -> String {
    format!("the client behind askgate cannot answer it: {error}")
}

/// Ask a classic client for `request`: checked against what the client
/// declared, and, for a form, the answer checked against the form — asked
/// again with the reason when it does not fit, at most [`MOST_ASKS`] times,
/// then cancelled.
///
/// # Errors
/// Why the client could not be asked, in words for the server.
pub(crate) async fn ask_peer(
    peer: &Peer<RoleServer>,
    request: &InputRequest,
) -> Result<Json, String> {
    let declared = peer.peer_info().map(|info| info.capabilities.clone());
    let lacks = |what: &str| format!("the client behind askgate did not declare {what}");
    match request {
        InputRequest::Elicitation(asked) => {
            let elicitation = declared.as_ref().and_then(|c| c.elicitation.as_ref());
            let Some(elicitation) = elicitation else {
                return Err(lacks("elicitation"));
            };
            let url = matches!(
                asked.params,
                ElicitRequestParams::UrlElicitationParams { .. }
            );
            if url && elicitation.url.is_none() {
                return Err(lacks("URL-mode elicitation"));
            }
            if !url && elicitation.url.is_some() && elicitation.form.is_none() {
                return Err(lacks("form-mode elicitation"));
            }
            let mut params = asked.params.clone();
            for _ in 0..MOST_ASKS {
                let result = peer
                    .create_elicitation(params.clone())
                    .await
                    .map_err(|e| format!("the client could not be asked: {e}"))?;
                let answer = serde_json::to_value(&result).map_err(|e| e.to_string())?;
                match check(request, &answer) {
                    Ok(answer) => return Ok(answer),
                    Err(why) => params = reasoned(&asked.params, &why),
                }
            }
            Ok(json!({"action": "cancel"}))
        }
        InputRequest::CreateMessage(asked) => {
            if declared.as_ref().is_none_or(|c| c.sampling.is_none()) {
                return Err(lacks("sampling"));
            }
            let result = peer
                .create_message(asked.params.clone())
                .await
                .map_err(|e| format!("the client could not sample: {e}"))?;
            serde_json::to_value(&result).map_err(|e| e.to_string())
        }
        InputRequest::ListRoots(_) => {
            if declared.as_ref().is_none_or(|c| c.roots.is_none()) {
                return Err(lacks("roots"));
            }
            let result = peer
                .list_roots()
                .await
                .map_err(|e| format!("the client could not list its roots: {e}"))?;
            serde_json::to_value(&result).map_err(|e| e.to_string())
        }
        _ => Err("an input request of a kind askgate does not know".into()),
    }
}

/// Check an answer to `request` before the server gets it: the shape of
/// the result, and for an accepted form every value against its property —
/// nothing unasked, nothing required missing. Returns the answer with
/// values in their canonical form.
///
/// # Errors
/// Why it does not fit, naming the property, never the value.
pub(crate) fn check(request: &InputRequest, answer: &Json) -> Result<Json, String> {
    let malformed = |e: input::InputError| e.to_string();
    match request {
        InputRequest::Elicitation(asked) => {
            let mut result = input::read_elicitation(answer).map_err(malformed)?;
            if result.action != ElicitationAction::Accept {
                result.content = None;
                return serde_json::to_value(&result).map_err(|e| e.to_string());
            }
            let Ok(Elicitation::Form(form)) = Elicitation::read(&asked.params) else {
                // URL mode (no content), or a form askgate cannot read —
                // the server checks that one itself.
                return Ok(answer.clone());
            };
            let content = match result.content.take() {
                Some(Json::Object(content)) => content,
                None => Map::new(),
                Some(_) => return Err("the answer's content is not an object".into()),
            };
            result.content = Some(Json::Object(checked(&form, content)?));
            serde_json::to_value(&result).map_err(|e| e.to_string())
        }
        InputRequest::CreateMessage(_) => {
            input::read_sampling(answer).map_err(malformed)?;
            Ok(answer.clone())
        }
        InputRequest::ListRoots(_) => {
            input::read_roots(answer).map_err(malformed)?;
            Ok(answer.clone())
        }
        _ => Err("an input request of a kind askgate does not know".into()),
    }
}

fn checked(form: &Requested, mut content: Map<String, Json>) -> Result<Map<String, Json>, String> {
    if let Some(name) = content
        .keys()
        .find(|name| !form.properties.iter().any(|p| &p.name == *name))
    {
        return Err(format!("{name:?} was not asked for"));
    }
    let mut out = Map::new();
    for property in &form.properties {
        match content.remove(&property.name) {
            Some(value) => {
                let value = property
                    .check(&value)
                    .map_err(|why| format!("{}: {why}", property.name))?;
                out.insert(property.name.clone(), value);
            }
            None if property.required => return Err(format!("{} is required", property.name)),
            None => {}
        }
    }
    Ok(out)
}

/// The form's params with the reason the last answer did not fit before
/// its message.
fn reasoned(params: &ElicitRequestParams, why: &str) -> ElicitRequestParams {
    let mut params = params.clone();
    if let ElicitRequestParams::FormElicitationParams { message, .. } = &mut params {
        *message = format!("The last answer did not fit ({why}).\n\n{message}");
    }
    params
}

fn with_reason(request: &InputRequest, why: &str) -> InputRequest {
    match request {
        InputRequest::Elicitation(asked) => {
            let mut asked = asked.clone();
            asked.params = reasoned(&asked.params, why);
            InputRequest::Elicitation(asked)
        }
        other => other.clone(),
    }
}

/// A result from an older upstream has no `resultType`; a 2026-07-28
/// client needs one (rmcp strips it for older ones).
pub(crate) fn complete(mut result: rmcp::model::CallToolResult) -> CallToolResponse {
    result.result_type.get_or_insert(ResultType::COMPLETE);
    result.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_call_gives_its_asks_their_old_keys_and_counts_on_past_them() {
        let (_asks, asked) = mpsc::unbounded_channel();
        let mut held: Held = Held::new(std::future::pending(), asked)
            .with_keys(vec!["upstream-3".into(), "upstream-5".into()]);
        assert_eq!(held.key(), "upstream-3");
        assert_eq!(held.key(), "upstream-5");
        assert_eq!(held.key(), "upstream-6", "never a key used before");
    }

    #[test]
    fn a_carried_round_gives_the_server_its_own_keys_and_state_back() {
        let resumable = Resumable {
            asks: vec![ResumableAsk {
                ours: "upstream-1".into(),
                theirs: "name".into(),
                request: serde_json::to_value(name_form()).expect("serializes"),
            }],
            state: Some("theirs".into()),
        };
        let needed = resumable.needed().expect("its requests read back");
        let requests = needed.input_requests.expect("requests");
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["name"]);
        assert_eq!(needed.request_state.as_deref(), Some("theirs"));
        assert_eq!(resumable.keys(), ["upstream-1"]);
        let broken = Resumable {
            asks: vec![ResumableAsk {
                request: json!({"method": "nonsense"}),
                ..resumable.asks[0].clone()
            }],
            state: None,
        };
        assert!(broken.needed().is_err());
    }

    fn name_form() -> InputRequest {
        input::from_json(&json!({
            "method": "elicitation/create",
            "params": {
                "message": "What is your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "age": {"type": "integer", "minimum": 0}
                    },
                    "required": ["name"]
                }
            }
        }))
        .expect("a form request")
    }

    #[test]
    fn a_fitting_answer_reaches_the_server_in_canonical_form() {
        let answer = json!({"action": "accept", "content": {"name": "Ada", "age": 36.0}});
        let checked = check(&name_form(), &answer).expect("fits");
        assert_eq!(checked["content"], json!({"name": "Ada", "age": 36}));
    }

    #[test]
    fn an_answer_that_does_not_fit_is_refused_naming_the_property_not_the_value() {
        for (content, expected) in [
            (json!({"age": 3}), "name is required"),
            (
                json!({"name": "Ada", "shoe": "42"}),
                "\"shoe\" was not asked for",
            ),
            (json!({"name": "Ada", "age": -7}), "age:"),
            (json!({"name": 4242}), "name:"),
        ] {
            let answer = json!({"action": "accept", "content": content});
            let why = check(&name_form(), &answer).expect_err("does not fit");
            assert!(why.contains(expected), "{why:?} should say {expected:?}");
            assert!(!why.contains("4242") && !why.contains("-7"), "{why:?}");
        }
    }

    #[test]
    fn a_decline_is_passed_on_without_content() {
        let answer = json!({"action": "decline", "content": {"name": "Ada"}});
        let checked = check(&name_form(), &answer).expect("a decline is an answer");
        assert_eq!(checked, json!({"action": "decline"}));
    }

    #[test]
    fn asks_go_to_the_call_in_flight_unless_several_people_have_calls_there() {
        let inflight = Inflight::default();
        assert!(matches!(inflight.route(), Route::NoCall));
        let (asks, _asked) = mpsc::unbounded_channel();
        let first = inflight.enter("call_1", "ada", asks.clone());
        let second = inflight.enter("call_2", "ada", asks.clone());
        assert!(matches!(inflight.route(), Route::Call(_)));
        let other = inflight.enter("call_3", "grace", asks);
        assert!(matches!(inflight.route(), Route::Ambiguous));
        drop(other);
        drop(first);
        assert!(matches!(inflight.route(), Route::Call(_)));
        drop(second);
        assert!(matches!(inflight.route(), Route::NoCall));
    }
}
