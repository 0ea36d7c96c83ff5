//! `vblast sweep`: its flags checked into a `Plan` before anything is sent (a range upside
//! down, an objective that does not parse or a step shorter than its warm-up is one message
//! and exit 2; so is an --output or --html path that cannot be written), then the sweep run
//! by the library (`sweep::runner`).

use crate::cli::sweep::SweepArgs;
use crate::config::schedule::Schedule;
use crate::config::units::show_duration;
use crate::error::{Cause, Ending, Error};
use crate::report::Model;
use crate::results::deliver::OutputFormat;
use crate::signals::Stop;

use super::Given;
use crate::profile::workload_file::Factor;
use crate::sweep::objective;
use crate::sweep::plan::{PER_X, Plan, Spec, SweepOutput, WorkloadSweep};
use crate::sweep::search::{Resolution, Search};

/// Runs `vblast sweep ...`.
pub fn run(args: &mut SweepArgs, given: Given, stop: &Stop) -> Ending {
    if args.run.cleanup.orphans {
        return Ending::Failed(super::fixture::orphans_refused());
    }
    let (mut plan, recorded) = match plan_recorded(args, given) {
        Ok(p) => p,
        Err(e) => return Ending::Failed(Error::input(e)),
    };
    let r = &args.run;
    let login = match super::login::admin_login(&r.login, &r.target) {
        Ok(l) => l,
        Err(e) => return Ending::Failed(e),
    };
    // Before the first request: a results or HTML path that cannot be written is refused
    // now, not found out once the sweep is over and its steps lost.
    for (flag, path) in [("--output", &r.out.output), ("--html", &r.out.html)] {
        if let Some(path) = path
            && let Err(e) = crate::results::deliver::check_path(flag, path)
        {
            return Ending::Failed(e);
        }
    }
    let server = match super::server::settings(&r.server, &plan.scenario, r.out.output.as_deref()) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    let out = SweepOutput {
        text: r.out.format == OutputFormat::Text,
        quiet: r.show.quiet,
        progress: r.show.progress,
        output: r.out.output.clone(),
        html: r.out.html.clone(),
        server,
    };
    // The login, before setup; its token is revoked when `_logged_in` drops, after the
    // sweep's cleanup, on every exit path.
    let _logged_in = match login {
        Some(l) => match super::login::log_in(&l, &mut plan.scenario, super::login::FlagStyle::Gnu)
        {
            Ok(t) => Some(t),
            Err(e) => return Ending::Failed(e),
        },
        None => None,
    };
    // A workload's recorded callers, made once for every step, removed after the sweep
    // (and on drop, before the login's token is revoked).
    let span = (plan.scenario.load.step.warmup + args.step_duration)
        * (args.steps.max(1) as u32)
        * (args.max_repeats + 1);
    let mut callers =
        match super::recorded::sweep_callers(&plan.scenario, recorded.as_ref(), span, stop) {
            Ok(Some((made, step_callers))) => {
                plan.callers = Some(step_callers);
                Some(made)
            }
            Ok(None) => None,
            Err(e) => return Ending::Failed(stop.signal().map_or(e, Error::Stopped)),
        };
    let ending = crate::sweep::runner::run(&plan, &out, stop);
    super::recorded::ended(ending, callers.as_mut().map(|c| c.remove()))
}

/// "500..20000" into whole numbers.
/// A lower layer's refusal, as the sentence it says.
fn said(e: impl std::fmt::Display) -> Cause {
    Cause::Said(e.to_string())
}

fn parse_range(flag: &str, text: &str) -> Result<(u64, u64), Cause> {
    let bad =
        || format!("{flag} {text}: give a range FROM..TO of whole numbers, e.g. {flag} 500..20000");
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let b: u64 = b.trim().parse().map_err(|_| bad())?;
    if a == 0 {
        return Err(format!("{flag} {text}: the range must start at 1 or more").into());
    }
    if a >= b {
        return Err(format!(
            "{flag} {text}: the range is upside down or empty: FROM must be below TO"
        )
        .into());
    }
    Ok((a, b))
}

/// `--scale FROM..TO` of a workload sweep ("0.5..8") in hundredths of the recorded
/// traffic (`sweep::plan::PER_X`).
fn parse_scales(text: Option<&str>) -> Result<(u64, u64), Cause> {
    let Some(text) = text else {
        return Err(
            "--workload sweeps the scale: give --scale FROM..TO (e.g. --scale 0.5..8)".into(),
        );
    };
    let bad =
        || format!("--scale {text}: give a range FROM..TO of factors above 0, e.g. --scale 0.5..8");
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let a = Factor::parse("--scale", a).map_err(|_| bad())?.get();
    let b = Factor::parse("--scale", b).map_err(|_| bad())?.get();
    let (from, to) = ((a * PER_X).round(), (b * PER_X).round());
    if from < 1.0 {
        return Err(format!("--scale {text}: the range must start at 0.01 or more").into());
    }
    if from >= to || to > 1e9 {
        return Err(format!(
            "--scale {text}: the range is upside down or empty: FROM must be below TO"
        )
        .into());
    }
    Ok((from as u64, to as u64))
}

/// A workload sweep's curve at 1x, repeated over a step (warm-up and measurement), checked
/// at the top of the range; and what its spec says of it.
fn workload_curve(
    run: &crate::cli::RunArgs,
    one: &Schedule,
    args: &SweepArgs,
    to: u64,
) -> Result<(Schedule, WorkloadSweep), Cause> {
    let step = args.step_warmup + args.step_duration;
    let curve = crate::profile::workload_file::repeated(one, step);
    curve
        .times(to as f64 / PER_X)
        .validate()
        .map_err(|e| format!("--scale {}: {e}", run.load.scale.as_deref().unwrap_or("")))?;
    let warm = curve.requests_before(args.step_warmup);
    let all = curve.requests_before(step);
    let speed = super::recorded::speed(run).map_err(|e| e.to_string())?;
    Ok((
        curve,
        WorkloadSweep {
            file: run
                .load
                .workload
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            speed: speed.get(),
            offered_per_x: all.saturating_sub(warm) as f64 / args.step_duration.as_secs_f64(),
        },
    ))
}

/// "10%" or "0.1" as a fraction in (0, 1].
fn parse_ratio(text: &str) -> Result<f64, Cause> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| {
        format!("--max-error-ratio {text}: give a percentage (10%) or a fraction (0.1)")
    })?;
    if !(v.is_finite() && v > 0.0 && v <= 1.0) {
        return Err(format!("--max-error-ratio {text}: must be above 0 and at most 100%").into());
    }
    Ok(v)
}

/// A single run's length flags: a sweep's steps have their own.
fn refuse_single_run_flags(r: &crate::cli::RunArgs) -> Result<(), Cause> {
    if r.ops.list_ops {
        return Err("--list-ops is vblast --list-ops, not a sweep".into());
    }
    let t = &r.thresholds;
    if !t.threshold.is_empty() || t.threshold_abort || t.junit.is_some() {
        return Err("--threshold, --threshold-abort and --junit bound a run, not a sweep: a sweep judges each step with --slo".into());
    }
    for (given, flag) in [
        (r.load.requests.is_some(), "-n"),
        (r.load.duration.is_some(), "-z"),
        (r.load.warmup.is_some(), "--warmup"),
        (r.load.ramp.is_some(), "--ramp"),
    ] {
        if given {
            return Err(format!(
                "{flag} does not go with sweep: each step lasts --step-duration after --step-warmup"
            )
            .into());
        }
    }
    Ok(())
}

/// A single run's outputs: a sweep prints text or JSON and saves its steps in --output.
fn refuse_single_run_outputs(o: &crate::cli::OutputArgs) -> Result<(), Cause> {
    if !matches!(o.format, OutputFormat::Text | OutputFormat::Json) {
        return Err("sweep prints --format text or json".into());
    }
    if o.latency || o.hgrm.is_some() || o.ab_csv.is_some() || o.hlog.is_some() {
        return Err(
                "--latency, --hgrm, --ab-csv and --hlog are for single runs: a sweep saves every step with its histograms in --output".into(),
            );
    }
    Ok(())
}

/// The swept variable and its range: rates (open), connections (closed), or the scale of a
/// workload's recorded traffic in hundredths (open).
fn range(args: &SweepArgs) -> Result<(Model, u64, u64), Cause> {
    let r = &args.run;
    let workload = r.load.workload.is_some();
    let (model, (from, to)) = match (&r.load.rate, &args.concurrency, workload) {
        (None, None, true) => (Model::Open, parse_scales(r.load.scale.as_deref())?),
        (Some(rate), None, false) => (Model::Open, parse_range("--rate", rate)?),
        (None, Some(c), false) => (Model::Closed, parse_range("--concurrency", c)?),
        _ => {
            return Err(
                    "give the range to sweep: --rate FROM..TO (open model), --concurrency FROM..TO (closed model), or --workload FILE --scale FROM..TO"
                        .into(),
                );
        }
    };
    if model == Model::Open && !workload {
        Schedule::Constant { rate: to as f64 }
            .validate()
            .map_err(|e| format!("--rate {}: {e}", r.load.rate.as_deref().unwrap_or("")))?;
    }
    Ok((model, from, to))
}

/// The sweep these flags describe, checked; nothing is sent before this succeeds.
pub fn plan(args: &mut SweepArgs, given: Given) -> Result<Plan, Cause> {
    plan_recorded(args, given).map(|(p, _)| p)
}

/// `plan`, and `--workload`'s run (its callers made once the sweep starts).
fn plan_recorded(
    args: &mut SweepArgs,
    given: Given,
) -> Result<(Plan, Option<super::recorded::Recorded>), Cause> {
    let r = &args.run;
    refuse_single_run_flags(r)?;
    let workload = r.load.workload.is_some();
    let (model, from, to) = range(args)?;
    if args.step_duration.is_zero() {
        return Err("--step-duration must be longer than zero".into());
    }
    if args.step_duration < args.step_warmup {
        return Err(format!(
            "--step-duration {} is shorter than --step-warmup {}: a step is measured after its warm-up, and should be at least as long",
            show_duration(args.step_duration),
            show_duration(args.step_warmup)
        ).into());
    }
    let resolution = args.resolution.trim().to_string();
    Search::new(
        from,
        to,
        args.steps,
        Resolution::parse(&resolution).map_err(said)?,
    )
    .map_err(said)?;
    let max_error_ratio = parse_ratio(&args.max_error_ratio)?;
    let objectives = objective::objectives(&args.slo, model == Model::Open).map_err(said)?;
    refuse_single_run_outputs(&r.out)?;
    // The run's own checks, on the largest load a step will put up (layout, -c).
    // The range is not a -R or -c of its own: taken out for the check, then put back.
    let connections = r.load.connections;
    let rate = args.run.load.rate.take();
    let scale = args.run.load.scale.take();
    if model == Model::Closed {
        args.run.load.connections = to;
    }
    let planned = super::scenario::plan(&args.run, given);
    args.run.load.rate = rate;
    args.run.load.scale = scale;
    args.run.load.connections = connections;
    let r = &args.run;
    let planned = planned.map_err(|e| e.to_string())?;
    let (mut scenario, recorded) = (planned.scenario, planned.recorded);
    // A sweep searches one edge of one target; over nodes in turn its steps would
    // judge every node's figures as one, and find no node's edge.
    if scenario
        .cluster
        .as_ref()
        .is_some_and(|c| c.mode == crate::config::cluster::NodesMode::Each)
    {
        return Err(
                "--nodes each does not go with sweep: a sweep finds the edge of one target, and each node has its own; sweep each node on its own (`vblast sweep --address NODE ... --output NODE.json`, one per node) and put them side by side with `vblast compare NODE1.json NODE2.json`"
                    .into(),
            );
    }
    // The engine measures `duration` after `warmup` (as `-z` after `--warmup`).
    scenario.load.step.duration = Some(args.step_duration);
    scenario.load.step.warmup = args.step_warmup;
    scenario.load.step.requests = None;
    let (curve, workload) = match (workload, scenario.load.step.schedule.take()) {
        (true, Some(one)) => {
            let (curve, w) = workload_curve(&args.run, &one, args, to)?;
            (Some(curve), Some(w))
        }
        (_, schedule) => {
            scenario.load.step.schedule = schedule;
            (None, None)
        }
    };
    let spec = Spec {
        model,
        from,
        to,
        steps: args.steps,
        resolution,
        max_error_ratio,
        objectives,
        step_duration_s: args.step_duration.as_secs_f64(),
        step_warmup_s: args.step_warmup.as_secs_f64(),
        connections: (model == Model::Open).then_some(r.load.connections),
        target: String::new(),
        operation: String::new(),
        confidence: Some(r.out.confidence.level()),
        max_repeats: args.max_repeats,
        workload,
    };
    Ok((
        Plan {
            scenario,
            spec,
            curve,
            callers: None,
        },
        recorded,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::{CommandFactory, Parser};
    use std::time::Duration;

    fn sweep(args: &[&str]) -> Result<Plan, Cause> {
        let mut v = vec!["vblast", "sweep", "--op", "kv-read"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).map_err(|e| e.to_string())?.command {
            Some(Command::Sweep(mut a)) => plan(&mut a, Given::default()),
            _ => Err("not a sweep".into()),
        }
    }

    #[test]
    fn scale_ranges_are_hundredths_of_the_recorded_traffic() {
        assert_eq!(parse_scales(Some("0.5..8")).unwrap(), (50, 800));
        assert_eq!(parse_scales(Some(" 1 .. 2.7 ")).unwrap(), (100, 270));
        for (text, why) in [
            (None, "give --scale FROM..TO"),
            (Some("8..0.5"), "upside down"),
            (Some("0..2"), "factors above 0"),
            (Some("-1..2"), "factors above 0"),
            (Some("0.001..2"), "0.01 or more"),
            (Some("2"), "a range FROM..TO"),
        ] {
            let e = parse_scales(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }

    #[test]
    fn the_command_line_is_consistent() {
        // clap's own checks (names, shorts, conflicts), which release builds skip.
        Cli::command().debug_assert();
    }

    #[test]
    fn plans_and_refusals() {
        let p = sweep(&["--rate", "500..20000", "--slo", "p99=20ms"]).unwrap();
        assert_eq!(
            (p.spec.from, p.spec.to, p.spec.model),
            (500, 20000, Model::Open)
        );
        assert_eq!(p.spec.connections, Some(100), "the sweep's default -c");
        assert_eq!(p.scenario.load.step.duration, Some(Duration::from_secs(20)));
        assert_eq!(p.scenario.load.step.warmup, Duration::from_secs(2));
        assert_eq!(
            p.load_for(700).step.schedule,
            Some(Schedule::Constant { rate: 700.0 })
        );
        let p = sweep(&["--concurrency", "10..200", "--slo", "p50=5ms", "-c", "7"]).unwrap();
        assert_eq!(p.spec.model, Model::Closed);
        assert_eq!(p.spec.connections, None);
        assert_eq!(p.load_for(42).connections, 42);
        assert!(p.load_for(42).step.schedule.is_none());
        for (args, why) in [
            (&["--rate", "9..3", "--slo", "p99=1s"][..], "upside down"),
            (&["--rate", "0..3", "--slo", "p99=1s"], "at 1 or more"),
            (&["--concurrency", "1..3"], "give an objective"),
            (
                &["--rate", "1..3", "--slo", "p99=1s", "--format", "ab"],
                "text or json",
            ),
            (
                &["--rate", "1..3", "--slo", "p99=1s", "--hgrm", "x"],
                "single runs",
            ),
            (
                &["--rate", "1..3", "--slo", "p99=1s", "--step-duration", "0s"],
                "longer than zero",
            ),
            (&["--rate", "1..30000000", "--slo", "p99=1s"], "--rate"),
        ] {
            let e = sweep(args).unwrap_err().to_string();
            assert!(e.contains(why), "{args:?}: {e}");
        }
        assert!(sweep(&["--rate", "1..3", "--concurrency", "1..3", "--slo", "p99=1s"]).is_err());
    }
}
