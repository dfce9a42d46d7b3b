//! Prompts and resources read through the gateway: `prompts/get` and
//! `resources/read` sent to their upstream, with what its server asks on
//! the way relayed to the person like a tool's asks (see the `relay`
//! module) — a classic `elicitation/create` of a 2025-11-25 server, or the
//! input requests of a 2026-07-28 server's `InputRequiredResult`, answered
//! and sent again with `inputResponses` and `requestState` until the
//! server completes.
//!
//! The person is asked the way the downstream client's revision allows:
//! requests it waits on (2025-06-18, 2025-11-25), or the input requests of
//! its own `InputRequiredResult`, the upstream request held until its retry
//! (2026-07-28). A client older than 2025-06-18 gets what the server gives
//! without asking, or an error saying the server needs input it cannot
//! give. Reading is not gated: nothing here is audited or ledgered.

use std::time::Duration;

use askgate_mcp::{Principal, Request, RoundError, Rounds, Unanswered};
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, GetPromptRequestParams, GetPromptResponse, InputRequiredResult,
    ReadResourceRequestParams, ReadResourceResponse,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer};
use serde_json::Value as Json;

use super::holds::{HELD, Holds, RESUME};
use super::ids::random;
use super::relay::rounds::{self, Limit, Rounded, Sending, Sent};
use super::relay::{self, Asks, Entered, Followed, Held, Resumable};
use super::upstream::Upstream;

/// The upstream requests of prompts and resources waiting on a
/// 2026-07-28 client's retry.
#[derive(Debug)]
pub(crate) struct Reads {
    prompts: Holds<GetPromptResponse>,
    resources: Holds<ReadResourceResponse>,
}

impl Reads {
    /// Nothing waiting yet; each request held for at most `ttl`, and at
    /// most `most` of each kind at once.
    pub(crate) fn new(ttl: Duration, most: crate::holds::Most) -> Reads {
        Reads {
            prompts: Holds::new(ttl, most),
            resources: Holds::new(ttl, most),
        }
    }

    /// Get prompt `name` of `upstream` for the client's `params` (named
    /// in the gateway's namespace), asking the person what the server
    /// asks on the way.
    ///
    /// # Errors
    /// A refused retry (see [`Rounds::begin`]), input the server asked
    /// for and did not get, a server that kept asking, the upstream's own
    /// failure — each naming the upstream.
    pub(crate) async fn prompt(
        &self,
        upstream: &Upstream,
        name: &str,
        params: &GetPromptRequestParams,
        rounds: &Rounds,
        cx: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let mut forwarded = GetPromptRequestParams::new(name);
        forwarded.arguments = params.arguments.clone();
        let request = Request::prompt(params);
        relay(&self.prompts, upstream, rounds, request, forwarded, cx).await
    }

    /// Read resource `params.uri` of `upstream`, asking the person what
    /// the server asks on the way.
    ///
    /// # Errors
    /// As [`Reads::prompt`].
    pub(crate) async fn resource(
        &self,
        upstream: &Upstream,
        params: &ReadResourceRequestParams,
        rounds: &Rounds,
        cx: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let forwarded = ReadResourceRequestParams::new(params.uri.clone());
        let request = Request::resource(params);
        relay(&self.resources, upstream, rounds, request, forwarded, cx).await
    }
}

/// Send `forwarded` to `upstream` for the client behind `cx` (whose own
/// request is `request`), relaying what the server asks: its result, or
/// the input requests the client answers on its retry, the upstream
/// request held in `holds` until then.
async fn relay<Q: Rounded>(
    holds: &Holds<Q::Response>,
    upstream: &Upstream,
    rounds: &Rounds,
    request: Request<'_>,
    forwarded: Q,
    cx: &RequestContext<RoleServer>,
) -> Result<Q::Response, ErrorData> {
    let mut round = match rounds.begin(cx, request).await {
        Ok(round) => round,
        Err(RoundError::Unanswered(Unanswered::OldRevision(revision))) => {
            return unasked(upstream, forwarded, &revision).await;
        }
        Err(error) => return Err(error.into()),
    };
    let held = match round.carried(HELD) {
        Some(Json::String(handle)) => match holds.take(handle) {
            Some(held) => held,
            // No longer held (a restart): the server's round, when it
            // asked in one, is sent again with this retry's answers.
            None => {
                let resumable = round
                    .carried(RESUME)
                    .and_then(|r| serde_json::from_value::<Resumable>(r.clone()).ok())
                    .ok_or_else(|| gone(&forwarded))?;
                let needed = resumable
                    .needed()
                    .map_err(|why| ErrorData::invalid_params(why, None))?;
                start(upstream, forwarded, cx, Some(needed))?.with_keys(resumable.keys())
            }
        },
        _ => {
            let mut forwarded = forwarded;
            // Answers the client gave unasked go to the server, as they
            // would from a client of its own.
            if let Some(given) = round.unsealed_responses() {
                forwarded.answered(given.clone(), None);
            }
            start(upstream, forwarded, cx, None)?
        }
    };
    match held.follow(&mut round, &cx.peer).await {
        Followed::Done(response) => response,
        Followed::Waiting(held) => {
            let resumable = held.resumable().and_then(|r| serde_json::to_value(r).ok());
            let handle = holds.hold(held, &crate::proxy::principal_of(cx))?;
            round.carry(HELD, Json::String(handle));
            // Null: an earlier round's, if any, no longer applies.
            round.carry(RESUME, resumable.unwrap_or(Json::Null));
            Ok(round.input_required()?.into())
        }
    }
}

/// Send `forwarded` to `upstream` — first with the answers to `needed`,
/// a round of its server's carried over a restart — noted in flight for
/// the principal behind `cx` so that the server's classic asks reach them:
/// the request, to follow.
fn start<Q: Rounded>(
    upstream: &Upstream,
    forwarded: Q,
    cx: &RequestContext<RoleServer>,
    needed: Option<InputRequiredResult>,
) -> Result<Held<Q::Response>, ErrorData> {
    let principal = Principal::of(cx).map_or_else(|| "anonymous".to_owned(), |p| p.0);
    let (asks, asked) = tokio::sync::mpsc::unbounded_channel();
    let entered = upstream
        .inflight
        .enter(&random("read")?, &principal, asks.clone());
    let peer = upstream.service.peer().clone();
    let server = upstream.name.clone();
    let declared = upstream.declaring(cx.client_capabilities().as_ref(), false);
    let upstream_request = Upstreamed {
        gone: upstream.has_gone(),
        peer,
        server,
        declared,
        timeout: upstream.call_timeout,
    };
    Ok(Held::new(
        settle(upstream_request, forwarded, asks, entered, needed),
        asked,
    ))
}

/// Where a request goes upstream, and what it declares of its client.
struct Upstreamed {
    /// Whether its connection had closed (see [`Upstream::has_gone`]).
    gone: bool,
    peer: Peer<RoleClient>,
    server: String,
    declared: Option<ClientCapabilities>,
    /// Its upstream's `call_timeout`.
    timeout: Option<std::time::Duration>,
}

/// Send `params` until the server completes (see [`rounds`]); `entered`
/// ends when it does.
async fn settle<Q: Rounded>(
    to: Upstreamed,
    params: Q,
    asks: Asks,
    entered: Entered,
    carried: Option<InputRequiredResult>,
) -> relay::Response<Q::Response> {
    let what = params.what();
    let Upstreamed {
        gone,
        peer,
        server,
        declared,
        timeout,
    } = to;
    let sending = Sending {
        progress: None,
        declared,
        limit: timeout.map(|timeout| Limit {
            timeout,
            entered: &entered,
        }),
        legacy_task: None,
    };
    let sent = if gone {
        Sent::Unreachable
    } else {
        rounds::until_complete(&peer, params, &asks, carried, sending, |_| Ok(())).await
    };
    match sent {
        Sent::Answered(response) => Ok(Q::complete(response)),
        Sent::Failed(error) => Err(crate::proxy::passed_on(&server, &what, error)),
        Sent::NotGiven(why) => Err(ErrorData::invalid_request(
            format!("{server} asked for input to {what}, and askgate could not get it: {why}"),
            None,
        )),
        // Not sent by `until_complete`: only a caller that stops waiting.
        Sent::Cancelled => Err(ErrorData::invalid_request(
            format!("the request to {what} on {server} was cancelled"),
            None,
        )),
        Sent::Unreachable => Err(ErrorData::internal_error(
            format!(
                "{server} could not be asked to {what}: {}",
                crate::upstream::UNREACHABLE
            ),
            None,
        )),
        Sent::KeptAsking => Err(ErrorData::internal_error(
            format!(
                "{server} kept asking for input to {what}, past {} rounds; askgate stopped",
                askgate_mcp::client::MAX_ROUNDS
            ),
            None,
        )),
    }
}

/// For a client whose revision has no way to ask a person: what the
/// server gives without asking.
async fn unasked<Q: Rounded>(
    upstream: &Upstream,
    forwarded: Q,
    revision: &str,
) -> Result<Q::Response, ErrorData> {
    let what = forwarded.what();
    let server = &upstream.name;
    let response = forwarded
        .send(upstream.service.peer(), &Sending::default())
        .await
        .map_err(|e| crate::proxy::passed_on(server, &what, e))?;
    if Q::input_required(&response).is_some() {
        return Err(ErrorData::invalid_request(
            format!(
                "{server} needs a person's input to {what}, and the client's protocol revision {revision} has no way to ask one"
            ),
            None,
        ));
    }
    Ok(Q::complete(response))
}

fn gone<Q: Rounded>(forwarded: &Q) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "the answers are for a request to {} that askgate no longer holds (askgate restarted, or the wait passed its limit); ask again without requestState to start over",
            forwarded.what()
        ),
        None,
    )
}
