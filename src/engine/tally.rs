//! What an event-loop thread counts, whichever protocol it speaks: its statistics for the
//! step under way (`Counter`), with the one way a request's answer is judged (status, value
//! captured, expectation), a response counted (status per operation, bytes, latency,
//! kind, timeline, node, windows), a failure counted (kind, message, status 0), a
//! connection that failed no request counted apart (kind, message), the
//! warm-up forgotten, progress sent and a step's figures handed over. HTTP/1.1
//! (`worker.rs`) and HTTP/2 (`h2.rs`) call these and nothing else, so that both report
//! the same figures for the same work.

use std::time::{Duration, Instant};

use super::conn::Req;
use super::{EnginePlan, StepPlan, Totals};
use crate::net::http::Quota;
use crate::net::redirect::{MAX_HOPS, Redirects, TOO_MANY, Verdict, request_target};
use crate::net::stamp::Clock;
use crate::pacing::{Due, Pacer, share};
use crate::stats::clock::{ClockFigures, TxSend};
use crate::stats::nodes::{NodeStats, WindowTracker};
use crate::stats::{ErrorKind, LATE_US, Stats};
use crate::template::Captures;
use crate::workload::Operation;

/// A whole response, as the event loop judged it, with what is counted of it.
pub(super) struct Answer<'a> {
    pub(super) status: u16,
    pub(super) ok: bool,
    /// A rate-limit quota's 429.
    pub(super) quota: Option<Quota>,
    /// The connection carries another request after this one (ab's keep-alive count).
    pub(super) kept_alive: bool,
    /// The body as read (empty when the operation does not read bodies).
    pub(super) body: &'a [u8],
    /// The body's length as received.
    pub(super) body_len: u64,
    /// The `Server` header, when known.
    pub(super) server: Option<&'a str>,
    /// The node the request counts for, and the one that answered.
    pub(super) home: usize,
    pub(super) by: usize,
    /// The answer came from a redirect's hop to another node.
    pub(super) hop: bool,
    /// `--clock kernel`: the kernel's stamp of the read that completed the answer.
    pub(super) stamp: Option<Instant>,
    /// `--clock kernel-tx`: the kernel's TX stamp of the request's last byte, if one was
    /// tied (`sendtie.rs`).
    pub(super) sent: Option<Instant>,
}

/// One thread's counts for the step under way.
pub(super) struct Counter {
    pub(super) stats: Stats,
    /// Responses by status code (folded into `stats.status` at the step's end).
    status: Box<[u64; 1000]>,
    /// Several nodes: the window of failures this thread has open.
    windows: WindowTracker,
    /// Where the step's measured window begins.
    measure_from: Instant,
    /// HTTP/2: the streams asked per connection (its figures start from it).
    streams: Option<u32>,
    /// `--clock kernel`: the empty figures each step's statistics start with.
    clock: Option<ClockFigures>,
    /// Where this thread's progress goes: its local index and the channel.
    pub(super) report: Option<(usize, crossbeam_channel::Sender<(usize, Totals)>)>,
    /// This thread has sent its progress at least once.
    reported: bool,
    /// `--follow-redirects`: why the redirect just judged was not followed, the message
    /// of its answer when that answer fails (taken by `answered`).
    refused: Option<&'static str>,
}

/// One measured answer on the kernel's clock: ended by its RX stamp (none: by the
/// user-space clock, counted apart), sent at its TX stamp with `--clock kernel-tx` (none
/// tied: the user-space send, counted apart; a TX stamp after the RX end is counted and
/// its service time is 0).
#[inline]
fn record_kernel(c: &mut ClockFigures, req: &Req, a: &Answer<'_>, now: Instant) {
    let end = a.stamp.unwrap_or(now);
    let delay = a
        .stamp
        .map(|t| now.saturating_duration_since(t).as_micros() as u64);
    let send = match (c.used, a.sent) {
        (Clock::KernelTx, Some(t)) if a.stamp.is_some_and(|e| t > e) => TxSend::AfterEnd,
        (Clock::KernelTx, Some(_)) => TxSend::Stamped,
        (Clock::KernelTx, None) => TxSend::FellBack,
        _ => TxSend::NotAsked,
    };
    let sent = a.sent.unwrap_or(req.sent);
    c.record(
        req.op,
        end.saturating_duration_since(req.intended).as_micros() as u64,
        end.saturating_duration_since(sent).as_micros() as u64,
        delay,
        send,
    );
}

/// A thread's empty statistics for `plan` (one per node when several nodes are given;
/// HTTP/2's figures with the streams asked).
fn fresh_stats(plan: &EnginePlan, streams: Option<u32>, clock: Option<&ClockFigures>) -> Stats {
    let mut s = Stats::new(plan.ops.len());
    s.clock = clock.cloned();
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
    if let Some(n) = streams {
        s.http2.streams_asked = u64::from(n);
        s.http2.streams_allowed = u64::from(n);
    }
    s
}

/// The pacer of one step of thread `global` from `origin`: its share of the step's
/// requests, its deadline, its schedule (open model) or none (closed model).
pub(super) fn make_pacer(
    plan: &EnginePlan,
    step: &StepPlan,
    global: usize,
    origin: Instant,
) -> Pacer {
    let (slot, slots) = plan.slot(global);
    let budget = step.requests.map(|n| share(n, slots, slot));
    let deadline = step.duration.map(|d| origin + step.warmup + d);
    match &step.schedule {
        Some(schedule) => Pacer::open(origin, step.warmup, deadline, budget, schedule, slot, slots),
        None => Pacer::closed(origin, step.warmup, deadline, budget),
    }
}

impl Counter {
    pub(super) fn new(plan: &EnginePlan, now: Instant) -> Counter {
        let streams = plan.load.http2.map(|h| h.streams);
        Counter {
            stats: fresh_stats(plan, streams, None),
            status: Box::new([0; 1000]),
            windows: WindowTracker::default(),
            measure_from: now,
            streams,
            clock: None,
            report: None,
            reported: false,
            refused: None,
        }
    }

    /// `--clock kernel` (`used`: the clock the run got; `refused`: why not the kernel's;
    /// `send_refused`: why not its TX stamps): the figures of both clocks are kept from
    /// now on, run-wide and per operation (allocated here, once).
    pub(super) fn keep_clock(
        &mut self,
        used: Clock,
        refused: Option<String>,
        send_refused: Option<String>,
    ) {
        let figures = ClockFigures::new(used, refused, send_refused, self.stats.ops.len());
        self.stats.clock = Some(figures.clone());
        self.clock = Some(figures);
    }

    /// A step begins: its measured window from `measure_from`.
    pub(super) fn start(&mut self, measure_from: Instant) {
        self.measure_from = measure_from;
    }

    /// End of warm-up: connection figures gathered so far are left out as well.
    pub(super) fn forget_warmup(&mut self) {
        let s = &mut self.stats;
        s.connect.reset();
        s.tls.reset();
        s.tls_resumed = 0;
        s.connections_opened = 0;
        s.server_closes = 0;
        s.bytes_sent = 0;
        s.bytes_received = 0;
        s.connection_failures = Default::default();
    }

    /// A due request claimed at `now`: how late it went out, when measured.
    #[inline]
    pub(super) fn claimed(&mut self, due: &Due, now: Instant) {
        if due.measured {
            let lag = now.saturating_duration_since(due.intended).as_micros() as u64;
            if lag > LATE_US {
                self.stats.late += 1;
            }
            self.stats.max_lag_us = self.stats.max_lag_us.max(lag);
        }
    }

    /// A request written for the first time: its body's bytes, when measured.
    #[inline]
    pub(super) fn wrote(&mut self, req: &Req, body_len: u64) {
        if req.measured && req.hops == 0 && !req.resent {
            self.stats.ops[req.op].body_out += body_len;
        }
    }

    /// The first bytes of `req`'s answer came at `at`: its wait (ab's "Waiting"), and
    /// the time to first byte of a connection's first request (`first`).
    #[inline]
    pub(super) fn first_byte(&mut self, req: &Req, first: bool, at: Instant) {
        if req.measured && req.hops == 0 {
            let us = at.saturating_duration_since(req.sent).as_micros() as u64;
            self.stats.waiting.record(us);
            if first {
                self.stats.ttfb.record(us);
            }
        }
    }

    /// Whether the answer `status` (with `body`) to `req` is a success: its status, then
    /// the value it must capture (into `captures`) and what it is expected to hold, each
    /// counted as a read error when missing. The value a request consumes is cleared.
    pub(super) fn judge(
        &mut self,
        op: &Operation,
        req: &Req,
        status: u16,
        body: &[u8],
        captures: &mut Captures,
    ) -> bool {
        let mut ok = op.is_success(status);
        if ok && let Some(cap) = &op.capture {
            match crate::capture::find_string(body, &cap.path) {
                Some(v) => captures.set(cap.slot, v),
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
            && let Some(msg) = expect.check(body)
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
            captures.clear_slot(slot);
        }
        ok
    }

    /// Counts a measured response at `now`: its status (per operation too), bytes,
    /// latency and service time, its kind (success, throttled by a quota, failed status),
    /// the timeline, its node and windows, and ab's facts.
    pub(super) fn answered(&mut self, op: &Operation, req: &Req, a: &Answer<'_>, now: Instant) {
        let status = a.status;
        if let Some(n) = self.status.get_mut(status as usize) {
            *n += 1;
        }
        let latency = now.saturating_duration_since(req.intended).as_micros() as u64;
        let service = now.saturating_duration_since(req.sent).as_micros() as u64;
        let s = &mut self.stats;
        let o = &mut s.ops[req.op];
        o.requests += 1;
        o.status.add(status, 1);
        o.body_in += a.body_len;
        o.latency.record(latency);
        o.service.record(service);
        let status_failed = !a.ok && !op.is_success(status);
        let refused = self.refused.take();
        if a.ok {
            o.ok += 1;
        } else if !status_failed {
            // Counted by `judge`: no value to capture, or not what was expected.
        } else if let Some(q) = a.quota {
            // A rate-limit quota's 429: throttled, counted apart from the errors.
            s.throttled += 1;
            s.retry_after_s = s.retry_after_s.max(u64::from(q.retry_after));
            s.ratelimit_limit = s.ratelimit_limit.max(u64::from(q.limit));
            s.note_op(req.op, crate::stats::THROTTLED_MESSAGE);
        } else {
            s.errors.status += 1;
            // One message per failed request: a redirect's reason for not being
            // followed, or its status.
            let mut buf = [0; 8];
            let msg = refused.unwrap_or_else(|| crate::stats::status_message(status, &mut buf));
            s.note_op(req.op, msg);
        }
        let since = now.saturating_duration_since(self.measure_from);
        s.timeline.record(since.as_secs(), a.ok, Some(latency));
        s.timeline.record_service(service);
        s.blocks.record(since.as_millis() as u64, latency);
        let redirect = matches!(status, 307 | 308);
        s.redirects += u64::from(redirect);
        if status_failed && a.quota.is_none() {
            s.note_failed_answer(status, a.body);
        }
        s.count_body(a.body_len, a.kept_alive);
        if let Some(c) = s.clock.as_mut()
            && c.used.is_kernel()
        {
            record_kernel(c, req, a, now);
        }
        if s.server.is_none() {
            s.server = a.server.map(str::to_string);
        }
        self.count_node(req, a, latency, since);
    }

    /// Several nodes: the request counts for the node it was sent to; its answer (a
    /// hop's, or a redirect), for the node that gave it; and the node's failure windows.
    fn count_node(&mut self, req: &Req, a: &Answer<'_>, latency: u64, since: Duration) {
        let s = &mut self.stats;
        if let Some(n) = s.nodes.get_mut(a.by) {
            n.hops += u64::from(req.hops > 0 && a.hop);
            n.redirects += u64::from(matches!(a.status, 307 | 308));
        }
        if let Some(n) = s.nodes.get_mut(a.home) {
            n.requests += 1;
            n.latency.record(latency);
            n.throttled += u64::from(a.quota.is_some());
            let at = since.as_secs_f64();
            let sent = req
                .sent
                .saturating_duration_since(self.measure_from)
                .as_secs_f64();
            if a.ok {
                n.ok += 1;
                if let Some(w) = self.windows.ok(at, sent, a.home) {
                    s.windows.push(w);
                }
            } else if a.quota.is_none() {
                // (a throttled answer is the quota at work, not unavailability)
                self.windows.failed(at, sent);
            }
        }
    }

    /// `--follow-redirects`: a 307/308 to `req` from `node` whose Location is `location`,
    /// judged against the request as it went out (`template`, rendered again from its
    /// generator's state and turn with `captures`): the node to send it to, counted as
    /// followed, or None (the redirect is its answer; why noted).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn follow(
        &mut self,
        redirects: &Redirects,
        template: &mut crate::template::Template,
        captures: &Captures,
        req: &Req,
        location: &[u8],
        node: usize,
    ) -> Option<usize> {
        let verdict = if req.hops >= MAX_HOPS {
            Verdict::Refused(TOO_MANY)
        } else {
            let mut rng = req.rng;
            let sent = template.render_at(&mut rng, req.turn, captures);
            redirects.judge(location, node, request_target(sent))
        };
        match verdict {
            Verdict::Node(to) => {
                if req.measured {
                    let s = &mut self.stats;
                    s.redirects += 1;
                    s.followed += 1;
                    if let Some(n) = s.nodes.get_mut(node) {
                        n.redirects += 1;
                        n.followed += 1;
                    }
                }
                Some(to)
            }
            Verdict::Refused(why) => {
                // The message of the answer, when it fails (`answered`).
                self.refused = req.measured.then_some(why);
                None
            }
        }
    }

    /// Counts a request that got no answer (`kind`, `msg`, status 0), when measured;
    /// `home`: the node it counts for.
    pub(super) fn failed(
        &mut self,
        req: &Req,
        home: usize,
        kind: ErrorKind,
        msg: &str,
        now: Instant,
    ) {
        if !req.measured {
            return;
        }
        let s = &mut self.stats;
        s.ops[req.op].requests += 1;
        s.ops[req.op].status.add(0, 1);
        s.count_error(kind);
        s.note_op(req.op, msg);
        let since = now.saturating_duration_since(self.measure_from);
        s.timeline.record(since.as_secs(), false, None);
        if let Some(n) = s.nodes.get_mut(home) {
            n.requests += 1;
            let sent = req.sent.saturating_duration_since(self.measure_from);
            self.windows.failed(since.as_secs_f64(), sent.as_secs_f64());
        }
    }

    /// A connection failed with no request failing with it (`kind`, `msg`): a connect
    /// refused while re-opening, an HTTP/2 connection error before any stream. Counted
    /// apart from the failed requests, whose kinds and messages each sum to them; HTTP/1.1
    /// and HTTP/2 both count it here.
    pub(super) fn connection_failed(&mut self, kind: ErrorKind, msg: &str) {
        self.stats.connection_failures.count(kind, msg, 1);
    }

    /// Sends this thread's running totals (`open`: its connections open now), if anyone
    /// listens; a full channel means the display is behind, and this report is skipped.
    pub(super) fn send_progress(&mut self, open: u64) {
        if let Some((thread, tx)) = &self.report {
            self.reported = true;
            // Once a second, off the request path (src/metrics.rs).
            let ops = crate::stats::figures::OpFigures::of(&self.stats);
            let p = Totals {
                reported: true,
                requests: self.stats.requests(),
                ok: self.stats.ok(),
                more: crate::stats::figures::Figures::with_ops(
                    &self.stats,
                    &self.status[..],
                    open,
                    &ops,
                ),
                ops,
            };
            let _ = tx.try_send((*thread, p));
        }
    }

    /// Whether this thread has sent its progress at least once.
    pub(super) fn reported(&self) -> bool {
        self.reported
    }

    /// The step's figures, ended at `end` (`stopped`: the run was stopped early); the
    /// counts start afresh for the next step.
    pub(super) fn take(
        &mut self,
        plan: &EnginePlan,
        pacer: &Pacer,
        end: Instant,
        stopped: bool,
    ) -> Stats {
        let mut fresh = fresh_stats(plan, self.streams, self.clock.as_ref());
        // HTTP/2: what the servers allowed holds for the connections the next step keeps.
        fresh.http2.streams_allowed = self.stats.http2.streams_allowed;
        fresh.http2.server_limit = self.stats.http2.server_limit;
        let mut stats = std::mem::replace(&mut self.stats, fresh);
        stats.note_unsent(pacer.unsent_waits(end));
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
        let end = match pacer.window_end() {
            Some(w) if !stopped => end.max(w),
            _ => end,
        };
        stats.elapsed_s = end
            .saturating_duration_since(self.measure_from)
            .as_secs_f64();
        for n in stats.nodes.iter_mut().filter(|n| n.requests > 0) {
            n.elapsed_s = stats.elapsed_s;
        }
        stats
    }
}
