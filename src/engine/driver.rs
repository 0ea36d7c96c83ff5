//! The one event-loop driver, whichever protocol a run speaks: a thread's `Core` (its
//! poll, pacer, counts, timer, step and generator) and the loop that drives its
//! connections through the `Wheel` interface, which HTTP/1.1 (`worker.rs`) and HTTP/2
//! (`h2.rs`) implement. The loop owns what both share: the start at the gate, each
//! step's pacer and measured window, the warm-up forgotten, the wind-down, the periodic
//! tick, progress once a second, the wake-up for the next due request, and the step's
//! figures; a held run (`held.rs`) runs several steps over the same connections. The
//! protocol is chosen once per run (`build`), so the loop is compiled once per protocol
//! and calls no method through a pointer.

use std::io;
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::{Events, Poll, Token};

use super::conn::Req;
use super::link::ConnectWindow;
use super::tally::{Counter, make_pacer};
use super::{ClockGrant, EngineError, EnginePlan, StartGate, StepPlan};
use crate::config::schedule::Caller;
use crate::net::redirect::Redirects;
use crate::net::stamp::{self, Clock};
use crate::net::transport::{PortSlice, TlsConnector};
use crate::net::wait::Waiting;
use crate::pacing::{Due, Pacer};
use crate::signals::Stop;
use crate::stats::Stats;
use crate::template::{Captures, Common, RequestSpec, Rng, Template};
use crate::timer::Timer;
use crate::workload::Picker;

/// The pacing timer's token (connections use their index).
pub(super) const TIMER: Token = Token(usize::MAX);
/// The read buffer of a thread.
const READ_BUF: usize = 64 * 1024;
/// How often timeouts, retries and the route are checked.
pub(super) const TICK: Duration = Duration::from_millis(50);
/// How long to wait for all connections to open before starting the clock.
pub(super) const PRECONNECT_MAX: Duration = Duration::from_secs(10);
/// Room kept per captured value (a Vault token is about 100 bytes).
pub(super) const CAPTURE_BYTES: usize = 256;

/// What every event-loop thread has, whichever protocol it speaks.
pub(super) struct Core<'p> {
    pub(super) plan: &'p EnginePlan,
    pub(super) global: usize,
    pub(super) poll: Poll,
    /// How `poll` is waited on: a nap while requests are in flight (`net/wait.rs`).
    pub(super) waiting: Waiting,
    pub(super) pacer: Pacer,
    /// What this thread counts (`tally.rs`).
    pub(super) tally: Counter,
    /// Open model: wakes the loop when the next request is due.
    pub(super) timer: Option<Timer>,
    /// The current step's schedule, warm-up and bounds (the plan's own in a single run).
    pub(super) step: StepPlan,
    /// A held run: connections stay open when a step's schedule is done.
    pub(super) hold: bool,
    pub(super) picker: Picker,
    /// The operations picked by weight, in the mix's order: what a schedule's recorded
    /// operation (`Due::op`, a replay) indexes.
    pub(super) weighted: Vec<usize>,
    pub(super) rng: Rng,
    /// Per operation: the operation that captures what it needs (itself if none).
    pub(super) producers: Vec<usize>,
    /// The request templates, one set per node.
    pub(super) requests: Requests,
    pub(super) tls: Option<TlsConnector>,
    /// This thread's own slice of local ports.
    pub(super) ports: Option<PortSlice>,
    pub(super) buf: Box<[u8]>,
    /// `--follow-redirects`: the nodes a redirect may be followed to.
    pub(super) redirects: Option<Redirects>,
    /// Several nodes: how many route moves this thread has acted on.
    pub(super) route_seen: u64,
    /// Its connections opened for the first time (`link.rs`).
    pub(super) window: ConnectWindow,
    /// `--clock kernel`, granted: sockets stamp what they receive, reads keep the stamp.
    pub(super) kernel: bool,
    /// `--clock kernel-tx`, granted: open sockets stamp what they send too, and each
    /// request's send is the kernel's stamp of its last byte (`sendtie.rs`).
    pub(super) tx: bool,
    /// The kernel's stamp of the read being acted on (`take_stamp`), for the responses
    /// it completed.
    pub(super) stamp: Option<Instant>,
    /// This wake's moment on both clocks, read at its first stamp (`take_stamp`) and
    /// forgotten at the next wake (`wait`).
    moment: Option<stamp::Moment>,
}

/// For each operation, what to send instead while the slot it needs is empty: the
/// operation that captures it (itself if it needs none).
fn producers(plan: &EnginePlan) -> Vec<usize> {
    plan.ops
        .iter()
        .enumerate()
        .map(|(i, o)| {
            o.needs
                .and_then(|slot| {
                    plan.ops
                        .iter()
                        .position(|p| p.capture.as_ref().is_some_and(|c| c.slot == slot))
                })
                .unwrap_or(i)
        })
        .collect()
}

/// A pacer that hands out nothing (and is never finished) until the real schedule is set.
fn idle_pacer(now: Instant) -> Pacer {
    Pacer::open(
        now + Duration::from_secs(86_400 * 365),
        Duration::ZERO,
        None,
        None,
        &crate::config::schedule::Schedule::Constant { rate: 1.0 },
        0,
        1,
    )
}

/// Slots for captured values, only when an operation captures one.
pub(super) fn captures(plan: &EnginePlan) -> Captures {
    let slots = plan
        .ops
        .iter()
        .filter_map(|o| o.capture.as_ref().map(|c| usize::from(c.slot) + 1))
        .max()
        .unwrap_or(0);
    Captures::with_slots(slots, CAPTURE_BYTES)
}

impl<'p> Core<'p> {
    pub(super) fn new(
        plan: &'p EnginePlan,
        global: usize,
        requests: Requests,
        tls: Option<TlsConnector>,
    ) -> Result<Core<'p>, EngineError> {
        let poll = Poll::new().map_err(EngineError::EventLoop)?;
        let timer = match plan.load.step.schedule {
            Some(_) => Some(Timer::new(poll.registry(), TIMER).map_err(EngineError::Timer)?),
            None => None,
        };
        let now = Instant::now();
        Ok(Core {
            plan,
            global,
            poll,
            waiting: Waiting::new(),
            pacer: idle_pacer(now),
            tally: Counter::new(plan, now),
            timer,
            step: plan.load.step.clone(),
            hold: false,
            picker: Picker::new(&plan.ops),
            weighted: (0..plan.ops.len())
                .filter(|&i| plan.ops[i].weight > 0)
                .collect(),
            rng: Rng::seeded(global as u64),
            producers: producers(plan),
            requests,
            tls,
            ports: crate::sys::ephemeral_ports().and_then(|(lo, hi)| {
                PortSlice::new(lo as u16, hi as u16, global, plan.threads_total)
                    .map(|s| s.with_addrs(&plan.load.spread.source_addrs))
            }),
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            redirects: plan.load.follow_redirects.then(|| {
                Redirects::new(if plan.nodes.targets.is_empty() {
                    std::slice::from_ref(&plan.target)
                } else {
                    &plan.nodes.targets
                })
            }),
            route_seen: 0,
            window: ConnectWindow::default(),
            kernel: false,
            tx: false,
            stamp: None,
            moment: None,
        })
    }

    /// This thread's clock: `used` (kernel: its sockets stamp what they receive; kernel-tx:
    /// what they send too), and why the kernel's (or its TX stamps) was refused, if it was
    /// asked and refused.
    pub(super) fn use_clock(&mut self, grant: &ClockGrant) {
        self.kernel = grant.used.is_kernel();
        self.tx = grant.used == Clock::KernelTx;
        self.tally.keep_clock(
            grant.used,
            grant.refused.clone(),
            grant.send_refused.clone(),
        );
    }

    /// Before a socket read whose stamp counts: the last one forgotten.
    #[inline]
    pub(super) fn clear_stamp(&mut self) {
        self.stamp = None;
        if self.kernel {
            stamp::clear();
        }
    }

    /// After that read: its kernel stamp kept for the responses it completed, carried to
    /// the engine's clock by this wake's moment (its clocks read once per wake).
    #[inline]
    pub(super) fn take_stamp(&mut self) {
        if self.kernel {
            self.stamp = stamp::taken_ns().map(|ns| self.instant_of(ns));
        }
    }

    /// A kernel stamp (real-time `ns`) as an engine instant, by this wake's moment: the
    /// stamps of one response (its send and its end) are carried over alike.
    #[inline]
    pub(super) fn instant_of(&mut self, ns: i64) -> Instant {
        self.moment
            .get_or_insert_with(stamp::Moment::now)
            .instant(ns)
    }

    /// Several nodes: whether the route's active node moved since the last look.
    pub(super) fn route_moved(&mut self) -> bool {
        let changes = self.plan.nodes.route.as_ref().map_or(0, |r| r.changes());
        let moved = changes != self.route_seen;
        self.route_seen = changes;
        moved
    }

    /// The run's work is done and free connections close: never in a held run, whose
    /// connections wait open for the next step.
    pub(super) fn ending(&self, now: Instant) -> bool {
        !self.hold && self.pacer.finished(now)
    }

    /// A new request from `due` for a connection holding `captures`: its operation picked
    /// (the one that captures what it needs first, while the connection has not captured
    /// it), its lateness counted.
    pub(super) fn claim(&mut self, due: Due, captures: &Captures, now: Instant) -> Req {
        // A replay's recorded operation, with its caller (`Instants`: caller * mix + op).
        let stride = self.weighted.len().max(1);
        let (caller, recorded) = match due.op.map(usize::from) {
            Some(o) => (o / stride, self.weighted.get(o % stride)),
            None => (0, None),
        };
        let mut op = match recorded {
            Some(&o) => o,
            None => self.picker.pick(&mut self.rng),
        };
        if let Some(slot) = self.plan.ops[op].needs
            && captures.get(slot).is_none()
        {
            op = self.producers[op];
        }
        self.tally.claimed(&due, now);
        Req {
            op,
            caller: caller.min(usize::from(u16::MAX)) as u16,
            intended: due.intended,
            sent: now,
            measured: due.measured,
            resent: false,
            started: false,
            hops: 0,
            rng: self.rng,
            turn: 0,
        }
    }

    /// Waits for events (at most `timeout`; a nap first while requests are `in_flight`),
    /// the pacing timer's noted; returns the time it woke. The caller handles the
    /// connections' events.
    pub(super) fn wait(
        &mut self,
        events: &mut Events,
        timeout: Duration,
        in_flight: bool,
    ) -> Result<Instant, EngineError> {
        match self
            .waiting
            .poll(&mut self.poll, events, timeout, in_flight)
        {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(EngineError::Poll(e)),
        }
        if let Some(t) = self.timer.as_mut()
            && events.iter().any(|e| e.token() == TIMER)
        {
            t.fired();
        }
        self.moment = None;
        Ok(Instant::now())
    }
}

/// One thread's connections over one protocol, as the driver moves them.
pub(super) trait Wheel<'p>: Send {
    fn core(&mut self) -> &mut Core<'p>;
    /// Before the first step: connections opened (or slots made free).
    fn open_first(&mut self, stop: &Stop, events: &mut Events) -> Result<(), EngineError>;
    /// Due requests handed to free connections (streams), connections opened as needed.
    fn dispatch(&mut self, now: Instant);
    /// The step's schedule is done: free connections close (not in a held run).
    fn close_idle(&mut self);
    /// No request under way or waiting to be sent again.
    fn settled(&self) -> bool;
    /// A connection (or stream) is free for the next due request.
    fn has_free(&self) -> bool;
    /// Periodic checks: timeouts, retries, the route followed.
    fn tick(&mut self, now: Instant);
    /// Handles a connection's readiness (`ev`); an error ends the run.
    fn readiness(&mut self, ev: &Event, now: Instant) -> Result<(), EngineError>;
    /// The connections open now.
    fn open_count(&self) -> u64;
}

/// Waits for events (at most `timeout`) and hands each connection's to `w`; returns the
/// time it woke.
pub(super) fn poll_once<'p, W: Wheel<'p>>(
    w: &mut W,
    events: &mut Events,
    timeout: Duration,
) -> Result<Instant, EngineError> {
    let in_flight = !w.settled();
    let now = w.core().wait(events, timeout, in_flight)?;
    for ev in events.iter() {
        if ev.token() != TIMER {
            w.readiness(ev, now)?;
        }
    }
    Ok(now)
}

/// Sends the thread's running totals.
fn send_progress<'p, W: Wheel<'p>>(w: &mut W) {
    let open = w.open_count();
    w.core().tally.send_progress(open);
}

/// A single run: connections opened, the start at `gate`, the plan's step.
pub(super) fn run<'p, W: Wheel<'p>>(
    mut w: W,
    stop: &Stop,
    gate: &dyn StartGate,
) -> Result<Stats, EngineError> {
    let mut events = Events::with_capacity(1024);
    stamp::stamp_reads(w.core().kernel);
    if let Err(e) = w.open_first(stop, &mut events) {
        // Through the gate all the same, so that no other thread waits there for this one.
        gate.wait();
        return Err(e);
    }
    if w.core().kernel {
        stamp::wait_for_stamps();
    }
    let origin = gate.wait();
    run_step(&mut w, origin, stop, &mut events)
}

/// One step's loop from `origin` until its schedule is done (or the run is stopped),
/// and the step's statistics. The thread's statistics start afresh for the next step.
pub(super) fn run_step<'p, W: Wheel<'p>>(
    w: &mut W,
    origin: Instant,
    stop: &Stop,
    events: &mut Events,
) -> Result<Stats, EngineError> {
    let c = w.core();
    c.pacer = make_pacer(c.plan, &c.step, c.global, origin);
    let measure_from = c.pacer.measure_from();
    c.tally.start(measure_from);
    let mut warm = c.step.warmup > Duration::ZERO;
    let hold = c.hold;
    let mut winding_down = false;
    let mut next_tick = origin + TICK;
    let mut next_report = origin + Duration::from_secs(1);
    let end;
    // One clock read per wake-up, shared by everything the loop does until the next.
    let mut now = Instant::now();
    loop {
        if stop.is_set() {
            end = now;
            break;
        }
        if warm && now >= measure_from {
            warm = false;
            w.core().tally.forget_warmup();
        }
        w.dispatch(now);
        if w.core().pacer.finished(now) {
            if !winding_down {
                // No more work: free connections close now, busy ones as they finish
                // (a held run keeps them open for its next step).
                winding_down = true;
                if !hold {
                    w.close_idle();
                }
            }
            if w.settled() {
                end = now;
                break;
            }
        }
        if now >= next_tick {
            w.tick(now);
            next_tick = now + TICK;
            if now >= next_report {
                send_progress(w);
                next_report = now + Duration::from_secs(1);
            }
        }
        let mut wake = next_tick;
        let free = w.has_free();
        let c = w.core();
        if free && let Some(t) = c.pacer.next_wakeup() {
            match c.timer.as_mut() {
                Some(timer) => timer.wake_by(t, Instant::now()),
                None => wake = wake.min(t),
            }
        }
        let timeout = wake.saturating_duration_since(now);
        now = poll_once(w, events, timeout)?;
    }
    if !w.core().tally.reported() && !hold {
        // A run that ended before its first report: its figures once, so that a sum
        // over the threads (--metrics-listen) is not left without them.
        send_progress(w);
    }
    let c = w.core();
    Ok(c.tally.take(c.plan, &c.pacer, end, stop.is_set()))
}

/// The request templates of a run, one set per node of the target: every request carries
/// the Host header of the node it is sent to (a proxy or load balancer in front of each
/// node routes by it), the connection picking the set of the node its stream is open to
/// (its own node, the node the route moved it to, a redirect's node). Built once per
/// process before the threads start (each thread takes a copy); the sets of one operation
/// share its turn count and pools, so turns go round over all nodes as over one.
/// A replay's callers (`config::schedule::Instants::callers`) each have their own sets,
/// with their token and namespace in the header bytes: a request picks its caller's by
/// index, with no allocation. One template per (caller, node, operation):
/// `templates[(caller * nodes + node) * ops + op]`, caller 0 being the run's own. A
/// single-address run without callers has one set, built from the plan's target as before.
#[derive(Clone)]
pub(super) struct Requests {
    templates: Vec<Template>,
    ops: usize,
    nodes: usize,
}

impl Requests {
    pub(super) fn build(plan: &EnginePlan) -> Requests {
        let common = plan.common();
        let first: Vec<Template> = plan
            .ops
            .iter()
            .map(|o| Template::build(&o.request, &common))
            .collect();
        let ops = first.len();
        let (callers, sets): (&[Caller], &[Vec<RequestSpec>]) = match &plan.load.step.schedule {
            Some(crate::config::schedule::Schedule::Instants(i)) => (&i.callers, &i.request_sets),
            _ => (&[], &[]),
        };
        if plan.nodes.targets.is_empty() && callers.is_empty() {
            return Requests {
                templates: first,
                ops,
                nodes: 1,
            };
        }
        let hosts: Vec<String> = if plan.nodes.targets.is_empty() {
            vec![common.host.clone()]
        } else {
            plan.nodes.targets.iter().map(|t| t.host_header()).collect()
        };
        let mut templates = Vec::with_capacity((callers.len() + 1) * hosts.len() * ops);
        for caller in std::iter::once(None).chain(callers.iter().map(Some)) {
            // Its namespace's own requests (its fixtures' names), or the run's.
            let own = caller
                .and_then(|c| c.requests)
                .and_then(|k| sets.get(k))
                .filter(|set| set.len() == ops);
            for host in &hosts {
                let set = Common {
                    host: host.clone(),
                    token: caller
                        .and_then(|c| c.token.clone())
                        .or_else(|| common.token.clone()),
                    namespace: caller
                        .and_then(|c| c.namespace.clone())
                        .or_else(|| common.namespace.clone()),
                    ..common.clone()
                };
                templates.extend(plan.ops.iter().zip(&first).enumerate().map(|(i, (o, f))| {
                    match own {
                        // Other fixtures: their own pools and turns.
                        Some(requests) => Template::build(&requests[i], &set),
                        None => Template::build(&o.request, &set).sharing_turns_with(f),
                    }
                }));
            }
        }
        Requests {
            templates,
            ops,
            nodes: hosts.len(),
        }
    }

    /// The callers with templates of their own, the run's own (0) included.
    pub(super) fn callers(&self) -> usize {
        self.templates.len() / (self.nodes * self.ops).max(1)
    }

    /// The template of operation `op` for a stream open to `node`, as `caller` sends it.
    #[inline]
    pub(super) fn get(&mut self, node: usize, op: usize, caller: u16) -> &mut Template {
        let k = (usize::from(caller) * self.nodes + node) * self.ops + op;
        if k < self.templates.len() {
            &mut self.templates[k]
        } else {
            &mut self.templates[op]
        }
    }
}
