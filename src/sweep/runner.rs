//! The sweep run: flags checked into a plan (nothing sent before), one session (checks and
//! setup once), the search's steps over it, each judged and printed as soon as it ends,
//! one cleanup, then the answer, the results file and the exit status: 0 with an answer,
//! 1 when the first step already breaks the objective, 2 for bad input.
//!
//! Each step is a `Session::step`, which runs the engine afresh: the connections of a
//! step are opened before its warm-up and closed at its end, so rate steps do not share
//! open connections; what reopening costs is measured per step (`timing.overhead_ms` in
//! the results file) and the warm-up keeps it out of the figures.

use std::io::Write;
use std::time::{Instant, SystemTime};

use crate::engine;
use crate::error::{Ending, Error};
use crate::live::Live;
use crate::report::{Model, RunInfo};
use crate::results::Results;
use crate::scenario::Workload;
use crate::session::Session;
use crate::signals::Stop;

use super::args::SweepArgs;
use super::file::{Step, Sweep, Timing, judge};
use super::render;
use super::search::{End, Next};

fn out(bytes: &[u8]) {
    let mut o = std::io::stdout().lock();
    // A closed pipe (`vblast sweep ... | head`) is not an error worth a panic.
    let _ = o.write_all(bytes);
    let _ = o.flush();
}

/// Runs `vblast sweep ...`.
pub fn run(args: &mut SweepArgs, stop: &Stop) -> Ending {
    let plan = match args.plan() {
        Ok(p) => p,
        Err(e) => return Ending::Failed(Error::Input(e)),
    };
    let text = args.run.out.format == crate::cli::Format::Text;
    let scenario = &plan.scenario;
    let mut search = match plan.spec.search() {
        Ok(s) => s,
        Err(e) => return Ending::Failed(Error::Input(e)),
    };
    let setup_started = Instant::now();
    let mut session = match Session::open(scenario, stop) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    let setup_s = setup_started.elapsed().as_secs_f64();
    let target = session.target();
    let mut spec = plan.spec.clone();
    spec.target = if matches!(scenario.workload, Workload::Url(_)) {
        format!("{}{}", target.base(), target.path)
    } else {
        target.base()
    };
    spec.operation = session.op_names().join(",");
    let mut sweep = Sweep {
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
    if text {
        let mut b = Vec::new();
        let _ = render::header(&sweep.spec, &mut b);
        out(&b);
    }
    let planned = scenario.load.warmup + scenario.load.duration.unwrap_or_default();
    let mut judged = Vec::new();
    let mut failure = None;
    let end = loop {
        let (load, phase) = match search.next() {
            Next::Done(end) => break Some(end),
            Next::Run { load, phase } => (load, phase),
        };
        let step_load = plan.load_for(load);
        let live = Live::new(args.run.quiet, args.run.progress);
        let show = |p: &[engine::Totals]| live.show(p);
        let called = Instant::now();
        let step = session.step(
            &step_load,
            live.enabled().then_some(&show as engine::ProgressFn<'_>),
        );
        let ended = Instant::now();
        live.clear();
        if let Some(s) = stop.signal() {
            // The step was cut short: its figures are not a step's.
            sweep.interrupted = true;
            failure = Some(Error::Stopped(s));
            break None;
        }
        let step = match step {
            Ok(s) => s,
            Err(e) => {
                failure = Some(e);
                break None;
            }
        };
        if let Some(lost) = step.outcome.lost {
            failure = Some(Error::LostLoad(lost));
            break None;
        }
        let info = RunInfo {
            target: sweep.spec.target.clone(),
            operation: sweep.spec.operation.clone(),
            connections: step_load.connections,
            threads: step.layout.threads,
            processes: step.layout.processes,
            model: sweep.spec.model,
            target_rate: step_load.schedule.as_ref().map(|s| s.peak_rate()),
            keepalive: step_load.keepalive,
            warmup_s: step_load.warmup.as_secs_f64(),
            interrupted: false,
            setup_s: 0.0,
            cleanup_s: 0.0,
        };
        let results = Results::build(
            info,
            step.outcome.stats,
            session.op_names(),
            scenario.redacted(),
            step.started_at,
        );
        let j = judge(&sweep.spec, load, &results);
        let mut s = Step {
            load,
            phase,
            results,
            timing: Timing::default(),
        };
        if text {
            let mut b = Vec::new();
            let _ = render::row(sweep.steps.len(), &s, &j, &mut b);
            out(&b);
        }
        let wall = ended.duration_since(called);
        s.timing = Timing {
            report_ready_ms: ended.elapsed().as_secs_f64() * 1000.0,
            overhead_ms: wall.saturating_sub(planned).as_secs_f64() * 1000.0,
        };
        if std::env::var_os("VBLAST_SWEEP_TIMING").is_some() {
            eprintln!(
                "vblast: step {} report ready {:.2} ms after its end; {:.0} ms beyond its planned {:.1} s (connections opened {})",
                sweep.steps.len() + 1,
                s.timing.report_ready_ms,
                s.timing.overhead_ms,
                planned.as_secs_f64(),
                j.summary.connections_opened
            );
        }
        search.record(j.verdict);
        sweep.steps.push(s);
        judged.push(j);
    };
    let cleanup_started = Instant::now();
    let cleanup = session.close();
    sweep.cleanup_s = cleanup_started.elapsed().as_secs_f64();
    finish(args, &sweep, &judged, end, failure, cleanup, text)
}

/// The answer, the files, and the exit status.
fn finish(
    args: &SweepArgs,
    sweep: &Sweep,
    judged: &[super::file::Judged],
    end: Option<End>,
    failure: Option<Error>,
    cleanup: Result<(), Error>,
    text: bool,
) -> Ending {
    if text {
        let mut b = Vec::new();
        let _ = render::footer(sweep, judged, end, &mut b);
        out(&b);
    } else {
        match sweep.to_json() {
            Ok(t) => out(t.as_bytes()),
            Err(e) => eprintln!("vblast: {e}"),
        }
    }
    let mut written = Ok(());
    if let Some(path) = &args.run.out.output {
        written = sweep.write(path);
    }
    if let Some(path) = &args.run.out.html {
        let page = super::html::render("vblast sweep", &[(String::new(), sweep)]);
        if let Err(e) = std::fs::write(path, page) {
            let e = format!("cannot write {}: {e}", path.display());
            written = match written {
                Ok(()) => Err(e),
                Err(w) => Err(format!("{w}; {e}")),
            };
        }
    }
    if let Some(e) = failure {
        if let Err(c) = cleanup {
            eprintln!("vblast: {c}");
        }
        if let Err(w) = written {
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
        return Ending::Failed(Error::Output(w));
    }
    if let Some(End::FirstFailed { load }) = end {
        let unit = sweep.spec.unit();
        eprintln!(
            "vblast: the server breaks the objective already at the first step ({load} {unit}): no load in the range is sustained; lower FROM{}",
            if sweep.spec.model == Model::Open {
                " (--rate)"
            } else {
                " (--concurrency)"
            }
        );
        return Ending::FailedRequests;
    }
    Ending::Ok
}
