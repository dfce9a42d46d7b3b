//! Gateway benchmark: the echo tool of npm `@modelcontextprotocol/server-everything`
//! called by one rmcp client, side by side in one run, through
//!
//! - `direct`: the server itself on stdio (the baseline);
//! - `askgate`: `askgate gateway --config` over stdio, echo ruled `read`
//!   (proceeds without asking, audited and ledgered as every call is), so
//!   it takes the express lane;
//! - `askgate-rmcp`: the same with `express_lane = false`: every message
//!   through rmcp (what the lane saves);
//! - `supergateway`: npm `supergateway --stateful`, Streamable HTTP;
//! - `mcp-proxy`: npm `mcp-proxy`, Streamable HTTP.
//!
//! Each is warmed up, then called at 1 and at 10 requests in flight (10
//! tasks sharing one connection): calls/s, p50 and p99. Rounds of every
//! case are interleaved, so load from the rest of the machine hits every
//! peer alike. Then the gateway's resident memory, started on a store
//! holding 10,000 pending asks.
//!
//! `scripts/bench-gateway.sh` installs the pinned npm packages, builds
//! askgate in release and runs this with the environment set:
//!
//! - `ASKGATE_BENCH_EVERYTHING`: the `mcp-server-everything` command;
//! - `ASKGATE_BENCH_SUPERGATEWAY`, `ASKGATE_BENCH_MCP_PROXY`: the peers;
//! - `ASKGATE_BENCH_ASKGATE`: the gateway binary (default: this build's);
//! - `ASKGATE_BENCH_CALLS`: calls per case (default 2,000);
//! - `ASKGATE_BENCH_DIR`: where stores, configs and logs go (default: a
//!   temp dir).
//!
//! Words after `--` pick what runs: `direct`, `askgate`, `askgate-rmcp`,
//! `supergateway`,
//! `mcp-proxy`, `pending` (the memory case); none picks everything. A peer
//! whose command is missing is skipped with a notice. Nothing here is a
//! pass/fail test.

// A bench binary reports on stdout, and its items need no docs.
#![allow(clippy::print_stdout, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use askgate_store::{NewAsk, Store};
use jiff::Timestamp;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::json;

const ROUNDS: usize = 5;
const WARMUP: usize = 200;
const PENDING: usize = 10_000;
const IN_FLIGHT: [usize; 2] = [1, 10];
const MESSAGE: &str = "askgate bench";

#[tokio::main]
async fn main() {
    let picked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let runs = |name: &str| picked.is_empty() || picked.iter().any(|p| p == name);
    let calls: usize = std::env::var("ASKGATE_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    // A given dir is kept, for its logs; a temp dir is removed at the end.
    let (dir, _scratch) = match std::env::var_os("ASKGATE_BENCH_DIR") {
        Some(dir) => (PathBuf::from(dir), None),
        None => {
            let dir =
                std::env::temp_dir().join(format!("askgate-gateway-bench-{}", std::process::id()));
            (dir.clone(), Some(Scratch(dir)))
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the bench dir");
    let Some(everything) = command("ASKGATE_BENCH_EVERYTHING") else {
        println!(
            "(ASKGATE_BENCH_EVERYTHING is not set or not found: nothing to measure; \
             run scripts/bench-gateway.sh)"
        );
        return;
    };
    let askgate = command("ASKGATE_BENCH_ASKGATE")
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_askgate")));

    let mut peers = Vec::new();
    if runs("direct") {
        peers.push(direct(&everything, &dir).await);
    }
    if runs("askgate") {
        peers.push(gateway(&askgate, &everything, &dir.join("askgate"), 0, Lane::On).await);
    }
    if runs("askgate-rmcp") {
        let dir = dir.join("askgate-rmcp");
        peers.push(gateway(&askgate, &everything, &dir, 0, Lane::Off).await);
    }
    if runs("supergateway") {
        match command("ASKGATE_BENCH_SUPERGATEWAY") {
            Some(path) => peers.push(super_gateway(&path, &everything, &dir).await),
            None => println!("(ASKGATE_BENCH_SUPERGATEWAY not set or not found: skipped)"),
        }
    }
    if runs("mcp-proxy") {
        match command("ASKGATE_BENCH_MCP_PROXY") {
            Some(path) => peers.push(mcp_proxy(&path, &everything, &dir).await),
            None => println!("(ASKGATE_BENCH_MCP_PROXY not set or not found: skipped)"),
        }
    }

    if !peers.is_empty() {
        let measured = measure(&peers, calls).await;
        report(&peers, &measured);
    }
    drop(peers);
    if !runs("pending") {
        return;
    }
    match gateway_with_pending(&askgate, &everything, &dir.join("pending")).await {
        Some(kib) => {
            let mb = kib as f64 / 1024.0;
            println!(
                "gateway RSS with {PENDING} pending asks in its store: {mb:.1} MB{}",
                verdict(mb <= 50.0, "<= 50 MB")
            );
        }
        None => println!("gateway RSS with {PENDING} pending asks: unknown (no /proc)"),
    }
}

/// Per peer: the samples at each in-flight level, and the CPU time its
/// process spent over them (ticks) and the context switches its threads
/// made, if known.
type Measured = Vec<([Sample; 2], Option<u64>, Option<u64>)>;

/// Warm every peer up, then `calls` calls per peer and in-flight level, in
/// interleaved rounds.
async fn measure(peers: &[Subject], calls: usize) -> Measured {
    for peer in peers {
        for in_flight in IN_FLIGHT {
            burst(peer, in_flight, WARMUP).await;
        }
    }
    let before: Vec<Option<u64>> = peers.iter().map(|p| p.pid.and_then(cpu_ticks)).collect();
    let switched: Vec<Option<u64>> = peers
        .iter()
        .map(|p| p.pid.and_then(context_switches))
        .collect();
    let mut samples: Vec<[Sample; 2]> = peers.iter().map(|_| Default::default()).collect();
    for round in 0..ROUNDS {
        for (slot, in_flight) in IN_FLIGHT.into_iter().enumerate() {
            // Each round starts with another peer, so none is always first.
            for i in 0..peers.len() {
                let which = (i + round) % peers.len();
                let sample = burst(&peers[which], in_flight, calls / ROUNDS).await;
                samples[which][slot].add(sample);
            }
        }
    }
    samples
        .into_iter()
        .zip(peers.iter().zip(before.into_iter().zip(switched)))
        .map(|(samples, (peer, (before, switched)))| {
            let after = peer.pid.and_then(cpu_ticks);
            let switched_after = peer.pid.and_then(context_switches);
            (
                samples,
                before.zip(after).map(|(b, a)| a.saturating_sub(b)),
                switched
                    .zip(switched_after)
                    .map(|(b, a)| a.saturating_sub(b)),
            )
        })
        .collect()
}

/// The table, then the figures the targets are about.
fn report(peers: &[Subject], measured: &Measured) {
    println!(
        "{:<13} | {:>9} | {:>8} | {:>9} | {:>9} | {:>9} | {:>8} | {:>8}",
        "peer", "in flight", "calls/s", "p50", "p99", "RSS", "CPU/call", "cs/call"
    );
    for (peer, (samples, ticks, switches)) in peers.iter().zip(measured) {
        let rss = peer.pid.and_then(resident_kib).map_or_else(
            || "-".to_owned(),
            |kib| format!("{:.1} MB", kib as f64 / 1024.0),
        );
        let calls: usize = samples.iter().map(|s| s.latencies.len()).sum();
        // Linux counts CPU time in ticks of 1/100 s.
        let cpu = ticks.map_or_else(
            || "-".to_owned(),
            |ticks| format!("{:.0} µs", ticks as f64 * 10_000.0 / calls.max(1) as f64),
        );
        let switches = switches.map_or_else(
            || "-".to_owned(),
            |switches| format!("{:.1}", switches as f64 / calls.max(1) as f64),
        );
        for (in_flight, sample) in IN_FLIGHT.iter().zip(samples) {
            println!(
                "{:<13} | {in_flight:>9} | {:>8.0} | {:>9.2?} | {:>9.2?} | {rss:>9} | {cpu:>8} | {switches:>8}",
                peer.name,
                sample.rate(),
                sample.percentile(0.50),
                sample.percentile(0.99),
            );
        }
    }
    println!(
        "(RSS, CPU/call and cs/call (context switches of its live threads): the intermediary's \
         own process, server-everything's for direct; per call over both in-flight levels)"
    );
    let find = |name: &str| peers.iter().position(|p| p.name == name);
    if let (Some(direct), Some(gate)) = (find("direct"), find("askgate")) {
        for (slot, in_flight) in IN_FLIGHT.iter().enumerate() {
            let added = measured[gate].0[slot].percentile(0.50).as_secs_f64()
                - measured[direct].0[slot].percentile(0.50).as_secs_f64();
            println!(
                "askgate - direct, p50 at {in_flight:>2} in flight: {:+.0} µs{}",
                added * 1e6,
                if *in_flight == 1 {
                    verdict(added * 1e6 <= 100.0, "<= 100 µs")
                } else {
                    String::new()
                }
            );
        }
    }
    if let (Some(lane), Some(rmcp)) = (find("askgate"), find("askgate-rmcp")) {
        let p50 = |at: usize| measured[at].0[0].percentile(0.50).as_secs_f64() * 1e6;
        let rate = |at: usize| measured[at].0[1].rate();
        println!(
            "askgate with / without the express lane: p50 at 1 in flight {:.0} / {:.0} µs; \
             calls/s at 10 in flight {:.2}x",
            p50(lane),
            p50(rmcp),
            rate(lane) / rate(rmcp)
        );
    }
    if let (Some(gate), Some(peer)) = (find("askgate"), find("supergateway")) {
        let ratio = measured[gate].0[1].rate() / measured[peer].0[1].rate();
        println!(
            "askgate / supergateway, calls/s at 10 in flight: {ratio:.2}x{}",
            verdict(ratio >= 5.0, ">= 5x")
        );
    }
}

/// The path named by `var`, if set and present (a bare name is looked up
/// on PATH).
fn command(var: &str) -> Option<PathBuf> {
    let value = PathBuf::from(std::env::var_os(var)?);
    if value.components().count() > 1 {
        return value.exists().then_some(value);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(&value))
        .find(|path| path.exists())
}

fn verdict(met: bool, target: &str) -> String {
    format!(
        " (target {target}: {})",
        if met { "met" } else { "NOT met" }
    )
}

/// A directory removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One connected peer: its client, the echo tool's name there, and its
/// process group (killed when dropped).
struct Subject {
    name: &'static str,
    tool: String,
    client: RunningService<RoleClient, ClientConfig>,
    /// The process whose memory and CPU time are reported: the
    /// intermediary (not server-everything behind it), or the server when
    /// direct.
    pid: Option<u32>,
    _group: Group,
}

/// A process group, ended with SIGTERM when dropped (the peers start
/// server-everything as their child; HTTP peers do not end on EOF).
struct Group(Option<u32>);

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
fn client() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("askgate-bench", "1.0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
}

/// A command in a process group of its own.
fn spawnable(program: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command.process_group(0);
    command
}

fn log(path: PathBuf) -> std::fs::File {
    std::fs::File::create(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()))
}

/// A stdio peer started by `command`, its stderr to `log`.
async fn stdio(
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

async fn direct(everything: &Path, dir: &Path) -> Subject {
    let mut command = spawnable(everything);
    command.arg("stdio");
    stdio("direct", "echo", command, log(dir.join("direct.log"))).await
}

/// `askgate gateway --config` in `dir`: server-everything as `everything`,
/// echo a `read`; the store (`dir/askgate.db`) filled with `pending` asks
/// first.
/// Whether the gateway's express lane is on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lane {
    On,
    Off,
}

async fn gateway(
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
    stdio(name, "everything__echo", command, log).await
}

/// Park `count` pending asks in the store at `url`, 16 at a time.
async fn fill(url: &str, count: usize) {
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
async fn http(
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

async fn super_gateway(supergateway: &Path, everything: &Path, dir: &Path) -> Subject {
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

async fn mcp_proxy(proxy: &Path, everything: &Path, dir: &Path) -> Subject {
    let port = free_port();
    let mut command = spawnable(proxy);
    command
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--server", "stream", "--"])
        .arg(everything)
        .arg("stdio");
    http("mcp-proxy", command, port, log(dir.join("mcp-proxy.log"))).await
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// The gateway on a store holding `PENDING` pending asks, after a few
/// calls: its resident memory in KiB.
async fn gateway_with_pending(askgate: &Path, everything: &Path, dir: &Path) -> Option<u64> {
    let subject = gateway(askgate, everything, dir, PENDING, Lane::On).await;
    subject
        .client
        .list_all_tools()
        .await
        .expect("the gateway lists tools");
    burst(&subject, 10, 100).await;
    subject.pid.and_then(resident_kib)
}

#[derive(Default)]
struct Sample {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Sample {
    fn add(&mut self, other: Sample) {
        self.latencies.extend(other.latencies);
        self.elapsed += other.elapsed;
    }

    fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(index).copied().unwrap_or_default()
    }
}

/// `calls` echo calls, `in_flight` at a time over the one connection.
async fn burst(subject: &Subject, in_flight: usize, calls: usize) -> Sample {
    let started = Instant::now();
    let tasks: Vec<_> = (0..in_flight)
        .map(|task| {
            let peer: Peer<RoleClient> = subject.client.peer().clone();
            let tool = subject.tool.clone();
            let name = subject.name;
            let share = calls / in_flight + usize::from(task < calls % in_flight);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(share);
                for _ in 0..share {
                    let mut params = CallToolRequestParams::new(tool.clone());
                    params.arguments = json!({"message": MESSAGE}).as_object().cloned();
                    let t = Instant::now();
                    let result = peer
                        .call_tool(params)
                        .await
                        .unwrap_or_else(|e| panic!("{name}: echo fails: {e}"));
                    latencies.push(t.elapsed());
                    let echoed = result
                        .content
                        .first()
                        .and_then(|c| c.as_text())
                        .is_some_and(|t| t.text.contains(MESSAGE));
                    assert!(
                        echoed && result.is_error != Some(true),
                        "{name}: echo did not echo: {result:?}"
                    );
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(calls);
    for task in tasks {
        latencies.extend(task.await.expect("joins"));
    }
    Sample {
        latencies,
        elapsed: started.elapsed(),
    }
}

/// A process's CPU time so far (user + system, all its threads) in ticks
/// of 1/100 s (Linux), if known.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces) in
    // parentheses: state is the 3rd field, utime the 14th, stime the 15th.
    let mut fields = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// The context switches (voluntary and not) of a process's live threads so
/// far (Linux), if known. Threads that ended are not counted.
fn context_switches(pid: u32) -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let Ok(status) = std::fs::read_to_string(task.ok()?.path().join("status")) else {
            continue;
        };
        total += status
            .lines()
            .filter_map(|line| {
                line.strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            })
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .sum::<u64>();
    }
    Some(total)
}

/// A process's resident memory in KiB (Linux), if known.
fn resident_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
