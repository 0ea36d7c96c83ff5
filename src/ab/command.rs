//! The `vblast ab` command: ab's command line (`ab_cli`) run by vblast's engine and
//! reported as ab reports, with vblast's exit statuses, or ab's with `--ab-exit`.
//!
//! ab's exit statuses (httpd 2.4 `support/ab.c`): 0 when the run completed, whatever
//! failed; 22 (EINVAL) for a usage error; 1 for a fatal error (unreadable -p file, more
//! than 10 failed connects, Ctrl-C after the report); a socket receive error without `-r`
//! stops ab with the error's number (vblast: 1, after the full report).

use super::options::{self as ab_cli, AbCommand, AbError, AbOptions};
use crate::error::{self, Ending, Error};
use crate::report::{self, Summary};
use crate::session::one_step::{self, Probe, Showing};
use crate::signals::Stop;

/// ab's status for a usage error (EINVAL).
pub const AB_EXIT_USAGE: i32 = 22;
/// ab's status for a fatal error.
pub const AB_EXIT_FATAL: i32 = 1;
/// ab stops the run ("Test aborted after 10 failures") past this many failed connects.
const AB_CONNECT_FAILURES: u64 = 10;

/// Runs `vblast ab ARGS...`; returns the exit status.
pub fn main(args: &[String], stop: &Stop) -> i32 {
    let ab_exit = args.iter().any(|a| a == "--ab-exit");
    let opts = match ab_cli::parse(args) {
        Ok(AbCommand::Help) => {
            return said(ab_cli::USAGE);
        }
        Ok(AbCommand::Version) => {
            return said(&format!(
                "This is vblast {}, taking ApacheBench 2.4's options\n",
                env!("CARGO_PKG_VERSION")
            ));
        }
        Ok(AbCommand::Run(o)) => o,
        Err(e) => {
            return match e {
                AbError::Usage(m) => {
                    eprintln!("vblast ab: {m} (vblast ab -h lists the options)");
                    if ab_exit {
                        AB_EXIT_USAGE
                    } else {
                        error::EXIT_BAD_INPUT
                    }
                }
                AbError::Unsupported(m) => {
                    eprintln!("vblast ab: {m}");
                    error::EXIT_BAD_INPUT
                }
            };
        }
    };
    let (ending, summary) = run(&opts, stop);
    if let Ending::Failed(e) = &ending {
        eprintln!("vblast: {e}");
    }
    if opts.ab_exit {
        ab_status(&opts, &ending, summary.as_ref())
    } else {
        error::exit_status(&ending)
    }
}

/// Prints `text` (the usage, the version): 0, or 2 when stdout cannot take it.
fn said(text: &str) -> i32 {
    match crate::results::deliver::print_or_fail(text.as_bytes()) {
        Ok(()) => error::EXIT_OK,
        Err(e) => {
            eprintln!("vblast: {e}");
            error::exit_status(&Ending::Failed(e))
        }
    }
}

/// ab's exit status for how the run ended.
fn ab_status(opts: &AbOptions, ending: &Ending, summary: Option<&Summary>) -> i32 {
    match ending {
        Ending::Stopped(_) | Ending::Failed(_) => AB_EXIT_FATAL,
        Ending::Ok
        | Ending::FailedRequests
        | Ending::ScheduleNotKept
        | Ending::ThresholdBroken
        | Ending::ThresholdUnclear => {
            let Some(s) = summary else {
                return AB_EXIT_FATAL;
            };
            if s.errors.connect > AB_CONNECT_FAILURES || (!opts.recv_errors_ok && s.errors.read > 0)
            {
                AB_EXIT_FATAL
            } else {
                error::EXIT_OK
            }
        }
    }
}

/// ab's heartbeat: "Completed N requests" on stderr each time another tenth of `-n` is
/// done (never more often than every 100 requests), then "Finished N requests".
/// vblast's threads report once a second, so the lines come at that pace (all at the
/// end of a shorter run), with ab's counts.
struct Heartbeat {
    every: u64,
    /// The last count printed.
    printed: std::sync::Mutex<u64>,
}

impl Heartbeat {
    fn new(opts: &AbOptions) -> Heartbeat {
        // `-t` alone is `-n 50000` already (`ab::options`).
        Heartbeat {
            every: (opts.requests / 10).max(100),
            printed: std::sync::Mutex::new(0),
        }
    }

    /// Every multiple of `every` up to `done` not printed yet.
    fn show(&self, done: u64) {
        let Ok(mut printed) = self.printed.lock() else {
            return;
        };
        let mut lines = String::new();
        while *printed + self.every <= done {
            *printed += self.every;
            lines.push_str(&format!("Completed {} requests\n", *printed));
        }
        eprint!("{lines}");
    }

    fn finish(&self, done: u64) {
        self.show(done);
        eprintln!("Finished {done} requests");
    }
}

/// The run (`session::one_step`), its report and files; how it ended, and its summary
/// when it ran.
fn run(opts: &AbOptions, stop: &Stop) -> (Ending, Option<Summary>) {
    let scenario = opts.scenario();
    for (flag, path) in [("-e", &opts.csv), ("--junit", &opts.junit)] {
        if let Some(path) = path
            && let Err(e) = crate::results::deliver::check_path(flag, path)
        {
            return (Ending::Failed(e), None);
        }
    }
    let abort = opts.threshold_abort.then_some(opts.threshold_grace);
    let thresholds =
        match crate::commands::threshold::checked(opts.thresholds.clone(), abort, &scenario) {
            Ok(t) => t,
            Err(e) => return (Ending::Failed(e), None),
        };
    let aborting =
        crate::commands::threshold::AbortWatch::new(&thresholds, stop, Default::default());
    // ab's progress replaces vblast's live line: "Completed N requests" on stderr.
    let heartbeat = Heartbeat::new(opts);
    let watch = |p: &[crate::engine::Totals]| {
        if !opts.quiet {
            heartbeat.show(p.iter().map(|t| t.requests).sum());
        }
        aborting.see(p);
    };
    let showing = Showing {
        quiet: true,
        progress: false,
        metrics: None,
        probe: Probe::Required,
        watch: (!opts.quiet || abort.is_some()).then_some(&watch as crate::engine::ProgressFn<'_>),
        server: None,
    };
    let named = &mut |s: &crate::session::Session| {
        aborting.name_ops(s.op_names());
        Ok(())
    };
    let ran = match one_step::run(&scenario, stop, &showing, named) {
        Ok(r) => r,
        Err(e) => return (Ending::Failed(e), None),
    };
    if !opts.quiet {
        heartbeat.finish(ran.results.stats.requests());
    }
    let mut results = ran.results;
    // ab's report: the closed model, no warm-up, no setup or cleanup lines.
    results.run.setup_s = 0.0;
    results.run.cleanup_s = 0.0;
    let mut style = opts.style();
    style.tls = results.tls_probe.clone();
    let stopped = aborting
        .broken()
        .map(|t| crate::commands::threshold::stopped_early(&t));
    if let Some(note) = &stopped {
        results.stats.say(note);
        eprintln!("vblast: {note}");
    }
    let mut summary = results.summary();
    summary.thresholds = report::thresholds::judge(&summary, &thresholds.set);
    let mut text = Vec::new();
    let _ = super::report::render_with(&summary, &style, &mut text);
    let _ = report::thresholds::write_text(&summary.thresholds, &mut text);
    let printed = crate::results::deliver::print_or_fail(&text);
    let written = match &opts.csv {
        Some(path) => report::save(&summary, report::Format::AbCsv, path).map_err(Error::output),
        None => Ok(()),
    };
    let junit = match &opts.junit {
        Some(path) => report::junit::save(
            "vblast ab",
            &report::junit::of_thresholds(&summary.thresholds),
            path,
        )
        .map_err(Error::output),
        None => Ok(()),
    };
    let written = printed.and(written).and(junit);
    let threshold_ending = crate::commands::threshold::ending(&summary.thresholds);
    let ending = if let Some(s) = ran.interrupted {
        Ending::Stopped(s)
    } else if let Err(c) = ran.cleanup {
        Ending::Failed(c)
    } else if let Err(e) = written {
        Ending::Failed(e)
    } else if let Some(lost) = ran.lost {
        Ending::Failed(Error::lost_load(lost))
    } else if let Some(ending) = threshold_ending {
        ending
    } else if !thresholds.bounds_failures() && (summary.failed > 0 || summary.requests == 0) {
        Ending::FailedRequests
    } else {
        Ending::Ok
    };
    (ending, Some(summary))
}
