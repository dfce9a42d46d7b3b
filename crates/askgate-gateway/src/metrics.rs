//! The gateway's Prometheus metrics, served at `/metrics` on the HTTP
//! listener: calls and decisions by kind, upstream latency, pending asks.
//! Labels are server names, tool-free outcomes and decision methods —
//! never arguments.

use std::sync::Arc;
use std::time::Duration;

use askgate_store::Store;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

/// The metrics, shared by every request.
#[derive(Clone)]
pub(crate) struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    decisions: Family<DecisionLabels, Counter>,
    latency: Family<ServerLabels, Histogram>,
    pending: Gauge,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("askgate");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "upstream_calls",
            "Upstream tool calls, by server and outcome (answered, task, failed, not_sent)",
            calls.clone(),
        );
        let decisions = Family::<DecisionLabels, Counter>::default();
        registry.register(
            "decisions",
            "Tool call decisions, by method (elicited, caller_confirmed, auto_approved, not_required, blocked)",
            decisions.clone(),
        );
        let latency = Family::<ServerLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.0, 16))
        });
        registry.register(
            "upstream_latency_seconds",
            "Time from sending a tool call upstream to its answer",
            latency.clone(),
        );
        let pending = Gauge::default();
        registry.register("pending_asks", "Asks waiting for a person", pending.clone());
        Metrics {
            inner: Arc::new(Inner {
                registry,
                calls,
                decisions,
                latency,
                pending,
            }),
        }
    }
}

impl Metrics {
    /// An upstream call ended.
    pub(crate) fn call(&self, server: &str, outcome: &str, took: Duration) {
        self.inner
            .calls
            .get_or_create(&CallLabels {
                server: server.to_owned(),
                outcome: outcome.to_owned(),
            })
            .inc();
        if outcome == "answered" {
            self.inner
                .latency
                .get_or_create(&ServerLabels {
                    server: server.to_owned(),
                })
                .observe(took.as_secs_f64());
        }
    }

    /// A call was decided.
    pub(crate) fn decision(&self, method: &str) {
        self.inner
            .decisions
            .get_or_create(&DecisionLabels {
                method: method.to_owned(),
            })
            .inc();
    }

    /// The text exposition, with the pending asks counted now.
    pub(crate) async fn render(&self, store: &Store) -> String {
        if let Ok(count) = store.pending_count(jiff::Timestamp::now()).await {
            self.inner.pending.set(count);
        }
        let mut text = String::new();
        if encode(&mut text, &self.inner.registry).is_err() {
            text.clear();
        }
        text
    }
}

/// The `/metrics` response: the text exposition of `metrics`, with the
/// asks pending in `store`.
pub(crate) async fn exposition(
    metrics: &Metrics,
    store: &askgate_store::Store,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics.render(store).await,
    )
        .into_response()
}

/// `GET /metrics` beside the inbox's pages, for a gateway on stdio (whose
/// only HTTP listener the inbox is): for the operator's token, sent as
/// `Authorization: Bearer <token>`; anyone else gets 401.
pub(crate) fn beside_inbox(
    metrics: Metrics,
    store: askgate_store::Store,
    inbox: askgate_inbox::Inbox,
) -> axum::Router {
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::response::IntoResponse;
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(move |headers: HeaderMap| {
            let (metrics, store, inbox) = (metrics.clone(), store.clone(), inbox.clone());
            async move {
                if !inbox.operator_bearer(&headers) {
                    return (
                        StatusCode::UNAUTHORIZED,
                        [(header::WWW_AUTHENTICATE, "Bearer")],
                        "the inbox's operator token, as a bearer token, is needed for /metrics\n",
                    )
                        .into_response();
                }
                exposition(&metrics, &store).await
            }
        }),
    )
}
