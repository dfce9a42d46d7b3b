//! The peers measured side by side: how each is started and connected, and the
//! store of pending asks.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use askgate_store::{NewAsk, Store};
use jiff::Timestamp;
use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::json;

use super::PENDING;
use super::sample::{burst, resident_kib};

/// A directory removed when dropped.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One connected peer: its client, the echo tool's name there, and its
/// process group (killed when dropped).
pub(crate) struct Subject {
    pub(crate) name: &'static str,
    pub(crate) tool: String,
    pub(crate) client: RunningService<RoleClient, ClientConfig>,
    /// The process whose memory and CPU time are reported: the
    /// intermediary (not server-everything behind it), or the server when
    /// direct.
    pub(crate) pid: Option<u32>,
    pub(crate) _group: Group,
}

/// A process group, ended with SIGTERM when dropped (the peers start
/// server-everything as their child; HTTP peers do not end on EOF).
pub(crate) struct Group(Option<u32>);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", "--", &format!("-{pid}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The one client every peer is called with.
pub(crate) fn client() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("askgate-bench", "1.0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

/// A command in a process group of its own.
pub(crate) fn spawnable(program: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command.process_group(0);
    command
}

pub(crate) fn log(path: PathBuf) -> std::fs::File {
    std::fs::File::create(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()))
}

/// A stdio peer started by `command`, its stderr to `log`.
pub(crate) async fn stdio(
    name: &'static str,
    tool: &str,
    command: tokio::process::Command,
    log: std::fs::File,
) -> Subject {
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("{name} starts: {e}"));
    let pid = transport.id();
    let group = Group(pid);
    let client = client()
        .serve(transport)
        .await
        .unwrap_or_else(|e| panic!("{name} completes the handshake: {e}"));
    Subject {
        name,
        tool: tool.to_owned(),
        client,
        pid,
        _group: group,
    }
}

pub(crate) async fn direct(everything: &Path, dir: &Path) -> Subject {
    let mut command = spawnable(everything);
    command.arg("stdio");
    stdio("direct", "echo", command, log(dir.join("direct.log"))).await
}

/// `askgate gateway --config` in `dir`: server-everything as `everything`,
/// echo a `read`; the store (`dir/askgate.db`) filled with `pending` asks
/// first.
/// Whether the gateway's express lane is on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    On,
    Off,
}

pub(crate) async fn gateway(
    askgate: &Path,
    everything: &Path,
    dir: &Path,
    pending: usize,
    lane: Lane,
) -> Subject {
    std::fs::create_dir_all(dir).expect("the gateway's dir");
    let store = format!("sqlite://{}", dir.join("askgate.db").display());
    if pending > 0 {
        fill(&store, pending).await;
    }
    let config = dir.join("askgate.toml");
    std::fs::write(
        &config,
        format!(
            "store = {store:?}\nexpress_lane = {}\n\n\
             [[upstreams]]\nname = \"everything\"\ncommand = {:?}\nargs = [\"stdio\"]\n\n\
             [[rules]]\nserver = \"everything\"\ntool = \"echo\"\nrisk = \"read\"\n",
            lane == Lane::On,
            everything.display().to_string()
        ),
    )
    .expect("writes the config");
    let mut command = spawnable(askgate);
    command
        .args(["gateway", "--config"])
        .arg(&config)
        .env("ASKGATE_LOG", "warn");
    let log = log(dir.join("gateway.log"));
    let name = match lane {
        Lane::On => "askgate",
        Lane::Off => "askgate-rmcp",
    };
    stdio(name, "echo", command, log).await
}

/// Park `count` pending asks in the store at `url`, 16 at a time.
pub(crate) async fn fill(url: &str, count: usize) {
    let store = Store::open(url).await.expect("the store opens");
    let mut tasks = Vec::new();
    for task in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in (task..count).step_by(16) {
                let id = format!("pending-{i:05}");
                let ask = NewAsk {
                    resume_key: format!("tool:bench:{id}"),
                    call_key: None,
                    principal: "bench".into(),
                    request: json!({"kind": "form", "message": "Run deploy on prod?",
                        "requestedSchema": {"type": "object", "properties":
                            {"confirm": {"type": "boolean", "default": false}}}}),
                    server: Some("everything".into()),
                    tool: Some("echo".into()),
                    risk: Some("medium_write".into()),
                    created_at: Timestamp::from_second(1_800_000_000 + i as i64).expect("in range"),
                    expires_at: None,
                    id,
                    panel: None,
                };
                store.park(&ask).await.expect("parks");
            }
        }));
    }
    for task in tasks {
        task.await.expect("joins");
    }
    store.close().await;
}

/// A Streamable HTTP peer started by `command` on `port`, at `/mcp`.
pub(crate) async fn http(
    name: &'static str,
    mut command: tokio::process::Command,
    port: u16,
    log: std::fs::File,
) -> Subject {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("{name} starts: {e}"));
    let pid = child.id();
    let group = Group(pid);
    let deadline = Instant::now() + Duration::from_secs(60);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "{name} listens on {port} within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://127.0.0.1:{port}/mcp"));
    let client = client()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap_or_else(|e| panic!("{name} completes the handshake: {e}"));
    // Dropping the handle leaves the child running; `group` ends it.
    drop(child);
    Subject {
        name,
        tool: "echo".to_owned(),
        client,
        pid,
        _group: group,
    }
}

pub(crate) async fn super_gateway(supergateway: &Path, everything: &Path, dir: &Path) -> Subject {
    let port = free_port();
    let mut command = spawnable(supergateway);
    command
        .arg("--stdio")
        .arg(format!("{} stdio", shell_quote(everything)))
        .args(["--outputTransport", "streamableHttp", "--stateful"])
        .args(["--port", &port.to_string(), "--logLevel", "none"]);
    http(
        "supergateway",
        command,
        port,
        log(dir.join("supergateway.log")),
    )
    .await
}

pub(crate) async fn mcp_proxy(proxy: &Path, everything: &Path, dir: &Path) -> Subject {
    let port = free_port();
    let mut command = spawnable(proxy);
    command
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--server", "stream", "--"])
        .arg(everything)
        .arg("stdio");
    http("mcp-proxy", command, port, log(dir.join("mcp-proxy.log"))).await
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

pub(crate) fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// The gateway on a store holding `PENDING` pending asks, after a few
/// calls: its resident memory in KiB.
pub(crate) async fn gateway_with_pending(
    askgate: &Path,
    everything: &Path,
    dir: &Path,
) -> Option<u64> {
    let subject = gateway(askgate, everything, dir, PENDING, Lane::On).await;
    subject
        .client
        .list_all_tools()
        .await
        .expect("the gateway lists tools");
    burst(&subject, 10, 100).await;
    subject.pid.and_then(resident_kib)
}
