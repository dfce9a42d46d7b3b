//! An HTTP upstream's answers with 2025-11-25's task fields carried
//! through rmcp's model (see [`crate::legacy_tasks`]), as the child
//! process's pipe does for a stdio upstream.
//!
//! rmcp's HTTP client reads a JSON body into its model itself, so askgate
//! sees an answer's text only when the server sends it as an event stream
//! (the default of the SDKs' servers). [`Carrying`] is rmcp's own client
//! for `reqwest`, with each event's data passed through
//! [`crate::legacy_tasks::stow_answer`] before rmcp reads it; a JSON body
//! is read as before, and what rmcp's model drops of it is gone.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio_stream::{Stream, StreamExt};

/// An event stream as rmcp's client reads it.
type Events = Pin<Box<dyn Stream<Item = Result<Sse, SseError>> + Send>>;

/// The errors of rmcp's client for `reqwest`.
type Failed = StreamableHttpError<reqwest::Error>;

/// How many same-origin redirects a request follows at most.
const MOST_REDIRECTS: usize = 10;

/// rmcp's HTTP client, each event's data with its task fields carried.
#[derive(Clone)]
pub(crate) struct Carrying(reqwest::Client);

impl Carrying {
    /// The client rmcp would make: no idle connections kept (a body left
    /// unread would stall the next request on one), redirects followed
    /// only as 307 or 308 to the same origin (a 301 to 303 loses the body,
    /// another origin would get the session and the upstream's
    /// credentials).
    ///
    /// # Errors
    /// When the TLS backend cannot be set up.
    pub(crate) fn new() -> Result<Carrying, reqwest::Error> {
        let redirects = reqwest::redirect::Policy::custom(|attempt| {
            let keeps_body = matches!(
                attempt.status(),
                reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
            );
            let same_origin = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if !keeps_body || !same_origin {
                attempt.stop()
            } else if attempt.previous().len() > MOST_REDIRECTS {
                attempt.error(format!("more than {MOST_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(redirects)
            .build()
            .map(Carrying)
    }
}

/// `events` with each data's task fields carried.
fn carried(events: Events) -> Events {
    Box::pin(events.map(|event| {
        event.map(|mut event| {
            if let Some(stowed) = event
                .data
                .as_deref()
                .and_then(|data| crate::legacy_tasks::stow_answer(data.as_bytes()))
                .and_then(|stowed| String::from_utf8(stowed).ok())
            {
                event.data = Some(stowed);
            }
            event
        })
    }))
}

/// A POST's answer, an event stream's events carried.
fn carried_post(answer: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
    match answer {
        StreamableHttpPostResponse::Sse(events, session) => {
            StreamableHttpPostResponse::Sse(carried(events), session)
        }
        other => other,
    }
}

impl StreamableHttpClient for Carrying {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        self.0
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await
            .map(carried_post)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        self.0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
            .map(carried_post)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        self.0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await
            .map(carried_post)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failed> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, Failed> {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
            .map(carried)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, Failed> {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
            .map(carried)
    }
}
