//! HTTP/2's share of one event-loop thread (`H2Loop`, a `Wheel` of the one driver,
//! `driver.rs`), chosen once per run (`EnginePlan::http2`), so that HTTP/1.1's connections
//! (`worker.rs`, `conn.rs`) carry no check of the protocol per request. Each connection
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

use mio::event::Event as Readiness;
use mio::{Events, Token};

use super::conn::Req;
use super::driver::{Core, Wheel, captures};
use super::link::{self, ConnectWindow, Link, LinkPhase, Links};
use super::sendtie::SendTie;
use super::tally::Answer;
use super::{EngineError, EnginePlan};
use crate::error::io_text;
use crate::net::h2::request::{self, Prepared};
use crate::net::h2::{self as wire, Event, H2Conn, Local};
use crate::net::http::Quota;
use crate::net::transport::Stream;
use crate::pacing::{Due, share};
use crate::signals::Stop;
use crate::stats::ErrorKind;
use crate::stats::http2::H2Figures;
use crate::template::{Captures, Rng};

/// One HTTP/2 connection: its socket, its protocol state and the request on each stream.
struct H2Link {
    /// Its socket and transport phase (`link.rs`); open, `proto` says the rest.
    link: Link,
    proto: H2Conn,
    reqs: Vec<Option<Req>>,
    /// Per stream: the node its request counts for (the one it was first sent to; a
    /// redirect's hop is sent on a link to another node).
    homes: Vec<usize>,
    /// How much of `proto.out` has been written.
    out_sent: usize,
    /// In the loop's list of connections with a free stream.
    listed: bool,
    /// When our last PING went out (`expire_streams`).
    ping_at: Instant,
    captures: Captures,
    /// `--respect-retry-after`: a 429's Retry-After holds new streams off until then.
    paused_until: Option<Instant>,
    /// `--clock kernel-tx`, per stream: where its request's last byte lies in the
    /// plaintext handed to the stream (`Link::handed`), until a write hands it, then its
    /// place on the wire and its TX stamp (`sendtie.rs`).
    ends: Vec<Option<u64>>,
    ties: Vec<SendTie>,
}

pub(super) struct H2Loop<'p> {
    plan: &'p EnginePlan,
    /// The pacer, counts, poll and generator the driver shares (`driver.rs`).
    pub(super) core: Core<'p>,
    links: Vec<H2Link>,
    /// Connections that may have a free stream (checked when taken).
    free: Vec<usize>,
    /// Requests a GOAWAY or REFUSED_STREAM left unprocessed, to send again first.
    again: VecDeque<Req>,
    /// `--follow-redirects`: per node, the requests a redirect sends there, with the node
    /// each counts for, for the next free stream of a link to that node.
    hops: Vec<VecDeque<(Req, usize)>>,
    busy: usize,
    /// Per (node, operation), `node * ops + op`: its header block (with that node's
    /// `:authority`) encoded once (None: it carries captured values).
    prepared: Vec<Option<Prepared>>,
    block: Vec<u8>,
    local: Local,
    https: bool,
    /// Why the run cannot go on at all (the server does not speak h2c), said once.
    fatal: Option<EngineError>,
}

/// Why `plan` cannot run over HTTP/2 (yet), in one sentence, if it cannot
/// (`net::h2::H2Refusal`, which the commands check before anything is sent).
pub(super) fn unsupported(plan: &EnginePlan) -> Option<&'static str> {
    plan.load.http2?;
    let shape = crate::net::h2::RunShape {
        tls: plan.target.is_tls(),
        keepalive: plan.load.keepalive,
        // Each shard runs an engine of its own: nothing to refuse here.
        shard: false,
    };
    crate::net::h2::H2Refusal::of(&plan.load.http2?, &shape).map(crate::net::h2::H2Refusal::message)
}

/// Per (caller, node, operation), `(caller * nodes + node) * ops + op` as the requests'
/// templates (`driver::Requests`, caller 0 the run's own; a replay's sessions each have
/// their token and namespace in theirs): the operation's header block with the node's
/// `:authority`, encoded once (None: it carries captured values, encoded per request).
fn prepare(
    plan: &EnginePlan,
    requests: &mut super::driver::Requests,
    https: bool,
) -> Vec<Option<Prepared>> {
    let mut rng = Rng::new(1);
    let mut prepared = Vec::new();
    for caller in 0..requests.callers() {
        let caller = u16::try_from(caller).unwrap_or(u16::MAX);
        for node in 0..plan.nodes.targets.len().max(1) {
            prepared.extend((0..plan.ops.len()).map(|op| {
                let t = requests.get(node, op, caller);
                if t.uses_captures() {
                    return None;
                }
                Prepared::new(t.render_at(&mut rng, 0, &Captures::default()), https)
            }));
        }
    }
    prepared
}

/// `--follow-redirects`: one queue of hops per node, with room for every stream of the
/// thread (`streams`), so that none grows while the run goes on.
fn hop_queues(plan: &EnginePlan, streams: usize) -> Vec<VecDeque<(Req, usize)>> {
    let room = if plan.load.follow_redirects {
        streams
    } else {
        0
    };
    (0..plan.nodes.targets.len().max(1))
        .map(|_| VecDeque::with_capacity(room))
        .collect()
}

impl<'p> H2Loop<'p> {
    pub(super) fn new(mut core: Core<'p>) -> Result<H2Loop<'p>, EngineError> {
        let plan = core.plan;
        let h2 = plan
            .load
            .http2
            .ok_or(EngineError::Http2Unsupported("a plan without HTTP/2"))?;
        let (slot, slots) = plan.slot(core.global);
        let mut mine = share(plan.load.connections, slots, slot);
        if let Some(n) = plan.load.step.requests {
            mine = mine.min(share(n, slots, slot).div_ceil(u64::from(h2.streams)).max(1));
        }
        let now = Instant::now();
        let local = Local {
            streams: h2.streams as usize,
            window: wire::STREAM_WINDOW,
            // A 429's quota is read where it is counted per node or obeyed.
            headers: plan.nodes.is_cluster()
                || plan.load.respect_retry_after
                || plan.load.follow_redirects,
        };
        let links = (0..mine)
            .map(|_| H2Link {
                link: Link::new(now),
                proto: H2Conn::new(local),
                reqs: vec![None; local.streams],
                homes: vec![0; local.streams],
                out_sent: 0,
                listed: false,
                ping_at: now,
                captures: captures(plan),
                paused_until: None,
                ends: vec![None; local.streams],
                ties: vec![SendTie::default(); local.streams],
            })
            .collect();
        let https = plan.target.is_tls();
        let prepared = prepare(plan, &mut core.requests, https);
        core.window = ConnectWindow::new(mine as usize);
        Ok(H2Loop {
            plan,
            core,
            links,
            free: Vec::with_capacity(mine as usize),
            again: VecDeque::with_capacity(mine as usize * local.streams),
            hops: hop_queues(plan, mine as usize * local.streams),
            busy: 0,
            prepared,
            block: Vec::with_capacity(4096),
            local,
            https,
            fatal: None,
        })
    }

    /// Writes what the connection has queued (frames of new streams, answers).
    fn flush(&mut self, i: usize, now: Instant) {
        let l = &mut self.links[i];
        let Some(stream) = l.link.stream.as_mut() else {
            return;
        };
        let mut failed = None;
        while l.out_sent < l.proto.out.len() {
            match stream.write(&l.proto.out[l.out_sent..]) {
                Ok(0) => break,
                Ok(n) => {
                    l.out_sent += n;
                    l.link.handed += n as u64;
                    self.core.tally.stats.bytes_sent += n as u64;
                    if self.core.tx {
                        place_ties(stream, l.link.handed, &mut l.ends, &mut l.ties);
                    }
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
            let Some(stream) = self.links[i].link.stream.as_mut() else {
                return;
            };
            self.core.clear_stamp();
            let read = stream.read(&mut self.core.buf);
            // (the responses this read ends are ended by its stamp)
            self.core.take_stamp();
            match read {
                Ok((0, _)) => {
                    self.core.tally.stats.server_closes += 1;
                    self.drop_link(
                        i,
                        ErrorKind::Read,
                        "server closed the connection mid-response",
                        now,
                    );
                    return;
                }
                Ok((n, drained)) => {
                    self.core.tally.stats.bytes_received += n as u64;
                    let at = Instant::now();
                    let fed = self.links[i].proto.feed(&self.core.buf[..n]);
                    self.on_events(i, at);
                    if let Err(e) = fed {
                        if e.http1 {
                            // No connection to it will speak h2c: the run ends, said once.
                            self.fatal = Some(EngineError::NoH2c {
                                addr: self.plan.target.base(),
                            });
                            self.links[i].link.close();
                            return;
                        }
                        H2Figures::count(&mut self.core.tally.stats.http2.conn_errors, e.code);
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
                            link::connection_failed(self, i, ErrorKind::Read, &msg, now);
                        }
                        return;
                    }
                    if self.links[i].proto.finished() {
                        self.flush(i, now);
                        self.core.tally.stats.server_closes += 1;
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
                    let h = &mut self.core.tally.stats.http2;
                    h.streams_allowed = h.streams_allowed.min(p.allowed() as u64);
                    h.server_limit = h.server_limit.max(u64::from(p.server_limit().unwrap_or(0)));
                    self.list(i);
                }
                Event::Response { slot, status } => {
                    self.links[i].link.answered();
                    self.complete(i, slot, status, now)
                }
                Event::Reset { slot, code } => {
                    H2Figures::count(&mut self.core.tally.stats.http2.resets, code);
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
                Event::GoAway { code, .. } => {
                    H2Figures::count(&mut self.core.tally.stats.http2.goaways, code)
                }
            }
        }
    }

    /// A request left unprocessed on link `i` goes out again, first, on the next free
    /// stream (a redirect's hop, on the next one to the same node).
    fn send_again(&mut self, i: usize, home: usize, req: Req) {
        self.core.tally.stats.http2.resent += 1;
        if req.hops > 0 {
            self.hops[self.links[i].link.node].push_back((req, home));
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
            && !self.plan.nodes.should_move(l.link.node)
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
        let op = &self.plan.ops[req.op];
        let l = &mut self.links[i];
        l.link.served += 1;
        let ok = self
            .core
            .tally
            .judge(op, &req, status, l.proto.body(slot), &mut l.captures);
        let quota = if status == 429 {
            l.proto.quota(slot)
        } else {
            None
        };
        if req.measured {
            // (its first bytes came with its end, at the latest: the frames are read whole)
            self.core.tally.first_byte(&req, l.link.served == 1, now);
            let answer = Answer {
                status,
                ok,
                quota,
                kept_alive: true,
                body: l.proto.body(slot),
                body_len: l.proto.body_len(slot),
                server: None,
                home,
                by: l.link.node,
                hop: l.link.node != home,
                stamp: self.core.stamp,
                sent: if self.core.tx {
                    l.ties[slot].sent(&mut self.core)
                } else {
                    None
                },
            };
            self.core.tally.answered(op, &req, &answer, now);
        }
        self.after_response(i, quota, now);
    }

    /// `--follow-redirects`: a 307/308 on `slot` of link `i` whose Location names a node
    /// of the target (`net::redirect` judges it, against the request as it went out):
    /// counted, and that node (the caller queues the request for it; it keeps its clock
    /// and is sent again with the same bytes but for that node's `:authority`). None: the
    /// redirect is the request's answer (why noted).
    fn follow(&mut self, i: usize, slot: usize, req: &mut Req) -> Option<usize> {
        let redirects = self.core.redirects.as_ref()?;
        let l = &self.links[i];
        let template = self.core.requests.get(l.link.node, req.op, req.caller);
        let location = l.proto.location(slot).unwrap_or(&[]);
        let node = self
            .core
            .tally
            .follow(redirects, template, &l.captures, req, location, l.link.node)
            .filter(|&n| n < self.hops.len())?;
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
        if self.plan.load.respect_retry_after
            && let Some(q) = quota
            && q.retry_after > 0
        {
            let l = &mut self.links[i];
            let until = now + Duration::from_secs(u64::from(q.retry_after));
            l.paused_until = Some(l.paused_until.map_or(until, |u| u.max(until)));
        }
        let l = &self.links[i];
        if l.proto.active() == 0 && self.plan.nodes.should_move(l.link.node) {
            self.flush(i, now);
            self.reopen(i, now);
            return;
        }
        self.list(i);
    }

    /// Counts `req` as failed (for `home`, the node it counts for, too).
    fn fail_req(&mut self, home: usize, req: Req, kind: ErrorKind, msg: &str, now: Instant) {
        self.busy -= 1;
        self.core.tally.failed(&req, home, kind, msg, now);
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
        if self.core.ending(now)
            && self.again.is_empty()
            && self.hops.iter().all(VecDeque::is_empty)
        {
            self.links[i].link.close();
            return;
        }
        self.open(i, now);
    }

    /// Whether link `i` may start a stream now: open, with room, not held off by a
    /// Retry-After, not open to a node the route has left.
    fn takes_streams(&self, i: usize) -> bool {
        let l = &self.links[i];
        l.link.phase == LinkPhase::Open
            && l.proto.can_start()
            && l.paused_until.is_none()
            && !self.plan.nodes.should_move(l.link.node)
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
                let Some((req, home)) = self.hops[self.links[i].link.node].pop_front() else {
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

    /// Renders `req` and opens its stream on link `i` (`home`: the node it counts for).
    fn start(&mut self, i: usize, mut req: Req, home: usize, now: Instant) {
        let node = self.links[i].link.node;
        let template = self.core.requests.get(node, req.op, req.caller);
        if !req.resent {
            req.rng = self.core.rng;
            req.turn = template.next_turn();
        }
        req.sent = now;
        let mut rng = req.rng;
        let l = &mut self.links[i];
        let bytes = template.render_at(&mut rng, req.turn, &l.captures);
        if !req.resent {
            self.core.rng = rng;
        }
        self.block.clear();
        let ops = self.plan.ops.len();
        let nodes = self.plan.nodes.targets.len().max(1);
        let k = (usize::from(req.caller) * nodes + node) * ops + req.op;
        let prepared = self
            .prepared
            .get(k)
            .unwrap_or_else(|| &self.prepared[node * ops + req.op]);
        let body_at = match prepared {
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
        self.core.tally.wrote(&req, template.body_len(&l.captures));
        if self.core.tx {
            // Its frames end the queue: their end, once a write hands it.
            l.ties[slot].reset();
            let queued = (l.proto.out.len() - l.out_sent) as u64;
            l.ends[slot] = l.proto.all_queued(slot).then_some(l.link.handed + queued);
        }
        l.reqs[slot] = Some(req);
        l.homes[slot] = home;
    }

    /// The cluster's active node moved: links waiting to retry try the new one at once;
    /// links open to another node, with no stream under way, re-open to it (the others
    /// start no new stream and re-open when their last one is done, `after_response`).
    fn follow_route(&mut self, now: Instant) {
        let nodes = &self.plan.nodes;
        if nodes.route.is_none() {
            return;
        }
        let moved = self.core.route_moved();
        for i in 0..self.links.len() {
            let l = &mut self.links[i];
            if !nodes.should_move(l.link.node) {
                continue;
            }
            if moved {
                l.link.retry_now(now);
            }
            // (also a link that opened to the old node after the move)
            if l.link.phase == LinkPhase::Open
                && l.proto.active() == 0
                && !self.core.pacer.finished(now)
            {
                self.reopen(i, now)
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

/// `--clock kernel-tx`, after a write: the streams whose last byte it handed are placed at
/// its end on the wire (each stream's tie then waits for that write's stamp; several
/// streams in one write share it).
fn place_ties(stream: &Stream, handed: u64, ends: &mut [Option<u64>], ties: &mut [SendTie]) {
    for (end, tie) in ends.iter_mut().zip(ties.iter_mut()) {
        if let Some(p) = *end
            && p <= handed
        {
            tie.place(stream.wire_end(handed));
            *end = None;
        }
    }
}

/// `--clock kernel-tx`: the TX stamps queued on link `l`'s socket, each offered to every
/// stream's tie (a write's stamp is the send of each stream whose last byte it carried);
/// how many were read.
fn drain_ties(l: &mut H2Link) -> usize {
    let ties = &mut l.ties;
    match l.link.stream.as_mut() {
        Some(s) => crate::net::stamp::drain_tx(s.tcp(), |count, ns| {
            for t in ties.iter_mut() {
                t.offer(count, ns);
            }
        }),
        None => 0,
    }
}

impl<'p> Wheel<'p> for H2Loop<'p> {
    fn core(&mut self) -> &mut Core<'p> {
        &mut self.core
    }

    /// Opens every connection (and waits for the servers' SETTINGS) before the clock.
    fn open_first(&mut self, stop: &Stop, events: &mut Events) -> Result<(), EngineError> {
        link::preconnect(self, stop, events)
    }

    /// Starts due requests on connections with a free stream, then writes their frames.
    fn dispatch(&mut self, now: Instant) {
        link::open_more(self, now);
        self.dispatch_hops(now);
        let mut started = 0usize;
        while let Some(&i) = self.free.last() {
            if !self.takes_streams(i) {
                self.free.pop();
                self.links[i].listed = false;
                continue;
            }
            let node = self.links[i].link.node;
            let (req, home) = match self.hops[node].pop_front() {
                Some(hop) => hop,
                None => {
                    let req = match self.again.pop_front() {
                        Some(mut r) => {
                            r.resent = true;
                            r
                        }
                        None => {
                            let Some(due) = self.core.pacer.take_due(now) else {
                                break;
                            };
                            self.core.claim(due, &self.links[i].captures, now)
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

    /// A connection's free streams cost nothing: they close with the run.
    fn close_idle(&mut self) {}

    fn settled(&self) -> bool {
        self.busy == 0 && self.again.is_empty()
    }

    fn has_free(&self) -> bool {
        !self.free.is_empty()
    }

    /// Periodic checks: request and connect timeouts, connections due to retry, the
    /// end of a Retry-After's pause, the route's active node followed.
    fn tick(&mut self, now: Instant) {
        self.follow_route(now);
        let timeout = self.plan.load.timeout;
        if self.core.redirects.is_some() {
            self.expire_hops(now, timeout);
        }
        for i in 0..self.links.len() {
            let l = &mut self.links[i];
            if l.paused_until.is_some_and(|u| now >= u) {
                l.paused_until = None;
                self.list(i);
            }
            if link::check(self, i, now) {
                self.expire_streams(i, now, timeout);
            }
        }
    }

    fn readiness(&mut self, ev: &Readiness, now: Instant) -> Result<(), EngineError> {
        let i = ev.token().0;
        match self.links.get(i).map(|l| l.link.phase) {
            Some(LinkPhase::Connecting | LinkPhase::Handshaking) => link::advance(self, i, now),
            Some(LinkPhase::Open) => {
                // `--clock kernel-tx`: an error event is most often TX stamps queued, read
                // first; only without any is it the socket's.
                let stamps = if self.core.tx && ev.is_error() {
                    drain_ties(&mut self.links[i])
                } else {
                    0
                };
                let error = ev.is_error() && stamps == 0;
                if ev.is_readable() || error || ev.is_read_closed() {
                    self.read(i, now);
                }
                self.flush(i, now);
            }
            _ => {}
        }
        // The server does not speak h2c: the run ends, said once.
        self.fatal.take().map_or(Ok(()), Err)
    }

    fn open_count(&self) -> u64 {
        self.links
            .iter()
            .filter(|c| c.link.stream.is_some())
            .count() as u64
    }
}

impl<'p> Links<'p> for H2Loop<'p> {
    fn parts(&mut self, i: usize) -> (&mut Link, &mut Core<'p>) {
        (&mut self.links[i].link, &mut self.core)
    }

    /// Connecting, handshaking, or open and waiting for the server's SETTINGS.
    fn opening(&self, i: usize) -> bool {
        let l = &self.links[i];
        l.link.opening()
            || (l.link.phase == LinkPhase::Open
                && !l.proto.can_start()
                && l.proto.active() == 0
                && !l.proto.finished())
    }

    /// Link `i`, with a fresh HTTP/2 connection, to the node it goes to now
    /// (`NodePlan::pick`: its share of `--nodes all`, or the active node), under that
    /// node's TLS name.
    fn open(&mut self, i: usize, now: Instant) {
        let node = self.plan.nodes.pick(i + self.core.global);
        let l = &mut self.links[i];
        l.proto = H2Conn::new(self.local);
        l.out_sent = 0;
        l.listed = false;
        l.paused_until = None;
        link::connect(self, i, node, Token(i), now);
    }

    /// The preface and SETTINGS go out; streams wait for the server's SETTINGS. A server
    /// sends its own as soon as it accepts (nginx does), so what is already there is read
    /// now: its readiness came with this event and will not come again (edge-triggered).
    fn ready(&mut self, i: usize, now: Instant) {
        self.flush(i, now);
        if self.links[i].link.phase == LinkPhase::Open {
            self.read(i, now);
            self.flush(i, now);
        }
    }

    fn close(&mut self, i: usize) {
        self.links[i].link.close();
    }

    fn fail_due(&mut self, i: usize, due: Due, kind: ErrorKind, msg: &str, now: Instant) {
        let req = self.core.claim(due, &self.links[i].captures, now);
        self.busy += 1;
        self.fail_req(self.links[i].link.node, req, kind, msg, now);
    }
}
