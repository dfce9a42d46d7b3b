//! Live updates: server-sent events telling an open listing that asks
//! changed — one arrived, or one settled here or in another process
//! sharing the store — so the page refreshes its table without a reload.
//! An event carries no ask's data, only that something changed.

use std::convert::Infallible;
use std::time::Duration;

use askgate_store::{AskFilter, Store};
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::Inbox;
use super::auth::{Person, Session};
use super::rejection::SessionRejection;

/// How often the newest pending ask is looked at (asks parked by another
/// process announce nothing).
const LOOK: Duration = Duration::from_secs(2);

/// `GET /events`: a `changed` event each time the asks this person sees
/// may have changed.
///
/// # Errors
/// [`SessionRejection`] (401) for someone not signed in.
pub(super) async fn stream(
    State(inbox): State<Inbox>,
    session: Option<Session>,
) -> Result<Response, SessionRejection> {
    let Some(session) = session else {
        return Err(SessionRejection::stream());
    };
    let filter = AskFilter::default();
    let person = session.person;
    let (sender, events) = mpsc::channel::<Result<Event, Infallible>>(8);
    let store = inbox.store().clone();
    tokio::spawn(async move {
        let mut settled = store.settlements();
        let mut look = tokio::time::interval(LOOK);
        let mut newest = newest_pending(&store, &person, &filter).await;
        loop {
            let changed = tokio::select! {
                news = settled.recv() => match news {
                    Ok(_) | Err(RecvError::Lagged(_)) => true,
                    Err(RecvError::Closed) => break,
                },
                _ = look.tick() => {
                    let now = newest_pending(&store, &person, &filter).await;
                    let changed = now != newest;
                    newest = now;
                    changed
                }
                () = sender.closed() => break,
            };
            if changed
                && sender
                    .send(Ok(Event::default().event("changed").data("asks")))
                    .await
                    .is_err()
            {
                break;
            }
        }
    });
    Ok(Sse::new(ReceiverStream::new(events))
        .keep_alive(KeepAlive::default())
        .into_response())
}

async fn newest_pending(store: &Store, person: &Person, filter: &AskFilter) -> Option<String> {
    super::listed::asks_for(store, person, filter, 1, None)
        .await
        .ok()
        .and_then(|page| page.asks.into_iter().next())
        .map(|row| row.ask.id)
}
