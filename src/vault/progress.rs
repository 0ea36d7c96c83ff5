//! The setup's progress and its phases' times. A long phase (secrets seeded, users
//! created, secrets removed, leases revoked at cleanup) shows one line on stderr:
//! done/total, rate and ETA (a wait on the server with no count to go by, such as a
//! mount's removal, shows what is done of what, the time so far and its bound), redrawn
//! in place once a second when stderr is a terminal, or, with `--progress`, one plain line
//! a second and one when the phase ends; nothing with `--quiet`, or when stderr is not a
//! terminal and `--progress` was not given (as the run's live line, `session/live.rs`).
//! A fixture phase (a mount, a role, a PKI chain: a few calls, no count) shows its name
//! and the time so far while it runs (`SetupLog::fixture`, drawn by a thread of its own,
//! the calls being blocking), and its name and time when it ends.
//! Every phase's name, count and time is kept (`SetupLog::phases`) for the report and
//! the results file; `VBLAST_SETUP_TIMING=1` also prints each as it ends.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use crate::stats::phases::SetupPhase;

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Display {
    Off,
    /// One line redrawn in place (stderr is a terminal).
    Redraw,
    /// Plain lines (`--progress`, stderr not a terminal).
    Lines,
}

impl Display {
    /// As the run's live line decides: shown on a terminal, or anywhere with `progress`,
    /// never with `quiet`.
    pub fn new(quiet: bool, progress: bool) -> Display {
        use std::io::IsTerminal;
        let terminal = std::io::stderr().is_terminal();
        match (quiet, terminal, progress) {
            (true, _, _) | (false, false, false) => Display::Off,
            (false, true, _) => Display::Redraw,
            (false, false, true) => Display::Lines,
        }
    }
}

/// How often a phase's line is drawn.
const EVERY: Duration = Duration::from_secs(1);

/// A session's setup (and cleanup) phases: how they are shown and what they took.
#[derive(Debug)]
pub struct SetupLog {
    display: Display,
    /// `VBLAST_SETUP_TIMING` is set: each phase's time on stderr as it ends.
    timing: bool,
    phases: Mutex<Vec<SetupPhase>>,
    /// How many counted phases (`start`) are under way: a fixture phase's line gives way.
    counted: AtomicUsize,
}

impl SetupLog {
    pub fn new(display: Display) -> SetupLog {
        SetupLog {
            display,
            timing: std::env::var_os("VBLAST_SETUP_TIMING").is_some(),
            phases: Mutex::new(Vec::new()),
            counted: AtomicUsize::new(0),
        }
    }

    /// Whether `VBLAST_SETUP_TIMING` asks for the phases' times (and the ramp's steps).
    pub fn timing(&self) -> bool {
        self.timing
    }

    pub fn display(&self) -> Display {
        self.display
    }

    /// Every phase ended so far, in order.
    pub fn phases(&self) -> Vec<SetupPhase> {
        self.phases.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// How many phases have ended.
    pub fn len(&self) -> usize {
        self.phases.lock().map_or(0, |p| p.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps a phase that ended: `count` things in `seconds` (a plain line says so).
    pub fn record(&self, name: &str, count: u64, seconds: f64) {
        if self.display == Display::Lines {
            eprintln!("progress: {name} done in {seconds:.1}s");
        }
        self.keep(SetupPhase::new(name, count, seconds));
    }

    /// A fixture phase: runs `work`, showing `name` and the time so far once a second
    /// while no counted phase of its own (seeding) shows instead; when it succeeds and
    /// kept no phase of its own, it is kept as one phase (`record`), its line saying its
    /// time. A failure keeps nothing.
    pub fn fixture<T, E>(&self, name: &str, work: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let (start, kept) = (Instant::now(), self.len());
        let result = if self.display == Display::Off {
            work()
        } else {
            std::thread::scope(|s| {
                let (tx, rx) = channel::<()>();
                let ticker = s.spawn(move || {
                    let mut drawn = false;
                    while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(EVERY) {
                        if self.counted.load(Ordering::Relaxed) > 0 || self.len() != kept {
                            continue;
                        }
                        let line = format!("{name}, {:.0}s so far", start.elapsed().as_secs_f64());
                        match self.display {
                            Display::Redraw => eprint!("\r\x1b[2K  {line}"),
                            _ => eprintln!("progress: {line}"),
                        }
                        drawn = true;
                    }
                    drawn
                });
                let result = work();
                drop(tx);
                if ticker.join().unwrap_or(false) && self.display == Display::Redraw {
                    eprint!("\r\x1b[2K");
                }
                result
            })
        };
        if result.is_ok() && self.len() == kept {
            self.record(name, 1, start.elapsed().as_secs_f64());
        }
        result
    }

    fn keep(&self, phase: SetupPhase) {
        if self.timing {
            eprintln!("vblast: setup: {}", phase.text());
        }
        if let Ok(mut p) = self.phases.lock() {
            p.push(phase);
        }
    }

    /// A phase of `total` things starting now, with its progress line.
    pub fn start(&self, name: &str, total: u64) -> PhaseLine<'_> {
        let now = Instant::now();
        self.counted.fetch_add(1, Ordering::Relaxed);
        PhaseLine {
            log: self,
            name: name.to_string(),
            total,
            start: now,
            drawn: now,
            bound: None,
        }
    }

    /// A wait for the server to finish `total` things whose pace tells nothing (a mount
    /// removed as its tokens are revoked), bounded by `bound`: its line says how many are
    /// done, the time so far and the bound, with no rate or ETA.
    pub fn start_wait(&self, name: &str, total: u64, bound: Duration) -> PhaseLine<'_> {
        let mut line = self.start(name, total);
        line.bound = Some(bound);
        line
    }
}

/// One phase under way.
pub struct PhaseLine<'a> {
    log: &'a SetupLog,
    name: String,
    total: u64,
    start: Instant,
    drawn: Instant,
    /// A wait's bound (`start_wait`): the line has no rate or ETA.
    bound: Option<Duration>,
}

impl Drop for PhaseLine<'_> {
    fn drop(&mut self) {
        self.log.counted.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PhaseLine<'_> {
    /// `done` of the total are done: the line, when a second has passed since the last.
    pub fn show(&mut self, done: u64) {
        let now = Instant::now();
        if self.log.display == Display::Off || now.duration_since(self.drawn) < EVERY {
            return;
        }
        self.drawn = now;
        let line = self.line(done, now.duration_since(self.start).as_secs_f64());
        match self.log.display {
            Display::Redraw => eprint!("\r\x1b[2K  {line}"),
            _ => eprintln!("progress: {line}"),
        }
    }

    /// A message of its own line on stderr (`vblast: ...`), the progress line cleared
    /// first when it is redrawn in place (it comes back at the next `show`).
    pub fn say(&self, text: &str) {
        if self.log.display == Display::Redraw {
            eprint!("\r\x1b[2K");
        }
        eprintln!("vblast: {text}");
    }

    /// "kv seeding 5000/20000 1626/s ETA 9s"; a wait: "removing 0/1, 12s so far (at
    /// most 10m)".
    fn line(&self, done: u64, elapsed: f64) -> String {
        if let Some(bound) = self.bound {
            return format!(
                "{} {done}/{}, {elapsed:.0}s so far (at most {})",
                self.name,
                self.total,
                humantime::format_duration(bound)
            );
        }
        let rate = if elapsed > 0.0 {
            done as f64 / elapsed
        } else {
            0.0
        };
        let eta = if rate > 0.0 {
            format!("ETA {:.0}s", self.total.saturating_sub(done) as f64 / rate)
        } else {
            "ETA unknown".to_string()
        };
        format!("{} {done}/{} {rate:.0}/s {eta}", self.name, self.total)
    }

    /// The phase ended with `done` things done on `connections`: its line goes (a plain
    /// line says how it ended), and its time is kept.
    pub fn finish(self, done: u64, connections: usize) {
        let seconds = self.start.elapsed().as_secs_f64();
        match self.log.display {
            Display::Redraw => eprint!("\r\x1b[2K"),
            Display::Lines => eprintln!(
                "progress: {} {done}/{} done in {seconds:.1}s",
                self.name, self.total
            ),
            Display::Off => {}
        }
        self.log.keep(SetupPhase {
            connections: connections as u64,
            ..SetupPhase::new(&self.name, done, seconds)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_done_of_total_rate_and_eta() {
        let log = SetupLog::new(Display::Off);
        let p = log.start("kv seeding", 20000);
        assert_eq!(p.line(5000, 2.0), "kv seeding 5000/20000 2500/s ETA 6s");
        assert_eq!(p.line(0, 0.0), "kv seeding 0/20000 0/s ETA unknown");
        p.finish(20000, 4);
        let w = log.start_wait(
            "waiting for the server to remove",
            2,
            Duration::from_secs(600),
        );
        assert_eq!(
            w.line(1, 12.3),
            "waiting for the server to remove 1/2, 12s so far (at most 10m)"
        );
        log.record("kv mount", 1, 0.5);
        let phases = log.phases();
        assert_eq!(phases.len(), 2, "a wait not finished is not kept");
        assert_eq!(phases[0].name, "kv seeding");
        assert_eq!(phases[0].count, 20000);
        assert_eq!(phases[0].connections, 4);
        assert_eq!(phases[1].text(), "kv mount 0.500s");
    }

    #[test]
    fn a_fixture_phase_is_kept_once_unless_its_own_phases_are() {
        let log = SetupLog::new(Display::Lines);
        assert_eq!(log.fixture("jwt-login setup", || Ok::<_, ()>(7)), Ok(7));
        // A phase with phases of its own (a mount, then seeding) keeps those alone.
        log.fixture("kv-read setup", || {
            log.record("kv mount", 1, 0.1);
            log.start("kv seeding", 3).finish(3, 1);
            Ok::<_, ()>(())
        })
        .unwrap();
        assert_eq!(
            log.fixture("pki-issue setup", || Err::<(), _>("refused")),
            Err("refused")
        );
        let names: Vec<String> = log.phases().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["jwt-login setup", "kv mount", "kv seeding"]);
        assert_eq!(log.counted.load(Ordering::Relaxed), 0);
    }
}
