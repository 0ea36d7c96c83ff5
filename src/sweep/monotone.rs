//! Monotone verdicts: whether the step just measured contradicts one already recorded, so
//! that both are measured again (pure: no clock, no I/O). The bisection assumes that more
//! load is never better: a load above one that failed fails too. Two steps contradict that
//! when a lower load did not hold although a higher one did (a verdict inversion), or when
//! a lower load's percentile lies, interval and all, above a higher load's (a figure
//! inversion: the lower load was measured clearly slower, so one of the two was noise).
//!
//! The search itself only measures inside its bracket (above every load that held, below
//! every load that broke), so its verdicts cannot invert (unit-tested in `search.rs`); a
//! figure inversion can, and it is what moves an answer on one noisy step: the issue's
//! sweep passed 1,444 req/s at p99 10.0 ms where 1,258 had measured 14.0 ms. Only a step
//! that held is checked (its verdict is what the answer rests on), once.

use crate::report::ci::Ci;

use super::file::grouped;
use super::objective::{Pct, StepFigures};

/// A step as the check reads it.
#[derive(Clone, Copy, Debug)]
pub struct Seen<'a> {
    pub load: u64,
    /// Whether the step held the objective.
    pub held: bool,
    pub figures: &'a StepFigures,
}

/// The recorded step to measure again with the new one, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Recheck {
    pub other: u64,
    pub why: String,
}

/// An interval's cell for the reason ("8.70-11.60ms").
fn cell(ci: &Ci) -> String {
    crate::report::ci::cell(Some(ci))
}

/// Why `lower` and `higher` contradict each other on percentile `pct` (bound `max_ms`), if
/// they do in a way that could move a verdict: the lower load's interval wholly above the
/// higher load's, and noise of the size the pair shows able to carry the higher step past
/// the bound. The pair shows that one measurement can come out `lower.high / higher.low`
/// times another; when the higher step's upper end times that factor stays within the
/// bound, no noise of that size changes its verdict, and measuring again would only spend
/// time (a 2.3 ms against a 2.0 ms p50 under a 10 s bound is such a pair).
fn figure_inversion(
    (pct, max_ms): (Pct, f64),
    lower: &Seen,
    higher: &Seen,
    unit: &str,
) -> Option<String> {
    let (_, lo_ci) = lower.figures.at(pct);
    let (_, hi_ci) = higher.figures.at(pct);
    let (lo_ci, hi_ci) = (lo_ci?, hi_ci?);
    let (lo_low, lo_high, hi_low, hi_high) = (lo_ci.low?, lo_ci.high?, hi_ci.low?, hi_ci.high?);
    let material = hi_low > 0.0 && hi_high * (lo_high / hi_low) > max_ms;
    (lo_low > hi_high && material).then(|| {
        format!(
            "not monotone: {} at {} {unit} (CI {}) lies wholly above {} at {} {unit} (CI {}), a higher load",
            pct.label(),
            grouped(lower.load),
            cell(&lo_ci),
            pct.label(),
            grouped(higher.load),
            cell(&hi_ci)
        )
    })
}

/// Whether `new`, a step that held, contradicts a recorded lower load: that load (the
/// highest of those that do) and why; None when every lower load is consistent with it.
/// `bounds` are the objective's latency bounds (the figures the verdicts rest on), each a
/// percentile and its bound in milliseconds.
pub fn recheck(
    recorded: &[Seen],
    new: &Seen,
    bounds: &[(Pct, f64)],
    unit: &str,
) -> Option<Recheck> {
    if !new.held {
        return None;
    }
    let mut lower: Vec<&Seen> = recorded.iter().filter(|r| r.load < new.load).collect();
    lower.sort_by_key(|r| std::cmp::Reverse(r.load));
    lower.into_iter().find_map(|r| {
        let why = if r.held {
            bounds
                .iter()
                .find_map(|&b| figure_inversion(b, r, new, unit))?
        } else {
            format!(
                "not monotone: {} {unit} did not hold although {} {unit}, a higher load, did",
                grouped(r.load),
                grouped(new.load)
            )
        };
        Some(Recheck { other: r.load, why })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(p99: f64, low: f64, high: f64) -> StepFigures {
        StepFigures {
            p99_ms: p99,
            p99_ci: Some(Ci {
                low: Some(low),
                high: Some(high),
                wide: false,
            }),
            ..StepFigures::default()
        }
    }

    #[test]
    fn a_lower_load_clearly_slower_than_a_higher_one_that_held_is_rechecked() {
        // The sweep: 1,258 at p99 14.0 ms, 1,379 at 11.1, then 1,444 at 10.0.
        let (a, b, c) = (
            figures(14.0, 12.9, 15.3),
            figures(11.1, 10.2, 12.4),
            figures(10.0, 8.7, 11.6),
        );
        let seen = |load, held, f| Seen {
            load,
            held,
            figures: f,
        };
        let recorded = [seen(1258, true, &a), seen(1379, true, &b)];
        let new = seen(1444, true, &c);
        let r = recheck(&recorded, &new, &[(Pct::P99, 20.0)], "req/s").unwrap();
        assert_eq!(r.other, 1258);
        assert_eq!(
            r.why,
            "not monotone: p99 at 1,258 req/s (CI 12.90-15.30ms) lies wholly above p99 at 1,444 req/s (CI 8.70-11.60ms), a higher load"
        );
        // Overlapping intervals (1,379 against 1,444) are noise within the margin.
        assert_eq!(
            recheck(&recorded[1..], &new, &[(Pct::P99, 20.0)], "req/s"),
            None
        );
        // Far from the bound the same inversion moves no verdict: 11.6 ms x 15.3/8.7 is
        // 20.4 ms, past a 20 ms bound but within 21 ms, and far within 10 s.
        assert_eq!(recheck(&recorded, &new, &[(Pct::P99, 21.0)], "req/s"), None);
        assert_eq!(
            recheck(&recorded, &new, &[(Pct::P99, 10_000.0)], "req/s"),
            None
        );
        // Only the objective's percentiles count, and only a step that held is checked.
        assert_eq!(recheck(&recorded, &new, &[(Pct::P50, 20.0)], "req/s"), None);
        let failed = seen(1444, false, &c);
        assert_eq!(
            recheck(&recorded, &failed, &[(Pct::P99, 20.0)], "req/s"),
            None
        );
        // A higher load is never a contradiction of a lower one that held.
        let above = [seen(2000, true, &a)];
        assert_eq!(recheck(&above, &new, &[(Pct::P99, 20.0)], "req/s"), None);
        // An unknown side decides nothing.
        let unknown = StepFigures {
            p99_ci: Some(Ci {
                low: None,
                high: Some(30.0),
                wide: true,
            }),
            ..StepFigures::default()
        };
        let r = [seen(1258, true, &unknown)];
        assert_eq!(recheck(&r, &new, &[(Pct::P99, 20.0)], "req/s"), None);
    }

    #[test]
    fn a_lower_load_that_failed_under_one_that_held_is_rechecked_nearest_first() {
        let f = figures(10.0, 9.0, 11.0);
        let seen = |load, held| Seen {
            load,
            held,
            figures: &f,
        };
        let recorded = [seen(100, false), seen(200, false), seen(300, true)];
        let r = recheck(&recorded, &seen(400, true), &[(Pct::P99, 20.0)], "req/s").unwrap();
        assert_eq!(r.other, 200);
        assert_eq!(
            r.why,
            "not monotone: 200 req/s did not hold although 400 req/s, a higher load, did"
        );
        assert_eq!(
            recheck(
                &recorded[2..],
                &seen(400, true),
                &[(Pct::P99, 20.0)],
                "req/s"
            ),
            None
        );
    }
}
