//! A setup phase of many like requests (secrets written, users created, secrets removed)
//! at the server's pace: workers, each with a connection of its own, take the next index
//! from one counter; how many work follows `ramp::Ramp` (more while the server's
//! throughput grows, held once it does not); the phase's progress line and its time go to
//! the setup's log (`progress`). The first failure stops every worker, and the message
//! says how far the phase got and what was asked (a count the server cannot take: a
//! quota, a limit). `VBLAST_SEED_CONNS=N` holds N connections instead (benchmarks).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::vault::client::Client;
use crate::vault::progress::SetupLog;
use crate::vault::ramp::Ramp;

/// The connections a phase starts with, and the most it may use.
const START: usize = 4;
const MAX: usize = 64;
/// How often the workers' progress is looked at.
const TICK: Duration = Duration::from_millis(25);
/// A window of the ramp lasts at least this long, and holds at least `PER_CONN` answers
/// per connection; past `LONGEST`, `SETTLED` per connection are enough (slow requests: a
/// user's bcrypt hash), and past `LAST` it ends whatever it holds (a stalled server).
/// Fewer than `SETTLED` answers per connection would judge the change of level itself:
/// a server that shares its CPU among the requests in flight (Go's scheduler does) answers
/// the first of the added ones only after about a round of the new level, and a window
/// shorter than that sees almost nothing, then a burst.
const WINDOW: Duration = Duration::from_millis(700);
const PER_CONN: u64 = 8;
const LONGEST: Duration = Duration::from_secs(3);
const SETTLED: u64 = 2;
const LAST: Duration = Duration::from_secs(12);

/// One phase: its name (the progress line's, the report's), what it makes and how many,
/// and the flag that asked for that many (for the message of a refusal).
#[derive(Clone, Copy, Debug)]
pub struct Job<'a> {
    pub name: &'a str,
    pub unit: &'a str,
    pub flag: Option<&'a str>,
    pub count: u64,
}

/// How a phase ended: every index below `reached` may have been sent (none above), and
/// the result.
#[derive(Debug)]
pub struct Reached {
    pub reached: u64,
    pub result: Result<(), Error>,
}

/// What the workers share.
struct Shared {
    next: AtomicU64,
    done: AtomicU64,
    level: AtomicUsize,
    active: AtomicUsize,
    failed: AtomicBool,
    first_error: Mutex<Option<Cause>>,
}

/// Runs `f(client, i)` for every `i` in `0..job.count` over connections made by
/// `make_client`, as many as the server's pace calls for; stops at the first failure,
/// or when `stop` is set.
pub fn each(
    make_client: &(dyn Fn() -> Client + Sync),
    log: &SetupLog,
    stop: &Stop,
    job: &Job,
    f: &(dyn Fn(&mut Client, u64) -> Result<(), Cause> + Sync),
) -> Reached {
    if job.count == 0 {
        return Reached {
            reached: 0,
            result: Ok(()),
        };
    }
    let mut ramp = match std::env::var("VBLAST_SEED_CONNS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
    {
        Some(n) => Ramp::fixed(n),
        None => Ramp::new(START, MAX),
    };
    let shared = Shared {
        next: AtomicU64::new(0),
        done: AtomicU64::new(0),
        level: AtomicUsize::new(ramp.level()),
        active: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        first_error: Mutex::new(None),
    };
    let mut progress = log.start(job.name, job.count);
    std::thread::scope(|scope| {
        let mut spawned = 0usize;
        let mut window = (Instant::now(), 0u64);
        loop {
            let want = ramp.level().min(job.count as usize);
            shared.level.store(want, Ordering::Relaxed);
            while spawned < want && !shared.failed.load(Ordering::Relaxed) {
                let (id, shared) = (spawned, &shared);
                shared.active.fetch_add(1, Ordering::Relaxed);
                scope.spawn(move || work(id, shared, make_client, job.count, stop, f));
                spawned += 1;
            }
            std::thread::sleep(TICK);
            let done = shared.done.load(Ordering::Relaxed);
            progress.show(done);
            if shared.active.load(Ordering::Relaxed) == 0 {
                break;
            }
            if ramp.probing() && window_over(window, done, want) {
                judge(&mut ramp, log, job.name, window, done);
                window = (Instant::now(), done);
            }
        }
    });
    let done = shared.done.load(Ordering::Relaxed);
    progress.finish(done, ramp.level().min(job.count as usize));
    let reached = shared.next.load(Ordering::Relaxed).min(job.count);
    let result = match stop.signal() {
        Some(s) => Err(Error::Stopped(s)),
        None => match shared.first_error.into_inner() {
            Ok(None) => Ok(()),
            Ok(Some(e)) => Err(Error::setup(refusal(job, done, e))),
            Err(_) => Err(Error::setup(format!("{}: a worker panicked", job.name))),
        },
    };
    Reached { reached, result }
}

/// How often, and how long apart, a throttled request of a cleanup is sent again.
const THROTTLED_TRIES: u32 = 60;
const THROTTLED_WAIT: Duration = Duration::from_secs(1);

/// `send` until it is not throttled (HTTP 429: a rate-limit quota), waiting a second
/// between tries, at most `THROTTLED_TRIES` times, not past `stop`: for a cleanup, which
/// must get done at whatever pace the server allows.
pub fn retry_throttled(
    stop: &Stop,
    mut send: impl FnMut() -> Result<(), Cause>,
) -> Result<(), Cause> {
    let mut tries = 1;
    loop {
        match send() {
            Err(Cause::Http { status: 429, .. }) if tries < THROTTLED_TRIES && !stop.is_set() => {
                tries += 1;
                std::thread::sleep(THROTTLED_WAIT);
            }
            other => return other,
        }
    }
}

/// The ramp told the throughput of the window since `window` (`VBLAST_SETUP_TIMING`:
/// said on stderr).
fn judge(ramp: &mut Ramp, log: &SetupLog, name: &str, window: (Instant, u64), done: u64) {
    let secs = window.0.elapsed().as_secs_f64();
    let rate = done.saturating_sub(window.1) as f64 / secs;
    let level = ramp.level();
    ramp.observe(rate);
    if log.timing() {
        eprintln!(
            "vblast: setup: {name}: {level} connections: {rate:.0}/s over {secs:.2}s, then {:?}",
            ramp.state()
        );
    }
}

/// Whether the ramp's window at `level` connections has lasted long enough.
fn window_over(window: (Instant, u64), done: u64, level: usize) -> bool {
    let (age, answers, level) = (
        window.0.elapsed(),
        done.saturating_sub(window.1),
        level as u64,
    );
    age >= LAST
        || (age >= LONGEST && answers >= SETTLED * level)
        || (age >= WINDOW && answers >= PER_CONN * level)
}

/// One worker: the next index until none is left, the phase failed or stopped, or the
/// ramp no longer wants this worker.
fn work(
    id: usize,
    s: &Shared,
    make_client: &(dyn Fn() -> Client + Sync),
    count: u64,
    stop: &Stop,
    f: &(dyn Fn(&mut Client, u64) -> Result<(), Cause> + Sync),
) {
    let mut client = make_client();
    while !s.failed.load(Ordering::Relaxed)
        && !stop.is_set()
        && id < s.level.load(Ordering::Relaxed)
    {
        let i = s.next.fetch_add(1, Ordering::Relaxed);
        if i >= count {
            break;
        }
        match f(&mut client, i) {
            Ok(()) => {
                s.done.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                s.failed.store(true, Ordering::Relaxed);
                if let Ok(mut slot) = s.first_error.lock()
                    && slot.is_none()
                {
                    *slot = Some(e);
                }
                break;
            }
        }
    }
    s.active.fetch_sub(1, Ordering::Relaxed);
}

/// The message of a phase stopped by the server's refusal: how far it got, the first
/// failure, and, when the server took some before refusing (a quota, a limit, a full
/// disk) or throttled, what to do about the count asked.
fn refusal(job: &Job, done: u64, first: Cause) -> Cause {
    let throttled = matches!(first, Cause::Http { status: 429, .. });
    let mut what = format!(
        "{} stopped at the first failure, {done} of {} {} done",
        job.name, job.count, job.unit
    );
    if let Some(flag) = job.flag
        && (done > 0 || throttled)
    {
        what.push_str(&format!(
            " (the server {} {flag} {}: a rate-limit or lease quota, or a limit of the mount or the storage; ask for fewer, or lift the limit)",
            if throttled {
                "throttled the requests of"
            } else {
                "took no more of"
            },
            job.count
        ));
    }
    first.within(what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_how_far_the_phase_got_and_what_was_asked() {
        let job = Job {
            name: "kv seeding",
            unit: "secrets",
            flag: Some("--secrets"),
            count: 500,
        };
        let http = |status| Cause::Http {
            what: "writing secret 'm/s007'".into(),
            status,
            excerpt: "1 error occurred".into(),
        };
        let t = refusal(&job, 5, http(429)).to_string();
        assert!(
            t.starts_with("kv seeding stopped at the first failure, 5 of 500 secrets done (the server throttled the requests of --secrets 500"),
            "{t}"
        );
        assert!(
            t.ends_with("writing secret 'm/s007': HTTP 429: 1 error occurred"),
            "{t}"
        );
        let t = refusal(&job, 12, http(400)).to_string();
        assert!(
            t.contains("(the server took no more of --secrets 500"),
            "{t}"
        );
        // The very first request refused (a policy, say): no word about the count.
        let t = refusal(&job, 0, http(403)).to_string();
        assert!(!t.contains("--secrets"), "{t}");
    }

    #[test]
    fn windows_last_long_enough_for_their_level() {
        let long_ago = Instant::now() - WINDOW;
        assert!(window_over((long_ago, 0), 100, 4));
        assert!(!window_over((long_ago, 0), 10, 4));
        assert!(!window_over((Instant::now(), 0), 1000, 4));
        // Slow requests: past LONGEST, two answers per connection are enough, fewer are
        // not (the new level's first answers are still to come), until LAST.
        let long_ago = Instant::now() - LONGEST;
        assert!(window_over((long_ago, 0), 128, 64));
        assert!(!window_over((long_ago, 0), 127, 64));
        assert!(!window_over((long_ago, 0), 2, 64));
        let very_long_ago = Instant::now() - LAST;
        assert!(window_over((very_long_ago, 0), 1, 64));
        assert!(window_over((very_long_ago, 0), 0, 4));
    }
}
