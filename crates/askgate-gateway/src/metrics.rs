//! The gateway's Prometheus metrics, served at `/metrics` on its HTTP
//! listeners as OpenMetrics text: the build, calls and decisions by kind,
//! upstream latency, pending asks, how long asks waited for a person,
//! failed webhook posts, cancelled calls, and people's answers to asks an
//! approval rule decides. Labels are the version, rules' names,
//! server names, tool-free outcomes, decision methods and webhook events
//! — never arguments.
//!
//! One rule reads them, whichever listener serves them ([`routes`]): the
//! inbox's operator token, sent as `Authorization: Bearer <token>`.

mod waits;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use askgate_inbox::notify::Event;
use askgate_store::{AskAnswered, AskParked, AskSettled, Store};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::sync::broadcast::error::RecvError;

/// The content type of the exposition: what prometheus-client writes is
/// OpenMetrics text (counters' `_total`, the closing `# EOF`).
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: String,
    /// One of the few outcomes `record::Ended` names: borrowed, so a call's
    /// count allocates no label of it.
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    /// A decision method's name (`Method::as_str`).
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    event: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApprovalLabels {
    rule: String,
    answer: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
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
    cancelled: Family<ServerLabels, Counter>,
    webhook_failures: Family<EventLabels, Counter>,
    approval_answers: Family<ApprovalLabels, Counter>,
    sessions: Family<StateLabels, Gauge>,
    waits: waits::Waits,
    /// Whether the store's news of asks is heard (see [`Metrics::watch`]).
    watching: AtomicBool,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("askgate");
        let build = Family::<BuildLabels, Gauge>::default();
        registry.register(
            "build_info",
            "The askgate build serving these metrics, by version; always 1",
            build.clone(),
        );
        build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_owned(),
            })
            .set(1);
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "upstream_calls",
            "Upstream tool calls, by server and outcome (answered, task, failed, not_sent)",
            calls.clone(),
        );
        let decisions = Family::<DecisionLabels, Counter>::default();
        registry.register(
            "decisions",
            "Tool call decisions, by method (elicited, caller_confirmed, auto_approved, not_required, blocked, waiting)",
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
        let approval_answers = Family::<ApprovalLabels, Counter>::default();
        registry.register(
            "approval_answers",
            "People's answers to asks an [[approvals]] rule decides, counted in this process, by rule and answer (approved, declined)",
            approval_answers.clone(),
        );
        let waits = waits::Waits::new(&mut registry);
        let cancelled = Family::<ServerLabels, Counter>::default();
        registry.register(
            "cancelled_calls",
            "Tool calls their client cancelled (notifications/cancelled, or the client gone) before \
             their answer, by server",
            cancelled.clone(),
        );
        let webhook_failures = Family::<EventLabels, Counter>::default();
        registry.register(
            "webhook_failures",
            "Webhook posts that failed after every try, by event (parked, settled)",
            webhook_failures.clone(),
        );
        let sessions = Family::<StateLabels, Gauge>::default();
        registry.register(
            "http_sessions",
            "Streamable HTTP sessions open, by state: awake (served by a worker of their own) or \
             resting (quiet, kept as their handshake; woken by their next request)",
            sessions.clone(),
        );
        Metrics {
            inner: Arc::new(Inner {
                registry,
                calls,
                decisions,
                latency,
                pending,
                cancelled,
                webhook_failures,
                approval_answers,
                sessions,
                waits,
                watching: AtomicBool::new(false),
            }),
        }
    }
}

impl Metrics {
    /// An upstream call ended.
    pub(crate) fn call(&self, server: &str, outcome: &'static str, took: Duration) {
        self.inner
            .calls
            .get_or_create(&CallLabels {
                server: server.to_owned(),
                outcome,
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

    /// The gauges of the Streamable HTTP sessions awake and at rest (see
    /// `listen::sessions`).
    pub(crate) fn sessions(&self) -> (Gauge, Gauge) {
        let state = |state: &str| {
            self.inner
                .sessions
                .get_or_create(&StateLabels {
                    state: state.to_owned(),
                })
                .clone()
        };
        (state("awake"), state("resting"))
    }

    /// A call was decided.
    pub(crate) fn decision(&self, method: &'static str) {
        self.inner
            .decisions
            .get_or_create(&DecisionLabels { method })
            .inc();
    }

    /// The client cancelled a call to `server` before its answer.
    pub(crate) fn cancelled(&self, server: &str) {
        self.inner
            .cancelled
            .get_or_create(&ServerLabels {
                server: server.to_owned(),
            })
            .inc();
    }

    /// What the webhook's notifier calls as a post fails (see
    /// [`askgate_inbox::notify::Notifier::on_failed_post`]).
    pub(crate) fn webhook_failed(&self) -> impl Fn(Event) + Send + Sync + 'static {
        let failures = self.inner.webhook_failures.clone();
        move |event| {
            failures
                .get_or_create(&EventLabels {
                    event: event.as_str().to_owned(),
                })
                .inc();
        }
    }

    /// A call's decision named the ask `ask` (a person's answer read
    /// back, or the caller's withdrawal): observe its wait, if it is one
    /// this process parked and it has settled. One read of the store,
    /// only for such an ask.
    pub(crate) async fn decided_on(&self, ask: &str, store: &Store) {
        if !self.inner.waits.is_parked_here(ask) {
            return;
        }
        if let Ok(Some(row)) = store.ask(ask).await {
            self.inner.waits.settled(&row);
        }
    }

    /// Hear the store's news of asks parked here and settled anywhere it
    /// tells of, to observe how long each waited (see the `waits`
    /// module); once, however often it is called, until the metrics are
    /// gone. Called where the metrics are served, before any client is.
    pub(crate) fn watch(&self, store: &Store) {
        if self.inner.watching.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut parked = store.parked();
        let mut settled = store.settlements();
        let mut answered = store.answered();
        let (inner, store) = (Arc::downgrade(&self.inner), store.clone());
        tokio::spawn(async move {
            loop {
                // Parked first: an ask's parking is news before its
                // settling is.
                let heard = tokio::select! {
                    biased;
                    news = parked.recv() => news.map(Heard::Parked),
                    news = settled.recv() => news.map(Heard::Settled),
                    news = answered.recv() => news.map(Heard::Answered),
                };
                match heard {
                    Ok(heard) => {
                        if !hear(&inner, &store, heard).await {
                            return;
                        }
                    }
                    Err(RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, "the metrics fell behind the store's news of asks");
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
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

/// What the store told of an ask.
enum Heard {
    Parked(AskParked),
    Settled(AskSettled),
    Answered(AskAnswered),
}

/// Take in `heard`; `false` once the metrics are gone.
async fn hear(inner: &Weak<Inner>, store: &Store, heard: Heard) -> bool {
    let Some(inner) = inner.upgrade() else {
        return false;
    };
    match heard {
        // Parked by another process: its wait is that one's to observe.
        Heard::Parked(AskParked { row: None, .. }) => {}
        Heard::Parked(AskParked { id, row: Some(row) }) => {
            inner.waits.parked(id, row.ask.created_at);
        }
        // Counted by another process: that one counts it.
        Heard::Answered(AskAnswered { row: None, .. }) => {}
        Heard::Answered(AskAnswered {
            accepted,
            row: Some(row),
            ..
        }) => {
            let rule = row
                .ask
                .panel
                .as_ref()
                .and_then(|panel| panel.get("rule"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("?")
                .to_owned();
            let answer = if accepted { "approved" } else { "declined" }.to_owned();
            inner
                .approval_answers
                .get_or_create(&ApprovalLabels { rule, answer })
                .inc();
        }
        Heard::Settled(AskSettled { id, row }) => {
            if !inner.waits.is_parked_here(&id) {
                return true;
            }
            // Settled by another process: its news names the ask only.
            let row = match row {
                Some(row) => row,
                None => match store.ask(&id).await {
                    Ok(Some(row)) => Arc::new(row),
                    _ => return true,
                },
            };
            inner.waits.settled(&row);
        }
    }
    true
}

/// The `/metrics` response: the text exposition of `metrics`, with the
/// asks pending in `store`.
pub(crate) async fn exposition(metrics: &Metrics, store: &Store) -> Response {
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        metrics.render(store).await,
    )
        .into_response()
}

/// `GET /metrics`, for a request `is_operator` says carries the operator's
/// token or the metrics token; any other gets 401 — the one rule of every
/// listener that serves them. Serving them starts hearing of the asks' waits
/// ([`Metrics::watch`]).
pub(crate) fn routes<F>(metrics: &Metrics, store: &Store, is_operator: F) -> axum::Router
where
    F: Fn(&HeaderMap) -> bool + Clone + Send + Sync + 'static,
{
    metrics.watch(store);
    let (metrics, store) = (metrics.clone(), store.clone());
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(move |headers: HeaderMap| {
            let (metrics, store) = (metrics.clone(), store.clone());
            let allowed = is_operator(&headers);
            async move {
                if !allowed {
                    return refused();
                }
                exposition(&metrics, &store).await
            }
        }),
    )
}

/// The bearer token `headers` carry (`Authorization: Bearer <token>`).
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// 401, saying which token reads the metrics.
fn refused() -> Response {
    let mut response = (
        StatusCode::UNAUTHORIZED,
        "askgate: /metrics takes the inbox's operator token as a bearer token \
         (Authorization: Bearer <token>: [inbox] token, the one askgate made beside its key, or \
         a [[people]] operator's), or the [inbox] metrics_token; not a principal's\n",
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"askgate\""),
    );
    response
}

#[cfg(test)]
mod tests {
    use askgate_store::{AskStatus, Count, NewAsk, PersonAnswer, Store};
    use serde_json::json;

    use super::Metrics;

    #[tokio::test]
    async fn each_answer_to_an_approval_rule_counted_here_is_counted_by_rule_and_answer() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let url = format!("sqlite://{}", dir.path().join("askgate.db").display());
        let store = Store::open(&url).await.expect("opens");
        let metrics = Metrics::default();
        metrics.watch(&store);
        let at = jiff::Timestamp::now();
        let ask = NewAsk {
            id: "ask_m1".into(),
            resume_key: "test:ask_m1".into(),
            call_key: None,
            principal: "anonymous".into(),
            request: json!({}),
            server: Some("deployer".into()),
            tool: Some("ship".into()),
            risk: Some("destructive".into()),
            created_at: at,
            expires_at: None,
            panel: Some(json!({"rule": "approvals[1]"})),
        };
        store.park(&ask).await.expect("parks");
        for (person, accepted) in [("ana", true), ("bo", false)] {
            let answer = PersonAnswer {
                person: person.into(),
                accepted,
                reply: json!({}),
                via: "web".into(),
                groups: Vec::new(),
            };
            store
                .answer_as("ask_m1", &answer, at, |_, _| Count::Wait)
                .await
                .expect("counted");
        }
        let wanted = [
            r#"askgate_approval_answers_total{rule="approvals[1]",answer="approved"} 1"#,
            r#"askgate_approval_answers_total{rule="approvals[1]",answer="declined"} 1"#,
        ];
        let text = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            loop {
                let text = metrics.render(&store).await;
                if wanted.iter().all(|line| text.contains(line)) {
                    return text;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("both answers counted: {}", exposition_now(&metrics)));
        assert!(text.contains("approval_answers"), "{text}");
        let row = store.ask("ask_m1").await.expect("reads").expect("there");
        assert_eq!(row.status, AskStatus::Pending);
    }

    /// What the metrics say now, for a failure's message.
    fn exposition_now(metrics: &Metrics) -> String {
        let mut text = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut text, &metrics.inner.registry);
        text
    }
}
