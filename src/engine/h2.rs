//! The HTTP/2 event loop: one thread's share of the connections when a run speaks HTTP/2
//! (`EnginePlan::http2`), chosen once per run in `build_workers`, so that the HTTP/1.1
//! loop (`worker.rs`, `conn.rs`) carries no check of the protocol per request. The same
//! mio loop, pinned, with the same pacer, templates and statistics: each connection
//! carries up to `-m` streams (capped by the server's SETTINGS_MAX_CONCURRENT_STREAMS),
//! and a due request goes to a connection with a free stream, its latency measured from
//! its intended start as over HTTP/1.1. The protocol itself is `net::h2::H2Conn`; this
//! file moves its bytes, starts its streams and acts on its events: a response judged
//! and counted, a reset counted by code (a REFUSED_STREAM sent again), the streams a
//! GOAWAY left unprocessed sent again on the next free stream, the connection re-opened
//! once its streams are done, and a connection error counted and the connection
//! re-opened. A request that times out resets its own stream (CANCEL) and fails; the
//! connection goes on unless it does not answer a PING within the timeout either.
//! Several nodes: each connection belongs to one (its address, TLS name and header
//! blocks), responses and failures count per node, and connections follow the route to
//! the active node; a redirect followed waits for a free stream to its node; a
//! Retry-After holds a connection's new streams off.

use std::collections::VecDeque;
use std::io;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};

use super::conn::Req;
use super::{EngineError, EnginePlan, StartGate, Totals};
use crate::error::io_text;
use crate::net::h2::request::{self, Prepared};
use crate::net::h2::{self as wire, Event, H2Conn, Local};
use crate::net::http::Quota;
use crate::net::redirect::{MAX_HOPS, Redirects, TOO_MANY, Verdict, request_target};
use crate::net::transport::{self, Handshake, Stream, TlsConnector};
use crate::pacing::{Due, Pacer, share};
use crate::signals::Stop;
use crate::stats::http2::H2Figures;
use crate::stats::nodes::{NodeStats, WindowTracker};
use crate::stats::{ErrorKind, LATE_US, Stats};
use crate::template::{Captures, Rng};
use crate::timer::Timer;
use crate::workload::Picker;

const TIMER: Token = Token(usize::MAX);
const READ_BUF: usize = 64 * 1024;
const TICK: Duration = Duration::from_millis(50);
const PRECONNECT_MAX: Duration = Duration::from_secs(10);
const CAPTURE_BYTES: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LinkPhase {
    Unopened,
    Connecting,
    Handshaking,
    /// TCP (and TLS) up: the HTTP/2 connection's own state says the rest.
    Open,
    Backoff,
}

/// One HTTP/2 connection: its socket, its protocol state and the request on each stream.
struct H2Link {
    stream: Option<Stream>,
    phase: LinkPhase,
    proto: H2Conn,
    reqs: Vec<Option<Req>>,
    /// Per stream: the node its request counts for (the one it was first sent to; a
    /// redirect's hop is sent on a link to another node).
    homes: Vec<usize>,
    /// How much of `proto.out` has been written.
    out_sent: usize,
    since: Instant,
    connected_at: Instant,
    failures: u32,
    /// In the loop's list of connections with a free stream.
    listed: bool,
    /// When our last PING went out (`expire_streams`).
    ping_at: Instant,
    captures: Captures,
    /// The node (of several) this connection is open to (0 for a single address).
    node: usize,
    /// `--respect-retry-after`: a 429's Retry-After holds new streams off until then.
    paused_until: Option<Instant>,
}

pub(super) struct H2Loop<'p> {
    plan: &'p EnginePlan,
    global: usize,
    poll: Poll,
    links: Vec<H2Link>,
    /// Connections that may have a free stream (checked when taken).
    free: Vec<usize>,
    /// Requests a GOAWAY or REFUSED_STREAM left unprocessed, to send again first.
    again: VecDeque<Req>,
    /// `--follow-redirects`: per node, the requests a redirect sends there, with the node
    /// each counts for, for the next free stream of a link to that node.
    hops: Vec<VecDeque<(Req, usize)>>,
    /// `--follow-redirects`: the nodes a redirect may be followed to.
    redirects: Option<Redirects>,
    busy: usize,
    requests: super::requests::Requests,
    /// Per (node, operation), `node * ops + op`: its header block (with that node's
    /// `:authority`) encoded once (None: it carries captured values).
    prepared: Vec<Option<Prepared>>,
    /// Several nodes: the window of failures this thread has open.
    windows: WindowTracker,
    /// Several nodes: how many route moves this thread has acted on.
    route_seen: u64,
    picker: Picker,
    producers: Vec<usize>,
    rng: Rng,
    tls: Option<TlsConnector>,
    timer: Option<Timer>,
    pub(super) report: Option<(usize, crossbeam_channel::Sender<(usize, Totals)>)>,
    stats: Stats,
    status: Box<[u64; 1000]>,
    pacer: Pacer,
    buf: Box<[u8]>,
    block: Vec<u8>,
    local: Local,
    https: bool,
}

/// A thread's empty statistics, with what it asked of HTTP/2.
fn fresh_stats(plan: &EnginePlan, streams: u32) -> Stats {
    let mut s = Stats::new(plan.ops.len());
    s.nodes = plan
        .nodes
        .targets
        .iter()
        .map(|t| NodeStats {
            addr: t.base(),
            ..Default::default()
        })
        .collect();
    // Room for the windows of a long run: none allocated while it goes on.
    s.windows.reserve(if s.nodes.is_empty() { 0 } else { 64 });
    s.http2 = H2Figures {
        streams_asked: u64::from(streams),
        streams_allowed: u64::from(streams),
        ..Default::default()
    };
    s
}

/// Why `plan` cannot run over HTTP/2 (yet), in one sentence, if it cannot
/// (`net::h2::H2Refusal`, which the commands check before anything is sent).
pub(super) fn unsupported(plan: &EnginePlan) -> Option<&'static str> {
    let shape = crate::net::h2::RunShape {
        tls: plan.target.is_tls(),
        keepalive: plan.keepalive,
        // Each shard runs an engine of its own: nothing to refuse here.
        shard: false,
    };
    crate::net::h2::H2Refusal::of(&plan.http2?, &shape).map(crate::net::h2::H2Refusal::message)
}

/// Per (node, operation), `node * ops + op`: the operation's header block with the node's
/// `:authority`, encoded once (None: it carries captured values, encoded per request).
fn prepare(
    plan: &EnginePlan,
    requests: &mut super::requests::Requests,
    https: bool,
) -> Vec<Option<Prepared>> {
    let mut rng = Rng::new(1);
    let mut prepared = Vec::new();
    for node in 0..plan.nodes.targets.len().max(1) {
        prepared.extend((0..plan.ops.len()).map(|op| {
            let t = requests.get(node, op);
            if t.uses_captures() {
                return None;
            }
            Prepared::new(t.render_at(&mut rng, 0, &Captures::default()), https)
        }));
    }
    prepared
}

/// `--follow-redirects`: one queue of hops per node, with room for every stream of the
/// thread (`streams`), so that none grows while the run goes on.
fn hop_queues(plan: &EnginePlan, streams: usize) -> Vec<VecDeque<(Req, usize)>> {
    let room = if plan.follow_redirects { streams } else { 0 };
    (0..plan.nodes.targets.len().max(1))
        .map(|_| VecDeque::with_capacity(room))
        .collect()
}

impl<'p> H2Loop<'p> {
    pub(super) fn new(
        plan: &'p EnginePlan,
        global: usize,
        mut requests: super::requests::Requests,
        tls: Option<TlsConnector>,
    ) -> Result<H2Loop<'p>, EngineError> {
        let h2 = plan
            .http2
            .ok_or(EngineError::Http2Unsupported("a plan without HTTP/2"))?;
        let poll = Poll::new().map_err(EngineError::EventLoop)?;
        let (slot, slots) = plan.slot(global);
        let mut mine = share(plan.connections, slots, slot);
        if let Some(n) = plan.requests {
            mine = mine.min(share(n, slots, slot).div_ceil(u64::from(h2.streams)).max(1));
        }
        let timer = match plan.schedule {
            Some(_) => Some(Timer::new(poll.registry(), TIMER).map_err(EngineError::Timer)?),
            None => None,
        };
        let now = Instant::now();
        let captured = plan
            .ops
            .iter()
            .filter_map(|o| o.capture.as_ref().map(|c| usize::from(c.slot) + 1))
            .max()
            .unwrap_or(0);
        let local = Local {
            streams: h2.streams as usize,
            window: wire::STREAM_WINDOW,
            // A 429's quota is read where it is counted per node or obeyed.
            headers: plan.nodes.is_cluster() || plan.respect_retry_after || plan.follow_redirects,
        };
        let links = (0..mine)
            .map(|_| H2Link {
                stream: None,
                phase: LinkPhase::Unopened,
                proto: H2Conn::new(local),
                reqs: vec![None; local.streams],
                homes: vec![0; local.streams],
                out_sent: 0,
                since: now,
                connected_at: now,
                failures: 0,
                listed: false,
                ping_at: now,
                captures: Captures::with_slots(captured, CAPTURE_BYTES),
                node: 0,
                paused_until: None,
            })
            .collect();
        let https = plan.target.is_tls();
        let prepared = prepare(plan, &mut requests, https);
        Ok(H2Loop {
            plan,
            global,
            poll,
            links,
            free: Vec::with_capacity(mine as usize),
            again: VecDeque::with_capacity(mine as usize * local.streams),
            hops: hop_queues(plan, mine as usize * local.streams),
            redirects: plan.follow_redirects.then(|| {
                Redirects::new(if plan.nodes.targets.is_empty() {
                    std::slice::from_ref(&plan.target)
                } else {
                    &plan.nodes.targets
                })
            }),
            busy: 0,
            requests,
            prepared,
            windows: WindowTracker::default(),
            route_seen: 0,
            picker: Picker::new(&plan.ops),
            producers: super::worker::producers(plan),
            rng: Rng::seeded(global as u64),
            tls,
            timer,
            report: None,
            stats: fresh_stats(plan, h2.streams),
            status: Box::new([0; 1000]),
            pacer: super::worker::idle_pacer(now),
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            block: Vec::with_capacity(4096),
            local,
            https,
        })
    }

    fn make_pacer(&self, origin: Instant) -> Pacer {
        let p = self.plan;
        let (slot, slots) = p.slot(self.global);
        let budget = p.requests.map(|n| share(n, slots, slot));
        let deadline = p.duration.map(|d| origin + p.warmup + d);
        match &p.schedule {
            Some(schedule) => {
                Pacer::open(origin, p.warmup, deadline, budget, schedule, slot, slots)
            }
            None => Pacer::closed(origin, p.warmup, deadline, budget),
        }
    }

    /// Opens every connection, waits for the start, runs the schedule, returns the figures.
    pub(super) fn run(mut self, stop: &Stop, gate: &dyn StartGate) -> Result<Stats, EngineError> {
        let mut events = Events::with_capacity(1024);
        self.preconnect(stop, &mut events)?;
        let origin = gate.wait();
        self.pacer = self.make_pacer(origin);
        let measure_from = self.pacer.measure_from();
        let mut warm = self.plan.warmup > Duration::ZERO;
        let mut next_tick = origin + TICK;
        let mut next_report = origin + Duration::from_secs(1);
        let mut now = Instant::now();
        let end = loop {
            if stop.is_set() {
                break now;
            }
            if warm && now >= measure_from {
                warm = false;
                self.forget_warmup();
            }
            self.dispatch(now);
            if self.pacer.finished(now) && self.busy == 0 && self.again.is_empty() {
                break now;
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
            if !self.free.is_empty()
                && let Some(t) = self.pacer.next_wakeup()
            {
                match self.timer.as_mut() {
                    Some(timer) => timer.wake_by(t, Instant::now()),
                    None => wake = wake.min(t),
                }
            }
            now = self.poll_once(&mut events, wake.saturating_duration_since(now))?;
        };
        self.send_progress();
        Ok(self.finish(end, stop))
    }

    /// The thread's figures at the end of the run.
    fn finish(&mut self, end: Instant, stop: &Stop) -> Stats {
        let mut stats = std::mem::take(&mut self.stats);
        stats.note_unsent(self.pacer.unsent_waits(end));
        for (code, n) in self.status.iter().enumerate() {
            if *n > 0 {
                *stats.status.entry(code as u16).or_default() += *n;
            }
        }
        let end = match self.pacer.window_end() {
            Some(w) if !stop.is_set() => end.max(w),
            _ => end,
        };
        stats.elapsed_s = end
            .saturating_duration_since(self.pacer.measure_from())
            .as_secs_f64();
        if let Some(w) = std::mem::take(&mut self.windows).finish() {
            stats.windows.push(w);
        }
        for n in stats.nodes.iter_mut().filter(|n| n.requests > 0) {
            n.elapsed_s = stats.elapsed_s;
        }
        stats
    }

    fn send_progress(&mut self) {
        if let Some((thread, tx)) = &self.report {
            let p = Totals {
                reported: true,
                requests: self.stats.requests(),
                ok: self.stats.ok(),
                more: crate::stats::figures::Figures::of(
                    &self.stats,
                    &self.status[..],
                    self.links.iter().filter(|c| c.stream.is_some()).count() as u64,
                ),
            };
            let _ = tx.try_send((*thread, p));
        }
    }

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

    /// Opens every connection (and waits for the servers' SETTINGS) before the clock.
    fn preconnect(&mut self, stop: &Stop, events: &mut Events) -> Result<(), EngineError> {
        let now = Instant::now();
        for i in 0..self.links.len() {
            self.open(i, now);
        }
        let until = now + PRECONNECT_MAX.min(self.plan.timeout);
        while !stop.is_set() && Instant::now() < until {
            let waiting = self.links.iter().any(|l| {
                matches!(l.phase, LinkPhase::Connecting | LinkPhase::Handshaking)
                    || (l.phase == LinkPhase::Open
                        && !l.proto.can_start()
                        && l.proto.active() == 0
                        && !l.proto.finished())
            });
            if !waiting {
                break;
            }
            self.poll_once(events, TICK)?;
        }
        Ok(())
    }

    fn poll_once(
        &mut self,
        events: &mut Events,
        timeout: Duration,
    ) -> Result<Instant, EngineError> {
        match self.poll.poll(events, Some(timeout)) {
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
            let i = ev.token().0;
            if i < self.links.len() {
                let readable = ev.is_readable() || ev.is_error() || ev.is_read_closed();
                self.on_event(i, readable, now);
            }
        }
        Ok(now)
    }

    /// Starts a non-blocking connect on link `i`, with a fresh HTTP/2 connection, to the
    /// node it goes to now (`NodePlan::pick`: its share of `--nodes all`, or the active
    /// node), under that node's TLS name.
    fn open(&mut self, i: usize, now: Instant) {
        let nodes = &self.plan.nodes;
        let node = nodes.pick(i + self.global);
        let addr = match nodes.targets.get(node) {
            Some(t) => t.addr(),
            None => self.plan.target.addr(),
        };
        let l = &mut self.links[i];
        l.stream = None;
        l.since = now;
        l.proto = H2Conn::new(self.local);
        l.out_sent = 0;
        l.listed = false;
        l.node = node;
        l.paused_until = None;
        match transport::connect_node(addr, self.tls.as_ref(), node, None) {
            Ok(mut stream) => {
                let reg = self.poll.registry().register(
                    stream.tcp(),
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                );
                match reg {
                    Ok(()) => {
                        l.stream = Some(stream);
                        l.phase = LinkPhase::Connecting;
                    }
                    Err(e) => {
                        self.connect_failed(i, &format!("connect failed: {}", io_text(&e)), now)
                    }
                }
            }
            Err(e) => self.connect_failed(i, &format!("connect failed: {}", io_text(&e)), now),
        }
    }

    /// A connection could not be opened: counted, retried after a growing pause; in the
    /// closed model a request fails with it, so that a run against a dead server ends.
    fn connect_failed(&mut self, i: usize, msg: &str, now: Instant) {
        self.link_failed(i, ErrorKind::Connect, msg, now);
    }

    /// Link `i` failed with no request of its own to fail (`kind`: a connect, or an HTTP/2
    /// connection error before any stream started): retried after a pause that grows
    /// until a response comes back; in the closed model a due request fails with it, so
    /// that a run against a server that never answers ends rather than reconnecting in a
    /// tight loop.
    fn link_failed(&mut self, i: usize, kind: ErrorKind, msg: &str, now: Instant) {
        let l = &mut self.links[i];
        l.stream = None;
        l.failures += 1;
        let backoff = Duration::from_millis(10) * (1u32 << l.failures.min(7));
        l.phase = LinkPhase::Backoff;
        l.since = now + backoff.min(Duration::from_secs(1));
        if !self.pacer.is_open()
            && let Some(due) = self.pacer.take_due(now)
        {
            let req = self.claim(i, due, now);
            self.busy += 1;
            self.fail_req(self.links[i].node, req, kind, msg, now);
        } else {
            self.stats.note(msg, 1);
        }
    }

    fn on_event(&mut self, i: usize, readable: bool, now: Instant) {
        let was = self.links[i].phase;
        match was {
            LinkPhase::Connecting => {
                let Some(stream) = self.links[i].stream.as_mut() else {
                    return;
                };
                match stream.connected() {
                    Ok(true) => {
                        let l = &mut self.links[i];
                        l.connected_at = now;
                        let took = now.saturating_duration_since(l.since).as_micros() as u64;
                        self.stats.connect.record(took);
                        self.stats.connections_opened += 1;
                        l.phase = LinkPhase::Handshaking;
                        self.handshake(i, now);
                    }
                    Ok(false) => {}
                    Err(e) => {
                        self.connect_failed(i, &format!("connect failed: {}", io_text(&e)), now)
                    }
                }
            }
            LinkPhase::Handshaking => self.handshake(i, now),
            LinkPhase::Open => {
                if readable {
                    self.read(i, now);
                }
                self.flush(i, now);
            }
            LinkPhase::Unopened | LinkPhase::Backoff => {}
        }
        // Opened by this event: a server sends its SETTINGS as soon as it accepts (nginx
        // does), so what is already there is read now; its readiness came with this event
        // and will not come again (edge-triggered).
        if was != LinkPhase::Open && self.links[i].phase == LinkPhase::Open {
            self.read(i, now);
            self.flush(i, now);
        }
    }

    fn handshake(&mut self, i: usize, now: Instant) {
        let Some(stream) = self.links[i].stream.as_mut() else {
            return;
        };
        match stream.handshake() {
            Ok(Handshake::Done) => {
                // Its own clock: the event batch's `now` may predate this handshake's
                // last flight, read in the same batch as the connect.
                let now = Instant::now();
                if stream.is_tls() {
                    self.stats.tls_resumed += u64::from(stream.resumed());
                    let l = &self.links[i];
                    self.stats
                        .tls
                        .record(now.saturating_duration_since(l.connected_at).as_micros() as u64);
                    self.stats
                        .connect_tls
                        .record(now.saturating_duration_since(l.since).as_micros() as u64);
                }
                // (`failures` goes back to 0 at the first response, not here: a server
                // that breaks every connection it accepts is backed off from.)
                let l = &mut self.links[i];
                l.phase = LinkPhase::Open;
                // The preface and SETTINGS go out; streams wait for the server's SETTINGS.
                self.flush(i, now);
            }
            Ok(Handshake::Pending) => {}
            Err(e) => {
                let msg = if e.kind() == io::ErrorKind::InvalidData {
                    format!("TLS handshake failed: {}", io_text(&e))
                } else {
                    format!("connect failed: {}", io_text(&e))
                };
                self.connect_failed(i, &msg, now);
            }
        }
    }

    /// Writes what the connection has queued (frames of new streams, answers).
    fn flush(&mut self, i: usize, now: Instant) {
        let l = &mut self.links[i];
        let Some(stream) = l.stream.as_mut() else {
            return;
        };
        let mut failed = None;
        while l.out_sent < l.proto.out.len() {
            match stream.write(&l.proto.out[l.out_sent..]) {
                Ok(0) => break,
                Ok(n) => {
                    l.out_sent += n;
                    self.stats.bytes_sent += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if failed.is_none()
            && let Err(e) = stream.flush()
        {
            failed = Some(e);
        }
        if l.out_sent == l.proto.out.len() {
            l.proto.out.clear();
            l.out_sent = 0;
        }
        if let Some(e) = failed {
            let msg = format!("write failed: {}", io_text(&e));
            self.drop_link(i, ErrorKind::Write, &msg, now);
        }
    }

    /// Reads what the socket holds into the HTTP/2 connection, and acts on its events.
    fn read(&mut self, i: usize, now: Instant) {
        loop {
            let Some(stream) = self.links[i].stream.as_mut() else {
                return;
            };
            match stream.read(&mut self.buf) {
                Ok((0, _)) => {
                    self.stats.server_closes += 1;
                    self.drop_link(
                        i,
                        ErrorKind::Read,
                        "server closed the connection mid-response",
                        now,
                    );
                    return;
                }
                Ok((n, drained)) => {
                    self.stats.bytes_received += n as u64;
                    let at = Instant::now();
                    let fed = self.links[i].proto.feed(&self.buf[..n]);
                    self.on_events(i, at);
                    if let Err(e) = fed {
                        H2Figures::count(&mut self.stats.http2.conn_errors, e.code);
                        let msg = format!(
                            "HTTP/2 connection error {}: {}",
                            wire::frame::code_name(e.code),
                            e.why
                        );
                        self.flush(i, now);
                        if self.links[i].reqs.iter().any(Option::is_some) {
                            self.drop_link(i, ErrorKind::Read, &msg, now);
                        } else {
                            // Nothing of its own to fail: paced as a failed connect.
                            self.link_failed(i, ErrorKind::Read, &msg, now);
                        }
                        return;
                    }
                    if self.links[i].proto.finished() {
                        self.flush(i, now);
                        self.stats.server_closes += 1;
                        self.reopen(i, now);
                        return;
                    }
                    if drained {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let msg = format!("read failed: {}", io_text(&e));
                    self.drop_link(i, ErrorKind::Read, &msg, now);
                    return;
                }
            }
        }
    }

    /// The events of the last `feed` on link `i`, at `now` (the read that brought them).
    fn on_events(&mut self, i: usize, now: Instant) {
        while let Some(ev) = self.links[i].proto.events.pop_front() {
            match ev {
                Event::Ready => {
                    let p = &self.links[i].proto;
                    let h = &mut self.stats.http2;
                    h.streams_allowed = h.streams_allowed.min(p.allowed() as u64);
                    h.server_limit = h.server_limit.max(u64::from(p.server_limit().unwrap_or(0)));
                    self.list(i);
                }
                Event::Response { slot, status } => {
                    self.links[i].failures = 0;
                    self.complete(i, slot, status, now)
                }
                Event::Reset { slot, code } => {
                    H2Figures::count(&mut self.stats.http2.resets, code);
                    let Some(req) = self.links[i].reqs[slot].take() else {
                        continue;
                    };
                    let home = self.links[i].homes[slot];
                    if code == wire::frame::code::REFUSED_STREAM {
                        self.send_again(i, home, req);
                    } else {
                        let msg = format!("stream reset: {}", wire::frame::code_name(code));
                        self.fail_req(home, req, ErrorKind::Read, &msg, now);
                    }
                    self.list(i);
                }
                Event::Refused { slot } => {
                    if let Some(req) = self.links[i].reqs[slot].take() {
                        self.send_again(i, self.links[i].homes[slot], req);
                    }
                }
                Event::GoAway { code, .. } => H2Figures::count(&mut self.stats.http2.goaways, code),
            }
        }
    }

    /// A request left unprocessed on link `i` goes out again, first, on the next free
    /// stream (a redirect's hop, on the next one to the same node).
    fn send_again(&mut self, i: usize, home: usize, req: Req) {
        self.stats.http2.resent += 1;
        if req.hops > 0 {
            self.hops[self.links[i].node].push_back((req, home));
            return;
        }
        self.busy -= 1;
        self.again.push_back(req);
    }

    /// Lists link `i` as free when it may start a stream: not held off by a Retry-After,
    /// not open to a node the route has left.
    fn list(&mut self, i: usize) {
        let l = &mut self.links[i];
        if !l.listed
            && l.proto.can_start()
            && l.paused_until.is_none()
            && !self.plan.nodes.should_move(l.node)
        {
            l.listed = true;
            self.free.push(i);
        }
    }

    /// The whole response on `slot` of link `i`: judged, counted, the stream freed.
    fn complete(&mut self, i: usize, slot: usize, status: u16, now: Instant) {
        let Some(mut req) = self.links[i].reqs[slot].take() else {
            return;
        };
        let home = self.links[i].homes[slot];
        if matches!(status, 307 | 308)
            && let Some(node) = self.follow(i, slot, &mut req)
        {
            // Queued for the next free stream to the Location's node; the request goes on.
            self.hops[node].push_back((req, home));
            self.after_response(i, None, now);
            return;
        }
        self.busy -= 1;
        let ok = self.judge(i, slot, &req, status);
        let quota = if status == 429 {
            self.links[i].proto.quota(slot)
        } else {
            None
        };
        if req.measured {
            self.count_response((i, slot, home), &req, (status, ok, quota), now);
        }
        self.after_response(i, quota, now);
    }

    /// Counts a measured response: its status, latency and service time, its kind
    /// (success, throttled by a quota, failed status), the timeline, its node.
    fn count_response(
        &mut self,
        (i, slot, home): (usize, usize, usize),
        req: &Req,
        (status, ok, quota): (u16, bool, Option<Quota>),
        now: Instant,
    ) {
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
        } else if self.plan.ops[req.op].is_success(status) {
            // Counted by `judge` (no value to capture, or not what was expected).
        } else if let Some(q) = quota {
            // A rate-limit quota's 429: throttled, counted apart from the errors.
            s.throttled += 1;
            s.retry_after_s = s.retry_after_s.max(u64::from(q.retry_after));
            s.ratelimit_limit = s.ratelimit_limit.max(u64::from(q.limit));
        } else {
            s.errors.status += 1;
        }
        let measure_from = self.pacer.measure_from();
        let since = now.saturating_duration_since(measure_from);
        s.timeline.record(since.as_secs(), ok, Some(latency));
        s.timeline.record_service(service);
        s.blocks.record(since.as_millis() as u64, latency);
        s.waiting.record(service);
        s.redirects += u64::from(matches!(status, 307 | 308));
        let len = self.links[i].proto.body_len(slot);
        s.count_body(len, true);
        let node = self.links[i].node;
        if let Some(n) = s.nodes.get_mut(node) {
            // The node that answered: a redirect's hop, or a redirect.
            n.hops += u64::from(req.hops > 0 && node != home);
            n.redirects += u64::from(matches!(status, 307 | 308));
        }
        if let Some(n) = s.nodes.get_mut(home) {
            // Several nodes: the request counts for the node it was sent to, with its
            // windows of failures.
            n.requests += 1;
            n.latency.record(latency);
            n.throttled += u64::from(quota.is_some());
            let sent = req
                .sent
                .saturating_duration_since(measure_from)
                .as_secs_f64();
            if ok {
                n.ok += 1;
                if let Some(w) = self.windows.ok(since.as_secs_f64(), sent, home) {
                    s.windows.push(w);
                }
            } else if quota.is_none() {
                // (a throttled answer is the quota at work, not unavailability)
                self.windows.failed(since.as_secs_f64(), sent);
            }
        }
    }

    /// `--follow-redirects`: a 307/308 on `slot` of link `i` whose Location names a node
    /// of the target (`net::redirect` judges it, against the request as it went out):
    /// counted, and that node (the caller queues the request for it; it keeps its clock
    /// and is sent again with the same bytes but for that node's `:authority`). None: the
    /// redirect is the request's answer (why noted).
    fn follow(&mut self, i: usize, slot: usize, req: &mut Req) -> Option<usize> {
        let redirects = self.redirects.as_ref()?;
        let l = &self.links[i];
        let verdict = if req.hops >= MAX_HOPS {
            Verdict::Refused(TOO_MANY)
        } else {
            let mut rng = req.rng;
            let sent = self
                .requests
                .get(l.node, req.op)
                .render_at(&mut rng, req.turn, &l.captures);
            let location = l.proto.location(slot).unwrap_or(&[]);
            redirects.judge(location, l.node, request_target(sent))
        };
        let node = match verdict {
            Verdict::Node(n) if n < self.hops.len() => n,
            Verdict::Node(_) => return None,
            Verdict::Refused(why) => {
                if req.measured {
                    self.stats.note(why, 1);
                }
                return None;
            }
        };
        if req.measured {
            let s = &mut self.stats;
            s.redirects += 1;
            s.followed += 1;
            if let Some(n) = s.nodes.get_mut(l.node) {
                n.redirects += 1;
                n.followed += 1;
            }
        }
        req.hops += 1;
        // (rendered again from its generator's state and turn: the same request)
        req.resent = true;
        Some(node)
    }

    /// `--follow-redirects`: hops waiting a whole timeout for a free stream to their node
    /// (this thread may have no link open to it) fail.
    fn expire_hops(&mut self, now: Instant, timeout: Duration) {
        for node in 0..self.hops.len() {
            while let Some((r, _)) = self.hops[node].front()
                && now.saturating_duration_since(r.sent) >= timeout
            {
                let Some((r, home)) = self.hops[node].pop_front() else {
                    break;
                };
                let msg = format!(
                    "redirect not followed: no free stream to its node within {}",
                    crate::config::units::show_duration(timeout)
                );
                self.fail_req(home, r, ErrorKind::Timeout, &msg, now);
            }
        }
    }

    /// After a response on link `i`: a Retry-After holds its new streams off
    /// (`--respect-retry-after`); a link whose node the route left re-opens to the active
    /// node once its last stream is done; otherwise its free stream is listed.
    fn after_response(&mut self, i: usize, quota: Option<Quota>, now: Instant) {
        if self.plan.respect_retry_after
            && let Some(q) = quota
            && q.retry_after > 0
        {
            let l = &mut self.links[i];
            let until = now + Duration::from_secs(u64::from(q.retry_after));
            l.paused_until = Some(l.paused_until.map_or(until, |u| u.max(until)));
        }
        let l = &self.links[i];
        if l.proto.active() == 0 && self.plan.nodes.should_move(l.node) {
            self.flush(i, now);
            self.reopen(i, now);
            return;
        }
        self.list(i);
    }

    /// Whether the response is a success: its status, the value it captures, what it is
    /// expected to hold (as the HTTP/1.1 loop judges, `responses.rs`).
    fn judge(&mut self, i: usize, slot: usize, req: &Req, status: u16) -> bool {
        let op = &self.plan.ops[req.op];
        let l = &mut self.links[i];
        let body = l.proto.body(slot);
        let mut ok = op.is_success(status);
        if ok && let Some(cap) = &op.capture {
            match crate::capture::find_string(body, &cap.path) {
                Some(v) => l.captures.set(cap.slot, v),
                None => {
                    ok = false;
                    if req.measured {
                        let msg = format!("response has no {}", cap.describe());
                        self.stats.note(&msg, 1);
                        self.stats.errors.read += 1;
                    }
                }
            }
        }
        if ok
            && let Some(expect) = &op.expect
            && let Some(msg) = expect.check(body)
        {
            ok = false;
            if req.measured {
                self.stats.note(&msg, 1);
                self.stats.errors.read += 1;
            }
        }
        if op.consumes
            && let Some(slot) = op.needs
        {
            l.captures.clear_slot(slot);
        }
        ok
    }

    /// Counts `req` as failed (for `home`, the node it counts for, too).
    fn fail_req(&mut self, home: usize, req: Req, kind: ErrorKind, msg: &str, now: Instant) {
        self.busy -= 1;
        if req.measured {
            let s = &mut self.stats;
            s.ops[req.op].requests += 1;
            s.count_error(kind);
            s.note(msg, 1);
            let measure_from = self.pacer.measure_from();
            let since = now.saturating_duration_since(measure_from);
            s.timeline.record(since.as_secs(), false, None);
            if let Some(n) = s.nodes.get_mut(home) {
                n.requests += 1;
                let sent = req.sent.saturating_duration_since(measure_from);
                self.windows.failed(since.as_secs_f64(), sent.as_secs_f64());
            }
        }
    }

    /// The connection is lost: its requests under way fail, and it is opened again.
    fn drop_link(&mut self, i: usize, kind: ErrorKind, msg: &str, now: Instant) {
        for slot in 0..self.links[i].reqs.len() {
            if let Some(req) = self.links[i].reqs[slot].take() {
                self.fail_req(self.links[i].homes[slot], req, kind, msg, now);
            }
        }
        self.reopen(i, now);
    }

    /// Opens link `i` again (its requests already settled), unless the run is over.
    fn reopen(&mut self, i: usize, now: Instant) {
        for slot in 0..self.links[i].reqs.len() {
            if let Some(req) = self.links[i].reqs[slot].take() {
                self.send_again(i, self.links[i].homes[slot], req);
            }
        }
        if self.pacer.finished(now)
            && self.again.is_empty()
            && self.hops.iter().all(VecDeque::is_empty)
        {
            let l = &mut self.links[i];
            l.stream = None;
            l.phase = LinkPhase::Unopened;
            return;
        }
        self.open(i, now);
    }

    /// Whether link `i` may start a stream now: open, with room, not held off by a
    /// Retry-After, not open to a node the route has left.
    fn takes_streams(&self, i: usize) -> bool {
        let l = &self.links[i];
        l.phase == LinkPhase::Open
            && l.proto.can_start()
            && l.paused_until.is_none()
            && !self.plan.nodes.should_move(l.node)
    }

    /// `--follow-redirects`: each queued hop goes out on any free link to its node, not
    /// only on the last one listed; otherwise hops waiting for the active node starve
    /// behind a free link to a standby once the pacer has nothing more due (the closed
    /// model's last requests), and fail at their timeout. Links it fills are left listed
    /// for `dispatch`, which drops them as usual.
    fn dispatch_hops(&mut self, now: Instant) {
        if self.hops.iter().all(VecDeque::is_empty) {
            return;
        }
        for k in 0..self.free.len() {
            let i = self.free[k];
            let mut started = false;
            while self.takes_streams(i) {
                let Some((req, home)) = self.hops[self.links[i].node].pop_front() else {
                    break;
                };
                self.start(i, req, home, now);
                started = true;
            }
            if started {
                self.flush(i, now);
            }
        }
    }

    /// Starts due requests on connections with a free stream, then writes their frames.
    fn dispatch(&mut self, now: Instant) {
        self.dispatch_hops(now);
        let mut started = 0usize;
        while let Some(&i) = self.free.last() {
            if !self.takes_streams(i) {
                self.free.pop();
                self.links[i].listed = false;
                continue;
            }
            let node = self.links[i].node;
            let (req, home) = match self.hops[node].pop_front() {
                Some(hop) => hop,
                None => {
                    let req = match self.again.pop_front() {
                        Some(mut r) => {
                            r.resent = true;
                            r
                        }
                        None => {
                            let Some(due) = self.pacer.take_due(now) else {
                                break;
                            };
                            self.claim(i, due, now)
                        }
                    };
                    self.busy += 1;
                    (req, node)
                }
            };
            self.start(i, req, home, now);
            started += 1;
            // Frames of several new streams go out in one write, once this link is full.
            if !self.links[i].proto.can_start() {
                self.flush(i, now);
            }
        }
        if started > 0
            && let Some(&i) = self.free.last()
        {
            self.flush(i, now);
        }
    }

    /// A new request for link `i` from `due`: its operation picked (the one that captures
    /// what it needs first, while this connection has not captured it).
    fn claim(&mut self, i: usize, due: Due, now: Instant) -> Req {
        let mut op = self.picker.pick(&mut self.rng);
        if let Some(slot) = self.plan.ops[op].needs
            && self.links[i].captures.get(slot).is_none()
        {
            op = self.producers[op];
        }
        if due.measured {
            let lag = now.saturating_duration_since(due.intended).as_micros() as u64;
            if lag > LATE_US {
                self.stats.late += 1;
            }
            self.stats.max_lag_us = self.stats.max_lag_us.max(lag);
        }
        Req {
            op,
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

    /// Renders `req` and opens its stream on link `i` (`home`: the node it counts for).
    fn start(&mut self, i: usize, mut req: Req, home: usize, now: Instant) {
        let node = self.links[i].node;
        let template = self.requests.get(node, req.op);
        if !req.resent {
            req.rng = self.rng;
            req.turn = template.next_turn();
        }
        req.sent = now;
        let mut rng = req.rng;
        let l = &mut self.links[i];
        let bytes = template.render_at(&mut rng, req.turn, &l.captures);
        if !req.resent {
            self.rng = rng;
        }
        self.block.clear();
        let body_at = match &self.prepared[node * self.plan.ops.len() + req.op] {
            Some(p) => Some(p.encode(&mut self.block, bytes)),
            None => request::encode(&mut self.block, bytes, self.https),
        };
        let keep = self.plan.ops[req.op].reads_body();
        let Some(slot) = body_at.and_then(|at| l.proto.start(&self.block, &bytes[at..], keep))
        else {
            self.fail_req(
                home,
                req,
                ErrorKind::Write,
                "the request could not be encoded",
                now,
            );
            return;
        };
        l.reqs[slot] = Some(req);
        l.homes[slot] = home;
    }

    /// Periodic checks: request and connect timeouts, connections due to retry, the
    /// end of a Retry-After's pause, the route's active node followed.
    fn tick(&mut self, now: Instant) {
        self.follow_route(now);
        let timeout = self.plan.timeout;
        if self.redirects.is_some() {
            self.expire_hops(now, timeout);
        }
        for i in 0..self.links.len() {
            let l = &mut self.links[i];
            if l.paused_until.is_some_and(|u| now >= u) {
                l.paused_until = None;
                self.list(i);
            }
            let l = &self.links[i];
            match l.phase {
                LinkPhase::Open => self.expire_streams(i, now, timeout),
                LinkPhase::Connecting | LinkPhase::Handshaking
                    if now.saturating_duration_since(l.since) >= timeout =>
                {
                    self.connect_failed(i, "connect timed out", now);
                }
                LinkPhase::Backoff if now >= l.since && !self.pacer.finished(now) => {
                    self.open(i, now)
                }
                _ => {}
            }
        }
    }

    /// The cluster's active node moved: links waiting to retry try the new one at once;
    /// links open to another node, with no stream under way, re-open to it (the others
    /// start no new stream and re-open when their last one is done, `after_response`).
    fn follow_route(&mut self, now: Instant) {
        let nodes = &self.plan.nodes;
        let Some(route) = nodes.route.as_ref() else {
            return;
        };
        let changes = route.changes();
        let moved = changes != self.route_seen;
        self.route_seen = changes;
        for i in 0..self.links.len() {
            let l = &mut self.links[i];
            if !nodes.should_move(l.node) {
                continue;
            }
            match l.phase {
                LinkPhase::Backoff if moved => {
                    l.since = now;
                    l.failures = 0;
                }
                // (also a link that opened to the old node after the move)
                LinkPhase::Open if l.proto.active() == 0 && !self.pacer.finished(now) => {
                    self.reopen(i, now)
                }
                _ => {}
            }
        }
    }

    /// The streams of link `i` past the timeout: each given up (RST_STREAM CANCEL) and
    /// its request failed, while the connection's other streams go on. A PING then asks
    /// whether the server still reads the connection; one left unanswered for a whole
    /// timeout drops the connection (its requests failed), which is opened again.
    fn expire_streams(&mut self, i: usize, now: Instant, timeout: Duration) {
        let show = crate::config::units::show_duration;
        let l = &self.links[i];
        if l.proto.ping_unanswered() && now.saturating_duration_since(l.ping_at) >= timeout {
            let msg = format!("no answer to a PING within {}", show(timeout));
            self.drop_link(i, ErrorKind::Timeout, &msg, now);
            return;
        }
        let late = |r: &Option<Req>| {
            r.as_ref()
                .is_some_and(|r| now.saturating_duration_since(r.sent) >= timeout)
        };
        if !l.reqs.iter().any(late) {
            return;
        }
        let msg = format!("no response within {}", show(timeout));
        for slot in 0..self.links[i].reqs.len() {
            if !late(&self.links[i].reqs[slot]) {
                continue;
            }
            let l = &mut self.links[i];
            l.proto.cancel(slot);
            let home = l.homes[slot];
            if let Some(req) = l.reqs[slot].take() {
                self.fail_req(home, req, ErrorKind::Timeout, &msg, now);
            }
        }
        let l = &mut self.links[i];
        if !l.proto.ping_unanswered() {
            l.proto.ping();
            l.ping_at = now;
        }
        self.list(i);
        self.flush(i, now);
    }
}
