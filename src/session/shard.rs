//! Sharded runs: one run split over several vblast processes, on one machine or many
//! (`--shard i/n`), started together at one wall-clock instant (`--start-at`), and their
//! results files checked to belong together before `vblast report` merges them.
//!
//! The split extends the global request numbering the engine already uses over threads and
//! worker processes (see `pacing.rs`): shard i of n owns the requests g = i + n*k, and its
//! own threads split its k = 0, 1, 2, ... as before. So thread j of T in shard i owns
//! g = i + n*(j + T*k'), which is thread slot `i + n*j` of `n*T` slots; the engine is given
//! that slot and slot count and needs nothing else. Shards may run different thread counts
//! (machines with different cores): each shard still owns exactly the g = i mod n, so the
//! union of the shards is the single-machine schedule, request for request (like k6's
//! execution segments). Connections and `-n` split the same way (share i of n, then per
//! thread), so they add up exactly to `-c` and `-n`.
//!
//! Run id: `--run-id ID`, or, with `--start-at`, derived from the start instant and the
//! scenario (redacted, without the shard index), so shards started with the same flags
//! agree on it without talking to each other. A sharded run needs one of the two.

use std::sync::{Barrier, OnceLock};
use std::time::{Instant, SystemTime};

use crate::config::scenario::Scenario;
use crate::config::spread::Sharding;
use crate::engine::StartGate;
use crate::results::shards::ShardRecord;

/// The run id of a sharded run: `--run-id`, or derived from the start instant and the
/// redacted scenario with the shard index taken out (so that every shard derives the same).
pub fn run_id(
    given: Option<&str>,
    start_at: Option<&str>,
    scenario: &serde_json::Value,
) -> Option<String> {
    if let Some(id) = given {
        return Some(id.to_string());
    }
    let at = start_at?;
    let mut s = scenario.clone();
    // What each machine may choose for itself: threads, pinning, source addresses.
    if let Some(load) = s.get_mut("load").and_then(|v| v.as_object_mut()) {
        load.remove("threads");
        load.remove("pin");
    }
    if let Some(spread) = s
        .pointer_mut("/load/spread")
        .and_then(|v| v.as_object_mut())
    {
        spread.remove("shard");
        // Each machine may name its own source addresses.
        spread.remove("source_addrs");
    }
    let text = format!("{at}\n{s}");
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    let hex: String = digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(format!("run-{hex}"))
}

/// The shard record of a run's results file: when `--shard` or `--run-id` was given.
pub fn record(
    args: &Sharding,
    scenario: &Scenario,
    clock_start: SystemTime,
) -> Option<ShardRecord> {
    if args.shard.is_none() && args.run_id.is_none() {
        return None;
    }
    let shard = args.shard.unwrap_or_default();
    let run_id = run_id(
        args.run_id.as_deref(),
        args.start_at.as_deref(),
        &scenario.redacted(),
    )
    .unwrap_or_else(|| "unnamed".into());
    let late = scenario
        .load
        .spread
        .start_at()
        .map_or(0, |at| late_ms(at, clock_start));
    Some(ShardRecord {
        index: shard.index,
        count: shard.count,
        run_id,
        clock_start: humantime::format_rfc3339_millis(clock_start).to_string(),
        late_ms: late,
    })
}

/// A start gate at a wall-clock instant: every thread waits for the others (connections
/// open), then for the instant. When the instant has already passed, the run starts at
/// once and `late` says by how much.
pub struct WallGate {
    barrier: Barrier,
    at: SystemTime,
    origin: OnceLock<(Instant, SystemTime)>,
}

impl WallGate {
    pub fn new(threads: usize, at: SystemTime) -> WallGate {
        WallGate {
            barrier: Barrier::new(threads),
            at,
            origin: OnceLock::new(),
        }
    }

    /// When the clock started, once it has.
    pub fn started(&self) -> Option<SystemTime> {
        self.origin.get().map(|o| o.1)
    }
}

impl StartGate for WallGate {
    fn wait(&self) -> Instant {
        self.barrier.wait();
        // The first thread through sleeps; the others wait for it inside get_or_init.
        self.origin
            .get_or_init(|| {
                let now = SystemTime::now();
                match self.at.duration_since(now) {
                    Ok(wait) => {
                        let origin = Instant::now() + wait;
                        std::thread::sleep(wait);
                        (origin, self.at)
                    }
                    Err(_) => {
                        eprintln!(
                            "vblast: --start-at {} had passed when the connections were open: starting now",
                            humantime::format_rfc3339_millis(self.at)
                        );
                        (Instant::now(), now)
                    }
                }
            })
            .0
    }
}

/// `late_ms` of a shard whose clock started at `started` for `--start-at` `at`.
pub fn late_ms(at: SystemTime, started: SystemTime) -> u64 {
    started
        .duration_since(at)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::schedule::Schedule;
    use crate::config::spread::{Shard, parse_start_at};
    use crate::pacing::Pacer;
    use crate::pacing::share;
    use std::time::Duration;

    fn offsets_of(
        schedule: &Schedule,
        shard: Shard,
        threads: usize,
        n: u64,
        origin: Instant,
    ) -> Vec<Duration> {
        let s = shard.share(n);
        let mut out = Vec::new();
        for j in 0..threads {
            let budget = share(n, shard.slots(threads), shard.slot(j));
            let mut p = Pacer::open(
                origin,
                Duration::ZERO,
                None,
                Some(budget),
                schedule,
                shard.slot(j),
                shard.slots(threads),
            );
            // Far enough that every request is due.
            let end = origin + Duration::from_secs(10_000);
            while let Some(d) = p.take_due(end) {
                out.push(d.intended - origin);
            }
        }
        assert_eq!(out.len() as u64, s, "shard {shard} sent its share of -n");
        out
    }

    #[test]
    fn union_of_shards_is_the_single_schedule() {
        let origin = Instant::now();
        let schedules = [
            Schedule::Constant { rate: 1000.0 },
            Schedule::Ramp {
                from: 10.0,
                to: 2000.0,
                over: Duration::from_secs(2),
            },
            Schedule::Steps(vec![
                (100.0, Duration::from_secs(1)),
                (0.0, Duration::from_millis(500)),
                (1500.0, Duration::from_secs(1)),
            ]),
        ];
        for schedule in &schedules {
            for n in [1u64, 7, 1000, 2501] {
                let mut single = offsets_of(schedule, Shard::default(), 3, n, origin);
                single.sort();
                let expect: Vec<Duration> =
                    (0..n).map(|g| schedule.offset_of(g).unwrap()).collect();
                assert_eq!(single, expect, "{schedule:?}: one process");
                for (count, threads) in [(4u64, [1usize, 2, 3, 4]), (3, [2, 2, 5, 1])] {
                    let mut union = Vec::new();
                    for index in 0..count {
                        let shard = Shard { index, count };
                        union.extend(offsets_of(
                            schedule,
                            shard,
                            threads[index as usize],
                            n,
                            origin,
                        ));
                    }
                    union.sort();
                    assert_eq!(union, expect, "{schedule:?} n {n}: {count} shards");
                }
            }
        }
    }

    #[test]
    fn shards_split_connections_and_requests_exactly() {
        for total in [0u64, 1, 5, 16, 40_000, 40_001] {
            for count in [1u64, 3, 4, 16] {
                let parts: Vec<u64> = (0..count)
                    .map(|index| Shard { index, count }.share(total))
                    .collect();
                assert_eq!(parts.iter().sum::<u64>(), total);
                // Per thread inside each shard, through the slots the engine uses.
                for (index, part) in parts.iter().enumerate() {
                    let shard = Shard {
                        index: index as u64,
                        count,
                    };
                    let threads = 3;
                    let sum: u64 = (0..threads)
                        .map(|j| share(total, shard.slots(threads), shard.slot(j)))
                        .sum();
                    assert_eq!(sum, *part, "total {total} shard {shard}");
                }
            }
        }
    }

    #[test]
    fn shard_flag_is_checked() {
        assert_eq!(
            Shard::parse("3/16").unwrap(),
            Shard {
                index: 3,
                count: 16
            }
        );
        assert_eq!(Shard::parse("0/1").unwrap(), Shard::default());
        let e = Shard::parse("16/16").unwrap_err().to_string();
        assert!(e.contains("out of range") && e.contains("0 to 15"), "{e}");
        assert!(Shard::parse("1/0").is_err());
        assert!(Shard::parse("a/4").unwrap_err().to_string().contains("I/N"));
        assert!(Shard::parse("3").is_err());
        assert!(Shard::parse("-1/4").is_err());
    }

    #[test]
    fn start_at_in_the_past_is_refused() {
        let now = SystemTime::now();
        let e = parse_start_at("2020-01-01T00:00:00Z", now)
            .unwrap_err()
            .to_string();
        assert!(e.contains("in the past"), "{e}");
        assert!(
            parse_start_at("tomorrow", now)
                .unwrap_err()
                .to_string()
                .contains("RFC 3339")
        );
        let later = humantime::format_rfc3339_seconds(now + Duration::from_secs(60)).to_string();
        assert!(parse_start_at(&later, now).is_ok());
    }

    #[test]
    fn run_id_is_the_same_for_every_shard_and_differs_between_runs() {
        let scenario = |i: u64| {
            serde_json::json!({"address": "http://x", "load": {"connections": 8,
                "spread": {"shard": {"index": i, "count": 4}, "start_at": "2026-12-01T10:00:00Z"}}})
        };
        let at = Some("2026-12-01T10:00:00Z");
        let a = run_id(None, at, &scenario(0)).unwrap();
        assert_eq!(a, run_id(None, at, &scenario(3)).unwrap());
        assert_ne!(
            a,
            run_id(None, Some("2026-12-01T10:00:01Z"), &scenario(0)).unwrap()
        );
        let mut other = scenario(0);
        let mut threads = scenario(1);
        threads["load"]["threads"] = 7.into();
        assert_eq!(
            a,
            run_id(None, at, &threads).unwrap(),
            "threads are per machine"
        );
        other["load"]["connections"] = 9.into();
        assert_ne!(a, run_id(None, at, &other).unwrap());
        assert_eq!(run_id(Some("mine"), at, &other).unwrap(), "mine");
        assert_eq!(run_id(None, None, &other), None);
    }
}
