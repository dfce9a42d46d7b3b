//! A session's requests and resumed streams, counted while open: while
//! one is, the session is neither idle nor at rest.

use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use tokio::time::Instant;
use tokio_stream::{Stream, StreamExt};

use super::{Used, lock};

/// A request or a stream of a session open, counted until dropped (see
/// [`super::Sessions::hold`]).
pub(crate) struct Held {
    pub(super) used: Used,
    pub(super) id: SessionId,
    /// A stream's, not a request's.
    pub(super) stream: bool,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(used) = lock(&self.used).get_mut(&self.id) {
            if self.stream {
                used.streams = used.streams.saturating_sub(1);
            } else {
                used.open = used.open.saturating_sub(1);
            }
            used.at = Instant::now();
        }
    }
}

/// `stream`, with `held` (its session's count of it) until it ends.
pub(super) fn counted_while_open(
    stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    held: Option<Held>,
) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
    stream.map(move |message| {
        let _open = &held;
        message
    })
}
