//! The sweep run: a checked plan (nothing sent before it is checked), one session (checks and
//! setup once), the search's steps over it, each judged and printed as soon as it ends,
//! one cleanup, then the answer, the results file and the exit status: 0 with an answer,
//! 1 when the first step already breaks the objective, 2 for bad input.
//!
//! Rate steps run over one held engine (`Session::hold`): the connections are opened
//! once, before the first step's warm-up, and stay open and idle while the search picks
//! the next step; each step has its own schedule, warm-up and statistics (over worker
//! processes too, which are started once). A cluster target (`--nodes active` or `all`;
//! `each` is refused when the plan is made) is held the same way, on the nodes its single run loads.
//! Steps that cannot share connections (closed-model steps, whose connection count is the
//! load; --no-keepalive) are each a `one_step::step`, which
//! opens and closes its own. The session, its steps and its cleanup follow the run-step
//! skeleton of `session::one_step`, as `vblast run` and `vblast ab` do. What a step costs beyond its planned time is in
//! `timing.overhead_ms` of the results file. The results file is written after every
//! step.

use std::time::{Instant, SystemTime};

use crate::config::scenario::{Load, Workload};
use crate::error::{Ending, Error};
use crate::report::{Model, RunInfo};
use crate::results::Results;
use crate::session::one_step::{self, Opened, Probe, Showing};
use crate::session::{Session, StepResult};
use crate::signals::Stop;

use super::file::{Step, Sweep, Timing, judge};
use super::plan::{Plan, SweepOutput};
use super::render;
use super::repeat::{Repeating, pool};
use super::search::{End, Next, Phase, StepVerdict};

/// Prints `bytes` on stdout: a write error (a full disk, `> /dev/full`) is an output error
/// that ends the sweep, as the report would be lost; a reader that closed the pipe early
/// (`vblast sweep ... | head`) took what it wanted and is not one.
fn out(bytes: &[u8]) -> Result<(), Error> {
    crate::results::deliver::print_or_fail(bytes)
}

/// Runs `vblast sweep ...`.
pub fn run(plan: &Plan, args: &SweepOutput, stop: &Stop) -> Ending {
    let text = args.text;
    let scenario = &plan.scenario;
    let search = match plan.spec.search() {
        Ok(s) => s,
        Err(e) => return Ending::Failed(Error::input(e)),
    };
    // The run-step skeleton (`session::one_step`): the session opened, the cluster as it
    // answered, then the steps (held, or each on its own), then the cleanup.
    let showing = Showing {
        quiet: args.quiet,
        progress: args.progress,
        metrics: None,
        probe: Probe::Skip,
        watch: None,
        server: args.server.as_ref(),
    };
    let Opened {
        mut session,
        setup_s,
        ..
    } = match one_step::open(scenario, stop, &showing, &mut |_| Ok(())) {
        Ok(o) => o,
        Err(e) => return Ending::Failed(e),
    };
    let target = session.target();
    let mut spec = plan.spec.clone();
    spec.target = if matches!(scenario.workload, Workload::Url(_)) {
        format!("{}{}", target.base(), target.path)
    } else {
        target.base()
    };
    spec.operation = session.op_names().join(",");
    let sweep = Sweep {
        vblast_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        host: crate::results::hostname(),
        scenario: scenario.redacted(),
        spec,
        steps: Vec::new(),
        interrupted: false,
        setup_s,
        cleanup_s: 0.0,
    };
    let header = if text {
        let mut b = Vec::new();
        let _ = render::header(&sweep.spec, &mut b);
        out(&b)
    } else {
        Ok(())
    };
    let mut steps = Steps {
        args,
        plan,
        op_names: session.op_names(),
        differences: scenario.differences.clone(),
        stop,
        text,
        search,
        sweep,
        judged: Vec::new(),
        failure: None,
        end: None,
        saving: None,
        repeating: None,
        rechecking: None,
        checked: Vec::new(),
        file_failed: false,
    };
    match header {
        Ok(()) => run_steps(&mut session, &mut steps, &showing),
        Err(e) => steps.fail(e),
    }
    // Before the final write, which must come last; its error is the final write's too.
    let _ = steps.saved();
    let cleanup_started = Instant::now();
    let cleanup = session.close();
    steps.sweep.cleanup_s = cleanup_started.elapsed().as_secs_f64();
    let Steps {
        args,
        sweep,
        judged,
        end,
        failure,
        file_failed,
        ..
    } = steps;
    finish(args, &sweep, &judged, end, failure, cleanup, file_failed)
}

/// The search's steps over the open session: held over the same connections when they can
/// be (`one_step::held`), else each a `one_step::step` of its own.
fn run_steps(session: &mut Session, steps: &mut Steps, showing: &Showing) {
    let Some((load, phase, first)) = steps.next() else {
        return;
    };
    match session.hold_refusal(&first) {
        Ok(None) => {
            // Rate steps: the same threads and open connections for every step.
            let mut current = (load, phase, first.clone());
            let mut called = Instant::now();
            let mut on_step = |step: Result<StepResult, Error>| {
                let ended = Instant::now();
                let (load, phase, step_load) = &current;
                if !steps.record(*load, *phase, step_load, step, called, ended) {
                    return None;
                }
                let next = steps.next()?;
                current = next;
                called = Instant::now();
                Some(current.2.clone())
            };
            if let Err(e) = one_step::held(session, &first, showing, &mut on_step) {
                steps.fail(e);
            }
        }
        Ok(Some(why)) => {
            // Rate steps would share their connections: say why these do not.
            if first.step.schedule.is_some() || std::env::var_os("VBLAST_SWEEP_TIMING").is_some() {
                eprintln!("vblast: each step opens its own connections: {why}");
            }
            let mut next = Some((load, phase, first));
            while let Some((load, phase, step_load)) = next {
                let called = Instant::now();
                let step = one_step::step(session, &step_load, showing);
                let ended = Instant::now();
                if !steps.record(load, phase, &step_load, step, called, ended) {
                    break;
                }
                next = steps.next();
            }
        }
        Err(e) => steps.fail(e),
    }
}

/// The sweep as it goes: the search, the steps judged so far, and how it ended.
struct Steps<'a> {
    args: &'a SweepOutput,
    plan: &'a Plan,
    op_names: Vec<String>,
    /// A vault-benchmark file's differences, in each step's run section.
    differences: Vec<String>,
    stop: &'a Stop,
    text: bool,
    search: super::search::Search,
    sweep: Sweep,
    judged: Vec<super::file::Judged>,
    failure: Option<Error>,
    end: Option<End>,
    /// The file being written with the steps so far.
    saving: Option<std::thread::JoinHandle<Result<(), crate::error::Cause>>>,
    /// The unclear step being measured again (`repeat.rs`).
    repeating: Option<Repeating>,
    /// A step that contradicts a recorded one (`monotone.rs`): the recorded load measured
    /// again first, then the step itself.
    rechecking: Option<Rechecking>,
    /// The loads already checked for monotone verdicts (each once).
    checked: Vec<u64>,
    /// A step's save failed (the sweep ended on it).
    file_failed: bool,
}

/// Sets step `s`'s timing (called at `called`, ended at `ended`; `before` steps before it)
/// and says it on stderr with `VBLAST_SWEEP_TIMING`; whether that is set.
fn step_timing(
    s: &mut Step,
    step_load: &Load,
    called: Instant,
    ended: Instant,
    before: usize,
    j: &super::file::Judged,
) -> bool {
    let planned = step_load.step.warmup + step_load.step.duration.unwrap_or_default();
    let wall = ended.duration_since(called);
    s.timing = Timing {
        report_ready_ms: ended.elapsed().as_secs_f64() * 1000.0,
        overhead_ms: wall.saturating_sub(planned).as_secs_f64() * 1000.0,
    };
    let timing = std::env::var_os("VBLAST_SWEEP_TIMING").is_some();
    if timing {
        eprintln!(
            "vblast: step {} report ready {:.2} ms after its end; {:.0} ms beyond its planned {:.1} s (connections opened {})",
            before + 1,
            s.timing.report_ready_ms,
            s.timing.overhead_ms,
            planned.as_secs_f64(),
            j.summary.connections_opened
        );
    }
    timing
}

/// A step as `monotone::recheck` reads it.
fn seen(load: u64, j: &super::file::Judged) -> super::monotone::Seen<'_> {
    super::monotone::Seen {
        load,
        held: j.verdict.held(),
        figures: &j.figures,
    }
}

/// A non-monotone pair being measured again: the new step, held back until both are
/// re-measured, the recorded load, and why.
struct Rechecking {
    pending: Repeating,
    other: u64,
    why: String,
}

impl Steps<'_> {
    /// The search's next load and that step's load shape (None: the search is done).
    fn next(&mut self) -> Option<(u64, Phase, Load)> {
        if let Some(r) = &self.rechecking {
            return Some((r.other, r.pending.phase, self.plan.load_for(r.other)));
        }
        if let Some(r) = &self.repeating {
            return Some((r.load, r.phase, self.plan.load_for(r.load)));
        }
        match self.search.next() {
            Next::Done(end) => {
                self.end = Some(end);
                None
            }
            Next::Run { load, phase } => Some((load, phase, self.plan.load_for(load))),
        }
    }

    /// The sweep ends with `e` and no answer.
    fn fail(&mut self, e: Error) {
        if let Some(s) = self.stop.signal() {
            self.sweep.interrupted = true;
            self.failure = Some(Error::Stopped(s));
        } else {
            self.failure.get_or_insert(e);
        }
    }

    /// Judges, prints and saves the step just ended (called at `called`, ended at
    /// `ended`); false when the sweep ends here (a signal, a failure, lost load).
    fn record(
        &mut self,
        load: u64,
        phase: Phase,
        step_load: &Load,
        step: Result<StepResult, Error>,
        called: Instant,
        ended: Instant,
    ) -> bool {
        if let Some(s) = self.stop.signal() {
            // The step was cut short: its figures are not a step's.
            self.sweep.interrupted = true;
            self.failure = Some(Error::Stopped(s));
            return false;
        }
        let step = match step {
            Ok(s) => s,
            Err(e) => {
                self.failure = Some(e);
                return false;
            }
        };
        if let Some(lost) = step.outcome.lost {
            self.failure = Some(Error::lost_load(lost));
            return false;
        }
        let results = self.results_of(step_load, step);
        if let Some(r) = self.rechecking.take() {
            self.rechecked(r, results);
            return true;
        }
        // An unclear step's measurements so far, pooled with this one (`repeat.rs`).
        let (results, repeats, because) = match self.repeating.take() {
            Some(r) if r.load == load => (pool(r.results, results), r.repeats, r.because),
            _ => (results, 0, Vec::new()),
        };
        let j = judge(&self.sweep.spec, load, &results);
        if j.verdict == StepVerdict::Unclear && repeats < self.sweep.spec.max_repeats {
            self.repeat(
                Repeating {
                    load,
                    phase,
                    results,
                    repeats,
                    because,
                },
                &j,
            );
            return true;
        }
        let pending = Repeating {
            load,
            phase,
            results,
            repeats,
            because,
        };
        let Some(Repeating {
            results,
            repeats,
            because,
            ..
        }) = self.check_monotone(pending, &j)
        else {
            return true;
        };
        let sweep = &mut self.sweep;
        let mut s = Step {
            load,
            phase,
            results,
            timing: Timing::default(),
            repeats,
            repeated_because: because,
        };
        let printed = if self.text {
            let mut b = Vec::new();
            let _ = render::row(sweep.steps.len(), &s, &j, &mut b, &sweep.spec);
            out(&b)
        } else {
            Ok(())
        };
        let timing = step_timing(&mut s, step_load, called, ended, sweep.steps.len(), &j);
        self.search.record(j.verdict);
        sweep.steps.push(s);
        self.judged.push(j);
        // The step is kept in the file even when stdout failed; then the sweep ends.
        let saved = self.save_so_far(timing);
        self.file_failed = printed.is_ok() && saved.is_err();
        match printed.and(saved) {
            Ok(()) => true,
            Err(e) => {
                self.fail(e);
                false
            }
        }
    }

    /// The step `r` (judged `j`) as the search may take it: None when it contradicts a
    /// recorded step (`monotone::recheck`), which is then measured again, and `r` after it.
    fn check_monotone(&mut self, r: Repeating, j: &super::file::Judged) -> Option<Repeating> {
        let spec = &self.sweep.spec;
        if self.checked.contains(&r.load) || spec.level().is_none() || r.repeats >= spec.max_repeats
        {
            return Some(r);
        }
        let bounds = self.latency_bounds();
        let recorded: Vec<_> = self
            .sweep
            .steps
            .iter()
            .zip(&self.judged)
            .map(|(s, j)| seen(s.load, j))
            .collect();
        let unit = self.sweep.spec.unit();
        let Some(c) = super::monotone::recheck(&recorded, &seen(r.load, j), &bounds, unit) else {
            return Some(r);
        };
        self.checked.push(r.load);
        eprintln!(
            "vblast: step {} at {} {unit}: {}: measuring both again, their samples pooled",
            self.sweep.steps.len() + 1,
            r.load,
            c.why
        );
        self.rechecking = Some(Rechecking {
            pending: r,
            other: c.other,
            why: c.why,
        });
        None
    }

    /// The objective's latency bounds: each percentile with its bound in milliseconds.
    fn latency_bounds(&self) -> Vec<(super::objective::Pct, f64)> {
        self.sweep
            .spec
            .objectives
            .iter()
            .filter_map(|o| match o {
                super::objective::Objective::Latency { pct, max_ms } => Some((*pct, *max_ms)),
                _ => None,
            })
            .collect()
    }

    /// The recorded load of a non-monotone pair measured again (`results`): its figures
    /// pooled with its step's, said in the pending step's reasons; the pending step is
    /// measured next. The recorded step keeps its verdict (the search already acted on it).
    fn rechecked(&mut self, r: Rechecking, results: Results) {
        let Rechecking {
            mut pending,
            other,
            why,
        } = r;
        let recorded = self.sweep.steps.iter().position(|s| s.load == other);
        let again = match recorded {
            Some(i) => {
                let pooled = pool(self.sweep.steps[i].results.clone(), results);
                let j = judge(&self.sweep.spec, other, &pooled);
                let held = if j.verdict.held() {
                    "held"
                } else {
                    "did not hold"
                };
                // The objective's first percentile (p99 when it bounds none), as judged.
                let pct = self
                    .latency_bounds()
                    .first()
                    .map_or(super::objective::Pct::P99, |b| b.0);
                let (value, ci) = j.figures.at(pct);
                format!(
                    "step {} at {} re-measured and pooled: {} {:.2}ms (CI {}), {held}",
                    i + 1,
                    super::file::grouped(other),
                    pct.label(),
                    value,
                    crate::report::ci::cell(ci.as_ref())
                )
            }
            None => String::new(),
        };
        pending.because.push(format!("{why}; {again}"));
        pending.repeats += 1;
        self.repeating = Some(pending);
    }

    /// This measurement's results, at the sweep's confidence level.
    fn results_of(&self, step_load: &Load, step: StepResult) -> Results {
        let spec = &self.sweep.spec;
        let info = RunInfo {
            target: spec.target.clone(),
            operation: spec.operation.clone(),
            connections: step_load.connections,
            threads: step.layout.threads,
            processes: step.layout.processes,
            model: spec.model,
            target_rate: step_load.step.schedule.as_ref().map(|s| s.peak_rate()),
            keepalive: step_load.keepalive,
            protocol: crate::net::h2::Http2Options::name(step_load.http2),
            warmup_s: step_load.step.warmup.as_secs_f64(),
            interrupted: false,
            setup_s: 0.0,
            cleanup_s: 0.0,
            setup_phases: Vec::new(),
            differences: self.differences.clone(),
            method: None,
        };
        let mut results = Results::build(
            info,
            step.outcome.stats,
            self.op_names.clone(),
            self.plan.scenario.redacted(),
            step.started_at,
        );
        if let Some(level) = spec.level() {
            results.confidence = level;
        }
        results.server_samples = step.server_samples;
        results
    }

    /// The step `r` is unclear: it is measured again (the next step is the same load), and
    /// stderr says why.
    fn repeat(&mut self, mut r: Repeating, j: &super::file::Judged) {
        let why = j.unclear.join("; ");
        eprintln!(
            "vblast: step {} at {} {} is unclear ({why}): measuring it again ({} of at most {}), its samples pooled",
            self.sweep.steps.len() + 1,
            r.load,
            self.sweep.spec.unit(),
            r.repeats + 1,
            self.sweep.spec.max_repeats
        );
        r.because.push(why);
        r.repeats += 1;
        self.repeating = Some(r);
    }

    /// Saves the steps so far. The file holds every step so far, so a sweep killed
    /// mid-way leaves them; until the sweep ends it says "interrupted" (the final write
    /// says how it ended). It is written by a thread of its own, so the next step need not
    /// wait for it.
    /// The previous step's write failing (a full disk) is an output error: the sweep ends
    /// there, as its steps could not be kept, and the final write says why.
    fn save_so_far(&mut self, timing: bool) -> Result<(), Error> {
        let Some(path) = &self.args.output else {
            return Ok(());
        };
        let mut copy = self.sweep.clone();
        let path = path.clone();
        self.saved()?;
        copy.interrupted = true;
        self.saving = Some(std::thread::spawn(move || {
            let written = Instant::now();
            let result = copy.write(&path);
            if timing {
                eprintln!(
                    "vblast: step {} saved to {} in {:.2} ms",
                    copy.steps.len(),
                    path.display(),
                    written.elapsed().as_secs_f64() * 1000.0
                );
            }
            result
        }));
        Ok(())
    }

    /// Waits for the last step's file to be written; its write error, if any.
    fn saved(&mut self) -> Result<(), Error> {
        match self.saving.take().map(|h| h.join()) {
            Some(Ok(Err(e))) => Err(Error::output(e)),
            _ => Ok(()),
        }
    }
}

/// The answer, the files, and the exit status.
fn finish(
    args: &SweepOutput,
    sweep: &Sweep,
    judged: &[super::file::Judged],
    end: Option<End>,
    failure: Option<Error>,
    cleanup: Result<(), Error>,
    file_failed: bool,
) -> Ending {
    let text = args.text;
    let mut failure = failure;
    // Nothing more is printed once stdout failed: that error is the one message.
    if !matches!(failure, Some(Error::Output(_))) {
        let printed = if text {
            let mut b = Vec::new();
            let _ = render::footer(sweep, judged, end, &mut b);
            out(&b)
        } else {
            sweep
                .to_json()
                .map_err(Error::output)
                .and_then(|t| out(t.as_bytes()))
        };
        if let Err(e) = printed {
            failure.get_or_insert(e);
        }
    }
    let mut written = Ok(());
    if let Some(path) = &args.output {
        written = sweep.write(path);
    }
    if let Some(path) = &args.html {
        let page = super::html::render("vblast sweep", &[(String::new(), sweep)]);
        if let Err(e) = std::fs::write(path, page) {
            let e = crate::error::Cause::io(format!("cannot write {}", path.display()), e);
            written = match written {
                Ok(()) => Err(e),
                Err(w) => Err(crate::error::Cause::Several(vec![w, e])),
            };
        }
    }
    if let Some(e) = failure {
        if let Err(c) = cleanup {
            eprintln!("vblast: {c}");
        }
        // The file's error is said unless the sweep ended on it already (a full disk
        // fails a step's save and the final write alike: one message).
        if let Err(w) = written
            && !file_failed
        {
            eprintln!("vblast: {w}");
        }
        return match e {
            Error::Stopped(s) => Ending::Stopped(s),
            e => Ending::Failed(e),
        };
    }
    if let Err(c) = cleanup {
        return Ending::Failed(c);
    }
    if let Err(w) = written {
        return Ending::Failed(Error::output(w));
    }
    if let Some(End::FirstFailed { load }) = end {
        let unit = sweep.spec.unit();
        eprintln!(
            "vblast: the server breaks the objective already at the first step ({load} {unit}): no load in the range is sustained; lower FROM{}",
            if sweep.spec.workload.is_some() {
                " (--scale)"
            } else if sweep.spec.model == Model::Open {
                " (--rate)"
            } else {
                " (--concurrency)"
            }
        );
        return Ending::FailedRequests;
    }
    if let Some(End::FirstUnclear { load }) = end {
        eprintln!(
            "vblast: the first step ({load} {}) was too short to judge against the objective (its percentile's interval stayed unclear): nothing is known of the range; measure longer steps (--step-duration), not a lower FROM (fewer samples still)",
            sweep.spec.unit()
        );
        return Ending::FailedRequests;
    }
    Ending::Ok
}
