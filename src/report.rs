//! One summary of a run, rendered as vault-benchmark-style terse text, JSON, or the
//! HdrHistogram percentile spectrum.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::stats::{Errors, Hist, Stats};

/// Latency figures in milliseconds.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl Percentiles {
    pub fn of(h: &Hist) -> Percentiles {
        let h = &h.0;
        if h.is_empty() {
            return Percentiles::default();
        }
        let q = |p: f64| ms(h.value_at_quantile(p));
        Percentiles {
            count: h.len(),
            min: ms(h.min()),
            mean: h.mean() / 1000.0,
            stdev: h.stdev() / 1000.0,
            p50: q(0.50),
            p75: q(0.75),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: ms(h.max()),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct OpSummary {
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    pub rps: f64,
    pub throughput: f64,
    pub success_ratio: f64,
    pub latency_ms: Percentiles,
    pub service_ms: Percentiles,
}

#[derive(Clone, Debug, Serialize)]
pub struct SecondSummary {
    pub second: u64,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// What the run was asked to do, for the report's header.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub target: String,
    pub operation: String,
    pub connections: u64,
    pub threads: usize,
    pub processes: usize,
    /// "closed" (each connection sends when its previous response is in) or "open" (-R).
    pub model: String,
    pub target_rate: Option<f64>,
    pub keepalive: bool,
    pub warmup_s: f64,
    /// Whether the run was stopped early (Ctrl-C).
    pub interrupted: bool,
}

/// The one summary every format renders.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub vblast_version: String,
    pub run: RunInfo,
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    pub duration_s: f64,
    pub rps: f64,
    pub throughput: f64,
    pub success_ratio: f64,
    /// "intended start" in the open model, "actual send" in the closed model.
    pub latency_measured_from: String,
    pub latency_ms: Percentiles,
    pub service_ms: Percentiles,
    pub connect_ms: Percentiles,
    pub tls_ms: Percentiles,
    pub ttfb_ms: Percentiles,
    pub status: BTreeMap<String, u64>,
    pub errors: Errors,
    pub error_messages: BTreeMap<String, u64>,
    pub late: u64,
    pub max_lag_ms: f64,
    pub connections_opened: u64,
    /// TLS handshakes that resumed a session (of tls_ms.count handshakes).
    pub tls_resumed: u64,
    pub server_closes: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub ops: Vec<OpSummary>,
    pub timeline: Vec<SecondSummary>,
    #[serde(skip)]
    pub latency_hist: Hist,
    #[serde(skip)]
    pub service_hist: Hist,
}

/// One row per second from the first to the last, seconds in which nothing completed
/// included (a stalled server shows as a gap of zeros, not as a missing row).
fn timeline(stats: &Stats) -> Vec<SecondSummary> {
    let seconds = stats.timeline.seconds();
    let Some(last) = seconds.last().map(|(i, _)| *i) else {
        return Vec::new();
    };
    let mut rows: Vec<SecondSummary> = (0..=last)
        .map(|second| SecondSummary {
            second,
            requests: 0,
            ok: 0,
            errors: 0,
            p50_ms: 0.0,
            p99_ms: 0.0,
        })
        .collect();
    for (i, s) in seconds {
        let row = &mut rows[i as usize];
        row.requests = s.requests;
        row.ok = s.ok;
        row.errors = s.errors;
        if !s.latency.is_empty() {
            row.p50_ms = ms(s.latency.0.value_at_quantile(0.5));
            row.p99_ms = ms(s.latency.0.value_at_quantile(0.99));
        }
    }
    rows
}

fn per_s(n: u64, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

fn ratio(ok: u64, all: u64) -> f64 {
    if all == 0 {
        0.0
    } else {
        ok as f64 / all as f64
    }
}

impl Summary {
    pub fn new(run: RunInfo, stats: &Stats, op_names: &[String]) -> Summary {
        let secs = stats.elapsed_s;
        let mut latency = Hist::default();
        let mut service = Hist::default();
        let ops: Vec<OpSummary> = stats
            .ops
            .iter()
            .enumerate()
            .map(|(i, o)| {
                latency.add(&o.latency);
                service.add(&o.service);
                OpSummary {
                    name: op_names.get(i).cloned().unwrap_or_else(|| format!("op{i}")),
                    requests: o.requests,
                    ok: o.ok,
                    rps: per_s(o.requests, secs),
                    throughput: per_s(o.ok, secs),
                    success_ratio: ratio(o.ok, o.requests),
                    latency_ms: Percentiles::of(&o.latency),
                    service_ms: Percentiles::of(&o.service),
                }
            })
            .collect();
        let requests = stats.requests();
        let ok = stats.ok();
        let open = run.model == "open";
        Summary {
            vblast_version: env!("CARGO_PKG_VERSION").to_string(),
            requests,
            ok,
            failed: requests - ok,
            duration_s: secs,
            rps: per_s(requests, secs),
            throughput: per_s(ok, secs),
            success_ratio: ratio(ok, requests),
            latency_measured_from: if open {
                "intended start"
            } else {
                "actual send"
            }
            .into(),
            latency_ms: Percentiles::of(&latency),
            service_ms: Percentiles::of(&service),
            connect_ms: Percentiles::of(&stats.connect),
            tls_ms: Percentiles::of(&stats.tls),
            ttfb_ms: Percentiles::of(&stats.ttfb),
            status: stats
                .status
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            errors: stats.errors,
            error_messages: stats.messages.clone(),
            late: stats.late,
            max_lag_ms: ms(stats.max_lag_us),
            connections_opened: stats.connections_opened,
            tls_resumed: stats.tls_resumed,
            server_closes: stats.server_closes,
            bytes_sent: stats.bytes_sent,
            bytes_received: stats.bytes_received,
            ops,
            timeline: timeline(stats),
            run,
            latency_hist: latency,
            service_hist: service,
        }
    }

    pub fn is_open(&self) -> bool {
        self.run.model == "open"
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// vault-benchmark's terse table, then status codes and errors.
    pub fn text(&self) -> String {
        let mut o = String::new();
        let r = &self.run;
        let model = match r.target_rate {
            Some(rate) => format!("open model, target {rate} req/s"),
            None => "closed model".to_string(),
        };
        let _ = writeln!(
            o,
            "Target: {}  ({} connections, {} threads{}, {}, {})",
            r.target,
            r.connections,
            r.threads,
            if r.processes > 1 {
                format!(" in {} processes", r.processes)
            } else {
                String::new()
            },
            if r.keepalive {
                "keep-alive"
            } else {
                "new connection per request"
            },
            model
        );
        if r.interrupted {
            let _ = writeln!(
                o,
                "Interrupted: the figures below cover the run up to the stop."
            );
        }
        let _ = writeln!(o);
        let open = self.is_open();
        let mut header = format!(
            "{:<14} {:>9} {:>11} {:>11} {:>10} {:>10} {:>10} {:>13}",
            "op", "count", "rate", "throughput", "mean", "95th%", "99th%", "successRatio"
        );
        if open {
            let _ = write!(header, "   {:>10} {:>10}", "svc 95th%", "svc 99th%");
        }
        let _ = writeln!(o, "{header}");
        let row = |o: &mut String,
                   name: &str,
                   n: u64,
                   rate: f64,
                   tput: f64,
                   l: &Percentiles,
                   s: &Percentiles,
                   sr: f64| {
            let _ = write!(
                o,
                "{:<14} {:>9} {:>11.2} {:>11.2} {:>10} {:>10} {:>10} {:>12.2}%",
                name,
                n,
                rate,
                tput,
                fmt_ms(l.mean),
                fmt_ms(l.p95),
                fmt_ms(l.p99),
                sr * 100.0
            );
            if open {
                let _ = write!(o, "   {:>10} {:>10}", fmt_ms(s.p95), fmt_ms(s.p99));
            }
            let _ = writeln!(o);
        };
        for op in &self.ops {
            row(
                &mut o,
                &op.name,
                op.requests,
                op.rps,
                op.throughput,
                &op.latency_ms,
                &op.service_ms,
                op.success_ratio,
            );
        }
        row(
            &mut o,
            "total",
            self.requests,
            self.rps,
            self.throughput,
            &self.latency_ms,
            &self.service_ms,
            self.success_ratio,
        );
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "Duration {:.2}s, {} requests, {} ok, {} failed.",
            self.duration_s, self.requests, self.ok, self.failed
        );
        if open {
            let _ = writeln!(
                o,
                "Latency is measured from each request's intended start (corrected for coordinated omission); svc columns are service time from the actual send (uncorrected)."
            );
            let _ = writeln!(
                o,
                "Started late (>10ms behind schedule): {}   largest lag: {}",
                self.late,
                fmt_ms(self.max_lag_ms)
            );
        } else {
            let _ = writeln!(
                o,
                "Latency is measured from the actual send (closed model: no coordinated-omission correction; use -R for it)."
            );
        }
        if self.connect_ms.count > 0 {
            let _ = write!(
                o,
                "Connections: {} opened, connect mean {} p99 {}",
                self.connections_opened,
                fmt_ms(self.connect_ms.mean),
                fmt_ms(self.connect_ms.p99)
            );
            if self.tls_ms.count > 0 {
                let _ = write!(
                    o,
                    ", TLS handshake mean {} p99 {} ({} resumed)",
                    fmt_ms(self.tls_ms.mean),
                    fmt_ms(self.tls_ms.p99),
                    self.tls_resumed
                );
            }
            if self.server_closes > 0 {
                let _ = write!(
                    o,
                    ", {} closed by the server and re-opened",
                    self.server_closes
                );
            }
            let _ = writeln!(o);
        }
        let codes: Vec<String> = self
            .status
            .iter()
            .map(|(c, n)| format!("{c}: {n}"))
            .collect();
        let _ = writeln!(
            o,
            "Status codes: {}",
            if codes.is_empty() {
                "none".into()
            } else {
                codes.join(", ")
            }
        );
        let e = &self.errors;
        let _ = writeln!(
            o,
            "Errors: connect {}, read {}, write {}, timeout {}, non-2xx {}",
            e.connect, e.read, e.write, e.timeout, e.status
        );
        for (m, n) in &self.error_messages {
            let _ = writeln!(o, "  {n} x {m}");
        }
        o
    }

    /// `--latency`: the headline percentiles, then the full spectrum.
    pub fn latency_text(&self) -> String {
        let mut o = String::new();
        let views: Vec<(&str, &Hist)> = if self.is_open() {
            vec![
                (
                    "Latency (corrected, from intended start)",
                    &self.latency_hist,
                ),
                (
                    "Service time (uncorrected, from actual send)",
                    &self.service_hist,
                ),
            ]
        } else {
            vec![("Latency (from actual send)", &self.latency_hist)]
        };
        let _ = writeln!(o);
        let _ = writeln!(o, "  Latency Distribution (HdrHistogram)");
        let _ = write!(o, "  {:>9}", "");
        for (name, _) in &views {
            let short = if name.starts_with("Service") {
                "service"
            } else {
                "latency"
            };
            let _ = write!(o, " {short:>12}");
        }
        let _ = writeln!(o);
        for (label, q) in [
            ("50.000%", 0.5),
            ("75.000%", 0.75),
            ("90.000%", 0.9),
            ("99.000%", 0.99),
            ("99.900%", 0.999),
            ("99.990%", 0.9999),
            ("99.999%", 0.99999),
            ("100.000%", 1.0),
        ] {
            let _ = write!(o, "  {label:>9}");
            for (_, h) in &views {
                let v = if h.is_empty() {
                    0.0
                } else {
                    ms(h.0.value_at_quantile(q))
                };
                let _ = write!(o, " {:>12}", fmt_ms(v));
            }
            let _ = writeln!(o);
        }
        for (name, h) in &views {
            let _ = writeln!(o);
            let _ = writeln!(o, "  Detailed Percentile spectrum: {name}");
            o.push_str(&spectrum(h));
        }
        o
    }
}

/// Milliseconds for a table cell: "12.34ms", "1.85s".
pub fn fmt_ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2}s", v / 1000.0)
    } else if v >= 1.0 {
        format!("{v:.2}ms")
    } else {
        format!("{:.0}us", v * 1000.0)
    }
}

/// The HdrHistogram percentile distribution in its standard text layout (values in
/// milliseconds, 5 ticks per half distance), readable by HdrHistogram's plotter.
pub fn spectrum(h: &Hist) -> String {
    let mut o = String::new();
    let h = &h.0;
    let _ = writeln!(
        o,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    if h.is_empty() {
        let _ = writeln!(
            o,
            "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
            0.0, 0.0
        );
        let _ = writeln!(o, "#[Max     = {:>12.3}, Total count    = {:>12}]", 0.0, 0);
        let _ = writeln!(
            o,
            "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
            h.buckets(),
            h.distinct_values()
        );
        return o;
    }
    let total = h.len();
    // TotalCount: values recorded up to this row's value, as HdrHistogram prints it.
    let mut cum = 0u64;
    for v in h.iter_quantiles(5) {
        let value = v.value_iterated_to();
        let q = v.quantile_iterated_to();
        cum += v.count_since_last_iteration();
        if q < 1.0 {
            let _ = writeln!(
                o,
                "{:>12.3} {:>14.12} {:>10} {:>14.2}",
                ms(value),
                q,
                cum,
                1.0 / (1.0 - q)
            );
        } else {
            let _ = writeln!(o, "{:>12.3} {:>14.12} {:>10}", ms(value), q, total);
        }
    }
    let _ = writeln!(
        o,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        h.mean() / 1000.0,
        h.stdev() / 1000.0
    );
    let _ = writeln!(
        o,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        ms(h.max()),
        total
    );
    let _ = writeln!(
        o,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        h.distinct_values()
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spectrum_layout() {
        let mut h = Hist::default();
        for v in 1..=10_000u64 {
            h.record(v * 10);
        }
        let s = spectrum(&h);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0].contains("Value") && lines[0].contains("1/(1-Percentile)"));
        assert!(lines.iter().any(|l| l.starts_with("#[Mean")));
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("#[Max") && l.contains("Total count"))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("#[Buckets") && l.contains("SubBuckets"))
        );
        // Data rows: value, percentile, count, and a rising count.
        let rows: Vec<Vec<&str>> = lines[2..]
            .iter()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert!(rows.len() > 50);
        let last = rows.last().unwrap();
        assert_eq!(last[1].parse::<f64>().unwrap(), 1.0);
        assert_eq!(last[2], "10000");
    }

    #[test]
    fn percentiles_in_ms() {
        let mut h = Hist::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p = Percentiles::of(&h);
        assert!((p.p50 - 500.0).abs() < 1.0, "{}", p.p50);
        assert!((p.p99 - 990.0).abs() < 1.0);
        assert!((p.max - 1000.0).abs() < 1.0);
        assert_eq!(p.count, 1000);
    }
}
