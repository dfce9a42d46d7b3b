//! The gateway over Streamable HTTP: each request is authenticated (a
//! principal's bearer token, or — with no principals configured — the
//! loopback user), each session is bound to the principal that opened it,
//! and Host/Origin are checked against DNS rebinding (rmcp's checks:
//! loopback names only unless configured). Client tokens stop here: nothing
//! of the client's request is passed upstream.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use askgate_mcp::Principal;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};

use super::config;
use super::proxy::Gateway;
use crate::error::ServeError;

/// Who may call, and which session belongs to whom.
#[derive(Clone)]
struct Gate {
    /// SHA-256 of each token -> the principal's name.
    tokens: Arc<Vec<([u8; 32], String)>>,
    /// Session id -> the principal that opened it.
    sessions: Arc<Mutex<HashMap<String, String>>>,
}

impl Gate {
    fn new(principals: &[config::Principal]) -> Gate {
        Gate {
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

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
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
async fn authenticate(State(gate): State<Gate>, mut request: Request, next: Next) -> Response {
    let principal = if gate.tokens.is_empty() {
        "local".to_owned()
    } else {
        let token = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match token.and_then(|t| gate.principal(t.trim())) {
            Some(name) => name,
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
        && *owner != principal
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
    let response = next.run(request).await;
    if let Some(opened) = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
    {
        gate.sessions()
            .entry(opened.to_owned())
            .or_insert(principal);
    }
    response
}

/// Serve `gateway` on `addr` until the process is stopped.
///
/// # Errors
/// When the address cannot be bound.
pub(crate) async fn serve(
    gateway: Gateway,
    addr: SocketAddr,
    principals: &[config::Principal],
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let mut http = StreamableHttpServerConfig::default();
    let sessions = http.cancellation_token.clone();
    if !addr.ip().is_loopback() {
        // Reached by name or address from elsewhere: allow exactly this one.
        let mut hosts = http.allowed_hosts.clone();
        hosts.push(addr.ip().to_string());
        http = http.with_allowed_hosts(hosts);
    }
    let scraped = gateway.clone();
    let service = StreamableHttpService::new(
        // Each session its own: whose asks go where, whose intake is due.
        move || Ok(gateway.for_session()),
        Arc::new(LocalSessionManager::default()),
        http,
    );
    let gate = Gate::new(principals);
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .route(
            "/metrics",
            axum::routing::get(move || {
                let gateway = scraped.clone();
                async move { super::metrics::exposition(gateway.metrics(), gateway.store()).await }
            }),
        )
        .layer(axum::middleware::from_fn_with_state(gate, authenticate));
    let listen = |source| ServeError::Listen { addr, source };
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(listen)?;
    let bound = listener.local_addr().map_err(listen)?;
    eprintln!("askgate gateway: MCP over Streamable HTTP at http://{bound}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            stop.await;
            // Every session's streams end, so the server can.
            sessions.cancel();
        })
        .await
        .map_err(ServeError::Http)
}
