//! An approved call sent upstream: recorded in the ledger with its
//! decision — durable before the request leaves when it must be — then
//! followed across the client's rounds until its answer.

use askgate_mcp::{Decided, Round};
use askgate_store::NewCall;
use jiff::Timestamp;
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, JsonObject};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value as Json;

use super::Gateway;
use super::upstream_call::UpstreamCall;
use crate::holds::{HELD, RESUME};
use crate::record::{CANCELLED, End, Ended, Ending};
use crate::relay::{Followed, Held, Resumable};

/// The write that records a call as sent, run to its end even when the
/// call is cancelled meanwhile.
type Recording =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), askgate_store::Error>> + Send>>;

/// A call approved to go upstream, as [`Gateway::forward`] takes it.
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
    /// Whether its record is durable before it is sent.
    pub(crate) durable: bool,
}

impl Gateway {
    /// Forward an approved call to its upstream, recorded in the ledger
    /// with its decision's audit entry — durable before the request leaves
    /// when `durable`, else written when the call ends: the call, to follow
    /// (see [`Held::follow`]). The answer never waits for the end's record.
    /// `None` when the client cancelled the call before it was sent: it is
    /// not sent (and its ledger row, if written, says so).
    pub(crate) async fn forward(
        &self,
        approved: Approved<'_>,
        resumed: Option<&Resumable>,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Option<Held>, ErrorData> {
        let (index, tool) = (approved.index, approved.tool);
        let upstream = &self.inner.upstreams[index];
        let start = resumed.map(Resumable::needed).transpose().map_err(|why| {
            ErrorData::invalid_params(
                format!("the retry's state cannot resume the call to {tool}: {why}"),
                None,
            )
        })?;
        let (call, marker) = self.new_call(index, tool, &approved.arguments)?;
        let id = call.id.clone();
        let Some(end) = self.record(&approved, call, &marker, cx).await? else {
            return Ok(None);
        };
        approved.decided.log();
        let (asks, asked) = tokio::sync::mpsc::unbounded_channel();
        let entered = upstream
            .inflight
            .enter(&id, approved.principal, asks.clone());
        if resumed.is_some() {
            tracing::info!(call = %id, server = %upstream.name, tool, "resuming a call held before a restart: sending its server's round again with the retry's answers");
        }
        let settings = &self.inner.settings;
        let ending = Ending::new(
            id,
            upstream.name.clone(),
            settings.metrics.clone(),
            settings.background.clone(),
            end,
        );
        let call = UpstreamCall {
            gateway: self.clone(),
            index,
            tool: tool.to_owned(),
            ending,
        };
        let running = call.run(approved.arguments, marker, asks, entered, start);
        let held = Held::new(running, asked);
        Ok(Some(match resumed {
            Some(resumed) => held.with_keys(resumed.keys()),
            None => held,
        }))
    }

    /// How `call` of `approved` reaches the ledger: recorded as sent now,
    /// durably, when it must be (then its end is queued), else recorded
    /// with its end. `None` when the client cancelled it meanwhile: it is
    /// not sent.
    async fn record(
        &self,
        approved: &Approved<'_>,
        call: NewCall,
        marker: &str,
        cx: &RequestContext<RoleServer>,
    ) -> Result<Option<End>, ErrorData> {
        let store = self.inner.settings.rounds.store();
        let background = &self.inner.settings.background;
        let entry = approved.decided.entry.clone();
        if !approved.durable {
            // Bounded: a store that falls behind slows reads down rather
            // than letting their records pile up in memory.
            background.room().await;
            let end = End::unrecorded(store, background, entry, call, marker.to_owned());
            return Ok(Some(end));
        }
        let (tool, server) = (approved.tool, &self.inner.upstreams[approved.index].name);
        let id = call.id.clone();
        let mut recording: Recording = {
            let (store, marker) = (store.clone(), marker.to_owned());
            Box::pin(async move {
                store
                    .record_sent_call(&entry, &call, &marker, call.at)
                    .await
                    .map(|_| ())
            })
        };
        let recorded = tokio::select! {
            recorded = &mut recording => recorded,
            // Cancelled while its record is written (a stalled store): it
            // is not sent, and its record, once written, says so.
            () = cx.ct.cancelled() => {
                self.not_sent(recording, &id, tool, server);
                return Ok(None);
            }
        };
        recorded.map_err(|e| {
            ErrorData::internal_error(
                format!(
                    "the ledger failed to record the call to {tool} on {server}: {e}; the request was not sent"
                ),
                None,
            )
        })?;
        if cx.ct.is_cancelled() {
            self.not_sent(Box::pin(async { Ok(()) }), &id, tool, server);
            return Ok(None);
        }
        Ok(Some(End::Queue(store.clone())))
    }

    /// A new ledger call of `tool` on upstream `index`, and its marker.
    pub(crate) fn new_call(
        &self,
        index: usize,
        tool: &str,
        arguments: &JsonObject,
    ) -> Result<(NewCall, String), ErrorData> {
        let digest =
            askgate_core::arguments_digest(b"askgate ledger", &Json::Object(arguments.clone()));
        let call = NewCall {
            id: crate::ids::random("call")?,
            owner: self.inner.settings.owner.clone(),
            server: self.inner.upstreams[index].name.clone(),
            tool: tool.to_owned(),
            arguments_digest: Some(digest),
            at: Timestamp::now(),
        };
        Ok((call, crate::ids::random("m")?))
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
            let summary = Ended::NotSent(CANCELLED.to_owned()).summary();
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
