//! The floor a stdio proxy stands on, for the benches that measure the
//! gateway (`scripts/bench-peers.sh`, `scripts/bench-stdio-cpu.sh`).
//!
//! `askgate-bare-relay COMMAND [ARGS...]` runs COMMAND and copies lines
//! between it and its own client, unread: what the client writes on stdin
//! goes to the child's stdin, what the child writes on stdout goes to
//! stdout, each line written as soon as it is whole. No runtime, no
//! parsing, nothing kept — one blocking thread each way. Any proxy on
//! stdio pays at least this (two pipes more per message, a process woken
//! for each), so the gateway's cost over direct is read against it.
//!
//! `askgate-bare-relay --on-tokio COMMAND [ARGS...]` copies the same lines
//! on a tokio runtime built as the gateway's on stdio is (one worker
//! thread; stdin, stdout and the child's pipes read and written without
//! blocking, on the runtime's event loop): what that way of doing I/O
//! costs, with nothing else the gateway does.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1).peekable();
    let on_tokio = args.next_if(|arg| arg == "--on-tokio").is_some();
    let Some(program) = args.next() else {
        eprintln!("usage: askgate-bare-relay [--on-tokio] COMMAND [ARGS...]");
        return ExitCode::FAILURE;
    };
    if on_tokio {
        return on_tokio::relay(program, args);
    }
    let mut child = match Command::new(&program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "askgate-bare-relay: cannot run {}: {e}",
                program.to_string_lossy()
            );
            return ExitCode::FAILURE;
        }
    };
    let (Some(mut to_child), Some(from_child)) = (child.stdin.take(), child.stdout.take()) else {
        eprintln!("askgate-bare-relay: the child's pipes were not made");
        return ExitCode::FAILURE;
    };
    let answers = std::thread::spawn(move || {
        copy_lines(BufReader::new(from_child), std::io::stdout().lock())
    });
    // The client's lines, until it closes stdin; then the child's stdin
    // closes too, and it ends.
    let _ = copy_lines(std::io::stdin().lock(), &mut to_child);
    drop(to_child);
    let _ = answers.join();
    match child.wait() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// Copy whole lines from `from` to `to` until `from` ends or `to` breaks.
fn copy_lines(mut from: impl BufRead, mut to: impl Write) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        if from.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        to.write_all(&line)?;
        to.flush()?;
    }
}

/// The same relay on a tokio runtime, as the gateway does its I/O on stdio.
#[cfg(unix)]
mod on_tokio {
    use std::ffi::OsString;
    use std::os::fd::AsFd;
    use std::process::{ExitCode, Stdio};

    use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
    use tokio::net::unix::pipe;

    /// Run `program` with `args` and copy lines between it and stdin and
    /// stdout (pipes: as the benches' clients give them).
    pub(super) fn relay(program: OsString, args: impl Iterator<Item = OsString>) -> ExitCode {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build();
        let outcome = runtime.map(|runtime| runtime.block_on(copy_both(program, args)));
        match outcome {
            Ok(Ok(true)) => ExitCode::SUCCESS,
            Ok(Ok(false)) => ExitCode::FAILURE,
            Ok(Err(e)) | Err(e) => {
                eprintln!("askgate-bare-relay: {e}");
                ExitCode::FAILURE
            }
        }
    }

    async fn copy_both(
        program: OsString,
        args: impl Iterator<Item = OsString>,
    ) -> std::io::Result<bool> {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let (Some(mut to_child), Some(from_child)) = (child.stdin.take(), child.stdout.take())
        else {
            return Err(std::io::Error::other("the child's pipes were not made"));
        };
        let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
        let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
        let stdin = pipe::Receiver::from_file(stdin)?;
        let mut stdout = pipe::Sender::from_file(stdout)?;
        let answers =
            tokio::spawn(async move { copy_lines(BufReader::new(from_child), &mut stdout).await });
        let asks = tokio::spawn(async move {
            let copied = copy_lines(BufReader::new(stdin), &mut to_child).await;
            drop(to_child);
            copied
        });
        let _ = asks.await;
        let _ = answers.await;
        Ok(child.wait().await?.success())
    }

    /// Copy whole lines from `from` to `to` until `from` ends or `to`
    /// breaks.
    async fn copy_lines(
        mut from: impl AsyncBufRead + Unpin,
        to: &mut (impl AsyncWrite + Unpin),
    ) -> std::io::Result<()> {
        let mut line = Vec::new();
        loop {
            line.clear();
            if from.read_until(b'\n', &mut line).await? == 0 {
                return Ok(());
            }
            to.write_all(&line).await?;
        }
    }
}

#[cfg(not(unix))]
mod on_tokio {
    use std::ffi::OsString;
    use std::process::ExitCode;

    pub(super) fn relay(_: OsString, _: impl Iterator<Item = OsString>) -> ExitCode {
        eprintln!("askgate-bare-relay: --on-tokio needs unix pipes");
        ExitCode::FAILURE
    }
}
