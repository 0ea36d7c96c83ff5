//! The `run` command: flags to a scenario, a session (checks, setup), one load step,
//! cleanup, the report, and how the run ended. The exit status is decided in `error.rs`.

use crate::cli::RunArgs;
use crate::engine;
use crate::error::{Ending, Error};
use crate::fixtures::rendezvous::Tally;
use crate::live::Live;
use crate::report::{Model, RunInfo};
use crate::results::Results;
use crate::scenario::{Scenario, Workload};
use crate::session::Session;
use crate::signals::Stop;

/// Runs `vblast [run] ...`.
pub fn run(cli: &RunArgs, stop: &Stop) -> Ending {
    if cli.list_ops {
        print!(
            "{}",
            match cli.out.format {
                crate::cli::Format::Markdown => crate::vault::ops::list_markdown(),
                _ => crate::vault::ops::list_text(),
            }
        );
        return Ending::Ok;
    }
    // A vault-benchmark file fills in what the flags and the environment leave open,
    // the report format included, before anything else reads the flags.
    let merged;
    let cli = match &cli.config {
        Some(path) => match crate::vbconfig::merge(cli, path) {
            Ok(m) => {
                merged = m;
                &merged
            }
            Err(e) => return Ending::Failed(Error::input(e)),
        },
        None => cli,
    };
    let scenario = match cli.scenario() {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    // Before setup: a taken address is bad input (src/metrics.rs).
    let metrics = match &cli.metrics.metrics_listen {
        Some(addr) => match crate::metrics::Metrics::start(addr, scenario.load.schedule.clone()) {
            Ok(m) => Some(m),
            Err(e) => return Ending::Failed(Error::input(e)),
        },
        None => None,
    };
    // A shard of a run sharing a fixture: shard 0 sets it up and removes it once every
    // shard has ended, the others join it (src/fixtures/rendezvous.rs).
    crate::fixtures::rendezvous::around(cli, &scenario, stop, &mut |joined| {
        load(cli, &scenario, metrics.as_ref(), stop, joined)
    })
}

/// The session, the load step, cleanup and the report; `joined` runs once the session is
/// open. Returns how the run ended and its totals.
fn load(
    cli: &RunArgs,
    scenario: &Scenario,
    metrics: Option<&crate::metrics::Metrics>,
    stop: &Stop,
    joined: &mut dyn FnMut() -> Result<(), Error>,
) -> (Ending, Tally) {
    let none = Tally::default();
    let setup_started = std::time::Instant::now();
    let mut session = match Session::open(scenario, stop) {
        Ok(s) => s,
        Err(e) => return (Ending::Failed(e), none),
    };
    if let Err(e) = joined() {
        if let Err(c) = session.close() {
            eprintln!("vblast: {c}");
        }
        return (Ending::Failed(e), none);
    }
    let setup_s = setup_started.elapsed().as_secs_f64();
    // https: one handshake before the load, not counted, for ab's TLS lines (saved with
    // the results, so `vblast report --format ab` prints them too).
    let tls_probe = scenario.tls.as_ref().and_then(|tls| {
        crate::ab_tls::probe(session.target(), tls, scenario.load.timeout)
            .inspect_err(|e| {
                if matches!(cli.out.format, crate::cli::Format::Ab) {
                    eprintln!("vblast: no TLS lines in the ab report: {e}");
                }
            })
            .ok()
    });
    if let Some(view) = session.cluster_view()
        && !cli.quiet
    {
        eprint!("{}", view.render());
    }
    let live = Live::new(cli.quiet, cli.progress);
    let show = |p: &[engine::Totals]| {
        if live.enabled() {
            live.show(p);
        }
        if let Some(m) = metrics {
            m.update(p);
        }
    };
    let step = session.step(
        &scenario.load,
        (live.enabled() || metrics.is_some()).then_some(&show as engine::ProgressFn<'_>),
    );
    live.clear();
    if let (Some(m), Ok(s)) = (metrics, &step) {
        m.finish(&s.outcome.stats);
    }
    let cleanup_started = std::time::Instant::now();
    let cleanup = session.close();
    let cleanup_s = cleanup_started.elapsed().as_secs_f64();
    let interrupted = stop.signal();
    let step = match step {
        Ok(s) => s,
        Err(e) => {
            if let Err(c) = cleanup {
                eprintln!("vblast: {c}");
            }
            return (Ending::Failed(e), none);
        }
    };
    let target = session.target();
    let info = RunInfo {
        target: if matches!(scenario.workload, Workload::Url(_)) {
            format!("{}{}", target.base(), target.path)
        } else {
            target.base()
        },
        operation: session.op_names().join(","),
        // A shard's own share (src/shard.rs); shards' files add up to -c.
        connections: scenario.load.spread.shard.share(scenario.load.connections),
        threads: step.layout.threads,
        processes: step.layout.processes,
        model: if scenario.load.schedule.is_some() {
            Model::Open
        } else {
            Model::Closed
        },
        target_rate: scenario.load.schedule.as_ref().map(|s| s.peak_rate()),
        keepalive: scenario.load.keepalive,
        warmup_s: scenario.load.warmup.as_secs_f64(),
        interrupted: interrupted.is_some(),
        setup_s,
        cleanup_s,
    };
    let mut results = Results::build(
        info,
        step.outcome.stats,
        session.op_names(),
        scenario.redacted(),
        step.started_at,
    );
    results.shard = crate::shard::record(
        &cli.shard,
        scenario,
        step.outcome.clock_start.unwrap_or(step.started_at),
    );
    results.tls_probe = tls_probe;
    let summary = results.summary();
    let tally = Tally {
        requests: summary.requests,
        ok: summary.ok,
    };
    let written = crate::report_command::deliver(&summary, &results, &cli.out);
    if metrics.is_some()
        && let Some(hold) = cli.metrics.metrics_hold
    {
        // The final figures stay up for the last scrape (src/metrics.rs).
        crate::metrics::hold(hold, stop);
    }
    if let Some(s) = interrupted {
        if let Err(c) = cleanup {
            eprintln!("vblast: {c}");
        }
        return (Ending::Stopped(s), tally);
    }
    if let Err(c) = cleanup {
        return (Ending::Failed(c), tally);
    }
    if let Err(e) = written {
        return (Ending::Failed(e), tally);
    }
    if let Some(lost) = step.outcome.lost {
        if cli.allow_errors {
            eprintln!("vblast: {lost}");
        } else {
            return (Ending::Failed(Error::lost_load(lost)), tally);
        }
    }
    if !cli.allow_errors && summary.failed > 0 {
        return (Ending::FailedRequests, tally);
    }
    if !cli.allow_errors && summary.requests == 0 {
        eprintln!("vblast: no request completed");
        return (Ending::FailedRequests, tally);
    }
    (Ending::Ok, tally)
}
