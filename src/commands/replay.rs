//! `vblast replay AUDIT_LOG...`: the log planned (`replay::plan`), a run's scenario made
//! from it (the replayed operations as `--op` with their own setup and cleanup, the
//! recorded instants and operations as the open model's schedule), one step run through
//! the session, and the replay's report.

use crate::cli::replay::ReplayArgs;
use crate::config::scenario::{OpChoice, Scenario, StepPlan, Workload};
use crate::config::schedule::Schedule;
use crate::error::{Ending, Error};
use crate::replay::ReplayPlan;
use crate::session::one_step::{self, Probe, Showing};
use crate::signals::Stop;
use crate::vault::ops::OptionValue;

/// Runs `vblast replay`: exit 0 when every request succeeded, 2 on bad input (nothing
/// read, a factor refused, nothing replayable), as `vblast run` otherwise.
pub fn run(args: &ReplayArgs, stop: &Stop) -> Ending {
    let plan = match crate::replay::plan(&args.files, args.speed, args.scale, args.show_paths, stop)
    {
        Ok(p) => p,
        Err(e) => return Ending::Failed(e),
    };
    for p in &plan.problems {
        eprintln!("vblast: warning: {p}");
    }
    for l in &plan.left_out {
        eprintln!(
            "vblast: note: left out of the replay: {} ({} requests): {}",
            l.what, l.requests, l.why
        );
    }
    if let Some(s) = stop.signal() {
        return Ending::Stopped(s);
    }
    if let Some(n) = plan.kv.capped_note() {
        eprintln!("vblast: note: {n}");
    }
    let (mut scenario, base) = match scenario(args, &plan) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    if let Some(n) = plan.callers.fold_note() {
        eprintln!("vblast: note: {n}");
    }
    // The sessions' tokens and namespaces, and each other namespace's fixtures (a kv
    // fixture per recorded kv mount there, seeded with its own recorded distinct paths),
    // removed when `made` goes.
    let span = plan.schedule.span() + plan.schedule.second();
    let for_namespace = |recorded: &str| in_namespace(&scenario, &base, &plan, recorded);
    let (mut made, sent) = match super::callers::CallersMade::set_up(
        &scenario,
        &plan.callers,
        span,
        &for_namespace,
        stop,
    ) {
        Ok(m) => m,
        Err(e) => return Ending::Failed(e),
    };
    scenario.load.step.schedule = Some(Schedule::Instants(
        plan.instants(sent.callers, sent.request_sets),
    ));
    let server = match super::server::settings(&args.server, &scenario, None) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    let showing = Showing {
        quiet: args.show.quiet,
        progress: args.show.progress,
        metrics: None,
        probe: Probe::Skip,
        watch: None,
        server: server.as_ref(),
    };
    let ran = one_step::run(&scenario, stop, &showing, &mut |_| Ok(()));
    let removed = made.remove();
    let mut ran = match ran {
        Ok(r) => r,
        Err(e) => {
            if let Err(c) = removed {
                eprintln!("vblast: {c}");
            }
            return Ending::Failed(e);
        }
    };
    if let Err(e) = removed {
        match &ran.cleanup {
            Ok(()) => ran.cleanup = Err(e),
            Err(_) => eprintln!("vblast: {e}"),
        }
    }
    let summary = ran.results.summary();
    let report = crate::replay::report::summarize(&plan, &summary, args.speed, args.scale);
    let printed = crate::results::deliver::print_or_fail(
        crate::replay::report::render(&report, args.format).as_bytes(),
    );
    if let Some(s) = ran.interrupted {
        if let Err(c) = ran.cleanup {
            eprintln!("vblast: {c}");
        }
        return Ending::Stopped(s);
    }
    if let Err(c) = ran.cleanup {
        return Ending::Failed(c);
    }
    if let Err(e) = printed {
        return Ending::Failed(e);
    }
    ending(&summary, args.show.allow_errors, ran.lost)
}

/// How a replay that ran to its end ended, as `vblast run` decides it.
fn ending(
    summary: &crate::report::Summary,
    allow_errors: bool,
    lost: Option<crate::orchestrate::Lost>,
) -> Ending {
    if let Some(lost) = lost {
        if !allow_errors {
            return Ending::Failed(Error::lost_load(lost));
        }
        eprintln!("vblast: {lost}");
    }
    if let Some(w) = &summary.schedule_not_kept {
        eprintln!("vblast: warning: {w}");
        return Ending::ScheduleNotKept;
    }
    if !allow_errors && summary.failed > 0 {
        return Ending::FailedRequests;
    }
    Ending::Ok
}

/// `scenario` with the fixtures of the log's namespace `recorded` ("root", `team-a/`): a
/// kv fixture per kv mount recorded there, of its own size (`callers::kv_choices`).
fn in_namespace(
    scenario: &Scenario,
    base: &[OpChoice],
    plan: &ReplayPlan,
    recorded: &str,
) -> Result<Scenario, Error> {
    let mut sc = scenario.clone();
    sc.workload = Workload::Vault(super::callers::kv_choices(
        base,
        &plan.entry_counts(),
        &plan.kv,
        Some(recorded),
        None,
    )?);
    Ok(sc)
}

/// The run of the replay: the flags of a `vblast run --op MIX` (the target, TLS,
/// connections, threads, timeout, HTTP/2), planned as any run is (`scenario::plan`), its
/// operations then one per entry of the mix (each kv mount of the log's root namespace
/// its own fixture, `in_namespace`), and its one step set to the recorded schedule. With
/// the operations as the flags configured them, each once (what `in_namespace` builds on).
fn scenario(args: &ReplayArgs, plan: &ReplayPlan) -> Result<(Scenario, Vec<OpChoice>), Error> {
    let (cli, _) = super::parse_from(["vblast"]).map_err(|e| Error::input(e.to_string()))?;
    let mut run = cli.run;
    run.target = args.target.clone();
    run.tls = args.tls.clone();
    run.server = args.server.clone();
    run.load.connections = args.connections;
    run.load.threads = args.threads;
    run.load.timeout = args.timeout;
    run.load.http2 = args.http2;
    run.load.http2_prior_knowledge = args.http2_prior_knowledge;
    run.ops.op = Some(plan.op_mix());
    run.ops.keep = args.keep;
    // A kv operation on no recorded mount's fixture (a mount past the profile's bound)
    // seeds the largest count.
    run.op_options
        .set("secrets", OptionValue::Number(plan.secrets))
        .map_err(Error::input)?;
    let mut scenario = super::scenario::plan(&run, super::Given::default())?.scenario;
    let Workload::Vault(base) = scenario.workload.clone() else {
        return Err(Error::input("a replay runs Vault operations"));
    };
    let schedule = Schedule::Instants(plan.instants(Vec::new(), Vec::new()));
    schedule
        .validate()
        .map_err(|e| Error::input(e.to_string()))?;
    scenario.load.step = StepPlan {
        requests: Some(plan.ops.len() as u64),
        // The recorded span and its last second: the window the rates are taken over.
        duration: Some(plan.schedule.span() + plan.schedule.second()),
        warmup: std::time::Duration::ZERO,
        schedule: Some(schedule),
    };
    let scenario = in_namespace(&scenario, &base, plan, "root")?;
    Ok((scenario, base))
}
