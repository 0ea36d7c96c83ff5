//! vegeta's metrics, the figures vault-benchmark keeps per test: the one model its three
//! layouts are rendered from (`terse`, `verbose`, `json`), made from a vblast
//! `Summary` or read back from vault-benchmark's own JSON report (`review`). Durations are
//! whole nanoseconds, as Go's `time.Duration`; bytes are bodies, as vegeta counts them.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::report::{OpSummary, Percentiles, Summary};

/// vegeta's latency figures, nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Latencies {
    pub total: i64,
    pub mean: i64,
    #[serde(rename = "50th")]
    pub p50: i64,
    #[serde(rename = "90th")]
    pub p90: i64,
    #[serde(rename = "95th")]
    pub p95: i64,
    #[serde(rename = "99th")]
    pub p99: i64,
    pub max: i64,
    pub min: i64,
}

/// vegeta's byte figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ByteFigures {
    pub total: u64,
    pub mean: f64,
}

/// One test's metrics in vegeta's JSON layout (its `earliest`, `latest`, `end` and
/// histogram `buckets` are neither written nor needed to render).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VegetaMetrics {
    pub latencies: Latencies,
    pub bytes_in: ByteFigures,
    pub bytes_out: ByteFigures,
    pub duration: i64,
    pub wait: i64,
    pub requests: u64,
    pub rate: f64,
    pub throughput: f64,
    pub success: f64,
    pub status_codes: BTreeMap<String, u64>,
    /// vegeta writes `[]`; a `null` is read as none.
    #[serde(deserialize_with = "null_is_empty")]
    pub errors: Vec<String>,
}

fn null_is_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

/// A vault-benchmark report: its target and each test's metrics, `total` among them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VbReport {
    pub target_addr: String,
    pub metrics: BTreeMap<String, VegetaMetrics>,
}

/// Milliseconds to whole nanoseconds.
fn ns(ms: f64) -> i64 {
    (ms * 1e6).round().max(0.0) as i64
}

/// What a test's figures are made from: its latencies, counts and what it received.
struct TestFigures<'a> {
    latency: &'a Percentiles,
    requests: u64,
    rate: f64,
    throughput: f64,
    success: f64,
    ops: &'a [&'a OpSummary],
}

/// vegeta's error for an answer outside 200-399: the status line's code and reason.
fn status_error(code: &str) -> Option<String> {
    let n: u16 = code.parse().ok()?;
    if n == 0 || (200..400).contains(&n) {
        return None;
    }
    Some(format!("{n} {}", reason(n)).trim_end().to_string())
}

/// The standard reason phrase of a status (Go's `http.StatusText`, which the server's
/// status line carries), empty for a code without one.
fn reason(code: u16) -> &'static str {
    match code {
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

fn metrics(duration_ns: i64, x: &TestFigures) -> VegetaMetrics {
    let body_in: u64 = x.ops.iter().map(|o| o.body_in).sum();
    let body_out: u64 = x.ops.iter().map(|o| o.body_out).sum();
    let mean = |n: u64| {
        if x.requests == 0 {
            0.0
        } else {
            n as f64 / x.requests as f64
        }
    };
    let mut status_codes: BTreeMap<String, u64> = BTreeMap::new();
    let mut errors: Vec<String> = Vec::new();
    for o in x.ops {
        for (code, n) in &o.status {
            *status_codes.entry(code.clone()).or_default() += n;
        }
    }
    errors.extend(status_codes.keys().filter_map(|c| status_error(c)));
    for o in x.ops {
        // (a failed status's message is listed above, as vegeta names it)
        for m in o.error_messages.keys() {
            if crate::stats::message_status(m).is_none() && !errors.contains(m) {
                errors.push(m.clone());
            }
        }
    }
    let l = x.latency;
    VegetaMetrics {
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
        bytes_in: ByteFigures {
            total: body_in,
            mean: mean(body_in),
        },
        bytes_out: ByteFigures {
            total: body_out,
            mean: mean(body_out),
        },
        duration: duration_ns,
        wait: 0,
        requests: x.requests,
        rate: x.rate,
        throughput: x.throughput,
        success: x.success,
        status_codes,
        errors,
    }
}

impl VbReport {
    /// A vblast run's figures in vault-benchmark's model: a test per operation and `total`.
    /// Every test's duration is the run's (vblast's tests run side by side for its whole
    /// length), and `wait` is 0: the duration already runs to the last response.
    pub fn of(s: &Summary) -> VbReport {
        let d = ns(s.duration_s * 1000.0);
        let mut m = BTreeMap::new();
        for op in &s.ops {
            let source = TestFigures {
                latency: &op.latency_ms,
                requests: op.requests,
                rate: op.rps,
                throughput: op.throughput,
                success: op.success_ratio,
                ops: &[op],
            };
            m.insert(op.name.clone(), metrics(d, &source));
        }
        let all: Vec<&OpSummary> = s.ops.iter().collect();
        let total = TestFigures {
            latency: &s.latency_ms,
            requests: s.requests,
            rate: s.rps,
            throughput: s.throughput,
            success: s.success_ratio,
            ops: &all,
        };
        m.insert("total".into(), metrics(d, &total));
        VbReport {
            target_addr: s.run.target.clone(),
            metrics: m,
        }
    }

    /// The tests' names but `total`, in byte order ("t10" before "t2"), as
    /// vault-benchmark's release 0.4.1 sorts them (Go's `<` on strings).
    pub fn tests(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .metrics
            .keys()
            .map(String::as_str)
            .filter(|n| *n != "total")
            .collect();
        v.sort_unstable();
        v
    }

    /// Reads vault-benchmark's JSON report: one or more reports one after another, as its
    /// `review` reads them. None when the text is not such a report.
    pub fn read_all(text: &str) -> Option<Vec<VbReport>> {
        let mut out = Vec::new();
        for r in serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>() {
            let v = r.ok()?;
            let o = v.as_object()?;
            if o.contains_key("results_version") || !o.contains_key("metrics") {
                return None;
            }
            out.push(serde_json::from_value(v).ok()?);
        }
        (!out.is_empty()).then_some(out)
    }
}

/// A duration written as Go's `time.Duration.String()` writes it (`257.346µs`, `1m30.5s`).
pub(crate) fn go_duration_ns(d: i64) -> String {
    if d < 0 {
        return format!("-{}", go_duration_ns(d.checked_neg().unwrap_or(i64::MAX)));
    }
    let ns = d as u64;
    if ns == 0 {
        return "0s".into();
    }
    let frac = |v: u64, unit: u64, digits: usize| -> String {
        let (whole, rest) = (v / unit, v % unit);
        if rest == 0 {
            whole.to_string()
        } else {
            let f = format!("{rest:0digits$}");
            format!("{whole}.{}", f.trim_end_matches('0'))
        }
    };
    if ns < 1_000 {
        return format!("{ns}ns");
    }
    if ns < 1_000_000 {
        return format!("{}µs", frac(ns, 1_000, 3));
    }
    if ns < 1_000_000_000 {
        return format!("{}ms", frac(ns, 1_000_000, 6));
    }
    let secs = ns / 1_000_000_000;
    let sub = ns % 1_000_000_000;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let s = frac(s * 1_000_000_000 + sub, 1_000_000_000, 9);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// vegeta's rounding for its text report: to the unit below the duration's own (past an
/// hour to minutes, past a minute to seconds, past a second to milliseconds, past a
/// millisecond to microseconds), halves away from zero as Go's `Duration.Round`.
pub(crate) fn vegeta_round(d: i64) -> i64 {
    const UNITS: [i64; 5] = [
        3_600_000_000_000,
        60_000_000_000,
        1_000_000_000,
        1_000_000,
        1_000,
    ];
    for (i, unit) in UNITS.iter().enumerate() {
        if d >= *unit {
            let m = if i + 1 < UNITS.len() { UNITS[i + 1] } else { 1 };
            let r = d % m;
            return if r + r < m {
                d - r
            } else {
                d.saturating_add(m - r)
            };
        }
    }
    d
}

/// Lines of tab-separated cells aligned as Go's `tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)`
/// aligns one block: each cell but a line's last padded to its column's widest plus two.
pub(crate) fn tabwrite(lines: &[Vec<String>], o: &mut dyn Write) -> io::Result<()> {
    let mut widths: Vec<usize> = Vec::new();
    for l in lines {
        for (i, c) in l.iter().enumerate().take(l.len().saturating_sub(1)) {
            if widths.len() <= i {
                widths.push(0);
            }
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    for l in lines {
        let mut text = String::new();
        for (i, c) in l.iter().enumerate() {
            if i + 1 < l.len() {
                text.push_str(&format!("{c:<w$}", w = widths[i] + 2));
            } else {
                text.push_str(c);
            }
        }
        writeln!(o, "{text}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_and_rounded_as_go_and_vegeta_do() {
        assert_eq!(go_duration_ns(0), "0s");
        assert_eq!(go_duration_ns(500), "500ns");
        assert_eq!(go_duration_ns(257_346), "257.346µs");
        assert_eq!(go_duration_ns(92_160_000), "92.16ms");
        assert_eq!(go_duration_ns(90_500_000_000), "1m30.5s");
        assert_eq!(go_duration_ns(3_600_000_000_000), "1h0m0s");
        assert_eq!(go_duration_ns(-1_500), "-1.5µs");
        let r = |d| go_duration_ns(vegeta_round(d));
        assert_eq!(r(3_011_686_506), "3.012s");
        assert_eq!(r(3_011_386_506), "3.011s");
        assert_eq!(r(2_500_500), "2.501ms");
        assert_eq!(r(257_346), "257.346µs");
        assert_eq!(r(999), "999ns");
        assert_eq!(r(61_400_000_000), "1m1s");
        assert_eq!(r(3_630_000_000_000), "1h1m0s");
    }

    #[test]
    fn reports_are_read_back_one_after_another() {
        let one = r#"{"target_addr":"http://a:8200","metrics":{"total":{"requests":3,"errors":null},"t10":{},"t2":{"latencies":{"50th":5}}}}"#;
        let two = format!("{one}\n{one}\n");
        let rs = VbReport::read_all(&two).unwrap();
        assert_eq!(rs.len(), 2);
        assert_eq!(
            rs[0].tests(),
            vec!["t10", "t2"],
            "byte order, as Go sorts strings"
        );
        assert_eq!(rs[0].metrics["t2"].latencies.p50, 5);
        assert!(rs[0].metrics["total"].errors.is_empty());
        assert!(VbReport::read_all(r#"{"results_version":1,"metrics":{}}"#).is_none());
        assert!(VbReport::read_all("not json").is_none());
        assert!(VbReport::read_all("").is_none());
    }

    #[test]
    fn failed_statuses_are_vegetas_errors() {
        assert_eq!(status_error("404").as_deref(), Some("404 Not Found"));
        assert_eq!(status_error("200"), None);
        assert_eq!(status_error("0"), None);
    }
}
