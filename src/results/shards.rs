//! The shards' side of results files: the record a shard's file carries, the checks that
//! files merged together are the shards of one run, how their clocks line up, and the
//! results printed on stdout (`--output -`) for containers whose only way out is their log.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::config::spread::MAX_SHARDS;
use crate::error::Cause;
use crate::results::Results;

/// The lines around a results file printed on stdout (`--output -`).
pub const BEGIN: &str = "----- BEGIN VBLAST RESULTS -----";
pub const END: &str = "----- END VBLAST RESULTS -----";

/// `--output -`: the results file on stdout between `BEGIN` and `END`, after the report,
/// for containers whose only way out is their log.
pub fn print_results(r: &Results) -> Result<(), Cause> {
    use std::io::Write;
    let mut buf = Vec::new();
    let _ = writeln!(buf, "{BEGIN}");
    r.write_to(&mut buf)
        .map_err(|e| Cause::io("cannot write the results", e))?;
    let _ = writeln!(buf, "{END}");
    std::io::stdout()
        .lock()
        .write_all(&buf)
        .map_err(|e| Cause::io("cannot write the results to stdout", e))
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

/// Checks that results files are the shards of one run: all or none carry a shard record;
/// one run id, one shard count; every index 0..n once. Messages name the files.
pub fn check_set(parts: &[Results]) -> Result<(), Cause> {
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
        return Err(Cause::Said(format!(
            "{} is not a shard (no --shard) but {} is: merge the shards of one run only",
            name(plain),
            name(sharded[0])
        )));
    }
    let first = sharded[0];
    let f = first.shard.as_ref().expect("sharded");
    let mut seen: Vec<Option<&Results>> = vec![None; f.count.min(MAX_SHARDS) as usize];
    for r in &sharded {
        let s = r.shard.as_ref().expect("sharded");
        if s.run_id != f.run_id {
            return Err(Cause::Said(format!(
                "{} and {} are not shards of one run: run ids {} and {}",
                name(first),
                name(r),
                f.run_id,
                s.run_id
            )));
        }
        if s.count != f.count {
            return Err(Cause::Said(format!(
                "{} and {} are not shards of one run: {} and {} shards",
                name(first),
                name(r),
                f.count,
                s.count
            )));
        }
        let Some(slot) = seen.get_mut(s.index as usize) else {
            return Err(Cause::Said(format!(
                "{}: shard index {} out of range for {} shards",
                name(r),
                s.index,
                s.count
            )));
        };
        if let Some(other) = slot {
            return Err(Cause::Said(format!(
                "shard {}/{} of run {} is given twice: {} and {}",
                s.index,
                s.count,
                s.run_id,
                name(other),
                name(r)
            )));
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
        return Err(Cause::Said(format!(
            "run {} has {} shards but shard{} {} {} missing (given: {} files)",
            f.run_id,
            f.count,
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" },
            sharded.len()
        )));
    }
    Ok(())
}
