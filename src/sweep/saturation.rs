//! The resource that gave out first at a sweep's knee (`server_stats::verdict`), from its
//! steps' server samples and vblast's own CPU: which step is the knee, and each step's
//! figures as the verdict reads them.

use crate::report::Summary;
use crate::server_stats::verdict::{self, LoadEvidence, Saturated};

use super::file::{Judged, Sweep};
use super::search::End;

/// The step the verdict is read at: the first that broke the objective, else the highest.
fn knee(sweep: &Sweep, end: Option<End>) -> Option<usize> {
    let at = |load: u64| sweep.steps.iter().position(|s| s.load == load);
    let highest = || (0..sweep.steps.len()).max_by_key(|&i| sweep.steps[i].load);
    match end {
        Some(End::Edge { fail, .. } | End::Broken { fail, .. }) => at(fail).or_else(highest),
        Some(End::FirstFailed { load }) => at(load).or_else(highest),
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
        storage_ms: busiest.and_then(|n| n.storage_ms_per_request),
        barrier_ms: busiest.and_then(|n| n.barrier_ms_per_request),
        in_flight: busiest.and_then(|n| n.in_flight_mean),
        // Worker processes' CPU is not vblast's own process's: no client figure then.
        client_cpu_cores: first
            .and_then(|n| n.client_cpu_cores_mean)
            .filter(|_| s.run.processes <= 1),
        client_wait_cores: first.and_then(|n| n.client_wait_cores_mean),
        client_cores: (s.run.threads as f64).min(cores).max(1.0),
    }
}

/// What gave out first; None when no step was sampled on the server.
pub fn saturated(sweep: &Sweep, judged: &[Judged], end: Option<End>) -> Option<Saturated> {
    if judged.iter().all(|j| j.summary.server.is_none()) {
        return None;
    }
    let steps: Vec<LoadEvidence> = sweep
        .steps
        .iter()
        .zip(judged)
        .map(|(s, j)| evidence(s.load, &j.summary))
        .collect();
    verdict::saturated(&steps, knee(sweep, end)?)
}

/// The footer's line: "saturated first at 2400 req/s: server CPU (...)".
pub fn line(sweep: &Sweep, judged: &[Judged], end: Option<End>) -> Option<String> {
    let s = saturated(sweep, judged, end)?;
    let what = match s.resource {
        Some(verdict::Resource::ServerCpu) => "server CPU",
        Some(verdict::Resource::Storage) => "storage",
        Some(verdict::Resource::InFlight) => "requests in flight",
        Some(verdict::Resource::Client) => "the client (vblast itself)",
        None => "undetermined",
    };
    Some(format!(
        "Saturated first at {} {}: {what} ({})",
        s.load,
        sweep.spec.unit(),
        s.figures
    ))
}
