//! A session's GET stream, as the gateway holds it: the client listens on
//! a stream of the gateway's own, which a relay feeds from rmcp's while
//! the session is awake, which stays open while the session rests (what
//! the client is told then goes straight into it: see
//! `crate::downstream::Hearer`), and which is fed again as the session
//! wakes. So a client listening on its GET stream, as the SDKs' clients
//! do, lets its session rest.
//!
//! The events carry no ids: a waking starts rmcp's count of them again,
//! and a client that came back with the id of an event of an earlier
//! worker would be refused its stream. A client whose stream broke opens
//! another, and is told from then on.

use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};

use crate::downstream::{Event, Listening};

/// How many events may wait for a client slow to read them; past that,
/// what a resting session's client is told is dropped (see
/// `crate::downstream::Listening`), and a relay waits.
const EVENTS_WAITING: usize = 16;

/// A new GET stream: the gateway's hold of it, and the stream itself.
pub(super) fn open() -> (
    Listening,
    impl Stream<Item = ServerSseMessage> + Send + Sync + Unpin + 'static,
) {
    let (sender, events) = mpsc::channel(EVENTS_WAITING);
    let stream = ReceiverStream::new(events).map(|event: Event| *event);
    (Listening::new(sender), stream)
}

/// Feed `to` with the events of `from`, rmcp's stream of an awake
/// worker, until either ends (the worker closing as the session rests,
/// or the client gone).
pub(super) fn relay(to: &Listening, from: impl Stream<Item = ServerSseMessage> + Send + 'static) {
    let to = to.sender().clone();
    tokio::spawn(async move {
        tokio::pin!(from);
        loop {
            let next = tokio::select! {
                // The client gone: rmcp's stream is let go, so that a new
                // one of the client's becomes rmcp's own again.
                () = to.closed() => return,
                next = from.next() => next,
            };
            let Some(mut event) = next else { return };
            event.event_id = None;
            if to.send(Box::new(event)).await.is_err() {
                return;
            }
        }
    });
}
