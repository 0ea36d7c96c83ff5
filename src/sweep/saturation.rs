//! The resource that gave out first at a sweep's knee (`server_stats::verdict`), from its
//! steps' server samples and vblast's own CPU: which step is the knee, and each step's
//! figures as the verdict reads them. It reads each step as its load and its summary, in
//! the order measured, so that it needs nothing of the sweep file's types.

use crate::report::Summary;
use crate::server_stats::verdict::{self, LoadEvidence, Saturated};

use super::search::End;

/// One measured step as the verdict reads it: its load and its summary.
pub type StepSeen<'a> = (u64, &'a Summary);

/// The step the verdict is read at: the first that broke the objective, else the highest.
fn knee(steps: &[StepSeen], end: Option<End>) -> Option<usize> {
    let at = |load: u64| steps.iter().position(|s| s.0 == load);
    let highest = || (0..steps.len()).max_by_key(|&i| steps[i].0);
    match end {
        Some(End::Edge { fail, .. } | End::Broken { fail, .. }) => at(fail).or_else(highest),
        Some(End::FirstFailed { load } | End::FirstUnclear { load }) => at(load).or_else(highest),
        Some(End::AllPassed { .. }) | None => highest(),
    }
}

/// One step's figures: the busiest node's, and vblast's own from the first node's samples.
fn evidence(load: u64, s: &Summary) -> LoadEvidence {
    let server = s.server.as_ref();
    let nodes = server.map(|v| v.nodes.as_slice()).unwrap_or_default();
    let busiest = nodes.iter().max_by_key(|n| n.handled.unwrap_or(0));
    let first = nodes.first();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    LoadEvidence {
        load,
        achieved: s.rps,
        cpu_cores: busiest.and_then(|n| n.cpu_cores_mean),
        cpu_wait_cores: busiest.and_then(|n| n.cpu_wait_cores_mean),
        cores: busiest.and_then(|n| n.cores),
        quota_cores: busiest.and_then(|n| n.quota_cores),
        throttled_s_per_s: busiest.and_then(|n| n.throttled_s_per_s_mean),
        storage_ms: busiest.and_then(|n| n.storage_ms_per_request),
        barrier_ms: busiest.and_then(|n| n.barrier_ms_per_request),
        handle_ms: busiest.and_then(|n| n.handle_ms),
        in_flight: busiest.and_then(|n| n.in_flight_mean),
        // Worker processes' CPU is not vblast's own process's: no client figure then.
        client_cpu_cores: first
            .and_then(|n| n.client_cpu_cores_mean)
            .filter(|_| s.run.processes <= 1),
        client_wait_cores: first.and_then(|n| n.client_wait_cores_mean),
        client_cores: (s.run.threads as f64).min(cores).max(1.0),
        io_blocked: most(nodes, |n| n.io_blocked_threads_mean),
        blkio_s_per_s: most(nodes, |n| n.blkio_s_per_s_mean),
        write_bytes_per_s: most(nodes, |n| n.raft.as_ref()?.write_bytes_per_s_mean),
        // Only the leader commits: the most of any node's is its.
        raft_commit_ms: most(nodes, |n| n.raft.as_ref()?.commit_ms),
        fsm_pending: most(nodes, |n| n.raft.as_ref()?.fsm_pending_peak),
    }
}

/// The most of any node's figure `f`.
fn most(
    nodes: &[crate::server_stats::summary::ServerNodeSummary],
    f: impl Fn(&crate::server_stats::summary::ServerNodeSummary) -> Option<f64>,
) -> Option<f64> {
    nodes.iter().filter_map(f).reduce(f64::max)
}

/// What gave out first; None when no step was sampled on the server.
pub fn saturated(steps: &[StepSeen], end: Option<End>) -> Option<Saturated> {
    if steps.iter().all(|s| s.1.server.is_none()) {
        return None;
    }
    let evidence: Vec<LoadEvidence> = steps.iter().map(|&(l, s)| evidence(l, s)).collect();
    verdict::saturated(&evidence, knee(steps, end)?)
}

/// The footer's line: "saturated first at 2400 req/s: server CPU (...)"; `unit` is the
/// sweep's ("req/s", "connections").
pub fn line(steps: &[StepSeen], end: Option<End>, unit: &str) -> Option<String> {
    let s = saturated(steps, end)?;
    let what = match s.resource {
        Some(verdict::Resource::ServerCpu) => "server CPU",
        Some(verdict::Resource::CpuQuota) => "CPU (quota)",
        Some(verdict::Resource::Storage) => "storage",
        Some(verdict::Resource::InFlight) => "requests in flight",
        Some(verdict::Resource::Client) => "the client (vblast itself)",
        Some(verdict::Resource::Disk) => "disk",
        Some(verdict::Resource::RaftCommit) => "raft commit",
        None => "undetermined",
    };
    Some(format!(
        "Saturated first at {} {}: {what} ({})",
        s.load, unit, s.figures
    ))
}
