//! The `run` command: flags to a scenario, a session (checks, setup), one load step,
//! cleanup, the report, and how the run ended. The exit status is decided in `error.rs`.

use crate::cli::RunArgs;
use crate::config::scenario::Scenario;
use crate::error::{Ending, Error};
use crate::results::deliver::Format;
use crate::session::fixtures::rendezvous::Tally;
use crate::session::one_step::{self, Probe, Showing};
use crate::signals::Stop;

use super::Given;
use super::scenario::{output, scenario, sharding};

/// Runs `vblast [run] ...`.
pub fn run(cli: &RunArgs, given: Given, stop: &Stop) -> Ending {
    if cli.ops.list_ops {
        let list = match cli.out.format {
            Format::Markdown => crate::vault::ops::list_markdown(),
            _ => crate::vault::ops::list_text(),
        };
        return crate::results::deliver::print_or_fail(list.as_bytes())
            .map_or_else(Ending::Failed, |()| Ending::Ok);
    }
    // A vault-benchmark file fills in what the flags and the environment leave open,
    // the report format included, before anything else reads the flags.
    let merged;
    let cli = match &cli.config {
        Some(path) => match super::config_file::merge(cli, given, path) {
            Ok(m) => {
                merged = m;
                &merged
            }
            Err(e) => return Ending::Failed(Error::input(e)),
        },
        None => cli,
    };
    let scenario = match scenario(cli, given) {
        Ok(s) => s,
        Err(e) => return Ending::Failed(e),
    };
    // Before the first request: an output path that cannot be written is refused now.
    if let Err(e) = crate::results::deliver::check_paths(&output(&cli.out)) {
        return Ending::Failed(e);
    }
    let server = match super::server::settings(&cli.server, &scenario) {
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
    // shard has ended, the others join it (src/session/fixtures/rendezvous.rs).
    crate::session::fixtures::rendezvous::around(
        &sharding(cli),
        &scenario,
        stop,
        &mut |scenario, joined| {
            load(
                cli,
                scenario,
                metrics.as_ref(),
                server.as_ref(),
                stop,
                joined,
            )
        },
    )
}

/// The run's one step (`session::one_step`), its report and files, and how it ended;
/// `joined` runs once the session is open. Returns how the run ended and its totals.
fn load(
    cli: &RunArgs,
    scenario: &Scenario,
    metrics: Option<&crate::metrics::Metrics>,
    server: Option<&crate::server_stats::Settings>,
    stop: &Stop,
    joined: &mut dyn FnMut() -> Result<(), Error>,
) -> (Ending, Tally) {
    let showing = Showing {
        quiet: cli.show.quiet,
        progress: cli.show.progress,
        metrics,
        probe: Probe::Lenient {
            note: matches!(cli.out.format, Format::Ab),
        },
        watch: None,
        server,
    };
    let ran = match one_step::run(scenario, stop, &showing, joined) {
        Ok(r) => r,
        Err(e) => return (Ending::Failed(e), Tally::default()),
    };
    let mut results = ran.results;
    results.shard = crate::session::shard::record(&sharding(cli), scenario, ran.clock_start);
    let summary = results.summary();
    let tally = Tally {
        requests: summary.requests,
        ok: summary.ok,
    };
    let written = crate::results::deliver::deliver(&summary, &results, &output(&cli.out));
    if metrics.is_some()
        && let Some(hold) = cli.metrics.metrics_hold
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
        if cli.show.allow_errors {
            eprintln!("vblast: {lost}");
        } else {
            return (Ending::Failed(Error::lost_load(lost)), tally);
        }
    }
    if !cli.show.allow_errors && summary.failed > 0 {
        return (Ending::FailedRequests, tally);
    }
    if !cli.show.allow_errors && summary.requests == 0 {
        eprintln!("vblast: no request completed");
        return (Ending::FailedRequests, tally);
    }
    (Ending::Ok, tally)
}
