//! The `run` command: flags to a scenario, a session (checks, setup), one load step,
//! cleanup, the report, and how the run ended. The exit status is decided in `error.rs`.

use crate::cli::RunArgs;
use crate::cli::server::ServerArgs;
use crate::config::scenario::Scenario;
use crate::config::spread::Sharding;
use crate::error::{Ending, Error};
use crate::results::deliver::{Output, OutputFormat};
use crate::session::fixtures::rendezvous::Tally;
use crate::session::one_step::{self, Probe, Showing};
use crate::signals::Stop;

use super::Given;
use super::scenario::{Planned, plan, sharding};

/// Runs `vblast [run] ...`.
pub fn run(cli: &RunArgs, given: Given, stop: &Stop) -> Ending {
    if cli.cleanup.orphans {
        return Ending::Failed(super::fixture::orphans_refused());
    }
    if cli.ops.list_ops {
        let list = match cli.out.format {
            OutputFormat::Markdown => crate::vault::ops::list_markdown(),
            _ => crate::vault::ops::list_text(),
        };
        return crate::results::deliver::print_or_fail(list.as_bytes())
            .map_or_else(Ending::Failed, |()| Ending::Ok);
    }
    // A vault-benchmark file fills in what the flags and the environment leave open,
    // the report format included (`scenario::plan`).
    let planned = plan(cli, given);
    // A signal while a --config file was read and checked ends the run here, before
    // anything is set up, with the signal's status.
    if let Some(s) = stop.signal() {
        return Ending::Stopped(s);
    }
    let mut planned = match planned {
        Ok(p) => p,
        Err(e) => return Ending::Failed(e),
    };
    let login = match super::login::admin_login(&cli.login, &cli.target) {
        Ok(l) => l,
        Err(e) => return Ending::Failed(e),
    };
    // A vault-benchmark file's pprof_interval, when no flag gave one.
    let server_args = ServerArgs {
        pprof_interval: cli.server.pprof_interval.or(planned.pprof_interval),
        ..cli.server.clone()
    };
    let server = match super::server::settings(
        &server_args,
        &planned.scenario,
        planned.output.output.as_deref(),
    ) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    let opts = RunOptions {
        show: Show {
            quiet: cli.show.quiet,
            progress: cli.show.progress,
            allow_errors: cli.show.allow_errors,
        },
        metrics_listen: cli.metrics.metrics_listen.as_deref(),
        metrics_hold: cli.metrics.metrics_hold,
        sharding: sharding(cli),
        server,
    };
    // The login, before setup; its token is revoked when `_logged_in` drops, after the
    // run's cleanup, on every exit path (a signal ends the run through `stop`).
    let _logged_in = match login {
        Some(l) => match super::login::log_in(&l, &mut planned.scenario) {
            Ok(t) => Some(t),
            Err(e) => return Ending::Failed(e),
        },
        None => None,
    };
    execute(&planned, &opts, stop)
}

/// How a run shows itself and where its figures go, beside its `Planned` values.
pub struct Show {
    pub quiet: bool,
    pub progress: bool,
    /// Failed requests and lost load do not fail the run (`--allow-errors`).
    pub allow_errors: bool,
}

/// What a run asks beyond its scenario and output: how it shows itself, its metrics
/// exporter, how its shards share a fixture, how it samples its nodes.
pub struct RunOptions<'a> {
    pub show: Show,
    pub metrics_listen: Option<&'a str>,
    pub metrics_hold: Option<std::time::Duration>,
    pub sharding: Sharding,
    pub server: Option<crate::server_stats::Settings>,
}

/// Runs a planned run: the metrics exporter, the shards' rendezvous, the one step, the
/// report and files, and how it ended (`vblast run`, `vblast vault-benchmark run`).
pub fn execute(planned: &Planned, opts: &RunOptions, stop: &Stop) -> Ending {
    let scenario = &planned.scenario;
    // Before the first request: an output path that cannot be written is refused now.
    if let Err(e) = crate::results::deliver::check_paths(&planned.output) {
        return Ending::Failed(e);
    }
    // Before setup: a taken address is bad input (src/metrics.rs).
    let metrics = match opts.metrics_listen {
        Some(addr) => {
            match crate::metrics::Metrics::start(addr, scenario.load.step.schedule.clone()) {
                Ok(m) => Some(m),
                Err(e) => return Ending::Failed(Error::input(e)),
            }
        }
        None => None,
    };
    // A shard of a run sharing a fixture: shard 0 sets it up and removes it once every
    // shard has ended, the others join it (src/session/fixtures/rendezvous.rs).
    crate::session::fixtures::rendezvous::around(
        &opts.sharding,
        scenario,
        stop,
        &mut |scenario, joined| {
            load(
                scenario,
                &planned.output,
                opts,
                metrics.as_ref(),
                stop,
                joined,
            )
        },
    )
}

/// The run's one step (`session::one_step`), its report and files, and how it ended;
/// `joined` runs once the session is open. Returns how the run ended and its totals.
fn load(
    scenario: &Scenario,
    output: &Output,
    opts: &RunOptions,
    metrics: Option<&crate::metrics::Metrics>,
    stop: &Stop,
    joined: &mut dyn FnMut() -> Result<(), Error>,
) -> (Ending, Tally) {
    let cli = &opts.show;
    let showing = Showing {
        quiet: cli.quiet,
        progress: cli.progress,
        metrics,
        probe: Probe::Lenient {
            note: matches!(output.format, OutputFormat::Ab),
        },
        watch: None,
        server: opts.server.as_ref(),
    };
    let ran = match one_step::run(scenario, stop, &showing, joined) {
        Ok(r) => r,
        Err(e) => return (Ending::Failed(e), Tally::default()),
    };
    let mut results = ran.results;
    results.shard = crate::session::shard::record(&opts.sharding, scenario, ran.clock_start);
    results.confidence = output.confidence;
    let summary = results.summary();
    let tally = Tally {
        requests: summary.requests,
        ok: summary.ok,
    };
    let written = crate::results::deliver::deliver(&summary, &results, output);
    if metrics.is_some()
        && let Some(hold) = opts.metrics_hold
    {
        // The final figures stay up for the last scrape (src/metrics.rs).
        crate::metrics::hold(hold, stop);
    }
    if let Some(s) = ran.interrupted {
        if let Err(c) = ran.cleanup {
            eprintln!("vblast: {c}");
        }
        return (Ending::Stopped(s), tally);
    }
    if let Err(c) = ran.cleanup {
        return (Ending::Failed(c), tally);
    }
    if let Err(e) = written {
        return (Ending::Failed(e), tally);
    }
    if let Some(lost) = ran.lost {
        if cli.allow_errors {
            eprintln!("vblast: {lost}");
        } else {
            return (Ending::Failed(Error::lost_load(lost)), tally);
        }
    }
    // Before failed requests: a schedule not kept makes every figure of the run suspect,
    // failures included (docs/exit-status.md); --allow-errors does not cover it.
    if let Some(w) = &summary.schedule_not_kept {
        eprintln!("vblast: warning: {w}");
        return (Ending::ScheduleNotKept, tally);
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
