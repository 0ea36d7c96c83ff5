//! The one place that says when the next request should start, for the closed model
//! (as soon as a connection is free) and the open model (a constant-rate schedule).
//!
//! Open model: the run's requests are numbered globally g = 0, 1, 2, ... and request g is
//! intended to start at `origin + g / rate`. Event-loop thread j of N (across all worker
//! processes) owns the requests g = k*N + j, so the union of all threads' schedules is the
//! exact constant-rate schedule. Intended start times never move: when a thread falls
//! behind (every connection busy, or the server stalled) its due requests go out as soon as
//! a connection frees, each still measured from its own intended start.

use std::time::{Duration, Instant};

/// Open model with a deadline: requests whose intended start falls before the deadline but
/// are still unsent when it passes (the thread fell behind) go out for up to this long
/// after it, so a late-running schedule is not cut short; a stall longer than this at the
/// very end of the run bounds the wind-down instead.
pub const OVERDUE_GRACE: Duration = Duration::from_secs(2);

#[derive(Clone, Debug)]
pub struct Pacer {
    origin: Instant,
    /// Requests started before this instant are warm-up and are not counted.
    measure_from: Instant,
    /// No request starts at or after this instant.
    deadline: Option<Instant>,
    /// Measured requests this thread may still start (None: unbounded).
    budget: Option<u64>,
    /// Open model: nanoseconds between this thread's requests and the offset of its first.
    open: Option<(f64, f64)>,
    /// Index k of this thread's next request.
    next: u64,
}

/// What the pacer hands out: a request to start now, with its intended start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    pub intended: Instant,
    /// False for warm-up requests, which are left out of every statistic.
    pub measured: bool,
}

impl Pacer {
    /// Closed model: a request is due whenever a connection is free.
    pub fn closed(
        origin: Instant,
        warmup: Duration,
        deadline: Option<Instant>,
        budget: Option<u64>,
    ) -> Pacer {
        Pacer {
            origin,
            measure_from: origin + warmup,
            deadline,
            budget,
            open: None,
            next: 0,
        }
    }

    /// Open model at `rate` requests per second in total, for thread `thread` of `threads`.
    pub fn open(
        origin: Instant,
        warmup: Duration,
        deadline: Option<Instant>,
        budget: Option<u64>,
        rate: f64,
        thread: usize,
        threads: usize,
    ) -> Pacer {
        let gap = 1e9 / rate;
        Pacer {
            origin,
            measure_from: origin + warmup,
            deadline,
            budget,
            open: Some((gap * threads as f64, gap * thread as f64)),
            next: 0,
        }
    }

    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Measured requests still to start, when the run is bounded by a count.
    pub fn remaining(&self) -> Option<u64> {
        self.budget
    }

    pub fn measure_from(&self) -> Instant {
        self.measure_from
    }

    /// Intended start of this thread's k-th request (open model).
    pub fn intended(&self, k: u64) -> Option<Instant> {
        let (period, phase) = self.open?;
        let ns = phase + period * k as f64;
        Some(self.origin + Duration::from_nanos(ns as u64))
    }

    /// True when no request will ever be due again.
    pub fn finished(&self, now: Instant) -> bool {
        if self.budget == Some(0) {
            return true;
        }
        match self.deadline {
            None => false,
            Some(d) => match self.intended(self.next) {
                Some(t) => t >= d || now >= d + OVERDUE_GRACE,
                None => now >= d,
            },
        }
    }

    /// Claims the next request if it is due at `now`.
    pub fn take_due(&mut self, now: Instant) -> Option<Due> {
        if self.budget == Some(0) {
            return None;
        }
        let intended = match self.intended(self.next) {
            Some(t) if t > now => return None,
            Some(t) => t,
            None => now,
        };
        if let Some(d) = self.deadline
            && (intended >= d || now >= d + OVERDUE_GRACE)
        {
            return None;
        }
        let measured = intended >= self.measure_from;
        if measured && let Some(b) = self.budget.as_mut() {
            *b -= 1;
        }
        self.next += 1;
        Some(Due { intended, measured })
    }

    /// When the next request falls due, if the pacer waits for the clock (open model).
    pub fn next_wakeup(&self) -> Option<Instant> {
        if self.budget == Some(0) {
            return None;
        }
        let t = self.intended(self.next)?;
        match self.deadline {
            Some(d) if t >= d => None,
            _ => Some(t),
        }
    }
}

/// Splits `total` items over `parts` as evenly as possible; part `i` gets the result.
pub fn share(total: u64, parts: usize, i: usize) -> u64 {
    let parts = parts as u64;
    let i = i as u64;
    total / parts + u64::from(i < total % parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(p: &mut Pacer, until: Instant) -> Vec<Instant> {
        let mut out = Vec::new();
        while let Some(d) = p.take_due(until) {
            out.push(d.intended);
        }
        out
    }

    #[test]
    fn union_of_threads_is_the_constant_rate_schedule() {
        let origin = Instant::now();
        for &(rate, threads) in &[
            (1000.0, 1usize),
            (1000.0, 2),
            (2000.0, 3),
            (7.5, 4),
            (50_000.0, 16),
        ] {
            let end = origin + Duration::from_secs(2);
            let mut all: Vec<Instant> = Vec::new();
            for t in 0..threads {
                let mut p = Pacer::open(origin, Duration::ZERO, Some(end), None, rate, t, threads);
                all.extend(drain(&mut p, end - Duration::from_nanos(1)));
            }
            all.sort();
            let expect = (2.0 * rate).ceil() as usize;
            assert!(
                all.len().abs_diff(expect) <= 1,
                "rate {rate} threads {threads}: {} vs {expect}",
                all.len()
            );
            for (g, t) in all.iter().enumerate() {
                let want = Duration::from_nanos((g as f64 * 1e9 / rate) as u64);
                let got = t.duration_since(origin);
                assert!(
                    got.abs_diff(want) <= Duration::from_micros(1),
                    "g {g}: {got:?} vs {want:?}"
                );
            }
        }
    }

    #[test]
    fn processes_times_threads_split_the_schedule() {
        // 2 processes x 2 threads = 4 global threads; thread j's k-th request is g = 4k + j.
        let origin = Instant::now();
        let p = Pacer::open(origin, Duration::ZERO, None, None, 100.0, 3, 4);
        assert_eq!(p.intended(0).unwrap() - origin, Duration::from_millis(30));
        assert_eq!(p.intended(2).unwrap() - origin, Duration::from_millis(110));
    }

    #[test]
    fn falling_behind_keeps_intended_times_and_loses_nothing() {
        let origin = Instant::now();
        let mut p = Pacer::open(origin, Duration::ZERO, None, Some(100), 1000.0, 0, 1);
        // On time for 10 ms.
        let first = drain(&mut p, origin + Duration::from_micros(9_500));
        assert_eq!(first.len(), 10);
        // Stalled: nothing taken for 50 ms, then everything due comes out at once,
        // each with its own intended start.
        let later = drain(&mut p, origin + Duration::from_micros(59_500));
        assert_eq!(later.len(), 50);
        for (i, t) in later.iter().enumerate() {
            assert_eq!(*t - origin, Duration::from_millis(10 + i as u64));
        }
        // The rest, and then the budget is spent.
        let rest = drain(&mut p, origin + Duration::from_secs(10));
        assert_eq!(rest.len(), 40);
        assert!(p.take_due(origin + Duration::from_secs(20)).is_none());
        assert!(p.finished(origin + Duration::from_secs(20)));
    }

    #[test]
    fn requests_overdue_at_the_deadline_still_go_out() {
        let origin = Instant::now();
        let end = origin + Duration::from_secs(1);
        let mut p = Pacer::open(origin, Duration::ZERO, Some(end), None, 100.0, 0, 1);
        // Behind by 50 ms at the deadline: the 5 overdue requests are not lost.
        assert_eq!(drain(&mut p, origin + Duration::from_millis(945)).len(), 95);
        let now = end + Duration::from_millis(5);
        assert!(!p.finished(now));
        assert_eq!(drain(&mut p, now).len(), 5);
        assert!(p.finished(now));
        // Past the grace, whatever is still unsent is given up.
        let mut p = Pacer::open(origin, Duration::ZERO, Some(end), None, 100.0, 0, 1);
        assert!(p.finished(end + OVERDUE_GRACE));
        assert!(p.take_due(end + OVERDUE_GRACE).is_none());
    }

    #[test]
    fn warmup_requests_do_not_spend_the_budget() {
        let origin = Instant::now();
        let mut p = Pacer::open(
            origin,
            Duration::from_millis(100),
            None,
            Some(10),
            1000.0,
            0,
            1,
        );
        let all: Vec<Due> =
            std::iter::from_fn(|| p.take_due(origin + Duration::from_secs(1))).collect();
        assert_eq!(all.len(), 110);
        assert_eq!(all.iter().filter(|d| d.measured).count(), 10);
        assert!(!all[99].measured && all[100].measured);
    }

    #[test]
    fn closed_model_is_due_until_budget_or_deadline() {
        let origin = Instant::now();
        let mut p = Pacer::closed(origin, Duration::ZERO, None, Some(3));
        assert!(p.next_wakeup().is_none());
        for _ in 0..3 {
            assert!(p.take_due(origin).is_some());
        }
        assert!(p.take_due(origin).is_none());
        let end = origin + Duration::from_secs(1);
        let mut p = Pacer::closed(origin, Duration::ZERO, Some(end), None);
        assert!(p.take_due(origin).is_some());
        assert!(p.take_due(end).is_none());
        assert!(p.finished(end));
    }

    #[test]
    fn shares_add_up() {
        for total in [0u64, 1, 7, 20_000, 20_001] {
            for parts in 1..6 {
                let sum: u64 = (0..parts).map(|i| share(total, parts, i)).sum();
                assert_eq!(sum, total);
            }
        }
    }

    /// Connections, requests and threads are split as evenly as possible: the parts add up
    /// to the whole and no two differ by more than one.
    #[test]
    fn shares_differ_by_at_most_one() {
        for total in [0u64, 1, 5, 7, 8, 99, 20_000, 20_001, 20_003] {
            for parts in 1..9 {
                let shares: Vec<u64> = (0..parts).map(|i| share(total, parts, i)).collect();
                let (min, max) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
                assert!(
                    max - min <= 1,
                    "{total} over {parts}: {shares:?} differ by more than one"
                );
                assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {parts}");
            }
        }
    }
}
