//! vault-benchmark's JSON report (`-report_mode=json`): one line,
//! `{"target_addr": ..., "metrics": {NAME: {...}, "total": {...}}}`, each entry in the
//! layout of vegeta's metrics (durations in nanoseconds: `latencies` total, mean, 50th,
//! 90th, 95th, 99th, max, min; `bytes_in`, `bytes_out`; `duration`, `wait`; `requests`,
//! `rate`, `throughput`, `success` as a ratio; `status_codes`; `errors`), with vblast's
//! figures. Bytes, status codes and errors are the run's, given in `total` (and for a
//! single test). vegeta's `earliest`, `latest` and `end` timestamps are left out.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::{Percentiles, Summary};

#[derive(Serialize)]
struct Latencies {
    total: u64,
    mean: u64,
    #[serde(rename = "50th")]
    p50: u64,
    #[serde(rename = "90th")]
    p90: u64,
    #[serde(rename = "95th")]
    p95: u64,
    #[serde(rename = "99th")]
    p99: u64,
    max: u64,
    min: u64,
}

#[derive(Serialize)]
struct Bytes {
    total: u64,
    mean: f64,
}

#[derive(Serialize)]
struct VbMetrics {
    latencies: Latencies,
    bytes_in: Bytes,
    bytes_out: Bytes,
    duration: u64,
    wait: u64,
    requests: u64,
    rate: f64,
    throughput: f64,
    success: f64,
    status_codes: BTreeMap<String, u64>,
    errors: Vec<String>,
}

#[derive(Serialize)]
struct Report<'a> {
    target_addr: String,
    metrics: BTreeMap<String, VbMetrics>,
    /// Several nodes as one target (not in vault-benchmark's layout, which has no cluster
    /// results): a row per node and the windows of unavailability, as in vblast's JSON.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    nodes: &'a [super::nodes::NodeSummary],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    windows: &'a [super::nodes::WindowSummary],
}

fn ns(ms: f64) -> u64 {
    (ms * 1e6).round().max(0.0) as u64
}

fn metrics(
    s: &Summary,
    requests: u64,
    rate: f64,
    throughput: f64,
    l: &Percentiles,
    success: f64,
    run_wide: bool,
) -> VbMetrics {
    let mean = |n: u64| {
        if s.requests == 0 {
            0.0
        } else {
            n as f64 / s.requests as f64
        }
    };
    let (bytes_in, bytes_out, status_codes, errors) = if run_wide {
        let e = &s.errors;
        let mut codes: BTreeMap<String, u64> = s.status.clone();
        let no_response = e.connect + e.read + e.write + e.timeout;
        if no_response > 0 {
            codes.insert("0".into(), no_response);
        }
        (
            Bytes {
                total: s.bytes_received,
                mean: mean(s.bytes_received),
            },
            Bytes {
                total: s.bytes_sent,
                mean: mean(s.bytes_sent),
            },
            codes,
            s.error_messages.keys().cloned().collect(),
        )
    } else {
        let zero = || Bytes {
            total: 0,
            mean: 0.0,
        };
        (zero(), zero(), BTreeMap::new(), Vec::new())
    };
    VbMetrics {
        latencies: Latencies {
            total: ns(l.mean * l.count as f64),
            mean: ns(l.mean),
            p50: ns(l.p50),
            p90: ns(l.p90),
            p95: ns(l.p95),
            p99: ns(l.p99),
            max: ns(l.max),
            min: ns(l.min),
        },
        bytes_in,
        bytes_out,
        duration: ns(s.duration_s * 1000.0),
        wait: 0,
        requests,
        rate,
        throughput,
        success,
        status_codes,
        errors,
    }
}

/// Writes the JSON report, one line.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    let single = s.ops.len() == 1;
    let mut m = BTreeMap::new();
    for op in &s.ops {
        m.insert(
            op.name.clone(),
            metrics(
                s,
                op.requests,
                op.rps,
                op.throughput,
                &op.latency_ms,
                op.success_ratio,
                single,
            ),
        );
    }
    m.insert(
        "total".into(),
        metrics(
            s,
            s.requests,
            s.rps,
            s.throughput,
            &s.latency_ms,
            s.success_ratio,
            true,
        ),
    );
    serde_json::to_writer(
        &mut *o,
        &Report {
            target_addr: s.run.target.clone(),
            metrics: m,
            nodes: &s.nodes,
            windows: &s.windows,
        },
    )?;
    writeln!(o)
}
