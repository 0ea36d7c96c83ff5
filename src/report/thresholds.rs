//! A run's thresholds judged on its summary (`judge`: each threshold's figure and, for a
//! percentile, its confidence interval read from the summary, then `threshold::judge`), and
//! the verdicts as the text formats show them (`write_text`: one line per threshold after
//! the report).

use std::io::{self, Write};

use crate::stats::interval::Confidence;
use crate::threshold::{Observed, Threshold, ThresholdMetric, ThresholdResult, ThresholdVerdict};

use super::{Percentiles, Summary};

/// The figures of one scope (the total or an operation) that thresholds read.
struct Scope<'a> {
    requests: u64,
    failed: u64,
    rps: f64,
    success_ratio: f64,
    latency: &'a Percentiles,
}

/// What `s` measured of `t`'s metric; None when its operation completed nothing (or,
/// for a latency figure, has no sample).
pub fn observe(s: &Summary, t: &Threshold) -> Option<Observed> {
    observe_metric(s, t.op.as_deref(), t.metric)
}

/// What `s` measured of `metric`, of the total (`op` None) or one operation (None when the
/// run has no such operation, or it completed nothing). The total's rate has an interval
/// too (`rate_interval`); an operation's rate is its figure.
pub fn observe_metric(s: &Summary, op: Option<&str>, metric: ThresholdMetric) -> Option<Observed> {
    if op.is_none() && metric == ThresholdMetric::Rate && s.requests > 0 {
        return Some(rate_interval(s));
    }
    let scope = match op {
        None => Scope {
            requests: s.requests,
            failed: s.failed,
            rps: s.rps,
            success_ratio: s.success_ratio,
            latency: &s.latency_ms,
        },
        Some(name) => {
            let op = s.ops.iter().find(|o| o.name == name)?;
            Scope {
                requests: op.requests,
                failed: op.requests.saturating_sub(op.ok),
                rps: op.rps,
                success_ratio: op.success_ratio,
                latency: &op.latency_ms,
            }
        }
    };
    of_scope(&scope, metric)
}

fn of_scope(scope: &Scope, metric: ThresholdMetric) -> Option<Observed> {
    if metric == ThresholdMetric::Errors {
        return Some(Observed::exact(scope.failed as f64));
    }
    if scope.requests == 0 {
        return None;
    }
    if let Some(key) = metric.percentile_key() {
        if scope.latency.is_empty() {
            return None;
        }
        let ci = scope.latency.interval(key);
        return Some(Observed {
            value: scope.latency.value(key),
            low: ci.and_then(|c| c.low),
            high: ci.and_then(|c| c.high),
            interval: true,
        });
    }
    let latency = !scope.latency.is_empty();
    match metric {
        ThresholdMetric::Max => latency.then(|| Observed::exact(scope.latency.max)),
        ThresholdMetric::Mean => latency.then(|| Observed::exact(scope.latency.mean)),
        ThresholdMetric::Success => Some(Observed::exact(scope.success_ratio * 100.0)),
        _ => Some(Observed::exact(scope.rps)),
    }
}

/// Fewer whole seconds than this: the rate has no interval (either side unknown).
const MIN_SECONDS: usize = 4;

/// The run's rate with an interval: its whole seconds' counts taken as samples of the
/// rate, the interval of their mean (Student's t at the summary's level, `k - 1` degrees of
/// freedom) around the run's rate. With fewer than `MIN_SECONDS` whole seconds, both sides
/// are unknown: a rate so short is no figure to judge.
pub fn rate_interval(s: &Summary) -> Observed {
    let counts: Vec<f64> = s
        .timeline
        .iter()
        .filter(|row| row.partial_s.is_none())
        .map(|row| row.requests as f64)
        .collect();
    let level = Confidence::new(s.latency_ms.confidence).unwrap_or_default();
    per_second_interval(&counts, s.rps, level)
}

/// A rate of `center` per second with the interval of the mean of `per_second` (each a
/// second's rate, Student's t at `level`, `k - 1` degrees of freedom) around it; with fewer
/// than `MIN_SECONDS` of them both sides are unknown. The run's rate at its end
/// (`rate_interval`) and a run's rate so far (`--threshold-abort`).
pub fn per_second_interval(per_second: &[f64], center: f64, level: Confidence) -> Observed {
    let k = per_second.len();
    let (low, high) = if k < MIN_SECONDS {
        (None, None)
    } else {
        let n = k as f64;
        let mean = per_second.iter().sum::<f64>() / n;
        let var = per_second.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let t =
            crate::stats::interval::student_t_quantile(1.0 - (1.0 - level.level()) / 2.0, n - 1.0);
        let half = t * (var / n).sqrt();
        (Some((center - half).max(0.0)), Some(center + half))
    };
    Observed {
        value: center,
        low,
        high,
        interval: true,
    }
}

/// Every threshold of `set` judged on `s`, in order.
pub fn judge(s: &Summary, set: &[Threshold]) -> Vec<ThresholdResult> {
    let level = Confidence::new(s.latency_ms.confidence)
        .unwrap_or_default()
        .label();
    set.iter()
        .map(|t| crate::threshold::judge(t, observe(s, t), &level))
        .collect()
}

/// The worst verdict of `results`: broken over unclear over holds; None without any.
pub fn worst(results: &[ThresholdResult]) -> Option<ThresholdVerdict> {
    results.iter().map(|r| r.verdict).max_by_key(|v| v.gauge())
}

/// The verdicts as the text formats show them, after the report: "Thresholds:" and one
/// line per threshold; nothing when the run had none.
pub fn write_text(results: &[ThresholdResult], o: &mut dyn Write) -> io::Result<()> {
    if results.is_empty() {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(o, "Thresholds:")?;
    let width = results
        .iter()
        .map(|r| super::shown(&r.threshold).len())
        .max()
        .unwrap_or(0);
    for r in results {
        writeln!(
            o,
            "  {:<7} {:<width$}  {}",
            r.verdict.label(),
            super::shown(&r.threshold),
            r.why
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lists_each_verdict_and_why() {
        let set = [
            Threshold::parse("errors<10").unwrap(),
            Threshold::parse("p99<1us").unwrap(),
        ];
        let r = vec![
            crate::threshold::judge(&set[0], Some(Observed::exact(0.0)), "95%"),
            crate::threshold::judge(
                &set[1],
                Some(Observed {
                    value: 5.0,
                    low: Some(4.0),
                    high: Some(6.0),
                    interval: true,
                }),
                "95%",
            ),
        ];
        let mut out = Vec::new();
        write_text(&r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("holds   errors<10"), "{text}");
        assert!(text.contains("broken  p99<1us"), "{text}");
        assert_eq!(worst(&r), Some(ThresholdVerdict::Broken));
        assert_eq!(worst(&[]), None);
    }
}
