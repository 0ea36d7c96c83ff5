//! Progress on stderr while a run goes on: elapsed time, requests, the current rate and
//! failures, once a second: one line redrawn in place when stderr is a terminal, or, with
//! `--progress`, one plain line per second for logs (CI). Fed by the event-loop threads'
//! totals over a channel they never wait on, so it cannot slow the engine.

use crate::engine;

/// The progress display (nothing with --quiet).
pub struct Live {
    enabled: bool,
    /// Plain lines (stderr is not a terminal and --progress was given).
    lines: bool,
    start: std::time::Instant,
    last: std::sync::Mutex<(std::time::Instant, u64)>,
}

impl Live {
    pub fn new(quiet: bool, progress: bool) -> Live {
        use std::io::IsTerminal;
        let now = std::time::Instant::now();
        let terminal = std::io::stderr().is_terminal();
        Live {
            enabled: !quiet && (terminal || progress),
            lines: !terminal,
            start: now,
            last: std::sync::Mutex::new((now, 0)),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn show(&self, threads: &[engine::Totals]) {
        let requests: u64 = threads.iter().map(|p| p.requests).sum();
        let ok: u64 = threads.iter().map(|p| p.ok).sum();
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let now = std::time::Instant::now();
        let dt = now.duration_since(last.0).as_secs_f64();
        if dt < 0.9 {
            return;
        }
        let rate = (requests.saturating_sub(last.1)) as f64 / dt;
        *last = (now, requests);
        let elapsed = now.duration_since(self.start).as_secs_f64();
        let failed = requests - ok;
        if self.lines {
            let requests = crate::report::plural(requests, "request", "requests");
            eprintln!("progress: {elapsed:.0}s {requests} {rate:.0} req/s {failed} failed");
        } else {
            let requests = crate::report::plural(requests, "request", "requests");
            eprint!("\r\x1b[2K  {elapsed:>5.0}s  {requests}  {rate:.0} req/s  {failed} failed");
        }
    }

    pub fn clear(&self) {
        if self.enabled && !self.lines {
            eprint!("\r\x1b[2K");
        }
    }
}
