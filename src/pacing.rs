//! The one place that says when the next request should start, for the closed model
//! (as soon as a connection is free) and the open model (a load `Schedule`: constant,
//! ramp or steps; see `schedule.rs` for how request numbers map to times).
//!
//! Open model: the run's requests are numbered globally g = 0, 1, 2, ... and request g is
//! intended to start at `origin + schedule.offset_of(g)` (`origin + g / rate` for a
//! constant rate). Event-loop thread j of N (across all worker processes) owns the
//! requests g = k*N + j, so the union of all threads' schedules is exactly the schedule.
//! Intended start times never move: when a thread falls behind (every connection busy, or
//! the server stalled) its due requests go out as soon as a connection frees, each still
//! measured from its own intended start. A request whose start the schedule cannot place
//! (beyond what a `Duration` holds) is never due: the thread's schedule ends there.

use std::time::{Duration, Instant};

use crate::config::schedule::Schedule;

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
    /// Open model: the schedule, this thread's index and the number of threads.
    open: Option<Open>,
    /// Index k of this thread's next request.
    next: u64,
}

#[derive(Clone, Debug)]
struct Open {
    schedule: Schedule,
    thread: u64,
    threads: u64,
}

/// When this thread's k-th request starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Closed model: whenever a connection is free.
    Now,
    At(Instant),
    /// Beyond what the schedule can place: never.
    Never,
}

/// What the pacer hands out: a request to start now, with its intended start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    pub intended: Instant,
    /// False for warm-up requests, which are left out of every statistic.
    pub measured: bool,
    /// The operation the schedule gives this request (a replay's recorded one), if any.
    pub op: Option<u16>,
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

    /// Open model on `schedule` (total rate over the whole run), for thread `thread` of
    /// `threads`. The schedule's clock starts at `origin`, warm-up included.
    pub fn open(
        origin: Instant,
        warmup: Duration,
        deadline: Option<Instant>,
        budget: Option<u64>,
        schedule: &Schedule,
        thread: usize,
        threads: usize,
    ) -> Pacer {
        Pacer {
            origin,
            measure_from: origin + warmup,
            deadline,
            budget,
            open: Some(Open {
                schedule: schedule.clone(),
                thread: thread as u64,
                threads: threads.max(1) as u64,
            }),
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

    /// Global number of this thread's k-th request (open model).
    fn global(o: &Open, k: u64) -> Option<u64> {
        k.checked_mul(o.threads)?.checked_add(o.thread)
    }

    fn slot(&self, k: u64) -> Slot {
        let Some(o) = &self.open else {
            return Slot::Now;
        };
        Pacer::global(o, k)
            .and_then(|g| o.schedule.offset_of(g))
            .and_then(|d| self.origin.checked_add(d))
            .map_or(Slot::Never, Slot::At)
    }

    /// The operation a `Schedule::Instants` gives this thread's k-th request.
    #[inline]
    fn recorded_op(&self, k: u64) -> Option<u16> {
        let o = self.open.as_ref()?;
        match &o.schedule {
            Schedule::Instants(i) => i.op_of(Pacer::global(o, k)?),
            _ => None,
        }
    }

    /// Intended start of this thread's k-th request (open model; None in the closed model
    /// and beyond what the schedule can place).
    pub fn intended(&self, k: u64) -> Option<Instant> {
        match self.slot(k) {
            Slot::At(t) => Some(t),
            Slot::Now | Slot::Never => None,
        }
    }

    /// True when no request will ever be due again.
    pub fn finished(&self, now: Instant) -> bool {
        if self.budget == Some(0) {
            return true;
        }
        match (self.slot(self.next), self.deadline) {
            (Slot::Never, _) => true,
            (_, None) => false,
            (Slot::At(t), Some(d)) => t >= d || now >= d + OVERDUE_GRACE,
            (Slot::Now, Some(d)) => now >= d,
        }
    }

    /// Claims the next request if it is due at `now`.
    pub fn take_due(&mut self, now: Instant) -> Option<Due> {
        if self.budget == Some(0) {
            return None;
        }
        let intended = match self.slot(self.next) {
            Slot::At(t) if t > now => return None,
            Slot::At(t) => t,
            Slot::Now => now,
            Slot::Never => return None,
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
        let op = self.recorded_op(self.next);
        self.next += 1;
        Some(Due {
            intended,
            measured,
            op,
        })
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

    /// Open model: this thread's measured requests that the schedule placed before `end`
    /// (the moment the run stopped or finished, at most the deadline) and that were never
    /// handed out: the run ended (the deadline's grace passed, a stop) while they waited for
    /// a connection. With what `take_due` handed out, they make exactly the schedule's
    /// share of this thread in the measured window (at most its count). 0 in the closed model.
    pub fn not_sent(&self, end: Instant) -> u64 {
        let Some(o) = &self.open else {
            return 0;
        };
        let cutoff = self.deadline.map_or(end, |d| d.min(end));
        let first_measured = self.placed_before(o, self.measure_from);
        let placed = self.placed_before(o, cutoff);
        let unsent = placed.saturating_sub(self.next.max(first_measured));
        self.budget.map_or(unsent, |b| unsent.min(b))
    }

    /// Open model: how long each request `not_sent(end)` counts had waited when the run
    /// ended, from its intended start to `end`, in the schedule's order: each of them waited
    /// at least that long for a response that never came (wrk2's tail counts them so). Pure:
    /// from the schedule and what was handed out alone. Empty in the closed model.
    pub fn unsent_waits(&self, end: Instant) -> impl Iterator<Item = Duration> + '_ {
        let first = self.open.as_ref().map_or(0, |o| {
            self.next.max(self.placed_before(o, self.measure_from))
        });
        (first..first + self.not_sent(end)).map(move |k| {
            self.intended(k)
                .map_or(Duration::ZERO, |t| end.saturating_duration_since(t))
        })
    }

    /// How many of this thread's requests the schedule places before `t`: those k whose
    /// global number k*N + j is below the count the whole schedule intends before `t`.
    fn placed_before(&self, o: &Open, t: Instant) -> u64 {
        let all = o
            .schedule
            .requests_before(t.saturating_duration_since(self.origin));
        if all <= o.thread {
            return 0;
        }
        (all - o.thread - 1) / o.threads + 1
    }

    /// Open model, once `finished`: where the schedule's window ends, so that rates are
    /// taken over the window rather than over the time to the last completion alone
    /// (at 5 req/s for 0.2 s that would be one request over its own service time). With a
    /// deadline, the deadline; when the count ran out first, the intended start of the
    /// request after this thread's last one (whose slot the last one filled), at most the
    /// deadline. None in the closed model, and when the schedule did not run its course.
    pub fn window_end(&self) -> Option<Instant> {
        let o = self.open.as_ref()?;
        if self.budget == Some(0) && self.next > 0 {
            let after_last = Pacer::global(o, self.next - 1)
                .and_then(|g| g.checked_add(1))
                .and_then(|g| o.schedule.offset_of(g))
                .and_then(|d| self.origin.checked_add(d));
            return match (after_last, self.deadline) {
                (Some(t), Some(d)) => Some(t.min(d)),
                (t, d) => t.or(d),
            };
        }
        match self.slot(self.next) {
            Slot::At(t) if self.deadline.is_some_and(|d| t >= d) => self.deadline,
            _ => None,
        }
    }
}

/// Splits `total` items over `parts` as evenly as possible (threads, processes, shards).
pub use crate::config::spread::share;

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rate: f64) -> Schedule {
        Schedule::Constant { rate }
    }

    fn drain(p: &mut Pacer, until: Instant) -> Vec<Instant> {
        let mut out = Vec::new();
        while let Some(d) = p.take_due(until) {
            out.push(d.intended);
        }
        out
    }

    #[test]
    fn closed_model_leaves_the_warmup_out_and_spends_the_budget_on_measured_requests() {
        let origin = Instant::now();
        let warmup = Duration::from_secs(1);
        let mut p = Pacer::closed(origin, warmup, None, Some(2));
        assert!(!p.is_open());
        assert_eq!(p.measure_from(), origin + warmup);
        assert_eq!(p.remaining(), Some(2));
        // Warm-up requests are due at once, not measured, and cost nothing of the budget.
        let d = p.take_due(origin).unwrap();
        assert_eq!(
            d,
            Due {
                intended: origin,
                measured: false,
                op: None
            }
        );
        assert_eq!(p.remaining(), Some(2));
        let after = origin + warmup;
        assert!(p.take_due(after).unwrap().measured);
        assert_eq!(p.remaining(), Some(1));
        assert!(p.take_due(after).unwrap().measured);
        assert_eq!(p.remaining(), Some(0));
        assert!(p.finished(after));
        assert_eq!(p.take_due(after), None);
        assert_eq!(Pacer::closed(origin, warmup, None, None).remaining(), None);
        let open = Pacer::open(origin, warmup, None, Some(5), &c(10.0), 0, 1);
        assert!(open.is_open());
        assert_eq!(open.remaining(), Some(5));
    }

    #[test]
    fn a_request_is_due_at_its_intended_instant_not_a_moment_later() {
        let origin = Instant::now();
        let mut p = Pacer::open(origin, Duration::ZERO, None, None, &c(10.0), 0, 1);
        let second = p.intended(1).unwrap();
        assert_eq!(second, origin + Duration::from_millis(100));
        assert!(p.take_due(origin).is_some());
        assert_eq!(p.take_due(second - Duration::from_nanos(1)), None);
        let d = p.take_due(second).unwrap();
        assert_eq!(d.intended, second);
    }

    #[test]
    fn the_next_wakeup_is_the_next_slot_before_the_deadline_and_none_once_spent() {
        let origin = Instant::now();
        let ms = Duration::from_millis;
        // 10/s: slots at 0, 100, 200 ms; the deadline falls exactly on the third.
        let mut p = Pacer::open(
            origin,
            Duration::ZERO,
            Some(origin + ms(200)),
            None,
            &c(10.0),
            0,
            1,
        );
        assert_eq!(p.next_wakeup(), Some(origin));
        p.take_due(origin).unwrap();
        assert_eq!(p.next_wakeup(), Some(origin + ms(100)));
        p.take_due(origin + ms(100)).unwrap();
        // A slot at the deadline is never started, so nothing to wake up for.
        assert_eq!(p.next_wakeup(), None);
        let mut q = Pacer::open(origin, Duration::ZERO, None, Some(1), &c(10.0), 0, 1);
        assert_eq!(q.next_wakeup(), Some(origin));
        q.take_due(origin).unwrap();
        assert_eq!(q.next_wakeup(), None);
        // A count of zero: no window either, not even the deadline's.
        let z = Pacer::open(
            origin,
            Duration::ZERO,
            Some(origin + ms(500)),
            Some(0),
            &c(10.0),
            0,
            1,
        );
        assert_eq!(z.window_end(), None);
        assert_eq!(z.next_wakeup(), None);
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
                let mut p = Pacer::open(
                    origin,
                    Duration::ZERO,
                    Some(end),
                    None,
                    &c(rate),
                    t,
                    threads,
                );
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
    fn union_of_threads_is_the_schedule_for_ramps_and_steps() {
        let origin = Instant::now();
        let d = |s: f64| Duration::from_secs_f64(s);
        let schedules = [
            Schedule::Ramp {
                from: 0.0,
                to: 3000.0,
                over: d(1.5),
            },
            Schedule::Ramp {
                from: 4000.0,
                to: 50.0,
                over: d(1.0),
            },
            Schedule::Steps(vec![(500.0, d(0.3)), (0.0, d(0.2)), (2500.0, d(0.7))]),
            Schedule::Steps(vec![(7.5, d(0.5)), (900.0, d(0.5))]),
        ];
        for schedule in &schedules {
            for threads in [1usize, 2, 3, 16] {
                let end = origin + Duration::from_secs(2);
                let mut all: Vec<(Instant, usize)> = Vec::new();
                for t in 0..threads {
                    let mut p = Pacer::open(
                        origin,
                        Duration::ZERO,
                        Some(end),
                        None,
                        schedule,
                        t,
                        threads,
                    );
                    all.extend(drain(&mut p, end).into_iter().map(|i| (i, t)));
                    assert!(p.finished(end), "{schedule}: thread {t} not finished");
                }
                all.sort();
                // Exactly the schedule's requests before the deadline, each at its own
                // offset, request g from thread g mod N.
                let n = schedule.requests_before(Duration::from_secs(2));
                assert_eq!(all.len() as u64, n, "{schedule}, {threads} threads");
                for (g, (t, thread)) in all.iter().enumerate() {
                    assert_eq!(
                        Some(*t - origin),
                        schedule.offset_of(g as u64),
                        "{schedule}: g {g}"
                    );
                    assert_eq!(*thread, g % threads, "{schedule}: g {g}");
                }
            }
        }
    }

    #[test]
    fn intended_starts_never_go_back() {
        let origin = Instant::now();
        let schedule = Schedule::Ramp {
            from: 0.0,
            to: 100_000.0,
            over: Duration::from_secs(1),
        };
        let mut p = Pacer::open(origin, Duration::ZERO, None, Some(150_000), &schedule, 1, 3);
        let all = drain(&mut p, origin + Duration::from_secs(10));
        assert_eq!(all.len(), 150_000);
        assert!(all.windows(2).all(|w| w[0] <= w[1]));
        assert!(all.windows(2).any(|w| w[0] < w[1]));
    }

    #[test]
    fn a_rate_too_small_to_place_ends_the_schedule_instead_of_flooding() {
        // -R 1e-300 once made the gap infinite and every request due at the origin.
        let origin = Instant::now();
        let tiny = c(1e-300);
        let end = origin + Duration::from_secs(3);
        let mut sent = 0;
        for t in 0..4 {
            let mut p = Pacer::open(origin, Duration::ZERO, Some(end), None, &tiny, t, 4);
            sent += drain(&mut p, end).len();
            assert!(p.finished(origin), "thread {t}");
            assert!(p.next_wakeup().is_none());
        }
        // Request 0 at the origin; request 1 would come after 1e300 s.
        assert_eq!(sent, 1);
    }

    #[test]
    fn window_ends_at_the_deadline_or_after_the_last_slot() {
        let origin = Instant::now();
        let ms = Duration::from_millis;
        // -R 5 -z 0.2s: one request (at 0); the window is the 0.2 s, not its service time.
        let end = origin + ms(200);
        let mut p = Pacer::open(origin, Duration::ZERO, Some(end), None, &c(5.0), 0, 1);
        assert_eq!(drain(&mut p, origin + ms(1)).len(), 1);
        assert!(p.finished(origin + ms(1)));
        assert_eq!(p.window_end(), Some(end));
        // -R 1000 -n 500 over 2 threads: the window is 500 slots of 1 ms.
        let mut ends = Vec::new();
        for t in 0..2 {
            let mut p = Pacer::open(origin, Duration::ZERO, None, Some(250), &c(1000.0), t, 2);
            drain(&mut p, origin + Duration::from_secs(1));
            assert!(p.finished(origin + Duration::from_secs(1)));
            ends.push(p.window_end().unwrap());
        }
        assert_eq!(ends.iter().max().copied(), Some(origin + ms(500)));
        // Count and deadline: the deadline caps the window.
        let mut p = Pacer::open(
            origin,
            Duration::ZERO,
            Some(end),
            Some(200),
            &c(1000.0),
            0,
            1,
        );
        drain(&mut p, origin + Duration::from_secs(1));
        assert_eq!(p.window_end(), Some(end));
        // Not finished (stopped early): no window; closed model: none either.
        let mut p = Pacer::open(origin, Duration::ZERO, Some(end), None, &c(1000.0), 0, 1);
        drain(&mut p, origin + ms(50));
        assert_eq!(p.window_end(), None);
        let p = Pacer::closed(origin, Duration::ZERO, Some(end), None);
        assert_eq!(p.window_end(), None);
    }

    #[test]
    fn processes_times_threads_split_the_schedule() {
        // 2 processes x 2 threads = 4 global threads; thread j's k-th request is g = 4k + j.
        let origin = Instant::now();
        let p = Pacer::open(origin, Duration::ZERO, None, None, &c(100.0), 3, 4);
        assert_eq!(p.intended(0).unwrap() - origin, Duration::from_millis(30));
        assert_eq!(p.intended(2).unwrap() - origin, Duration::from_millis(110));
    }

    #[test]
    fn falling_behind_keeps_intended_times_and_loses_nothing() {
        let origin = Instant::now();
        let mut p = Pacer::open(origin, Duration::ZERO, None, Some(100), &c(1000.0), 0, 1);
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
        let mut p = Pacer::open(origin, Duration::ZERO, Some(end), None, &c(100.0), 0, 1);
        // Behind by 50 ms at the deadline: the 5 overdue requests are not lost.
        assert_eq!(drain(&mut p, origin + Duration::from_millis(945)).len(), 95);
        let now = end + Duration::from_millis(5);
        assert!(!p.finished(now));
        assert_eq!(drain(&mut p, now).len(), 5);
        assert!(p.finished(now));
        // Past the grace, whatever is still unsent is given up.
        let mut p = Pacer::open(origin, Duration::ZERO, Some(end), None, &c(100.0), 0, 1);
        assert!(p.finished(end + OVERDUE_GRACE));
        assert!(p.take_due(end + OVERDUE_GRACE).is_none());
    }

    /// Sent (handed out) and not sent add up to the schedule's requests in the measured
    /// window, exactly, over every thread: a thread that fell behind and was cut off by the
    /// deadline's grace, one stopped early, warm-up left out, a count that caps it.
    #[test]
    fn sent_and_not_sent_make_the_schedule_exactly() {
        let origin = Instant::now();
        let d = |s: f64| Duration::from_secs_f64(s);
        let schedules = [
            c(1000.0),
            c(7.5),
            Schedule::Ramp {
                from: 0.0,
                to: 3000.0,
                over: d(1.5),
            },
            Schedule::Steps(vec![(500.0, d(0.3)), (0.0, d(0.2)), (2500.0, d(0.7))]),
        ];
        let warmup = d(0.25);
        let deadline = origin + warmup + d(1.5);
        let measured = |s: &Schedule, until: Instant| {
            s.requests_before(until - origin) - s.requests_before(warmup)
        };
        for schedule in &schedules {
            for threads in [1usize, 3, 16] {
                // (how far each thread got before it stalled, when the run ended)
                for (stall, end) in [
                    (d(0.9), deadline + OVERDUE_GRACE),
                    (d(0.1), deadline + OVERDUE_GRACE),
                    (d(0.6), origin + d(1.2)),
                ] {
                    let (mut sent, mut unsent) = (0, 0);
                    for t in 0..threads {
                        let mut p =
                            Pacer::open(origin, warmup, Some(deadline), None, schedule, t, threads);
                        let got = std::iter::from_fn(|| p.take_due(origin + stall));
                        sent += got.filter(|x| x.measured).count() as u64;
                        unsent += p.not_sent(end);
                    }
                    let want = measured(schedule, end.min(deadline));
                    assert_eq!(
                        sent + unsent,
                        want,
                        "{schedule}, {threads} threads, stalled at {stall:?}"
                    );
                }
            }
        }
        // On time to the end: nothing is left unsent.
        let mut p = Pacer::open(origin, warmup, Some(deadline), None, &c(100.0), 0, 1);
        drain(&mut p, deadline);
        assert_eq!(p.not_sent(deadline + OVERDUE_GRACE), 0);
        // A count: what it leaves is never more than it had left.
        let mut p = Pacer::open(
            origin,
            Duration::ZERO,
            Some(deadline),
            Some(20),
            &c(100.0),
            0,
            1,
        );
        assert_eq!(drain(&mut p, origin + d(0.05)).len(), 6);
        assert_eq!(p.not_sent(deadline), 14);
        // The closed model has no schedule to fall behind.
        let p = Pacer::closed(origin, Duration::ZERO, Some(deadline), None);
        assert_eq!(p.not_sent(deadline), 0);
    }

    /// The unsent requests' waits: one per request `not_sent` counts, each from its own
    /// intended start to the end, over threads, warm-up and a count alike.
    #[test]
    fn each_unsent_request_waited_from_its_intended_start_to_the_end() {
        let origin = Instant::now();
        let ms = Duration::from_millis;
        // 100/s for 1 s, stalled after 300 ms, the run ended at 1.5 s: requests 30..99
        // were never sent, request k having waited 1500 - 10k ms.
        let deadline = origin + ms(1000);
        let end = origin + ms(1500);
        let mut p = Pacer::open(
            origin,
            Duration::ZERO,
            Some(deadline),
            None,
            &c(100.0),
            0,
            1,
        );
        assert_eq!(drain(&mut p, origin + ms(295)).len(), 30);
        let waits: Vec<Duration> = p.unsent_waits(end).collect();
        assert_eq!(waits.len() as u64, p.not_sent(end));
        assert_eq!(waits.len(), 70);
        for (i, w) in waits.iter().enumerate() {
            assert_eq!(*w, ms(1500 - 10 * (30 + i as u64)), "request {}", 30 + i);
        }
        // Two threads with a warm-up of 200 ms and nothing sent: only the measured
        // requests, each thread its own share, every wait from its own start.
        let warmup = ms(200);
        let mut all = Vec::new();
        for t in 0..2 {
            let p = Pacer::open(origin, warmup, Some(deadline), None, &c(100.0), t, 2);
            let waits: Vec<Duration> = p.unsent_waits(end).collect();
            assert_eq!(waits.len() as u64, p.not_sent(end));
            all.extend(waits);
        }
        all.sort();
        assert_eq!(all.len(), 80);
        assert_eq!(all.first(), Some(&ms(500 + 10)));
        assert_eq!(all.last(), Some(&ms(1300)));
        // A count caps them; on time to the end and the closed model leave none.
        let p = Pacer::open(
            origin,
            Duration::ZERO,
            Some(deadline),
            Some(5),
            &c(100.0),
            0,
            1,
        );
        assert_eq!(p.unsent_waits(end).count(), 5);
        let mut p = Pacer::open(
            origin,
            Duration::ZERO,
            Some(deadline),
            None,
            &c(100.0),
            0,
            1,
        );
        drain(&mut p, deadline);
        assert_eq!(p.unsent_waits(end).count(), 0);
        let p = Pacer::closed(origin, Duration::ZERO, Some(deadline), None);
        assert_eq!(p.unsent_waits(end).count(), 0);
    }

    #[test]
    fn warmup_requests_do_not_spend_the_budget() {
        let origin = Instant::now();
        let mut p = Pacer::open(
            origin,
            Duration::from_millis(100),
            None,
            Some(10),
            &c(1000.0),
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
