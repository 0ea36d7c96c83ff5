//! Honest tails: which percentiles rest on too few samples to be told as figures.
//!
//! The rule: the value at percentile `p` of `n` samples is the smallest value with at least
//! `ceil(p * n)` samples at or below it (HdrHistogram's `valueAtPercentile`), so
//! `n - ceil(p * n)` samples lie above its rank. A percentile with fewer than
//! [`MIN_SAMPLES_ABOVE`] (10) samples above it is a *thin tail*: it is no more than one of
//! the few largest values, and the next run will put it elsewhere (p99.99 of 5,000 requests
//! has none above it: it is the maximum; p99.9 has 5). Ten is the usual rule of thumb of
//! HdrHistogram users: to report percentile `p`, record at least `10 / (1 - p)` samples
//! (1,000 for p99, 10,000 for p99.9, 100,000 for p99.99). Every format marks thin tails
//! with the number of samples above them: `*` beside the figure and a note in the text,
//! verbose, `--latency`, compare and HTML reports, `thin_tails` in JSON,
//! a `Thin tail:` line below ab's percentage table. The count is over the rank,
//! so it is exact and the same in every format, whatever the histogram's buckets.

use std::collections::BTreeMap;

/// Fewer samples than this above a percentile make it a thin tail.
pub const MIN_SAMPLES_ABOVE: u64 = 10;

/// The percentiles of `Percentiles` (its JSON keys) in parts per million, with the label
/// the text reports give them.
pub const KEYS: [(&str, u64, &str); 7] = [
    ("p50", 500_000, "50"),
    ("p75", 750_000, "75"),
    ("p90", 900_000, "90"),
    ("p95", 950_000, "95"),
    ("p99", 990_000, "99"),
    ("p999", 999_000, "99.9"),
    ("p9999", 999_900, "99.99"),
];

/// Samples ranked above percentile `ppm` (parts per million: 990_000 is p99) of `count`:
/// `count - ceil(count * ppm / 10^6)`, in integers (no rounding surprise at the boundary).
pub fn samples_above(count: u64, ppm: u64) -> u64 {
    let rank = (u128::from(count) * u128::from(ppm.min(1_000_000))).div_ceil(1_000_000);
    count - rank as u64
}

/// `Some(samples above)` when percentile `ppm` of `count` samples is a thin tail; `None`
/// when it is well supported, or when there are no samples (no figure to mark).
pub fn thin(count: u64, ppm: u64) -> Option<u64> {
    if count == 0 {
        return None;
    }
    let above = samples_above(count, ppm);
    (above < MIN_SAMPLES_ABOVE).then_some(above)
}

/// The thin tails among the percentiles of `Percentiles`, by JSON key.
pub fn of(count: u64) -> BTreeMap<String, u64> {
    KEYS.iter()
        .filter_map(|(key, ppm, _)| thin(count, *ppm).map(|n| (key.to_string(), n)))
        .collect()
}

/// A figure's cell, with `*` after it when it is a thin tail.
pub fn mark(cell: String, thin: Option<u64>) -> String {
    match thin {
        Some(_) => cell + "*",
        None => cell,
    }
}

/// The note under a table: `* thin tail (fewer than 10 samples above the percentile): a, b`,
/// where each item says which figure and on how many samples it rests.
pub fn note(items: &[String]) -> Option<String> {
    (!items.is_empty()).then(|| {
        format!(
            "* thin tail (fewer than {MIN_SAMPLES_ABOVE} samples above the percentile): {}",
            items.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_above_the_rank() {
        // The example: p99.99 of 5,000 requests is the maximum, p99.9 has 5 above.
        assert_eq!(samples_above(5000, 999_900), 0);
        assert_eq!(samples_above(5000, 999_000), 5);
        assert_eq!(samples_above(5000, 990_000), 50);
        assert_eq!(samples_above(0, 990_000), 0);
        assert_eq!(samples_above(7, 1_000_000), 0);
        assert_eq!(samples_above(7, 0), 7);
        // No float rounding at exact products (0.999 * 5000 is 4995.000000000001 in f64).
        assert_eq!(samples_above(5000, 999_000), 5000 - 4995);
        // No overflow at the top of the range.
        assert_eq!(samples_above(u64::MAX, 990_000), 184_467_440_737_095_516);
    }

    #[test]
    fn thin_at_the_boundary() {
        // p99: 1,000 samples leave exactly 10 above (supported), 999 leave 9 (thin).
        assert_eq!(thin(1000, 990_000), None);
        assert_eq!(thin(999, 990_000), Some(9));
        // p50: 20 samples leave 10 above, 19 leave 9.
        assert_eq!(thin(20, 500_000), None);
        assert_eq!(thin(19, 500_000), Some(9));
        // p99.9: 10,000 is the least that supports it; p99.99: 100,000.
        assert_eq!(thin(10_000, 999_000), None);
        assert_eq!(thin(9_999, 999_000), Some(9));
        assert_eq!(thin(100_000, 999_900), None);
        assert_eq!(thin(99_999, 999_900), Some(9));
        // No samples: no figure, nothing to mark.
        assert_eq!(thin(0, 990_000), None);
        assert_eq!(thin(1, 500_000), Some(0));
    }

    #[test]
    fn thin_keys_of_a_count() {
        let t = of(5000);
        assert_eq!(t.keys().collect::<Vec<_>>(), ["p999", "p9999"]);
        assert_eq!(t["p999"], 5);
        assert_eq!(t["p9999"], 0);
        assert!(of(100_000).is_empty());
        assert!(of(0).is_empty());
        assert_eq!(of(10).len(), 7);
        assert_eq!(mark("1.00ms".into(), Some(3)), "1.00ms*");
        assert_eq!(mark("1.00ms".into(), None), "1.00ms");
        assert_eq!(note(&[]), None);
    }
}
