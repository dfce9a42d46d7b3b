//! The gateway's server side: every upstream's tools under their names
//! downstream (namespaced when there are several upstreams), and every `tools/call` through risk -> confirmation -> audit and
//! ledger -> upstream -> result, the ledger told the end without the
//! answer waiting for it.
//!
//! The parts, in the order a call meets them: [`serve`] (the MCP server
//! handler), [`catalogue`] (names, risks, the listing), [`pipeline`] (the
//! call judged, and when it is recorded — the same for the express lane),
//! [`intake`], [`call`] (the round: the person's decision), [`forward`]
//! (the record, then the upstream) and [`upstream_call`] (the request,
//! its server's asks relayed, its end told once — see [`crate::record`]).
//! [`preview`] is what the person sees of the arguments. Prompts and
//! resources are not gated; what their servers ask on the way is relayed
//! (see [`crate::prompts_resources`]).

mod call;
pub(crate) mod catalogue;
mod forward;
mod intake;
mod legacy_tasks;
pub(crate) mod on_lane;
mod passing;
pub(crate) mod pipeline;
pub(crate) mod preview;
mod retries;
mod serve;
mod tasks;
mod templates;
mod upstream_call;

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};

use askgate_core::Risk;
use askgate_mcp::Rounds;
use jiff::Timestamp;
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::SessionRestoreMarker;
use tokio::sync::RwLock;

use crate::background::Background;
use crate::config::{Intake, Replay};
use crate::downstream::Downstream;
use crate::express::Lane;
use crate::holds::Holds;
use crate::metrics::Metrics;
use crate::prompts_resources::Reads;
use crate::stopping::{InFlight, Stopping};
use crate::upstream::Upstream;
use crate::upstreams::Upstreams;

pub(crate) use catalogue::{Found, Judge};
pub(crate) use legacy_tasks::relay_task_status;
pub(crate) use passing::passed_on;
pub(crate) use serve::principal_of;

/// How often a gateway says it is alive (see the store's ledger owners).
const BEAT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long after its last beat a process counts as gone: its calls
/// `sent` and never answered may have run.
const LAPSE: std::time::Duration = std::time::Duration::from_secs(20);

/// How long a stop waits for the records still being written.
const SETTLING: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a request that needs an upstream still starting waits for it.
pub(crate) const STARTING_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What the gateway is configured with.
pub(crate) struct Settings {
    /// How to ask and where asks are kept.
    pub(crate) rounds: Rounds,
    /// The tools' risks.
    pub(crate) judge: Box<dyn Judge>,
    /// Who approves which calls (`[[approvals]]`).
    pub(crate) approvals: crate::config::Approvals,
    /// The auto-approve threshold.
    pub(crate) threshold: Option<Risk>,
    /// Whether a session may raise it.
    pub(crate) allow_raise: bool,
    /// This process's owner id in the ledger (one per start).
    pub(crate) owner: String,
    /// The replay policy.
    pub(crate) replay: Replay,
    /// Counts for /metrics.
    pub(crate) metrics: Metrics,
    /// Whether the model is offered the `ask` tool.
    pub(crate) offer_ask_tool: bool,
    /// Intake question sets before configured tools.
    pub(crate) intake: Vec<Intake>,
    /// How long an upstream call waiting on a 2026-07-28 client's retry is
    /// held (as long as a sealed state lives).
    pub(crate) hold_for: std::time::Duration,
    /// How many such calls are held at once.
    pub(crate) most_held: crate::holds::Most,
    /// Whether a `read` call waits for its audit and ledger record to be
    /// durable before it is sent, as calls above `read` always do.
    pub(crate) durable_reads: bool,
    /// Whether calls to an upstream on stdio may take its express lane
    /// (`express_lane` in the config): the client's that need no person,
    /// and those the gateway's handler sends (see [`on_lane`]).
    pub(crate) express_lane: bool,
    /// The store writes the answers do not wait for.
    pub(crate) background: Background,
    /// Between a namespace and a tool or prompt name.
    pub(crate) separator: String,
    /// How long a call that may have run is taken to be retried by the
    /// same call (see the `retries` module).
    pub(crate) retry_window: std::time::Duration,
    /// How the ledger digests a call's arguments.
    pub(crate) ledger: crate::keys::LedgerDigest,
}

/// The gateway, as one client session sees it: what every session shares,
/// and this session's id (see [`Gateway::for_session`]).
#[derive(Clone)]
pub(crate) struct Gateway {
    inner: Arc<Inner>,
    /// This client session: one stdio connection, or one Streamable HTTP
    /// session. Random, so no two runs share one; a Streamable HTTP
    /// session woken from rest takes its own back (see
    /// [`Gateway::wakes`]).
    session: Arc<std::sync::RwLock<Arc<str>>>,
    /// Whether this session's handshake was answered: a second
    /// `initialize` is refused.
    handshaken: Arc<std::sync::atomic::AtomicBool>,
    /// Whether this session's frames are written with 2025-11-25's task
    /// fields put back (see [`crate::legacy_tasks`]): only then does the
    /// gateway say it has them.
    legacy_tasks: Arc<std::sync::atomic::AtomicBool>,
    /// Where this session's client peer is kept once its handshake is
    /// answered, when something outside rmcp's loop needs it (stdio's tap,
    /// which hands calls to the handler): none elsewhere, so a resting
    /// HTTP session holds no peer.
    client: Option<ClientSlot>,
}

/// Where a session's client peer is kept, once known (see
/// [`Gateway::keeping_client`]).
pub(crate) type ClientSlot =
    Arc<std::sync::OnceLock<rmcp::service::Peer<rmcp::service::RoleServer>>>;

struct Inner {
    settings: Settings,
    upstreams: Arc<Upstreams>,
    downstream: Downstream,
    /// Namespaced tool name -> its upstream and tool. Never held across an
    /// await: the express lane reads it without one.
    tools: std::sync::RwLock<HashMap<String, Found>>,
    /// Prompt name downstream -> its upstream, by index, and its name
    /// there.
    prompts: std::sync::RwLock<HashMap<String, (usize, String)>>,
    /// Resource URI -> upstream.
    resources: RwLock<HashMap<String, usize>>,
    /// Resource templates (`uriTemplate`) and their upstreams, in order.
    templates: RwLock<Vec<(String, usize)>>,
    /// Upstream calls waiting on a client's retry, by handle.
    held: Holds,
    /// Prompts and resources read through the gateway, and their
    /// upstream requests waiting on a client's retry.
    reads: Reads,
    /// Whether the gateway is stopping, and its calls in flight.
    stopping: Stopping,
}

impl Gateway {
    /// A gateway over `upstreams` (connected, or on their way), relaying
    /// their asks to `downstream`.
    pub(crate) fn new(
        settings: Settings,
        upstreams: Arc<Upstreams>,
        downstream: Downstream,
    ) -> Gateway {
        let (held, reads) = (
            Holds::new(settings.hold_for, settings.most_held),
            Reads::new(settings.hold_for, settings.most_held),
        );
        Gateway {
            session: Arc::new(std::sync::RwLock::new(crate::ids::session())),
            handshaken: Arc::default(),
            legacy_tasks: Arc::default(),
            client: None,
            inner: Arc::new(Inner {
                settings,
                upstreams,
                downstream,
                tools: std::sync::RwLock::new(HashMap::new()),
                prompts: std::sync::RwLock::new(HashMap::new()),
                resources: RwLock::new(HashMap::new()),
                templates: RwLock::new(Vec::new()),
                held,
                reads,
                stopping: Stopping::default(),
            }),
        }
    }

    /// The clients connected, as the sessions of `--listen` keep them in
    /// step (see `listen::sessions`).
    pub(crate) fn downstream(&self) -> Downstream {
        self.inner.downstream.clone()
    }

    /// The gateway's metrics.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.settings.metrics
    }

    /// The current time, on the clock the rounds read (the ledger and the
    /// audit are dated on one clock).
    pub(crate) fn now(&self) -> Timestamp {
        self.inner.settings.rounds.now()
    }

    /// The clock the gateway reads.
    pub(crate) fn clock(&self) -> &Arc<dyn askgate_mcp::Clock> {
        self.inner.settings.rounds.clock()
    }

    /// The store: asks, answers, the ledger, the audit.
    pub(crate) fn store(&self) -> &askgate_store::Store {
        self.inner.settings.rounds.store()
    }

    /// The gateway for a new client session (a stdio connection, a
    /// Streamable HTTP session): the same upstreams, store and settings,
    /// its own session id.
    pub(crate) fn for_session(&self) -> Gateway {
        Gateway {
            inner: Arc::clone(&self.inner),
            session: Arc::new(std::sync::RwLock::new(crate::ids::session())),
            handshaken: Arc::default(),
            legacy_tasks: Arc::default(),
            client: None,
        }
    }

    /// This session, its client peer kept in `slot` once its handshake is
    /// negotiated, just before rmcp writes the answer: before the client
    /// can say it is initialized.
    pub(crate) fn keeping_client(mut self, slot: ClientSlot) -> Gateway {
        self.client = Some(slot);
        self
    }

    /// Note the client of this session, for `principal`: from now on an
    /// upstream's asks outside any call may go to it, when it is the only
    /// principal connected (see the `downstream` module).
    fn note_client(&self, principal: &str, peer: rmcp::service::Peer<rmcp::service::RoleServer>) {
        self.inner.downstream.note(&self.session(), principal, peer);
    }

    /// This client session's id.
    pub(crate) fn session(&self) -> Arc<str> {
        Arc::clone(&self.session.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether the handshake of `cx` is a Streamable HTTP session's,
    /// replayed by rmcp as the session wakes from rest: the session is
    /// the one it was (its id taken back), and its client was known
    /// already.
    fn wakes(&self, cx: &RequestContext<RoleServer>) -> bool {
        let Some(marker) = cx.extensions.get::<SessionRestoreMarker>() else {
            return false;
        };
        if let Some(session) = self.inner.downstream.linked(&marker.id) {
            *self.session.write().unwrap_or_else(PoisonError::into_inner) = session;
        }
        true
    }

    /// The Streamable HTTP session of `extensions` (a request's or a
    /// notification's), by rmcp's id: none on stdio, or before the
    /// handshake.
    fn http_session(extensions: &rmcp::model::Extensions) -> Option<&str> {
        extensions
            .get::<http::request::Parts>()?
            .headers
            .get("mcp-session-id")?
            .to_str()
            .ok()
    }

    /// Whether the client of the call `cx` may be sent something after the
    /// call's answer: the client follows tasks (an upstream may answer
    /// with one, whose status it is told of), the call carries 2025-11-25's
    /// task, or the client takes URL-mode asks (the server says later
    /// when the person is done at the link).
    fn told_later(cx: &RequestContext<RoleServer>) -> bool {
        let capabilities = cx.client_capabilities();
        crate::tasks::follows(capabilities.as_ref())
            || legacy_tasks::task_of(cx).is_some()
            || capabilities
                .as_ref()
                .and_then(|c| c.elicitation.as_ref())
                .is_some_and(|e| e.url.is_some())
    }

    /// The client of `cx` will be sent something outside any request of
    /// it: its Streamable HTTP session never rests (see
    /// [`crate::downstream::Downstream::may_rest`]).
    fn pin(&self, cx: &RequestContext<RoleServer>) {
        if let Some(id) = Self::http_session(&cx.extensions) {
            self.inner.downstream.pin(id);
        }
    }

    /// The configured auto-approve threshold.
    pub(crate) fn threshold(&self) -> Option<Risk> {
        self.inner.settings.threshold
    }

    /// The auto-approve threshold of a request with `headers` (see
    /// [`askgate_mcp::threshold_in`]).
    ///
    /// # Errors
    /// Its threshold header is not a risk level.
    pub(crate) fn threshold_in(
        &self,
        headers: &axum::http::HeaderMap,
    ) -> Result<Option<Risk>, rmcp::ErrorData> {
        let settings = &self.inner.settings;
        askgate_mcp::threshold_in(headers, settings.threshold, settings.allow_raise)
    }

    /// The upstream `index`'s express lane, when it has one.
    pub(crate) fn lane(&self, index: usize) -> Option<&Arc<Lane>> {
        self.inner.upstreams.get(index)?.lane.as_ref()
    }

    /// Upstream `index`, waiting for it while it starts (at most
    /// [`STARTING_WAIT`]).
    ///
    /// # Errors
    /// It has not started within the wait, naming it.
    pub(crate) async fn upstream(&self, index: usize) -> Result<&Upstream, rmcp::ErrorData> {
        self.inner
            .upstreams
            .wait_for(index, STARTING_WAIT)
            .await
            .ok_or_else(|| {
                rmcp::ErrorData::internal_error(
                    format!(
                        "an upstream server has not started within {}s (see the gateway's log); \
                         try again later",
                        STARTING_WAIT.as_secs()
                    ),
                    None,
                )
            })
    }

    /// Upstream `index`, which a listing showed started.
    ///
    /// # Errors
    /// It has not (a bug: only a started upstream's tools are listed).
    pub(crate) fn started(&self, index: usize) -> Result<&Upstream, rmcp::ErrorData> {
        self.inner.upstreams.get(index).ok_or_else(|| {
            rmcp::ErrorData::internal_error("the call's upstream has not started", None)
        })
    }

    /// The upstreams, connected or starting.
    pub(crate) fn upstreams(&self) -> &Upstreams {
        &self.inner.upstreams
    }

    /// Whether upstream calls carry the replay contract's marker.
    pub(crate) fn marks_calls(&self) -> bool {
        self.inner.settings.replay == Replay::AppAuthorized
    }

    /// Leave every call on the express lanes (the gateway stops): each is
    /// ledgered as sent.
    pub(crate) fn abandon_express(&self) {
        for lane in self
            .inner
            .upstreams
            .connected()
            .filter_map(|u| u.lane.as_ref())
        {
            lane.abandon();
        }
    }

    /// Say this process is alive, then report the calls a process whose
    /// beat lapsed (killed) left run-but-unanswered: only those; a live
    /// process's calls over the same store are its own.
    pub(crate) async fn recover(&self) -> Result<(), askgate_store::Error> {
        let store = self.inner.settings.rounds.store();
        store.beat(&self.inner.settings.owner, self.now()).await?;
        let lost = store.recover_lapsed(self.now(), LAPSE).await?;
        for call in lost {
            tracing::warn!(
                call = %call.call.id,
                server = %call.call.server,
                tool = %call.call.tool,
                "sent before the last stop and never answered: it may have run; it is not sent again"
            );
        }
        Ok(())
    }

    /// What every session shares of the gateway's stop.
    pub(crate) fn stopping(&self) -> &Stopping {
        &self.inner.stopping
    }

    /// A call starting, counted while the guard lives; `None` once the
    /// gateway is stopping (the call is refused, and not sent).
    pub(crate) fn enter_call(&self) -> Option<InFlight> {
        self.inner.stopping.enter()
    }

    /// Close every connected upstream (a child: its stdin, then a kill),
    /// each given [`crate::stopping::CLOSING`].
    pub(crate) async fn close_upstreams(&self) {
        // All at once: each closes while the others do.
        for upstream in self.inner.upstreams.connected() {
            upstream.service.cancellation_token().cancel();
        }
        let deadline = tokio::time::Instant::now() + crate::stopping::CLOSING;
        for upstream in self.inner.upstreams.connected() {
            if tokio::time::timeout_at(deadline, upstream.watcher.closed())
                .await
                .is_err()
            {
                tracing::warn!(server = %upstream.name, "the upstream did not close in time");
            }
        }
    }

    /// Beat every [`BEAT`], and report what lapsed processes left, until
    /// dropped (a store failure is logged, and tried again at the next).
    pub(crate) async fn keep_beating(&self) {
        loop {
            tokio::time::sleep(BEAT).await;
            if let Err(error) = self.recover().await {
                tracing::warn!(%error, "could not say this gateway is alive; trying again");
            }
        }
    }

    /// This process stops: it beats no more.
    pub(crate) async fn release(&self) {
        let store = self.inner.settings.rounds.store();
        if let Err(error) = store.release(&self.inner.settings.owner).await {
            tracing::warn!(%error, "could not record this gateway's stop");
        }
    }

    /// Wait for the store writes the answers did not wait for — while the
    /// store is down they are retried, so at most [`SETTLING`]: what is
    /// left then is said, and a call it leaves `sent` is reported as one
    /// that may have run.
    pub(crate) async fn settle_writes(&self) {
        let background = &self.inner.settings.background;
        if tokio::time::timeout(SETTLING, background.idle())
            .await
            .is_err()
        {
            tracing::warn!(
                under_way = background.under_way(),
                "the store did not take every record within {SETTLING:?}; stopping without them (their calls will be reported as ones that may have run)"
            );
        }
    }
}
