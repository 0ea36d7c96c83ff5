//! The event loop's handling of what its connections came to: `settle` acts on each
//! `Exchange` (conn.rs); a whole response is judged (status, capture, expectation),
//! counted when measured (status, latency, kind, timeline, node, ab's facts) and its
//! connection given its next request, re-opened or made to wait; a failed request is
//! counted and its connection started over.

use std::time::{Duration, Instant};

use super::conn::{ConnPhase, Exchange, Req};
use super::worker::EventLoop;
use crate::net::http::Quota;
use crate::stats::ErrorKind;

/// A whole response, as `complete` judged it.
struct Answer {
    status: u16,
    ok: bool,
    /// A rate-limit quota's 429.
    quota: Option<Quota>,
    /// The connection cannot carry another request.
    close: bool,
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

    /// Counts the claimed request of `i` as failed.
    pub(super) fn fail_request(&mut self, i: usize, kind: ErrorKind, msg: &str, now: Instant) {
        let Some(req) = self.conns[i].req.take() else {
            return;
        };
        self.busy -= 1;
        if req.measured {
            let s = &mut self.stats;
            s.ops[req.op].requests += 1;
            s.ops[req.op].status.add(0, 1);
            s.count_error(kind);
            s.note_op(req.op, msg);
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
            self.conns[i].phase = ConnPhase::Unopened;
            self.idle.push(i);
        }
    }

    pub(super) fn read_response(&mut self, i: usize, peer_closed: bool, now: Instant) {
        let r = self.conns[i].read(&mut self.buf, peer_closed);
        self.stats.bytes_received += r.bytes;
        // A response that began in this read is timed from its first bytes' arrival (a
        // response whole in that read ends then too); a later read's time is its
        // wake-up's, which comes after.
        let now = r.first_byte.unwrap_or(now);
        let c = &self.conns[i];
        if r.first_byte.is_some()
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

    /// A whole response arrived on `i`: judged, counted (when measured), and the
    /// connection given its next request, or re-opened, or made to wait.
    pub(super) fn complete(&mut self, i: usize, status: u16, close: bool, now: Instant) {
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
        let ok = self.judge(i, &req, status);
        if req.measured {
            let answer = Answer {
                status,
                ok,
                quota,
                close,
            };
            self.count_response(i, &req, &answer, now);
        }
        self.after_response(i, quota, close, now);
    }

    /// Whether the response to `req` on `i` is a success: its status, then the value it
    /// must capture and what it is expected to hold (each counted as a read error when
    /// missing). The value a request consumes is cleared.
    fn judge(&mut self, i: usize, req: &Req, status: u16) -> bool {
        let plan = self.plan;
        let op = &plan.ops[req.op];
        let c = &mut self.conns[i];
        let mut ok = op.is_success(status);
        if ok && let Some(cap) = &op.capture {
            match crate::capture::find_string(c.parser.body(), &cap.path) {
                Some(v) => c.captures.set(cap.slot, v),
                None => {
                    ok = false;
                    if req.measured {
                        let msg = format!("response has no {}", cap.describe());
                        self.stats.note_op(req.op, &msg);
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
                self.stats.note_op(req.op, &msg);
                self.stats.errors.read += 1;
            }
        }
        if op.consumes
            && let Some(slot) = op.needs
        {
            c.captures.clear_slot(slot);
        }
        ok
    }

    /// Counts a measured response: its status, latency and service time, its kind
    /// (success, throttled, failed status), the timeline, its node, and ab's facts.
    fn count_response(&mut self, i: usize, req: &Req, answer: &Answer, now: Instant) {
        let status = answer.status;
        if let Some(n) = self.status.get_mut(status as usize) {
            *n += 1;
        }
        let latency = now.saturating_duration_since(req.intended).as_micros() as u64;
        let service = now.saturating_duration_since(req.sent).as_micros() as u64;
        let s = &mut self.stats;
        let o = &mut s.ops[req.op];
        o.requests += 1;
        o.status.add(status, 1);
        o.body_in += self.conns[i].parser.body_len();
        o.latency.record(latency);
        o.service.record(service);
        if answer.ok {
            o.ok += 1;
        } else if self.plan.ops[req.op].is_success(status) {
            // Counted by `judge` as a response without the value to capture or expected.
        } else if let Some(q) = answer.quota {
            // A rate-limit quota's 429: throttled, counted apart from the errors.
            s.throttled += 1;
            s.retry_after_s = s.retry_after_s.max(u64::from(q.retry_after));
            s.ratelimit_limit = s.ratelimit_limit.max(u64::from(q.limit));
        } else {
            s.errors.status += 1;
        }
        let since = now.saturating_duration_since(self.pacer.measure_from());
        s.timeline.record(since.as_secs(), answer.ok, Some(latency));
        s.timeline.record_service(service);
        s.blocks.record(since.as_millis() as u64, latency);
        s.redirects += u64::from(matches!(status, 307 | 308));
        self.count_node(i, req, answer, latency, now);
        // ab's per-run facts: the first document, its length, and keep-alive reuse.
        let parser = &self.conns[i].parser;
        let s = &mut self.stats;
        if !answer.ok && answer.quota.is_none() && !self.plan.ops[req.op].is_success(status) {
            s.note_failed_answer(status, parser.body());
        }
        s.count_body(parser.body_len(), self.plan.keepalive && !answer.close);
        if s.server.is_none() {
            s.server = parser.server().map(str::to_string);
        }
    }

    /// Several nodes: the request counts for the node it was sent to; its answer (a
    /// hop's, or a redirect), for the node that gave it; and the node's failure windows.
    fn count_node(&mut self, i: usize, req: &Req, answer: &Answer, latency: u64, now: Instant) {
        let s = &mut self.stats;
        let redirect = matches!(answer.status, 307 | 308);
        let c = &self.conns[i];
        let node = c.home();
        if let Some(n) = s.nodes.get_mut(c.node) {
            n.hops += u64::from(req.hops > 0 && c.on_hop);
            n.redirects += u64::from(redirect);
        }
        if let Some(n) = s.nodes.get_mut(node) {
            n.requests += 1;
            n.latency.record(latency);
            n.throttled += u64::from(answer.quota.is_some());
            let at = now
                .saturating_duration_since(self.pacer.measure_from())
                .as_secs_f64();
            let sent = req
                .sent
                .saturating_duration_since(self.pacer.measure_from())
                .as_secs_f64();
            if answer.ok {
                n.ok += 1;
                if let Some(w) = self.windows.ok(at, sent, node) {
                    s.windows.push(w);
                }
            } else if answer.quota.is_none() {
                // (a throttled answer is the quota at work, not unavailability)
                self.windows.failed(at, sent);
            }
        }
    }

    /// After a response: the connection's next request, or (connection per request) its
    /// slot freed; back from a hop; re-opened when the server closes it, when the request
    /// was not all sent, or to follow the active node; made to wait by a Retry-After.
    fn after_response(&mut self, i: usize, quota: Option<Quota>, close: bool, now: Instant) {
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
            c.phase = ConnPhase::Backoff;
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
