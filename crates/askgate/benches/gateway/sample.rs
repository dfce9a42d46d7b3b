//! What one burst of calls measured, and what the kernel says of a process.

use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient};
use serde_json::json;

use super::MESSAGE;
use super::subjects::Subject;

#[derive(Default)]
pub(crate) struct Sample {
    pub(crate) latencies: Vec<Duration>,
    pub(crate) elapsed: Duration,
}

impl Sample {
    pub(crate) fn add(&mut self, other: Sample) {
        self.latencies.extend(other.latencies);
        self.elapsed += other.elapsed;
    }

    pub(crate) fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    pub(crate) fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(index).copied().unwrap_or_default()
    }
}

/// `calls` echo calls, `in_flight` at a time over the one connection.
pub(crate) async fn burst(subject: &Subject, in_flight: usize, calls: usize) -> Sample {
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
pub(crate) fn cpu_ticks(pid: u32) -> Option<u64> {
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
pub(crate) fn context_switches(pid: u32) -> Option<u64> {
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
pub(crate) fn resident_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
