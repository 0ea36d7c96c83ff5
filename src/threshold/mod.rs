//! Thresholds (`--threshold 'kv-read:p99<20ms'`, a vault-benchmark file's `threshold` block):
//! the text parsed once into a `Threshold`, a set of them checked together (no contradiction,
//! no operation the run does not have), and each judged (`judge`) on what a run measured
//! into a `ThresholdResult`: holds, broken or unclear, and why.
//!
//! A threshold is `[OPERATION:]METRIC OP BOUND`: METRIC is a latency percentile (`p50`,
//! `p75`, `p90`, `p95`, `p99`, `p99.9`, `p99.99`), `max` or `mean` (BOUND a duration with its
//! unit: `20ms`, `500us`, `1s`), `success` (the share of requests that succeeded, BOUND a
//! percentage: `99.9%`), `rate` (responses per second, BOUND `100/s`) or `errors` (failed
//! requests, BOUND a count); OP is `<`, `<=`, `>` or `>=`. Without an operation it bounds the
//! run's total.
//!
//! Judging is pure: a percentile is judged with its confidence interval (the one the sweep
//! judges its objective with, `report::ci`), so that it is broken only when the whole
//! interval lies beyond the bound, holds when the whole interval lies within it, and is
//! unclear otherwise (the interval straddles the bound, or the samples are too few to
//! bound the side that decides). The run's `rate` is judged the same way with the interval
//! of its per-second counts' mean (`report::thresholds::rate_interval`); `max`, `mean`,
//! `success`, an operation's `rate` and `errors` are judged on their figures, as the sweep
//! judges its success and rate bounds.
//!
//! `abort_now` is the same judgement on the figures of a run still going
//! (`--threshold-abort`): a bound the run so far has broken for good.

pub mod fail_on;
pub mod judge;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use fail_on::{FailOn, FailOnError};
pub use judge::{Observed, ThresholdResult, ThresholdVerdict, abort_now, judge};

/// What a threshold bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThresholdMetric {
    P50,
    P75,
    P90,
    P95,
    P99,
    P999,
    P9999,
    Max,
    Mean,
    /// Successful requests over all, a percentage.
    Success,
    /// Responses per second.
    Rate,
    /// Failed requests.
    Errors,
}

/// A run's thresholds, checked as a set, and whether and when a broken one stops the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThresholdPlan {
    pub set: Vec<Threshold>,
    /// `--threshold-abort`: judge the figures so far once this long has passed, and stop
    /// the run at the first threshold broken; None: judged once, at the end.
    pub abort_after: Option<std::time::Duration>,
}

impl ThresholdPlan {
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Whether a threshold bounds failed requests (errors or success): then that bound,
    /// not the mere presence of a failure, decides the run.
    pub fn bounds_failures(&self) -> bool {
        self.set
            .iter()
            .any(|t| matches!(t.metric, ThresholdMetric::Errors | ThresholdMetric::Success))
    }
}

/// The metrics, with every name each is written as (the first is how it is shown).
const NAMES: [(ThresholdMetric, &[&str]); 12] = [
    (ThresholdMetric::P50, &["p50"]),
    (ThresholdMetric::P75, &["p75"]),
    (ThresholdMetric::P90, &["p90"]),
    (ThresholdMetric::P95, &["p95"]),
    (ThresholdMetric::P99, &["p99"]),
    (ThresholdMetric::P999, &["p99.9", "p999"]),
    (ThresholdMetric::P9999, &["p99.99", "p9999"]),
    (ThresholdMetric::Max, &["max"]),
    (ThresholdMetric::Mean, &["mean", "avg"]),
    (ThresholdMetric::Success, &["success"]),
    (ThresholdMetric::Rate, &["rate"]),
    (ThresholdMetric::Errors, &["errors"]),
];

impl ThresholdMetric {
    /// "p99.9": as it is written and shown.
    pub fn label(self) -> &'static str {
        NAMES
            .iter()
            .find(|(m, _)| *m == self)
            .map_or("?", |(_, n)| n[0])
    }

    /// The key of the report's percentiles (`"p999"`), for a percentile.
    pub fn percentile_key(self) -> Option<&'static str> {
        Some(match self {
            ThresholdMetric::P50 => "p50",
            ThresholdMetric::P75 => "p75",
            ThresholdMetric::P90 => "p90",
            ThresholdMetric::P95 => "p95",
            ThresholdMetric::P99 => "p99",
            ThresholdMetric::P999 => "p999",
            ThresholdMetric::P9999 => "p9999",
            _ => return None,
        })
    }

    /// A latency figure (milliseconds): a percentile, the maximum or the mean.
    pub fn is_latency(self) -> bool {
        self.percentile_key().is_some()
            || matches!(self, ThresholdMetric::Max | ThresholdMetric::Mean)
    }

    /// The rank of a latency figure that never exceeds a later one (p50 <= p99 <= max).
    fn order(self) -> Option<u8> {
        Some(match self {
            ThresholdMetric::P50 => 0,
            ThresholdMetric::P75 => 1,
            ThresholdMetric::P90 => 2,
            ThresholdMetric::P95 => 3,
            ThresholdMetric::P99 => 4,
            ThresholdMetric::P999 => 5,
            ThresholdMetric::P9999 => 6,
            ThresholdMetric::Max => 7,
            _ => return None,
        })
    }
}

/// The comparison a threshold asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cmp {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl Cmp {
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }

    /// An upper bound (`<`, `<=`).
    pub fn is_upper(self) -> bool {
        matches!(self, Cmp::Lt | Cmp::Le)
    }

    /// Whether `v` meets the bound `b`.
    pub fn holds(self, v: f64, b: f64) -> bool {
        match self {
            Cmp::Lt => v < b,
            Cmp::Le => v <= b,
            Cmp::Gt => v > b,
            Cmp::Ge => v >= b,
        }
    }
}

/// One threshold: on the total (`op` None) or one operation, a metric, a comparison and a
/// bound in the metric's unit (milliseconds, percent, per second, a count).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    pub op: Option<String>,
    pub metric: ThresholdMetric,
    pub cmp: Cmp,
    pub bound: f64,
}

/// A threshold that is refused; `text` is the threshold as given, which the message names.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    #[error(
        "threshold '{0}': a threshold is [OPERATION:]METRIC<BOUND (also <=, >, >=), e.g. 'p99<20ms', 'kv-read:p99<20ms', 'success>=99.9%', 'rate>=100/s', 'errors<10'"
    )]
    Shape(String),
    #[error(
        "threshold '{text}': unknown metric '{metric}': the metrics are p50, p75, p90, p95, p99, p99.9, p99.99, max, mean, success, rate and errors"
    )]
    UnknownMetric { text: String, metric: String },
    #[error(
        "threshold '{text}': the bound '{bound}' has no unit: {metric} is bounded by {expected}"
    )]
    NoUnit {
        text: String,
        bound: String,
        metric: &'static str,
        expected: &'static str,
    },
    #[error("threshold '{text}': '{bound}' is not a bound of {metric}: give {expected}")]
    BadBound {
        text: String,
        bound: String,
        metric: &'static str,
        expected: &'static str,
    },
    #[error("threshold '{0}': the operation name is empty (write 'p99<20ms' for the total)")]
    EmptyOp(String),
    #[error(
        "threshold '{text}': the run has no operation '{op}' (its operations: {known}; leave the operation out to bound the total)"
    )]
    UnknownOp {
        text: String,
        op: String,
        known: String,
    },
    #[error("thresholds '{a}' and '{b}' contradict each other: no run can meet both")]
    Contradiction { a: String, b: String },
}

/// What each metric's bound is written as, for the messages.
fn expected(m: ThresholdMetric) -> &'static str {
    match m {
        ThresholdMetric::Success => "a percentage (99.9%)",
        ThresholdMetric::Rate => "a rate per second (100/s)",
        ThresholdMetric::Errors => "a count (10)",
        _ => "a duration with its unit (20ms, 500us, 1s)",
    }
}

impl Threshold {
    /// Parses one threshold (see the module's doc).
    pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
        let t = text.trim();
        let at = t
            .find(['<', '>'])
            .ok_or_else(|| ThresholdError::Shape(text.into()))?;
        let (left, rest) = t.split_at(at);
        let (cmp, bound) = if let Some(b) = rest.strip_prefix("<=") {
            (Cmp::Le, b)
        } else if let Some(b) = rest.strip_prefix(">=") {
            (Cmp::Ge, b)
        } else if let Some(b) = rest.strip_prefix('<') {
            (Cmp::Lt, b)
        } else {
            (Cmp::Gt, &rest[1..])
        };
        let (op, metric) = match left.rsplit_once(':') {
            Some((op, m)) => {
                let op = op.trim();
                if op.is_empty() {
                    return Err(ThresholdError::EmptyOp(text.into()));
                }
                (Some(op.to_string()), m.trim())
            }
            None => (None, left.trim()),
        };
        if metric.is_empty() || bound.trim().is_empty() {
            return Err(ThresholdError::Shape(text.into()));
        }
        let lower = metric.to_ascii_lowercase();
        let metric = NAMES
            .iter()
            .find(|(_, names)| names.contains(&lower.as_str()))
            .map(|(m, _)| *m)
            .ok_or_else(|| ThresholdError::UnknownMetric {
                text: text.into(),
                metric: metric.into(),
            })?;
        let bound = parse_bound(metric, bound.trim(), text)?;
        Ok(Threshold {
            op,
            metric,
            cmp,
            bound,
        })
    }

    /// The bound as written back: "20.00ms", "99.9%", "100/s", "10".
    pub fn bound_text(&self) -> String {
        show_value(self.metric, self.bound)
    }

    /// The threshold as one canonical text: "kv-read:p99<20ms".
    pub fn text(&self) -> String {
        format!(
            "{}{}{}{}",
            op_prefix(self.op.as_deref()),
            self.metric.label(),
            self.cmp.symbol(),
            self.bound_text()
        )
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// A value of `m` as written: a latency (ms) in the shortest exact unit, a percentage, a
/// rate, a count.
pub fn show_value(m: ThresholdMetric, v: f64) -> String {
    match m {
        ThresholdMetric::Success => format!("{}%", trim(v)),
        ThresholdMetric::Rate => format!("{}/s", trim(v)),
        ThresholdMetric::Errors => format!("{}", v as u64),
        _ if v >= 1000.0 => format!("{}s", trim(v / 1000.0)),
        _ if v >= 1.0 => format!("{}ms", trim(v)),
        _ => format!("{}us", trim(v * 1000.0)),
    }
}

/// A number without trailing zeros: 20, 0.5, 99.9.
fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The bound of `metric` in its unit: milliseconds, percent, per second, a count.
fn parse_bound(metric: ThresholdMetric, b: &str, text: &str) -> Result<f64, ThresholdError> {
    let label = metric.label();
    let bad = || ThresholdError::BadBound {
        text: text.into(),
        bound: b.into(),
        metric: label,
        expected: expected(metric),
    };
    let number = |s: &str| -> Result<f64, ThresholdError> {
        let v: f64 = s.trim().parse().map_err(|_| bad())?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(bad())
        }
    };
    // A bare number: a count for errors; for every other metric a bound without its unit.
    if b.parse::<f64>().is_ok() && metric != ThresholdMetric::Errors {
        return Err(ThresholdError::NoUnit {
            text: text.into(),
            bound: b.into(),
            metric: label,
            expected: expected(metric),
        });
    }
    match metric {
        ThresholdMetric::Errors => {
            let v = number(b)?;
            if v.fract() != 0.0 {
                return Err(bad());
            }
            Ok(v)
        }
        ThresholdMetric::Success => {
            let v = number(b.strip_suffix('%').ok_or_else(bad)?)?;
            if v > 100.0 {
                return Err(bad());
            }
            Ok(v)
        }
        ThresholdMetric::Rate => number(b.strip_suffix("/s").ok_or_else(bad)?),
        _ => {
            let split = b
                .find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
                .ok_or_else(bad)?;
            let (n, unit) = b.split_at(split);
            let scale = match unit.trim() {
                "us" | "µs" => 0.001,
                "ms" => 1.0,
                "s" => 1000.0,
                "m" => 60_000.0,
                _ => return Err(bad()),
            };
            Ok(number(n)? * scale)
        }
    }
}

/// Every threshold of `texts` parsed, and the set checked: no two that contradict each
/// other (`p99<10ms` and `p99>20ms`; also `p50>20ms` and `p99<10ms`, as p50 <= p99), and,
/// given the run's operations, none on an operation the run does not have.
pub fn parse_all(
    texts: &[String],
    ops: Option<&[String]>,
) -> Result<Vec<Threshold>, ThresholdError> {
    let parsed = texts
        .iter()
        .map(|t| Threshold::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    check(&parsed, ops)?;
    Ok(parsed)
}

/// `parse_all`'s checks of a set already parsed (see there).
pub fn check(set: &[Threshold], ops: Option<&[String]>) -> Result<(), ThresholdError> {
    if let Some(ops) = ops {
        for t in set {
            // `ops`: every row, an operation of several requests' steps (NAME/STEP) too.
            if let Some(op) = &t.op
                && !ops.iter().any(|o| o == op)
            {
                return Err(ThresholdError::UnknownOp {
                    text: t.text(),
                    op: op.clone(),
                    known: ops.join(", "),
                });
            }
        }
    }
    for (i, a) in set.iter().enumerate() {
        for b in &set[i + 1..] {
            if contradict(a, b) || contradict(b, a) {
                return Err(ThresholdError::Contradiction {
                    a: a.text(),
                    b: b.text(),
                });
            }
        }
    }
    Ok(())
}

/// Whether `low` (a lower bound) and `high` (an upper bound) on the same scope can never
/// both hold: on the same metric, or on latency figures where `low`'s can never exceed
/// `high`'s (a lower bound on p99 above an upper bound on max).
fn contradict(low: &Threshold, high: &Threshold) -> bool {
    if low.op != high.op || low.cmp.is_upper() || !high.cmp.is_upper() {
        return false;
    }
    let comparable = low.metric == high.metric
        || matches!((low.metric.order(), high.metric.order()), (Some(l), Some(h)) if l <= h);
    if !comparable {
        return false;
    }
    // Some value v with v (low.cmp) low.bound and v (high.cmp) high.bound?
    let strict = low.cmp == Cmp::Gt || high.cmp == Cmp::Lt;
    if strict {
        low.bound >= high.bound
    } else {
        low.bound > high.bound
    }
}

/// An operation's prefix in a threshold's or a compare line's text: "kv-read:", or
/// nothing for the total.
pub(crate) fn op_prefix(op: Option<&str>) -> String {
    op.map(|o| format!("{o}:")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_metric_and_scope() {
        let t = Threshold::parse("kv-read:p99<20ms").unwrap();
        assert_eq!(t.op.as_deref(), Some("kv-read"));
        assert_eq!(
            (t.metric, t.cmp, t.bound),
            (ThresholdMetric::P99, Cmp::Lt, 20.0)
        );
        assert_eq!(t.text(), "kv-read:p99<20ms");
        let t = Threshold::parse(" p99.9 <= 1s ").unwrap();
        assert_eq!(
            (t.metric, t.cmp, t.bound),
            (ThresholdMetric::P999, Cmp::Le, 1000.0)
        );
        assert_eq!(t.text(), "p99.9<=1s");
        assert_eq!(Threshold::parse("p50<1us").unwrap().bound, 0.001);
        assert_eq!(
            Threshold::parse("p9999<500us").unwrap().text(),
            "p99.99<500us"
        );
        assert_eq!(
            Threshold::parse("max<2s").unwrap().metric,
            ThresholdMetric::Max
        );
        assert_eq!(
            Threshold::parse("mean<3ms").unwrap().metric,
            ThresholdMetric::Mean
        );
        let s = Threshold::parse("success>=99.9%").unwrap();
        assert_eq!(
            (s.metric, s.cmp, s.bound),
            (ThresholdMetric::Success, Cmp::Ge, 99.9)
        );
        let r = Threshold::parse("rate>100/s").unwrap();
        assert_eq!(
            (r.metric, r.cmp, r.bound),
            (ThresholdMetric::Rate, Cmp::Gt, 100.0)
        );
        assert_eq!(Threshold::parse("errors<10").unwrap().bound, 10.0);
        // An operation name may hold a colon of its own: the last one splits.
        assert_eq!(
            Threshold::parse("a:b:p99<1ms").unwrap().op.as_deref(),
            Some("a:b")
        );
    }

    #[test]
    fn refuses_bad_thresholds_with_their_reason() {
        assert!(matches!(
            Threshold::parse("p99<20"),
            Err(ThresholdError::NoUnit { .. })
        ));
        assert!(matches!(
            Threshold::parse("success>99.9"),
            Err(ThresholdError::NoUnit { .. })
        ));
        assert!(matches!(
            Threshold::parse("rate>100"),
            Err(ThresholdError::NoUnit { .. })
        ));
        assert!(matches!(
            Threshold::parse("p98<20ms"),
            Err(ThresholdError::UnknownMetric { .. })
        ));
        assert!(matches!(
            Threshold::parse("latency<20ms"),
            Err(ThresholdError::UnknownMetric { .. })
        ));
        for bad in ["p99", "p99=20ms", "<20ms", "p99<", ":p99<1ms"] {
            assert!(Threshold::parse(bad).is_err(), "{bad}");
        }
        for bad in [
            "p99<20xs",
            "success>101%",
            "errors<1.5",
            "p99<-1ms",
            "rate>fast/s",
        ] {
            assert!(
                matches!(Threshold::parse(bad), Err(ThresholdError::BadBound { .. })),
                "{bad}"
            );
        }
        let e = Threshold::parse("p99<20").unwrap_err().to_string();
        assert!(e.contains("has no unit"), "{e}");
    }

    #[test]
    fn a_set_is_checked_for_contradictions_and_operations() {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = parse_all(&set(&["p99<10ms", "p99>20ms"]), None).unwrap_err();
        assert!(matches!(e, ThresholdError::Contradiction { .. }), "{e}");
        assert!(parse_all(&set(&["p99>20ms", "p99<10ms"]), None).is_err());
        assert!(parse_all(&set(&["p99<10ms", "p99>=10ms"]), None).is_err());
        assert!(parse_all(&set(&["p99<=10ms", "p99>=10ms"]), None).is_ok());
        assert!(parse_all(&set(&["p50>20ms", "max<10ms"]), None).is_err());
        assert!(parse_all(&set(&["p99>20ms", "p50<10ms"]), None).is_ok());
        // Different scopes never contradict.
        assert!(parse_all(&set(&["a:p99<10ms", "p99>20ms"]), None).is_ok());
        let ops = vec![
            "kv-read".to_string(),
            "kv-write".to_string(),
            "token-revoke/create".to_string(),
        ];
        assert!(parse_all(&set(&["kv-read:p99<10ms"]), Some(&ops)).is_ok());
        assert!(parse_all(&set(&["token-revoke/create:p99<10ms"]), Some(&ops)).is_ok());
        // A step the run does not have.
        assert!(parse_all(&set(&["kv-write/create:p99<10ms"]), Some(&ops)).is_err());
        assert!(parse_all(&set(&["kv-writer:p99<10ms"]), Some(&ops)).is_err());
        let e = parse_all(&set(&["kv-list:p99<10ms"]), Some(&ops)).unwrap_err();
        assert!(e.to_string().contains("no operation 'kv-list'"), "{e}");
        assert!(e.to_string().contains("kv-read, kv-write"), "{e}");
    }
}
