//! One connection's state machine: its phase (connecting, TLS handshake, idle, busy,
//! backing off) and the request it carries. The connection's own steps (writing a request,
//! reading a response, noticing a timeout) touch only the connection and return an
//! `Exchange`; the worker (the one owner of statistics, the pacer and the idle list) acts
//! on it in `settle` and the handlers below, as wrk's small handlers do.

use std::io;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use mio::{Interest, Token};

use super::worker::EventLoop;
use crate::http::{Progress, ResponseParser};
use crate::pacing::Due;
use crate::stats::{ErrorKind, LATE_US};
use crate::template::{Captures, Rng};
use crate::transport::{self, Handshake, Stream, io_error_text};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
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
pub(super) struct Req {
    pub(super) op: usize,
    pub(super) intended: Instant,
    pub(super) sent: Instant,
    pub(super) measured: bool,
    /// Already re-sent once on a fresh connection after a stale keep-alive one failed.
    pub(super) resent: bool,
    /// Response bytes have begun to arrive.
    pub(super) started: bool,
    /// Redirects followed so far (`--follow-redirects`).
    pub(super) hops: u8,
    /// The generator's state when the request was first rendered: a request sent again
    /// after a redirect is rendered from it, so it is the same request.
    pub(super) rng: Rng,
    /// Its turn (`Template::next_turn`), kept for the same reason: the same pool item.
    pub(super) turn: u64,
}

pub(super) struct Conn {
    pub(super) stream: Option<Stream>,
    pub(super) phase: Phase,
    pub(super) req: Option<Req>,
    /// When the current connect attempt (or backoff) began / ends.
    pub(super) since: Instant,
    /// When the TCP connection was established (start of the TLS handshake).
    pub(super) connected_at: Instant,
    /// Requests completed on this connection.
    pub(super) served: u32,
    /// Consecutive failed connects.
    pub(super) failures: u32,
    /// Has carried a request (of this run).
    pub(super) started: bool,
    /// Unwritten request bytes after a short write.
    pub(super) pending: BytesMut,
    pub(super) parser: ResponseParser,
    /// Values captured from this connection's responses (empty when no operation captures).
    pub(super) captures: Captures,
    /// The node (of several) this connection is open to.
    pub(super) node: usize,
    /// `--follow-redirects` (src/engine/hop.rs): the connection's other stream, kept
    /// alive, and its node: the hop's to another node while `stream` is the connection's
    /// own, the connection's own while `stream` carries a request to another node
    /// (`on_hop`). A hop stream is registered under `Token(i | HOP)`.
    pub(super) parked: Option<Stream>,
    pub(super) parked_node: usize,
    pub(super) parked_served: u32,
    pub(super) on_hop: bool,
}

/// What a step on one connection came to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Exchange {
    /// Nothing final yet: more response bytes to come, or a write to finish.
    Pending,
    /// The whole response is in; `close`: the connection cannot carry another request.
    Done { status: u16, close: bool },
    /// The request failed; the connection is finished with.
    Failed { kind: ErrorKind, msg: String },
    /// A reused keep-alive connection turned out closed before the request reached the
    /// server: the request goes out once more on a fresh connection.
    Resend,
}

/// What reading from a connection came to, with what the worker counts.
#[derive(Debug)]
pub(super) struct Received {
    pub(super) outcome: Exchange,
    pub(super) bytes: u64,
    /// The first byte of this request's response arrived in this read.
    pub(super) first_byte: bool,
    /// The server sent bytes after the response that nobody asked for.
    pub(super) extra: bool,
}

impl Conn {
    pub(super) fn new(now: Instant, captures: Captures) -> Conn {
        Conn {
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
            captures,
            node: 0,
            parked: None,
            parked_node: 0,
            parked_served: 0,
            on_hop: false,
        }
    }

    /// The node this connection belongs to (its own stream's, also while on a hop).
    pub(super) fn home(&self) -> usize {
        if self.on_hop {
            self.parked_node
        } else {
            self.node
        }
    }

    /// Writes a rendered request; returns the bytes written and the outcome.
    pub(super) fn write(&mut self, bytes: &[u8]) -> (u64, Exchange) {
        let Some(stream) = self.stream.as_mut() else {
            return (0, Exchange::Pending);
        };
        match stream.write(bytes).and_then(|n| stream.flush().map(|_| n)) {
            Ok(n) => {
                if n < bytes.len() {
                    self.pending.clear();
                    self.pending.extend_from_slice(&bytes[n..]);
                }
                (n as u64, Exchange::Pending)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.pending.clear();
                self.pending.extend_from_slice(bytes);
                (0, Exchange::Pending)
            }
            Err(e) => (0, self.write_failed(&e)),
        }
    }

    /// Continues a short write when the socket becomes writable again.
    pub(super) fn continue_write(&mut self) -> (u64, Exchange) {
        let Some(stream) = self.stream.as_mut() else {
            return (0, Exchange::Pending);
        };
        if self.pending.is_empty() {
            return match stream.flush() {
                Ok(_) => (0, Exchange::Pending),
                Err(e) => (0, self.write_failed(&e)),
            };
        }
        match stream
            .write(&self.pending)
            .and_then(|n| stream.flush().map(|_| n))
        {
            Ok(n) => {
                self.pending.advance(n);
                (n as u64, Exchange::Pending)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => (0, Exchange::Pending),
            Err(e) => (0, self.write_failed(&e)),
        }
    }

    /// A write failed: on a reused keep-alive connection the server most likely closed it
    /// between responses, so the request goes out once more on a fresh connection.
    fn write_failed(&mut self, e: &io::Error) -> Exchange {
        let reused = self.served > 0;
        match self.req.as_mut() {
            Some(r) if reused && !r.resent => {
                r.resent = true;
                Exchange::Resend
            }
            _ => Exchange::Failed {
                kind: ErrorKind::Write,
                msg: format!("write failed: {}", io_error_text(e)),
            },
        }
    }

    /// Reads what the socket holds and feeds the response parser.
    pub(super) fn read(&mut self, buf: &mut [u8], peer_closed: bool) -> Received {
        let mut r = Received {
            outcome: Exchange::Pending,
            bytes: 0,
            first_byte: false,
            extra: false,
        };
        loop {
            let Some(stream) = self.stream.as_mut() else {
                return r;
            };
            // TLS without close_notify: an end that cannot complete a close-delimited body.
            let (read, clean) = match stream.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => (Ok((0, true)), false),
                other => (other, true),
            };
            match read {
                Ok((0, _)) => {
                    r.outcome = match self.parser.eof() {
                        Some(Progress::Done { status, .. }) if clean => Exchange::Done {
                            status,
                            close: true,
                        },
                        Some(_) => Exchange::Failed {
                            kind: ErrorKind::Read,
                            msg: "server closed the connection without TLS close_notify: the response may be truncated".into(),
                        },
                        _ => self.closed_early(peer_closed),
                    };
                    return r;
                }
                Ok((n, drained)) => {
                    r.bytes += n as u64;
                    if let Some(req) = self.req.as_mut()
                        && !req.started
                    {
                        req.started = true;
                        r.first_byte = true;
                    }
                    match self.parser.feed(&buf[..n]) {
                        Ok(Progress::More) => {
                            if drained && !peer_closed {
                                return r;
                            }
                        }
                        Ok(Progress::Done {
                            status,
                            close,
                            extra,
                        }) => {
                            r.extra = extra;
                            r.outcome = Exchange::Done {
                                status,
                                close: close || extra || peer_closed,
                            };
                            return r;
                        }
                        Err(e) => {
                            r.outcome = Exchange::Failed {
                                kind: ErrorKind::Read,
                                msg: format!("bad response: {}", e.0),
                            };
                            return r;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let msg = if e.kind() == io::ErrorKind::InvalidData {
                        format!("TLS error: {}", io_error_text(&e))
                    } else {
                        format!("read failed: {}", io_error_text(&e))
                    };
                    r.outcome = Exchange::Failed {
                        kind: ErrorKind::Read,
                        msg,
                    };
                    return r;
                }
            }
        }
    }

    /// The server closed the connection before the response was complete.
    fn closed_early(&mut self, peer_closed: bool) -> Exchange {
        let reused = self.served > 0;
        let started = self.req.is_some_and(|r| r.started);
        match self.req.as_mut() {
            // A keep-alive connection that the server had already closed: the request
            // never reached it.
            Some(r) if !started && reused && !r.resent && peer_closed => {
                r.resent = true;
                Exchange::Resend
            }
            _ => Exchange::Failed {
                kind: ErrorKind::Read,
                msg: if started {
                    "server closed the connection mid-response"
                } else {
                    "server closed the connection without responding"
                }
                .into(),
            },
        }
    }

    /// The server answered before reading the whole request (a 413, say): the rest of it
    /// would reach the server as the start of the next one, so the connection must go.
    pub(super) fn request_unsent(&self) -> bool {
        !self.pending.is_empty() || self.stream.as_ref().is_some_and(|s| !s.all_sent())
    }

    /// The request has waited `timeout` for its response.
    pub(super) fn timed_out(&self, now: Instant, timeout: Duration) -> Option<Exchange> {
        let r = self.req?;
        (self.phase == Phase::Busy && now.saturating_duration_since(r.sent) >= timeout).then(|| {
            Exchange::Failed {
                kind: ErrorKind::Timeout,
                msg: format!(
                    "no response within {}",
                    crate::units::show_duration(timeout)
                ),
            }
        })
    }
}

impl EventLoop<'_> {
    /// Acts on what a connection step came to.
    pub(super) fn settle(&mut self, i: usize, outcome: Exchange, now: Instant) {
        match outcome {
            Exchange::Pending => {}
            Exchange::Done { status, close } => self.complete(i, status, close, now),
            Exchange::Failed { kind, msg } => self.fail(i, kind, &msg, now),
            Exchange::Resend => {
                self.stats.server_closes += 1;
                self.reopen(i, now);
            }
        }
    }

    pub(super) fn claim(&mut self, i: usize, due: Due, now: Instant) {
        let mut op = self.picker.pick(&mut self.rng);
        if let Some(slot) = self.plan.ops[op].needs
            && self.conns[i].captures.get(slot).is_none()
        {
            // Nothing captured yet on this connection: the operation that captures it first.
            op = self.producers[op];
        }
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
            hops: 0,
            rng: self.rng,
            turn: 0,
        });
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
        c.phase = Phase::Busy;
        // A request sent again after a redirect is the same request (the same generator
        // state and turn, so the same pool item), and its clock runs on.
        let mut again = req.rng;
        let rng = if req.hops == 0 {
            req.sent = now;
            req.rng = self.rng;
            req.turn = template.next_turn();
            &mut self.rng
        } else {
            &mut again
        };
        let turn = req.turn;
        let (n, outcome) = c.write(template.render_at(rng, turn, &c.captures));
        self.stats.bytes_sent += n;
        self.settle(i, outcome, now);
    }

    /// Continues a short write when the socket becomes writable again.
    fn continue_write(&mut self, i: usize, now: Instant) {
        let (n, outcome) = self.conns[i].continue_write();
        self.stats.bytes_sent += n;
        self.settle(i, outcome, now);
    }

    /// Starts a non-blocking connect on slot `i`.
    pub(super) fn open(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        // (a hop's stream, if any, goes with the connection's own)
        c.parked = None;
        c.on_hop = false;
        let node = self.plan.nodes.pick(i + self.global);
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
        let token = if hop { i | super::hop::HOP } else { i };
        match transport::connect_node(addr, self.tls.as_ref(), node, self.ports.as_mut()) {
            Ok(mut stream) => {
                let reg = self.poll.registry().register(
                    stream.tcp(),
                    Token(token),
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
        if self.ending(now) && self.conns[i].req.is_none() {
            self.conns[i].phase = Phase::Unopened;
            return;
        }
        self.open(i, now);
    }

    fn connect_failed(&mut self, i: usize, e: &io::Error, now: Instant) {
        let msg = if e.kind() == io::ErrorKind::InvalidData {
            format!("TLS handshake failed: {}", io_error_text(e))
        } else {
            format!("connect failed: {}", io_error_text(e))
        };
        self.connect_failure(i, &msg, now);
    }

    /// A connection could not be opened. The request it carried (or, in the closed model,
    /// the next one, so that a run against a dead server still ends) fails as a connect
    /// error; the connection retries after a growing pause.
    pub(super) fn connect_failure(&mut self, i: usize, msg: &str, now: Instant) {
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
            let since = now.saturating_duration_since(self.pacer.measure_from());
            s.timeline.record(since.as_secs(), false, None);
            let node = self.conns[i].home();
            if let Some(n) = s.nodes.get_mut(node) {
                n.requests += 1;
                let sent = req
                    .sent
                    .saturating_duration_since(self.pacer.measure_from());
                self.windows.failed(since.as_secs_f64(), sent.as_secs_f64());
            }
        }
    }

    /// A request failed after its connection was open: count it, then start over on a new
    /// connection.
    pub(super) fn fail(&mut self, i: usize, kind: ErrorKind, msg: &str, now: Instant) {
        self.fail_request(i, kind, msg, now);
        self.conns[i].stream = None;
        if self.plan.keepalive {
            self.reopen(i, now);
        } else {
            self.conns[i].phase = Phase::Unopened;
            self.idle.push(i);
        }
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
        } else if self.ending(now) {
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

    pub(super) fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.stream = None;
        c.parked = None;
        c.on_hop = false;
        c.phase = Phase::Unopened;
    }

    pub(super) fn close_idle(&mut self) {
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
        let r = self.conns[i].read(&mut self.buf, peer_closed);
        self.stats.bytes_received += r.bytes;
        let c = &self.conns[i];
        if r.first_byte
            && let Some(req) = c.req
            && req.measured
            && req.hops == 0
        {
            // Every request's wait for its first byte (ab's "Waiting"); ttfb is that of
            // each connection's first request (or of every one without keep-alive).
            let us = now.saturating_duration_since(req.sent).as_micros() as u64;
            self.stats.waiting.record(us);
            if c.served == 0 || !self.plan.keepalive {
                self.stats.ttfb.record(us);
            }
        }
        if r.extra {
            // Bytes nobody asked for: this connection cannot be trusted.
            self.stats.note("server sent data after the response", 1);
        }
        self.settle(i, r.outcome, now);
    }

    /// A whole response arrived on `i`.
    fn complete(&mut self, i: usize, status: u16, close: bool, now: Instant) {
        if matches!(status, 307 | 308) && self.redirects.is_some() && self.follow(i, close, now) {
            // Sent again to the node the Location named; the request goes on.
            return;
        }
        let c = &mut self.conns[i];
        let Some(req) = c.req.take() else {
            return;
        };
        self.busy -= 1;
        c.served += 1;
        let quota = if status == 429 {
            c.parser.quota()
        } else {
            None
        };
        let op = &self.plan.ops[req.op];
        let mut ok = op.is_success(status);
        if ok && let Some(cap) = &op.capture {
            match crate::capture::find_string(c.parser.body(), &cap.path) {
                Some(v) => c.captures.set(cap.slot, v),
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
            && let Some(msg) = expect.check(c.parser.body())
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
            c.captures.clear_slot(slot);
        }
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
            } else if op.is_success(status) {
                // Counted above as a response without the value to capture or expected.
            } else if let Some(q) = quota {
                // A rate-limit quota's 429: throttled, counted apart from the errors.
                s.throttled += 1;
                s.retry_after_s = s.retry_after_s.max(u64::from(q.retry_after));
                s.ratelimit_limit = s.ratelimit_limit.max(u64::from(q.limit));
            } else {
                s.errors.status += 1;
            }
            let sec = now
                .saturating_duration_since(self.pacer.measure_from())
                .as_secs();
            s.timeline.record(sec, ok, Some(latency));
            s.timeline.record_service(service);
            let redirect = matches!(status, 307 | 308);
            s.redirects += u64::from(redirect);
            // The request counts for the node it was sent to; its answer (a hop's, or a
            // redirect), for the node that gave it.
            let c = &self.conns[i];
            let node = c.home();
            if let Some(n) = s.nodes.get_mut(c.node) {
                n.hops += u64::from(req.hops > 0 && c.on_hop);
                n.redirects += u64::from(redirect);
            }
            if let Some(n) = s.nodes.get_mut(node) {
                n.requests += 1;
                n.latency.record(latency);
                n.throttled += u64::from(quota.is_some());
                let at = now
                    .saturating_duration_since(self.pacer.measure_from())
                    .as_secs_f64();
                let sent = req
                    .sent
                    .saturating_duration_since(self.pacer.measure_from())
                    .as_secs_f64();
                if ok {
                    n.ok += 1;
                    if let Some(w) = self.windows.ok(at, sent, node) {
                        s.windows.push(w);
                    }
                } else if quota.is_none() {
                    // (a throttled answer is the quota at work, not unavailability)
                    self.windows.failed(at, sent);
                }
            }
            // ab's per-run facts: the first document, its length, and keep-alive reuse.
            let parser = &self.conns[i].parser;
            s.count_body(parser.body_len(), self.plan.keepalive && !close);
            if s.server.is_none() {
                s.server = parser.server().map(str::to_string);
            }
        }
        if !self.plan.keepalive {
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
            self.stats.server_closes += 1;
            self.reopen(i, now);
            return;
        }
        if self.plan.respect_retry_after
            && let Some(q) = quota
            && q.retry_after > 0
        {
            // --respect-retry-after: this connection waits as the quota told it to, then
            // opens again.
            let c = &mut self.conns[i];
            c.stream = None;
            c.phase = Phase::Backoff;
            c.since = now + Duration::from_secs(u64::from(q.retry_after));
            return;
        }
        if self.conns[i].request_unsent() || self.plan.nodes.should_move(self.conns[i].node) {
            // (or the cluster's active node moved: this connection follows it)
            self.reopen(i, now);
            return;
        }
        self.free(i, now);
    }
}

#[cfg(test)]
mod tests {
    //! The connection's own steps against a peer socket held by the test itself: no
    //! server process, every byte chosen by the test.

    use super::*;
    use std::io::{Read as _, Write as _};
    use std::net::{TcpListener, TcpStream};

    /// A connected `Conn` carrying a request, and the test's end of the socket.
    fn pair(served: u32) -> (Conn, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let now = Instant::now();
        let mut c = Conn::new(now, Captures::default());
        c.stream = Some(transport::connect(listener.local_addr().unwrap(), None, None).unwrap());
        let (peer, _) = listener.accept().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !c.stream.as_mut().unwrap().connected().unwrap_or(false) {
            assert!(Instant::now() < deadline, "no connection");
            std::thread::sleep(Duration::from_millis(1));
        }
        c.phase = Phase::Busy;
        c.served = served;
        c.req = Some(Req {
            op: 0,
            intended: now,
            sent: now,
            measured: true,
            resent: false,
            started: false,
            hops: 0,
            rng: Rng::new(1),
            turn: 0,
        });
        c.parser.reset(false, false);
        (c, peer)
    }

    /// Reads until the outcome is final or `limit` passes.
    fn read_until_final(c: &mut Conn, peer_closed: bool) -> Received {
        let mut buf = vec![0u8; 4096];
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let r = c.read(&mut buf, peer_closed);
            if r.outcome != Exchange::Pending || Instant::now() > deadline {
                return r;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";

    #[test]
    fn a_whole_response_is_done_and_counted() {
        let (mut c, mut peer) = pair(0);
        peer.write_all(OK).unwrap();
        let r = read_until_final(&mut c, false);
        assert_eq!(
            r.outcome,
            Exchange::Done {
                status: 200,
                close: false
            }
        );
        assert_eq!(r.bytes, OK.len() as u64);
        assert!(r.first_byte && !r.extra);
        assert!(!c.request_unsent());
        // Bytes after the response: done, but the connection must close.
        let (mut c, mut peer) = pair(0);
        peer.write_all(&[OK, b"HTTP/1.1 200"].concat()).unwrap();
        let r = read_until_final(&mut c, false);
        assert!(r.extra);
        assert_eq!(
            r.outcome,
            Exchange::Done {
                status: 200,
                close: true
            }
        );
    }

    #[test]
    fn a_stale_keep_alive_connection_resends_once_then_fails() {
        // Reused (served > 0), closed by the server before any response byte: resend.
        let (mut c, peer) = pair(3);
        drop(peer);
        let r = read_until_final(&mut c, true);
        assert_eq!(r.outcome, Exchange::Resend);
        assert!(c.req.unwrap().resent);
        // The same again on the re-sent request: now it is a failure.
        let (mut c2, peer) = pair(3);
        c2.req.as_mut().unwrap().resent = true;
        drop(peer);
        let r = read_until_final(&mut c2, true);
        assert!(
            matches!(&r.outcome, Exchange::Failed { kind: ErrorKind::Read, msg } if msg.contains("without responding")),
            "{r:?}"
        );
        // A fresh connection closed without a response is a failure at once.
        let (mut c3, peer) = pair(0);
        drop(peer);
        let r = read_until_final(&mut c3, true);
        assert!(
            matches!(
                r.outcome,
                Exchange::Failed {
                    kind: ErrorKind::Read,
                    ..
                }
            ),
            "{r:?}"
        );
        // Closed mid-response: a failure, never a resend.
        let (mut c4, mut peer) = pair(3);
        peer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}")
            .unwrap();
        drop(peer);
        let r = read_until_final(&mut c4, true);
        assert!(
            matches!(&r.outcome, Exchange::Failed { msg, .. } if msg.contains("mid-response")),
            "{r:?}"
        );
    }

    #[test]
    fn a_write_to_a_reused_closed_connection_resends() {
        // The first write may still be accepted by the kernel; the reset shows on a later one.
        let write_to_closed = |served| {
            let (mut c, peer) = pair(served);
            drop(peer);
            std::thread::sleep(Duration::from_millis(20));
            let mut outcome = Exchange::Pending;
            for _ in 0..100 {
                outcome = c.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").1;
                if outcome != Exchange::Pending {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            outcome
        };
        assert_eq!(write_to_closed(1), Exchange::Resend);
        // Not reused: the same failure is a write error.
        let outcome = write_to_closed(0);
        assert!(
            matches!(
                outcome,
                Exchange::Failed {
                    kind: ErrorKind::Write,
                    ..
                }
            ),
            "{outcome:?}"
        );
    }

    #[test]
    fn an_early_answer_leaves_the_request_unsent() {
        let (mut c, mut peer) = pair(0);
        // A large request the peer never reads: the kernel buffers fill, the rest waits.
        let big = vec![b'x'; 16 << 20];
        let (n, outcome) = c.write(&big);
        assert_eq!(outcome, Exchange::Pending);
        assert!(n < big.len() as u64, "the whole 16 MiB went out at once");
        assert!(c.request_unsent());
        peer.write_all(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        let r = read_until_final(&mut c, false);
        assert_eq!(
            r.outcome,
            Exchange::Done {
                status: 413,
                close: false
            }
        );
        // The worker re-opens such a connection instead of reusing it.
        assert!(c.request_unsent());
        let mut sink = [0u8; 16];
        let _ = peer.set_nonblocking(true);
        let _ = peer.read(&mut sink);
    }

    #[test]
    fn a_request_times_out_only_after_the_timeout() {
        let (c, _peer) = pair(0);
        let sent = c.req.unwrap().sent;
        let timeout = Duration::from_secs(2);
        assert_eq!(
            c.timed_out(sent + Duration::from_millis(1999), timeout),
            None
        );
        assert!(matches!(
            c.timed_out(sent + timeout, timeout),
            Some(Exchange::Failed { kind: ErrorKind::Timeout, msg }) if msg == "no response within 2s"
        ));
        // Not busy (idle, connecting): no request timeout.
        let mut idle = c;
        idle.phase = Phase::Idle;
        assert_eq!(idle.timed_out(sent + timeout, timeout), None);
    }
}
