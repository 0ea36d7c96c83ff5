//! Confidence intervals of percentiles, distribution-free: the order-statistic (binomial)
//! interval, read from an HdrHistogram.
//!
//! Of `n` independent samples, the number `B` at or below the true percentile `p` is
//! binomial (`n`, `p`), whatever the distribution. So the `l`-th smallest sample lies at or
//! below the true percentile unless `B < l`, and the `u`-th at or above it unless `B >= u`.
//! With `l` the smallest rank whose binomial CDF reaches `(1 - level) / 2` and `u` one above
//! the rank where it reaches `(1 + level) / 2`, the true percentile lies between the `l`-th
//! and the `u`-th sample with probability at least `level` (Conover, *Practical
//! Nonparametric Statistics*, 3.2). The bounds are the histogram's values at those ranks,
//! widened to their buckets' edges (the lowest value the lower bucket can hold, the highest
//! the upper can), so the bucketing never narrows the interval. A rank outside `1..=n` (too
//! few samples) leaves that side unknown: nothing is invented.
//!
//! Only the histogram is read, so histograms merged losslessly (shards, worker processes,
//! a sweep step's repeats) give exactly the interval of one histogram of all their samples.

use hdrhistogram::Histogram;

/// The confidence level when none is given.
pub const DEFAULT_LEVEL: f64 = 0.95;

/// A confidence level, strictly between 0 and 1 (`--confidence`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Confidence(f64);

impl Default for Confidence {
    fn default() -> Self {
        Confidence(DEFAULT_LEVEL)
    }
}

/// A confidence level that is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfidenceError {
    #[error(
        "'{0}' is not a confidence level: give one strictly between 0 and 1 (0.95 for 95%, also written 95%)"
    )]
    Range(String),
}

impl Confidence {
    /// "0.95" or "95%"; refused outside (0, 1).
    pub fn parse(text: &str) -> Result<Confidence, ConfidenceError> {
        let t = text.trim();
        let bad = || ConfidenceError::Range(text.into());
        let v: f64 = match t.strip_suffix('%') {
            Some(p) => p.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
            None => t.parse().map_err(|_| bad())?,
        };
        Confidence::new(v).ok_or_else(bad)
    }

    /// The level, when it is strictly between 0 and 1.
    pub fn new(level: f64) -> Option<Confidence> {
        (level.is_finite() && level > 0.0 && level < 1.0).then_some(Confidence(level))
    }

    pub fn level(self) -> f64 {
        self.0
    }

    /// "95%", "99.9%".
    pub fn label(self) -> String {
        let p = self.0 * 100.0;
        let s = format!("{p:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s}%")
    }
}

/// The interval of one percentile, in the histogram's unit; a side is None when there are
/// too few samples to bound it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankInterval {
    pub low: Option<u64>,
    pub high: Option<u64>,
}

impl RankInterval {
    /// Whether neither side is known.
    pub fn unknown(&self) -> bool {
        self.low.is_none() && self.high.is_none()
    }
}

/// The ranks (1-based, `1..=n` when known) bounding percentile `p` of `n` samples at
/// `level`: the order-statistic interval. None on a side the samples cannot bound.
pub fn ranks(n: u64, p: f64, level: Confidence) -> (Option<u64>, Option<u64>) {
    if n == 0 || !(0.0..=1.0).contains(&p) {
        return (None, None);
    }
    let alpha = 1.0 - level.level();
    let (lo, hi) = binomial_quantiles(n, p, alpha / 2.0, 1.0 - alpha / 2.0);
    let low = (lo >= 1).then_some(lo);
    let high = hi.checked_add(1).filter(|&u| u <= n);
    (low, high)
}

/// The interval of quantile `p` (0.99 for p99) of the samples `h` holds.
pub fn of(h: &Histogram<u64>, p: f64, level: Confidence) -> RankInterval {
    let (l, u) = ranks(h.len(), p, level);
    let at = |rank: u64| value_at_rank(h, rank);
    RankInterval {
        low: l.and_then(at).map(|v| h.lowest_equivalent(v)),
        high: u.and_then(at).map(|v| h.highest_equivalent(v)),
    }
}

/// The `rank`-th smallest sample (1-based) as the histogram holds it.
fn value_at_rank(h: &Histogram<u64>, rank: u64) -> Option<u64> {
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            return Some(v.value_iterated_to());
        }
    }
    None
}

/// Binomial (`n`, `p`) quantiles at `q_lo` and `q_hi`: for each, the smallest `k` whose CDF
/// reaches it. Exact (the probabilities summed outwards from the mode) while the spread is
/// small enough to sum; the normal approximation, with continuity correction, beyond it,
/// where it is within a rank.
fn binomial_quantiles(n: u64, p: f64, q_lo: f64, q_hi: f64) -> (u64, u64) {
    if p <= 0.0 {
        return (0, 0);
    }
    if p >= 1.0 {
        return (n, n);
    }
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    if sd > 2000.0 {
        let at = |q: f64| {
            let k = (n as f64 * p + normal_quantile(q) * sd - 0.5).ceil();
            k.clamp(0.0, n as f64) as u64
        };
        return (at(q_lo), at(q_hi));
    }
    let (first, probs) = pmf_window(n, p, sd);
    let quantile = |q: f64| {
        let mut cdf = 0.0;
        for (i, pr) in probs.iter().enumerate() {
            cdf += pr;
            if cdf >= q - 1e-12 {
                return first + i as u64;
            }
        }
        first + probs.len() as u64 - 1
    };
    (quantile(q_lo), quantile(q_hi))
}

/// The binomial probabilities over the window around the mode that holds all but a
/// negligible share of them: the window's first `k` and each probability, normalized.
fn pmf_window(n: u64, p: f64, sd: f64) -> (u64, Vec<f64>) {
    let mode = (((n + 1) as f64) * p).floor().min(n as f64) as u64;
    let reach = (12.0 * sd + 20.0) as u64;
    let first = mode.saturating_sub(reach);
    let last = mode.saturating_add(reach).min(n);
    let odds = p / (1.0 - p);
    let mut t = vec![0.0f64; (last - first + 1) as usize];
    let m = (mode - first) as usize;
    t[m] = 1.0;
    for k in (first..mode).rev() {
        // P(k) = P(k+1) * (k+1) / (n-k) / odds
        let i = (k - first) as usize;
        t[i] = t[i + 1] * (k + 1) as f64 / ((n - k) as f64 * odds);
    }
    for k in mode..last {
        let i = (k - first) as usize;
        t[i + 1] = t[i] * (n - k) as f64 * odds / (k + 1) as f64;
    }
    let sum: f64 = t.iter().sum();
    t.iter_mut().for_each(|x| *x /= sum);
    (first, t)
}

/// The standard normal quantile (Acklam's rational approximation, relative error below
/// 1.2e-9).
fn normal_quantile(q: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549671010229583,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let q = q.clamp(1e-300, 1.0 - 1e-16);
    let tail = |r: f64| {
        (((((C[0] * r + C[1]) * r + C[2]) * r + C[3]) * r + C[4]) * r + C[5])
            / ((((D[0] * r + D[1]) * r + D[2]) * r + D[3]) * r + 1.0)
    };
    if q < 0.02425 {
        tail((-2.0 * q.ln()).sqrt())
    } else if q > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - q).ln()).sqrt())
    } else {
        let x = q - 0.5;
        let r = x * x;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * x
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Hist;

    /// xorshift64*: a fixed, seeded stream of uniform numbers in (0, 1).
    struct Rng(u64);

    impl Rng {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
            ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        /// Exponential with mean `mean_us`, in whole microseconds (at least 1).
        fn exponential(&mut self, mean_us: f64) -> u64 {
            ((-self.uniform().ln() * mean_us) as u64).max(1)
        }
    }

    /// Of `trials` histograms of `n` exponential samples, how many intervals at `p` cover
    /// the true percentile, and how many had both sides known.
    fn coverage(n: usize, p: f64, trials: usize, seed: u64) -> (usize, usize) {
        let mean = 10_000.0;
        let truth = -(1.0 - p).ln() * mean;
        let mut rng = Rng(seed);
        let (mut covered, mut known) = (0, 0);
        for _ in 0..trials {
            let mut h = Hist::default();
            for _ in 0..n {
                h.record(rng.exponential(mean));
            }
            let i = of(&h.0, p, Confidence::default());
            if let (Some(lo), Some(hi)) = (i.low, i.high) {
                known += 1;
                if lo as f64 <= truth && truth <= hi as f64 {
                    covered += 1;
                }
            }
        }
        (covered, known)
    }

    #[test]
    fn covers_the_true_percentile_about_95_times_in_100() {
        for (n, p, seed) in [(1000, 0.5, 1), (1000, 0.99, 2), (5000, 0.999, 3)] {
            let (covered, known) = coverage(n, p, 1000, seed);
            assert_eq!(known, 1000, "n {n} p {p}");
            eprintln!("n {n} p {p}: {covered} of 1000 intervals covered the true percentile");
            assert!(
                (920..=980).contains(&covered),
                "n {n} p {p}: {covered} of 1000 covered"
            );
        }
    }

    #[test]
    fn ranks_match_the_binomial() {
        // n = 100, p = 0.5, 95%: the textbook ranks 40 and 61.
        assert_eq!(ranks(100, 0.5, Confidence::default()), (Some(40), Some(61)));
        // Too few samples above p99 of 100: the upper side is unknown.
        assert_eq!(ranks(100, 0.99, Confidence::default()).1, None);
        // Five samples cannot bound the median at 95% on either side.
        assert_eq!(ranks(5, 0.5, Confidence::default()), (None, None));
        assert_eq!(ranks(0, 0.5, Confidence::default()), (None, None));
        // Exact and normal approximations agree where they meet.
        let exact = binomial_quantiles(16_000_000, 0.5, 0.025, 0.975);
        let sd = (16_000_000f64 * 0.25).sqrt();
        assert!(
            (exact.0 as f64 - (8e6 - 1.96 * sd)).abs() < 2.0,
            "{exact:?}"
        );
        let big = binomial_quantiles(100_000_000, 0.5, 0.025, 0.975);
        assert!(
            (big.1 as f64 - (5e7 + 1.959964 * 5000.0)).abs() < 2.0,
            "{big:?}"
        );
        // A higher level widens the ranks.
        let (l95, u95) = ranks(10_000, 0.99, Confidence::default());
        let (l99, u99) = ranks(10_000, 0.99, Confidence::new(0.99).unwrap());
        assert!(l99 < l95 && u99 > u95);
    }

    #[test]
    fn merged_histograms_give_the_interval_of_all_their_samples() {
        let mut rng = Rng(7);
        let (mut a, mut b, mut all) = (Hist::default(), Hist::default(), Hist::default());
        for i in 0..30_000 {
            let v = rng.exponential(5000.0);
            if i % 3 == 0 { &mut a } else { &mut b }.record(v);
            all.record(v);
        }
        let mut merged = Hist::from_base64(&a.to_base64()).unwrap();
        merged.add(&b);
        for p in [0.5, 0.9, 0.99, 0.999, 0.9999] {
            let c = Confidence::default();
            assert_eq!(of(&merged.0, p, c), of(&all.0, p, c), "p {p}");
        }
    }

    #[test]
    fn bounds_enclose_the_point_value_and_too_few_samples_are_unknown() {
        let mut h = Hist::default();
        for v in 1..=2000u64 {
            h.record(v * 10);
        }
        let i = of(&h.0, 0.99, Confidence::default());
        let point = h.0.value_at_quantile(0.99);
        assert!(i.low.unwrap() <= point && point <= i.high.unwrap(), "{i:?}");
        let mut few = Hist::default();
        for v in 1..=4u64 {
            few.record(v * 1000);
        }
        assert!(of(&few.0, 0.5, Confidence::default()).unknown());
        assert!(of(&Hist::default().0, 0.5, Confidence::default()).unknown());
    }

    #[test]
    fn levels_parse_and_are_refused_outside_0_1() {
        assert_eq!(Confidence::parse("0.99").unwrap().level(), 0.99);
        assert_eq!(Confidence::parse("95%").unwrap().level(), 0.95);
        assert_eq!(Confidence::default().label(), "95%");
        assert_eq!(Confidence::new(0.999).unwrap().label(), "99.9%");
        for bad in ["0", "1", "1.5", "-0.1", "x", "", "100%", "nan", "inf"] {
            assert!(Confidence::parse(bad).is_err(), "{bad}");
        }
    }
}
