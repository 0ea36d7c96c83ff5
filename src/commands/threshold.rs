//! A run's thresholds as the commands use them (`vblast run`, `vblast ab`,
//! `vblast vault-benchmark run`): the flags' and a file's thresholds checked into one
//! `ThresholdPlan` before anything is sent (`plan`), the abort watch of `--threshold-abort`
//! (`AbortWatch`, fed the live totals: every threshold judged on the figures so far), and
//! how the verdicts end a run (`ending`).

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::cli::threshold::ThresholdArgs;
use crate::config::scenario::{Scenario, Workload};
use crate::engine::Totals;
use crate::error::{Ending, Error};
use crate::signals::Stop;
use crate::stats::figures::{BUCKETS_US, Buckets, OpFigures};
use crate::stats::interval::Confidence;
use crate::threshold::{
    Observed, Threshold, ThresholdMetric, ThresholdPlan, ThresholdResult, ThresholdVerdict,
};
use crate::vault_benchmark::hcl::VbConfig;

/// The names a threshold may give as its operation: each operation's row in the report
/// (a vault-benchmark test's name; `url` for a URL; `NAME/STEP` for a step of an
/// operation of several requests). An operation whose config does not build is bad input.
pub fn op_names(scenario: &Scenario) -> Result<Vec<String>, Error> {
    match &scenario.workload {
        Workload::Url(_) => Ok(vec!["url".into()]),
        Workload::Vault(choices) => crate::session::row_names(choices).map_err(Error::input),
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
    if set.iter().any(|t| t.op.is_some()) {
        crate::threshold::check(&set, Some(&op_names(scenario)?))
    } else {
        crate::threshold::check(&set, None)
    }
    .map_err(|e| Error::input(e.to_string()))?;
    Ok(ThresholdPlan { set, abort_after })
}

/// `--threshold-abort`: fed the threads' live totals on the interval sampler (the thread
/// that receives the progress reports, never a request's), it stops the run
/// (`Stop::abort`) at the first threshold broken on the figures so far, once the grace has
/// passed since the first totals came in: the total's and each operation's (once
/// `name_ops` has named the live figures' operations), latency bounds either way, the
/// success ratio, error counts over their bound, and the achieved rate once its interval
/// over the seconds so far lies beyond the bound.
pub struct AbortWatch<'a> {
    plan: &'a ThresholdPlan,
    stop: &'a Stop,
    level: Confidence,
    /// The run's operations, in the order of the live figures' (`Totals::ops`).
    ops: OnceLock<Vec<String>>,
    state: Mutex<Watched>,
}

/// What the watch has seen so far.
#[derive(Default)]
struct Watched {
    /// When the first totals came in (the grace runs from it).
    first: Option<Instant>,
    rate: RateSamples,
    /// The threshold that stopped the run.
    broken: Option<String>,
}

/// The rate so far of each scope (index 0 the total, 1 + i operation i): the counts of
/// the first sample, those of the last, and each sampled second's rate since.
#[derive(Default)]
struct RateSamples {
    first: Option<(Instant, Vec<u64>)>,
    last: Option<(Instant, Vec<u64>)>,
    per_second: Vec<Vec<f64>>,
}

impl RateSamples {
    /// Takes the scopes' counts at `now` when a second or more has passed since the last.
    fn sample(&mut self, now: Instant, counts: Vec<u64>) {
        match &self.last {
            None => {
                self.per_second = vec![Vec::new(); counts.len()];
                self.first = Some((now, counts.clone()));
                self.last = Some((now, counts));
            }
            Some((at, before)) if now.duration_since(*at) >= Duration::from_secs(1) => {
                let dt = now.duration_since(*at).as_secs_f64();
                for ((rates, c), b) in self.per_second.iter_mut().zip(&counts).zip(before) {
                    rates.push(c.saturating_sub(*b) as f64 / dt);
                }
                self.last = Some((now, counts));
            }
            Some(_) => {}
        }
    }

    /// Scope `i`'s rate so far, with its interval (`per_second_interval`).
    fn observed(&self, i: usize, level: Confidence) -> Option<Observed> {
        let ((t0, c0), (t1, c1)) = (self.first.as_ref()?, self.last.as_ref()?);
        let secs = t1.duration_since(*t0).as_secs_f64();
        let rates = self.per_second.get(i)?;
        if secs <= 0.0 || rates.is_empty() {
            return None;
        }
        let mean = c1.get(i)?.saturating_sub(*c0.get(i)?) as f64 / secs;
        Some(crate::report::thresholds::per_second_interval(
            rates, mean, level,
        ))
    }
}

/// One scope's live figures: its requests, successes and latency buckets.
struct LiveScope {
    requests: u64,
    ok: u64,
    latency: Buckets,
}

impl<'a> AbortWatch<'a> {
    /// `level`: the intervals' confidence level (`--confidence`).
    pub fn new(plan: &'a ThresholdPlan, stop: &'a Stop, level: Confidence) -> AbortWatch<'a> {
        AbortWatch {
            plan,
            stop,
            level,
            ops: OnceLock::new(),
            state: Mutex::new(Watched::default()),
        }
    }

    /// Names the live figures' operations (the session's, once it is open, its steps'
    /// `NAME/STEP` rows included): thresholds on one operation or one step are judged
    /// live from then on.
    pub fn name_ops(&self, names: Vec<String>) {
        let _ = self.ops.set(names);
    }

    /// Judges the totals so far (after the grace), and stops the run at the first broken
    /// threshold.
    pub fn see(&self, threads: &[Totals]) {
        let Some(grace) = self.plan.abort_after else {
            return;
        };
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let now = Instant::now();
        let first = *state.first.get_or_insert(now);
        if self.stop.is_set() || !threads.iter().all(|t| t.reported) {
            return;
        }
        let scopes = scopes(threads);
        state
            .rate
            .sample(now, scopes.iter().map(|s| s.requests).collect());
        if now.duration_since(first) < grace {
            return;
        }
        for t in &self.plan.set {
            let i = match &t.op {
                None => 0,
                Some(op) => match self.op_index(op) {
                    Some(i) => 1 + i,
                    None => continue,
                },
            };
            let observed = match t.metric {
                ThresholdMetric::Rate => state.rate.observed(i, self.level),
                m => scopes.get(i).and_then(|s| live(m, s)),
            };
            if let Some(o) = observed
                && crate::threshold::abort_now(t, &o)
            {
                state.broken = Some(t.text());
                self.stop.abort();
                return;
            }
        }
    }

    /// The index of operation `op` in the live figures (None: not named yet). A step of
    /// an operation of several requests (`NAME/STEP`) is an operation of its own there.
    fn op_index(&self, op: &str) -> Option<usize> {
        self.ops.get()?.iter().position(|o| o == op)
    }

    /// The threshold that stopped the run, if one did.
    pub fn broken(&self) -> Option<String> {
        self.state.lock().ok().and_then(|s| s.broken.clone())
    }
}

/// The threads' totals summed into scopes: the total first, then each operation (none
/// from worker processes, whose progress carries the sums only).
fn scopes(threads: &[Totals]) -> Vec<LiveScope> {
    let mut total = LiveScope {
        requests: 0,
        ok: 0,
        latency: Buckets::default(),
    };
    let n = threads.iter().map(|t| t.ops.len()).max().unwrap_or(0);
    let mut ops = vec![OpFigures::default(); n];
    for t in threads {
        total.requests += t.requests;
        total.ok += t.ok;
        total.latency.add(&t.more.latency);
        for (sum, o) in ops.iter_mut().zip(&t.ops) {
            sum.add(o);
        }
    }
    std::iter::once(total)
        .chain(ops.into_iter().map(|o| LiveScope {
            requests: o.requests,
            ok: o.ok,
            latency: o.latency,
        }))
        .collect()
}

/// What a scope's live figures say of `metric` so far: an exact count, ratio or mean, or
/// for a percentile or the maximum the bucket bounds it certainly lies between (in
/// milliseconds; a side None when the buckets do not bound it), so that only a figure
/// certainly beyond a bound stops a run. None: a figure with no sample yet (the rate is
/// judged from its samples, `RateSamples`).
fn live(metric: ThresholdMetric, s: &LiveScope) -> Option<Observed> {
    let failed = s.requests.saturating_sub(s.ok);
    let f = &s.latency;
    match metric {
        ThresholdMetric::Errors => Some(Observed::exact(failed as f64)),
        ThresholdMetric::Success if s.requests > 0 => {
            Some(Observed::exact(s.ok as f64 * 100.0 / s.requests as f64))
        }
        ThresholdMetric::Mean if f.count > 0 => {
            Some(Observed::exact(f.sum_us / f.count as f64 / 1000.0))
        }
        ThresholdMetric::Rate | ThresholdMetric::Success | ThresholdMetric::Mean => None,
        _ => {
            let n = f.count;
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
            let bounds = || {
                BUCKETS_US
                    .iter()
                    .zip(f.le)
                    .map(|(b, le)| (*b as f64 / 1000.0, (n - le) as f64))
            };
            // Above: more samples above the bound than the figure leaves room for;
            // below: at least one sample fewer than that above it.
            let low = bounds()
                .filter(|(_, above)| *above > allowed)
                .map(|(b, _)| b)
                .next_back();
            let high = bounds()
                .find(|(_, above)| *above + 1.0 <= allowed || *above == 0.0)
                .map(|(b, _)| b);
            if low.is_none() && high.is_none() {
                return None;
            }
            Some(Observed {
                value: low.or(high).unwrap_or_default(),
                low,
                high,
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

    fn scope(requests: u64, ok: u64) -> LiveScope {
        // 100 samples, all between 1 ms and 2.5 ms.
        let latency = Buckets {
            count: 100,
            le: [
                0, 0, 0, 0, 0, 0, 0, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100,
            ],
            ..Buckets::default()
        };
        LiveScope {
            requests,
            ok,
            latency,
        }
    }

    #[test]
    fn live_latency_lies_between_bucket_bounds_that_only_a_clear_excess_sets() {
        let s = scope(100, 100);
        let p50 = live(ThresholdMetric::P50, &s).unwrap();
        assert_eq!((p50.low, p50.high), (Some(1.0), Some(2.5)));
        let stops =
            |t: &str, o: &Observed| crate::threshold::abort_now(&Threshold::parse(t).unwrap(), o);
        assert!(stops("p50<1us", &p50));
        assert!(!stops("p50<5ms", &p50));
        // A lower bound: broken once the figure lies certainly under it.
        assert!(stops("p50>10ms", &p50));
        assert!(!stops("p50>1ms", &p50));
        // The maximum can still grow: a lower bound on it never stops a run.
        let max = live(ThresholdMetric::Max, &s).unwrap();
        assert!(stops("max<1ms", &max));
        assert!(!stops("max>10s", &max));
        assert_eq!(
            live(ThresholdMetric::Errors, &scope(10, 7)),
            Some(Observed::exact(3.0))
        );
        assert_eq!(live(ThresholdMetric::Rate, &s), None);
    }

    /// A server answering in tens of microseconds (nginx on loopback) is judged live too:
    /// the buckets start at 10us, so `p50<1us` stops a run whose p50 lies in 25-50us.
    #[test]
    fn a_percentile_under_100us_is_judged_live() {
        let mut le = [100; crate::stats::figures::NB];
        le[..2].fill(0); // none at or under 10us and 25us; all at or under 50us
        let s = LiveScope {
            requests: 100,
            ok: 100,
            latency: Buckets {
                count: 100,
                le,
                ..Buckets::default()
            },
        };
        let p50 = live(ThresholdMetric::P50, &s).unwrap();
        assert_eq!((p50.low, p50.high), (Some(0.025), Some(0.05)));
        let stops = |t: &str| crate::threshold::abort_now(&Threshold::parse(t).unwrap(), &p50);
        assert!(stops("p50<1us"));
        assert!(stops("p50<20us"));
        assert!(!stops("p50<60us"));
    }

    #[test]
    fn the_rate_so_far_has_an_interval_once_enough_seconds_are_sampled() {
        let mut r = RateSamples::default();
        let t0 = Instant::now();
        let level = Confidence::default();
        for k in 0..3u64 {
            r.sample(t0 + Duration::from_secs(k), vec![10 * k, 5 * k]);
        }
        let o = r.observed(0, level).unwrap();
        assert_eq!((o.value, o.low), (10.0, None));
        // A sample less than a second after the last is not taken.
        r.sample(t0 + Duration::from_millis(2500), vec![1000, 1000]);
        for k in 3..7u64 {
            r.sample(t0 + Duration::from_secs(k), vec![10 * k, 5 * k]);
        }
        let o = r.observed(1, level).unwrap();
        assert_eq!((o.value, o.low, o.high), (5.0, Some(5.0), Some(5.0)));
        let stops = |t: &str| crate::threshold::abort_now(&Threshold::parse(t).unwrap(), &o);
        assert!(stops("rate>=100/s"));
        assert!(stops("rate<1/s"));
        assert!(!stops("rate>=5/s"));
        assert_eq!(r.observed(2, level), None);
    }
}
