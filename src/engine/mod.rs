//! The load engine: one mio event loop per thread, pinned to a core, owning its
//! connections outright. Threads share nothing on the hot path; each returns its `Stats`,
//! merged at the end.
//!
//! This module holds the plan (`EnginePlan`, which embeds the scenario's `Load`; a held
//! run's steps are the load's `StepPlan`), why the engine
//! could not run (`EngineError`), the start gate and `run`, which spawns the event-loop
//! threads, relays their progress and merges their results; `driver` is the one event
//! loop, over either protocol's connections (`Wheel`), each on a `link` (its socket's
//! connect, TLS handshake, backoff and timeouts, written once): HTTP/1.1's `worker` (with
//! `conn` its connection state machine, `hop` redirects followed) and HTTP/2's `h2`;
//! `tally` counts responses and failures for both; `held` runs several load steps over
//! the same threads and open connections.

mod conn;
mod driver;
mod h2;
mod held;
mod hop;
mod link;
mod sendtie;
mod tally;
mod worker;

pub use crate::config::scenario::StepPlan;
pub use held::{run_held, run_held_at};

use std::sync::{Arc, Barrier, OnceLock};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::config::scenario::Load;
use crate::error::{Cause, io_text};
use crate::net::stamp::Clock;
use crate::net::target::Target;
use crate::net::tls::TlsOptions;
use crate::net::transport::TlsConnector;
use crate::signals::Stop;
use crate::stats::Stats;
use crate::template::Common;
use crate::workload::Operation;

use driver::Wheel;
use worker::EventLoop;

/// Everything an engine (one process's share of a run) needs: the load as the scenario
/// gives it, and what is not the load (where it goes, with which credentials, which
/// operations, this process's threads, the nodes). Serializable so that worker processes
/// receive exactly what an in-process engine would.
#[derive(Clone, Serialize, Deserialize)]
pub struct EnginePlan {
    pub target: Target,
    pub tls: Option<TlsOptions>,
    pub token: Option<String>,
    pub namespace: Option<String>,
    pub ops: Vec<Operation>,
    /// The load over the whole run (all processes); `load.step` is a single run's step,
    /// the first of a held run.
    pub load: Load,
    /// Event-loop threads over all processes, this process's first one, and how many it runs.
    pub threads_total: usize,
    pub thread_offset: usize,
    pub threads_here: usize,
    /// Several nodes as one target: where each connection goes.
    #[serde(default)]
    pub nodes: crate::net::route::NodePlan,
}

impl EnginePlan {
    /// Thread `global` of this shard as (slot, slots) of the whole run's request numbering:
    /// (global, threads_total) when the run is not sharded (`src/session/shard.rs`).
    pub fn slot(&self, global: usize) -> (usize, usize) {
        let s = self.load.spread.shard;
        (s.slot(global), s.slots(self.threads_total))
    }

    fn common(&self) -> Common {
        Common {
            host: self.target.host_header(),
            token: self.token.clone(),
            namespace: self.namespace.clone(),
            close: !self.load.keepalive,
        }
    }
}

/// Why the engine could not run (or went on no more), turned into the crate's `Cause` (an
/// io failure keeps its io error).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot create event loop: {}", io_text(.0))]
    EventLoop(std::io::Error),
    #[error("cannot create a timer: {}", io_text(.0))]
    Timer(std::io::Error),
    #[error("event loop failed: {}", io_text(.0))]
    Poll(std::io::Error),
    #[error("an event-loop thread panicked")]
    Panicked,
    #[error("https target without TLS settings")]
    NoTlsSettings,
    /// The TLS settings could not be turned into a client configuration.
    #[error("{0}")]
    Tls(Cause),
    #[error("a held run needs keep-alive connections")]
    HeldWithoutKeepalive,
    #[error("a held run cannot change between the open and the closed model")]
    HeldModelChanged,
    /// `--http2` against a TLS server that does not offer h2 by ALPN.
    #[error(
        "--http2: the server at {addr} does not offer h2 by ALPN (it chose {chosen}); add --http2-fallback to run over HTTP/1.1"
    )]
    NoH2 { addr: String, chosen: String },
    /// `--http2-prior-knowledge` against a server that answered the preface in HTTP/1.1.
    #[error(
        "--http2-prior-knowledge: the server at {addr} does not speak h2c (it answered the HTTP/2 preface in HTTP/1.1); run without --http2-prior-knowledge, or use --http2 over https"
    )]
    NoH2c { addr: String },
    /// Something HTTP/2 runs do not do yet (docs/http2.md).
    #[error("{0}")]
    Http2Unsupported(&'static str),
}

impl From<EngineError> for Cause {
    fn from(e: EngineError) -> Cause {
        match e {
            EngineError::EventLoop(source) => Cause::io("cannot create event loop", source),
            EngineError::Timer(source) => Cause::io("cannot create a timer", source),
            EngineError::Poll(source) => Cause::io("event loop failed", source),
            EngineError::Tls(c) => c,
            other => Cause::Said(other.to_string()),
        }
    }
}

/// How the start of the measured run is agreed between threads (and processes).
pub trait StartGate: Sync {
    /// Called by each thread once its connections are open; returns the common origin.
    fn wait(&self) -> Instant;
}

/// In one process: a barrier, then the first thread through sets the origin.
pub struct LocalGate {
    barrier: Barrier,
    origin: OnceLock<Instant>,
}

impl LocalGate {
    pub fn new(threads: usize) -> LocalGate {
        LocalGate {
            barrier: Barrier::new(threads),
            origin: OnceLock::new(),
        }
    }
}

impl StartGate for LocalGate {
    fn wait(&self) -> Instant {
        self.barrier.wait();
        *self.origin.get_or_init(Instant::now)
    }
}

/// A thread's running totals, sent about once a second for a live progress display (and
/// once at the end of a run by a thread that had not sent any). In a progress slice, one
/// per event-loop thread (or per worker process, summed over its threads).
#[derive(Clone, Debug, Default)]
pub struct Totals {
    pub requests: u64,
    pub ok: u64,
    /// For `--metrics-listen` (`src/metrics.rs`): the rest of the thread's figures.
    pub more: crate::stats::figures::Figures,
    /// Each operation's figures, for `--threshold-abort`'s thresholds on one operation
    /// (from a worker process: summed over its threads).
    pub ops: Vec<crate::stats::figures::OpFigures>,
    /// These are its figures (false: the default entry of a thread or process that has
    /// not reported yet, whose figures are missing from a sum).
    pub reported: bool,
}

/// Called with every thread's latest totals whenever one of them reports.
pub type ProgressFn<'a> = &'a (dyn Fn(&[Totals]) + Sync);

/// Runs this process's share of the plan and returns the merged results.
pub fn run(
    plan: &EnginePlan,
    stop: &Stop,
    gate: &dyn StartGate,
    progress: Option<ProgressFn<'_>>,
) -> Result<Stats, EngineError> {
    // Threads report progress over a bounded channel they never block on.
    let (report, reports) = crossbeam_channel::bounded::<(usize, Totals)>(plan.threads_here * 4);
    let sender = progress.map(|_| &report);
    // The protocol is chosen here, once: each has its own event loop.
    if let Some(fallback) = alpn_refusal(plan)? {
        // The server speaks no h2 (--http2-fallback, or a vault-benchmark file's run):
        // the run is HTTP/1.1, and says so.
        let plan = EnginePlan {
            load: Load {
                http2: None,
                connections: plan.load.http2.map_or(plan.load.connections, |h| {
                    h.connections_without_h2(plan.load.connections)
                }),
                ..plan.load.clone()
            },
            ..plan.clone()
        };
        let mut stats = run(&plan, stop, gate, progress)?;
        stats.say(&fallback);
        return Ok(stats);
    }
    if plan.load.http2.is_some() {
        let workers = build(plan, sender, h2::H2Loop::new)?;
        run_workers(plan, workers, stop, gate, progress, (report, reports))
    } else {
        let workers = build(plan, sender, EventLoop::new)?;
        run_workers(plan, workers, stop, gate, progress, (report, reports))
    }
}

type Reports = (
    crossbeam_channel::Sender<(usize, Totals)>,
    crossbeam_channel::Receiver<(usize, Totals)>,
);

/// Runs the workers on their threads (pinned), relays their progress, merges their results.
fn run_workers<'p, W: Wheel<'p>>(
    plan: &'p EnginePlan,
    workers: Vec<(W, Option<core_affinity::CoreId>)>,
    stop: &Stop,
    gate: &dyn StartGate,
    progress: Option<ProgressFn<'_>>,
    (report, reports): Reports,
) -> Result<Stats, EngineError> {
    let results: Vec<Result<Stats, EngineError>> = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|(worker, core)| {
                s.spawn(move || {
                    if let Some(c) = core {
                        core_affinity::set_for_current(c);
                    }
                    driver::run(worker, stop, gate)
                })
            })
            .collect();
        drop(report);
        if let Some(show) = progress {
            // Ends when every thread has finished and dropped its sender.
            let mut latest = vec![Totals::default(); plan.threads_here];
            for (thread, p) in reports.iter() {
                latest[thread] = p;
                show(&latest);
            }
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(EngineError::Panicked)))
            .collect()
    });
    let mut total = Stats::new(plan.ops.len());
    for r in results {
        total.merge(&r?);
    }
    Ok(total)
}

/// The TLS connector every thread copies (None: plain TCP).
fn connector(plan: &EnginePlan) -> Result<Option<TlsConnector>, EngineError> {
    Ok(match (&plan.tls, plan.target.is_tls()) {
        (Some(opts), true) => Some(TlsConnector {
            config: {
                // The engine seals and opens records itself after the handshake
                // (src/net/tlsio.rs), so rustls must hand over the traffic keys.
                let mut config =
                    (*crate::net::tls::client_config(opts).map_err(tls_error)?).clone();
                config.enable_secret_extraction = true;
                if plan.load.http2.is_some() {
                    // ALPN: h2 first; http/1.1 so that a server without h2 says so.
                    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
                }
                Arc::new(config)
            },
            name: crate::net::tls::server_name(opts, &plan.target.host).map_err(tls_error)?,
            rustls_records: opts.engine == crate::net::tls::TlsEngine::Rustls,
            // Each node is reached under its own name (--tls-server-name: that one for all).
            node_names: plan
                .nodes
                .targets
                .iter()
                .map(|t| crate::net::tls::server_name(opts, &t.host).map_err(tls_error))
                .collect::<Result<_, _>>()?,
        }),
        (None, true) => {
            return Err(EngineError::NoTlsSettings);
        }
        _ => None,
    })
}

/// `--http2` over TLS: asks the server which protocol it chooses by ALPN before any load.
/// Ok(None): it chose h2 (or the run does not ask); Ok(Some(note)): it did not, and
/// `--http2-fallback` (or a vault-benchmark file's run) goes on over HTTP/1.1; otherwise
/// the refusal.
fn alpn_refusal(plan: &EnginePlan) -> Result<Option<String>, EngineError> {
    let Some(h2) = plan.load.http2 else {
        return Ok(None);
    };
    if h2.prior_knowledge || !plan.target.is_tls() || h2::unsupported(plan).is_some() {
        return Ok(None);
    }
    let Some(tls) = connector(plan)? else {
        return Ok(None);
    };
    let chosen = crate::net::tls::negotiated_alpn(
        tls.config.clone(),
        tls.name.clone(),
        plan.target.addr(),
        plan.load.timeout.min(std::time::Duration::from_secs(10)),
    )
    .map_err(tls_error)?;
    if chosen.as_deref() == Some(b"h2") {
        return Ok(None);
    }
    let chosen = match chosen {
        Some(p) => String::from_utf8_lossy(&p).into_owned(),
        None => "no protocol".into(),
    };
    Ok(Some(match h2.without_h2 {
        crate::net::h2::WithoutH2::Refuse => {
            return Err(EngineError::NoH2 {
                addr: plan.target.base(),
                chosen,
            });
        }
        crate::net::h2::WithoutH2::Http1 => format!(
            "--http2-fallback: the server offers no h2 by ALPN (it chose {chosen}): this run is HTTP/1.1"
        ),
        crate::net::h2::WithoutH2::Http1Over { connections } => format!(
            "the server offers no h2 by ALPN (it chose {chosen}): this run is HTTP/1.1 over {connections} connections, as vault-benchmark's Go client falls back"
        ),
    }))
}

/// The core each local thread is pinned to.
fn core_of(plan: &EnginePlan) -> impl Fn(usize) -> Option<core_affinity::CoreId> {
    let cores = if plan.load.pin {
        core_affinity::get_core_ids().unwrap_or_default()
    } else {
        Vec::new()
    };
    move |global| (!cores.is_empty()).then(|| cores[global % cores.len()])
}

/// A thread's connections over one protocol, on its core: `EventLoop::new` or `H2Loop::new`.
type NewWheel<'p, W> = fn(driver::Core<'p>) -> Result<W, EngineError>;

/// Every event-loop thread's connections (`new`: over the run's protocol) and the core
/// it is pinned to, built before any thread starts, so that a failure (no event loop,
/// no timer, HTTP/2 where it does not apply) is one message, not a thread gone missing
/// while the others wait at the gate. `report`: where progress goes, if anywhere.
fn build<'p, W: Wheel<'p>>(
    plan: &'p EnginePlan,
    report: Option<&crossbeam_channel::Sender<(usize, Totals)>>,
    new: NewWheel<'p, W>,
) -> Result<Vec<(W, Option<core_affinity::CoreId>)>, EngineError> {
    if let Some(what) = h2::unsupported(plan) {
        return Err(EngineError::Http2Unsupported(what));
    }
    let tls = connector(plan)?;
    let clock = clock_of(plan);
    let requests = driver::Requests::build(plan);
    let pinned = core_of(plan);
    let mut workers = Vec::with_capacity(plan.threads_here);
    for local in 0..plan.threads_here {
        let global = plan.thread_offset + local;
        let mut core = driver::Core::new(plan, global, requests.clone(), tls.clone())?;
        core.tally.report = report.map(|r| (local, r.clone()));
        if let Some(grant) = &clock {
            core.use_clock(grant);
        }
        workers.push((new(core)?, pinned(global)));
    }
    Ok(workers)
}

/// The clock a run gets (`clock_of`): `used`, and why not the kernel's (`refused`, the
/// run then on the user-space clock) or its TX stamps (`send_refused`, the run then on the
/// kernel's RX clock with user-space sends).
pub(crate) struct ClockGrant {
    pub(crate) used: Clock,
    pub(crate) refused: Option<String>,
    pub(crate) send_refused: Option<String>,
}

/// The kernel clock (the default, `--clock kernel` or `--clock kernel-tx`): the clock the
/// run gets, and why not the kernel's when a socket here refuses SO_TIMESTAMPING (said
/// once, at the start, in one line; the run then ends its latencies by the user-space
/// clock, every format says so, and the exit status is the run's own); likewise, with
/// kernel-tx, when a socket refuses the TX stamps (the run then keeps the kernel's RX
/// end and takes each send from the user-space clock). None: the user-space clock,
/// asked. The probe returns at once; each thread waits for what is left of it before the
/// start gate.
fn clock_of(plan: &EnginePlan) -> Option<ClockGrant> {
    if !plan.load.clock.is_kernel() {
        return None;
    }
    if let Err(why) = crate::net::stamp::probe() {
        eprintln!("vblast: kernel clock: {why}; this run measures with the user-space clock");
        return Some(ClockGrant {
            used: Clock::User,
            refused: Some(why.to_string()),
            send_refused: None,
        });
    }
    let mut grant = ClockGrant {
        used: plan.load.clock,
        refused: None,
        send_refused: None,
    };
    if plan.load.clock == Clock::KernelTx
        && let Err(why) = crate::net::stamp::probe_tx()
    {
        eprintln!(
            "vblast: kernel clock: {why}; this run takes each send from the user-space clock before the write (its end stays the kernel's)"
        );
        grant.used = Clock::Kernel;
        grant.send_refused = Some(why.to_string());
    }
    Some(grant)
}

/// The TLS settings' own refusal, as the engine's error.
fn tls_error(e: impl Into<crate::error::Cause>) -> EngineError {
    EngineError::Tls(e.into())
}
