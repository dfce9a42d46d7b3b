//! The client's channel on stdin and stdout. When both are pipes or
//! sockets — as when a desktop client spawns the gateway (Node's
//! `child_process` makes a socket pair) — they are read and written
//! without blocking, on the runtime's own event loop. tokio's `stdin` and
//! `stdout` hand every read and write to a blocking thread and back, two
//! thread switches per message; on a pipe or a socket they are not needed.
//! Anything else (a terminal, a file) uses tokio's — and so does every
//! platform without unix pipes.

#[cfg(all(unix, not(askgate_portable)))]
mod asks;
#[cfg(all(unix, not(askgate_portable)))]
mod express;
#[cfg(all(unix, not(askgate_portable)))]
mod handed;
#[cfg(all(unix, not(askgate_portable)))]
pub(crate) mod screen;

use rmcp::ServiceExt;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ServeError;
use crate::proxy::Gateway;

/// What the gateway reads the client's messages from.
pub(crate) type Reader = Box<dyn AsyncRead + Send + Unpin>;
/// What the gateway writes its messages to.
pub(crate) type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// Stdin and stdout, as pipes on the event loop when they are pipes.
#[cfg(all(unix, not(askgate_portable)))]
pub(crate) fn channel() -> (Reader, Writer) {
    match pipes() {
        Ok((reader, writer)) => (Box::new(reader), Box::new(writer)),
        Err(why) => {
            tracing::debug!(%why, "stdin or stdout is not a pipe: using blocking reads and writes");
            blocking()
        }
    }
}

/// Stdin and stdout through tokio's blocking reads and writes.
#[cfg(any(not(unix), askgate_portable))]
pub(crate) fn channel() -> (Reader, Writer) {
    blocking()
}

fn blocking() -> (Reader, Writer) {
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}

/// Stdin and stdout, duplicated, read and written without blocking (an
/// error when either is neither a pipe nor a socket). A socket is what
/// Node's `child_process` gives a child (a socket pair), so desktop clients
/// built on Node get this too. Both are checked before either is made
/// non-blocking: a non-blocking stdin left behind would fail tokio's own
/// reads of it with "Resource temporarily unavailable".
#[cfg(all(unix, not(askgate_portable)))]
pub(crate) fn pipes() -> std::io::Result<(Incoming, crate::lines::Sink)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    use tokio::net::unix::pipe;
    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let mut sockets = [false; 2];
    for (at, (name, file)) in [("stdin", &stdin), ("stdout", &stdout)]
        .into_iter()
        .enumerate()
    {
        let kind = file.metadata()?.file_type();
        if !kind.is_fifo() && !kind.is_socket() {
            return Err(std::io::Error::other(format!("{name} is not a pipe")));
        }
        sockets[at] = kind.is_socket();
    }
    let socket = |file: std::fs::File| -> std::io::Result<tokio::net::UnixStream> {
        let socket = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
        socket.set_nonblocking(true)?;
        tokio::net::UnixStream::from_std(socket)
    };
    let reader = if sockets[0] {
        Incoming::Socket(socket(stdin)?)
    } else {
        Incoming::Pipe(pipe::Receiver::from_file(stdin)?)
    };
    let writer = if sockets[1] {
        crate::lines::Sink::Socket(socket(stdout)?)
    } else {
        crate::lines::Sink::Pipe(pipe::Sender::from_file(stdout)?)
    };
    Ok((reader, writer))
}

/// Stdin through tokio's blocking reads, and stdout (a file, a terminal)
/// written with blocking writes: for anything that is not a pipe or a
/// socket. Neither is made non-blocking.
#[cfg(all(unix, not(askgate_portable)))]
fn blocking_ends() -> std::io::Result<(Incoming, crate::lines::Sink)> {
    use std::os::fd::AsFd;
    let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    Ok((
        Incoming::Blocking(tokio::io::stdin()),
        crate::lines::Sink::Blocking(stdout),
    ))
}

/// The client's stdin: a pipe or a socket read without blocking, or
/// anything else through tokio's blocking reads.
#[cfg(all(unix, not(askgate_portable)))]
pub(crate) enum Incoming {
    /// A FIFO.
    Pipe(tokio::net::unix::pipe::Receiver),
    /// A socket.
    Socket(tokio::net::UnixStream),
    /// Anything else (a terminal, a file).
    Blocking(tokio::io::Stdin),
}

#[cfg(all(unix, not(askgate_portable)))]
impl AsyncRead for Incoming {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Incoming::Pipe(pipe) => std::pin::Pin::new(pipe).poll_read(cx, buf),
            Incoming::Socket(socket) => std::pin::Pin::new(socket).poll_read(cx, buf),
            Incoming::Blocking(stdin) => std::pin::Pin::new(stdin).poll_read(cx, buf),
        }
    }
}

/// Serve one client on stdin and stdout until it goes away. Every line
/// is screened first (see [`screen`]: a request that does not fit is
/// answered with its id, one too long refused naming its length); with
/// `express_lane`, the lane takes the calls that need no person (see
/// [`crate::express`]); rmcp serves everything else. A line longer than
/// `longest` bytes is not read.
#[cfg(all(unix, not(askgate_portable)))]
pub(crate) async fn serve(
    gateway: Gateway,
    express_lane: bool,
    longest: usize,
) -> Result<(), ServeError> {
    let ends = pipes().or_else(|why| {
        tracing::debug!(%why, "stdin or stdout is not a pipe: blocking reads and writes");
        blocking_ends()
    });
    let (reader, writer) = match ends {
        Ok(ends) => ends,
        Err(why) => {
            tracing::debug!(%why, "stdin or stdout cannot be duplicated: through rmcp alone");
            return serve_through_rmcp(gateway).await;
        }
    };
    let out = crate::lines::Out::new(writer);
    let (handover, rest) = crate::lines::handover();
    // Calls handed to the handler end with the client's service, as rmcp's
    // own do: when it returns (after a grace for them to answer, see
    // `Handed::end`), or at once when it is dropped (a stop, past its own
    // grace).
    let ended = tokio_util::sync::CancellationToken::new();
    let _ended = ended.clone().drop_guard();
    // The client's peer, kept by the handler when it answers the
    // handshake: the tap hands calls to the handler once the client says
    // it is initialized.
    let peer = crate::proxy::ClientSlot::default();
    let gateway = gateway.keeping_client(std::sync::Arc::clone(&peer));
    let handed = std::sync::Arc::new(handed::Handed::new(
        gateway.clone(),
        std::sync::Arc::clone(&out),
        std::sync::Arc::clone(&peer),
        ended,
    ));
    let mut express = express::Express::new(
        gateway.clone(),
        std::sync::Arc::clone(&out),
        std::sync::Arc::clone(&handed),
    );
    let refuse = std::sync::Arc::clone(&out);
    let screened = std::sync::Arc::clone(&out);
    let routes = gateway.task_routes();
    let mut tap = tokio::spawn(async move {
        // A request too long to read is refused, naming its length, not
        // left unanswered.
        let refused = move |envelope: &crate::lines::Envelope, length: usize| {
            if let Some(id) = envelope.id().filter(|_| envelope.is_request()) {
                let message = format!(
                    "the request was {}, over the {} askgate reads in one message",
                    crate::lines::mib(length),
                    crate::lines::mib(longest)
                );
                let error = serde_json::json!({"code": -32600, "message": message});
                let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#);
                let _ = refuse.send(format!("{line}\n").as_bytes());
            }
            None
        };
        crate::lines::tap(
            reader,
            move |line| {
                if express_lane && express.offer(line) {
                    crate::lines::Offered::Taken
                } else if let Some(renamed) =
                    crate::legacy_tasks::inbound(line, |id| routes.is_legacy(id))
                {
                    // A 2025-11-25 task request: to askgate's own method,
                    // which rmcp hands over raw.
                    crate::lines::Offered::Instead(renamed)
                } else {
                    screen::screen(line, &screened)
                }
            },
            rest,
            "client",
            longest,
            refused,
        )
        .await
    });
    // 2025-11-25's task fields, carried through rmcp, put back as the
    // client's revision writes them; askgate says it has them only here.
    gateway.writes_legacy_tasks();
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new(
        handover,
        crate::lines::OutWriter::restoring(std::sync::Arc::clone(&out)),
    )
    .with_max_line_length(longest);
    let served = match gateway.clone().serve(transport).await {
        Ok(running) => {
            let quit = running.waiting();
            tokio::pin!(quit);
            tokio::select! {
                biased;
                quit = &mut quit => handed.end(quit.as_ref().ok()).await,
                // The client closed its side (the tap read its end): the
                // handed calls' grace runs beside rmcp's drain of its own
                // calls, not after it, so a hang-up ends within one grace.
                Ok(crate::lines::Tapped::PipeEnded) = &mut tap => {
                    let closed = rmcp::service::QuitReason::Closed;
                    let _ = tokio::join!(quit, handed.end(Some(&closed)));
                }
            }
            Ok(())
        }
        Err(e) => Err(e.into()),
    };
    tap.abort();
    gateway.abandon_express();
    out.drained().await;
    served
}

/// Serve one client on stdin and stdout until it goes away, every message
/// through rmcp (there is no express lane on this platform).
#[cfg(any(not(unix), askgate_portable))]
pub(crate) async fn serve(
    gateway: Gateway,
    _express_lane: bool,
    _longest: usize,
) -> Result<(), ServeError> {
    serve_through_rmcp(gateway).await
}

/// Serve one client on stdin and stdout through rmcp alone.
async fn serve_through_rmcp(gateway: Gateway) -> Result<(), ServeError> {
    let (reader, writer) = channel();
    serve_over(gateway, reader, writer).await
}

/// Serve one client over `reader` and `writer` through rmcp alone, until
/// it goes away.
pub(crate) async fn serve_over<R, W>(
    gateway: Gateway,
    reader: R,
    writer: W,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let running = gateway.serve((reader, writer)).await?;
    let _ = running.waiting().await;
    Ok(())
}
