//! How a command fails: the exit code it ends with and the line it prints
//! on stderr (never an answer value, an argument or a token), and the
//! output helpers every command shares.

use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;

/// Exit code of every command: malformed input (a file, a flag), or a
/// store that cannot be opened or used.
pub(crate) const MALFORMED: u8 = 2;

/// A command that ends early: its exit code and what to tell the person.
#[derive(Debug)]
pub(crate) struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// End with `code`, saying `message`.
    pub(crate) fn new(code: u8, message: String) -> Self {
        Self { code, message }
    }

    /// End with [`MALFORMED`], saying `message`.
    pub(crate) fn malformed(message: impl std::fmt::Display) -> Self {
        Self::new(MALFORMED, message.to_string())
    }

    /// End a long-lived command (`gateway`, `tools`, `inbox`) that could
    /// not serve: exit code 1.
    pub(crate) fn stopped(message: impl std::fmt::Display) -> Self {
        Self::new(1, message.to_string())
    }

    /// Say why on stderr after `who` (`askgate`, `askgate gateway`), and
    /// give the exit code.
    pub(crate) fn exit(self, who: &str) -> ExitCode {
        askgate_inbox::say::error(&format!("{who}: {}", self.message));
        ExitCode::from(self.code)
    }
}

impl From<askgate_store::Error> for Failure {
    fn from(error: askgate_store::Error) -> Self {
        Self::malformed(error)
    }
}

/// Print `value` as pretty JSON on stdout.
pub(crate) fn print_json(value: &impl Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value).map_err(Failure::malformed)?;
    print_line(&text)
}

/// Print one line on stdout.
pub(crate) fn print_line(text: &str) -> Result<(), Failure> {
    writeln!(std::io::stdout().lock(), "{text}")
        .map_err(|e| Failure::malformed(format!("standard output: {e}")))
}

/// Run a command's `body` on a current-thread runtime, and end with its
/// exit code (or its failure's, said on stderr).
pub(crate) fn runtime<F, Fut>(body: F) -> ExitCode
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<u8, Failure>>,
{
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return Failure::malformed(format!("cannot start: {e}")).exit("askgate"),
    };
    match runtime.block_on(body()) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => failure.exit("askgate"),
    }
}

/// How many threads a long-lived command's runtime runs its tasks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workers {
    /// One (besides the thread that drives the command itself): the
    /// gateway on stdio, which serves one client. Measured against one a
    /// core with the Python SDK's client (docs/benchmarks.md, the
    /// twenty-fifth session): a confirmed call adds 1.32 ms against
    /// 1.56-1.61, as threads wake each other less; reads alike at one and
    /// at ten in flight.
    One,
    /// One a core (tokio's default): a listener serving many clients,
    /// where the second core makes about 10-20% more calls a second at ten
    /// in flight (the gateway benchmark, README "The gateway").
    PerCore,
}

/// Run a long-lived command (`askgate gateway`, `tools`, `inbox`) on a
/// multi-threaded runtime with `workers` until it ends; a failure is said
/// after `who` with exit code 1. `TOKIO_WORKER_THREADS`, when set, says
/// how many workers instead.
pub(crate) fn serve<Fut>(who: &str, workers: Workers, body: Fut) -> ExitCode
where
    Fut: std::future::Future<Output = Result<(), Failure>>,
{
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if workers == Workers::One && std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(1);
    }
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return Failure::stopped(format!("cannot start the runtime: {e}")).exit(who),
    };
    match runtime.block_on(body) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.exit(who),
    }
}
