//! A decided call driven through its [`Lifecycle`]: audited and answered
//! when it does not go; else recorded in the ledger with its decision —
//! durable before the request leaves when it must be — sent, and followed
//! across the client's rounds until its answer (see the `upstream_call`
//! module for the rest of its life).

use std::sync::Arc;

use askgate_core::Call;
use askgate_mcp::{Decided, Round};
use askgate_store::NewCall;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, InputResponses, JsonObject,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value as Json;

use super::Gateway;
use super::call::CONFIRM;
use super::on_lane::{LaneSend, Needs};
use super::upstream_call::{Cancelled, UpstreamCall};
use crate::downstream::Progress;
use crate::holds::{HELD, RESUME};
use crate::lifecycle::{Answer, Audited, Effect, Lifecycle};
use crate::record::{End, Ending};
use crate::relay::{Followed, Held, Resumable};
use crate::tasks::Caller;

/// The write that records a call as sent, run to its end even when the
/// call is cancelled meanwhile.
type Recording =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), askgate_store::Error>> + Send>>;

/// A call on its way upstream, through rmcp or on the express lane.
type Running = std::pin::Pin<Box<dyn std::future::Future<Output = crate::relay::Response> + Send>>;

/// How long a call's record is tried again while the store is out of
/// reach before the call fails, not sent, with the outage named.
const OUTAGE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(300);

/// A decided call, as [`Gateway::drive`] takes it.
pub(crate) struct Approved<'a> {
    /// The upstream.
    pub(crate) index: usize,
    /// The tool, by its upstream name.
    pub(crate) tool: &'a str,
    /// The arguments to send.
    pub(crate) arguments: JsonObject,
    /// Who asked for it.
    pub(crate) principal: &'a str,
    /// The decision, and its audit entry.
    pub(crate) decided: Decided,
    /// The server's round a retry resumes, when the call was held before
    /// a restart.
    pub(crate) resumed: Option<Resumable>,
    /// The client's request it is made in, when a sealed `requestState`
    /// can name it again (see [`Round::request_id`]).
    pub(crate) request: Option<String>,
}

/// How the durable write of a call as sent went.
enum Wrote {
    /// Written.
    Written,
    /// It failed: the call is not sent.
    Failed(askgate_store::Error),
    /// The client cancelled the call meanwhile: it is answered now, and its
    /// record ends "not sent" (once written, when the write was still
    /// running).
    Withdrawn,
}

/// The client behind a call about to be sent, as its upstream request
/// carries it.
struct Behind {
    /// Where its progress goes, when it asked for it.
    progress: Option<Progress>,
    /// Its client, when it follows tasks.
    tasks: Option<Caller>,
    /// What its client declared it has.
    client: Option<ClientCapabilities>,
    /// The input responses it carried unasked.
    given: Option<InputResponses>,
    /// Its cancel, when it waits on the call itself.
    cancelled: Option<Cancelled>,
    /// Its 2025-11-25 `task`, when it asked for one.
    legacy_task: Option<serde_json::Value>,
}

/// The ledger's call, once the decision lets it go.
struct Ledgered {
    call: NewCall,
    marker: String,
    ending: Option<Ending>,
}

impl Gateway {
    /// Carry out what `life` says for `approved`, decided in `round` about
    /// `call`, until the client is answered.
    ///
    /// # Errors
    /// A store that failed, a resumed round that cannot be read, the
    /// upstream's failure — each saying what happened to the call.
    pub(crate) async fn drive(
        &self,
        mut life: Lifecycle,
        approved: Approved<'_>,
        round: Round,
        call: &Call<'_>,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut ledgered: Option<Ledgered> = None;
        let mut failure = None;
        while let Some(effect) = life.poll() {
            match effect {
                Effect::CountDecision(method) => {
                    self.inner.settings.metrics.decision(method.as_str());
                }
                Effect::Audit(Audited::Decision) => approved.decided.audit(&round).await?,
                Effect::Audit(Audited::Withdrawal) => {
                    round.cancelled(CONFIRM, call).audit(&round).await?;
                }
                Effect::Answer(Answer::NotSent(Audited::Decision)) => {
                    return Ok(not_sent(approved.decided.verdict.for_model.clone()));
                }
                Effect::Answer(Answer::NotSent(Audited::Withdrawal)) => {
                    tracing::info!(
                        server = call.server,
                        tool = call.tool,
                        "cancelled by its client before it was sent; not sent"
                    );
                    return Ok(not_sent(round.cancelled(CONFIRM, call).verdict.for_model));
                }
                Effect::Answer(Answer::Unrecorded) => {
                    return Err(self.unrecorded(&approved, failure.take()));
                }
                Effect::RecordSent => {
                    let mut this = self.ledgered(&approved)?;
                    let recording = self.recording(&approved, &this);
                    let queued = End::Queue(self.store().clone());
                    this.ending = Some(self.ending(&approved, &this.call, queued));
                    let this = ledgered.insert(this);
                    match self.record(&mut life, recording, this, cx).await {
                        Wrote::Written => {}
                        Wrote::Failed(error) => failure = Some(error),
                        // Answered now; its record ends "not sent".
                        Wrote::Withdrawn => {
                            self.inner.settings.metrics.cancelled(call.server);
                            return Ok(not_sent(round.cancelled(CONFIRM, call).verdict.for_model));
                        }
                    }
                }
                Effect::RecordEnd(ended) => {
                    if let Some(ending) = ledgered.as_mut().and_then(|l| l.ending.as_mut()) {
                        ending.ended(&ended);
                    }
                }
                Effect::Send => {
                    let this = match ledgered.take() {
                        Some(this) => this,
                        None => self.unrecorded_read(&approved).await?,
                    };
                    let legacy_task = super::legacy_tasks::task_of(cx);
                    let behind = Behind {
                        progress: self.progress_of(cx),
                        tasks: Self::task_caller(cx, approved.principal).or_else(|| {
                            legacy_task
                                .as_ref()
                                .map(|_| super::legacy_tasks::caller(cx, approved.principal))
                        }),
                        legacy_task,
                        client: cx.client_capabilities(),
                        given: round.unsealed_responses().cloned(),
                        cancelled: (!round.is_multi_round_trip()).then(|| {
                            let cancel = cx.ct.clone();
                            let cancelled: Cancelled = Box::pin(async move {
                                cancel.cancelled().await;
                            });
                            cancelled
                        }),
                    };
                    let held = self.send(life, approved, this, behind)?;
                    return self.follow(held, round, cx).await;
                }
                // The upstream's end comes to the call on its way (see
                // `upstream_call`), not here.
                Effect::Answer(Answer::Result | Answer::Failed(_)) => {}
            }
        }
        Err(ErrorData::internal_error(
            "the call ended without an answer; it was not sent",
            None,
        ))
    }

    /// The ledger's call of `approved`, and its marker.
    fn ledgered(&self, approved: &Approved<'_>) -> Result<Ledgered, ErrorData> {
        let (call, marker) = self.new_call(
            approved.index,
            approved.tool,
            &approved.arguments,
            approved.principal,
            approved.request.clone(),
        )?;
        Ok(Ledgered {
            call,
            marker,
            ending: None,
        })
    }

    /// How the end of `call` of `approved` is told.
    fn ending(&self, approved: &Approved<'_>, call: &NewCall, end: End) -> Ending {
        let settings = &self.inner.settings;
        Ending::new(
            Arc::clone(settings.rounds.clock()),
            call.id.clone(),
            self.upstream_name(approved.index),
            settings.metrics.clone(),
            settings.background.clone(),
            end,
        )
    }

    /// A read nobody decided, about to be sent: its record waits for its
    /// end (bounded: a store that falls behind slows reads down rather
    /// than letting their records pile up in memory).
    async fn unrecorded_read(&self, approved: &Approved<'_>) -> Result<Ledgered, ErrorData> {
        let mut this = self.ledgered(approved)?;
        let background = &self.inner.settings.background;
        background.room().await;
        let entry = approved.decided.entry.clone();
        let end = End::unrecorded(
            self.store(),
            background,
            entry,
            this.call.clone(),
            this.marker.clone(),
        );
        this.ending = Some(self.ending(approved, &this.call, end));
        Ok(this)
    }

    /// The durable write of `this` as sent, with its decision. While the
    /// store is out of reach (its server down or restarting) the write is
    /// tried again, for up to [`OUTAGE_PATIENCE`]: a person's yes given
    /// meanwhile is not lost, and the call goes once the store is back
    /// (the same call recorded twice is kept once). The caller's cancel
    /// still ends the wait (see `record`).
    fn recording(&self, approved: &Approved<'_>, this: &Ledgered) -> Recording {
        let store = self.store().clone();
        let (mut entry, call, marker) = (
            approved.decided.entry.clone(),
            this.call.clone(),
            this.marker.clone(),
        );
        // Tried again, a write whose answer was lost must not append the
        // decision twice: keyed by the call, the chain keeps the first.
        entry
            .decision_key
            .get_or_insert_with(|| format!("sent:{}", call.id));
        let clock = Arc::clone(self.inner.settings.rounds.clock());
        Box::pin(async move {
            let until = tokio::time::Instant::now() + OUTAGE_PATIENCE;
            let mut backoff = askgate_store::Backoff::new();
            let mut sent_at = call.at;
            loop {
                match store
                    .record_sent_call(&entry, &call, &marker, sent_at)
                    .await
                {
                    Ok(_) => return Ok(()),
                    Err(error) if error.is_outage() && tokio::time::Instant::now() < until => {
                        tracing::warn!(call = %call.id, %error, "the store is out of reach; the call is sent once its record is written");
                        tokio::time::sleep(backoff.next_wait()).await;
                        // It is sent just after the write that takes: "it
                        // may have run at" names that time, not the
                        // decision's before the outage.
                        sent_at = clock.now();
                    }
                    Err(error) => return Err(error),
                }
            }
        })
    }

    /// Wait for `recording`, telling `life` how it went — or that the
    /// client cancelled meanwhile: then the client is answered at once,
    /// and the record, once written, ends `not sent`.
    async fn record(
        &self,
        life: &mut Lifecycle,
        mut recording: Recording,
        this: &mut Ledgered,
        cx: &RequestContext<RoleServer>,
    ) -> Wrote {
        let written = tokio::select! {
            written = &mut recording => written,
            () = cx.ct.cancelled() => {
                // A stalled store: the write goes on, the client does not
                // wait for it.
                tracing::info!(call = %this.call.id, server = %this.call.server, tool = %this.call.tool, "cancelled by its client before it was sent; not sent");
                life.handle_cancelled();
                // The answer is the caller's to give, now.
                let _answer = life.poll();
                let (mut rest, ending) = (std::mem::take(life), this.ending.take());
                self.inner.settings.background.spawn(async move {
                    rest.handle_recorded(recording.await.is_ok());
                    if let (Some(Effect::RecordEnd(ended)), Some(mut ending)) = (rest.poll(), ending) {
                        ending.ended(&ended);
                    }
                });
                return Wrote::Withdrawn;
            }
        };
        // Cancelled just as its record was written: it is not sent, and its
        // record says so before the caller is answered.
        if cx.ct.is_cancelled() && written.is_ok() {
            life.handle_cancelled();
            life.handle_recorded(true);
            while let Some(effect) = life.poll() {
                if let (Effect::RecordEnd(ended), Some(ending)) = (effect, this.ending.as_mut()) {
                    ending.ended(&ended);
                }
            }
            return Wrote::Withdrawn;
        }
        life.handle_recorded(written.is_ok());
        match written {
            Ok(()) => Wrote::Written,
            Err(error) => Wrote::Failed(error),
        }
    }

    /// Send the call of `approved` (`life` says so), recorded as `this`:
    /// the call, to follow (see [`Held::follow`]).
    fn send(
        &self,
        life: Lifecycle,
        approved: Approved<'_>,
        this: Ledgered,
        behind: Behind,
    ) -> Result<Held, ErrorData> {
        let Approved {
            index,
            tool,
            arguments,
            principal,
            decided,
            resumed,
            request: _,
        } = approved;
        let upstream = self.started(index)?;
        let start = resumed
            .as_ref()
            .map(Resumable::needed)
            .transpose()
            .map_err(|why| {
                ErrorData::invalid_params(
                    format!("the retry's state cannot resume the call to {tool}: {why}"),
                    None,
                )
            })?;
        let Ledgered {
            call,
            marker,
            ending,
        } = this;
        let Some(ending) = ending else {
            decided.log();
            return Err(ErrorData::internal_error(
                "the call has no record to end; it was not sent",
                None,
            ));
        };
        let (asks, asked) = tokio::sync::mpsc::unbounded_channel();
        let entered = upstream.inflight.enter(&call.id, principal, asks.clone());
        if resumed.is_some() {
            tracing::info!(call = %call.id, server = %upstream.name, tool, "resuming a call held before a restart: sending its server's round again with the retry's answers");
        }
        let needs = Needs {
            tasks: behind.tasks.is_some() || behind.legacy_task.is_some(),
            input: behind.given.is_some() || start.is_some(),
        };
        let on_lane = self.lane_for(index, &needs).and_then(|lane| {
            let progress = match &behind.progress {
                Some(progress) => Some(self.lane_route(index, progress)?),
                None => None,
            };
            Some((lane, progress))
        });
        let running: Running = match on_lane {
            Some((lane, progress)) => lane.send_decided(LaneSend {
                server: upstream.name.clone(),
                tool: tool.to_owned(),
                arguments,
                marker: self.marks_calls().then_some(marker),
                ending,
                life,
                entered,
                progress,
                cancelled: behind.cancelled,
                gateway: self.clone(),
            }),
            None => Box::pin(
                UpstreamCall {
                    gateway: self.clone(),
                    index,
                    tool: tool.to_owned(),
                    ending,
                    life,
                    progress: behind.progress,
                    tasks: behind.tasks,
                    client: behind.client,
                    given: behind.given,
                    cancelled: behind.cancelled,
                    legacy_task: behind.legacy_task,
                }
                .run(arguments, marker, asks, entered, start),
            ),
        };
        // After the lane's send, which writes the call's line at once: the
        // log line is not on the call's way to its server.
        decided.log();
        let held = Held::new(running, asked);
        Ok(match resumed {
            Some(resumed) => held.with_keys(resumed.keys()),
            None => held,
        })
    }

    /// The error for a call the ledger could not record (`error`): not
    /// sent.
    fn unrecorded(
        &self,
        approved: &Approved<'_>,
        error: Option<askgate_store::Error>,
    ) -> ErrorData {
        let server = &self.upstream_name(approved.index);
        let why = error.map_or_else(String::new, |e| format!(": {e}"));
        ErrorData::internal_error(
            format!(
                "the ledger failed to record the call to {} on {server}{why}; the request was not sent",
                approved.tool
            ),
            None,
        )
    }

    /// A new ledger call of `tool` on upstream `index` by `principal`, in
    /// the client's `request` when a sealed state names it, and its marker.
    pub(crate) fn new_call(
        &self,
        index: usize,
        tool: &str,
        arguments: &JsonObject,
        principal: &str,
        request: Option<String>,
    ) -> Result<(NewCall, String), ErrorData> {
        let at = self.now();
        let (id, marker) = crate::ids::call(at)?;
        let call = NewCall {
            id,
            owner: self.inner.settings.owner.clone(),
            server: self.upstream_name(index),
            tool: tool.to_owned(),
            arguments_digest: Some(self.inner.settings.ledger.digest(arguments)),
            principal: Some(principal.to_owned()),
            request,
            at,
        };
        Ok((call, marker))
    }

    /// Follow `held` in `round`: its result, or the round's input requests
    /// with the call held for the retry.
    pub(crate) async fn follow(
        &self,
        held: Held,
        mut round: Round,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match held.follow(&mut round, &cx.peer).await {
            Followed::Done(response) => response,
            Followed::Waiting(held) => {
                let resumable = held.resumable().and_then(|r| serde_json::to_value(r).ok());
                let handle = self.inner.held.hold(held, &super::principal_of(cx))?;
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
    pub(crate) fn resumable(round: &Round, tool: &str) -> Result<Resumable, ErrorData> {
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

/// The tool result of a call that was not sent: `text` says why, for the
/// model.
fn not_sent(text: String) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(text)]).into()
}
