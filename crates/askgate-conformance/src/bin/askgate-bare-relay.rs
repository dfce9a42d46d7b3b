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

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: askgate-bare-relay COMMAND [ARGS...]");
        return ExitCode::FAILURE;
    };
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
