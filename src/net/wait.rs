//! How an event loop waits for its sockets without making the server wake it.
//!
//! A thread blocked in `epoll_wait` is woken by whoever makes one of its sockets readable:
//! on loopback that is the server, which delivers its response into our socket from its
//! own system call and then pays for our wake-up (on a virtual machine without halt polling,
//! an inter-processor interrupt and the host's wake-up of our idle vCPU: about 10 us, as
//! much as a TLS request costs nginx). A client faster than the server goes idle between
//! two responses and is woken for nearly every one: nginx then spent 13.3 us per request
//! behind vblast against 11.3 us behind wrk, whose slower thread was seldom idle
//! (docs/benchmarks.md, issue 35).
//!
//! So while requests are in flight, a thread that finds nothing ready naps (a timer on its
//! own CPU, no waiter on the epoll queue, so the server wakes nobody) and then collects
//! everything that arrived meanwhile in one non-blocking poll. When naps keep coming up
//! empty (a server slower than a nap, as a real Vault is, or connections in their TLS
//! handshakes), it blocks as before and tries a nap now and then. `Waiting` is the
//! policy, without I/O; `Waiting::poll` runs it over a `mio::Poll`.

use std::io;
use std::time::Duration;

use mio::{Events, Poll};

/// How long a nap lasts: a few of a saturated TLS server's responses (nginx answers one
/// every 7-10 us on the bench machine), short beside a request's latency under load.
pub const NAP: Duration = Duration::from_micros(10);

/// The timer slack a napping thread asks for: Linux's default (50 us) would stretch a nap
/// fivefold.
const SLACK_NS: libc::c_ulong = 1_000;

/// Naps in a row that may come up empty before the thread stops napping (a score that
/// each caught nap raises and each empty one lowers, up to this).
const TRUST: u8 = 3;
/// Once it has stopped: blocking waits between two trial naps.
const PROBE_EVERY: u32 = 64;

/// What one wait does, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPlan {
    /// Block in the poll until an event or the timeout.
    Block,
    /// A non-blocking poll; if nothing is ready, a nap and another non-blocking poll;
    /// if still nothing, block.
    NapFirst,
}

/// How a wait went, for the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Events were ready at once (no nap, no block).
    Ready,
    /// The nap brought events.
    NapCaught,
    /// The nap brought nothing; the wait blocked.
    NapMissed,
    /// The wait blocked without a nap.
    Blocked,
}

/// One event loop's waiting policy: nap while naps pay (`score` above 0); once they have
/// stopped paying (a server slower than a nap, or connections still in their handshakes),
/// block, and try one nap every `PROBE_EVERY` waits.
#[derive(Debug)]
pub struct Waiting {
    score: u8,
    /// Blocking waits since naps stopped paying.
    blocked: u32,
    /// The thread's timer slack was lowered (once, on its first nap).
    slack_set: bool,
}

impl Default for Waiting {
    fn default() -> Self {
        Waiting::new()
    }
}

impl Waiting {
    pub fn new() -> Waiting {
        Waiting {
            score: TRUST,
            blocked: 0,
            slack_set: false,
        }
    }

    /// The next wait's plan: with no request in flight nothing is due from the server,
    /// and a wait with no time for a nap is a plain poll.
    pub fn plan(&self, in_flight: bool, timeout: Duration) -> WaitPlan {
        let naps_pay = self.score > 0 || self.blocked >= PROBE_EVERY;
        if in_flight && timeout > NAP && naps_pay {
            WaitPlan::NapFirst
        } else {
            WaitPlan::Block
        }
    }

    /// Learns from how a wait went.
    pub fn learn(&mut self, outcome: WaitOutcome) {
        match outcome {
            WaitOutcome::Ready => {}
            WaitOutcome::NapCaught => {
                self.score = (self.score + 1).min(TRUST);
                self.blocked = 0;
            }
            WaitOutcome::NapMissed => {
                self.score = self.score.saturating_sub(1);
                self.blocked = 0;
            }
            WaitOutcome::Blocked => self.blocked = self.blocked.saturating_add(1),
        }
    }

    /// Waits for events on `poll` as the policy says, at most `timeout`.
    pub fn poll(
        &mut self,
        poll: &mut Poll,
        events: &mut Events,
        timeout: Duration,
        in_flight: bool,
    ) -> io::Result<()> {
        let outcome = match self.plan(in_flight, timeout) {
            WaitPlan::NapFirst => {
                poll.poll(events, Some(Duration::ZERO))?;
                if !events.is_empty() {
                    WaitOutcome::Ready
                } else {
                    self.nap();
                    poll.poll(events, Some(Duration::ZERO))?;
                    if events.is_empty() {
                        poll.poll(events, Some(timeout.saturating_sub(NAP)))?;
                        WaitOutcome::NapMissed
                    } else {
                        WaitOutcome::NapCaught
                    }
                }
            }
            WaitPlan::Block => {
                poll.poll(events, Some(timeout))?;
                WaitOutcome::Blocked
            }
        };
        self.learn(outcome);
        Ok(())
    }

    fn nap(&mut self) {
        if !self.slack_set {
            self.slack_set = true;
            // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory of ours.
            // Should it fail, naps are longer; nothing else changes.
            unsafe {
                libc::prctl(libc::PR_SET_TIMERSLACK, SLACK_NS);
            }
        }
        std::thread::sleep(NAP);
    }
}

#[cfg(test)]
mod tests {
    //! The policy step by step (no timing asserted), then over a real poll: a wait finds
    //! what a socket already holds without blocking, and a wait with nothing in flight
    //! blocks.

    use super::*;
    use mio::net::TcpStream;
    use mio::{Interest, Token};
    use std::io::Write;

    const LONG: Duration = Duration::from_secs(1);

    #[test]
    fn naps_only_while_requests_are_in_flight() {
        let w = Waiting::new();
        assert_eq!(w.plan(true, LONG), WaitPlan::NapFirst);
        assert_eq!(w.plan(false, LONG), WaitPlan::Block);
        // No time for a nap: the wait is the poll itself.
        assert_eq!(w.plan(true, Duration::ZERO), WaitPlan::Block);
        assert_eq!(w.plan(true, NAP), WaitPlan::Block);
    }

    #[test]
    fn empty_naps_turn_to_blocking_and_a_trial_nap_back() {
        let mut w = Waiting::new();
        // A fast server: naps that catch responses keep the thread napping, and one
        // empty nap among them does not stop it.
        w.learn(WaitOutcome::NapCaught);
        w.learn(WaitOutcome::Ready);
        w.learn(WaitOutcome::NapMissed);
        assert_eq!(w.plan(true, LONG), WaitPlan::NapFirst);
        // A slow server: naps come up empty, so the waits block...
        for _ in 0..TRUST {
            w.learn(WaitOutcome::NapMissed);
        }
        assert_eq!(w.plan(true, LONG), WaitPlan::Block);
        for _ in 1..PROBE_EVERY {
            w.learn(WaitOutcome::Blocked);
            assert_eq!(w.plan(true, LONG), WaitPlan::Block);
        }
        // ...with a trial nap every PROBE_EVERY waits.
        w.learn(WaitOutcome::Blocked);
        assert_eq!(w.plan(true, LONG), WaitPlan::NapFirst);
        w.learn(WaitOutcome::NapMissed);
        assert_eq!(w.plan(true, LONG), WaitPlan::Block);
        for _ in 0..PROBE_EVERY {
            w.learn(WaitOutcome::Blocked);
        }
        // The server is fast again: the trial nap catches, and napping resumes.
        w.learn(WaitOutcome::NapCaught);
        assert_eq!(w.plan(true, LONG), WaitPlan::NapFirst);
        w.learn(WaitOutcome::NapMissed);
        assert_eq!(w.plan(true, LONG), WaitPlan::Block);
    }

    fn pair(poll: &Poll) -> (TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut ours = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        poll.registry()
            .register(&mut ours, Token(1), Interest::READABLE)
            .unwrap();
        let (theirs, _) = listener.accept().unwrap();
        (ours, theirs)
    }

    #[test]
    fn a_ready_socket_is_found_without_napping() {
        let mut poll = Poll::new().unwrap();
        let mut events = Events::with_capacity(8);
        let (_ours, mut theirs) = pair(&poll);
        theirs.write_all(b"response").unwrap();
        let mut w = Waiting::new();
        // The data is there before the wait: the first, non-blocking poll finds it.
        w.poll(&mut poll, &mut events, LONG, true).unwrap();
        assert_eq!(events.iter().count(), 1);
        assert_eq!(w.score, TRUST);
        assert!(!w.slack_set, "napped although an event was ready");
    }

    #[test]
    fn nothing_in_flight_blocks_until_the_timeout() {
        let mut poll = Poll::new().unwrap();
        let mut events = Events::with_capacity(8);
        let (_ours, _theirs) = pair(&poll);
        let mut w = Waiting::new();
        // Nothing ready and nothing due: no nap, one blocking poll that times out.
        w.poll(&mut poll, &mut events, Duration::from_millis(1), false)
            .unwrap();
        assert!(events.is_empty());
        assert!(!w.slack_set);
        // Requests in flight and nothing comes: a nap, then the blocking poll.
        w.poll(&mut poll, &mut events, Duration::from_millis(1), true)
            .unwrap();
        assert!(events.is_empty());
        assert!(w.slack_set);
        assert_eq!(w.score, TRUST - 1);
    }
}
