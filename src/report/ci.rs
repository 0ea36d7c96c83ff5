//! Confidence intervals beside the percentiles: each percentile's order-statistic interval
//! (`stats::interval`) in milliseconds, as `Percentiles::ci` holds it and every format shows
//! it. A side the samples cannot bound is unknown (`?`, null in JSON); an interval wider than
//! the value itself is flagged (`wide`, `!` after the cell).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::stats::interval::{self, Confidence};

use super::{fmt_ms, ms};

/// One percentile's interval, milliseconds.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Ci {
    /// The lower bound; None when too few samples bound it.
    pub low: Option<f64>,
    /// The upper bound; None when too few samples bound it.
    pub high: Option<f64>,
    /// Wider than the value itself (high - low > value).
    pub wide: bool,
}

impl Ci {
    /// Whether both sides are known.
    pub fn known(&self) -> bool {
        self.low.is_some() && self.high.is_some()
    }
}

/// The intervals of the percentiles of `tails::KEYS` of `h` (microseconds) at `level`, by
/// key, given each point value (ms); None where neither side is known.
pub fn of(
    h: &hdrhistogram::Histogram<u64>,
    level: Confidence,
    value: impl Fn(&str) -> f64,
) -> BTreeMap<String, Option<Ci>> {
    super::tails::KEYS
        .iter()
        .map(|(key, ppm, _)| {
            let i = interval::of(h, *ppm as f64 / 1e6, level);
            let ci = (!i.unknown()).then(|| {
                let low = i.low.map(ms);
                let high = i.high.map(ms);
                let wide = match (low, high) {
                    (Some(l), Some(h)) => h - l > value(key),
                    _ => false,
                };
                Ci { low, high, wide }
            });
            (key.to_string(), ci)
        })
        .collect()
}

/// A cell: "8.70-11.60ms", "?-2.10s" (a side unknown), "unknown", with `!` when wide.
pub fn cell(ci: Option<&Ci>) -> String {
    let Some(ci) = ci else {
        return "unknown".into();
    };
    let side = |v: Option<f64>| v.map_or("?".to_string(), fmt_ms);
    let (lo, hi) = (side(ci.low), side(ci.high));
    let unit = |s: &str| {
        s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
            .to_string()
    };
    let text = if ci.known() && unit(&lo) == unit(&hi) {
        format!(
            "{}-{hi}",
            lo.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        )
    } else {
        format!("{lo}-{hi}")
    };
    if ci.wide { text + "!" } else { text }
}

/// The note under a table with intervals: the level, the method, and what `!` and `?` say.
pub fn note(level: Confidence) -> String {
    format!(
        "CI: {} confidence interval of the percentile (order statistic, distribution-free); '?' a side too few samples bound, '!' wider than the value itself",
        level.label()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells() {
        let ci = |low, high, wide| Ci { low, high, wide };
        assert_eq!(
            cell(Some(&ci(Some(8.7), Some(11.6), false))),
            "8.70-11.60ms"
        );
        assert_eq!(
            cell(Some(&ci(Some(0.5), Some(11.6), true))),
            "500us-11.60ms!"
        );
        assert_eq!(cell(Some(&ci(Some(8.7), None, false))), "8.70ms-?");
        assert_eq!(cell(None), "unknown");
    }
}
