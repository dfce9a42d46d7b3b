//! Where an upstream server's asks go: the calls in flight to it, and the
//! answers back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{InputRequest, InputRequiredResult, InputResponses, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use serde_json::Value as Json;
use tokio::sync::{mpsc, oneshot};

use super::idle::Idle;
use crate::url_mode::UrlAsks;

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
/// URL-mode asks of its server awaiting completion; and the idle clocks
/// its `call_timeout` counts (see [`super::idle`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Inflight {
    calls: Arc<Mutex<Vec<Entry>>>,
    urls: UrlAsks,
    /// The clocks of its requests in flight by their progress tokens: a
    /// progress notification starts one again.
    clocks: Arc<Mutex<HashMap<String, Idle>>>,
    /// The clock of its asks that name no call: while one waits on a
    /// person, no call on the express lane is given up.
    outside: Idle,
}

#[derive(Debug)]
struct Entry {
    call: String,
    principal: String,
    asks: Asks,
    idle: Idle,
}

/// Where an upstream's classic request goes.
#[derive(Debug)]
pub(crate) enum Route {
    /// To the handler of this call, whose clock stands still while the
    /// person is asked.
    Call(Asks, Idle),
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
        let idle = Idle::new();
        self.calls().push(Entry {
            call: call.to_owned(),
            principal: principal.to_owned(),
            asks,
            idle: idle.clone(),
        });
        Entered {
            inflight: self.clone(),
            call: call.to_owned(),
            idle,
        }
    }

    /// The clock of the server's asks that name no call.
    pub(crate) fn outside(&self) -> &Idle {
        &self.outside
    }

    /// Start `idle` again at each progress notification of `token`, until
    /// the guard drops.
    pub(crate) fn watch_progress(&self, token: &ProgressToken, idle: &Idle) -> Watching {
        let key = token_key(token);
        self.clocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), idle.clone());
        Watching {
            clocks: Arc::clone(&self.clocks),
            key,
        }
    }

    /// The server told of progress on `token`: its request's clock starts
    /// again.
    pub(crate) fn progressed(&self, token: &ProgressToken) {
        let clocks = self.clocks.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(idle) = clocks.get(&token_key(token)) {
            idle.touch();
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
                Route::Call(last.asks.clone(), last.idle.clone())
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
    idle: Idle,
}

impl Entered {
    /// The call's idle clock: it stands still while its server's asks
    /// wait on a person.
    pub(crate) fn idle(&self) -> &Idle {
        &self.idle
    }

    /// The upstream it is in flight to.
    pub(crate) fn inflight(&self) -> &Inflight {
        &self.inflight
    }
}

/// A request's clock watched for progress; dropping it ends that.
#[derive(Debug)]
pub(crate) struct Watching {
    clocks: Arc<Mutex<HashMap<String, Idle>>>,
    key: String,
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.clocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
    }
}

/// A progress token as a key: its JSON.
fn token_key(token: &ProgressToken) -> String {
    serde_json::to_string(&token.0).unwrap_or_default()
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
