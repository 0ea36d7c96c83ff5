//! One connection's state machine: its phase (connecting, TLS handshake, idle, busy,
//! backing off), the request it carries, and every step the worker takes on a single
//! connection: claiming and writing a request, opening and re-opening the socket,
//! handling its readiness events, reading and completing the response, and counting
//! its failures.

use std::io;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use mio::{Interest, Token};

use super::worker::Worker;
use crate::http::{Progress, ResponseParser};
use crate::pacing::Due;
use crate::stats::{ErrorKind, LATE_US};
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
}

impl Worker<'_> {
    pub(super) fn claim(&mut self, i: usize, due: Due, now: Instant) {
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
    pub(super) fn send(&mut self, i: usize, due: Due, now: Instant) {
        self.claim(i, due, now);
        self.write_request(i, now);
    }

    /// Writes the claimed request of connection `i` (which is open).
    fn write_request(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        let Some(req) = c.req.as_mut() else { return };
        req.sent = now;
        req.started = false;
        let template = &mut self.templates[req.op];
        c.parser.reset(false, !template.response_has_body());
        c.phase = Phase::Busy;
        let bytes = template.render(&mut self.rng);
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
                let msg = format!("write failed: {}", io_error_text(e));
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
    pub(super) fn open(&mut self, i: usize, now: Instant) {
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
            let sec = now
                .saturating_duration_since(self.pacer.measure_from())
                .as_secs();
            s.timeline.record(sec, false, None);
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

    pub(super) fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.stream = None;
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
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            // TLS without close_notify: an end that cannot complete a close-delimited body.
            let (read, clean) = match stream.read(&mut self.buf) {
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => (Ok((0, true)), false),
                other => (other, true),
            };
            match read {
                Ok((0, _)) => {
                    let done = c.parser.eof();
                    match done {
                        Some(Progress::Done { status, .. }) if clean => {
                            self.complete(i, status, true, now)
                        }
                        Some(_) => {
                            let msg = "server closed the connection without TLS close_notify: the response may be truncated";
                            self.fail(i, ErrorKind::Read, msg, now);
                        }
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
                        format!("TLS error: {}", io_error_text(&e))
                    } else {
                        format!("read failed: {}", io_error_text(&e))
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
        let c = &self.conns[i];
        if !c.pending.is_empty() || c.stream.as_ref().is_some_and(|s| !s.all_sent()) {
            // The server answered before reading the whole request (a 413, say): the rest
            // of it would reach the server as the start of the next one.
            self.reopen(i, now);
            return;
        }
        self.free(i, now);
    }
}
