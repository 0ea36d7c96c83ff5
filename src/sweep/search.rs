//! Which load the sweep runs next, as a pure state machine (no clock, no I/O): a coarse
//! pass of geometrically spaced steps from the bottom of the range upwards, stopped at the
//! first step that breaks the objective, then a bisection between the highest load that
//! held and the lowest that broke, until the two are within `--resolution`. A step that
//! breaks with errors above `--max-error-ratio` ends the sweep at once: a collapsing
//! server is not pushed further, and the steps after would measure its recovery.
//!
//! Geometric spacing (each coarse load a constant factor above the one before) because
//! the edge of a server is found in ratios, not differences: 500..20000 in 6 steps is 500,
//! 1046, 2187, 4573, 9564, 20000, each about 2.1x the one before, where a linear pass would
//! spend five of its six steps above 4,000. The bisection splits the bracket at its
//! geometric mean for the same reason. Loads are whole numbers (req/s or connections).

use serde::{Deserialize, Serialize};

/// Fewest and most coarse steps.
pub const MIN_STEPS: usize = 2;
pub const MAX_STEPS: usize = 100;

/// Which pass a step belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Coarse,
    Bisect,
}

/// How a step measured against the objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepVerdict {
    Pass,
    Fail,
    /// Failed with an error ratio above --max-error-ratio: the sweep ends here.
    Broken,
    /// Neither clearly held nor clearly failed after its repeats (a percentile's interval
    /// straddled its bound): counted as failed.
    Unclear,
}

impl StepVerdict {
    /// Whether the search counts the step as holding the objective.
    pub fn held(self) -> bool {
        self == StepVerdict::Pass
    }
}

/// The most repeats of an unclear step `--max-repeats` takes.
pub const MAX_REPEATS: u32 = 10;

/// A pair of steps whose verdicts are not monotone in the load: `lower` did not hold
/// although `higher`, a higher load, did. The first such pair, lowest failing load first.
pub fn inversion(steps: &[(u64, StepVerdict)]) -> Option<(u64, u64)> {
    let mut failed: Vec<u64> = steps
        .iter()
        .filter(|(_, v)| !v.held())
        .map(|(l, _)| *l)
        .collect();
    failed.sort_unstable();
    failed.into_iter().find_map(|low| {
        steps
            .iter()
            .filter(|(l, v)| v.held() && *l > low)
            .map(|(l, _)| *l)
            .min()
            .map(|high| (low, high))
    })
}

/// How close the bracket must be before the bisection stops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Resolution {
    /// The gap, as a fraction of the load that held (0.05 for "5%").
    Relative(f64),
    /// The gap in load units (req/s or connections).
    Absolute(u64),
}

/// A sweep's range, steps or resolution that is refused; the text names the flag.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SearchError {
    #[error(
        "--resolution {0}: give a percentage of the load (5%) or a whole number of req/s or connections (250)"
    )]
    Resolution(String),
    #[error("--resolution {0}: the percentage must be above 0 and below 100")]
    ResolutionPercent(String),
    #[error("--resolution {0}: must be at least 1")]
    ResolutionZero(String),
    #[error("the range must start at 1 or more")]
    StartsAtZero,
    #[error("the range {0}..{1} is upside down or empty: give FROM..TO with FROM below TO")]
    Empty(u64, u64),
    #[error("--steps {0}: give {MIN_STEPS} to {MAX_STEPS} coarse steps")]
    Steps(usize),
}

/// For the sweep's flag checks, whose own errors are still sentences (the same text).
impl Resolution {
    /// "5%" (relative) or "250" (absolute, in load units).
    pub fn parse(text: &str) -> Result<Resolution, SearchError> {
        let t = text.trim();
        let bad = || SearchError::Resolution(text.into());
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| bad())?;
            if !(v > 0.0 && v < 100.0) {
                return Err(SearchError::ResolutionPercent(text.into()));
            }
            Ok(Resolution::Relative(v / 100.0))
        } else {
            let v: u64 = t.parse().map_err(|_| bad())?;
            if v == 0 {
                return Err(SearchError::ResolutionZero(text.into()));
            }
            Ok(Resolution::Absolute(v))
        }
    }

    /// Whether the bracket `pass..fail` is narrow enough.
    fn reached(self, pass: u64, fail: u64) -> bool {
        let gap = fail.saturating_sub(pass);
        gap <= 1
            || match self {
                Resolution::Relative(r) => gap as f64 <= r * pass as f64,
                Resolution::Absolute(a) => gap <= a,
            }
    }
}

/// How the sweep ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "ending")]
pub enum End {
    /// The edge, narrowed to the resolution: `pass` held, `fail` broke.
    Edge { pass: u64, fail: u64 },
    /// Every coarse step held: the answer is at least the top of the range.
    AllPassed { top: u64 },
    /// The first step already broke the objective: no answer in the range.
    FirstFailed { load: u64 },
    /// The first step could not be judged (unclear after its repeats: its percentile's
    /// interval still straddled the bound, or too few samples to bound it): its steps were
    /// too short to say anything, and a lower FROM would give fewer samples still.
    FirstUnclear { load: u64 },
    /// A step broke with errors above --max-error-ratio: ended there, without narrowing.
    Broken { pass: u64, fail: u64 },
}

/// What to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Run { load: u64, phase: Phase },
    Done(End),
}

/// The search over one range.
#[derive(Clone, Debug)]
pub struct Search {
    coarse: Vec<u64>,
    resolution: Resolution,
    /// Index of the next coarse load.
    next_coarse: usize,
    /// Highest load that held, lowest that broke (the bracket).
    pass: Option<u64>,
    fail: Option<u64>,
    next: Next,
}

/// `steps` loads from `from` to `to`, both included, each a constant factor above the one
/// before, rounded to whole numbers; repeats (narrow ranges) are dropped.
pub fn coarse_loads(from: u64, to: u64, steps: usize) -> Vec<u64> {
    let mut loads: Vec<u64> = Vec::with_capacity(steps);
    let ratio = to as f64 / from as f64;
    for i in 0..steps {
        let load = if i + 1 == steps {
            to
        } else {
            let x = from as f64 * ratio.powf(i as f64 / (steps - 1) as f64);
            (x.round() as u64).clamp(from, to)
        };
        if loads.last() != Some(&load) {
            loads.push(load);
        }
    }
    loads
}

impl Search {
    /// A search over `from..to` (whole numbers, `from` < `to`) with `steps` coarse steps.
    pub fn new(
        from: u64,
        to: u64,
        steps: usize,
        resolution: Resolution,
    ) -> Result<Search, SearchError> {
        if from == 0 {
            return Err(SearchError::StartsAtZero);
        }
        if from >= to {
            return Err(SearchError::Empty(from, to));
        }
        if !(MIN_STEPS..=MAX_STEPS).contains(&steps) {
            return Err(SearchError::Steps(steps));
        }
        let coarse = coarse_loads(from, to, steps);
        let next = Next::Run {
            load: coarse[0],
            phase: Phase::Coarse,
        };
        Ok(Search {
            coarse,
            resolution,
            next_coarse: 0,
            pass: None,
            fail: None,
            next,
        })
    }

    /// The coarse pass's loads.
    pub fn coarse(&self) -> &[u64] {
        &self.coarse
    }

    /// The step to run next, or how the sweep ended.
    pub fn next(&self) -> Next {
        self.next
    }

    /// Records the verdict of the step `next` returned and decides the one after.
    /// Ignored once the search is done.
    pub fn record(&mut self, verdict: StepVerdict) {
        let Next::Run { load, phase } = self.next else {
            return;
        };
        match verdict {
            StepVerdict::Pass => {
                self.pass = Some(load);
                if phase == Phase::Coarse {
                    self.next_coarse += 1;
                }
            }
            StepVerdict::Fail | StepVerdict::Unclear => self.fail = Some(load),
            StepVerdict::Broken => {
                self.next = Next::Done(match self.pass {
                    None => End::FirstFailed { load },
                    Some(pass) => End::Broken { pass, fail: load },
                });
                return;
            }
        }
        self.next = match (self.pass, self.fail) {
            (pass, None) => match self.coarse.get(self.next_coarse) {
                Some(&load) => Next::Run {
                    load,
                    phase: Phase::Coarse,
                },
                None => Next::Done(End::AllPassed {
                    top: pass.unwrap_or(load),
                }),
            },
            (None, Some(fail)) if verdict == StepVerdict::Unclear => {
                Next::Done(End::FirstUnclear { load: fail })
            }
            (None, Some(fail)) => Next::Done(End::FirstFailed { load: fail }),
            (Some(pass), Some(fail)) => {
                let mid = ((pass as f64) * (fail as f64)).sqrt().round() as u64;
                if self.resolution.reached(pass, fail) || mid <= pass || mid >= fail {
                    Next::Done(End::Edge { pass, fail })
                } else {
                    Next::Run {
                        load: mid,
                        phase: Phase::Bisect,
                    }
                }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a server whose edge is `edge` (loads up to it hold), with
    /// errors above the ratio from `collapse` on; returns the steps run and the end.
    fn sweep(
        from: u64,
        to: u64,
        steps: usize,
        res: Resolution,
        edge: u64,
        collapse: u64,
    ) -> (Vec<(u64, Phase)>, End) {
        let mut s = Search::new(from, to, steps, res).unwrap();
        let mut ran = Vec::new();
        for _ in 0..1000 {
            match s.next() {
                Next::Done(end) => return (ran, end),
                Next::Run { load, phase } => {
                    ran.push((load, phase));
                    s.record(if load >= collapse {
                        StepVerdict::Broken
                    } else if load <= edge {
                        StepVerdict::Pass
                    } else {
                        StepVerdict::Fail
                    });
                }
            }
        }
        panic!("the search did not end");
    }

    #[test]
    fn coarse_loads_are_geometric_and_include_both_ends() {
        assert_eq!(
            coarse_loads(500, 20000, 6),
            vec![500, 1046, 2187, 4573, 9564, 20000]
        );
        assert_eq!(coarse_loads(100, 400, 3), vec![100, 200, 400]);
        // A narrow range drops the repeats.
        assert_eq!(coarse_loads(1, 3, 10), vec![1, 2, 3]);
    }

    #[test]
    fn finds_the_edge_within_the_resolution() {
        let (ran, end) = sweep(500, 20000, 6, Resolution::Relative(0.05), 7000, u64::MAX);
        let coarse: Vec<u64> = ran
            .iter()
            .filter(|s| s.1 == Phase::Coarse)
            .map(|s| s.0)
            .collect();
        // The coarse pass stops at the first break, 9564.
        assert_eq!(coarse, vec![500, 1046, 2187, 4573, 9564]);
        let End::Edge { pass, fail } = end else {
            panic!("{end:?}")
        };
        assert!(pass <= 7000 && fail > 7000, "{pass} {fail}");
        assert!((fail - pass) as f64 <= 0.05 * pass as f64, "{pass} {fail}");
        // Each bisection step lies strictly inside the bracket of the moment.
        let (mut lo, mut hi) = (4573, 9564);
        for &(load, phase) in ran.iter().filter(|s| s.1 == Phase::Bisect) {
            assert_eq!(phase, Phase::Bisect);
            assert!(lo < load && load < hi, "{lo} < {load} < {hi}");
            if load <= 7000 { lo = load } else { hi = load }
        }
        assert_eq!((lo, hi), (pass, fail));
    }

    #[test]
    fn absolute_resolution_and_whole_numbers() {
        let (_, end) = sweep(1, 64, 4, Resolution::Absolute(1), 37, u64::MAX);
        assert_eq!(end, End::Edge { pass: 37, fail: 38 });
        let (_, end) = sweep(100, 20000, 5, Resolution::Absolute(500), 3000, u64::MAX);
        let End::Edge { pass, fail } = end else {
            panic!("{end:?}")
        };
        assert!(pass <= 3000 && fail > 3000 && fail - pass <= 500);
    }

    #[test]
    fn every_step_holding_answers_the_top() {
        let (ran, end) = sweep(100, 800, 4, Resolution::Relative(0.05), 10_000, u64::MAX);
        assert_eq!(ran.len(), 4);
        assert_eq!(end, End::AllPassed { top: 800 });
    }

    #[test]
    fn the_first_step_failing_is_no_answer() {
        let (ran, end) = sweep(100, 800, 4, Resolution::Relative(0.05), 50, u64::MAX);
        assert_eq!(ran, vec![(100, Phase::Coarse)]);
        assert_eq!(end, End::FirstFailed { load: 100 });
        let (ran, end) = sweep(100, 800, 4, Resolution::Relative(0.05), 50, 100);
        assert_eq!(ran.len(), 1);
        assert_eq!(end, End::FirstFailed { load: 100 });
    }

    #[test]
    fn errors_above_the_ratio_end_the_sweep_without_narrowing() {
        // Breaks at 400 with errors: no bisection between 200 and 400.
        let (ran, end) = sweep(100, 800, 4, Resolution::Relative(0.05), 300, 400);
        assert_eq!(
            ran,
            vec![
                (100, Phase::Coarse),
                (200, Phase::Coarse),
                (400, Phase::Coarse)
            ]
        );
        assert_eq!(
            end,
            End::Broken {
                pass: 200,
                fail: 400
            }
        );
        // The same edge without the collapse is narrowed.
        let (ran, _) = sweep(100, 800, 4, Resolution::Relative(0.05), 300, u64::MAX);
        assert!(ran.iter().any(|s| s.1 == Phase::Bisect));
        // A collapse during the bisection ends it too.
        let mut s = Search::new(100, 800, 4, Resolution::Relative(0.01)).unwrap();
        s.record(StepVerdict::Pass);
        s.record(StepVerdict::Pass);
        s.record(StepVerdict::Fail);
        assert_eq!(
            s.next(),
            Next::Run {
                load: 283,
                phase: Phase::Bisect
            }
        );
        s.record(StepVerdict::Broken);
        assert_eq!(
            s.next(),
            Next::Done(End::Broken {
                pass: 200,
                fail: 283
            })
        );
    }

    #[test]
    fn bad_ranges_and_steps_are_refused() {
        let r = Resolution::Relative(0.05);
        assert!(
            Search::new(800, 100, 4, r)
                .unwrap_err()
                .to_string()
                .contains("upside down")
        );
        assert!(Search::new(100, 100, 4, r).is_err());
        assert!(Search::new(0, 100, 4, r).is_err());
        assert!(Search::new(1, 100, 1, r).is_err());
        assert!(Search::new(1, 100, 101, r).is_err());
    }

    #[test]
    fn resolution_parses() {
        assert_eq!(Resolution::parse("5%").unwrap(), Resolution::Relative(0.05));
        assert_eq!(Resolution::parse("250").unwrap(), Resolution::Absolute(250));
        for bad in ["", "0", "0%", "100%", "x", "-5%", "1.5"] {
            assert!(Resolution::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unclear_counts_as_failed_and_inversions_are_found() {
        let mut s = Search::new(100, 400, 3, Resolution::Absolute(1)).unwrap();
        s.record(StepVerdict::Pass);
        s.record(StepVerdict::Unclear);
        assert_eq!(
            s.next(),
            Next::Run {
                load: 141,
                phase: Phase::Bisect
            }
        );
        use StepVerdict::*;
        assert_eq!(inversion(&[(100, Pass), (200, Fail), (150, Pass)]), None);
        assert_eq!(
            inversion(&[(100, Pass), (300, Pass), (200, Unclear)]),
            Some((200, 300))
        );
        assert_eq!(
            inversion(&[(500, Pass), (100, Fail), (200, Fail), (300, Pass)]),
            Some((100, 300))
        );
    }

    /// A first step that stayed unclear is not a first step that broke the objective: its
    /// steps were too short to judge (issue 36 item 4), and no load is saved as broken.
    #[test]
    fn an_unclear_first_step_is_not_a_first_failure() {
        let mut s = Search::new(20, 400, 3, Resolution::Absolute(1)).unwrap();
        s.record(StepVerdict::Unclear);
        assert_eq!(s.next(), Next::Done(End::FirstUnclear { load: 20 }));
        let mut s = Search::new(20, 400, 3, Resolution::Absolute(1)).unwrap();
        s.record(StepVerdict::Fail);
        assert_eq!(s.next(), Next::Done(End::FirstFailed { load: 20 }));
    }

    #[test]
    fn recording_after_the_end_changes_nothing() {
        let mut s = Search::new(1, 2, 2, Resolution::Absolute(1)).unwrap();
        s.record(StepVerdict::Pass);
        s.record(StepVerdict::Pass);
        assert_eq!(s.next(), Next::Done(End::AllPassed { top: 2 }));
        s.record(StepVerdict::Fail);
        assert_eq!(s.next(), Next::Done(End::AllPassed { top: 2 }));
    }

    #[test]
    fn the_search_never_inverts_its_own_verdicts() {
        // Whatever verdicts the steps get (a seeded xorshift over 2,000 sweeps), the search
        // measures only inside its bracket: no load that failed lies below one that held.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut s = Search::new(10, 50_000, 6, Resolution::Relative(0.01)).unwrap();
            let mut seen = Vec::new();
            while let Next::Run { load, .. } = s.next() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v =
                    [StepVerdict::Pass, StepVerdict::Fail, StepVerdict::Unclear][(x % 3) as usize];
                seen.push((load, v));
                s.record(v);
                assert_eq!(inversion(&seen), None, "{seen:?}");
            }
        }
    }
}
