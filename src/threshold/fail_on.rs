//! `vblast compare --fail-on 'p99>+10%'`: a bound on how much a figure may change from the
//! first run to another, parsed once into a `FailOn`, and judged (`judge`) against the noise
//! of both runs: a percentile's change is beyond the bound only when it is beyond it even at
//! the ends of both runs' confidence intervals (the new run's most favourable side against
//! the base's least favourable one), within it when it is within it at the other ends, and
//! unclear otherwise. The run's rate has an interval from its seconds
//! (`report::thresholds::rate_interval`); figures without one (an operation's rate,
//! success, max, mean) are judged on their values.

use serde::{Deserialize, Serialize};

use super::judge::{Observed, ThresholdVerdict};
use super::{NAMES, ThresholdMetric, show_value};

/// A change that fails a comparison: `metric` moving by more than `percent` (signed) in
/// the direction of `up` (`>`: above, `<`: below), of the total or one operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailOn {
    pub op: Option<String>,
    pub metric: ThresholdMetric,
    /// `>`: fails when the new figure is above the base's by more than `percent`.
    pub up: bool,
    /// The allowed change, signed: +10 for `>+10%`, -5 for `<-5%`.
    pub percent: f64,
}

/// A `--fail-on` that is refused; `text` is the line as given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FailOnError {
    #[error(
        "--fail-on '{0}': a line is [OPERATION:]METRIC>+N% or METRIC<-N%, e.g. 'p99>+10%' (p99 more than 10% above the first run's fails), 'rate<-5%'"
    )]
    Shape(String),
    #[error(
        "--fail-on '{text}': unknown metric '{metric}': compare bounds p50, p75, p90, p95, p99, p99.9, p99.99, max, mean, success and rate"
    )]
    UnknownMetric { text: String, metric: String },
    #[error("--fail-on '{text}': '{bound}' is not a change: give a signed percentage (+10%, -5%)")]
    NoPercent { text: String, bound: String },
}

impl FailOn {
    /// Parses one line (see the module's doc).
    pub fn parse(text: &str) -> Result<FailOn, FailOnError> {
        let t = text.trim();
        let at = t
            .find(['<', '>'])
            .ok_or_else(|| FailOnError::Shape(text.into()))?;
        let (left, rest) = t.split_at(at);
        let up = rest.starts_with('>');
        let bound = rest[1..].trim();
        let (op, metric) = match left.rsplit_once(':') {
            Some((op, m)) if !op.trim().is_empty() => (Some(op.trim().to_string()), m.trim()),
            Some(_) => return Err(FailOnError::Shape(text.into())),
            None => (None, left.trim()),
        };
        let lower = metric.to_ascii_lowercase();
        let metric = NAMES
            .iter()
            .find(|(m, names)| *m != ThresholdMetric::Errors && names.contains(&lower.as_str()))
            .map(|(m, _)| *m)
            .ok_or_else(|| FailOnError::UnknownMetric {
                text: text.into(),
                metric: metric.into(),
            })?;
        let no_percent = || FailOnError::NoPercent {
            text: text.into(),
            bound: bound.into(),
        };
        let percent: f64 = bound
            .strip_suffix('%')
            .ok_or_else(no_percent)?
            .trim()
            .parse()
            .map_err(|_| no_percent())?;
        if !percent.is_finite() || percent <= -100.0 {
            return Err(no_percent());
        }
        Ok(FailOn {
            op,
            metric,
            up,
            percent,
        })
    }

    /// The line as one canonical text: "kv-read:p99>+10%".
    pub fn text(&self) -> String {
        format!(
            "{}{}{}{:+}%",
            super::op_prefix(self.op.as_deref()),
            self.metric.label(),
            if self.up { ">" } else { "<" },
            self.percent
        )
    }
}

/// `f` judged from `base` to `new` (None: not measured in that run); `level` names the
/// intervals' level. The verdict and why: `Broken` fails the comparison.
pub fn judge(
    f: &FailOn,
    base: Option<Observed>,
    new: Option<Observed>,
    level: &str,
) -> (ThresholdVerdict, String) {
    let label = f.metric.label();
    let (Some(b), Some(n)) = (base, new) else {
        return (
            ThresholdVerdict::Unclear,
            format!("{label} was not measured in both runs"),
        );
    };
    let show = |v: f64| show_value(f.metric, v);
    let k = 1.0 + f.percent / 100.0;
    let change = if b.value == 0.0 {
        "n/a".to_string()
    } else {
        format!("{:+.1}%", (n.value / b.value - 1.0) * 100.0)
    };
    let moved = format!("{label} {} -> {} ({change})", show(b.value), show(n.value));
    let side = |v: Option<f64>| v.map_or("?".to_string(), show);
    let noise = if b.interval || n.interval {
        format!(
            "; {level} CI {}-{} and {}-{}",
            side(b.low),
            side(b.high),
            side(n.low),
            side(n.high)
        )
    } else {
        "; no interval: judged on the figures".to_string()
    };
    // The ends that decide: for `>`, the new run's low side against the base's high side
    // breaks it, and the new high side against the base's low side clears it; mirrored for `<`.
    let (breaks, clears) = if f.up {
        (
            n.low.zip(b.high).map(|(nl, bh)| nl > bh * k),
            n.high.zip(b.low).map(|(nh, bl)| nh <= bl * k),
        )
    } else {
        (
            n.high.zip(b.low).map(|(nh, bl)| nh < bl * k),
            n.low.zip(b.high).map(|(nl, bh)| nl >= bh * k),
        )
    };
    let limit = format!("{}{:+}%", if f.up { ">" } else { "<" }, f.percent);
    if breaks == Some(true) {
        (
            ThresholdVerdict::Broken,
            format!("{moved}: beyond {limit} even at the ends of both intervals{noise}"),
        )
    } else if clears == Some(true) {
        (
            ThresholdVerdict::Holds,
            format!("{moved}: within {limit}{noise}"),
        )
    } else {
        (
            ThresholdVerdict::Unclear,
            format!("{moved}: within the noise of the two runs, not clearly beyond {limit}{noise}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(value: f64, low: f64, high: f64) -> Option<Observed> {
        Some(Observed {
            value,
            low: Some(low),
            high: Some(high),
            interval: true,
        })
    }

    #[test]
    fn parses_lines() {
        let f = FailOn::parse("p99>+10%").unwrap();
        assert_eq!(
            (f.metric, f.up, f.percent),
            (ThresholdMetric::P99, true, 10.0)
        );
        assert_eq!(f.text(), "p99>+10%");
        let f = FailOn::parse("kv-read:rate<-5%").unwrap();
        assert_eq!(f.op.as_deref(), Some("kv-read"));
        assert_eq!(
            (f.metric, f.up, f.percent),
            (ThresholdMetric::Rate, false, -5.0)
        );
        assert_eq!(f.text(), "kv-read:rate<-5%");
        assert!(matches!(
            FailOn::parse("p99>10"),
            Err(FailOnError::NoPercent { .. })
        ));
        assert!(matches!(
            FailOn::parse("errors>+10%"),
            Err(FailOnError::UnknownMetric { .. })
        ));
        assert!(FailOn::parse("p99").is_err());
        assert!(FailOn::parse("p99>-100%").is_err());
    }

    #[test]
    fn a_change_fails_only_beyond_the_noise_of_both_runs() {
        let f = FailOn::parse("p99>+10%").unwrap();
        // 10 -> 20 ms with tight intervals: clearly beyond +10%.
        let (v, why) = judge(&f, pct(10.0, 9.5, 10.5), pct(20.0, 19.0, 21.0), "95%");
        assert_eq!(v, ThresholdVerdict::Broken, "{why}");
        assert!(why.contains("(+100.0%)"), "{why}");
        // 10 -> 12 ms, but the intervals overlap the bound: unclear.
        let (v, why) = judge(&f, pct(10.0, 8.0, 12.0), pct(12.0, 10.0, 14.0), "95%");
        assert_eq!(v, ThresholdVerdict::Unclear, "{why}");
        // 10 -> 10 ms with tight intervals: within.
        let (v, _) = judge(&f, pct(10.0, 9.9, 10.1), pct(10.0, 9.9, 10.1), "95%");
        assert_eq!(v, ThresholdVerdict::Holds);
        // A rate is judged on its figures.
        let r = FailOn::parse("rate<-5%").unwrap();
        let (v, why) = judge(
            &r,
            Some(Observed::exact(100.0)),
            Some(Observed::exact(90.0)),
            "",
        );
        assert_eq!(v, ThresholdVerdict::Broken, "{why}");
        assert!(why.contains("judged on the figures"), "{why}");
        let (v, _) = judge(
            &r,
            Some(Observed::exact(100.0)),
            Some(Observed::exact(99.0)),
            "",
        );
        assert_eq!(v, ThresholdVerdict::Holds);
        let (v, _) = judge(&r, None, Some(Observed::exact(99.0)), "");
        assert_eq!(v, ThresholdVerdict::Unclear);
    }
}
