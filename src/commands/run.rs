//! The `run` command: flags to a scenario, a session (checks, setup), one load step,
//! cleanup, the report, the final figures pushed (`--metrics-push`) and kept up
//! (`--metrics-linger`), and how the run ended. The exit status is decided in `error.rs`.

use crate::cli::RunArgs;
use crate::cli::server::ServerArgs;
use crate::config::scenario::Scenario;
use crate::config::spread::Sharding;
use crate::error::{Ending, Error};
use crate::metrics::push::{Gateway, Push, Pusher};
use crate::results::deliver::{Output, OutputFormat};
use crate::session::fixtures::rendezvous::Tally;
use crate::session::one_step::{self, Probe, Showing};
use crate::signals::Stop;

use super::Given;
use super::scenario::{Planned, plan, sharding};
use super::threshold::{AbortWatch, stopped_early};

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
    let metrics_push = match push(&cli.metrics) {
        Ok(p) => p,
        Err(e) => return Ending::Failed(e),
    };
    let opts = RunOptions {
        show: Show {
            quiet: cli.show.quiet,
            progress: cli.show.progress,
            allow_errors: cli.show.allow_errors,
        },
        metrics_listen: cli.metrics.metrics_listen.as_deref(),
        metrics_linger: cli.metrics.metrics_linger,
        metrics_push,
        sharding: sharding(cli),
        server,
    };
    // The login, before setup; its token is revoked when `_logged_in` drops, after the
    // run's cleanup, on every exit path (a signal ends the run through `stop`).
    let _logged_in = match login {
        Some(l) => {
            match super::login::log_in(&l, &mut planned.scenario, super::login::FlagStyle::Gnu) {
                Ok(t) => Some(t),
                Err(e) => return Ending::Failed(e),
            }
        }
        None => None,
    };
    // `--workload`'s recorded callers: their sessions and namespaces, removed after the
    // run (and on drop, before the login's token is revoked).
    let mut callers = match super::recorded::with_callers(&mut planned, stop) {
        Ok(c) => c,
        Err(e) => return Ending::Failed(stop.signal().map_or(e, Error::Stopped)),
    };
    let ending = execute(&planned, &opts, stop);
    super::recorded::ended(ending, callers.as_mut().map(|c| c.remove()))
}

/// `--metrics-push` and its job, labels and interval as a `Push` (bad ones are bad input).
fn push(args: &crate::cli::metrics::MetricsArgs) -> Result<Option<Push>, Error> {
    let Some(url) = &args.metrics_push else {
        return Ok(None);
    };
    let gateway = Gateway::parse(url, &args.metrics_push_job, &args.metrics_push_label)
        .map_err(Error::input)?;
    Ok(Some(Push {
        gateway,
        interval: args.metrics_push_interval,
    }))
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
    /// `--metrics-linger`: how long the final figures stay served after the run.
    pub metrics_linger: Option<std::time::Duration>,
    /// `--metrics-push`: the Pushgateway group the figures are pushed to.
    pub metrics_push: Option<Push>,
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
    let schedule = scenario.load.step.schedule.clone();
    let metrics = match (opts.metrics_listen, &opts.metrics_push) {
        (Some(addr), _) => match crate::metrics::Metrics::start(addr, schedule) {
            Ok(m) => Some(m),
            Err(e) => return Ending::Failed(Error::input(e)),
        },
        (None, Some(_)) => Some(crate::metrics::Metrics::new(schedule)),
        (None, None) => None,
    };
    // Before setup too: an unreachable Pushgateway is a warning, and the run goes on.
    let pusher = (opts.metrics_push.as_ref())
        .zip(metrics.as_ref())
        .map(|(p, m)| Pusher::start(p, m.text()));
    // A shard of a run sharing a fixture: shard 0 sets it up and removes it once every
    // shard has ended, the others join it (src/session/fixtures/rendezvous.rs).
    let ending = crate::session::fixtures::rendezvous::around(
        &opts.sharding,
        scenario,
        stop,
        &mut |scenario, joined| {
            load(
                scenario,
                &planned.output,
                &planned.thresholds,
                opts,
                metrics.as_ref(),
                stop,
                joined,
            )
        },
    );
    let ending = pushed(ending, pusher.map(|p| p.finish(stop)));
    if let Some(m) = &metrics
        && let Some(linger) = opts.metrics_linger
        && m.ended()
    {
        // The final figures stay up for the last scrape (src/metrics.rs).
        crate::metrics::linger(linger, stop);
    }
    ending
}

/// How a run ended once its final figures were pushed (`--metrics-push`): a push that
/// failed is an output that could not be written, exit 2, when the run would have exited
/// 0; a run ending otherwise keeps its status, the failure said on stderr (docs/ci.md).
fn pushed(ending: Ending, push: Option<Result<(), crate::error::Cause>>) -> Ending {
    match (ending, push) {
        (Ending::Ok, Some(Err(e))) => Ending::Failed(Error::output(e)),
        (ending, Some(Err(e))) => {
            eprintln!("vblast: {e}");
            ending
        }
        (ending, _) => ending,
    }
}

/// The run's one step (`session::one_step`), its report and files, and how it ended;
/// `joined` runs once the session is open. Returns how the run ended and its totals.
fn load(
    scenario: &Scenario,
    output: &Output,
    thresholds: &crate::threshold::ThresholdPlan,
    opts: &RunOptions,
    metrics: Option<&crate::metrics::Metrics>,
    stop: &Stop,
    joined: &mut dyn FnMut() -> Result<(), Error>,
) -> (Ending, Tally) {
    let cli = &opts.show;
    let abort = AbortWatch::new(thresholds, stop, output.confidence);
    let watch = |p: &[crate::engine::Totals]| abort.see(p);
    let showing = Showing {
        quiet: cli.quiet,
        progress: cli.progress,
        metrics,
        probe: Probe::Lenient {
            note: matches!(output.format, OutputFormat::Ab),
        },
        watch: thresholds
            .abort_after
            .is_some()
            .then_some(&watch as crate::engine::ProgressFn<'_>),
        server: opts.server.as_ref(),
    };
    let opened = &mut |s: &crate::session::Session| {
        abort.name_ops(s.op_names());
        joined()
    };
    let ran = match one_step::run(scenario, stop, &showing, opened) {
        Ok(r) => r,
        Err(e) => return (Ending::Failed(e), Tally::default()),
    };
    let mut results = ran.results;
    if let Some(t) = abort.broken() {
        results.stats.say(&stopped_early(&t));
    }
    results.shard = crate::session::shard::record(&opts.sharding, scenario, ran.clock_start);
    results.confidence = output.confidence;
    let mut summary = results.summary();
    results.thresholds = crate::report::thresholds::judge(&summary, &thresholds.set);
    summary.thresholds = results.thresholds.clone();
    if let Some(m) = metrics {
        m.set_thresholds(&summary.thresholds);
    }
    if let Some(t) = abort.broken() {
        eprintln!("vblast: {}", stopped_early(&t));
    }
    let tally = Tally {
        requests: summary.requests,
        ok: summary.ok,
    };
    let written = crate::results::deliver::deliver(&summary, &results, output);
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
    if let Some(ending) = super::threshold::ending(&summary.thresholds) {
        return (ending, tally);
    }
    // A threshold on errors or success says how many failures are fine.
    let allow_errors = cli.allow_errors || thresholds.bounds_failures();
    if !allow_errors && summary.failed > 0 {
        return (Ending::FailedRequests, tally);
    }
    if !allow_errors && summary.requests == 0 {
        eprintln!("vblast: no request completed");
        return (Ending::FailedRequests, tally);
    }
    (Ending::Ok, tally)
}
