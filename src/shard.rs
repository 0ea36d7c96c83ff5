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

use std::net::IpAddr;
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::engine::StartGate;
use crate::pacing::share;
use crate::results::Results;

/// `--shard`, `--start-at`, `--run-id`.
#[derive(Args, Debug, Clone, Default)]
pub struct ShardArgs {
    /// Run shard I of N of the load (0 <= I < N): its share of -c, -n and the -R schedule.
    /// The shards' results files merge with `vblast report` into the whole run.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,

    /// Start the measured run at this wall-clock instant (RFC 3339, e.g.
    /// 2026-12-01T10:00:00Z), after setup and opening connections: every shard starts its
    /// clock together.
    #[arg(long, value_name = "RFC3339")]
    pub start_at: Option<String>,

    /// Identifies the run in every shard's results file (default with --start-at: derived
    /// from the start instant and the scenario).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,

    /// A sharded Vault run's shared fixture comes from `vblast setup --run-id ID` and goes
    /// with `vblast cleanup` (default: shard 0 sets it up, and removes it once every shard
    /// has ended). Give it to every shard or to none (`--external-setup=false` is the default).
    #[arg(
        long,
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        default_value = "false",
        action = clap::ArgAction::Set
    )]
    pub external_setup: bool,

    /// Shard 0 (sharing a fixture it set up): how long, after its own load, it waits for the
    /// other shards to end before it removes the fixture (default: until --start-at +
    /// -z + --timeout + 60 s when both are given, else 10m).
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub shards_wait: Option<Duration>,
}

/// Shard `index` of `count`; 0 of 1 is the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Default for Shard {
    fn default() -> Shard {
        Shard { index: 0, count: 1 }
    }
}

/// Most shards of one run.
pub const MAX_SHARDS: u64 = 100_000;

impl Shard {
    /// `I/N`, with 0 <= I < N.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {s}: expected I/N, shard I of N counted from 0 (0/4 .. 3/4)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_SHARDS {
            return Err(format!(
                "--shard {s}: the number of shards must be 1 to {MAX_SHARDS}"
            ));
        }
        if index >= count {
            return Err(format!(
                "--shard {s}: shard index {index} is out of range: {count} shards are numbered 0 to {}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    pub fn is_whole(&self) -> bool {
        self.count <= 1
    }

    /// This shard's part of `total` (connections, requests): share `index` of `count`.
    pub fn share(&self, total: u64) -> u64 {
        share(total, self.count.max(1) as usize, self.index as usize)
    }

    /// The global thread slot of this shard's thread `thread`.
    pub fn slot(&self, thread: usize) -> usize {
        self.index as usize + self.count.max(1) as usize * thread
    }

    /// Slots over all shards when this shard runs `threads` threads.
    pub fn slots(&self, threads: usize) -> usize {
        self.count.max(1) as usize * threads
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// How a run spreads beyond one process's defaults: its shard, its start instant, the
/// local addresses its connections come from. Part of the load (and of the engine's plan,
/// so worker processes see it too).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    #[serde(default, skip_serializing_if = "Shard::is_whole")]
    pub shard: Shard,
    /// RFC 3339 instant at which the measured run starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// Local addresses connections are bound to, round-robin (empty: the kernel's choice).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_addrs: Vec<IpAddr>,
}

impl Spread {
    /// The start instant, if any.
    pub fn start_at(&self) -> Option<SystemTime> {
        self.start_at
            .as_deref()
            .and_then(|s| humantime::parse_rfc3339_weak(s).ok())
    }
}

/// Parses `--start-at` and refuses an instant that has passed.
pub fn parse_start_at(s: &str, now: SystemTime) -> Result<SystemTime, String> {
    let at = humantime::parse_rfc3339_weak(s).map_err(|e| {
        format!("--start-at {s}: not an RFC 3339 instant ({e}); example: 2026-12-01T10:00:00Z")
    })?;
    if at <= now {
        let ago = now.duration_since(at).unwrap_or_default();
        return Err(format!(
            "--start-at {s} is in the past ({} ago, now is {}): give a later instant, leaving time for setup and opening the connections",
            humantime::format_duration(Duration::from_secs(ago.as_secs().max(1))),
            humantime::format_rfc3339_seconds(now)
        ));
    }
    Ok(at)
}

/// The lines around a results file printed on stdout (`--output -`).
pub const BEGIN: &str = "----- BEGIN VBLAST RESULTS -----";
pub const END: &str = "----- END VBLAST RESULTS -----";

/// `--output -`: the results file on stdout between `BEGIN` and `END`, after the report,
/// for containers whose only way out is their log.
pub fn print_results(r: &Results) -> Result<(), String> {
    use std::io::Write;
    let mut buf = Vec::new();
    let _ = writeln!(buf, "{BEGIN}");
    r.write_to(&mut buf)
        .map_err(|e| format!("cannot write the results: {e}"))?;
    let _ = writeln!(buf, "{END}");
    std::io::stdout()
        .lock()
        .write_all(&buf)
        .map_err(|e| format!("cannot write the results to stdout: {e}"))
}

/// Checks the shard flags against the rest of the run: a sharded run needs a run id
/// (`--run-id` or `--start-at`), `--start-at` must lie ahead, and Vault operations that
/// create fixtures share one fixture named after `--run-id` (set up and removed once, by
/// shard 0 or by `vblast setup`/`cleanup`; src/fixtures.rs), or run over data set up
/// beforehand (`--no-setup`).
pub fn validate(args: &ShardArgs, op: Option<&str>, no_setup: bool) -> Result<(), String> {
    if let Some(at) = &args.start_at {
        parse_start_at(at, SystemTime::now())?;
    }
    if args.run_id.as_deref().is_some_and(|id| {
        id.is_empty() || id.len() > 128 || id.bytes().any(|b| b.is_ascii_control())
    }) {
        return Err("--run-id must be 1 to 128 printable characters".into());
    }
    let Some(shard) = args.shard.filter(|s| !s.is_whole()) else {
        if args.external_setup || args.shards_wait.is_some() {
            return Err(
                "--external-setup and --shards-wait apply to sharded runs (--shard I/N, N > 1)"
                    .into(),
            );
        }
        return Ok(());
    };
    if args.shards_wait.is_some_and(|w| w.is_zero()) {
        return Err("--shards-wait must be longer than zero".into());
    }
    if args.run_id.is_none() && args.start_at.is_none() {
        return Err(format!(
            "--shard {shard} needs --start-at (every shard starts its clock together) or --run-id, so that `vblast report` can tell this run's shards from any other's"
        ));
    }
    if let Some(op) = op
        && !no_setup
    {
        // The fixture is shared (src/fixtures.rs): `vblast setup --run-id` makes it once.
        crate::fixtures::check_ops(op, &format!("--shard {shard}"))?;
        let names = op
            .split(',')
            .map(|x| x.split(':').next().unwrap_or("").trim());
        if let Some(name) = names
            .into_iter()
            .find(|n| crate::vault::ops::fixture_of(n) != Some(crate::vault::ops::Fixture::None))
            && args.run_id.is_none()
        {
            return Err(format!(
                "--shard {shard} with {name}: the shards share one fixture named after the run id (shard 0 makes it, or `vblast setup --run-id ID` with --external-setup): give every shard the same --run-id"
            ));
        }
    }
    Ok(())
}

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

/// What a shard's results file says about the shard, so the merge can line shards up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    pub index: u64,
    pub count: u64,
    pub run_id: String,
    /// When this shard's clock started (its measured run's origin), RFC 3339 UTC, ms.
    pub clock_start: String,
    /// How long after `--start-at` that was (0 when it started on time; the shards'
    /// timelines are merged second by second from their own clock starts).
    pub late_ms: u64,
}

/// How many whole seconds after the earliest shard's clock each file's clock started
/// (rounded to the nearest second: the timeline is kept per second), in the order given;
/// 0 for files without a shard record or a readable clock start. Shards started together
/// with `--start-at` have 0 each; a shard that started late has its timeline moved by this
/// at merge, so that the merged timeline lines up on wall-clock time.
pub fn clock_offsets(parts: &[crate::results::Results]) -> Vec<u64> {
    let starts: Vec<Option<SystemTime>> = parts
        .iter()
        .map(|r| {
            r.shard
                .as_ref()
                .and_then(|s| humantime::parse_rfc3339_weak(&s.clock_start).ok())
        })
        .collect();
    let Some(earliest) = starts.iter().flatten().min().copied() else {
        return vec![0; parts.len()];
    };
    starts
        .iter()
        .map(|s| {
            s.and_then(|t| t.duration_since(earliest).ok())
                .map_or(0, |d| (d.as_millis() as u64 + 500) / 1000)
        })
        .collect()
}

/// The shard record of a run's results file: when `--shard` or `--run-id` was given.
pub fn record(
    args: &ShardArgs,
    scenario: &crate::scenario::Scenario,
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

/// Checks that results files are the shards of one run: all or none carry a shard record;
/// one run id, one shard count; every index 0..n once. Messages name the files.
pub fn check_set(parts: &[Results]) -> Result<(), String> {
    let name = |r: &Results| {
        if r.source.is_empty() {
            "(results in memory)".to_string()
        } else {
            r.source.clone()
        }
    };
    let sharded: Vec<&Results> = parts.iter().filter(|r| r.shard.is_some()).collect();
    if sharded.is_empty() {
        return Ok(());
    }
    if let Some(plain) = parts.iter().find(|r| r.shard.is_none()) {
        return Err(format!(
            "{} is not a shard (no --shard) but {} is: merge the shards of one run only",
            name(plain),
            name(sharded[0])
        ));
    }
    let first = sharded[0];
    let f = first.shard.as_ref().expect("sharded");
    let mut seen: Vec<Option<&Results>> = vec![None; f.count.min(MAX_SHARDS) as usize];
    for r in &sharded {
        let s = r.shard.as_ref().expect("sharded");
        if s.run_id != f.run_id {
            return Err(format!(
                "{} and {} are not shards of one run: run ids {} and {}",
                name(first),
                name(r),
                f.run_id,
                s.run_id
            ));
        }
        if s.count != f.count {
            return Err(format!(
                "{} and {} are not shards of one run: {} and {} shards",
                name(first),
                name(r),
                f.count,
                s.count
            ));
        }
        let Some(slot) = seen.get_mut(s.index as usize) else {
            return Err(format!(
                "{}: shard index {} out of range for {} shards",
                name(r),
                s.index,
                s.count
            ));
        };
        if let Some(other) = slot {
            return Err(format!(
                "shard {}/{} of run {} is given twice: {} and {}",
                s.index,
                s.count,
                s.run_id,
                name(other),
                name(r)
            ));
        }
        *slot = Some(r);
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_none())
        .map(|(i, _)| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "run {} has {} shards but shard{} {} {} missing (given: {} files)",
            f.run_id,
            f.count,
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" },
            sharded.len()
        ));
    }
    Ok(())
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
    use crate::pacing::Pacer;
    use crate::schedule::Schedule;

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
        let e = Shard::parse("16/16").unwrap_err();
        assert!(e.contains("out of range") && e.contains("0 to 15"), "{e}");
        assert!(Shard::parse("1/0").is_err());
        assert!(Shard::parse("a/4").unwrap_err().contains("I/N"));
        assert!(Shard::parse("3").is_err());
        assert!(Shard::parse("-1/4").is_err());
    }

    #[test]
    fn start_at_in_the_past_is_refused() {
        let now = SystemTime::now();
        let e = parse_start_at("2020-01-01T00:00:00Z", now).unwrap_err();
        assert!(e.contains("in the past"), "{e}");
        assert!(
            parse_start_at("tomorrow", now)
                .unwrap_err()
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
