//! The `run` command: flags to a scenario, a session (checks, setup), one load step,
//! cleanup, the report, and how the run ended. The exit status is decided in `error.rs`.

use crate::cli::RunArgs;
use crate::engine;
use crate::error::{Ending, Error};
use crate::live::Live;
use crate::report::{Model, RunInfo};
use crate::results::Results;
use crate::scenario::Workload;
use crate::session::Session;
use crate::signals::Stop;

/// Runs `vblast [run] ...`.
pub fn run(cli: &RunArgs, stop: &Stop) -> Ending {
    if cli.list_ops {
        print!("{}", crate::vault::ops::list_text());
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
            Err(e) => return Ending::Failed(Error::Input(e)),
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
            Err(e) => return Ending::Failed(Error::Input(e)),
        },
        None => None,
    };
    // A shard uses the fixture `vblast setup` made for its run (src/fixtures.rs).
    crate::fixtures::join_if_sharded(cli);
    let setup_started = std::time::Instant::now();
    let mut session = match Session::open(&scenario, stop) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
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
        if let Some(m) = &metrics {
            m.update(p);
        }
    };
    let step = session.step(
        &scenario.load,
        (live.enabled() || metrics.is_some()).then_some(&show as engine::ProgressFn<'_>),
    );
    live.clear();
    if let (Some(m), Ok(s)) = (&metrics, &step) {
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
            return Ending::Failed(e);
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
        &scenario,
        step.outcome.clock_start.unwrap_or(step.started_at),
    );
    results.tls_probe = tls_probe;
    let summary = results.summary();
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
        return Ending::Stopped(s);
    }
    if let Err(c) = cleanup {
        return Ending::Failed(c);
    }
    if let Err(e) = written {
        return Ending::Failed(e);
    }
    if let Some(lost) = step.outcome.lost {
        if cli.allow_errors {
            eprintln!("vblast: {lost}");
        } else {
            return Ending::Failed(Error::LostLoad(lost));
        }
    }
    if !cli.allow_errors && summary.failed > 0 {
        return Ending::FailedRequests;
    }
    if !cli.allow_errors && summary.requests == 0 {
        eprintln!("vblast: no request completed");
        return Ending::FailedRequests;
    }
    Ending::Ok
}
