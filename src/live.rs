//! The live progress line on stderr while a run goes on: elapsed time, requests, the
//! current rate and failures, once a second, only when stderr is a terminal.

use crate::engine;

/// The live progress line on stderr, when stderr is a terminal (not with --quiet).
pub struct Live {
    enabled: bool,
    start: std::time::Instant,
    last: std::sync::Mutex<(std::time::Instant, u64)>,
}

impl Live {
    pub fn new(quiet: bool) -> Live {
        use std::io::IsTerminal;
        let now = std::time::Instant::now();
        Live {
            enabled: !quiet && std::io::stderr().is_terminal(),
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
        eprint!(
            "\r\x1b[2K  {:>5.0}s  {requests} requests  {rate:.0} req/s  {} failed",
            now.duration_since(self.start).as_secs_f64(),
            requests - ok
        );
    }

    pub fn clear(&self) {
        if self.enabled {
            eprint!("\r\x1b[2K");
        }
    }
}
