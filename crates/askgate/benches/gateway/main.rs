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

use std::path::PathBuf;

mod sample;
mod subjects;

use sample::{Sample, burst, context_switches, cpu_ticks, resident_kib};
use subjects::{
    Lane, Scratch, Subject, direct, gateway, gateway_with_pending, mcp_proxy, super_gateway,
};

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
