//! Asking within a round: a person (with checks and re-asks), the
//! client's model, its roots, and inputs relayed for another server —
//! answered now, replayed from earlier rounds, or queued as input requests.

use std::time::Duration;

use askgate_core::{Ask, Outcome, StateError, Step};
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, InputRequest, InputRequests, ListRootsResult,
};
use serde_json::Value as Json;

use super::{Mode, Round, RoundError};
use crate::ask::{Unanswered, ask_person_timed, modes, response_of};
use crate::input::{self, InputError, InputKind};

impl Round {
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
        let params = ask.request(self.revision).map_err(RoundError::unsendable)?;
        let request = input::elicit_form(&params).map_err(RoundError::unsendable)?;
        if let Some(given) = self.answer(key).filter(|_| self.answers(key, &request)) {
            let result = input::read_elicitation(&given).map_err(|e| malformed(key, e))?;
            self.carried
                .asks
                .entry(key.to_owned())
                .or_default()
                .push(given);
            let took = self.since_asked(key);
            match ask.settle(self.revision, &response_of(result)) {
                Step::Settled(outcome) => return Ok(Some((outcome, took))),
                Step::ReAsk(next) => {
                    let params = next
                        .request(self.revision)
                        .map_err(RoundError::unsendable)?;
                    let request = input::elicit_form(&params).map_err(RoundError::unsendable)?;
                    self.queue_timed(key, request);
                    return Ok(None);
                }
            }
        }
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
                let params = ask.request(self.revision).map_err(RoundError::unsendable)?;
                let request = input::elicit_form(&params).map_err(RoundError::unsendable)?;
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
                .map_err(|e| RoundError::Unanswered(Unanswered::Failed(e)));
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
                .map_err(|e| RoundError::Unanswered(Unanswered::Failed(e)));
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
    /// capability the request needs; [`RoundError::NotInput`] for a
    /// request of no kind a client answers.
    pub fn relay(&mut self, key: &str, request: InputRequest) -> Result<(), RoundError> {
        let kind = InputKind::of(&request).ok_or_else(|| RoundError::NotInput {
            key: key.to_owned(),
        })?;
        if !self.can(kind) {
            return Err(RoundError::Missing(kind));
        }
        self.pending.insert(key.to_owned(), request);
        Ok(())
    }

    /// This round's answer under `key`, if it may be taken.
    pub(super) fn answer(&self, key: &str) -> Option<Json> {
        if !(self.sealed || self.accept_unsealed) {
            return None;
        }
        self.responses.get(key).cloned()
    }

    /// The input requests queued so far, by key.
    pub fn pending(&self) -> &InputRequests {
        &self.pending
    }
}

/// The key of the `attempt`th ask under `key` in a task.
fn attempt_key(key: &str, attempt: usize) -> String {
    if attempt <= 1 {
        key.to_owned()
    } else {
        format!("{key}#{attempt}")
    }
}

fn malformed(key: &str, error: InputError) -> RoundError {
    RoundError::Malformed {
        key: key.to_owned(),
        source: error,
    }
}
