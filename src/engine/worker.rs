//! One event-loop thread: the `EventLoop` that owns a share of the connections, its pacer
//! and its statistics, and the loop that drives them: opening connections, waiting for
//! the common start, handing due requests to free connections, polling for events,
//! periodic timeout checks and progress reports, until the schedule is done or the run
//! is stopped. A held run (`held.rs`) runs several steps over the same thread and the
//! same open connections: each step is the same loop with its own pacer and statistics,
//! and the free connections stay open (and idle) between steps.

use std::io;
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};

use super::conn::HOP;
use super::conn::{Conn, ConnPhase};
use super::step::{Link, StepPlan};
use super::{EngineError, EnginePlan, StartGate, Totals};
use crate::config::schedule::Schedule;
use crate::net::transport::{PortSlice, TlsConnector};
use crate::net::wait::Waiting;
use crate::pacing::{Pacer, share};
use crate::signals::Stop;
use crate::stats::Stats;
use crate::template::{Captures, Rng};
use crate::timer::Timer;
use crate::workload::Picker;

/// The pacing timer's token (connections use their index).
const TIMER: Token = Token(usize::MAX);
const READ_BUF: usize = 64 * 1024;
const TICK: Duration = Duration::from_millis(50);
/// Keep-alive mode: how long to wait for all connections to open before starting the clock.
const PRECONNECT_MAX: Duration = Duration::from_secs(10);
/// Keep-alive: connects in flight at once per thread while opening connections.
const CONNECT_WINDOW: usize = 256;
/// Room kept per captured value (a Vault token is about 100 bytes).
const CAPTURE_BYTES: usize = 256;

pub(super) struct EventLoop<'p> {
    pub(super) plan: &'p EnginePlan,
    pub(super) global: usize,
    pub(super) poll: Poll,
    /// How `poll` is waited on: a nap while requests are in flight (`net/wait.rs`).
    pub(super) waiting: Waiting,
    pub(super) conns: Vec<Conn>,
    /// Connections (or connection-per-request slots) free for a request.
    pub(super) idle: Vec<usize>,
    /// Connections holding a claimed request.
    pub(super) busy: usize,
    /// Keep-alive: connections below this index have been opened once.
    pub(super) next_open: usize,
    /// Keep-alive: connections `open_more` opened whose connect may still be in flight.
    pub(super) opening: Vec<usize>,
    /// Connections that have not carried a request yet.
    pub(super) unstarted: usize,
    /// The request templates, one set per node (`requests.rs`).
    pub(super) requests: super::requests::Requests,
    pub(super) picker: Picker,
    pub(super) rng: Rng,
    pub(super) tls: Option<TlsConnector>,
    /// Open model: wakes the loop when the next request is due.
    pub(super) timer: Option<Timer>,
    /// Where to send this thread's progress (its local index and the channel).
    pub(super) report: Option<(usize, crossbeam_channel::Sender<(usize, Totals)>)>,
    /// This thread's own slice of local ports.
    pub(super) ports: Option<PortSlice>,
    pub(super) stats: Stats,
    pub(super) status: Box<[u64; 1000]>,
    pub(super) pacer: Pacer,
    /// Per operation: the operation that captures what it needs (itself if none).
    pub(super) producers: Vec<usize>,
    pub(super) buf: Box<[u8]>,
    /// Several nodes: the window of failures this thread has open.
    pub(super) windows: crate::stats::nodes::WindowTracker,
    /// Several nodes: how many route moves this thread has acted on.
    pub(super) route_seen: u64,
    /// The current step's schedule, warm-up and bounds (the plan's own in a single run).
    pub(super) step: StepPlan,
    /// A held run: connections stay open when a step's schedule is done.
    pub(super) hold: bool,
    /// `--follow-redirects`: the nodes a redirect may be followed to.
    pub(super) redirects: Option<crate::net::redirect::Redirects>,
    /// This thread has sent its progress at least once.
    pub(super) reported: bool,
}

/// A thread's empty statistics for `plan` (one per node when several nodes are given).
fn fresh_stats(plan: &EnginePlan) -> Stats {
    let mut s = Stats::new(plan.ops.len());
    s.nodes = plan
        .nodes
        .targets
        .iter()
        .map(|t| crate::stats::nodes::NodeStats {
            addr: t.base(),
            ..Default::default()
        })
        .collect();
    // Room for the windows of a long run: none allocated while it goes on.
    s.windows.reserve(if s.nodes.is_empty() { 0 } else { 64 });
    s
}

/// For each operation, what to send instead while the slot it needs is empty: the
/// operation that captures it (itself if it needs none).
pub(super) fn producers(plan: &EnginePlan) -> Vec<usize> {
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
pub(super) fn idle_pacer(now: Instant) -> Pacer {
    Pacer::open(
        now + Duration::from_secs(86_400 * 365),
        Duration::ZERO,
        None,
        None,
        &Schedule::Constant { rate: 1.0 },
        0,
        1,
    )
}

impl<'p> EventLoop<'p> {
    pub(super) fn new(
        plan: &'p EnginePlan,
        global: usize,
        requests: super::requests::Requests,
        tls: Option<TlsConnector>,
    ) -> Result<EventLoop<'p>, EngineError> {
        let poll = Poll::new().map_err(EngineError::EventLoop)?;
        // Over shards, thread `global` of this shard is slot `slot` of `slots`.
        let (slot, slots) = plan.slot(global);
        let mut mine = share(plan.connections, slots, slot);
        if let Some(n) = plan.requests {
            // A connection with no request to send is never opened.
            mine = mine.min(share(n, slots, slot));
        }
        let timer = match plan.schedule {
            Some(_) => Some(Timer::new(poll.registry(), TIMER).map_err(EngineError::Timer)?),
            None => None,
        };
        let now = Instant::now();
        // Slots for captured values, only when an operation captures one.
        let slots = plan
            .ops
            .iter()
            .filter_map(|o| o.capture.as_ref().map(|c| usize::from(c.slot) + 1))
            .max()
            .unwrap_or(0);
        let conns = (0..mine)
            .map(|_| Conn::new(now, Captures::with_slots(slots, CAPTURE_BYTES)))
            .collect();
        let producers = producers(plan);
        Ok(EventLoop {
            plan,
            global,
            poll,
            waiting: Waiting::new(),
            conns,
            idle: Vec::with_capacity(mine as usize),
            busy: 0,
            next_open: 0,
            opening: Vec::with_capacity(CONNECT_WINDOW),
            unstarted: mine as usize,
            picker: Picker::new(&plan.ops),
            requests,
            rng: Rng::seeded(global as u64),
            timer,
            report: None,
            tls,
            ports: crate::sys::ephemeral_ports().and_then(|(lo, hi)| {
                PortSlice::new(lo as u16, hi as u16, global, plan.threads_total)
                    .map(|s| s.with_addrs(&plan.spread.source_addrs))
            }),
            stats: fresh_stats(plan),
            status: Box::new([0; 1000]),
            producers,
            pacer: idle_pacer(now),
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            windows: crate::stats::nodes::WindowTracker::default(),
            route_seen: 0,
            step: StepPlan::of(plan),
            hold: false,
            reported: false,
            redirects: plan.follow_redirects.then(|| {
                crate::net::redirect::Redirects::new(if plan.nodes.targets.is_empty() {
                    std::slice::from_ref(&plan.target)
                } else {
                    &plan.nodes.targets
                })
            }),
        })
    }

    fn make_pacer(&self, origin: Instant) -> Pacer {
        let p = &self.step;
        let (slot, slots) = self.plan.slot(self.global);
        let budget = p.requests.map(|n| share(n, slots, slot));
        let deadline = p.duration.map(|d| origin + p.warmup + d);
        match &p.schedule {
            Some(schedule) => {
                Pacer::open(origin, p.warmup, deadline, budget, schedule, slot, slots)
            }
            None => Pacer::closed(origin, p.warmup, deadline, budget),
        }
    }

    pub(super) fn run(mut self, stop: &Stop, gate: &dyn StartGate) -> Result<Stats, EngineError> {
        let mut events = Events::with_capacity(1024);
        self.open_first(stop, &mut events)?;
        let origin = gate.wait();
        self.run_step(origin, stop, &mut events)
    }

    /// A held run: the first step starts at the gate, each next one when the controller
    /// sends it (with its origin); every step's statistics go back over `link`. Ends when
    /// the controller sends no step, or at a failure (sent as that step's result).
    pub(super) fn run_held(mut self, stop: &Stop, gate: &dyn StartGate, link: &Link) {
        self.hold = true;
        let mut events = Events::with_capacity(1024);
        if let Err(e) = self.open_first(stop, &mut events) {
            // Sent as the first step's result, after the gate, so that no thread waits
            // for this one at the gate.
            gate.wait();
            link.done(Err(e));
            return;
        }
        let mut origin = gate.wait();
        loop {
            let result = self.run_step(origin, stop, &mut events);
            let failed = result.is_err();
            link.done(result);
            if failed {
                return;
            }
            match link.next() {
                Some((step, at)) => {
                    self.step = step;
                    origin = at;
                }
                None => return,
            }
        }
    }

    /// Before the first step: connection-per-request slots made free, or (keep-alive)
    /// every connection opened when the run is measured over time.
    fn open_first(&mut self, stop: &Stop, events: &mut Events) -> Result<(), EngineError> {
        if !self.plan.keepalive {
            self.idle.extend((0..self.conns.len()).rev());
            self.next_open = self.conns.len();
        } else if self.plan.schedule.is_some() || self.plan.requests.is_none() {
            // Runs measured over time (and the open model's schedule) start once every
            // connection is open, like wrk2, so the measured window sees all of them at
            // work. Runs of a given count (ab's -n) open connections as they go instead,
            // each starting work as soon as it is open, and count the set-up in their time.
            self.preconnect(stop, events)?;
        }
        Ok(())
    }

    /// One step's loop from `origin` until its schedule is done (or the run is stopped),
    /// and the step's statistics. The thread's statistics start afresh for the next step.
    fn run_step(
        &mut self,
        origin: Instant,
        stop: &Stop,
        events: &mut Events,
    ) -> Result<Stats, EngineError> {
        self.pacer = self.make_pacer(origin);
        let measure_from = self.pacer.measure_from();
        let mut warm = self.step.warmup > Duration::ZERO;
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
                self.forget_warmup();
            }
            self.open_more(now);
            self.dispatch(now);
            if self.pacer.finished(now) {
                if !winding_down {
                    // No more work: free connections close now, busy ones as they finish
                    // (a held run keeps them open for its next step).
                    winding_down = true;
                    if !self.hold {
                        self.close_idle();
                    }
                }
                if self.busy == 0 {
                    end = now;
                    break;
                }
            }
            if now >= next_tick {
                self.tick(now);
                next_tick = now + TICK;
                if now >= next_report {
                    self.send_progress();
                    next_report = now + Duration::from_secs(1);
                }
            }
            let mut wake = next_tick;
            if !self.idle.is_empty()
                && let Some(t) = self.pacer.next_wakeup()
            {
                match self.timer.as_mut() {
                    Some(timer) => timer.wake_by(t, Instant::now()),
                    None => wake = wake.min(t),
                }
            }
            let timeout = wake.saturating_duration_since(now);
            now = self.poll_once(events, timeout)?;
        }
        if !self.reported && !self.hold {
            // A run that ended before its first report: its figures once, so that a sum
            // over the threads (--metrics-listen) is not left without them.
            self.send_progress();
        }
        let mut stats = std::mem::replace(&mut self.stats, fresh_stats(self.plan));
        stats.note_unsent(self.pacer.unsent_waits(end));
        if let Some(w) = std::mem::take(&mut self.windows).finish() {
            stats.windows.push(w);
        }
        for (code, n) in self.status.iter_mut().enumerate() {
            if *n > 0 {
                *stats.status.entry(code as u16).or_default() += *n;
                *n = 0;
            }
        }
        // Open model: the run lasts its scheduled window at least (rates are taken over
        // it), unless it was stopped early.
        let end = match self.pacer.window_end() {
            Some(w) if !stop.is_set() => end.max(w),
            _ => end,
        };
        stats.elapsed_s = end.saturating_duration_since(measure_from).as_secs_f64();
        for n in stats.nodes.iter_mut().filter(|n| n.requests > 0) {
            n.elapsed_s = stats.elapsed_s;
        }
        Ok(stats)
    }

    fn send_progress(&mut self) {
        if let Some((thread, tx)) = &self.report {
            self.reported = true;
            let p = Totals {
                reported: true,
                requests: self.stats.requests(),
                ok: self.stats.ok(),
                // Once a second, off the request path (src/metrics.rs).
                more: crate::stats::figures::Figures::of(
                    &self.stats,
                    &self.status[..],
                    self.conns.iter().filter(|c| c.stream.is_some()).count() as u64,
                ),
            };
            // A full channel means the display is behind: skip this report.
            let _ = tx.try_send((*thread, p));
        }
    }

    /// Opens every connection before the clock starts (within `PRECONNECT_MAX`).
    fn preconnect(&mut self, stop: &Stop, events: &mut Events) -> Result<(), EngineError> {
        let until = Instant::now() + PRECONNECT_MAX.min(self.plan.timeout);
        while !stop.is_set() {
            let now = Instant::now();
            let opening = self.open_more(now);
            if (opening == 0 && self.next_open == self.conns.len()) || now >= until {
                break;
            }
            self.poll_once(events, TICK)?;
        }
        Ok(())
    }

    /// Keep-alive: opens connections not opened yet, keeping at most `CONNECT_WINDOW` of
    /// its connects in flight so that the server's accept queue does not overflow (a dropped
    /// SYN costs a one-second retransmit). Returns the connects in flight.
    fn open_more(&mut self, now: Instant) -> usize {
        if self.next_open == self.conns.len() {
            return 0;
        }
        // The connects still in flight, found among the last ones opened here (at most
        // the window), not by a pass over every connection: that pass, once per loop
        // turn while 15,000 connections open, was most of the client's own CPU time.
        let conns = &self.conns;
        self.opening.retain(|&i| {
            matches!(
                conns[i].phase,
                ConnPhase::Connecting | ConnPhase::Handshaking
            )
        });
        while self.next_open < self.conns.len() && self.opening.len() < CONNECT_WINDOW {
            self.open(self.next_open, now);
            self.opening.push(self.next_open);
            self.next_open += 1;
        }
        self.opening.len()
    }

    /// The cluster's active node moved: connections waiting to retry try the new one at
    /// once, and free connections to another node re-open to it.
    fn follow_route(&mut self, now: Instant) {
        let Some(route) = self.plan.nodes.route.as_ref() else {
            return;
        };
        let changes = route.changes();
        if changes == self.route_seen {
            return;
        }
        self.route_seen = changes;
        let active = route.active();
        for i in 0..self.conns.len() {
            let c = &mut self.conns[i];
            if c.node == active || c.req.is_some() {
                continue;
            }
            match c.phase {
                ConnPhase::Backoff => {
                    c.since = now;
                    c.failures = 0;
                }
                ConnPhase::Idle => {
                    c.stream = None;
                    if let Some(pos) = self.idle.iter().position(|&x| x == i) {
                        self.idle.swap_remove(pos);
                    }
                    self.open(i, now);
                }
                _ => {}
            }
        }
    }

    /// The run's work is done and free connections close: never in a held run, whose
    /// connections wait open for the next step.
    pub(super) fn ending(&self, now: Instant) -> bool {
        !self.hold && self.pacer.finished(now)
    }

    /// End of warm-up: connection figures gathered so far are left out as well.
    fn forget_warmup(&mut self) {
        let s = &mut self.stats;
        s.connect.reset();
        s.tls.reset();
        s.tls_resumed = 0;
        s.connections_opened = 0;
        s.server_closes = 0;
        s.bytes_sent = 0;
        s.bytes_received = 0;
    }

    /// Waits for events (at most `timeout`) and handles them; returns the time it woke.
    fn poll_once(
        &mut self,
        events: &mut Events,
        timeout: Duration,
    ) -> Result<Instant, EngineError> {
        match self
            .waiting
            .poll(&mut self.poll, events, timeout, self.busy > 0)
        {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(EngineError::Poll(e)),
        }
        let now = Instant::now();
        for ev in events.iter() {
            if ev.token() == TIMER {
                if let Some(t) = self.timer.as_mut() {
                    t.fired();
                }
                continue;
            }
            // A connection's own stream has its index as token, its hop stream that and HOP.
            let hop = ev.token().0 & HOP != 0;
            let i = ev.token().0 & !HOP;
            if i >= self.conns.len() {
                continue;
            }
            if hop != self.conns[i].on_hop {
                // The stream parked beside the one in use.
                self.parked_event(i);
                continue;
            }
            self.on_event(
                i,
                ev.is_readable() || ev.is_error() || ev.is_read_closed(),
                ev.is_writable() || ev.is_error(),
                ev.is_read_closed(),
                now,
            );
        }
        Ok(now)
    }

    /// Starts due requests on free connections (or connection-per-request slots).
    fn dispatch(&mut self, now: Instant) {
        while let Some(&i) = self.idle.last() {
            let Some(due) = self.pacer.take_due(now) else {
                break;
            };
            self.idle.pop();
            if self.plan.keepalive {
                self.send(i, due, now);
            } else {
                // The request's clock starts with its connection.
                self.claim(i, due, now);
                self.open(i, now);
            }
        }
    }

    /// Periodic checks: request and connect timeouts, connections due to retry.
    fn tick(&mut self, now: Instant) {
        self.follow_route(now);
        let timeout = self.plan.timeout;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.phase {
                ConnPhase::Busy => {
                    if let Some(outcome) = c.timed_out(now, timeout) {
                        self.settle(i, outcome, now);
                    }
                }
                ConnPhase::Connecting | ConnPhase::Handshaking => {
                    if now.saturating_duration_since(c.since) >= timeout {
                        let msg = if c.phase == ConnPhase::Connecting {
                            "connect timed out"
                        } else {
                            "TLS handshake timed out"
                        };
                        self.connect_failure(i, msg, now);
                    }
                }
                ConnPhase::Backoff => {
                    if self.ending(now) {
                        // However long a Retry-After said to wait: no work is left.
                        self.close(i);
                    } else if now >= c.since {
                        self.open(i, now);
                    }
                }
                ConnPhase::Idle | ConnPhase::Unopened => {}
            }
        }
    }
}
