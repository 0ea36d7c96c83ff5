//! The event loop's handling of what its connections came to: `settle` acts on each
//! `Exchange` (conn.rs); a whole response is judged (status, capture, expectation),
//! counted when measured (status, latency, kind, timeline, node, ab's facts) and its
//! connection given its next request, re-opened or made to wait; a failed request is
//! counted and its connection started over.

use std::time::{Duration, Instant};

use super::conn::{ConnPhase, Exchange};
use super::tally::Answer;
use super::worker::EventLoop;
use crate::net::http::Quota;
use crate::stats::ErrorKind;

impl EventLoop<'_> {
    /// Acts on what a connection step came to.
    pub(super) fn settle(&mut self, i: usize, outcome: Exchange, now: Instant) {
        match outcome {
            Exchange::Pending => {}
            Exchange::Done { status, close } => self.complete(i, status, close, now),
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
            let first = c.served == 0 || !self.plan.keepalive;
            self.core.tally.first_byte(&req, first, now);
        }
        if r.extra {
            // Bytes nobody asked for: this connection cannot be trusted.
            self.core
                .tally
                .connection_failed(ErrorKind::Read, "server sent data after the response");
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
                kept_alive: self.plan.keepalive && !close,
                body: c.parser.body(),
                body_len: c.parser.body_len(),
                server: c.parser.server(),
                home,
                by: c.node,
                hop: c.on_hop,
            };
            self.core.tally.answered(op, &req, &answer, now);
        }
        self.after_response(i, quota, close, now);
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
            self.core.tally.stats.server_closes += 1;
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
