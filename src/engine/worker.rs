//! HTTP/1.1's share of one event-loop thread: the `EventLoop` that owns a share of the
//! connections (one request each at a time), and how the driver (`driver.rs`) moves them
//! on top of their links (`link.rs`: connects, handshakes, backoff): due requests claimed
//! and written on free connections, readiness events dispatched by phase, what each
//! `Exchange` (`conn.rs`) came to acted on in `settle` (a whole response judged and
//! counted by `tally.rs`, a failure counted, the connection given its next request,
//! re-opened or made to wait), free connections parked or closed, idle keep-alive
//! connections the server closed re-opened, and periodic timeout checks. A held run keeps
//! the free connections open (and idle) between steps.

use std::io;
use std::time::{Duration, Instant};

use mio::event::Event;
use mio::{Events, Token};

use super::conn::{Conn, Exchange, HOP};
use super::driver::{Core, Wheel, captures};
use super::link::{self, ConnectWindow, LinkPhase, Links};
use super::tally::Answer;
use super::{EngineError, EnginePlan};
use crate::net::http::Quota;
use crate::pacing::{Due, share};
use crate::signals::Stop;
use crate::stats::ErrorKind;

pub(super) struct EventLoop<'p> {
    pub(super) plan: &'p EnginePlan,
    /// The pacer, counts, poll and generator the driver shares (`driver.rs`).
    pub(super) core: Core<'p>,
    pub(super) conns: Vec<Conn>,
    /// Connections (or connection-per-request slots) free for a request.
    pub(super) idle: Vec<usize>,
    /// Connections holding a claimed request.
    pub(super) busy: usize,
    /// Connections that have not carried a request yet.
    unstarted: usize,
}

impl<'p> EventLoop<'p> {
    pub(super) fn new(mut core: Core<'p>) -> Result<EventLoop<'p>, EngineError> {
        let plan = core.plan;
        // Over shards, thread `global` of this shard is slot `slot` of `slots`.
        let (slot, slots) = plan.slot(core.global);
        let mut mine = share(plan.load.connections, slots, slot);
        if let Some(n) = plan.load.step.requests {
            // A connection with no request to send is never opened.
            mine = mine.min(share(n, slots, slot));
        }
        let now = Instant::now();
        let conns = (0..mine).map(|_| Conn::new(now, captures(plan))).collect();
        // (connection-per-request slots open per request, not a window at a time)
        core.window = ConnectWindow::new(if plan.load.keepalive {
            mine as usize
        } else {
            0
        });
        Ok(EventLoop {
            plan,
            core,
            conns,
            idle: Vec::with_capacity(mine as usize),
            busy: 0,
            unstarted: mine as usize,
        })
    }

    /// The cluster's active node moved: connections waiting to retry try the new one at
    /// once, and free connections to another node re-open to it.
    fn follow_route(&mut self, now: Instant) {
        let Some(route) = self.plan.nodes.route.as_ref() else {
            return;
        };
        if !self.core.route_moved() {
            return;
        }
        let active = route.active();
        for i in 0..self.conns.len() {
            let c = &mut self.conns[i];
            if c.link.node == active || c.req.is_some() {
                continue;
            }
            c.link.retry_now(now);
            if c.link.phase == LinkPhase::Open {
                if let Some(pos) = self.idle.iter().position(|&x| x == i) {
                    self.idle.swap_remove(pos);
                }
                self.open(i, now);
            }
        }
    }

    pub(super) fn claim(&mut self, i: usize, due: Due, now: Instant) {
        let req = self.core.claim(due, &self.conns[i].captures, now);
        let c = &mut self.conns[i];
        if !c.started {
            c.started = true;
            self.unstarted -= 1;
        }
        c.req = Some(req);
        self.busy += 1;
    }

    /// Claims `due` for connection `i` and writes it.
    pub(super) fn send(&mut self, i: usize, due: Due, now: Instant) {
        self.claim(i, due, now);
        self.write_request(i, now);
    }

    /// Writes the claimed request of connection `i` (which is open).
    pub(super) fn write_request(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        let Some(req) = c.req.as_mut() else { return };
        req.started = false;
        // The template of the node this stream is open to: its Host.
        let template = self.core.requests.get(c.link.node, req.op, req.caller);
        c.parser.reset(
            self.plan.ops[req.op].reads_body(),
            !template.response_has_body(),
        );
        // A request sent again after a redirect is the same request (the same generator
        // state and turn, so the same pool item), and its clock runs on.
        let mut again = req.rng;
        if self.core.tx && (req.hops == 0 || c.tie.sent_unknown()) {
            c.tie.reset();
        }
        let rng = if req.hops == 0 {
            req.sent = now;
            req.rng = self.core.rng;
            req.turn = template.next_turn();
            &mut self.core.rng
        } else {
            &mut again
        };
        let turn = req.turn;
        let req = *req;
        let (n, outcome) = c.write(template.render_at(rng, turn, &c.captures));
        if self.core.tx {
            c.place_tie();
        }
        self.core.tally.stats.bytes_sent += n;
        self.core.tally.wrote(&req, template.body_len(&c.captures));
        self.settle(i, outcome, now);
    }

    /// Starts a non-blocking connect on slot `i` to `node`: the connection's own stream,
    /// or (`hop`) a stream to the node a redirect named.
    pub(super) fn connect_to(&mut self, i: usize, node: usize, hop: bool, now: Instant) {
        self.conns[i].pending.clear();
        link::connect(self, i, node, Token(if hop { i | HOP } else { i }), now);
    }

    /// Drops the socket and opens a new one (keep-alive), keeping any claimed request.
    pub(super) fn reopen(&mut self, i: usize, now: Instant) {
        if self.core.ending(now) && self.conns[i].req.is_none() {
            self.conns[i].link.close();
            return;
        }
        self.open(i, now);
    }

    /// Connection `i` has no request: give it the next one, park it, or close it.
    pub(super) fn free(&mut self, i: usize, now: Instant) {
        if self.reserved_for_others(i) {
            // Parked until the run ends, when it is closed with the other idle ones.
            return;
        }
        if let Some(due) = self.core.pacer.take_due(now) {
            self.send(i, due, now);
        } else if self.core.ending(now) {
            Links::close(self, i);
        } else {
            self.idle.push(i);
        }
    }

    /// Closed model with -n: the requests left are kept for connections that have not sent
    /// one yet, so that `-c 20000 -n 20000` really puts 20,000 connections to work.
    fn reserved_for_others(&self, i: usize) -> bool {
        self.unstarted > 0
            && self.conns[i].started
            && !self.core.pacer.is_open()
            && self
                .core
                .pacer
                .remaining()
                .is_some_and(|r| r <= self.unstarted as u64)
    }

    /// Data or EOF on a connection with no request: the server closed an idle keep-alive
    /// connection. It is re-opened transparently.
    fn idle_readable(&mut self, i: usize, now: Instant) {
        let Some(stream) = self.conns[i].link.stream.as_mut() else {
            return;
        };
        match stream.read(&mut self.core.buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            _ => {}
        }
        self.core.tally.stats.server_closes += 1;
        if let Some(pos) = self.idle.iter().position(|&x| x == i) {
            self.idle.swap_remove(pos);
        }
        self.open(i, now);
    }

    /// Acts on what a connection step came to.
    pub(super) fn settle(&mut self, i: usize, outcome: Exchange, now: Instant) {
        match outcome {
            Exchange::Pending => {}
            Exchange::Done { status, close } => {
                self.conns[i].link.answered();
                self.complete(i, status, close, now)
            }
            Exchange::Failed { kind, msg } => self.fail(i, kind, &msg, now),
            Exchange::Resend => {
                self.core.tally.stats.server_closes += 1;
                self.reopen(i, now);
            }
        }
    }

    /// Counts the claimed request of `i` as failed.
    pub(super) fn fail_request(&mut self, i: usize, kind: ErrorKind, msg: &str, now: Instant) {
        let Some(req) = self.conns[i].req.take() else {
            return;
        };
        self.busy -= 1;
        let home = self.conns[i].home();
        self.core.tally.failed(&req, home, kind, msg, now);
    }

    /// A request failed after its connection was open: count it, then start over on a new
    /// connection.
    pub(super) fn fail(&mut self, i: usize, kind: ErrorKind, msg: &str, now: Instant) {
        self.fail_request(i, kind, msg, now);
        if self.plan.load.keepalive {
            self.reopen(i, now);
        } else {
            self.conns[i].link.close();
            self.idle.push(i);
        }
    }

    pub(super) fn read_response(&mut self, i: usize, peer_closed: bool, now: Instant) {
        self.core.clear_stamp();
        let r = self.conns[i].read(&mut self.core.buf, peer_closed);
        self.core.take_stamp();
        self.core.tally.stats.bytes_received += r.bytes;
        // A response that began in this read is timed from its first bytes' arrival (a
        // response whole in that read ends then too); a later read's time is its
        // wake-up's, which comes after.
        let now = r.first_byte.unwrap_or(now);
        let c = &self.conns[i];
        if r.first_byte.is_some()
            && let Some(req) = c.req
        {
            // ttfb is that of each connection's first request (or of every one without
            // keep-alive).
            let first = c.link.served == 0 || !self.plan.load.keepalive;
            self.core.tally.first_byte(&req, first, now);
        }
        if r.extra {
            // Bytes nobody asked for: this connection cannot be trusted.
            self.core
                .tally
                .connection_failed(ErrorKind::Read, "server sent data after the response");
        }
        self.settle(i, r.outcome, now);
        self.core.stamp = None;
    }

    /// A whole response arrived on `i`: judged, counted (when measured), and the
    /// connection given its next request, or re-opened, or made to wait.
    pub(super) fn complete(&mut self, i: usize, status: u16, close: bool, now: Instant) {
        if matches!(status, 307 | 308)
            && self.core.redirects.is_some()
            && self.follow(i, close, now)
        {
            // Sent again to the node the Location named; the request goes on.
            return;
        }
        let c = &mut self.conns[i];
        let Some(req) = c.req.take() else {
            return;
        };
        self.busy -= 1;
        c.link.served += 1;
        let quota = if status == 429 {
            c.parser.quota()
        } else {
            None
        };
        let op = &self.plan.ops[req.op];
        let ok = self
            .core
            .tally
            .judge(op, &req, status, c.parser.body(), &mut c.captures);
        if req.measured {
            let home = c.home();
            let answer = Answer {
                status,
                ok,
                quota,
                kept_alive: self.plan.load.keepalive && !close,
                body: c.parser.body(),
                body_len: c.parser.body_len(),
                server: c.parser.server(),
                home,
                by: c.link.node,
                hop: c.on_hop,
                stamp: self.core.stamp,
                sent: if self.core.tx {
                    c.tie.sent(&mut self.core)
                } else {
                    None
                },
            };
            self.core.tally.answered(op, &req, &answer, now);
        }
        self.after_response(i, quota, close, now);
    }

    /// After a response: the connection's next request, or (connection per request) its
    /// slot freed; back from a hop; re-opened when the server closes it, when the request
    /// was not all sent, or to follow the active node; made to wait by a Retry-After.
    fn after_response(&mut self, i: usize, quota: Option<Quota>, close: bool, now: Instant) {
        if !self.plan.load.keepalive {
            self.close(i);
            self.idle.push(i);
            return;
        }
        // After a hop: back to the connection's own stream (re-opened if it is gone).
        let close = if self.conns[i].on_hop {
            if self.end_hop(i, close) {
                self.reopen(i, now);
                return;
            }
            false
        } else {
            close
        };
        if close {
            self.core.tally.stats.server_closes += 1;
            self.reopen(i, now);
            return;
        }
        if self.plan.load.respect_retry_after
            && let Some(q) = quota
            && q.retry_after > 0
        {
            // --respect-retry-after: this connection waits as the quota told it to, then
            // opens again.
            let at = now + Duration::from_secs(u64::from(q.retry_after));
            self.conns[i].link.wait_until(at);
            return;
        }
        if self.conns[i].request_unsent() || self.plan.nodes.should_move(self.conns[i].link.node) {
            // (or the cluster's active node moved: this connection follows it)
            self.reopen(i, now);
            return;
        }
        self.free(i, now);
    }
}

impl<'p> Links<'p> for EventLoop<'p> {
    fn parts(&mut self, i: usize) -> (&mut link::Link, &mut Core<'p>) {
        (&mut self.conns[i].link, &mut self.core)
    }

    fn opening(&self, i: usize) -> bool {
        self.conns[i].link.opening()
    }

    /// Connection `i` to the node it goes to now (a hop's stream, if any, goes with it).
    fn open(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        c.parked = None;
        c.on_hop = false;
        let node = self.plan.nodes.pick(i + self.core.global);
        self.connect_to(i, node, false, now);
    }

    /// The request it carries (connection per request, or a re-send after a stale
    /// keep-alive connection) is written; else it takes the next.
    fn ready(&mut self, i: usize, now: Instant) {
        if self.conns[i].req.is_some() {
            self.write_request(i, now);
        } else {
            self.free(i, now);
        }
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.link.close();
        c.parked = None;
        c.on_hop = false;
    }

    /// (connection per request: its slot is free for the next one)
    fn fail_carried(&mut self, i: usize, kind: ErrorKind, msg: &str, now: Instant) -> bool {
        let carried = self.conns[i].req.is_some();
        self.fail_request(i, kind, msg, now);
        if !self.plan.load.keepalive {
            self.conns[i].link.close();
            self.idle.push(i);
        }
        carried
    }

    fn fail_due(&mut self, i: usize, due: Due, kind: ErrorKind, msg: &str, now: Instant) {
        self.claim(i, due, now);
        self.fail_request(i, kind, msg, now);
    }
}

impl<'p> Wheel<'p> for EventLoop<'p> {
    fn core(&mut self) -> &mut Core<'p> {
        &mut self.core
    }

    /// Before the first step: connection-per-request slots made free, or (keep-alive)
    /// every connection opened when the run is measured over time.
    fn open_first(&mut self, stop: &Stop, events: &mut Events) -> Result<(), EngineError> {
        if !self.plan.load.keepalive {
            self.idle.extend((0..self.conns.len()).rev());
        } else if self.plan.load.step.schedule.is_some() || self.plan.load.step.requests.is_none() {
            // Runs measured over time (and the open model's schedule) start once every
            // connection is open, like wrk2, so the measured window sees all of them at
            // work. Runs of a given count (ab's -n) open connections as they go instead,
            // each starting work as soon as it is open, and count the set-up in their time.
            link::preconnect(self, stop, events)?;
        }
        Ok(())
    }

    /// Starts due requests on free connections (or connection-per-request slots).
    fn dispatch(&mut self, now: Instant) {
        link::open_more(self, now);
        while let Some(&i) = self.idle.last() {
            let Some(due) = self.core.pacer.take_due(now) else {
                break;
            };
            self.idle.pop();
            if self.plan.load.keepalive {
                self.send(i, due, now);
            } else {
                // The request's clock starts with its connection.
                self.claim(i, due, now);
                self.open(i, now);
            }
        }
    }

    fn close_idle(&mut self) {
        while let Some(i) = self.idle.pop() {
            Links::close(self, i);
        }
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.req.is_none() && c.link.phase != LinkPhase::Unopened {
                Links::close(self, i);
            }
        }
    }

    fn settled(&self) -> bool {
        self.busy == 0
    }

    fn has_free(&self) -> bool {
        !self.idle.is_empty()
    }

    /// Periodic checks: request and connect timeouts, connections due to retry.
    fn tick(&mut self, now: Instant) {
        self.follow_route(now);
        for i in 0..self.conns.len() {
            if link::check(self, i, now)
                && let Some(outcome) = self.conns[i].timed_out(now, self.plan.load.timeout)
            {
                self.settle(i, outcome, now);
            }
        }
    }

    fn readiness(&mut self, ev: &Event, now: Instant) -> Result<(), EngineError> {
        // A connection's own stream has its index as token, its hop stream that and HOP.
        let hop = ev.token().0 & HOP != 0;
        let i = ev.token().0 & !HOP;
        if i >= self.conns.len() {
            return Ok(());
        }
        if hop != self.conns[i].on_hop {
            // The stream parked beside the one in use.
            self.parked_event(i);
            return Ok(());
        }
        let c = &mut self.conns[i];
        // `--clock kernel-tx`: an error event is most often TX stamps queued, read first
        // (the response they send may be read below); only without any is it the socket's.
        let stamps = if self.core.tx && ev.is_error() && c.link.phase == LinkPhase::Open {
            c.drain_tx()
        } else {
            0
        };
        let error = ev.is_error() && stamps == 0;
        let readable = ev.is_readable() || error || ev.is_read_closed();
        let writable = ev.is_writable() || error;
        match c.link.phase {
            LinkPhase::Connecting | LinkPhase::Handshaking if readable || writable => {
                link::advance(self, i, now)
            }
            LinkPhase::Open if c.req.is_none() && readable => self.idle_readable(i, now),
            LinkPhase::Open if c.req.is_some() => {
                let tls = c.link.stream.as_ref().is_some_and(|s| s.is_tls());
                if writable && (!c.pending.is_empty() || tls) {
                    // Continues a short write.
                    let (n, outcome) = c.continue_write();
                    if self.core.tx {
                        c.place_tie();
                    }
                    self.core.tally.stats.bytes_sent += n;
                    self.settle(i, outcome, now);
                }
                if readable && self.conns[i].busy() {
                    self.read_response(i, ev.is_read_closed(), now);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn open_count(&self) -> u64 {
        self.conns
            .iter()
            .filter(|c| c.link.stream.is_some())
            .count() as u64
    }
}
