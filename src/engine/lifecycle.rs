//! A connection's life as the event loop drives it: due requests claimed and written,
//! connects and TLS handshakes (with their timings and failures, and the backoff before a
//! retry), readiness events dispatched by phase, free connections given the next request,
//! parked or closed, and idle keep-alive connections the server closed re-opened.

use std::io;
use std::time::{Duration, Instant};

use mio::{Interest, Token};

use super::conn::ConnPhase;
use super::worker::EventLoop;
use crate::error::io_text;
use crate::net::transport::{self, Handshake};
use crate::pacing::Due;
use crate::stats::ErrorKind;

impl EventLoop<'_> {
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
        let template = self.requests.get(c.node, req.op);
        c.parser.reset(
            self.plan.ops[req.op].reads_body(),
            !template.response_has_body(),
        );
        c.phase = ConnPhase::Busy;
        // A request sent again after a redirect is the same request (the same generator
        // state and turn, so the same pool item), and its clock runs on.
        let mut again = req.rng;
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
        self.core.tally.stats.bytes_sent += n;
        self.core.tally.wrote(&req, template.body_len(&c.captures));
        self.settle(i, outcome, now);
    }

    /// Continues a short write when the socket becomes writable again.
    pub(super) fn continue_write(&mut self, i: usize, now: Instant) {
        let (n, outcome) = self.conns[i].continue_write();
        self.core.tally.stats.bytes_sent += n;
        self.settle(i, outcome, now);
    }

    /// Starts a non-blocking connect on slot `i`.
    pub(super) fn open(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        // (a hop's stream, if any, goes with the connection's own)
        c.parked = None;
        c.on_hop = false;
        let node = self.plan.nodes.pick(i + self.core.global);
        self.connect_to(i, node, false, now);
    }

    /// Starts a non-blocking connect on slot `i` to `node`: the connection's own stream,
    /// or (`hop`) a stream to the node a redirect named.
    pub(super) fn connect_to(&mut self, i: usize, node: usize, hop: bool, now: Instant) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.since = now;
        c.served = 0;
        c.pending.clear();
        let nodes = &self.plan.nodes;
        c.node = node;
        let addr = match nodes.targets.get(c.node) {
            Some(t) => t.addr(),
            None => self.plan.target.addr(),
        };
        let token = if hop { i | super::conn::HOP } else { i };
        match transport::connect_node(addr, self.tls.as_ref(), node, self.ports.as_mut()) {
            Ok(mut stream) => {
                let reg = self.core.poll.registry().register(
                    stream.tcp(),
                    Token(token),
                    Interest::READABLE | Interest::WRITABLE,
                );
                match reg {
                    Ok(()) => {
                        c.stream = Some(stream);
                        c.phase = ConnPhase::Connecting;
                    }
                    Err(e) => self.connect_failed(i, &e, now),
                }
            }
            Err(e) => self.connect_failed(i, &e, now),
        }
    }

    /// Drops the socket and opens a new one (keep-alive), keeping any claimed request.
    pub(super) fn reopen(&mut self, i: usize, now: Instant) {
        self.conns[i].stream = None;
        if self.core.ending(now) && self.conns[i].req.is_none() {
            self.conns[i].phase = ConnPhase::Unopened;
            return;
        }
        self.open(i, now);
    }

    pub(super) fn connect_failed(&mut self, i: usize, e: &io::Error, now: Instant) {
        let msg = if e.kind() == io::ErrorKind::InvalidData {
            format!("TLS handshake failed: {}", io_text(e))
        } else {
            format!("connect failed: {}", io_text(e))
        };
        self.connect_failure(i, &msg, now);
    }

    /// A connection could not be opened. The request it carried (or the next one due, so
    /// that a run against a dead server still ends, and so that in the open model a dead
    /// node's requests fail when they fall due rather than wait unsent until something
    /// answers: its unavailability window opens at once) fails as a connect error; the
    /// connection retries after a growing pause. In the open model a free connection
    /// takes the due request instead.
    pub(super) fn connect_failure(&mut self, i: usize, msg: &str, now: Instant) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.failures += 1;
        if c.req.is_none()
            && (!self.core.pacer.is_open() || self.idle.is_empty())
            && let Some(due) = self.core.pacer.take_due(now)
        {
            self.claim(i, due, now);
        }
        if self.conns[i].req.is_some() {
            self.fail_request(i, ErrorKind::Connect, msg, now);
        } else {
            self.core.tally.connection_failed(ErrorKind::Connect, msg);
        }
        let c = &mut self.conns[i];
        if !self.plan.keepalive {
            c.phase = ConnPhase::Unopened;
            self.idle.push(i);
            return;
        }
        let backoff = Duration::from_millis(10) * (1u32 << c.failures.min(7));
        c.phase = ConnPhase::Backoff;
        c.since = now + backoff.min(Duration::from_secs(1));
    }

    pub(super) fn on_event(
        &mut self,
        i: usize,
        readable: bool,
        writable: bool,
        peer_closed: bool,
        now: Instant,
    ) {
        match self.conns[i].phase {
            ConnPhase::Connecting => {
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
                        self.core.tally.stats.connect.record(took);
                        self.core.tally.stats.connections_opened += 1;
                        if c.stream.as_ref().is_some_and(|s| s.is_tls()) {
                            c.phase = ConnPhase::Handshaking;
                            self.handshake(i, now);
                        } else {
                            self.ready(i, now);
                        }
                    }
                    Ok(false) => {}
                    Err(e) => self.connect_failed(i, &e, now),
                }
            }
            ConnPhase::Handshaking => self.handshake(i, now),
            ConnPhase::Idle => {
                if readable {
                    self.idle_readable(i, now);
                }
            }
            ConnPhase::Busy => {
                if writable && (!self.conns[i].pending.is_empty() || self.is_tls(i)) {
                    self.continue_write(i, now);
                }
                if readable && self.conns[i].phase == ConnPhase::Busy {
                    self.read_response(i, peer_closed, now);
                }
            }
            ConnPhase::Unopened | ConnPhase::Backoff => {}
        }
    }

    pub(super) fn is_tls(&self, i: usize) -> bool {
        self.conns[i].stream.as_ref().is_some_and(|s| s.is_tls())
    }

    pub(super) fn handshake(&mut self, i: usize, now: Instant) {
        let Some(stream) = self.conns[i].stream.as_mut() else {
            return;
        };
        match stream.handshake() {
            Ok(Handshake::Done) => {
                self.core.tally.stats.tls_resumed += u64::from(stream.resumed());
                let took = now
                    .saturating_duration_since(self.conns[i].connected_at)
                    .as_micros() as u64;
                self.core.tally.stats.tls.record(took);
                let opening = now
                    .saturating_duration_since(self.conns[i].since)
                    .as_micros() as u64;
                self.core.tally.stats.connect_tls.record(opening);
                self.ready(i, now);
            }
            Ok(Handshake::Pending) => {}
            Err(e) => self.connect_failed(i, &e, now),
        }
    }

    /// The connection is open (and its TLS handshake done).
    pub(super) fn ready(&mut self, i: usize, now: Instant) {
        self.conns[i].failures = 0;
        self.conns[i].phase = ConnPhase::Idle;
        if self.conns[i].req.is_some() {
            // Connection per request, or a re-send after a stale keep-alive connection.
            self.write_request(i, now);
            return;
        }
        self.free(i, now);
    }

    /// Connection `i` has no request: give it the next one, park it, or close it.
    pub(super) fn free(&mut self, i: usize, now: Instant) {
        self.conns[i].phase = ConnPhase::Idle;
        if self.reserved_for_others(i) {
            // Parked until the run ends, when it is closed with the other idle ones.
            return;
        }
        if let Some(due) = self.core.pacer.take_due(now) {
            self.send(i, due, now);
        } else if self.core.ending(now) {
            self.close(i);
        } else {
            self.idle.push(i);
        }
    }

    /// Closed model with -n: the requests left are kept for connections that have not sent
    /// one yet, so that `-c 20000 -n 20000` really puts 20,000 connections to work.
    pub(super) fn reserved_for_others(&self, i: usize) -> bool {
        self.unstarted > 0
            && self.conns[i].started
            && !self.core.pacer.is_open()
            && self
                .core
                .pacer
                .remaining()
                .is_some_and(|r| r <= self.unstarted as u64)
    }

    pub(super) fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.parked = None;
        c.on_hop = false;
        c.phase = ConnPhase::Unopened;
    }

    pub(super) fn close_idle(&mut self) {
        while let Some(i) = self.idle.pop() {
            self.close(i);
        }
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.req.is_none() && c.phase != ConnPhase::Unopened {
                self.close(i);
            }
        }
    }

    /// Data or EOF on a connection with no request: the server closed an idle keep-alive
    /// connection. It is re-opened transparently.
    pub(super) fn idle_readable(&mut self, i: usize, now: Instant) {
        let Some(stream) = self.conns[i].stream.as_mut() else {
            return;
        };
        match stream.read(&mut self.buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            _ => {}
        }
        self.core.tally.stats.server_closes += 1;
        if let Some(pos) = self.idle.iter().position(|&x| x == i) {
            self.idle.swap_remove(pos);
        }
        self.conns[i].stream = None;
        self.open(i, now);
    }
}
