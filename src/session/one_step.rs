//! The run-step skeleton, shared by `vblast run`, `vblast ab` and the sweep: `open` the
//! session (a hook once it is open: a shard joins its fixture; the TLS probe of ab's
//! report lines; the cluster as it answered), then its steps with the live progress (and
//! the metrics exporter): one `step`, or `held` steps over the same connections (the
//! sweep's rate steps), then the cleanup. `run` is the one-step run: open, step, close,
//! and the results built from what the step measured.

use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use crate::ab::report::TlsFacts;
use crate::config::scenario::{Scenario, Workload};
use crate::engine;
use crate::error::Error;
use crate::metrics::Metrics;
use crate::report::{Model, RunInfo};
use crate::results::Results;
use crate::server_stats::Sampler;
use crate::session::live::Live;
use crate::session::{Session, StepResult};
use crate::signals::{Signal, Stop};

/// What a one-step run shows while it runs, and how it treats the TLS probe.
pub struct Showing<'a> {
    /// No live progress line and no cluster view.
    pub quiet: bool,
    /// Progress as plain lines even when stderr is not a terminal.
    pub progress: bool,
    /// The Prometheus exporter, fed every snapshot and the final figures.
    pub metrics: Option<&'a Metrics>,
    pub probe: Probe,
    /// Called with the threads' totals as they report (`vblast ab`'s "Completed N
    /// requests").
    pub watch: Option<engine::ProgressFn<'a>>,
    /// Sampling of the nodes during the step (src/server_stats/); None: none.
    pub server: Option<&'a crate::server_stats::Settings>,
}

/// What a failed TLS probe (one handshake before the load, for ab's TLS lines) means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The run goes on without the lines; `note` says so on stderr.
    Lenient { note: bool },
    /// The run ends before any load (ab's report needs the lines).
    Required,
    /// No probe (a sweep's report has no TLS lines).
    Skip,
}

/// How a one-step run went: its results (built from the step, not yet saved), what the
/// step lost, the cleanup's result and the signal that stopped it, if any.
pub struct Ran {
    pub results: Results,
    /// When the measured run's clock started.
    pub clock_start: SystemTime,
    pub lost: Option<crate::orchestrate::Lost>,
    pub cleanup: Result<(), Error>,
    pub interrupted: Option<Signal>,
}

/// A session opened for a run, before its first step: the session, how long its checks
/// and setup took, and the TLS probe's facts.
pub struct Opened {
    pub session: Session,
    pub setup_s: f64,
    pub tls_probe: Option<TlsFacts>,
}

/// Opens the session of `scenario` (checks, setup); `opened` runs once it is open (its
/// error closes the session and ends the run); then the TLS probe and the cluster as it
/// answered. The first part of every run: `run` (and so `vblast run`, `vblast ab`) and
/// the sweep's.
pub fn open(
    scenario: &Scenario,
    stop: &Stop,
    showing: &Showing,
    opened: &mut dyn FnMut(&Session) -> Result<(), Error>,
) -> Result<Opened, Error> {
    let setup_started = Instant::now();
    let display = crate::vault::progress::Display::new(showing.quiet, showing.progress);
    let mut session = Session::open_showing(scenario, stop, display)?;
    if let Err(e) = opened(&session) {
        if let Err(c) = session.close() {
            eprintln!("vblast: {c}");
        }
        return Err(e);
    }
    let setup_s = setup_started.elapsed().as_secs_f64();
    let tls_probe = match probe(&session, scenario, showing.probe) {
        Ok(p) => p,
        Err(e) => {
            let _ = session.close();
            return Err(e);
        }
    };
    show_cluster(&session, showing.quiet);
    Ok(Opened {
        session,
        setup_s,
        tls_probe,
    })
}

/// Runs `scenario` as one load step; `opened` runs once the session is open (its error
/// closes the session and ends the run).
pub fn run(
    scenario: &Scenario,
    stop: &Stop,
    showing: &Showing,
    opened: &mut dyn FnMut(&Session) -> Result<(), Error>,
) -> Result<Ran, Error> {
    let Opened {
        mut session,
        setup_s,
        tls_probe,
    } = open(scenario, stop, showing, opened)?;
    let mut step = step(&mut session, &scenario.load, showing);
    let server_samples = step.as_mut().ok().and_then(|s| s.server_samples.take());
    if let (Some(m), Ok(s)) = (showing.metrics, &step) {
        m.finish(
            &s.outcome.stats,
            s.outcome.lost.as_ref().map_or(0, |l| l.0.len()),
        );
    }
    let cleanup_started = Instant::now();
    let cleanup = session.close();
    let cleanup_s = cleanup_started.elapsed().as_secs_f64();
    let interrupted = stop.signal();
    let step = match step {
        Ok(s) => s,
        Err(e) => {
            if let Err(c) = cleanup {
                eprintln!("vblast: {c}");
            }
            return Err(e);
        }
    };
    let mut info = run_info(&session, scenario, &step);
    info.interrupted = interrupted.is_some();
    info.setup_s = setup_s;
    info.cleanup_s = cleanup_s;
    info.setup_phases = session.setup_phases();
    let mut results = Results::build(
        info,
        step.outcome.stats,
        session.op_names(),
        scenario.redacted(),
        step.started_at,
    );
    results.tls_probe = tls_probe;
    results.server_samples = server_samples;
    audit_report(&session, &results, scenario.load.step.warmup);
    Ok(Ran {
        results,
        clock_start: step.outcome.clock_start.unwrap_or(step.started_at),
        lost: step.outcome.lost,
        cleanup,
        interrupted,
    })
}

/// `--audit-path`: the audit log's responses per operation beside the client's, on stderr.
fn audit_report(session: &Session, results: &Results, warmup: std::time::Duration) {
    let Ok(started) = humantime::parse_rfc3339(&results.started_at) else {
        return;
    };
    let from = (!warmup.is_zero()).then(|| started + warmup);
    // The run's end, with room for `started_at`'s milliseconds: what the cleanup sends
    // after it is not the run's (an existing device logs it).
    let until = started
        + std::time::Duration::from_secs_f64(results.stats.elapsed_s.max(0.0))
        + std::time::Duration::from_millis(200);
    let summary = results.summary();
    let counts: Vec<u64> = results
        .op_names
        .iter()
        .map(|n| {
            summary
                .ops
                .iter()
                .find(|o| o.name == *n)
                .map_or(0, |o| o.requests)
        })
        .collect();
    // A run stopped by a signal left up to one request per connection in flight.
    let in_flight = if summary.run.interrupted {
        summary.run.connections
    } else {
        0
    };
    if let Some(line) = session.audit_line(from, Some(until), &counts, in_flight) {
        eprintln!("vblast: {line}");
    }
}

/// https: one handshake before the load, not counted, for ab's TLS lines (saved with the
/// results, so `vblast report --format ab` prints them too).
fn probe(session: &Session, scenario: &Scenario, how: Probe) -> Result<Option<TlsFacts>, Error> {
    let Some(tls) = scenario.tls.as_ref().filter(|_| how != Probe::Skip) else {
        return Ok(None);
    };
    match crate::ab::tls::probe(session.target(), tls, scenario.load.timeout) {
        Ok(facts) => Ok(Some(facts)),
        Err(e) if how == Probe::Required => Err(Error::unreachable(e)),
        Err(e) => {
            if how == (Probe::Lenient { note: true }) {
                eprintln!("vblast: no TLS lines in the ab report: {e}");
            }
            Ok(None)
        }
    }
}

/// A cluster target: its nodes as they answered, before the load.
pub fn show_cluster(session: &Session, quiet: bool) {
    if let Some(view) = session.cluster_view()
        && !quiet
    {
        eprint!("{}", view.render());
    }
}

/// The nodes sampled from now on (`showing.server`), for a step of `load`.
fn sampler(
    session: &Session,
    load: &crate::config::scenario::Load,
    showing: &Showing,
) -> Option<Sampler> {
    let s = showing.server?;
    let profiling = s
        .pprof
        .as_ref()
        .and_then(|p| session.node_clients(p.timeout()).into_iter().next());
    Some(Sampler::start(
        s,
        session.node_clients(s.timeout()),
        profiling,
        load.step.warmup,
        showing.metrics.map(Metrics::server_intervals),
    ))
}

/// One step of `load`, with the live progress line and the exporter fed as it runs, and
/// the nodes sampled over it (`showing.server`).
pub fn step(
    session: &mut Session,
    load: &crate::config::scenario::Load,
    showing: &Showing,
) -> Result<StepResult, Error> {
    let sampler = sampler(session, load, showing);
    let mut step = shown_step(session, load, showing);
    let samples = sampler.and_then(Sampler::finish);
    if let Ok(s) = &mut step {
        s.server_samples = samples;
    }
    step
}

fn shown_step(
    session: &mut Session,
    load: &crate::config::scenario::Load,
    showing: &Showing,
) -> Result<StepResult, Error> {
    let live = Live::new(showing.quiet, showing.progress);
    let metrics = showing.metrics;
    let show = |p: &[engine::Totals]| {
        if live.enabled() {
            live.show(p);
        }
        if let Some(m) = metrics {
            m.update(p);
        }
        if let Some(w) = showing.watch {
            w(p);
        }
    };
    let step = session.step(
        load,
        (live.enabled() || metrics.is_some() || showing.watch.is_some())
            .then_some(&show as engine::ProgressFn<'_>),
    );
    live.clear();
    step
}

/// Held steps (`Session::hold`): `first`, then each load `next` returns for the step just
/// ended, over the same connections, each with its own live progress line (and the
/// exporter fed as they run).
pub fn held(
    session: &mut Session,
    first: &crate::config::scenario::Load,
    showing: &Showing,
    next: &mut dyn FnMut(Result<StepResult, Error>) -> Option<crate::config::scenario::Load>,
) -> Result<(), Error> {
    let live = Mutex::new(Live::new(showing.quiet, showing.progress));
    let enabled = live.lock().is_ok_and(|l| l.enabled());
    let metrics = showing.metrics;
    let show = |p: &[engine::Totals]| {
        if let Ok(l) = live.lock()
            && l.enabled()
        {
            l.show(p);
        }
        if let Some(m) = metrics {
            m.update(p);
        }
    };
    // Each step's nodes sampled over it, the next step's sampling started as it is known.
    let mut sampling = sampler(session, first, showing);
    let mut each = |mut step: Result<StepResult, Error>| {
        if let Ok(mut l) = live.lock() {
            l.clear();
            *l = Live::new(showing.quiet, showing.progress);
        }
        let ended = sampling.take().and_then(Sampler::next_step);
        let paused = match (&mut step, ended) {
            (Ok(s), Some((samples, paused))) => {
                s.server_samples = Some(samples);
                Some(paused)
            }
            (_, ended) => ended.map(|e| e.1),
        };
        let load = next(step)?;
        sampling = paused.map(|p| p.resume(load.step.warmup));
        Some(load)
    };
    session.hold(
        first,
        (enabled || metrics.is_some()).then_some(&show as engine::ProgressFn<'_>),
        &mut each,
    )
}

/// What a run's report says about it (setup and cleanup times, and whether a signal
/// stopped it, are the caller's).
pub fn run_info(session: &Session, scenario: &Scenario, step: &StepResult) -> RunInfo {
    let target = session.target();
    let asked_h2 = scenario.load.http2;
    let spoken_h2 =
        crate::net::h2::Http2Options::spoken(asked_h2, !step.outcome.stats.http2.is_empty());
    RunInfo {
        target: if matches!(scenario.workload, Workload::Url(_)) {
            format!("{}{}", target.base(), target.path)
        } else {
            target.base()
        },
        operation: session.op_names().join(","),
        // A shard's own share (`session::shard`); shards' files add up to -c.
        connections: scenario
            .load
            .spread
            .shard
            .share(match (asked_h2, spoken_h2) {
                // Fell back to HTTP/1.1 (the server offers no h2): over the connections it had.
                (Some(h), None) => h.connections_without_h2(scenario.load.connections),
                _ => scenario.load.connections,
            }),
        threads: step.layout.threads,
        processes: step.layout.processes,
        model: if scenario.load.step.schedule.is_some() {
            Model::Open
        } else {
            Model::Closed
        },
        target_rate: scenario.load.step.schedule.as_ref().map(|s| s.peak_rate()),
        keepalive: scenario.load.keepalive,
        protocol: crate::net::h2::Http2Options::name(spoken_h2),
        warmup_s: scenario.load.step.warmup.as_secs_f64(),
        interrupted: false,
        setup_s: 0.0,
        cleanup_s: 0.0,
        setup_phases: Vec::new(),
        differences: scenario.differences.clone(),
        method: match &scenario.workload {
            Workload::Url(_) => session.operations.first().map(|o| o.request.method.clone()),
            Workload::Vault(_) => None,
        },
    }
}
