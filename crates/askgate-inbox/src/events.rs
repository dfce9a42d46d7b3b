//! Live updates: server-sent events telling an open listing that asks
//! changed — one arrived, or one settled here or in another process
//! sharing the store — so the page refreshes its table without a reload.
//! An event carries no ask's data, only that something changed.

use std::convert::Infallible;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use askgate_store::{AskFilter, Store};
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;

use super::Inbox;
use super::auth::{Person, Session};
use super::rejection::SessionRejection;

/// How often the newest pending ask is looked at (asks parked by another
/// process announce nothing): once for the whole inbox, however many
/// pages are open.
const LOOK: Duration = Duration::from_secs(2);

/// How many live pages (`/events` streams) are served at once unless the
/// inbox is told otherwise: past it, a page gets 503 and its browser tries
/// again later.
pub(super) const MOST_STREAMS: usize = 64;

/// What the live pages share: how many are open, and one look at the
/// store for all of them.
#[derive(Debug)]
pub(super) struct Hub {
    open: AtomicUsize,
    /// How many may be open at once.
    pub(super) most: AtomicUsize,
    /// Bumped each time the newest pending ask changed (started with the
    /// first page).
    news: OnceLock<watch::Receiver<u64>>,
}

impl Default for Hub {
    fn default() -> Hub {
        Hub {
            open: AtomicUsize::new(0),
            most: AtomicUsize::new(MOST_STREAMS),
            news: OnceLock::new(),
        }
    }
}

/// A live page counted open, until it closes.
struct Open(Inbox);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.inner.events.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Count a live page of `inbox` open: `None` when as many are open as may
/// be.
fn enter(inbox: &Inbox) -> Option<Open> {
    let before = inbox.inner.events.open.fetch_add(1, Ordering::AcqRel);
    let open = Open(inbox.clone());
    (before < inbox.inner.events.most.load(Ordering::Relaxed)).then_some(open)
}

impl Hub {
    /// News of the store, the look at it started with the first page.
    fn news(&self, store: &Store) -> watch::Receiver<u64> {
        self.news
            .get_or_init(|| {
                let (tell, news) = watch::channel(0);
                tokio::spawn(look(store.clone(), tell));
                news
            })
            .clone()
    }
}

/// Look at the pending asks every [`LOOK`] — the newest, and how many —
/// and tell when either changed: one parked, or one settled by another
/// process. It runs from the first live page for as long as the inbox
/// does: two small queries every 2 s.
async fn look(store: Store, tell: watch::Sender<u64>) {
    let mut every = tokio::time::interval(LOOK);
    let mut seen = None;
    loop {
        every.tick().await;
        let newest = store
            .pending(1, None)
            .await
            .ok()
            .and_then(|page| page.asks.into_iter().next())
            .map(|row| row.ask.id);
        let count = store.pending_count(jiff::Timestamp::now()).await.ok();
        let now = Some((newest, count));
        if now != seen {
            if seen.is_some() {
                tell.send_modify(|n| *n += 1);
            }
            seen = now;
        }
    }
}

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
    let Some(open) = enter(&inbox) else {
        return Ok((
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            [(axum::http::header::RETRY_AFTER, "30")],
            "askgate inbox: too many live pages are open; this one tries again later\n",
        )
            .into_response());
    };
    let filter = AskFilter::default();
    let person = session.person;
    let (sender, events) = mpsc::channel::<Result<Event, Infallible>>(8);
    let store = inbox.store().clone();
    let mut news = inbox.inner.events.news(&store);
    tokio::spawn(async move {
        let _open = open;
        let mut settled = store.settlements();
        let mut newest = newest_pending(&store, &person, &filter).await;
        loop {
            let changed = tokio::select! {
                heard = settled.recv() => match heard {
                    Ok(_) | Err(RecvError::Lagged(_)) => true,
                    Err(RecvError::Closed) => break,
                },
                told = news.changed() => {
                    if told.is_err() {
                        break;
                    }
                    // Something changed somewhere: whether this person
                    // sees it is their own look's to say.
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
