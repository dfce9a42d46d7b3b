//! An upstream run as a child process on stdio: its pipes shared by rmcp
//! and the express lane (see [`super::lines`]), and its stop.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};

use super::express::Lane;
use super::lines::{self, Handover, Out, OutWriter};
use super::relay::Inflight;

/// How long a stopping child is given after its stdin closes before it is
/// sent SIGTERM, and again after that before it is killed: together within
/// the gateway's wait for each upstream to close
/// ([`crate::stopping::CLOSING`]).
const GRACE: Duration = Duration::from_secs(2);

/// rmcp's transport to a child process, beside the express lane.
pub(crate) struct ChildTransport {
    rmcp: AsyncRwTransport<RoleClient, Handover, OutWriter>,
    out: Arc<Out>,
    child: Option<Child>,
}

/// Start `command` (its stderr the gateway's, or logged line by line: see
/// [`crate::upstream_stderr`]): rmcp's transport to it, and its express
/// lane. Lines the lane does not take reach rmcp; one longer than
/// `longest` bytes is not read (an answer's call ends with an error).
///
/// # Errors
/// It did not start, or its pipes could not be set up.
pub(crate) fn spawn(
    mut command: Command,
    peer: &str,
    inflight: Inflight,
    longest: usize,
) -> std::io::Result<(ChildTransport, Arc<Lane>)> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(crate::upstream_stderr::stdio())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    // Piped only when its lines are logged; the task ends with the pipe.
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(crate::upstream_stderr::log(stderr, peer.to_owned()));
    }
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other(
            "the child's stdin or stdout is missing",
        ));
    };
    let writer = pipe::Sender::from_owned_fd(stdin.into_owned_fd()?)?;
    let reader = pipe::Receiver::from_owned_fd(stdout.into_owned_fd()?)?;
    let out = Out::new(writer);
    let lane = Lane::new(Arc::clone(&out), inflight);
    let (handover, rest) = lines::handover();
    let tapped = Arc::clone(&lane);
    let peer = peer.to_owned();
    tokio::spawn(async move {
        let offer = Arc::clone(&tapped);
        let answer_for = |envelope: &lines::Envelope, length: usize| {
            // An answer too long to carry: its call is answered with an
            // error in its place, not left waiting.
            let id = envelope.id().filter(|_| envelope.is_answer())?;
            let message = format!(
                "the server's answer was {}, over the {} askgate carries in one message: the \
                 call ran, and its answer is lost",
                lines::mib(length),
                lines::mib(longest)
            );
            let error = serde_json::json!({"code": -32603, "message": message});
            Some(format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#).into_bytes())
        };
        lines::tap(
            reader,
            move |line| {
                if offer.offer(line) {
                    lines::Offered::Taken
                } else if let Some(stowed) = crate::legacy_tasks::stow_answer(line) {
                    // 2025-11-25's task fields, where rmcp keeps them.
                    lines::Offered::Instead(stowed)
                } else {
                    lines::Offered::Passed
                }
            },
            rest,
            &peer,
            longest,
            answer_for,
        )
        .await;
        tapped.gone();
    });
    let transport = ChildTransport {
        rmcp: AsyncRwTransport::new(handover, OutWriter::new(Arc::clone(&out)))
            .with_max_line_length(longest),
        out,
        child: Some(child),
    };
    Ok((transport, lane))
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.rmcp.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.rmcp.receive()
    }

    /// Close the child's stdin — a stdio MCP server exits at its end — and
    /// give it [`GRACE`] to do so; then send it SIGTERM, as a supervisor
    /// would, and give it [`GRACE`] again; then kill it.
    async fn close(&mut self) -> Result<(), Self::Error> {
        self.rmcp.close().await?;
        self.out.close().await;
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if tokio::time::timeout(GRACE, child.wait()).await.is_ok() {
            return Ok(());
        }
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            tracing::debug!(
                pid = pid.as_raw_nonzero().get(),
                "an upstream did not exit at the end of its stdin; SIGTERM"
            );
            // Gone meanwhile: nothing to signal.
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            if tokio::time::timeout(GRACE, child.wait()).await.is_ok() {
                return Ok(());
            }
        }
        child.kill().await
    }
}
