//! Newline-delimited JSON-RPC on pipes, shared by rmcp and the express
//! lane.
//!
//! rmcp reads and writes the gateway's MCP messages and decodes every one
//! into its model types. The express lane ([`super::express`]) relays the
//! calls that need no person as bytes, without that decoding and without a
//! task between the two pipes. On each pipe the gateway reads, a [`tap`]
//! reads whole lines and offers each to the lane first; a line the lane
//! does not take goes on, unchanged, to rmcp's own transport through an
//! in-memory pipe — so rmcp's framing and its handling of bad input stay
//! exactly as they are. Writes from rmcp and from the lane both go through
//! one [`Out`], which keeps every line whole.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader, SimplexStream, WriteHalf};
use tokio::net::unix::pipe;
use tokio::sync::Notify;

/// rmcp's own longest line (16 MiB), which the tests and the fuzz target
/// read with; the gateway reads with `[limits]`' (the same by default).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

mod envelope;
pub(crate) use envelope::Envelope;

/// How much of what rmcp is yet to read the in-memory pipe holds before
/// the tap waits for it.
const HANDOVER: usize = 256 * 1024;

/// The in-memory pipe from a tap to rmcp's transport: what rmcp reads.
pub(crate) type Handover = tokio::io::ReadHalf<SimplexStream>;

/// An in-memory pipe for the lines a tap hands to rmcp.
pub(crate) fn handover() -> (Handover, WriteHalf<SimplexStream>) {
    tokio::io::simplex(HANDOVER)
}

/// The writing end of a pipe, shared: each [`Out::send`] writes one whole
/// line after every line sent before it. A line the pipe takes at once is
/// written by the caller, with no task in between; the rest waits in a
/// buffer that a task drains as the reader makes room.
#[derive(Debug)]
pub(crate) struct Out {
    state: Mutex<State>,
    /// Rung when the buffer empties or the pipe breaks.
    drained: Notify,
}

/// What an [`Out`] writes to: a pipe (a FIFO), or a socket — the end of a
/// socket pair, as Node's `child_process` gives a child for its stdio.
#[derive(Debug)]
pub(crate) enum Sink {
    /// A FIFO.
    Pipe(pipe::Sender),
    /// A socket.
    Socket(tokio::net::UnixStream),
    /// Anything else (a file, a terminal), written with blocking writes:
    /// a file takes them at once, a terminal nearly so.
    Blocking(std::fs::File),
}

impl Sink {
    fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Pipe(pipe) => pipe.try_write(bytes),
            Sink::Socket(socket) => socket.try_write(bytes),
            Sink::Blocking(file) => io::Write::write(&mut &*file, bytes),
        }
    }

    fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Sink::Pipe(pipe) => pipe.poll_write_ready(cx),
            Sink::Socket(socket) => socket.poll_write_ready(cx),
            Sink::Blocking(_) => Poll::Ready(Ok(())),
        }
    }
}

impl AsyncWrite for Sink {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Sink::Pipe(pipe) => Pin::new(pipe).poll_write(cx, bytes),
            Sink::Socket(socket) => Pin::new(socket).poll_write(cx, bytes),
            Sink::Blocking(file) => Poll::Ready(io::Write::write(file, bytes)),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Sink::Pipe(pipe) => Pin::new(pipe).poll_flush(cx),
            Sink::Socket(socket) => Pin::new(socket).poll_flush(cx),
            Sink::Blocking(file) => Poll::Ready(io::Write::flush(file)),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Sink::Pipe(pipe) => Pin::new(pipe).poll_shutdown(cx),
            Sink::Socket(socket) => Pin::new(socket).poll_shutdown(cx),
            Sink::Blocking(_) => Poll::Ready(Ok(())),
        }
    }
}

impl From<pipe::Sender> for Sink {
    fn from(pipe: pipe::Sender) -> Sink {
        Sink::Pipe(pipe)
    }
}

#[derive(Debug)]
struct State {
    /// `None` once closed.
    pipe: Option<Sink>,
    /// Bytes waiting to be written, from `written` on.
    waiting: Vec<u8>,
    written: usize,
    /// Whether a task is draining `waiting`.
    draining: bool,
    /// Why the pipe can no longer be written, once it cannot.
    broken: Option<io::ErrorKind>,
}

impl State {
    fn idle(&self) -> bool {
        self.broken.is_some() || self.written == self.waiting.len()
    }

    /// Write what waits, as far as the pipe takes it without waiting.
    /// `Ok(true)` when nothing is left.
    fn write_waiting(&mut self) -> io::Result<bool> {
        while self.written < self.waiting.len() {
            let Some(pipe) = &self.pipe else {
                return Err(io::ErrorKind::NotConnected.into());
            };
            match pipe.try_write(&self.waiting[self.written..]) {
                Ok(n) => self.written += n,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        self.waiting.clear();
        self.written = 0;
        Ok(true)
    }
}

impl Out {
    /// Share the writing end `pipe`.
    pub(crate) fn new(pipe: impl Into<Sink>) -> Arc<Out> {
        Arc::new(Out {
            state: Mutex::new(State {
                pipe: Some(pipe.into()),
                waiting: Vec::new(),
                written: 0,
                draining: false,
                broken: None,
            }),
            drained: Notify::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Write `bytes` — whole lines, each with its newline — after every
    /// line sent before. Returns at once: what the pipe does not take now
    /// is written as the reader makes room.
    ///
    /// # Errors
    /// The pipe is closed or broken (the reader went away).
    pub(crate) fn send(self: &Arc<Self>, bytes: &[u8]) -> io::Result<()> {
        let mut state = self.state();
        if let Some(kind) = state.broken {
            return Err(kind.into());
        }
        state.waiting.extend_from_slice(bytes);
        if state.draining {
            return Ok(());
        }
        match state.write_waiting() {
            Ok(true) => Ok(()),
            Ok(false) => {
                state.draining = true;
                drop(state);
                let out = Arc::clone(self);
                tokio::spawn(async move { std::future::poll_fn(|cx| out.drain(cx)).await });
                Ok(())
            }
            Err(error) => {
                state.broken = Some(error.kind());
                drop(state);
                self.drained.notify_waiters();
                Err(error)
            }
        }
    }

    /// Write what waits as the pipe makes room, until nothing does.
    fn drain(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.state();
        loop {
            match state.write_waiting() {
                Ok(true) => break,
                Ok(false) => {}
                Err(error) => {
                    state.broken = Some(error.kind());
                    break;
                }
            }
            let ready = match &state.pipe {
                Some(pipe) => pipe.poll_write_ready(cx),
                None => Poll::Ready(Err(io::ErrorKind::NotConnected.into())),
            };
            match ready {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(error)) => {
                    state.broken = Some(error.kind());
                    break;
                }
            }
        }
        state.draining = false;
        drop(state);
        self.drained.notify_waiters();
        Poll::Ready(())
    }

    /// Wait until every line sent is written, or the pipe broke.
    pub(crate) async fn drained(&self) {
        loop {
            let notified = self.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.state().idle() {
                return;
            }
            notified.await;
        }
    }

    /// Close the pipe once every line sent is written: the reader sees the
    /// end of the stream.
    pub(crate) async fn close(&self) {
        self.drained().await;
        let pipe = self.state().pipe.take();
        drop(pipe);
    }
}

/// rmcp's writing end of an [`Out`]: whatever rmcp writes at once is whole
/// frames (its codec encodes a frame completely before writing it), and
/// is taken whole.
#[derive(Debug, Clone)]
pub(crate) struct OutWriter(pub(crate) Arc<Out>, bool);

impl OutWriter {
    /// A writer to `out`, the frames as rmcp wrote them.
    pub(crate) fn new(out: Arc<Out>) -> OutWriter {
        OutWriter(out, false)
    }

    /// A writer to `out` of a client's frames, 2025-11-25's task fields
    /// put back where that revision has them (see
    /// [`crate::legacy_tasks`]).
    pub(crate) fn restoring(out: Arc<Out>) -> OutWriter {
        OutWriter(out, true)
    }
}

impl AsyncWrite for OutWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        // rmcp writes whole frames, each ending in its newline.
        let sent = if self.1 {
            self.0.send(&crate::legacy_tasks::restore_frame(bytes))
        } else {
            self.0.send(bytes)
        };
        Poll::Ready(sent.map(|()| bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Sent is as good as written: `Out` writes it in order.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// What became of a line offered to a tap's taker.
pub(crate) enum Offered {
    /// It took the line: rmcp never sees it.
    Taken,
    /// It left the line to rmcp.
    Passed,
    /// rmcp is to read this line instead (one rmcp would misread, mended).
    Instead(Vec<u8>),
}

impl From<bool> for Offered {
    fn from(taken: bool) -> Offered {
        if taken {
            Offered::Taken
        } else {
            Offered::Passed
        }
    }
}

/// Read `pipe` line by line until it ends, offering each line (without its
/// newline) to `take`; a line it does not take is written, with its
/// newline, to `rest` — rmcp's side (or what `take` gives instead). A line longer than `longest` is
/// dropped and logged, as rmcp drops it; what it said of itself (its id,
/// whether it is a request or an answer: see [`Envelope`]) and its length
/// go to `too_long`, which answers for it — a line it returns is taken in
/// the dropped one's place, as if the peer had sent it. `rest` is shut
/// when `pipe` ends, so rmcp sees the end too. Returns which side ended
/// first.
pub(crate) async fn tap<T: Into<Offered>>(
    pipe: impl tokio::io::AsyncRead + Unpin,
    mut take: impl FnMut(&[u8]) -> T,
    mut rest: WriteHalf<SimplexStream>,
    peer: &str,
    longest: usize,
    mut too_long: impl FnMut(&Envelope, usize) -> Option<Vec<u8>>,
) -> Tapped {
    let mut reader = BufReader::with_capacity(64 * 1024, pipe);
    let mut tapped = Tapped::PipeEnded;
    let mut line = Vec::new();
    let mut oversized = false;
    let mut envelope = Envelope::default();
    let mut length = 0usize;
    loop {
        let buffer = match reader.fill_buf().await {
            Ok([]) => break,
            Ok(buffer) => buffer,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                tracing::warn!(peer, %error, "reading from the pipe failed");
                break;
            }
        };
        let (chunk, ends) = match memchr(buffer) {
            Some(at) => (&buffer[..at], true),
            None => (buffer, false),
        };
        if !oversized && line.len() + chunk.len() > longest {
            oversized = true;
            envelope = Envelope::default();
            envelope.feed(&line);
            length = line.len();
            line = Vec::new();
        }
        if oversized {
            envelope.feed(chunk);
            length += chunk.len();
        } else {
            line.extend_from_slice(chunk);
        }
        let used = chunk.len() + usize::from(ends);
        reader.consume(used);
        if !ends {
            continue;
        }
        if std::mem::take(&mut oversized) {
            tracing::warn!(
                peer,
                bytes = length,
                max_line_length = longest,
                id = envelope.id().unwrap_or("-"),
                "a message exceeded the longest line read ([limits] request_mib, answer_mib); it \
                 is not read, and what waits on it is answered in its place"
            );
            match too_long(&envelope, length) {
                Some(instead) => line = instead,
                None => {
                    line.clear();
                    continue;
                }
            }
        }
        if !line.is_empty() {
            let passed = match take(trim(&line)).into() {
                Offered::Taken => None,
                Offered::Passed => Some(std::mem::take(&mut line)),
                Offered::Instead(instead) => Some(instead),
            };
            if let Some(mut passed) = passed {
                passed.push(b'\n');
                if rest.write_all(&passed).await.is_err() {
                    // rmcp's side is gone: nobody reads the rest.
                    tapped = Tapped::RestGone;
                    break;
                }
            }
        }
        line.clear();
    }
    let _ = rest.shutdown().await;
    tapped
}

/// Why a [`tap`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tapped {
    /// The pipe it read ended (or failed): its peer closed its side.
    PipeEnded,
    /// rmcp's side stopped reading.
    RestGone,
}

/// In MiB, to one decimal.
pub(crate) fn mib(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss)]
    let mib = bytes as f64 / (1024.0 * 1024.0);
    format!("{mib:.1} MiB")
}

/// Where the first newline is.
fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// The line without a trailing carriage return.
fn trim(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn pipe_pair() -> (pipe::Sender, pipe::Receiver) {
        let (sender, receiver) = pipe::pipe().expect("a pipe");
        (sender, receiver)
    }

    #[tokio::test]
    async fn lines_not_taken_reach_the_rest_whole_and_in_order() {
        let (sender, receiver) = pipe_pair();
        let (mut rmcp, rest) = handover();
        let taken = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&taken);
        let tapping = tokio::spawn(async move {
            tap(
                receiver,
                move |line| {
                    let mine = line.starts_with(b"express");
                    if mine {
                        seen.lock().expect("not poisoned").push(line.to_vec());
                    }
                    mine
                },
                rest,
                "test",
                MAX_LINE,
                |_, _| None,
            )
            .await;
        });
        let out = Out::new(sender);
        out.send(b"one\nexpress 1\r\ntwo\n\nexpress 2\n")
            .expect("the pipe is open");
        out.send(b"three").expect("the pipe is open");
        out.close().await;
        tapping.await.expect("done");
        let mut read = String::new();
        rmcp.read_to_string(&mut read).await.expect("done");
        // A trailing line without a newline is incomplete: not delivered.
        assert_eq!(read, "one\ntwo\n");
        assert_eq!(
            *taken.lock().expect("not poisoned"),
            vec![b"express 1".to_vec(), b"express 2".to_vec()]
        );
    }

    #[tokio::test]
    async fn a_reader_slower_than_the_writers_gets_every_line_whole() {
        let (sender, receiver) = pipe_pair();
        let out = Out::new(sender);
        // Far more than a pipe holds, from two writers at once.
        let line_a = format!("{}\n", "a".repeat(3000));
        let line_b = format!("{}\n", "b".repeat(5000));
        let writers: Vec<_> = [line_a.clone(), line_b.clone()]
            .into_iter()
            .map(|line| {
                let out = Arc::clone(&out);
                tokio::spawn(async move {
                    for _ in 0..200 {
                        out.send(line.as_bytes()).expect("the pipe is open");
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        let reader = tokio::spawn(async move {
            let mut text = String::new();
            let mut receiver = receiver;
            receiver.read_to_string(&mut text).await.expect("done");
            text
        });
        for writer in writers {
            writer.await.expect("done");
        }
        out.close().await;
        let text = reader.await.expect("done");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 400);
        assert!(
            lines
                .iter()
                .all(|l| *l == line_a.trim_end() || *l == line_b.trim_end()),
            "a line was split or interleaved"
        );
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_dropped_and_the_next_one_still_arrives() {
        let (sender, receiver) = pipe_pair();
        let (mut rmcp, rest) = handover();
        let tapping = tokio::spawn(async move {
            tap(receiver, |_| false, rest, "test", MAX_LINE, |_, _| None).await;
        });
        let reading = tokio::spawn(async move {
            let mut read = String::new();
            rmcp.read_to_string(&mut read).await.expect("done");
            read
        });
        let out = Out::new(sender);
        let mut huge = vec![b'x'; MAX_LINE + 10];
        huge.push(b'\n');
        out.send(&huge).expect("the pipe is open");
        out.send(b"after\n").expect("the pipe is open");
        out.close().await;
        tapping.await.expect("done");
        assert_eq!(reading.await.expect("done"), "after\n");
    }

    #[tokio::test]
    async fn an_answer_over_the_limit_is_answered_for_in_its_place() {
        let (sender, receiver) = pipe_pair();
        let (mut rmcp, rest) = handover();
        let tapping = tokio::spawn(async move {
            let instead = |envelope: &Envelope, length: usize| {
                let id = envelope.id().filter(|_| envelope.is_answer())?;
                Some(format!("too long: {id} {length}").into_bytes())
            };
            tap(receiver, |_| false, rest, "test", 1024, instead).await;
        });
        let reading = tokio::spawn(async move {
            let mut read = String::new();
            rmcp.read_to_string(&mut read).await.expect("done");
            read
        });
        let out = Out::new(sender);
        // The TypeScript SDK's order: the id after the long result.
        let answer = format!(
            r#"{{"result":{{"text":"{}"}},"jsonrpc":"2.0","id":41}}"#,
            "y".repeat(5000)
        );
        out.send(format!("{answer}\n").as_bytes())
            .expect("the pipe is open");
        // A notification over the limit has nobody waiting: only dropped.
        let note = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{}"}}}}"#,
            "z".repeat(5000)
        );
        out.send(format!("{note}\n").as_bytes())
            .expect("the pipe is open");
        out.send(b"after\n").expect("the pipe is open");
        out.close().await;
        tapping.await.expect("done");
        assert_eq!(
            reading.await.expect("done"),
            format!("too long: 41 {}\nafter\n", answer.len())
        );
    }
}
