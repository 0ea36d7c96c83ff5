//! How a run spreads beyond one process: its shard (`--shard i/n`, see `session::shard`
//! for the numbering), the instant every shard starts its clock at, the local addresses its
//! connections come from, and how the shards share one fixture (`Sharding`).

use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

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
    pub fn parse(s: &str) -> Result<Shard, SpreadError> {
        let bad = || SpreadError::NotAShard(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_SHARDS {
            return Err(SpreadError::ShardCount(s.to_string()));
        }
        if index >= count {
            return Err(SpreadError::ShardIndex {
                given: s.to_string(),
                index,
                count,
            });
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
pub fn parse_start_at(s: &str, now: SystemTime) -> Result<SystemTime, SpreadError> {
    let at = humantime::parse_rfc3339_weak(s).map_err(|e| SpreadError::NotAnInstant {
        given: s.to_string(),
        reason: e.to_string(),
    })?;
    if at <= now {
        let ago = now.duration_since(at).unwrap_or_default();
        return Err(SpreadError::StartPassed {
            given: s.to_string(),
            ago: humantime::format_duration(Duration::from_secs(ago.as_secs().max(1))).to_string(),
            now: humantime::format_rfc3339_seconds(now).to_string(),
        });
    }
    Ok(at)
}

/// A refused `--shard` or `--start-at`: which flag, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpreadError {
    #[error("--shard {0}: expected I/N, shard I of N counted from 0 (0/4 .. 3/4)")]
    NotAShard(String),
    #[error("--shard {0}: the number of shards must be 1 to {MAX_SHARDS}")]
    ShardCount(String),
    #[error("--shard {given}: shard index {index} is out of range: {count} shards are numbered 0 to {}", count - 1)]
    ShardIndex {
        given: String,
        index: u64,
        count: u64,
    },
    #[error(
        "--start-at {given}: not an RFC 3339 instant ({reason}); example: 2026-12-01T10:00:00Z"
    )]
    NotAnInstant { given: String, reason: String },
    #[error(
        "--start-at {given} is in the past ({ago} ago, now is {now}): give a later instant, leaving time for setup and opening the connections"
    )]
    StartPassed {
        given: String,
        ago: String,
        now: String,
    },
}

impl From<SpreadError> for crate::error::Cause {
    fn from(e: SpreadError) -> Self {
        crate::error::Cause::Said(e.to_string())
    }
}

/// What a run says about its shards, beyond the load's `Spread`: given by `--shard`,
/// `--run-id`, `--start-at`, `--external-setup` and `--shards-wait`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sharding {
    /// `--shard` as given (None: not a shard).
    pub shard: Option<Shard>,
    pub run_id: Option<String>,
    pub start_at: Option<String>,
    /// The shared fixture comes from `vblast setup` and goes with `vblast cleanup`.
    pub external_setup: bool,
    /// How long shard 0 waits for the others before it removes the shared fixture.
    pub shards_wait: Option<Duration>,
    /// The run id under which this shard shares the run's fixture with the others (a
    /// sharded Vault run of operations that make one, without `--no-setup`).
    pub shared_fixture: Option<String>,
}

/// Splits `total` items over `parts` as evenly as possible; part `i` gets the result.
pub fn share(total: u64, parts: usize, i: usize) -> u64 {
    let parts = parts as u64;
    let i = i as u64;
    total / parts + u64::from(i < total % parts)
}
