//! The lane's side of a call its handler sends (see
//! [`crate::proxy::on_lane`]): sent as bytes, its answer handed back to
//! the handler.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::ErrorData;

use super::lane::{Answering, Lane, Pending};
use super::{Meta, Params};
use crate::proxy::on_lane::LaneSend;
use crate::relay;

impl Lane {
    /// Send `call` on the lane now (its line is written before this
    /// returns, so what the handler does next is not on the call's way to
    /// its server): its server's answer, as the handler answers the client
    /// — or the error the call ended with — when the future is awaited.
    pub(crate) fn send_decided(
        self: &Arc<Self>,
        call: LaneSend,
    ) -> Pin<Box<dyn Future<Output = relay::Response> + Send>> {
        let lane = Arc::clone(self);
        let LaneSend {
            server,
            tool,
            arguments,
            marker,
            ending,
            life,
            entered,
            progress,
            cancelled,
            gateway,
        } = call;
        let (routed, token) = progress.unzip();
        // A server that tells of progress is working: its idle clock
        // starts again.
        let watching = token
            .as_deref()
            .map(|token| lane.watch_progress(token, entered.idle()));
        let (handler, answered) = tokio::sync::oneshot::channel();
        let id = lane.next.fetch_add(1, Ordering::Relaxed);
        // Logged under the lane's own target, as the client's calls on it.
        tracing::debug!(target: "askgate_gateway::express", call = %ending.id(), %server, %tool, "sent on the express lane by its handler");
        let request = super::lane::request(
            id,
            &Params {
                name: &tool,
                arguments: &arguments,
                meta: Meta {
                    marker: marker.as_deref(),
                    progress_token: token.as_deref(),
                },
            },
        );
        let pending = Pending {
            answering: Answering::Handler(handler),
            tool: tool.clone(),
            ending,
            life,
            progress: None,
            // Its handler is counted in flight.
            _in_flight: None,
            idle: entered.idle().clone(),
            _watching: None,
        };
        lane.send(id, request, pending);
        Box::pin(async move {
            let _watching = watching;
            let answered = match cancelled {
                None => answered.await,
                Some(cancelled) => {
                    tokio::pin!(answered);
                    tokio::select! {
                        answered = &mut answered => answered,
                        () = cancelled => {
                            // Counted only when the cancel ended it.
                            if lane.cancel(id) {
                                gateway.metrics().cancelled(&server);
                            }
                            answered.await
                        }
                    }
                }
            };
            // Its server's asks no longer go to this call; the progress it
            // told of before its answer reaches the client first.
            drop(entered);
            if let Some(routed) = &routed {
                routed.settle().await;
            }
            match answered {
                Ok(Ok(result)) => Ok(relay::complete(result)),
                Ok(Err(error)) => Err(error),
                Err(_) => Err(ErrorData::internal_error(
                    format!(
                        "the call to {tool} on {server} ended without an answer (the gateway is \
                         stopping); it may have run"
                    ),
                    None,
                )),
            }
        })
    }
}
