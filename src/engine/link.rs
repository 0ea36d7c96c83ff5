//! A connection's transport life, whichever protocol it carries: its socket opened to a
//! node (a window of connects at a time), the connect and TLS handshake timed and their
//! failures counted, a pause that grows before it is opened again (reset by a response),
//! and the connect, handshake and backoff deadlines checked. `Link` is the state machine
//! (`LinkPhase`; its transitions and the backoff schedule are pure, tested without sockets);
//! `Links` is what a protocol's connections (HTTP/1.1's `worker.rs`, HTTP/2's `h2.rs`)
//! give this layer to drive them. The protocol's exchange sits on top of an open link.

use std::io;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Token};

use super::EngineError;
use super::driver::{Core, PRECONNECT_MAX, TICK, Wheel, poll_once};
use crate::error::io_text;
use crate::net::transport::{self, Handshake, Stream};
use crate::pacing::Due;
use crate::signals::Stop;
use crate::stats::{ErrorKind, Stats};

/// Connects in flight at once per thread while connections open, so that the server's
/// accept queue does not overflow (a dropped SYN costs a one-second retransmit).
const CONNECT_WINDOW: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LinkPhase {
    /// No socket: not opened yet, closed, or (connection per request) between requests.
    Unopened,
    Connecting,
    Handshaking,
    /// TCP (and TLS) up: the protocol's own state says the rest.
    Open,
    /// Waiting to open again: after a failure, or as a Retry-After said.
    Backoff,
}

/// What a periodic check finds a link due for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Check {
    Nothing,
    /// Open: the protocol checks its requests.
    Open,
    /// The connect or the handshake took the whole timeout.
    TimedOut(&'static str),
    /// Its pause is over: open it again.
    Reopen,
    /// Backing off with no work left: close it.
    Close,
}

/// The pause before the next connect after `failures` failures in a row: 20 ms, doubling
/// up to 1 s.
pub(super) fn backoff(failures: u32) -> Duration {
    (Duration::from_millis(10) * (1u32 << failures.min(7))).min(Duration::from_secs(1))
}

/// A connection's socket and transport phase.
pub(super) struct Link {
    pub(super) stream: Option<Stream>,
    pub(super) phase: LinkPhase,
    /// When the connect began (connecting, handshaking), or when the pause ends (backoff).
    since: Instant,
    /// When TCP was up (the TLS handshake's start).
    connected_at: Instant,
    /// Failures in a row since the last response.
    failures: u32,
    /// The node (of several) the socket goes to (0 for a single address).
    pub(super) node: usize,
    /// Responses on this socket.
    pub(super) served: u32,
    /// `--clock kernel-tx`: plaintext bytes handed to the stream since it opened
    /// (`sendtie.rs`).
    pub(super) handed: u64,
}

/// A connect or handshake failure, in words.
fn failure(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::InvalidData {
        format!("TLS handshake failed: {}", io_text(e))
    } else {
        format!("connect failed: {}", io_text(e))
    }
}

fn micros(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros() as u64
}

impl Link {
    pub(super) fn new(now: Instant) -> Link {
        Link {
            stream: None,
            phase: LinkPhase::Unopened,
            since: now,
            connected_at: now,
            failures: 0,
            node: 0,
            served: 0,
            handed: 0,
        }
    }

    /// Connecting to `node` from `now` on `stream` (None: the connect could not start).
    fn connecting(&mut self, stream: Option<Stream>, node: usize, now: Instant) {
        self.stream = stream;
        self.node = node;
        self.served = 0;
        self.handed = 0;
        self.since = now;
        if self.stream.is_some() {
            self.phase = LinkPhase::Connecting;
        }
    }

    /// TCP is up at `now`: its connect time; the TLS handshake (or, plain, nothing) next.
    fn connected(&mut self, stats: &mut Stats, now: Instant) {
        self.connected_at = now;
        stats.connect.record(micros(self.since, now));
        stats.connections_opened += 1;
        self.phase = LinkPhase::Handshaking;
    }

    /// Readiness while connecting or handshaking: TCP up, then the handshake driven as
    /// far as the socket allows. Ok(true): open now; Err: why it failed.
    fn advance(&mut self, stats: &mut Stats, now: Instant) -> Result<bool, String> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(false);
        };
        if self.phase == LinkPhase::Connecting {
            if !stream.connected().map_err(|e| failure(&e))? {
                return Ok(false);
            }
            self.connected(stats, now);
        }
        let Some(stream) = self.stream.as_mut() else {
            return Ok(false);
        };
        if stream.handshake().map_err(|e| failure(&e))? == Handshake::Pending {
            return Ok(false);
        }
        if stream.is_tls() {
            // Its own clock: the event batch's `now` may predate this handshake's last
            // flight, read in the same batch as the connect.
            let now = Instant::now();
            stats.tls_resumed += u64::from(stream.resumed());
            stats.tls.record(micros(self.connected_at, now));
            stats.connect_tls.record(micros(self.since, now));
        }
        self.phase = LinkPhase::Open;
        Ok(true)
    }

    /// Failed before carrying anything (a connect, a handshake, a connection error): the
    /// socket dropped, opened again after a pause that grows with each failure in a row.
    pub(super) fn failed(&mut self, now: Instant) {
        self.failures += 1;
        self.wait_until(now + backoff(self.failures));
    }

    /// The socket dropped, opened again at `at` (a Retry-After, or a failure's pause).
    pub(super) fn wait_until(&mut self, at: Instant) {
        self.stream = None;
        self.phase = LinkPhase::Backoff;
        self.since = at;
    }

    /// A response came back: the next failure's pause starts short again.
    pub(super) fn answered(&mut self) {
        self.failures = 0;
    }

    /// The route moved: a link backing off tries the new node at once.
    pub(super) fn retry_now(&mut self, now: Instant) {
        if self.phase == LinkPhase::Backoff {
            self.since = now;
            self.failures = 0;
        }
    }

    /// The socket dropped, not to be opened again until asked.
    pub(super) fn close(&mut self) {
        self.stream = None;
        self.phase = LinkPhase::Unopened;
    }

    pub(super) fn opening(&self) -> bool {
        matches!(self.phase, LinkPhase::Connecting | LinkPhase::Handshaking)
    }

    /// What the periodic check at `now` finds this link due for (`timeout`: the connect's
    /// and the handshake's; `ending`: no work is left).
    pub(super) fn check(&self, now: Instant, timeout: Duration, ending: bool) -> Check {
        match self.phase {
            LinkPhase::Open => Check::Open,
            LinkPhase::Connecting | LinkPhase::Handshaking
                if now.saturating_duration_since(self.since) >= timeout =>
            {
                Check::TimedOut(if self.phase == LinkPhase::Connecting {
                    "connect timed out"
                } else {
                    "TLS handshake timed out"
                })
            }
            // However long a Retry-After said to wait: no work is left.
            LinkPhase::Backoff if ending => Check::Close,
            LinkPhase::Backoff if now >= self.since => Check::Reopen,
            _ => Check::Nothing,
        }
    }
}

/// A thread's `count` connections opened for the first time, a window of connects at a time.
#[derive(Default)]
pub(super) struct ConnectWindow {
    count: usize,
    /// Connections below this index have been opened once.
    next: usize,
    /// Those whose connect may still be in flight (at most `CONNECT_WINDOW`).
    opening: Vec<usize>,
}

impl ConnectWindow {
    pub(super) fn new(count: usize) -> ConnectWindow {
        ConnectWindow {
            count,
            next: 0,
            opening: Vec::with_capacity(CONNECT_WINDOW),
        }
    }
}

/// A protocol's connections as this layer drives them: each has a `Link`; the protocol
/// says what opening one means for its own state and what a failure does to its requests.
pub(super) trait Links<'p>: Wheel<'p> {
    /// Connection `i`'s link, and the thread's core.
    fn parts(&mut self, i: usize) -> (&mut Link, &mut Core<'p>);
    /// Connection `i` has not finished opening (its connect, handshake, or settings).
    fn opening(&self, i: usize) -> bool;
    /// Opens connection `i` (again), its protocol state made fresh (`connect`).
    fn open(&mut self, i: usize, now: Instant);
    /// Link `i` is open: the protocol starts on it.
    fn ready(&mut self, i: usize, now: Instant);
    fn close(&mut self, i: usize);
    /// Fails the request connection `i` carries with `msg`; false when it carries none
    /// (HTTP/2's requests are its streams', failed with their connection).
    fn fail_carried(&mut self, _: usize, _: ErrorKind, _: &str, _: Instant) -> bool {
        false
    }
    /// Claims `due` on connection `i` and fails it with `msg`.
    fn fail_due(&mut self, i: usize, due: Due, kind: ErrorKind, msg: &str, now: Instant);
}

/// Starts a non-blocking connect of connection `i` to `node` (the plan's target for a
/// single address), registered as `token`; a failure is counted at once.
pub(super) fn connect<'p, W: Links<'p>>(
    w: &mut W,
    i: usize,
    node: usize,
    token: Token,
    now: Instant,
) {
    let (link, core) = w.parts(i);
    let plan = core.plan;
    let addr = plan
        .nodes
        .targets
        .get(node)
        .map_or_else(|| plan.target.addr(), |t| t.addr());
    link.stream = None;
    let stream = transport::connect_node(addr, core.tls.as_ref(), node, core.ports.as_mut())
        .and_then(|mut s| {
            if core.kernel {
                // Refused on this socket alone: its responses count as unstamped.
                let _ = crate::net::stamp::enable(s.tcp());
            }
            let interest = Interest::READABLE | Interest::WRITABLE;
            core.poll.registry().register(s.tcp(), token, interest)?;
            Ok(s)
        });
    match stream {
        Ok(s) => link.connecting(Some(s), node, now),
        Err(e) => {
            link.connecting(None, node, now);
            connection_failed(w, i, ErrorKind::Connect, &failure(&e), now);
        }
    }
}

/// Readiness of connection `i` while it opens: on to its TLS handshake, then handed to its
/// protocol (`Links::ready`), or failed.
pub(super) fn advance<'p, W: Links<'p>>(w: &mut W, i: usize, now: Instant) {
    let (link, core) = w.parts(i);
    match link.advance(&mut core.tally.stats, now) {
        Ok(true) => {
            if core.tx
                && let Some(s) = link.stream.as_mut()
            {
                // Refused on this socket alone: its requests keep the user-space send,
                // counted apart.
                let _ = s.enable_tx();
            }
            w.ready(i, now)
        }
        Ok(false) => {}
        Err(msg) => connection_failed(w, i, ErrorKind::Connect, &msg, now),
    }
}

/// Connection `i` failed before a request of its own could go (a connect, a handshake, an
/// HTTP/2 connection error before its first stream): the request it carries fails with it;
/// carrying none, the next one due does in the closed model (so that a run against a dead
/// server ends) and when no connection is free (so that a dead node's requests fail as
/// they fall due rather than wait unsent); else it is counted as a connection failure that
/// failed no request (`Counter::connection_failed`).
/// The link is opened again after its pause.
pub(super) fn connection_failed<'p, W: Links<'p>>(
    w: &mut W,
    i: usize,
    kind: ErrorKind,
    msg: &str,
    now: Instant,
) {
    w.parts(i).0.failed(now);
    if w.fail_carried(i, kind, msg, now) {
        return;
    }
    let free = w.has_free();
    let core = w.core();
    if (!core.pacer.is_open() || !free)
        && let Some(due) = core.pacer.take_due(now)
    {
        w.fail_due(i, due, kind, msg, now);
    } else {
        core.tally.connection_failed(kind, msg);
    }
}

/// The periodic check of connection `i`'s link: a connect or handshake past the timeout
/// fails, a pause over opens it again (or, no work left, closes it). True when it is open
/// (the protocol checks its requests).
pub(super) fn check<'p, W: Links<'p>>(w: &mut W, i: usize, now: Instant) -> bool {
    let (link, core) = w.parts(i);
    match link.check(now, core.plan.load.timeout, core.ending(now)) {
        Check::Open => return true,
        Check::TimedOut(msg) => connection_failed(w, i, ErrorKind::Connect, msg, now),
        Check::Reopen => w.open(i, now),
        Check::Close => w.close(i),
        Check::Nothing => {}
    }
    false
}

/// Opens connections not opened yet, keeping at most `CONNECT_WINDOW` of them opening at
/// once (found among the last ones opened, not by a pass over every connection: that
/// pass, once per loop turn while 15,000 connections open, was most of the client's own
/// CPU time). Returns whether any is still to open or opening.
pub(super) fn open_more<'p, W: Links<'p>>(w: &mut W, now: Instant) -> bool {
    let win = &mut w.core().window;
    if win.next == win.count && win.opening.is_empty() {
        return false;
    }
    let mut win = std::mem::take(win);
    win.opening.retain(|&i| w.opening(i));
    while win.next < win.count && win.opening.len() < CONNECT_WINDOW {
        w.open(win.next, now);
        win.opening.push(win.next);
        win.next += 1;
    }
    let more = !win.opening.is_empty();
    w.core().window = win;
    more
}

/// Opens every connection before the clock starts, within `PRECONNECT_MAX` (and the
/// timeout).
pub(super) fn preconnect<'p, W: Links<'p>>(
    w: &mut W,
    stop: &Stop,
    events: &mut Events,
) -> Result<(), EngineError> {
    let until = Instant::now() + PRECONNECT_MAX.min(w.core().plan.load.timeout);
    while !stop.is_set() {
        let now = Instant::now();
        if !open_more(w, now) || now >= until {
            break;
        }
        poll_once(w, events, TICK)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_grows_with_failures_up_to_a_second() {
        let ms = |n| backoff(n).as_millis();
        assert_eq!([ms(1), ms(2), ms(3), ms(6)], [20, 40, 80, 640]);
        assert_eq!([ms(7), ms(8), ms(40)], [1000, 1000, 1000]);
    }

    #[test]
    fn a_link_backs_off_reopens_and_times_out_by_its_phase() {
        let t0 = Instant::now();
        let timeout = Duration::from_secs(2);
        let ms = Duration::from_millis;
        let mut l = Link::new(t0);
        assert_eq!(l.check(t0 + timeout, timeout, false), Check::Nothing);
        // Two failures in a row: the second pause is twice the first.
        l.failed(t0);
        assert_eq!(l.phase, LinkPhase::Backoff);
        assert_eq!(l.check(t0 + ms(19), timeout, false), Check::Nothing);
        assert_eq!(l.check(t0 + ms(20), timeout, false), Check::Reopen);
        assert_eq!(l.check(t0, timeout, true), Check::Close);
        l.failed(t0);
        assert_eq!(l.check(t0 + ms(39), timeout, false), Check::Nothing);
        // A response: the next pause is short again; the route moved: no pause at all.
        l.answered();
        l.failed(t0);
        assert_eq!(l.check(t0 + ms(20), timeout, false), Check::Reopen);
        l.failed(t0);
        l.retry_now(t0);
        assert_eq!(l.check(t0, timeout, false), Check::Reopen);
        // Connecting, then handshaking: each times out after the whole timeout.
        l.connecting(None, 3, t0);
        assert_eq!((l.phase, l.node), (LinkPhase::Backoff, 3));
        l.phase = LinkPhase::Connecting;
        assert!(l.opening());
        assert_eq!(l.check(t0 + ms(1999), timeout, false), Check::Nothing);
        let late = l.check(t0 + timeout, timeout, false);
        assert_eq!(late, Check::TimedOut("connect timed out"));
        let mut stats = Stats::new(1);
        l.connected(&mut stats, t0 + ms(5));
        assert_eq!(l.phase, LinkPhase::Handshaking);
        assert_eq!(stats.connections_opened, 1);
        let late = l.check(t0 + timeout, timeout, false);
        assert_eq!(late, Check::TimedOut("TLS handshake timed out"));
        l.phase = LinkPhase::Open;
        assert_eq!(l.check(t0 + timeout, timeout, true), Check::Open);
        l.close();
        assert_eq!((l.phase, l.opening()), (LinkPhase::Unopened, false));
    }
}
