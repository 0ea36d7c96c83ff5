//! A run's thresholds as the commands use them (`vblast run`, `vblast ab`,
//! `vblast vault-benchmark run`): the flags' and a file's thresholds checked into one
//! `ThresholdPlan` before anything is sent (`plan`), the abort watch of `--threshold-abort`
//! (`AbortWatch`, fed the live totals), and how the verdicts end a run (`ending`).

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::cli::threshold::ThresholdArgs;
use crate::config::scenario::{Scenario, Workload};
use crate::engine::Totals;
use crate::error::{Ending, Error};
use crate::signals::Stop;
use crate::stats::figures::{BUCKETS_US, Figures};
use crate::threshold::{
    Observed, Threshold, ThresholdMetric, ThresholdPlan, ThresholdResult, ThresholdVerdict,
};
use crate::vault_benchmark::hcl::VbConfig;

/// The names a threshold may give as its operation: each operation's row in the report
/// (a vault-benchmark test's name; `url` for a URL).
pub fn op_names(scenario: &Scenario) -> Vec<String> {
    match &scenario.workload {
        Workload::Url(_) => vec!["url".into()],
        Workload::Vault(choices) => choices
            .iter()
            .map(|c| c.label.clone().unwrap_or_else(|| c.name.clone()))
            .collect(),
    }
}

/// The flags' thresholds and a vault-benchmark file's (its `threshold` blocks), checked as
/// one set against the run's operations: bad input (exit 2) before any request is sent.
/// `--threshold-abort` (or the file's `abort = true`) stops the run on a broken one.
pub fn plan(
    args: &ThresholdArgs,
    file: Option<&VbConfig>,
    scenario: &Scenario,
) -> Result<ThresholdPlan, Error> {
    let from_file = file.map_or(&[][..], |f| &f.thresholds[..]);
    let set: Vec<Threshold> = from_file.iter().chain(&args.threshold).cloned().collect();
    let abort = match (args.threshold_abort, file.and_then(|f| f.threshold_abort)) {
        (true, _) => Some(args.threshold_grace),
        (false, from_file) => from_file,
    };
    checked(set, abort, scenario)
}

/// `set` checked against `scenario`'s operations, with its abort setting.
pub fn checked(
    set: Vec<Threshold>,
    abort_after: Option<Duration>,
    scenario: &Scenario,
) -> Result<ThresholdPlan, Error> {
    if abort_after.is_some() && set.is_empty() {
        return Err(Error::input(
            "--threshold-abort stops a run on a broken threshold: give one with --threshold",
        ));
    }
    crate::threshold::check(&set, Some(&op_names(scenario)))
        .map_err(|e| Error::input(e.to_string()))?;
    Ok(ThresholdPlan { set, abort_after })
}

/// `--threshold-abort`: fed the threads' live totals, it stops the run (`Stop::abort`) at
/// the first threshold on the total broken on the figures so far, once the grace has
/// passed since the first totals came in. Thresholds on one operation are judged at the end
/// only (the live totals are the whole run's).
pub struct AbortWatch<'a> {
    plan: &'a ThresholdPlan,
    stop: &'a Stop,
    first: OnceLock<Instant>,
    /// The threshold that stopped the run.
    broken: Mutex<Option<String>>,
}

impl<'a> AbortWatch<'a> {
    pub fn new(plan: &'a ThresholdPlan, stop: &'a Stop) -> AbortWatch<'a> {
        AbortWatch {
            plan,
            stop,
            first: OnceLock::new(),
            broken: Mutex::new(None),
        }
    }

    /// Judges the totals so far (after the grace), and stops the run at the first broken
    /// threshold.
    pub fn see(&self, threads: &[Totals]) {
        let Some(grace) = self.plan.abort_after else {
            return;
        };
        let first = *self.first.get_or_init(Instant::now);
        if first.elapsed() < grace || self.stop.is_set() || !threads.iter().all(|t| t.reported) {
            return;
        }
        let (requests, ok) = threads
            .iter()
            .fold((0, 0), |(r, k), t| (r + t.requests, k + t.ok));
        let mut f = Figures::default();
        for t in threads {
            f.add(&t.more);
        }
        for t in self.plan.set.iter().filter(|t| t.op.is_none()) {
            if let Some(o) = live(t.metric, requests, ok, &f)
                && crate::threshold::abort_now(t, &o)
            {
                if let Ok(mut b) = self.broken.lock() {
                    *b = Some(t.text());
                }
                self.stop.abort();
                return;
            }
        }
    }

    /// The threshold that stopped the run, if one did.
    pub fn broken(&self) -> Option<String> {
        self.broken.lock().ok().and_then(|b| b.clone())
    }
}

/// What the live totals say of `metric` so far: an exact count or ratio, or for a
/// latency figure the lower side of where it lies (the largest bucket bound it is above,
/// in milliseconds), so that only a figure certainly beyond an upper bound stops a run.
/// None: not judged live (the rate, a figure with no sample yet).
fn live(metric: ThresholdMetric, requests: u64, ok: u64, f: &Figures) -> Option<Observed> {
    let failed = requests.saturating_sub(ok);
    match metric {
        ThresholdMetric::Errors => Some(Observed::exact(failed as f64)),
        ThresholdMetric::Success if requests > 0 => {
            Some(Observed::exact(ok as f64 * 100.0 / requests as f64))
        }
        ThresholdMetric::Mean if f.latency.count > 0 => Some(Observed::exact(
            f.latency.sum_us / f.latency.count as f64 / 1000.0,
        )),
        ThresholdMetric::Rate | ThresholdMetric::Success | ThresholdMetric::Mean => None,
        _ => {
            let n = f.latency.count;
            if n == 0 {
                return None;
            }
            // The share of samples that may lie above the figure: 1 - q (0 for max).
            let q = match metric.percentile_key() {
                Some(key) => crate::report::tails::KEYS
                    .iter()
                    .find(|(k, _, _)| *k == key)
                    .map_or(1.0, |(_, ppm, _)| *ppm as f64 / 1e6),
                None => 1.0,
            };
            let allowed = (1.0 - q) * n as f64;
            let low = BUCKETS_US
                .iter()
                .zip(f.latency.le)
                .filter(|(_, le)| (n - le) as f64 > allowed)
                .map(|(b, _)| *b as f64 / 1000.0)
                .next_back()?;
            Some(Observed {
                value: low,
                low: Some(low),
                high: None,
                interval: true,
            })
        }
    }
}

/// The note of a run a broken threshold stopped (`--threshold-abort`), in every report.
pub fn stopped_early(threshold: &str) -> String {
    format!(
        "stopped early: the threshold {threshold} was broken on the figures so far (--threshold-abort); the figures are those of the requests made until then"
    )
}

/// How the verdicts end a run that otherwise completed: a broken threshold, else an
/// unclear one; None when every threshold holds (or there is none).
pub fn ending(results: &[ThresholdResult]) -> Option<Ending> {
    match crate::report::thresholds::worst(results)? {
        ThresholdVerdict::Broken => Some(Ending::ThresholdBroken),
        ThresholdVerdict::Unclear => Some(Ending::ThresholdUnclear),
        ThresholdVerdict::Holds => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_latency_is_a_lower_side_that_only_a_clear_excess_sets() {
        let mut f = Figures::default();
        // 100 samples, all between 1 ms and 2.5 ms.
        f.latency.count = 100;
        f.latency.le = [
            0, 0, 0, 0, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100,
        ];
        let p50 = live(ThresholdMetric::P50, 100, 100, &f).unwrap();
        assert_eq!(p50.low, Some(1.0));
        let t = Threshold::parse("p50<1us").unwrap();
        assert!(crate::threshold::abort_now(&t, &p50));
        let t = Threshold::parse("p50<5ms").unwrap();
        assert!(!crate::threshold::abort_now(&t, &p50));
        assert_eq!(
            live(ThresholdMetric::Errors, 10, 7, &f),
            Some(Observed::exact(3.0))
        );
        assert_eq!(live(ThresholdMetric::Rate, 10, 7, &f), None);
    }
}
