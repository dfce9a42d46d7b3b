//! Health, for probes and load balancers, on every HTTP listener askgate
//! serves (`--listen`, the inbox beside a gateway, `askgate inbox`), with
//! no token: they say only whether the process serves and is ready, never
//! what it holds.
//!
//! - `GET /healthz` (liveness): `200 ok` whenever the process serves
//!   HTTP. It reads nothing, not even the store.
//! - `GET /readyz` (readiness): `200 ready` when the store answers a cheap
//!   read within [`STORE_WAIT`], every upstream has started and the
//!   gateway is not stopping; else `503` and one line saying what is not
//!   (how many upstreams, not which: the names are the operator's, in the
//!   log and in `/metrics`). `askgate inbox` asks it of its store alone
//!   ([`for_store`]).

use std::time::Duration;

use askgate_store::Store;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::metrics;
use crate::proxy::Gateway;

/// How long `/readyz` waits for the store's answer before it says the
/// store does not answer.
pub const STORE_WAIT: Duration = Duration::from_secs(2);

/// `/healthz` and `/readyz` for `gateway`: its store, its upstreams, its
/// stop.
pub(crate) fn routes(gateway: &Gateway) -> axum::Router {
    let gateway = gateway.clone();
    axum::Router::new().route("/healthz", get(alive)).route(
        "/readyz",
        get(move || {
            let gateway = gateway.clone();
            async move {
                let upstreams = gateway.upstreams();
                answer(readiness(&Facts {
                    stopping: gateway.stopping().is_stopping(),
                    store_answers: answers(gateway.store()).await,
                    started: upstreams.connected().count(),
                    upstreams: upstreams.len(),
                }))
            }
        }),
    )
}

/// What a gateway serves beside the inbox's pages, on the inbox's
/// listener: `/metrics` for the inbox's operator token or the metrics
/// token of `configured` (the rule of [`metrics::routes`]), `/healthz`
/// and `/readyz`.
pub(crate) fn beside_inbox(
    gateway: &Gateway,
    inbox: &askgate_inbox::Inbox,
    configured: &crate::config::Inbox,
) -> axum::Router {
    let (inbox, configured) = (inbox.clone(), configured.clone());
    metrics::routes(gateway.metrics(), gateway.store(), move |headers| {
        inbox.operator_bearer(headers)
            || metrics::bearer(headers).is_some_and(|t| configured.is_metrics_token(t))
    })
    .merge(routes(gateway))
}

/// `/healthz` and `/readyz` for a process that serves only `store` (the
/// inbox on its own): ready while the store answers.
pub fn for_store(store: Store) -> axum::Router {
    axum::Router::new().route("/healthz", get(alive)).route(
        "/readyz",
        get(move || {
            let store = store.clone();
            async move {
                answer(readiness(&Facts {
                    store_answers: answers(&store).await,
                    ..Facts::default()
                }))
            }
        }),
    )
}

/// What readiness is judged on.
#[derive(Debug, Default)]
struct Facts {
    /// The gateway is stopping: it takes no new calls.
    stopping: bool,
    /// The store answered a read in time.
    store_answers: bool,
    /// How many upstreams have started.
    started: usize,
    /// How many are configured.
    upstreams: usize,
}

/// Ready, or the one line that says what is not.
fn readiness(facts: &Facts) -> Result<(), String> {
    let mut not = Vec::new();
    if facts.stopping {
        not.push("the gateway is stopping".to_owned());
    }
    if !facts.store_answers {
        not.push("the store does not answer".to_owned());
    }
    let waiting = facts.upstreams.saturating_sub(facts.started);
    if waiting > 0 {
        let total = facts.upstreams;
        let (noun, verb) = match (total, waiting) {
            (1, _) => ("upstream", "has"),
            (_, 1) => ("upstreams", "has"),
            _ => ("upstreams", "have"),
        };
        not.push(format!("{waiting} of {total} {noun} {verb} not started"));
    }
    if not.is_empty() {
        Ok(())
    } else {
        Err(format!("not ready: {}", not.join("; ")))
    }
}

/// Whether `store` answers a cheap read (one row by its key) in time.
async fn answers(store: &Store) -> bool {
    matches!(
        tokio::time::timeout(STORE_WAIT, store.recorded_key()).await,
        Ok(Ok(_))
    )
}

async fn alive() -> Response {
    plain(StatusCode::OK, "ok\n".to_owned())
}

fn answer(readiness: Result<(), String>) -> Response {
    match readiness {
        Ok(()) => plain(StatusCode::OK, "ready\n".to_owned()),
        Err(why) => plain(StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")),
    }
}

/// `body` as plain text, never cached: a probe's answer is of now.
fn plain(status: StatusCode, body: String) -> Response {
    (status, [(header::CACHE_CONTROL, "no-store")], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::{Facts, readiness};

    #[test]
    fn a_gateway_whose_store_answers_and_upstreams_started_is_ready() {
        let facts = Facts {
            store_answers: true,
            started: 2,
            upstreams: 2,
            ..Facts::default()
        };
        assert_eq!(readiness(&facts), Ok(()));
    }

    #[test]
    fn what_is_not_ready_is_said_in_one_line() {
        let cases = [
            (
                Facts {
                    store_answers: true,
                    started: 1,
                    upstreams: 2,
                    ..Facts::default()
                },
                "not ready: 1 of 2 upstreams has not started",
            ),
            (
                Facts {
                    upstreams: 1,
                    ..Facts::default()
                },
                "not ready: the store does not answer; 1 of 1 upstream has not started",
            ),
            (
                Facts {
                    stopping: true,
                    store_answers: true,
                    upstreams: 3,
                    started: 1,
                },
                "not ready: the gateway is stopping; 2 of 3 upstreams have not started",
            ),
        ];
        for (facts, said) in cases {
            assert_eq!(readiness(&facts), Err(said.to_owned()), "{facts:?}");
        }
    }
}
