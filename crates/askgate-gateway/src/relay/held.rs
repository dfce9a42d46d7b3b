//! An upstream request followed across the client's rounds.

use std::future::Future;
use std::pin::Pin;

use askgate_mcp::Round;
use rmcp::ErrorData;
use rmcp::model::CallToolResponse;
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;

use super::ask::{ask_peer, check, refusal, with_reason};
use super::inflight::{Answer, Input};
use super::resume::{Resumable, ResumableAsk};
use super::{KEY_PREFIX, Response};

/// The keys askgate's own asks go under: never a server's.
const RESERVED: [&str; 1] = ["confirm"];

/// The upstream call itself: running here, or sent away to run while its
/// downstream call waits for the client's retry.
enum Running<R> {
    Here(Pin<Box<dyn Future<Output = Response<R>> + Send>>),
    Away(tokio::task::JoinHandle<Response<R>>),
    /// Only while being sent away.
    Moving,
}

/// An upstream call (a tool's unless said otherwise) and the asks of its
/// server still waiting for answers.
pub(crate) struct Held<R = CallToolResponse> {
    running: Running<R>,
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
    /// Every key given so far.
    used: std::collections::HashSet<String>,
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
            running: Running::Here(Box::pin(upcall)),
            asks,
            asks_open: true,
            waiting: Vec::new(),
            next_key: 0,
            preset: std::collections::VecDeque::new(),
            used: std::collections::HashSet::new(),
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

    pub(crate) fn key(&mut self) -> String {
        let key = match self.preset.pop_front() {
            Some(key) => key,
            None => loop {
                self.next_key += 1;
                let key = format!("{KEY_PREFIX}{}", self.next_key);
                if !self.used.contains(&key) {
                    break key;
                }
            },
        };
        self.used.insert(key.clone());
        key
    }

    /// The key `input` goes to the client under: the server's own, when it
    /// asked in a round of its own (as a client of it directly would see
    /// it) and that key is free — not askgate's (`confirm`, its
    /// `upstream-N`) nor given before in this call — else one of
    /// askgate's.
    fn key_for(&mut self, input: &Input) -> String {
        let theirs = input.from_round.as_ref().map(|round| round.key.as_str());
        match theirs {
            Some(key)
                if self.preset.is_empty()
                    && !key.starts_with(KEY_PREFIX)
                    && !RESERVED.contains(&key)
                    && !self.used.contains(key) =>
            {
                self.used.insert(key.to_owned());
                key.to_owned()
            }
            _ => self.key(),
        }
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

    async fn result(upcall: &mut Running<R>) -> Response<R> {
        match upcall {
            Running::Here(future) => future.await,
            Running::Away(task) => task.await.unwrap_or_else(|e| {
                Err(ErrorData::internal_error(
                    format!("the upstream call stopped: {e}"),
                    None,
                ))
            }),
            Running::Moving => Err(ErrorData::internal_error(
                "the upstream call was lost while being held",
                None,
            )),
        }
    }

    /// Keep the upstream call running while nobody waits on it here.
    fn send_away(&mut self) {
        let upcall = std::mem::replace(&mut self.running, Running::Moving);
        self.running = match upcall {
            Running::Here(future) => Running::Away(tokio::spawn(future)),
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
                    for (_, mut input) in std::mem::take(&mut self.waiting) {
                        // A server that withdraws its request (its
                        // `notifications/cancelled`) stops the wait; the
                        // client is told (see `as_written`).
                        let answer = tokio::select! {
                            answer = ask_peer(peer, &input.request) => answer,
                            () = input.reply.closed() => continue,
                        };
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
                response = Held::result(&mut self.running) => return Followed::Done(response),
            };
            match asked {
                Some(inputs) => {
                    for input in inputs {
                        let key = self.key_for(&input);
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
