//! The client's channel on stdin and stdout. When both are pipes — as when
//! a desktop client spawns the gateway — they are read and written
//! without blocking, on the runtime's own event loop. tokio's `stdin` and
//! `stdout` hand every read and write to a blocking thread and back, two
//! thread switches per message; on a pipe they are not needed. Anything
//! else (a terminal, a file, a socket) uses tokio's.

use std::os::fd::AsFd;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::unix::pipe;

/// What the gateway reads the client's messages from.
pub(crate) type Reader = Box<dyn AsyncRead + Send + Unpin>;
/// What the gateway writes its messages to.
pub(crate) type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// Stdin and stdout, as pipes on the event loop when they are pipes.
pub(crate) fn channel() -> (Reader, Writer) {
    match pipes() {
        Ok((reader, writer)) => (Box::new(reader), Box::new(writer)),
        Err(why) => {
            tracing::debug!(%why, "stdin or stdout is not a pipe: using blocking reads and writes");
            (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
        }
    }
}

/// Stdin and stdout, duplicated, as non-blocking pipes (an error when
/// either is not a pipe).
pub(crate) fn pipes() -> std::io::Result<(pipe::Receiver, pipe::Sender)> {
    let stdin = std::io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned()?;
    let reader = pipe::Receiver::from_file(std::fs::File::from(stdin))?;
    let writer = pipe::Sender::from_file(std::fs::File::from(stdout))?;
    Ok((reader, writer))
}
