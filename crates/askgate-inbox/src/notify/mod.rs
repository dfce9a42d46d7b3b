//! Webhook notifications: a post when an ask is parked, when a person
//! answers an ask a team's rule decides (`answered`, with who and how many
//! approvals it still needs), when such an ask escalates (`escalated`, see
//! the `escalation` module), and when it settles (`settled`, or
//! `expired`), so a person hears that something waits for them.
//!
//! - The body is the ask's facts (`body::Facts`: title, origin, risk,
//!   status, inbox link), as generic JSON or in Slack's incoming-webhook
//!   shape — never an answer value, never a tool argument. The title is
//!   askgate's own words (`title::of`: "Confirm ship on deploy ..."),
//!   never a form's message or a question set's preamble, which a model
//!   or an upstream may have written.
//! - Each post has a timeout, and is tried a bounded number of times with
//!   exponential backoff (network errors, timeouts, 429 and 5xx are tried
//!   again; other statuses are final). A failure is logged (the ask id, the
//!   event and the HTTP status, never the URL: a Slack webhook URL is a
//!   secret) and never blocks or fails the ask: posts run on tasks of their
//!   own.
//! - Exactly one process posts per event, however many hear of it (several
//!   gateways on one PostgreSQL, the CLI beside them): the poster first
//!   consumes the single-use token `notify:<id>:<event>` in the store, and
//!   only the one that consumed it posts. A process that dies between the
//!   claim and the post loses that post: notifications are at most once.
//!
//! [`Notifier::listen`] hears of asks through the store's news
//! ([`Store::parked`], [`Store::settlements`]): on PostgreSQL from every
//! process, on SQLite from this process only. [`Notifier::post`] posts for
//! an ask the caller knows of (`askgate ask` posts its own).
//! [`Notifier::on_failed_post`] tells the caller of each post that failed
//! (the gateway counts them for `/metrics`), without this crate knowing
//! of metrics.

#[cfg(test)]
mod approval_tests;
mod body;
mod escalation;
#[cfg(test)]
mod tests;
mod title;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use askgate_mcp::InboxLinks;
use askgate_store::{AskRow, Store};
use jiff::Timestamp;
use serde_json::Value as Json;
use tokio::sync::{broadcast, watch};

pub use body::Event;
use body::Facts;

/// How long a post may take before it is abandoned (and tried again).
const TIMEOUT: Duration = Duration::from_secs(5);

/// How many times a post is tried in all.
const TRIES: u32 = 3;

/// The wait before the second try; doubled before each next one.
const BACKOFF: Duration = Duration::from_millis(500);

/// How long the claim on a post is kept (a replica that hears of the event
/// later than that could post it again).
const CLAIM_DAYS: i64 = 30;

/// The shape of the body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Preset {
    /// `{event, id, title, server, tool, risk, status, link, at}`.
    #[default]
    Generic,
    /// Slack's incoming webhook: `{text, blocks}`.
    Slack,
}

impl Preset {
    /// The values `preset` takes.
    pub const EXPECTED: &'static str = "\"generic\" (the default) or \"slack\"";

    /// Read a config or flag value.
    pub fn parse(text: &str) -> Option<Preset> {
        match text {
            "generic" => Some(Preset::Generic),
            "slack" => Some(Preset::Slack),
            _ => None,
        }
    }
}

/// Where and how to post.
#[derive(Clone, PartialEq, Eq)]
pub struct Webhook {
    /// The URL posted to (may hold a secret, as Slack's do: never logged,
    /// `Debug` shows its scheme and host only).
    pub url: String,
    /// The body's shape.
    pub preset: Preset,
    /// Headers sent with each post (values may be credentials: `Debug`
    /// shows the names only).
    pub headers: BTreeMap<String, String>,
    /// How long one try may take.
    pub timeout: Duration,
    /// How many tries in all.
    pub tries: u32,
    /// The wait before the second try, doubled each time.
    pub backoff: Duration,
}

impl Webhook {
    /// A webhook at `url` with the default timeout, tries and backoff.
    pub fn new(url: String, preset: Preset, headers: BTreeMap<String, String>) -> Webhook {
        Webhook {
            url,
            preset,
            headers,
            timeout: TIMEOUT,
            tries: TRIES,
            backoff: BACKOFF,
        }
    }

    /// The URL's scheme and host, for messages.
    fn host(&self) -> String {
        match reqwest::Url::parse(&self.url) {
            Ok(url) => format!("{}://{}", url.scheme(), url.host_str().unwrap_or("?")),
            Err(_) => "(not a URL)".to_owned(),
        }
    }
}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &format_args!("{}/<redacted>", self.host()))
            .field("preset", &self.preset)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .field("tries", &self.tries)
            .field("backoff", &self.backoff)
            .finish()
    }
}

/// How a post ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The ask.
    pub id: String,
    /// The event.
    pub event: Event,
    /// Whether this process claimed the post; `false`: another process (or
    /// an earlier piece of the same news) posts it, and nothing was sent.
    pub claimed: bool,
    /// How many tries were made.
    pub tries: u32,
    /// The receiver's HTTP status on the last try, when it answered.
    pub status: Option<u16>,
    /// Whether the receiver took it (a 2xx status).
    pub delivered: bool,
}

/// Posts to a webhook as asks are parked and settle. Cloning is cheap:
/// clones share the client and the posts in flight.
#[derive(Debug, Clone)]
pub struct Notifier {
    inner: Arc<Inner>,
    /// Where the notifier reads the time (how long a post's claim lasts).
    clock: Arc<dyn askgate_mcp::Clock>,
    /// Told of each post that failed.
    failed: Failed,
}

/// What is told of each post that failed, by its event (none by default).
#[derive(Clone, Default)]
struct Failed(Option<Arc<dyn Fn(Event) + Send + Sync>>);

impl fmt::Debug for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Failed(told)"
        } else {
            "Failed(none)"
        })
    }
}

#[derive(Debug)]
struct Inner {
    store: Store,
    webhook: Webhook,
    inbox: InboxLinks,
    client: reqwest::Client,
    /// How each post ended, for whoever listens (tests, `askgate ask`).
    deliveries: broadcast::Sender<Delivery>,
    /// How many posts are in flight.
    in_flight: watch::Sender<usize>,
}

impl Notifier {
    /// A notifier posting to `webhook` of asks in `store`, linking to
    /// their pages in `inbox`.
    ///
    /// # Errors
    /// [`Error::WebhookHeaderName`](crate::Error::WebhookHeaderName) or
    /// [`Error::WebhookHeaderValue`](crate::Error::WebhookHeaderValue) when
    /// a header is not a valid HTTP header, and
    /// [`Error::WebhookClient`](crate::Error::WebhookClient) when the HTTP
    /// client cannot be built.
    pub fn new(
        store: Store,
        webhook: Webhook,
        inbox: InboxLinks,
    ) -> Result<Notifier, crate::Error> {
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &webhook.headers {
            // The errors never quote a header value.
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| crate::Error::WebhookHeaderName { name: name.clone() })?;
            let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                crate::Error::WebhookHeaderValue {
                    name: name.as_str().to_owned(),
                }
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .timeout(webhook.timeout)
            .default_headers(headers)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| crate::Error::WebhookClient {
                source: e.without_url(),
            })?;
        Ok(Notifier {
            inner: Arc::new(Inner {
                store,
                webhook,
                inbox,
                client,
                deliveries: broadcast::channel(256).0,
                in_flight: watch::channel(0).0,
            }),
            clock: Arc::new(askgate_mcp::SystemClock),
            failed: Failed::default(),
        })
    }

    /// Read the time from `clock` (default: the system's): when a post's
    /// claim is made and until when it holds.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn askgate_mcp::Clock>) -> Notifier {
        self.clock = clock;
        self
    }

    /// Call `failed` with the event of each post that failed — the
    /// receiver unreachable, timed out or refusing after every try —
    /// from now on (on the post's task: it should return at once). A post
    /// another process claimed, or one never made because the store
    /// failed, is not a failed post.
    #[must_use]
    pub fn on_failed_post(mut self, failed: impl Fn(Event) + Send + Sync + 'static) -> Notifier {
        self.failed = Failed(Some(Arc::new(failed)));
        self
    }

    /// How each post ends, from now on.
    pub fn deliveries(&self) -> broadcast::Receiver<Delivery> {
        self.inner.deliveries.subscribe()
    }

    /// Post for every ask parked or settled from now on, as the store
    /// hears of it, until the returned task is aborted. Subscribes before
    /// returning: an ask parked after this call is heard.
    pub fn listen(&self) -> tokio::task::JoinHandle<()> {
        let mut parked = self.inner.store.parked();
        let mut settled = self.inner.store.settlements();
        let mut answered = self.inner.store.answered();
        let notifier = self.clone();
        let scanning = self.clone();
        tokio::spawn(async move { scanning.watch_pending().await });
        tokio::spawn(async move {
            loop {
                let (event, heard) = tokio::select! {
                    news = parked.recv() => (Event::Parked, news.map(|n| (n.id, n.row, None))),
                    news = settled.recv() => (Event::Settled, news.map(|n| (n.id, n.row, None))),
                    news = answered.recv() => {
                        (Event::Answered, news.map(|n| (n.id, n.row, Some(n.person))))
                    }
                };
                match heard {
                    Ok((id, row, person)) => {
                        if event == Event::Parked {
                            notifier.watch_escalation(&id, row.clone());
                        }
                        notifier.post_id(event, &id, row, person);
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(
                            event = event.as_str(),
                            missed,
                            "the webhook notifier fell behind; no post for those asks"
                        );
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        })
    }

    /// Post `event` for the ask `row`, on a task of its own: this returns
    /// at once.
    pub fn post(&self, event: Event, row: &AskRow) {
        self.post_id(event, &row.ask.id, Some(Arc::new(row.clone())), None);
    }

    /// Wait until every post in flight has ended, for at most `within`.
    pub async fn flush(&self, within: Duration) {
        let mut in_flight = self.inner.in_flight.subscribe();
        let _ = tokio::time::timeout(within, in_flight.wait_for(|n| *n == 0)).await;
    }

    /// How long a post can take at most, all tries and waits included.
    pub fn longest_post(&self) -> Duration {
        let webhook = &self.inner.webhook;
        let waits: Duration = (1..webhook.tries)
            .map(|n| webhook.backoff * 2u32.saturating_pow(n - 1))
            .sum();
        webhook.timeout * webhook.tries + waits
    }

    fn post_id(&self, event: Event, id: &str, row: Option<Arc<AskRow>>, person: Option<Arc<str>>) {
        self.inner.in_flight.send_modify(|n| *n += 1);
        let notifier = self.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            notifier.claim_and_post(event, &id, row, person).await;
            notifier.inner.in_flight.send_modify(|n| *n -= 1);
        });
    }

    async fn claim_and_post(
        &self,
        event: Event,
        id: &str,
        row: Option<Arc<AskRow>>,
        person: Option<Arc<str>>,
    ) {
        let store = &self.inner.store;
        let row = match row {
            Some(row) => row,
            None => match store.ask(id).await {
                Ok(Some(row)) => Arc::new(row),
                // Not an ask of this store (another schema on the same
                // PostgreSQL database): nothing to post.
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(ask = %id, event = event.as_str(), %error, "no webhook post: the ask could not be read");
                    return;
                }
            },
        };
        // An ask that settled by expiring is its own event.
        let event = match event {
            Event::Settled if row.status == askgate_store::AskStatus::Expired => Event::Expired,
            other => other,
        };
        let now = self.clock.now();
        let keep = now
            .checked_add(jiff::SignedDuration::from_hours(24 * CLAIM_DAYS))
            .unwrap_or(Timestamp::MAX);
        let claim = match &person {
            // Each person's answer is posted once.
            Some(person) => format!("notify:{id}:{}:{person}", event.as_str()),
            None => format!("notify:{id}:{}", event.as_str()),
        };
        match store.consume_token(&claim, keep, now).await {
            Ok(true) => {}
            // Another process (or an earlier piece of the same news) posts it.
            Ok(false) => {
                let _ = self.inner.deliveries.send(Delivery {
                    id: id.to_owned(),
                    event,
                    claimed: false,
                    tries: 0,
                    status: None,
                    delivered: false,
                });
                return;
            }
            Err(error) => {
                tracing::warn!(ask = %id, event = event.as_str(), %error, "no webhook post: the claim failed");
                return;
            }
        }
        let mut facts = Facts::of(event, &row, self.inner.inbox.page(id));
        if event == Event::Escalated {
            facts.escalated_to = askgate_mcp::approvals::panel_of(&row)
                .ok()
                .flatten()
                .and_then(|panel| panel.escalation)
                .map(|escalation| escalation.to);
        }
        if let Some(person) = person {
            // As it stood just after this answer, whatever came since.
            if let (Ok(Some(panel)), Ok(answers)) = (
                askgate_mcp::approvals::panel_of(&row),
                store.answers(id).await,
            ) {
                facts.needed =
                    askgate_mcp::approvals::needed_after(&panel, &row, &answers, &person, now);
            }
            facts.person = Some(person.to_string());
        }
        let body = match self.inner.webhook.preset {
            Preset::Generic => facts.generic(),
            Preset::Slack => facts.slack(),
        };
        let delivery = self.send(id, event, &body).await;
        let _ = self.inner.deliveries.send(delivery);
    }

    /// Post `body`, trying again after a failure that may pass.
    async fn send(&self, id: &str, event: Event, body: &Json) -> Delivery {
        let webhook = &self.inner.webhook;
        let mut wait = webhook.backoff;
        let mut tried = 0;
        loop {
            tried += 1;
            let (status, failure) = match self
                .inner
                .client
                .post(&webhook.url)
                .json(body)
                .send()
                .await
            {
                Ok(response) if response.status().is_success() => {
                    tracing::debug!(ask = %id, event = event.as_str(), tries = tried, "webhook posted");
                    return Delivery {
                        id: id.to_owned(),
                        event,
                        claimed: true,
                        tries: tried,
                        status: Some(response.status().as_u16()),
                        delivered: true,
                    };
                }
                Ok(response) => {
                    let status = response.status();
                    let passing = status.is_server_error()
                        || status == reqwest::StatusCode::TOO_MANY_REQUESTS;
                    (Some(status.as_u16()), passing.then_some("answered"))
                }
                Err(error) if error.is_timeout() => (None, Some("timed out")),
                Err(error) if error.is_connect() => (None, Some("could not connect")),
                Err(_) => (None, Some("failed")),
            };
            let last = tried >= webhook.tries || failure.is_none();
            if last {
                if let Some(failed) = &self.failed.0 {
                    failed(event);
                }
                tracing::warn!(
                    ask = %id,
                    event = event.as_str(),
                    status = status.map_or_else(|| "none".to_owned(), |s| s.to_string()),
                    tries = tried,
                    "the webhook post failed; the ask is not affected"
                );
                return Delivery {
                    id: id.to_owned(),
                    event,
                    claimed: true,
                    tries: tried,
                    status,
                    delivered: false,
                };
            }
            tracing::debug!(ask = %id, event = event.as_str(), status, how = failure.unwrap_or(""), "webhook post to try again");
            tokio::time::sleep(wait).await;
            wait = wait.saturating_mul(2);
        }
    }
}
