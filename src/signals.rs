//! Stopping: which signal (SIGINT, SIGTERM, SIGHUP) asked vblast to stop, as one shared
//! flag every stage polls. The first signal stops the run gracefully (report, cleanup);
//! a second one while cleanup is still under way makes cleanup give up waiting and name
//! what it leaves behind. One signal delivered twice at once counts once
//! (`Deliveries`): GNU `timeout` sends its one SIGTERM to vblast and then to vblast's
//! process group, which vblast is in.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// The same signal again within this long of the one counted is the same request delivered
/// twice, not a second one. A time and not the sender (`si_pid`): a terminal's two Ctrl-Cs
/// both come from the kernel, and a shell's two `kill`s from one process, so a rule on the
/// sender would merge what a person meant twice; one delivery twice (`timeout`'s
/// `kill(pid)` then `kill(0)`) comes microseconds apart, a person's second Ctrl-C or a
/// supervisor's escalation a good part of a second later at the soonest. Half a second also
/// holds when the signal thread is kept off a busy CPU between the two.
pub const SAME_SIGNAL_WINDOW: Duration = Duration::from_millis(500);

/// The signals delivered so far, to tell a second stop request from the first delivered
/// twice.
#[derive(Debug, Default)]
struct Deliveries {
    /// The last signal counted, and when it came.
    last: Option<(Signal, Instant)>,
}

impl Deliveries {
    /// Whether signal `s`, delivered at `at`, is a stop request of its own: not when it is
    /// the signal last counted again within `SAME_SIGNAL_WINDOW`.
    fn counts(&mut self, s: Signal, at: Instant) -> bool {
        let again = matches!(self.last, Some((l, t)) if l == s && at.saturating_duration_since(t) < SAME_SIGNAL_WINDOW);
        if !again {
            self.last = Some((s, at));
        }
        !again
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Signal {
    Interrupt,
    Terminate,
    Hangup,
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Signal::Interrupt => "SIGINT (Ctrl-C)",
            Signal::Terminate => "SIGTERM",
            Signal::Hangup => "SIGHUP",
        })
    }
}

impl Signal {
    fn code(self) -> u8 {
        match self {
            Signal::Interrupt => 1,
            Signal::Terminate => 2,
            Signal::Hangup => 3,
        }
    }

    fn from_code(c: u8) -> Option<Signal> {
        match c {
            1 => Some(Signal::Interrupt),
            2 => Some(Signal::Terminate),
            3 => Some(Signal::Hangup),
            _ => None,
        }
    }

    fn from_raw(n: i32) -> Option<Signal> {
        match n {
            signal_hook::consts::SIGINT => Some(Signal::Interrupt),
            signal_hook::consts::SIGTERM => Some(Signal::Terminate),
            signal_hook::consts::SIGHUP => Some(Signal::Hangup),
            _ => None,
        }
    }
}

/// The stop flag's value when a broken threshold stopped the run (no signal's code).
const ABORT: u8 = 200;

/// The stop flag: unset, or the first signal received. Cheap to poll (one relaxed load).
#[derive(Clone, Debug, Default)]
pub struct Stop {
    first: Arc<AtomicU8>,
    /// How many stop requests arrived in all.
    count: Arc<AtomicU8>,
}

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Asks everything to stop (the first caller's signal is the one reported).
    pub fn request(&self, s: Signal) {
        let _ = self
            .first
            .compare_exchange(0, s.code(), Ordering::SeqCst, Ordering::SeqCst);
        let _ = self
            .count
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| c.checked_add(1));
    }

    #[inline]
    pub fn is_set(&self) -> bool {
        self.first.load(Ordering::Relaxed) != 0
    }

    pub fn signal(&self) -> Option<Signal> {
        Signal::from_code(self.first.load(Ordering::Relaxed))
    }

    /// Asks everything to stop because a threshold is broken (`--threshold-abort`): not a
    /// signal (`signal()` stays None, the run ends as a completed one and cleans up as
    /// usual); a signal already received keeps its place.
    pub fn abort(&self) {
        let _ = self
            .first
            .compare_exchange(0, ABORT, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Whether a broken threshold stopped the run (`abort`).
    pub fn aborted(&self) -> bool {
        self.first.load(Ordering::Relaxed) == ABORT
    }

    /// A signal arrived (whether or not a broken threshold stopped the run first): ends
    /// a wait that only a signal should end, such as `--metrics-linger`.
    pub fn signalled(&self) -> bool {
        self.count.load(Ordering::Relaxed) >= 1
    }

    /// A second stop request arrived: give up waiting, even on cleanup.
    pub fn is_urgent(&self) -> bool {
        self.count.load(Ordering::Relaxed) >= 2
    }

    /// The flag the engine polls.
    pub fn flag(&self) -> &AtomicU8 {
        &self.first
    }

    /// Routes SIGINT, SIGTERM and SIGHUP into this flag, with a note on stderr (unless
    /// `quiet`, for worker processes). Fails when the handlers cannot be set.
    pub fn install(&self, quiet: bool) -> Result<(), InstallError> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
            .map_err(InstallError::Handlers)?;
        let stop = self.clone();
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let mut deliveries = Deliveries::default();
                for raw in signals.forever() {
                    let Some(s) = Signal::from_raw(raw) else {
                        continue;
                    };
                    if !deliveries.counts(s, Instant::now()) {
                        continue;
                    }
                    let again = stop.is_set();
                    stop.request(s);
                    if quiet {
                        continue;
                    }
                    // On a terminal the note first ends the live progress line; elsewhere
                    // that would be an empty line, not one of vblast's own.
                    let lead = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                        "\n"
                    } else {
                        ""
                    };
                    if again {
                        eprintln!("{lead}vblast: {s} again: giving up waiting");
                    } else {
                        eprintln!(
                            "{lead}vblast: {s}: stopping, reporting and cleaning up (again to give up waiting)"
                        );
                    }
                }
            })
            .map_err(InstallError::Thread)?;
        Ok(())
    }
}

/// Why the signal handlers could not be set.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("cannot install signal handlers: {0}")]
    Handlers(std::io::Error),
    #[error("cannot start the signal thread: {0}")]
    Thread(std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_signal_wins_and_a_second_is_urgent() {
        let s = Stop::new();
        assert!(!s.is_set() && s.signal().is_none() && !s.is_urgent());
        s.request(Signal::Terminate);
        assert!(s.is_set());
        assert_eq!(s.signal(), Some(Signal::Terminate));
        assert!(!s.is_urgent());
        s.request(Signal::Interrupt);
        assert_eq!(s.signal(), Some(Signal::Terminate));
        assert!(s.is_urgent());
        for c in 1..=3u8 {
            assert_eq!(Signal::from_code(c).map(Signal::code), Some(c));
        }
        assert!(Signal::from_code(0).is_none());
    }

    #[test]
    fn one_signal_delivered_twice_at_once_counts_once() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let mut d = Deliveries::default();
        // timeout's SIGTERM to vblast, then to its process group: one request.
        assert!(d.counts(Signal::Terminate, t));
        assert!(!d.counts(Signal::Terminate, t + Duration::from_micros(40)));
        assert!(!d.counts(Signal::Terminate, t + ms(499)));
        // The same signal later is a second request; so is another signal at once.
        assert!(d.counts(Signal::Terminate, t + ms(500)));
        assert!(d.counts(Signal::Interrupt, t + ms(501)));
        assert!(!d.counts(Signal::Interrupt, t + ms(502)));
        assert!(d.counts(Signal::Terminate, t + ms(503)));
    }
}
