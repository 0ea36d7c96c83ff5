//! A threshold judged on what a run measured: `judge` takes the figure (and, for a
//! percentile, its confidence interval) and says whether it holds, is broken or is unclear,
//! and why, in one sentence every format shows.

use serde::{Deserialize, Serialize};

use super::{Threshold, ThresholdMetric, show_value};

/// A threshold's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThresholdVerdict {
    /// Met: for a percentile, its whole interval is within the bound.
    Holds,
    /// Not met: for a percentile, its whole interval lies beyond the bound.
    Broken,
    /// Neither: a percentile's interval straddles the bound, or too few samples bound the
    /// side that decides, or nothing was measured.
    Unclear,
}

impl ThresholdVerdict {
    pub fn label(self) -> &'static str {
        match self {
            ThresholdVerdict::Holds => "holds",
            ThresholdVerdict::Broken => "broken",
            ThresholdVerdict::Unclear => "unclear",
        }
    }

    /// The value of the Prometheus gauge `vblast_threshold_verdict`: 0 holds, 1 unclear,
    /// 2 broken (worse is higher).
    pub fn gauge(self) -> u8 {
        match self {
            ThresholdVerdict::Holds => 0,
            ThresholdVerdict::Unclear => 1,
            ThresholdVerdict::Broken => 2,
        }
    }
}

/// What was measured of a threshold's metric: its figure in the metric's unit and, for a
/// percentile, its interval's sides (None: not bounded by the samples).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Observed {
    pub value: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Whether `low`/`high` are an interval (a percentile), or the figure is exact.
    pub interval: bool,
}

impl Observed {
    /// A figure judged as it is (a count, a ratio, a rate, max, mean).
    pub fn exact(value: f64) -> Observed {
        Observed {
            value,
            low: Some(value),
            high: Some(value),
            interval: false,
        }
    }
}

/// A threshold with its verdict: what every format shows and the results file keeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThresholdResult {
    /// The threshold as one canonical text ("kv-read:p99<20ms").
    pub threshold: String,
    /// The operation it bounds; None: the total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    pub metric: ThresholdMetric,
    pub verdict: ThresholdVerdict,
    /// The measured figure, in the metric's unit (ms, percent, per second, a count); None
    /// when nothing was measured.
    pub value: Option<f64>,
    /// A percentile's confidence interval (ms); None on a side the samples do not bound,
    /// and for the figures judged as they are.
    #[serde(default)]
    pub ci_low: Option<f64>,
    #[serde(default)]
    pub ci_high: Option<f64>,
    /// Why, in one sentence.
    pub why: String,
}

/// `t` judged on `o` (None: nothing measured, e.g. an operation without a completed
/// request); `level` names the intervals' confidence level ("95%").
pub fn judge(t: &Threshold, o: Option<Observed>, level: &str) -> ThresholdResult {
    let (verdict, why) = match o {
        None => (
            ThresholdVerdict::Unclear,
            format!(
                "no {} was measured (no request completed)",
                t.metric.label()
            ),
        ),
        Some(o) => call(t, &o, level),
    };
    ThresholdResult {
        threshold: t.text(),
        op: t.op.clone(),
        metric: t.metric,
        verdict,
        value: o.map(|o| o.value),
        ci_low: o.filter(|o| o.interval).and_then(|o| o.low),
        ci_high: o.filter(|o| o.interval).and_then(|o| o.high),
        why,
    }
}

/// The verdict and why, for a figure that was measured.
fn call(t: &Threshold, o: &Observed, level: &str) -> (ThresholdVerdict, String) {
    let m = t.metric;
    let show = |v: f64| show_value(m, v);
    let measured = format!("{} {}", m.label(), show(o.value));
    let bound = format!("{} {}", t.cmp.symbol(), show(t.bound));
    if !o.interval {
        return if t.cmp.holds(o.value, t.bound) {
            (
                ThresholdVerdict::Holds,
                format!("{measured}, within {bound}"),
            )
        } else {
            (ThresholdVerdict::Broken, format!("{measured}, not {bound}"))
        };
    }
    let side = |v: Option<f64>| v.map_or("?".to_string(), show);
    let ci = format!("{level} CI {}-{}", side(o.low), side(o.high));
    // The side of the interval that must meet the bound for it to hold, and the one that
    // breaks it when even it does not.
    let (deciding, breaking) = if t.cmp.is_upper() {
        (o.high, o.low)
    } else {
        (o.low, o.high)
    };
    if deciding.is_some_and(|v| t.cmp.holds(v, t.bound)) {
        (
            ThresholdVerdict::Holds,
            format!("{measured}, {ci} lies within {bound}"),
        )
    } else if breaking.is_some_and(|v| !t.cmp.holds(v, t.bound)) {
        (
            ThresholdVerdict::Broken,
            format!("{measured}, {ci} lies beyond {bound}"),
        )
    } else if deciding.is_none() {
        (
            ThresholdVerdict::Unclear,
            format!("{measured}, {ci}: too few samples to bound it against {bound}"),
        )
    } else {
        (
            ThresholdVerdict::Unclear,
            format!("{measured}, {ci} straddles the bound {}", show(t.bound)),
        )
    }
}

/// Whether a run still going should stop (`--threshold-abort`): `t` is broken on the
/// figures so far, `o`. An error count or a maximum over its upper bound is broken for
/// good; a percentile, the mean, the success ratio and the rate are broken when the
/// figure so far (a percentile's, the rate's interval) lies beyond the bound, either way;
/// a lower bound on errors or on the maximum (`errors>5`, `max>1s`) can still be met by any
/// later request and never stops a run.
pub fn abort_now(t: &Threshold, o: &Observed) -> bool {
    if matches!(t.metric, ThresholdMetric::Errors | ThresholdMetric::Max) && !t.cmp.is_upper() {
        return false;
    }
    call(t, o, "").0 == ThresholdVerdict::Broken
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(value: f64, low: Option<f64>, high: Option<f64>) -> Observed {
        Observed {
            value,
            low,
            high,
            interval: true,
        }
    }

    #[test]
    fn a_percentile_is_broken_only_when_its_interval_lies_beyond_the_bound() {
        let t = Threshold::parse("p99<20ms").unwrap();
        let r = judge(&t, Some(pct(18.0, Some(16.0), Some(19.5))), "95%");
        assert_eq!(r.verdict, ThresholdVerdict::Holds, "{}", r.why);
        let r = judge(&t, Some(pct(21.0, Some(19.0), Some(23.0))), "95%");
        assert_eq!(r.verdict, ThresholdVerdict::Unclear, "{}", r.why);
        assert!(r.why.contains("straddles the bound 20ms"), "{}", r.why);
        let r = judge(&t, Some(pct(24.0, Some(21.0), Some(26.0))), "95%");
        assert_eq!(r.verdict, ThresholdVerdict::Broken);
        assert_eq!(r.why, "p99 24ms, 95% CI 21ms-26ms lies beyond < 20ms");
        assert_eq!((r.ci_low, r.ci_high), (Some(21.0), Some(26.0)));
        // Too few samples above it: never a pass.
        let r = judge(&t, Some(pct(10.0, Some(9.0), None)), "95%");
        assert_eq!(r.verdict, ThresholdVerdict::Unclear);
        assert!(r.why.contains("too few samples"), "{}", r.why);
        // ... but a lower side beyond the bound is enough to break it.
        let r = judge(&t, Some(pct(30.0, Some(25.0), None)), "95%");
        assert_eq!(r.verdict, ThresholdVerdict::Broken);
        // A lower bound mirrors it.
        let t = Threshold::parse("p50>=1ms").unwrap();
        let r = judge(&t, Some(pct(2.0, Some(1.5), Some(2.5))), "95%");
        assert_eq!(r.verdict, ThresholdVerdict::Holds);
        let r = judge(&t, Some(pct(0.5, Some(0.4), Some(0.6))), "95%");
        assert_eq!(r.verdict, ThresholdVerdict::Broken);
        let r = judge(&t, Some(pct(1.0, Some(0.9), Some(1.1))), "95%");
        assert_eq!(r.verdict, ThresholdVerdict::Unclear);
    }

    #[test]
    fn other_figures_are_judged_as_they_are() {
        let t = Threshold::parse("errors<10").unwrap();
        let r = judge(&t, Some(Observed::exact(3.0)), "95%");
        assert_eq!((r.verdict, r.ci_low), (ThresholdVerdict::Holds, None));
        assert_eq!(r.why, "errors 3, within < 10");
        assert_eq!(
            judge(&t, Some(Observed::exact(10.0)), "95%").verdict,
            ThresholdVerdict::Broken
        );
        let t = Threshold::parse("success>=99.9%").unwrap();
        assert_eq!(
            judge(&t, Some(Observed::exact(99.0)), "").verdict,
            ThresholdVerdict::Broken
        );
        let t = Threshold::parse("kv-read:rate>=100/s").unwrap();
        let r = judge(&t, None, "95%");
        assert_eq!(r.verdict, ThresholdVerdict::Unclear);
        assert_eq!(r.op.as_deref(), Some("kv-read"));
    }

    #[test]
    fn a_run_stops_only_on_a_bound_broken_so_far() {
        let errors = Threshold::parse("errors<5").unwrap();
        assert!(!abort_now(&errors, &Observed::exact(4.0)));
        assert!(abort_now(&errors, &Observed::exact(5.0)));
        let more = Threshold::parse("errors>5").unwrap();
        assert!(!abort_now(&more, &Observed::exact(0.0)));
        let p = Threshold::parse("p50<1us").unwrap();
        assert!(abort_now(&p, &pct(2.0, Some(0.1), None)));
        assert!(!abort_now(&p, &pct(2.0, None, None)));
    }

    #[test]
    fn verdicts_have_their_gauge_values() {
        assert_eq!(ThresholdVerdict::Holds.gauge(), 0);
        assert_eq!(ThresholdVerdict::Unclear.gauge(), 1);
        assert_eq!(ThresholdVerdict::Broken.gauge(), 2);
    }
}
