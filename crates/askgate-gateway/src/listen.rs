//! The gateway over Streamable HTTP: each request is authenticated (a
//! principal's bearer token, an OAuth access token when `[listen.oauth]`
//! says whose (see the `oauth` module), or — with neither configured — the
//! loopback user), each session is bound to the principal that opened it,
//! and Host and Origin are checked against DNS rebinding and cross-site
//! requests (rmcp's checks: the loopback names and the listening address
//! as hosts; the loopback origins and `[listen] allowed_origins` as
//! origins). Client tokens stop here: nothing of the client's request is
//! passed upstream. `/metrics` is the operator's: it takes the inbox's
//! operator token, not a principal's. `/healthz` and `/readyz` take none
//! (see the `health` module).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use askgate_inbox::People;
use askgate_mcp::Principal;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};

use super::config;
use super::proxy::Gateway;
use crate::error::ServeError;

#[cfg(all(unix, not(askgate_portable)))]
mod carrying;
#[cfg(all(unix, not(askgate_portable)))]
mod express;
mod introspect;
mod oauth;
#[cfg(all(unix, not(askgate_portable)))]
mod screening;
mod sessions;
mod waking;

/// Who may call, and which session belongs to whom.
struct Gate {
    /// SHA-256 of each token -> the principal's name.
    tokens: Arc<Vec<([u8; 32], String)>>,
    /// Session id -> whose it is (forgotten as the session ends: see
    /// [`sessions::Sessions`]).
    sessions: sessions::Owners,
    /// OAuth access tokens, when `[listen.oauth]` says whose.
    oauth: Option<Arc<oauth::ResourceServer>>,
}

impl Gate {
    fn new(principals: &[config::Principal], oauth: Option<&config::OAuth>) -> Gate {
        Gate {
            oauth: oauth.cloned().map(oauth::ResourceServer::new),
            tokens: Arc::new(
                principals
                    .iter()
                    .map(|p| (digest(&p.token), p.name.clone()))
                    .collect(),
            ),
            sessions: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The principal a bearer token belongs to. Digests are compared, all
    /// of them, so the time taken says nothing about a near miss.
    fn principal(&self, token: &str) -> Option<String> {
        let given = digest(token);
        let mut found = None;
        for (known, name) in self.tokens.iter() {
            let same = known
                .iter()
                .zip(given.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
            if same {
                found = Some(name.clone());
            }
        }
        found
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, sessions::Owner>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let mut response = (status, message.to_owned()).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"askgate\""),
        );
    }
    response
}

/// Authenticate, bind sessions to principals, mark the request's principal.
async fn authenticate<F: Future<Output = Response>>(
    gate: &Gate,
    mut request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response {
    let principal = if gate.tokens.is_empty() && gate.oauth.is_none() {
        "local".to_owned()
    } else {
        let token = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        match token.and_then(|t| gate.principal(t)) {
            Some(name) => name,
            None if gate.oauth.is_some() => match (&gate.oauth, token) {
                (Some(server), Some(token)) => match server.check(token).await {
                    oauth::Checked::Principal(name) => name,
                    refused => {
                        match &refused {
                            oauth::Checked::Invalid(why) => {
                                tracing::warn!(%why, "refused an access token");
                            }
                            _ => tracing::warn!("refused an access token without a needed scope"),
                        }
                        return server.refuse(Some(&refused));
                    }
                },
                (Some(server), None) => return server.refuse(None),
                (None, _) => return refuse(StatusCode::UNAUTHORIZED, "askgate: no token"),
            },
            None => {
                tracing::warn!("refused a request without a known token");
                return refuse(
                    StatusCode::UNAUTHORIZED,
                    "askgate: send Authorization: Bearer <your token> (a principal's token from the configuration)",
                );
            }
        }
    };
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(session) = &session
        && let Some(owner) = gate.sessions().get(session)
        && owner.principal != principal
    {
        tracing::warn!(principal = %principal, "refused a session opened by another principal");
        return refuse(
            StatusCode::NOT_FOUND,
            "askgate: no such session for this principal",
        );
    }
    request
        .extensions_mut()
        .insert(Principal(principal.clone()));
    let closing = request.method() == axum::http::Method::DELETE;
    let mut response = next(request).await;
    if closing && response.status() == StatusCode::ACCEPTED {
        // The session is closed, not about to be: rmcp says 202, which
        // the Python SDK logs as a failed termination at every close.
        *response.status_mut() = StatusCode::OK;
    }
    if let Some(opened) = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
    {
        gate.sessions()
            .entry(opened.to_owned())
            .or_insert_with(|| sessions::Owner::of(principal));
    }
    response
}

/// The Protected Resource Metadata of `server`, at each of its paths.
fn metadata_routes(server: Arc<oauth::ResourceServer>) -> axum::Router {
    let mut routes = axum::Router::new();
    for path in server.metadata_paths() {
        let server = Arc::clone(&server);
        routes = routes.route(
            &path,
            axum::routing::get(move || async move { axum::Json(server.metadata()) }),
        );
    }
    routes
}

/// Whether `headers` carry an operator's token of `people` as
/// `Authorization: Bearer <token>` (what reads `/metrics`; a principal's
/// token is not one).
fn is_operator(people: &People, headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|token| people.find(token.trim()))
        .is_some_and(|person| person.operator)
}

/// Serve `gateway` on `listen` until the process is stopped; `operator`
/// holds the inbox's operator, whose token reads `/metrics`.
///
/// # Errors
/// When the address cannot be bound.
pub(crate) async fn serve(
    gateway: Gateway,
    listen: &config::Listen,
    config: &config::Config,
    operator: Arc<People>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let addr = listen.addr;
    let mut http = StreamableHttpServerConfig::default()
        .with_allowed_origins(listen.origins())
        .enforce_origin_validation();
    let streams = http.cancellation_token.clone();
    if !addr.ip().is_loopback() {
        // Reached by name or address from elsewhere: allow exactly this one.
        let mut hosts = http.allowed_hosts.clone();
        hosts.push(addr.ip().to_string());
        http = http.with_allowed_hosts(hosts);
    }
    let scraped = gateway.clone();
    let inbox = config.inbox.clone();
    let gate = Gate::new(&config.principals, listen.oauth.as_ref());
    let resource_metadata = gate.oauth.clone();
    let sessions = Arc::new(sessions::Sessions::new(
        Arc::clone(&gate.sessions),
        config.limits.sessions,
        gateway.downstream(),
        gateway.metrics().sessions(),
    ));
    // Where each session's handshake is kept while it rests.
    http.session_store = Some(sessions.handshakes());
    tokio::spawn(Arc::clone(&sessions).close_idle(streams.clone().cancelled_owned()));
    #[cfg(all(unix, not(askgate_portable)))]
    let screen = screening::Screen {
        routes: gateway.task_routes(),
        lane: express::HttpLane::new(
            gateway.clone(),
            Arc::clone(&gate.sessions),
            Arc::clone(&sessions),
        ),
    };
    let downstream = gateway.downstream();
    let service = StreamableHttpService::new(
        // Each session its own: whose asks go where, whose intake is due.
        move || {
            let session = gateway.for_session();
            // The screen puts 2025-11-25's task fields back in its answers.
            #[cfg(all(unix, not(askgate_portable)))]
            session.writes_legacy_tasks();
            Ok(session)
        },
        sessions,
        http,
    );
    // An upstream's ask outside any call wakes a resting session to be
    // asked on its GET stream.
    downstream.wake_with(Some(waking::waker(
        service.clone(),
        Arc::clone(&gate.sessions),
    )));
    let mcp = Endpoint {
        gate,
        #[cfg(all(unix, not(askgate_portable)))]
        screen,
        rmcp: service,
    };
    let app = axum::Router::new()
        .nest_service("/mcp", mcp.route())
        // Not behind the principals' gate: the operator's, and the probes'.
        .merge(super::metrics::routes(
            scraped.metrics(),
            scraped.store(),
            move |headers| {
                is_operator(&operator, headers)
                    || super::metrics::bearer(headers).is_some_and(|t| inbox.is_metrics_token(t))
            },
        ))
        .merge(super::health::routes(&scraped))
        // Where a client learns how to get a token: open to all.
        .merge(resource_metadata.map_or_else(axum::Router::new, metadata_routes));
    let listen = |source| ServeError::Listen { addr, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(listen)?;
    let bound = listener.local_addr().map_err(listen)?;
    askgate_inbox::say::say(&format!(
        "askgate gateway: MCP over Streamable HTTP at http://{bound}/mcp"
    ));
    if !bound.ip().is_loopback() {
        let every = if bound.ip().is_unspecified() {
            " on every network interface"
        } else {
            ""
        };
        tracing::warn!(
            "--listen {bound} serves plain HTTP{every}: bearer tokens and tool arguments cross the \
             network unencrypted; put TLS in front of it (a reverse proxy) or listen on a loopback address"
        );
    }
    // Within the limits of an open port: headers in time, bodies that do
    // not stall, a cap on connections (see askgate_inbox::serving).
    let limits = config.limits.serving;
    askgate_inbox::serving::serve(listener, app, "the gateway", limits, async move {
        stop.await;
        // Every session's streams end, so the server can.
        streams.cancel();
    })
    .await;
    // The waker holds the service, which holds the gateway: let go.
    downstream.wake_with(None);
    Ok(())
}

/// The MCP endpoint: the principals' gate ([`authenticate`]), then the
/// screen (unix builds: see [`screening`]; no body is read before the
/// caller is known), then rmcp's Streamable HTTP service.
///
/// One handler runs the three steps in turn, each calling the next, where
/// axum's middleware layers would box each step as a service of its own:
/// axum clones a route's service for every request, each layer clones the
/// service inside it again, and rmcp's own clone copies its config (the
/// allowed hosts and origins, each a `String`, and a cancellation token).
/// That was some twenty allocations and seven copies of rmcp's config a
/// request, a sixth of a read call's instructions through `--listen`
/// (callgrind, docs/benchmarks.md); here a request clones one `Arc`.
struct Endpoint {
    gate: Gate,
    #[cfg(all(unix, not(askgate_portable)))]
    screen: screening::Screen,
    rmcp: StreamableHttpService<Gateway, sessions::Sessions>,
}

impl Endpoint {
    /// The endpoint as the route's one handler.
    fn route(self) -> axum::routing::MethodRouter {
        let endpoint = Arc::new(self);
        axum::routing::any(move |request: Request| {
            let endpoint = Arc::clone(&endpoint);
            async move { endpoint.serve(request).await }
        })
    }

    async fn serve(&self, request: Request) -> Response {
        authenticate(&self.gate, request, |request| self.screened(request)).await
    }

    #[cfg(all(unix, not(askgate_portable)))]
    async fn screened(&self, request: Request) -> Response {
        screening::screened(&self.screen, request, |request| self.rmcp(request)).await
    }

    #[cfg(any(not(unix), askgate_portable))]
    async fn screened(&self, request: Request) -> Response {
        self.rmcp(request).await
    }

    /// rmcp's service, its future boxed: it is large, and a read the
    /// screen answers never makes it (unboxed, every request's future
    /// would be as large, and copied whole as axum boxes it).
    async fn rmcp(&self, request: Request) -> Response {
        Box::pin(self.rmcp.handle(request)).await.into_response()
    }
}
