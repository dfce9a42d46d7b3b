//! 2025-11-25's tasks over `--listen`: what stdio's pipes do for them (see
//! [`crate::legacy_tasks`]), done to the POSTs a classic client sends and
//! to the answers it reads. A `tools/call` with a task, and `tasks/get` or
//! `tasks/cancel` of such a task, are renamed into askgate's own methods
//! before rmcp reads them; the answers to `initialize` and `tools/list` —
//! the only ones that carry task fields out — have them put back, whether
//! they come as JSON or as an event stream.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::Response;
use tokio_stream::Stream;

use crate::legacy_tasks;
use crate::tasks::Routes;

/// The longest JSON answer put back whole (an `initialize` or a
/// `tools/list`); past it the answer is cut, and the client reads a body
/// that is not JSON.
const LONGEST_ANSWER: usize = 64 << 20;

/// `message` renamed for askgate when it is a classic client's 2025-11-25
/// task request (`version`: its `MCP-Protocol-Version`, none before the
/// handshake).
pub(super) fn renamed(message: &[u8], version: Option<&str>, routes: &Routes) -> Option<Vec<u8>> {
    if !version.is_none_or(crate::express::is_classic) {
        return None;
    }
    legacy_tasks::inbound(message, |id| routes.is_legacy(id))
}

/// Whether the answer to `message` may carry task fields out: it asks for
/// `initialize` or `tools/list` (on any revision, as on stdio: what the
/// upstream wrote is what the client reads).
pub(super) fn answer_carries(message: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Method<'_>>(message)
        .ok()
        .and_then(|m| m.method)
        .is_some_and(|method| matches!(method.as_ref(), "initialize" | "tools/list"))
}

/// `response` with the task fields it carries put back: a JSON body read
/// whole and written again, an event stream event by event.
pub(super) async fn restored(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let kind = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if kind.starts_with("text/event-stream") {
        let events = Restoring {
            inner: body.into_data_stream(),
            pending: Vec::new(),
            ended: false,
        };
        return Response::from_parts(parts, Body::from_stream(events));
    }
    if !kind.starts_with("application/json") {
        return Response::from_parts(parts, body);
    }
    match axum::body::to_bytes(body, LONGEST_ANSWER).await {
        Ok(bytes) => {
            let written = legacy_tasks::restore_frame(&bytes).into_owned();
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(written))
        }
        // Past the longest (or broken off): nothing whole to pass on.
        Err(_) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::empty())
        }
    }
}

/// An event stream whose `data:` lines have their task fields put back;
/// lines are gathered across chunks, and whatever is left when the stream
/// ends is passed on as it is.
struct Restoring<S> {
    inner: S,
    pending: Vec<u8>,
    ended: bool,
}

impl<S, E> Stream for Restoring<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.ended {
                return Poll::Ready(None);
            }
            match Pin::new(&mut self.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error))),
                Poll::Ready(Some(Ok(chunk))) => {
                    self.pending.extend_from_slice(&chunk);
                    let Some(last) = self.pending.iter().rposition(|b| *b == b'\n') else {
                        continue;
                    };
                    let rest = self.pending.split_off(last + 1);
                    let lines = std::mem::replace(&mut self.pending, rest);
                    return Poll::Ready(Some(Ok(Bytes::from(restore_events(&lines)))));
                }
                Poll::Ready(None) => {
                    self.ended = true;
                    if self.pending.is_empty() {
                        return Poll::Ready(None);
                    }
                    let rest = std::mem::take(&mut self.pending);
                    return Poll::Ready(Some(Ok(Bytes::from(rest))));
                }
            }
        }
    }
}

/// Whole lines of an event stream, each `data:` line's message with its
/// task fields put back.
fn restore_events(lines: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        let end = &line[body.len()..];
        match body.strip_prefix(b"data:") {
            Some(data) => {
                let space = data.starts_with(b" ");
                let message = if space { &data[1..] } else { data };
                out.extend_from_slice(b"data:");
                if space {
                    out.push(b' ');
                }
                out.extend_from_slice(&legacy_tasks::restore_frame(message));
            }
            None => out.extend_from_slice(body),
        }
        out.extend_from_slice(end);
    }
    out
}

#[cfg(test)]
mod tests {
    use tokio_stream::StreamExt;

    use super::*;

    fn carried_tools() -> String {
        let written = serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "research", "inputSchema": {"type": "object"},
             "execution": {"taskSupport": "required"}}]}});
        let line = serde_json::to_vec(&written).expect("writes");
        String::from_utf8(legacy_tasks::stow_answer(&line).expect("carried")).expect("text")
    }

    #[tokio::test]
    async fn an_event_streams_data_lines_are_put_back_across_chunks() {
        let event = format!("id: 0\ndata: {}\n\n", carried_tools());
        // Cut in the middle of the data line.
        let (one, two) = event.split_at(event.len() / 2);
        let chunks: Vec<Result<Bytes, std::convert::Infallible>> = vec![
            Ok(Bytes::from(": priming\n\n")),
            Ok(Bytes::from(one.to_owned())),
            Ok(Bytes::from(two.to_owned())),
        ];
        let restoring = Restoring {
            inner: tokio_stream::iter(chunks),
            pending: Vec::new(),
            ended: false,
        };
        let written: Vec<u8> = restoring
            .map(|chunk| chunk.expect("no error").to_vec())
            .collect::<Vec<_>>()
            .await
            .concat();
        let written = String::from_utf8(written).expect("text");
        assert!(
            written.starts_with(": priming\n\nid: 0\ndata: {"),
            "{written}"
        );
        assert!(written.ends_with("}\n\n"), "{written}");
        assert!(
            written.contains(r#""execution":{"taskSupport":"required"}"#),
            "{written}"
        );
        assert!(!written.contains("io.askgate/"), "{written}");
    }

    #[tokio::test]
    async fn a_json_answer_is_put_back_whole() {
        let response = Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(carried_tools()))
            .expect("a response");
        let written = restored(response).await;
        let body = axum::body::to_bytes(written.into_body(), usize::MAX)
            .await
            .expect("a body");
        let body: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(
            body["result"]["tools"][0]["execution"]["taskSupport"],
            "required"
        );
    }

    #[test]
    fn only_a_classic_clients_requests_are_renamed_and_answers_put_back() {
        let routes = Routes::default();
        let call =
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"r","task":{}}}"#;
        assert!(renamed(call, Some("2025-11-25"), &routes).is_some());
        assert!(renamed(call, None, &routes).is_some());
        assert!(renamed(call, Some("2026-07-28"), &routes).is_none());
        let list = br#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#;
        assert!(answer_carries(list));
        assert!(!answer_carries(call));
    }
}
