//! HTTP/1.1's share of one event-loop thread: the `EventLoop` that owns a share of the
//! connections (one request each at a time), and how the driver (`driver.rs`) moves
//! them: opening connections (a window of connects at a time), handing due requests to
//! free connections, handling their events, and periodic timeout checks. A held run
//! keeps the free connections open (and idle) between steps.

use std::time::Instant;

use mio::Events;
use mio::event::Event;

use super::conn::HOP;
use super::conn::{Conn, ConnPhase};
use super::driver::{Core, PRECONNECT_MAX, READ_BUF, TICK, Wheel, captures, poll_once};
use super::{EngineError, EnginePlan};
use crate::net::transport::{PortSlice, TlsConnector};
use crate::pacing::share;
use crate::signals::Stop;

/// Keep-alive: connects in flight at once per thread while opening connections.
const CONNECT_WINDOW: usize = 256;

pub(super) struct EventLoop<'p> {
    pub(super) plan: &'p EnginePlan,
    /// The pacer, counts, poll and generator the driver shares (`driver.rs`).
    pub(super) core: Core<'p>,
    pub(super) conns: Vec<Conn>,
    /// Connections (or connection-per-request slots) free for a request.
    pub(super) idle: Vec<usize>,
    /// Connections holding a claimed request.
    pub(super) busy: usize,
    /// Keep-alive: connections below this index have been opened once.
    pub(super) next_open: usize,
    /// Keep-alive: connections `open_more` opened whose connect may still be in flight.
    pub(super) opening: Vec<usize>,
    /// Connections that have not carried a request yet.
    pub(super) unstarted: usize,
    /// The request templates, one set per node (`requests.rs`).
    pub(super) requests: super::requests::Requests,
    pub(super) tls: Option<TlsConnector>,
    /// This thread's own slice of local ports.
    pub(super) ports: Option<PortSlice>,
    pub(super) buf: Box<[u8]>,
    /// Several nodes: how many route moves this thread has acted on.
    pub(super) route_seen: u64,
    /// `--follow-redirects`: the nodes a redirect may be followed to.
    pub(super) redirects: Option<crate::net::redirect::Redirects>,
}

impl<'p> EventLoop<'p> {
    pub(super) fn new(
        plan: &'p EnginePlan,
        global: usize,
        requests: super::requests::Requests,
        tls: Option<TlsConnector>,
    ) -> Result<EventLoop<'p>, EngineError> {
        let core = Core::new(plan, global)?;
        // Over shards, thread `global` of this shard is slot `slot` of `slots`.
        let (slot, slots) = plan.slot(global);
        let mut mine = share(plan.load.connections, slots, slot);
        if let Some(n) = plan.load.step.requests {
            // A connection with no request to send is never opened.
            mine = mine.min(share(n, slots, slot));
        }
        let now = Instant::now();
        let conns = (0..mine).map(|_| Conn::new(now, captures(plan))).collect();
        Ok(EventLoop {
            plan,
            core,
            conns,
            idle: Vec::with_capacity(mine as usize),
            busy: 0,
            next_open: 0,
            opening: Vec::with_capacity(CONNECT_WINDOW),
            unstarted: mine as usize,
            requests,
            tls,
            ports: crate::sys::ephemeral_ports().and_then(|(lo, hi)| {
                PortSlice::new(lo as u16, hi as u16, global, plan.threads_total)
                    .map(|s| s.with_addrs(&plan.load.spread.source_addrs))
            }),
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            route_seen: 0,
            redirects: plan.load.follow_redirects.then(|| {
                crate::net::redirect::Redirects::new(if plan.nodes.targets.is_empty() {
                    std::slice::from_ref(&plan.target)
                } else {
                    &plan.nodes.targets
                })
            }),
        })
    }

    /// Opens every connection before the clock starts (within `PRECONNECT_MAX`).
    fn preconnect(&mut self, stop: &Stop, events: &mut Events) -> Result<(), EngineError> {
        let until = Instant::now() + PRECONNECT_MAX.min(self.plan.load.timeout);
        while !stop.is_set() {
            let now = Instant::now();
            let opening = self.open_more(now);
            if (opening == 0 && self.next_open == self.conns.len()) || now >= until {
                break;
            }
            poll_once(self, events, TICK)?;
        }
        Ok(())
    }

    /// Keep-alive: opens connections not opened yet, keeping at most `CONNECT_WINDOW` of
    /// its connects in flight so that the server's accept queue does not overflow (a dropped
    /// SYN costs a one-second retransmit). Returns the connects in flight.
    fn open_more(&mut self, now: Instant) -> usize {
        if self.next_open == self.conns.len() {
            return 0;
        }
        // The connects still in flight, found among the last ones opened here (at most
        // the window), not by a pass over every connection: that pass, once per loop
        // turn while 15,000 connections open, was most of the client's own CPU time.
        let conns = &self.conns;
        self.opening.retain(|&i| {
            matches!(
                conns[i].phase,
                ConnPhase::Connecting | ConnPhase::Handshaking
            )
        });
        while self.next_open < self.conns.len() && self.opening.len() < CONNECT_WINDOW {
            self.open(self.next_open, now);
            self.opening.push(self.next_open);
            self.next_open += 1;
        }
        self.opening.len()
    }

    /// The cluster's active node moved: connections waiting to retry try the new one at
    /// once, and free connections to another node re-open to it.
    fn follow_route(&mut self, now: Instant) {
        let Some(route) = self.plan.nodes.route.as_ref() else {
            return;
        };
        let changes = route.changes();
        if changes == self.route_seen {
            return;
        }
        self.route_seen = changes;
        let active = route.active();
        for i in 0..self.conns.len() {
            let c = &mut self.conns[i];
            if c.node == active || c.req.is_some() {
                continue;
            }
            match c.phase {
                ConnPhase::Backoff => {
                    c.since = now;
                    c.failures = 0;
                }
                ConnPhase::Idle => {
                    c.stream = None;
                    if let Some(pos) = self.idle.iter().position(|&x| x == i) {
                        self.idle.swap_remove(pos);
                    }
                    self.open(i, now);
                }
                _ => {}
            }
        }
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
            self.next_open = self.conns.len();
        } else if self.plan.load.step.schedule.is_some() || self.plan.load.step.requests.is_none() {
            // Runs measured over time (and the open model's schedule) start once every
            // connection is open, like wrk2, so the measured window sees all of them at
            // work. Runs of a given count (ab's -n) open connections as they go instead,
            // each starting work as soon as it is open, and count the set-up in their time.
            self.preconnect(stop, events)?;
        }
        Ok(())
    }

    /// Starts due requests on free connections (or connection-per-request slots).
    fn dispatch(&mut self, now: Instant) {
        self.open_more(now);
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
        EventLoop::close_idle(self);
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
        let timeout = self.plan.load.timeout;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.phase {
                ConnPhase::Busy => {
                    if let Some(outcome) = c.timed_out(now, timeout) {
                        self.settle(i, outcome, now);
                    }
                }
                ConnPhase::Connecting | ConnPhase::Handshaking => {
                    if now.saturating_duration_since(c.since) >= timeout {
                        let msg = if c.phase == ConnPhase::Connecting {
                            "connect timed out"
                        } else {
                            "TLS handshake timed out"
                        };
                        self.connect_failure(i, msg, now);
                    }
                }
                ConnPhase::Backoff => {
                    if self.core.ending(now) {
                        // However long a Retry-After said to wait: no work is left.
                        self.close(i);
                    } else if now >= c.since {
                        self.open(i, now);
                    }
                }
                ConnPhase::Idle | ConnPhase::Unopened => {}
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
        self.on_event(
            i,
            ev.is_readable() || ev.is_error() || ev.is_read_closed(),
            ev.is_writable() || ev.is_error(),
            ev.is_read_closed(),
            now,
        );
        Ok(())
    }

    fn open_count(&self) -> u64 {
        self.conns.iter().filter(|c| c.stream.is_some()).count() as u64
    }
}
