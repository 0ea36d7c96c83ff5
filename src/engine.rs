//! The load engine: one mio event loop per thread, pinned to a core, owning its
//! connections outright. Threads share nothing on the hot path; each returns its `Stats`,
//! merged at the end.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use mio::{Events, Interest, Poll, Token};
use serde::{Deserialize, Serialize};

use crate::http::{Progress, ResponseParser};
use crate::pacing::{Due, Pacer, share};
use crate::stats::{ErrorKind, LATE_US, Stats};
use crate::target::Target;
use crate::template::{Common, Rng, Template};
use crate::timer::Timer;
use crate::tls::TlsOptions;
use crate::transport::{self, Handshake, PortSlice, Stream, TlsConnector};
use crate::workload::{Operation, Picker};

/// Everything an engine (one process's share of a run) needs. Serializable so that worker
/// processes receive exactly what an in-process engine would.
#[derive(Clone, Serialize, Deserialize)]
pub struct EnginePlan {
    pub target: Target,
    pub tls: Option<TlsOptions>,
    pub token: Option<String>,
    pub namespace: Option<String>,
    pub ops: Vec<Operation>,
    /// Totals over the whole run (all processes).
    pub connections: u64,
    pub requests: Option<u64>,
    pub duration: Option<Duration>,
    pub warmup: Duration,
    pub rate: Option<f64>,
    pub keepalive: bool,
    pub timeout: Duration,
    /// Event-loop threads over all processes, this process's first one, and how many it runs.
    pub threads_total: usize,
    pub thread_offset: usize,
    pub threads_here: usize,
    pub pin: bool,
}

impl EnginePlan {
    fn common(&self) -> Common {
        Common {
            host: self.target.host_header(),
            token: self.token.clone(),
            namespace: self.namespace.clone(),
            close: !self.keepalive,
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

/// Runs this process's share of the plan and returns the merged results.
/// A thread's running totals, sent about once a second for a live progress display.
#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    pub requests: u64,
    pub ok: u64,
}

/// Called with every thread's latest totals whenever one of them reports.
pub type ProgressFn<'a> = &'a (dyn Fn(&[Totals]) + Sync);

pub fn run(
    plan: &EnginePlan,
    stop: &AtomicBool,
    gate: &dyn StartGate,
    progress: Option<ProgressFn<'_>>,
) -> Result<Stats, String> {
    let tls = match (&plan.tls, plan.target.is_tls()) {
        (Some(opts), true) => Some(TlsConnector {
            config: {
                // The engine seals and opens records itself after the handshake
                // (src/tlsio.rs), so rustls must hand over the traffic keys.
                let mut config = (*crate::tls::client_config(opts)?).clone();
                config.enable_secret_extraction = true;
                Arc::new(config)
            },
            name: crate::tls::server_name(opts, &plan.target.host)?,
        }),
        (None, true) => {
            return Err("https target without TLS settings".into());
        }
        _ => None,
    };
    let common = plan.common();
    let templates: Vec<Template> = plan
        .ops
        .iter()
        .map(|o| Template::build(&o.request, &common))
        .collect();
    let cores = if plan.pin {
        core_affinity::get_core_ids().unwrap_or_default()
    } else {
        Vec::new()
    };
    // Threads report progress over a bounded channel they never block on.
    let (report, reports) = crossbeam_channel::bounded::<(usize, Totals)>(plan.threads_here * 4);
    let results: Vec<Result<Stats, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..plan.threads_here)
            .map(|local| {
                let report = progress.map(|_| report.clone());
                let global = plan.thread_offset + local;
                let templates = templates.clone();
                let tls = tls.clone();
                let core = if cores.is_empty() {
                    None
                } else {
                    Some(cores[global % cores.len()])
                };
                s.spawn(move || {
                    if let Some(c) = core {
                        core_affinity::set_for_current(c);
                    }
                    let mut worker = Worker::new(plan, global, templates, tls)?;
                    worker.report = report.map(|r| (local, r));
                    worker.run(stop, gate)
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
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("an event-loop thread panicked".into()))
            })
            .collect()
    });
    let mut total = Stats::new(plan.ops.len());
    for r in results {
        total.merge(&r?);
    }
    Ok(total)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No socket (connection-per-request slots between requests, or closed for good).
    Unopened,
    Connecting,
    Handshaking,
    /// Open and free for a request.
    Idle,
    /// A request is being written or awaits its response.
    Busy,
    /// Waiting before re-opening after a failed connect.
    Backoff,
}

#[derive(Clone, Copy, Debug)]
struct Req {
    op: usize,
    intended: Instant,
    sent: Instant,
    measured: bool,
    /// Already re-sent once on a fresh connection after a stale keep-alive one failed.
    resent: bool,
    /// Response bytes have begun to arrive.
    started: bool,
}

struct Conn {
    stream: Option<Stream>,
    phase: Phase,
    req: Option<Req>,
    /// When the current connect attempt (or backoff) began / ends.
    since: Instant,
    /// When the TCP connection was established (start of the TLS handshake).
    connected_at: Instant,
    /// Requests completed on this connection.
    served: u32,
    /// Consecutive failed connects.
    failures: u32,
    /// Has carried a request (of this run).
    started: bool,
    /// Unwritten request bytes after a short write.
    pending: BytesMut,
    parser: ResponseParser,
}

/// The pacing timer's token (connections use their index).
const TIMER: Token = Token(usize::MAX);
const READ_BUF: usize = 64 * 1024;
const TICK: Duration = Duration::from_millis(50);
/// Keep-alive mode: how long to wait for all connections to open before starting the clock.
const PRECONNECT_MAX: Duration = Duration::from_secs(10);
/// Keep-alive: connects in flight at once per thread while opening connections.
const CONNECT_WINDOW: usize = 256;

struct Worker<'p> {
    plan: &'p EnginePlan,
    global: usize,
    poll: Poll,
    conns: Vec<Conn>,
    /// Connections (or connection-per-request slots) free for a request.
    idle: Vec<usize>,
    /// Connections holding a claimed request.
    busy: usize,
    /// Keep-alive: connections below this index have been opened once.
    next_open: usize,
    /// Connections that have not carried a request yet.
    unstarted: usize,
    templates: Vec<Template>,
    picker: Picker,
    rng: Rng,
    tls: Option<TlsConnector>,
    /// Open model: wakes the loop when the next request is due.
    timer: Option<Timer>,
    /// Where to send this thread's progress (its local index and the channel).
    report: Option<(usize, crossbeam_channel::Sender<(usize, Totals)>)>,
    /// This thread's own slice of local ports.
    ports: Option<PortSlice>,
    stats: Stats,
    status: Box<[u64; 1000]>,
    pacer: Pacer,
    buf: Box<[u8]>,
}

fn err_text(e: &io::Error) -> String {
    let s = e.to_string();
    // "Connection refused (os error 111)" -> "Connection refused"
    s.split(" (os error").next().unwrap_or(&s).to_string()
}

impl<'p> Worker<'p> {
    fn new(
        plan: &'p EnginePlan,
        global: usize,
        templates: Vec<Template>,
        tls: Option<TlsConnector>,
    ) -> Result<Worker<'p>, String> {
        let poll = Poll::new().map_err(|e| format!("cannot create event loop: {e}"))?;
        let mut mine = share(plan.connections, plan.threads_total, global);
        if let Some(n) = plan.requests {
            // A connection with no request to send is never opened.
            mine = mine.min(share(n, plan.threads_total, global));
        }
        let timer = match plan.rate {
            Some(_) => Some(
                Timer::new(poll.registry(), TIMER)
                    .map_err(|e| format!("cannot create a timer: {e}"))?,
            ),
            None => None,
        };
        let now = Instant::now();
        let conns = (0..mine)
            .map(|_| Conn {
                stream: None,
                phase: Phase::Unopened,
                req: None,
                since: now,
                connected_at: now,
                served: 0,
                failures: 0,
                started: false,
                pending: BytesMut::new(),
                parser: ResponseParser::new(),
            })
            .collect();
        Ok(Worker {
            plan,
            global,
            poll,
            conns,
            idle: Vec::with_capacity(mine as usize),
            busy: 0,
            next_open: 0,
            unstarted: mine as usize,
            picker: Picker::new(&plan.ops),
            templates,
            rng: Rng::seeded(global as u64),
            timer,
            report: None,
            tls,
            ports: crate::procs::ephemeral_ports().and_then(|(lo, hi)| {
                PortSlice::new(lo as u16, hi as u16, global, plan.threads_total)
            }),
            stats: Stats::new(plan.ops.len()),
            status: Box::new([0; 1000]),
            // Hands out nothing (and is never finished) until the real schedule is set.
            pacer: Pacer::open(
                now + Duration::from_secs(86_400 * 365),
                Duration::ZERO,
                None,
                None,
                1.0,
                0,
                1,
            ),
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
        })
    }

    fn make_pacer(&self, origin: Instant) -> Pacer {
        let p = self.plan;
        let budget = p.requests.map(|n| share(n, p.threads_total, self.global));
        let deadline = p.duration.map(|d| origin + p.warmup + d);
        match p.rate {
            Some(rate) => Pacer::open(
                origin,
                p.warmup,
                deadline,
                budget,
                rate,
                self.global,
                p.threads_total,
            ),
            None => Pacer::closed(origin, p.warmup, deadline, budget),
        }
    }

    fn run(mut self, stop: &AtomicBool, gate: &dyn StartGate) -> Result<Stats, String> {
        let mut events = Events::with_capacity(1024);
        if !self.plan.keepalive {
            self.idle.extend((0..self.conns.len()).rev());
            self.next_open = self.conns.len();
        } else if self.plan.rate.is_some() || self.plan.requests.is_none() {
            // Runs measured over time (and the open model's schedule) start once every
            // connection is open, like wrk2, so the measured window sees all of them at
            // work. Runs of a given count (ab's -n) open connections as they go instead,
            // each starting work as soon as it is open, and count the set-up in their time.
            self.preconnect(stop, &mut events)?;
        }
        let origin = gate.wait();
        self.pacer = self.make_pacer(origin);
        let measure_from = self.pacer.measure_from();
        let mut warm = self.plan.warmup > Duration::ZERO;
        let mut winding_down = false;
        let mut next_tick = origin + TICK;
        let mut next_report = origin + Duration::from_secs(1);
        let end;
        loop {
            let now = Instant::now();
            if stop.load(Ordering::Relaxed) {
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
                    // No more work: free connections close now, busy ones as they finish.
                    winding_down = true;
                    self.close_idle();
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
            let timeout = wake.saturating_duration_since(Instant::now());
            self.poll_once(&mut events, timeout)?;
        }
        let mut stats = self.stats;
        for (code, &n) in self.status.iter().enumerate() {
            if n > 0 {
                *stats.status.entry(code as u16).or_default() += n;
            }
        }
        stats.elapsed_s = end.saturating_duration_since(measure_from).as_secs_f64();
        Ok(stats)
    }

    fn send_progress(&self) {
        if let Some((thread, tx)) = &self.report {
            let p = Totals {
                requests: self.stats.requests(),
                ok: self.stats.ok(),
            };
            // A full channel means the display is behind: skip this report.
            let _ = tx.try_send((*thread, p));
        }
    }

    /// Opens every connection before the clock starts (within `PRECONNECT_MAX`).
    fn preconnect(&mut self, stop: &AtomicBool, events: &mut Events) -> Result<(), String> {
        let until = Instant::now() + PRECONNECT_MAX.min(self.plan.timeout);
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            let opening = self.open_more(now);
            if (opening == 0 && self.next_open == self.conns.len()) || now >= until {
                break;
            }
            self.poll_once(events, TICK)?;
        }
        Ok(())
    }

    /// Keep-alive: opens connections not opened yet, keeping at most `CONNECT_WINDOW`
    /// connects in flight so that the server's accept queue does not overflow (a dropped
    /// SYN costs a one-second retransmit). Returns the connects in flight.
    fn open_more(&mut self, now: Instant) -> usize {
        if self.next_open == self.conns.len() {
            return 0;
        }
        let mut opening = self
            .conns
            .iter()
            .filter(|c| matches!(c.phase, Phase::Connecting | Phase::Handshaking))
            .count();
        while self.next_open < self.conns.len() && opening < CONNECT_WINDOW {
            self.open(self.next_open, now);
            self.next_open += 1;
            opening += 1;
        }
        opening
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

    fn poll_once(&mut self, events: &mut Events, timeout: Duration) -> Result<(), String> {
        match self.poll.poll(events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(format!("event loop failed: {e}")),
        }
        if events.is_empty() {
            return Ok(());
        }
        let now = Instant::now();
        for ev in events.iter() {
            let i = ev.token().0;
            if ev.token() == TIMER {
                if let Some(t) = self.timer.as_mut() {
                    t.fired();
                }
                continue;
            }
            if i >= self.conns.len() {
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
        Ok(())
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

    fn claim(&mut self, i: usize, due: Due, now: Instant) {
        let op = self.picker.pick(&mut self.rng);
        if due.measured {
            let lag = now.saturating_duration_since(due.intended).as_micros() as u64;
            if lag > LATE_US {
                self.stats.late += 1;
            }
            self.stats.max_lag_us = self.stats.max_lag_us.max(lag);
        }
        if !self.conns[i].started {
            self.conns[i].started = true;
            self.unstarted -= 1;
        }
        self.conns[i].req = Some(Req {
            op,
            intended: due.intended,
            sent: now,
            measured: due.measured,
            resent: false,
            started: false,
        });
        self.busy += 1;
    }

    /// Claims `due` for connection `i` and writes it.
    fn send(&mut self, i: usize, due: Due, now: Instant) {
        self.claim(i, due, now);
        self.write_request(i, now);
    }

    /// Writes the claimed request of connection `i` (which is open).
    fn write_request(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        let Some(req) = c.req.as_mut() else { return };
        req.sent = now;
        req.started = false;
        c.parser.reset(false);
        c.phase = Phase::Busy;
        let bytes = self.templates[req.op].render(&mut self.rng);
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        let result = stream.write(bytes).and_then(|n| stream.flush().map(|_| n));
        match result {
            Ok(n) => {
                self.stats.bytes_sent += n as u64;
                if n < bytes.len() {
                    c.pending.clear();
                    c.pending.extend_from_slice(&bytes[n..]);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                c.pending.clear();
                c.pending.extend_from_slice(bytes);
            }
            Err(e) => self.write_failed(i, &e, now),
        }
    }

    /// A write failed: on a reused keep-alive connection the server most likely closed it
    /// between responses, so the request goes out once more on a fresh connection.
    fn write_failed(&mut self, i: usize, e: &io::Error, now: Instant) {
        let c = &mut self.conns[i];
        let reused = c.served > 0;
        match c.req.as_mut() {
            Some(r) if reused && !r.resent => {
                r.resent = true;
                self.stats.server_closes += 1;
                self.reopen(i, now);
            }
            _ => {
                let msg = format!("write failed: {}", err_text(e));
                self.fail(i, ErrorKind::Write, &msg, now);
            }
        }
    }

    /// Continues a short write when the socket becomes writable again.
    fn continue_write(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        if c.pending.is_empty() {
            if let Err(e) = stream.flush() {
                self.write_failed(i, &e, now);
            }
            return;
        }
        match stream
            .write(&c.pending)
            .and_then(|n| stream.flush().map(|_| n))
        {
            Ok(n) => {
                self.stats.bytes_sent += n as u64;
                c.pending.advance(n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => self.write_failed(i, &e, now),
        }
    }

    /// Starts a non-blocking connect on slot `i`.
    fn open(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.since = now;
        c.served = 0;
        c.pending.clear();
        match transport::connect(
            self.plan.target.addr(),
            self.tls.as_ref(),
            self.ports.as_mut(),
        ) {
            Ok(mut stream) => {
                let reg = self.poll.registry().register(
                    stream.tcp(),
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                );
                match reg {
                    Ok(()) => {
                        c.stream = Some(stream);
                        c.phase = Phase::Connecting;
                    }
                    Err(e) => self.connect_failed(i, &e, now),
                }
            }
            Err(e) => self.connect_failed(i, &e, now),
        }
    }

    /// Drops the socket and opens a new one (keep-alive), keeping any claimed request.
    fn reopen(&mut self, i: usize, now: Instant) {
        self.conns[i].stream = None;
        if self.pacer.finished(now) && self.conns[i].req.is_none() {
            self.conns[i].phase = Phase::Unopened;
            return;
        }
        self.open(i, now);
    }

    fn connect_failed(&mut self, i: usize, e: &io::Error, now: Instant) {
        let msg = if e.kind() == io::ErrorKind::InvalidData {
            format!("TLS handshake failed: {}", err_text(e))
        } else {
            format!("connect failed: {}", err_text(e))
        };
        self.connect_failure(i, &msg, now);
    }

    /// A connection could not be opened. The request it carried (or, in the closed model,
    /// the next one, so that a run against a dead server still ends) fails as a connect
    /// error; the connection retries after a growing pause.
    fn connect_failure(&mut self, i: usize, msg: &str, now: Instant) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.failures += 1;
        if c.req.is_none()
            && !self.pacer.is_open()
            && let Some(due) = self.pacer.take_due(now)
        {
            self.claim(i, due, now);
        }
        if self.conns[i].req.is_some() {
            self.fail_request(i, ErrorKind::Connect, msg, now);
        } else {
            self.stats.note(msg, 1);
        }
        let c = &mut self.conns[i];
        if !self.plan.keepalive {
            c.phase = Phase::Unopened;
            self.idle.push(i);
            return;
        }
        let backoff = Duration::from_millis(10) * (1u32 << c.failures.min(7));
        c.phase = Phase::Backoff;
        c.since = now + backoff.min(Duration::from_secs(1));
    }

    /// Counts the claimed request of `i` as failed.
    fn fail_request(&mut self, i: usize, kind: ErrorKind, msg: &str, now: Instant) {
        let Some(req) = self.conns[i].req.take() else {
            return;
        };
        self.busy -= 1;
        if req.measured {
            let s = &mut self.stats;
            s.ops[req.op].requests += 1;
            s.count_error(kind);
            s.note(msg, 1);
            let sec = now
                .saturating_duration_since(self.pacer.measure_from())
                .as_secs();
            s.timeline.record(sec, false, None);
        }
    }

    /// A request failed after its connection was open: count it, then start over on a new
    /// connection.
    fn fail(&mut self, i: usize, kind: ErrorKind, msg: &str, now: Instant) {
        self.fail_request(i, kind, msg, now);
        self.conns[i].stream = None;
        if self.plan.keepalive {
            self.reopen(i, now);
        } else {
            self.conns[i].phase = Phase::Unopened;
            self.idle.push(i);
        }
    }

    fn on_event(
        &mut self,
        i: usize,
        readable: bool,
        writable: bool,
        peer_closed: bool,
        now: Instant,
    ) {
        match self.conns[i].phase {
            Phase::Connecting => {
                if !(readable || writable) {
                    return;
                }
                let Some(stream) = self.conns[i].stream.as_mut() else {
                    return;
                };
                match stream.connected() {
                    Ok(true) => {
                        let c = &mut self.conns[i];
                        c.connected_at = now;
                        let took = now.saturating_duration_since(c.since).as_micros() as u64;
                        self.stats.connect.record(took);
                        self.stats.connections_opened += 1;
                        if c.stream.as_ref().is_some_and(|s| s.is_tls()) {
                            c.phase = Phase::Handshaking;
                            self.handshake(i, now);
                        } else {
                            self.ready(i, now);
                        }
                    }
                    Ok(false) => {}
                    Err(e) => self.connect_failed(i, &e, now),
                }
            }
            Phase::Handshaking => self.handshake(i, now),
            Phase::Idle => {
                if readable {
                    self.idle_readable(i, now);
                }
            }
            Phase::Busy => {
                if writable && (!self.conns[i].pending.is_empty() || self.is_tls(i)) {
                    self.continue_write(i, now);
                }
                if readable && self.conns[i].phase == Phase::Busy {
                    self.read_response(i, peer_closed, now);
                }
            }
            Phase::Unopened | Phase::Backoff => {}
        }
    }

    fn is_tls(&self, i: usize) -> bool {
        self.conns[i].stream.as_ref().is_some_and(|s| s.is_tls())
    }

    fn handshake(&mut self, i: usize, now: Instant) {
        let Some(stream) = self.conns[i].stream.as_mut() else {
            return;
        };
        match stream.handshake() {
            Ok(Handshake::Done) => {
                self.stats.tls_resumed += u64::from(stream.resumed());
                let took = now
                    .saturating_duration_since(self.conns[i].connected_at)
                    .as_micros() as u64;
                self.stats.tls.record(took);
                self.ready(i, now);
            }
            Ok(Handshake::Pending) => {}
            Err(e) => self.connect_failed(i, &e, now),
        }
    }

    /// The connection is open (and its TLS handshake done).
    fn ready(&mut self, i: usize, now: Instant) {
        self.conns[i].failures = 0;
        self.conns[i].phase = Phase::Idle;
        if self.conns[i].req.is_some() {
            // Connection per request, or a re-send after a stale keep-alive connection.
            self.write_request(i, now);
            return;
        }
        self.free(i, now);
    }

    /// Connection `i` has no request: give it the next one, park it, or close it.
    fn free(&mut self, i: usize, now: Instant) {
        self.conns[i].phase = Phase::Idle;
        if self.reserved_for_others(i) {
            // Parked until the run ends, when it is closed with the other idle ones.
            return;
        }
        if let Some(due) = self.pacer.take_due(now) {
            self.send(i, due, now);
        } else if self.pacer.finished(now) {
            self.close(i);
        } else {
            self.idle.push(i);
        }
    }

    /// Closed model with -n: the requests left are kept for connections that have not sent
    /// one yet, so that `-c 20000 -n 20000` really puts 20,000 connections to work.
    fn reserved_for_others(&self, i: usize) -> bool {
        self.unstarted > 0
            && self.conns[i].started
            && !self.pacer.is_open()
            && self
                .pacer
                .remaining()
                .is_some_and(|r| r <= self.unstarted as u64)
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.phase = Phase::Unopened;
    }

    fn close_idle(&mut self) {
        while let Some(i) = self.idle.pop() {
            self.close(i);
        }
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.req.is_none() && c.phase != Phase::Unopened {
                self.close(i);
            }
        }
    }

    /// Data or EOF on a connection with no request: the server closed an idle keep-alive
    /// connection. It is re-opened transparently.
    fn idle_readable(&mut self, i: usize, now: Instant) {
        let Some(stream) = self.conns[i].stream.as_mut() else {
            return;
        };
        match stream.read(&mut self.buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            _ => {}
        }
        self.stats.server_closes += 1;
        if let Some(pos) = self.idle.iter().position(|&x| x == i) {
            self.idle.swap_remove(pos);
        }
        self.conns[i].stream = None;
        self.open(i, now);
    }

    fn read_response(&mut self, i: usize, peer_closed: bool, now: Instant) {
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            match stream.read(&mut self.buf) {
                Ok((0, _)) => {
                    let done = c.parser.eof();
                    match done {
                        Some(Progress::Done { status, .. }) => self.complete(i, status, true, now),
                        _ => {
                            let started = c.req.is_some_and(|r| r.started);
                            let reused = c.served > 0;
                            let msg = if started {
                                "server closed the connection mid-response"
                            } else {
                                "server closed the connection without responding"
                            };
                            match c.req.as_mut() {
                                // A keep-alive connection that the server had already
                                // closed: the request never reached it.
                                Some(r) if !started && reused && !r.resent && peer_closed => {
                                    r.resent = true;
                                    self.stats.server_closes += 1;
                                    self.reopen(i, now);
                                }
                                _ => self.fail(i, ErrorKind::Read, msg, now),
                            }
                        }
                    }
                    return;
                }
                Ok((n, drained)) => {
                    self.stats.bytes_received += n as u64;
                    if let Some(r) = c.req.as_mut()
                        && !r.started
                    {
                        r.started = true;
                        if r.measured && (c.served == 0 || !self.plan.keepalive) {
                            let us = now.saturating_duration_since(r.sent).as_micros() as u64;
                            self.stats.ttfb.record(us);
                        }
                    }
                    match c.parser.feed(&self.buf[..n]) {
                        Ok(Progress::More) => {
                            if drained {
                                if peer_closed {
                                    continue;
                                }
                                return;
                            }
                        }
                        Ok(Progress::Done {
                            status,
                            close,
                            extra,
                        }) => {
                            if extra {
                                // Bytes nobody asked for: this connection cannot be trusted.
                                self.stats.note("server sent data after the response", 1);
                            }
                            self.complete(i, status, close || extra || peer_closed, now);
                            return;
                        }
                        Err(e) => {
                            let msg = format!("bad response: {}", e.0);
                            self.fail(i, ErrorKind::Read, &msg, now);
                            return;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let msg = if e.kind() == io::ErrorKind::InvalidData {
                        format!("TLS error: {}", err_text(&e))
                    } else {
                        format!("read failed: {}", err_text(&e))
                    };
                    self.fail(i, ErrorKind::Read, &msg, now);
                    return;
                }
            }
        }
    }

    /// A whole response arrived on `i`.
    fn complete(&mut self, i: usize, status: u16, close: bool, now: Instant) {
        let c = &mut self.conns[i];
        let Some(req) = c.req.take() else {
            return;
        };
        self.busy -= 1;
        c.served += 1;
        let ok = self.plan.ops[req.op].is_success(status);
        if req.measured {
            if let Some(n) = self.status.get_mut(status as usize) {
                *n += 1;
            }
            let latency = now.saturating_duration_since(req.intended).as_micros() as u64;
            let service = now.saturating_duration_since(req.sent).as_micros() as u64;
            let s = &mut self.stats;
            let o = &mut s.ops[req.op];
            o.requests += 1;
            o.latency.record(latency);
            o.service.record(service);
            if ok {
                o.ok += 1;
            } else {
                s.errors.status += 1;
            }
            let sec = now
                .saturating_duration_since(self.pacer.measure_from())
                .as_secs();
            s.timeline.record(sec, ok, Some(latency));
        }
        if !self.plan.keepalive {
            self.close(i);
            self.idle.push(i);
            return;
        }
        if close {
            self.stats.server_closes += 1;
            self.reopen(i, now);
            return;
        }
        self.free(i, now);
    }

    /// Periodic checks: request and connect timeouts, connections due to retry.
    fn tick(&mut self, now: Instant) {
        let timeout = self.plan.timeout;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.phase {
                Phase::Busy => {
                    if let Some(r) = c.req
                        && now.saturating_duration_since(r.sent) >= timeout
                    {
                        let msg =
                            format!("no response within {}", crate::cli::show_duration(timeout));
                        self.fail(i, ErrorKind::Timeout, &msg, now);
                    }
                }
                Phase::Connecting | Phase::Handshaking => {
                    if now.saturating_duration_since(c.since) >= timeout {
                        let msg = if c.phase == Phase::Connecting {
                            "connect timed out"
                        } else {
                            "TLS handshake timed out"
                        };
                        self.connect_failure(i, msg, now);
                    }
                }
                Phase::Backoff => {
                    if now >= c.since {
                        if self.pacer.finished(now) {
                            self.close(i);
                        } else {
                            self.open(i, now);
                        }
                    }
                }
                Phase::Idle | Phase::Unopened => {}
            }
        }
    }
}
