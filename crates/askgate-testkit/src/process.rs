//! Child processes whose stderr a test reads: each line kept in a
//! [`Seen`] log (and passed on to the test's stderr) for the test to wait
//! on.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Output, Stdio};

use tokio::io::{AsyncBufReadExt, AsyncRead};

use crate::wait::Seen;

/// A child process with its stderr read into [`Process::log`]; killed and
/// reaped when dropped.
#[derive(Debug)]
pub struct Process {
    child: Option<Child>,
    /// What it wrote to stderr so far, line by line.
    pub log: Seen<String>,
}

impl Process {
    /// Start `command` with stderr piped into the log (stdin and stdout as
    /// the command sets them).
    pub fn spawn(mut command: Command) -> Process {
        let mut child = command
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?} starts: {e}"));
        let log = Seen::default();
        keep_lines(child.stderr.take().expect("stderr is piped"), log.clone());
        Process {
            child: Some(child),
            log,
        }
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Wait for it to exit: its status, its stdout (when piped) and its
    /// stderr (from the log).
    pub fn finish(mut self) -> Output {
        let child = self.child.take().expect("not finished yet");
        let mut output = child.wait_with_output().expect("the process ends");
        // The reader thread has seen every line once the pipe closed, or
        // is about to: the log is complete enough to explain a failure.
        output.stderr = self.log.all().join("\n").into_bytes();
        output
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Read `stderr` into `log`, line by line, on a thread of its own until it
/// ends (so the writer never blocks on a full pipe).
pub fn keep_lines(stderr: impl Read + Send + 'static, log: Seen<String>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            log.push(line);
        }
    });
}

/// [`keep_lines`] for an async pipe (a tokio child's stderr), on a task.
pub fn keep_lines_async(stderr: impl AsyncRead + Unpin + Send + 'static, log: Seen<String>) {
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("{line}");
            log.push(line);
        }
    });
}

/// Kill process `pid` at once, as a crash would (the workspace forbids the
/// `unsafe` a signal call takes).
pub fn sigkill(pid: &str) {
    let killed = Command::new("kill")
        .args(["-9", pid])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "{pid} was killed");
}
