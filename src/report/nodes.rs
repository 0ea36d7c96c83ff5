//! The cluster part of a report: a row per node (requests, ok, rate, p50/p99, throttled and
//! redirected answers) beside the totals, the windows of unavailability a failover left,
//! and rate-limit throttling; shared by the text and verbose renderers (the JSON report
//! carries the same rows as `nodes` and `windows`).

use std::io::{self, Write};

use serde::Serialize;

use super::{Percentiles, fmt_ms, per_s, ratio};
use crate::stats::Stats;

#[derive(Clone, Debug, Serialize)]
pub struct NodeSummary {
    pub node: usize,
    pub addr: String,
    /// What the node was before the run (`active`, `standby`, ...).
    pub role: String,
    pub requests: u64,
    pub ok: u64,
    pub rps: f64,
    pub success_ratio: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub throttled: u64,
    pub redirects: u64,
    /// `--follow-redirects`: this node's redirects followed, and the requests it answered
    /// after another node's redirect.
    pub followed: u64,
    pub hops: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct WindowSummary {
    /// Seconds from the start of the measured run to the first failed request.
    pub start_s: f64,
    /// To the first success after it (null: none before the run ended).
    pub end_s: Option<f64>,
    pub length_s: Option<f64>,
    /// Requests that failed in the window.
    pub failed: u64,
    /// The node that answered the first success after it.
    pub recovered_on: Option<String>,
}

pub fn nodes(stats: &Stats) -> Vec<NodeSummary> {
    stats
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let p = Percentiles::of(&n.latency);
            NodeSummary {
                node: i,
                addr: n.addr.clone(),
                role: n.role.clone(),
                requests: n.requests,
                ok: n.ok,
                rps: per_s(n.requests, n.elapsed_s),
                success_ratio: ratio(n.ok, n.requests),
                p50_ms: p.p50,
                p99_ms: p.p99,
                throttled: n.throttled,
                redirects: n.redirects,
                followed: n.followed,
                hops: n.hops,
            }
        })
        .collect()
}

pub fn windows(stats: &Stats) -> Vec<WindowSummary> {
    stats
        .windows
        .iter()
        .map(|w| WindowSummary {
            start_s: w.start_s,
            end_s: w.end_s,
            length_s: w.length_s(),
            failed: w.failed,
            recovered_on: w
                .node_after
                .and_then(|n| stats.nodes.get(n))
                .map(|n| n.addr.clone()),
        })
        .collect()
}

/// The layouts borrowed from ab and vault-benchmark have no place for a cluster, nor for a
/// schedule that was not kept: with several nodes, the per-node table and the windows follow
/// their own lines, and so does the warning of a schedule not kept (a single target's report
/// that kept its schedule stays line for line the peer's).
pub fn write_after_peer_layout(s: &super::Summary, o: &mut dyn Write) -> io::Result<()> {
    if let Some(w) = &s.schedule_not_kept {
        writeln!(o, "WARNING: {w}.")?;
    }
    if s.nodes.is_empty() {
        return Ok(());
    }
    write(s, o)
}

/// Per node, from its own telemetry (the "Server" section): the requests it served itself
/// and those it forwarded to the active node. Empty when no node was sampled.
fn served_by_node(s: &super::Summary) -> Vec<(String, u64, u64)> {
    let Some(server) = &s.server else {
        return Vec::new();
    };
    server
        .nodes
        .iter()
        .filter_map(|n| {
            let (h, f) = (n.handled?, n.forwarded?);
            Some((n.node.clone(), h.saturating_sub(f), f))
        })
        .collect()
}

/// The per-node table and the windows, after the totals; with the nodes' own counts of
/// what they served and forwarded when they were sampled.
pub fn write(s: &super::Summary, o: &mut dyn Write) -> io::Result<()> {
    if !s.nodes.is_empty() {
        writeln!(o)?;
        let served = served_by_node(s);
        writeln!(
            o,
            "{:<5} {:<26} {:<10} {:>9} {:>9} {:>11} {:>10} {:>10} {:>9} {:>9}{}",
            "node",
            "address",
            "role",
            "requests",
            "ok",
            "rate",
            "p50",
            "p99",
            "throttled",
            "307",
            if served.is_empty() {
                ""
            } else {
                "    served forwarded"
            }
        )?;
        for n in &s.nodes {
            let own = served
                .iter()
                .find(|(a, ..)| *a == n.addr)
                .map_or(String::new(), |(_, h, f)| format!(" {h:>9} {f:>9}"));
            writeln!(
                o,
                "{:<5} {:<26} {:<10} {:>9} {:>9} {:>11.2} {:>10} {:>10} {:>9} {:>9}{own}",
                n.node,
                n.addr,
                n.role,
                n.requests,
                n.ok,
                n.rps,
                fmt_ms(n.p50_ms),
                fmt_ms(n.p99_ms),
                n.throttled,
                n.redirects
            )?;
        }
    }
    for w in &s.windows {
        match (w.end_s, w.length_s) {
            (Some(end), Some(len)) => writeln!(
                o,
                "Unavailable {:.3}s: from {:.3}s to {:.3}s, {} failed, then answered by {}",
                len,
                w.start_s,
                end,
                super::plural(w.failed, "request", "requests"),
                w.recovered_on.as_deref().unwrap_or("?")
            )?,
            _ => writeln!(
                o,
                "Unavailable from {:.3}s to the end of the run, {} failed",
                w.start_s,
                super::plural(w.failed, "request", "requests")
            )?,
        }
    }
    if s.throttled > 0 {
        writeln!(
            o,
            "Throttled (429 from a rate-limit quota, not counted as errors): {}, Retry-After up to {}s{}",
            s.throttled,
            s.retry_after_s,
            if s.ratelimit_limit > 0 {
                format!(", X-Ratelimit-Limit {}", s.ratelimit_limit)
            } else {
                String::new()
            }
        )?;
    }
    super::staleness::write(s, o)?;
    if s.redirects > 0 {
        writeln!(o, "Redirected (307 from a standby): {}", s.redirects)?;
    }
    if s.followed > 0 {
        // (--follow-redirects: the requests' latency includes their hops)
        writeln!(o, "Redirects followed: {}", s.followed)?;
        for n in s.nodes.iter().filter(|n| n.followed + n.hops > 0) {
            writeln!(
                o,
                "  node {} {}: {} redirects followed, {} answers after a redirect",
                n.node, n.addr, n.followed, n.hops
            )?;
        }
    }
    Ok(())
}
