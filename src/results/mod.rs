//! The results file: one versioned JSON document per run that keeps everything needed to
//! report it again or merge it with others, losslessly.
//!
//! It holds every key of the JSON report (the same values, so scripts read either), and:
//! `results_version`, `started_at` (RFC 3339, UTC), `host`, `scenario` (what the run was
//! asked to do, with tokens and secret values removed by `crate::redact`), `op_names`, for an
//! https target `tls_probe` (ab's TLS lines, optional: older files lack it), and
//! `stats`: the raw mergeable counters, every histogram per operation as a compressed
//! HdrHistogram V2 (base64), and the per-second timeline. Reading rebuilds the `Summary`
//! from `stats`, so a file read back, or several shard files merged, report exactly what
//! one run over all their requests would.

pub mod deliver;
pub mod shards;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ab::report::TlsFacts;
use crate::error::Cause;
use crate::report::{self, Format, RunInfo, Summary};
use crate::stats::Stats;

/// The version of the file's layout this vblast writes and reads (and any older one).
pub const RESULTS_VERSION: u64 = 1;

/// One run's results, or several runs' merged.
#[derive(Clone, Debug)]
pub struct Results {
    /// The vblast that wrote them.
    pub vblast_version: String,
    /// When the run began, RFC 3339 UTC (the earliest, when merged).
    pub started_at: String,
    /// The machine that ran it (all of them, comma-separated, when merged).
    pub host: String,
    /// What the run was asked to do, redacted.
    pub scenario: Value,
    pub run: RunInfo,
    pub op_names: Vec<String>,
    pub stats: Stats,
    /// Where they were read from, for messages (empty when built in memory).
    pub source: String,
    /// A shard's run id, index and clock start (`--shard`, `src/results/shards.rs`).
    pub shard: Option<crate::results::shards::ShardRecord>,
    /// https: the handshake made before the run, for ab's TLS lines (`src/ab/tls.rs`).
    pub tls_probe: Option<TlsFacts>,
    /// Each node's samples taken during the run (src/server_stats/).
    pub server_samples: Option<crate::server_stats::ServerSamples>,
    /// The level of the percentiles' confidence intervals (`--confidence`; not saved:
    /// the intervals are rebuilt from the histograms at the level asked when read).
    pub confidence: crate::stats::interval::Confidence,
    /// The run's thresholds with their verdicts (`--threshold`); saved, and shown again by
    /// `vblast report` as they were judged.
    pub thresholds: Vec<crate::threshold::ThresholdResult>,
}

/// What is written: the JSON report's keys, then the rest.
#[derive(Serialize)]
struct Written<'a> {
    results_version: u64,
    #[serde(flatten)]
    summary: &'a Summary,
    started_at: &'a str,
    host: &'a str,
    scenario: &'a Value,
    op_names: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<&'a crate::results::shards::ShardRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tls_probe: Option<&'a TlsFacts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_samples: Option<&'a crate::server_stats::ServerSamples>,
    stats: &'a Stats,
}

/// What is read back (the report's other keys are rebuilt from `stats`).
#[derive(Deserialize)]
struct Stored {
    vblast_version: String,
    started_at: String,
    host: String,
    #[serde(default)]
    scenario: Value,
    run: RunInfo,
    op_names: Vec<String>,
    #[serde(default)]
    shard: Option<crate::results::shards::ShardRecord>,
    #[serde(default)]
    tls_probe: Option<TlsFacts>,
    #[serde(default)]
    server_samples: Option<crate::server_stats::ServerSamples>,
    #[serde(default)]
    thresholds: Vec<crate::threshold::ThresholdResult>,
}

impl Results {
    /// A run's results. `started_at` is when its load began; the scenario is redacted here,
    /// whatever the caller passes.
    pub fn build(
        run: RunInfo,
        stats: Stats,
        op_names: Vec<String>,
        mut scenario: Value,
        started_at: SystemTime,
    ) -> Results {
        crate::redact::json(&mut scenario);
        Results {
            vblast_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: humantime::format_rfc3339_millis(started_at).to_string(),
            host: hostname(),
            scenario,
            run,
            op_names,
            stats,
            source: String::new(),
            shard: None,
            tls_probe: None,
            server_samples: None,
            confidence: Default::default(),
            thresholds: Vec::new(),
        }
    }

    /// Saves the HdrHistogram interval log of the run (`--hlog`), in intervals of
    /// `interval_s` seconds.
    pub fn save_hlog(&self, path: &std::path::Path, interval_s: u64) -> Result<(), Cause> {
        let start = humantime::parse_rfc3339(&self.started_at).unwrap_or(SystemTime::UNIX_EPOCH);
        let mut text = Vec::new();
        crate::report::hlog::render(&self.stats, start, interval_s, &mut text)
            .map_err(|e| Cause::io("cannot write the interval log", e))?;
        std::fs::write(path, text)
            .map_err(|e| Cause::io(format!("cannot write {}", path.display()), e))
    }

    /// The summary every format renders, rebuilt from the raw stats.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::new_at(
            self.run.clone(),
            &self.stats,
            &self.op_names,
            self.confidence,
        );
        s.vblast_version = self.vblast_version.clone();
        s.server = self.server_summary(&s);
        s.thresholds = self.thresholds.clone();
        s
    }

    /// The nodes' samples beside the client's figures (src/server_stats/summary.rs).
    fn server_summary(&self, s: &Summary) -> Option<crate::server_stats::ServerSummary> {
        let samples = self.server_samples.as_ref()?;
        let start = humantime::parse_rfc3339(&self.started_at).ok()?;
        let start_ms = start
            .duration_since(SystemTime::UNIX_EPOCH)
            .ok()?
            .as_millis() as u64;
        let from_ms = start_ms + (s.run.warmup_s * 1000.0) as u64;
        let e = &self.stats.errors;
        let client = crate::server_stats::ClientSide {
            start_ms: from_ms,
            end_ms: from_ms + (s.duration_s * 1000.0) as u64,
            warmup: s.run.warmup_s > 0.0,
            answered: s
                .requests
                .saturating_sub(e.connect + e.read + e.write + e.timeout)
                + self.stats.staleness.as_ref().map_or(0, |st| st.requests),
            mean_ms: s.latency_ms.mean,
            connections: s.run.connections,
            interrupted: s.run.interrupted,
            shards: self.shard.as_ref().map_or(0, |r| r.count),
        };
        Some(samples.summary(&client, start_ms))
    }

    /// Writes the results document (pretty JSON and a final newline).
    pub fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let summary = self.summary();
        let doc = Written {
            results_version: RESULTS_VERSION,
            summary: &summary,
            started_at: &self.started_at,
            host: &self.host,
            scenario: &self.scenario,
            op_names: &self.op_names,
            shard: self.shard.as_ref(),
            tls_probe: self.tls_probe.as_ref(),
            server_samples: self.server_samples.as_ref(),
            stats: &self.stats,
        };
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)
    }

    /// Writes the results file at `path`; `-` prints it on stdout between the lines
    /// `crate::results::shards::BEGIN` and `END` (a pod's log, for `deploy/kubernetes/collect.sh`).
    pub fn write(&self, path: &Path) -> Result<(), Cause> {
        if path.as_os_str() == "-" {
            return crate::results::shards::print_results(self);
        }
        let mut buf = Vec::new();
        self.write_to(&mut buf)
            .and_then(|()| std::fs::write(path, &buf))
            .map_err(|e| Cause::io(format!("cannot write {}", path.display()), e))
    }

    /// Reads a results file.
    pub fn read(path: &Path) -> Result<Results, Cause> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Cause::io(format!("cannot read {name}"), e))?;
        Results::parse(&text, &name)
    }

    /// Reads a results document; `name` is where it came from, for messages.
    pub fn parse(text: &str, name: &str) -> Result<Results, Cause> {
        let not_results =
            |why: &str| Cause::Said(format!("{name} is not a vblast results file ({why})"));
        let mut doc: Value =
            serde_json::from_str(text).map_err(|e| not_results(&format!("not JSON: {e}")))?;
        let Some(obj) = doc.as_object_mut() else {
            return Err(not_results("not a JSON object"));
        };
        let version = match obj.get("results_version") {
            None if obj.contains_key("vblast_version") && obj.contains_key("latency_ms") => {
                return Err(Cause::Said(format!(
                    "{name} is a vblast JSON report, not a results file: it has no histograms to merge (results files come from --output)"
                )));
            }
            None => return Err(not_results("no results_version")),
            Some(v) => v
                .as_u64()
                .filter(|&v| v >= 1)
                .ok_or_else(|| not_results(&format!("results_version {v}")))?,
        };
        if obj.get("kind").and_then(Value::as_str) == Some("sweep") {
            return Err(Cause::Said(format!(
                "{name} is a sweep (vblast sweep --output), not one run's results: show it with vblast report {name} alone, or compare sweeps with vblast compare"
            )));
        }
        if version > RESULTS_VERSION {
            return Err(Cause::Said(format!(
                "{name} is results version {version}, newer than this vblast reads (up to {RESULTS_VERSION}): use a newer vblast"
            )));
        }
        let stats = obj.remove("stats").unwrap_or(Value::Null);
        let damaged = |what: &str, source| Cause::Json {
            what: format!("{name}: damaged results{what}"),
            source,
        };
        let stored: Stored = serde_json::from_value(doc).map_err(|e| damaged("", e))?;
        let stats: Stats = serde_json::from_value(stats).map_err(|e| damaged(": stats", e))?;
        if stats.ops.len() != stored.op_names.len() {
            return Err(Cause::Said(format!(
                "{name}: damaged results: {} operation names but {} operations in stats",
                stored.op_names.len(),
                stats.ops.len()
            )));
        }
        check_counts(&stats, &stored.op_names, name)?;
        Ok(Results {
            vblast_version: stored.vblast_version,
            started_at: stored.started_at,
            host: stored.host,
            scenario: stored.scenario,
            run: stored.run,
            op_names: stored.op_names,
            stats,
            source: name.to_string(),
            shard: stored.shard,
            tls_probe: stored.tls_probe,
            server_samples: stored.server_samples,
            thresholds: stored.thresholds,
            confidence: Default::default(),
        })
    }
}

/// The one check of what a results file's counts must hold, made when it is read: a
/// hand-edited or damaged file that breaks one is refused with the field named, never
/// reported with impossible figures (more successes than requests, a negative duration).
fn check_counts(stats: &Stats, op_names: &[String], name: &str) -> Result<(), Cause> {
    let damaged = |what: String| Err(Cause::Said(format!("{name}: damaged results: {what}")));
    if !(stats.elapsed_s.is_finite() && stats.elapsed_s >= 0.0) {
        return damaged(format!(
            "stats.elapsed_s is {}, where a duration is 0 seconds or more",
            stats.elapsed_s
        ));
    }
    for (i, (op, op_name)) in stats.ops.iter().zip(op_names).enumerate() {
        if op.ok > op.requests {
            return damaged(format!(
                "stats.ops[{i}] ({}): ok {} is above its requests {}",
                crate::report::shown(op_name),
                op.ok,
                op.requests
            ));
        }
    }
    Ok(())
}

/// Which results files a merge takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merging {
    /// The shards of one run only: one run id, every shard once.
    Shards,
    /// Any runs (`--merge-unrelated`), their timelines laid over each other from each
    /// run's own start; the same results given twice are still refused.
    Unrelated,
}

/// Merges the results of several shards of one run into one, losslessly: counters add,
/// histograms add, the timeline adds second by second (shards started together), the
/// duration is the longest shard's. The shards must run the same operations in the same
/// load model at the same target rate, with the same keep-alive setting. With
/// `Merging::Shards`, results that are not the shards of one run are refused, with what
/// tells them apart.
pub fn merge(parts: &[Results], merging: Merging) -> Result<Results, Cause> {
    let Some((first, rest)) = parts.split_first() else {
        return Err("no results to merge".into());
    };
    check_distinct(parts)?;
    let offsets = match merging {
        Merging::Shards => {
            // Shards of one run: one run id, every shard once (src/results/shards.rs).
            check_related(parts)?;
            // Each shard's timeline moves by its clock offset (src/results/shards.rs,
            // `clock_offsets`), so the merged seconds are wall-clock seconds.
            crate::results::shards::clock_offsets(parts)
        }
        Merging::Unrelated => vec![0; parts.len()],
    };
    let timelines: Vec<(&crate::stats::Timeline, u64)> = parts
        .iter()
        .zip(&offsets)
        .map(|(r, o)| (&r.stats.timeline, *o))
        .collect();
    let timeline = crate::stats::Timeline::merge_shifted(&timelines);
    let without_timeline = |r: &Results, offset: u64| {
        let mut s = r.stats.clone();
        s.timeline = crate::stats::Timeline::default();
        s.blocks = r.stats.blocks.shifted(offset.saturating_mul(1000)); // the clock offset too
        // A late shard's run ends that much later: the merged duration covers it.
        if s.elapsed_s > 0.0 {
            s.elapsed_s += offset as f64;
        }
        s
    };
    let mut out = first.clone();
    out.stats = without_timeline(first, offsets[0]);
    out.shard = None;
    for (i, r) in rest.iter().enumerate() {
        let mismatch = |what: &str, a: String, b: String| {
            Cause::Said(format!(
                "{} and {} are not shards of one run: {what} {a} and {b}",
                label(first, 0),
                label(r, i + 1)
            ))
        };
        if r.op_names != first.op_names {
            return Err(mismatch(
                "operations",
                format!("{:?}", first.op_names),
                format!("{:?}", r.op_names),
            ));
        }
        if r.run.model != first.run.model {
            return Err(mismatch(
                "load models",
                format!("{:?}", first.run.model).to_lowercase(),
                format!("{:?}", r.run.model).to_lowercase(),
            ));
        }
        if r.run.target_rate != first.run.target_rate {
            return Err(mismatch(
                "target rates",
                format!("{:?}", first.run.target_rate),
                format!("{:?}", r.run.target_rate),
            ));
        }
        if r.run.keepalive != first.run.keepalive {
            return Err(mismatch(
                "keep-alive settings",
                first.run.keepalive.to_string(),
                r.run.keepalive.to_string(),
            ));
        }
        out.stats.merge(&without_timeline(r, offsets[i + 1]));
        let run = &mut out.run;
        run.connections += r.run.connections;
        run.threads += r.run.threads;
        run.processes += r.run.processes;
        run.interrupted |= r.run.interrupted;
        run.warmup_s = run.warmup_s.max(r.run.warmup_s);
        run.setup_s = run.setup_s.max(r.run.setup_s);
        run.cleanup_s = run.cleanup_s.max(r.run.cleanup_s);
        run.setup_phases = crate::stats::phases::merge(
            [&run.setup_phases[..], &r.run.setup_phases[..]].into_iter(),
        );
        add_distinct(&mut run.target, &r.run.target);
        add_distinct(&mut out.host, &r.host);
        // RFC 3339 UTC with the same precision: the text orders as the time does.
        if r.started_at < out.started_at {
            out.started_at = r.started_at.clone();
        }
    }
    out.stats.timeline = timeline;
    out.server_samples = crate::server_stats::ServerSamples::merge(
        parts.iter().filter_map(|r| r.server_samples.as_ref()),
    );
    out.source = parts
        .iter()
        .map(|r| r.source.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    Ok(out)
}

/// What names one run's results, or one shard's, whatever file they were copied to.
fn identity(r: &Results) -> String {
    match &r.shard {
        Some(s) => format!("shard {}/{} of run {}", s.index, s.count, s.run_id),
        None => format!("the run started {} on {}", r.started_at, r.host),
    }
}

fn label(r: &Results, i: usize) -> String {
    if r.source.is_empty() {
        format!("results {}", i + 1)
    } else {
        r.source.clone()
    }
}

/// The same results twice (one file given twice, or a copy of it) are refused: merged,
/// they would count every request twice.
fn check_distinct(parts: &[Results]) -> Result<(), Cause> {
    for (i, a) in parts.iter().enumerate() {
        for (j, b) in parts.iter().enumerate().skip(i + 1) {
            if identity(a) == identity(b) && a.stats.requests() == b.stats.requests() {
                return Err(Cause::Said(format!(
                    "{} and {} hold the same results ({}): a run given twice would count every request twice",
                    label(a, i),
                    label(b, j),
                    identity(a)
                )));
            }
        }
    }
    Ok(())
}

/// Results from different runs are not merged unless asked: only the shards of one run
/// (one run id) are. The message names what differs.
fn check_related(parts: &[Results]) -> Result<(), Cause> {
    const FORCE: &str =
        "--merge-unrelated merges them anyway; vblast compare puts runs side by side";
    if parts.iter().all(|r| r.shard.is_none()) {
        let (a, b) = (&parts[0], &parts[1]);
        return Err(Cause::Said(format!(
            "{} and {} are not shards of one run: neither has a run id ({}: {}; {}: {}); {FORCE}",
            label(a, 0),
            label(b, 1),
            label(a, 0),
            identity(a),
            label(b, 1),
            identity(b)
        )));
    }
    crate::results::shards::check_set(parts).map_err(|e| Cause::Said(format!("{e}; {FORCE}")))
}

/// Appends `item` to a comma-separated list unless it is already there.
fn add_distinct(list: &mut String, item: &str) {
    if !list.split(", ").any(|x| x == item) {
        list.push_str(", ");
        list.push_str(item);
    }
}

/// Reads results files and merges them when there are several; one file named twice
/// (by any path to it) is refused.
pub fn load(paths: &[PathBuf], merging: Merging) -> Result<Results, Cause> {
    for (i, a) in paths.iter().enumerate() {
        for b in &paths[i + 1..] {
            if let (Ok(x), Ok(y)) = (a.canonicalize(), b.canonicalize())
                && x == y
            {
                return Err(Cause::Said(format!(
                    "{} is given twice{}: a run given twice would count every request twice",
                    a.display(),
                    if a.as_os_str() == b.as_os_str() {
                        String::new()
                    } else {
                        format!(" (as {})", b.display())
                    }
                )));
            }
        }
    }
    let parts = paths
        .iter()
        .map(|p| Results::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    match parts.len() {
        0 => Err("give at least one results file".into()),
        1 => Ok(parts.into_iter().next().expect("one")),
        _ => merge(&parts, merging),
    }
}

/// `vblast report FILE...`: renders one results file, or several merged, in `format`;
/// returns the summary (for the exit status).
pub fn report_files(
    paths: &[PathBuf],
    format: Format,
    out: &mut dyn Write,
) -> Result<Summary, Cause> {
    let summary = load(paths, Merging::Shards)?.summary();
    report::render(&summary, format, out).map_err(|e| Cause::io("cannot write the report", e))?;
    Ok(summary)
}

/// This machine's host name ("unknown" if it cannot be had).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for writes of its length, which is what is passed;
    // gethostname writes at most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match String::from_utf8_lossy(&buf[..end]).into_owned() {
        h if h.is_empty() => "unknown".into(),
        h => h,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Model, Percentiles};
    use crate::stats::Hist;
    use serde_json::json;
    use std::time::Duration;

    fn info(connections: u64) -> RunInfo {
        RunInfo {
            operation: "kv-read,kv-write".into(),
            threads: 2,
            model: Model::Open,
            target_rate: Some(500.0),
            ..RunInfo::sample("http://127.0.0.1:8200", connections)
        }
    }

    /// A shard's stats: `latencies` (microseconds) for kv-read, every 10th failing with
    /// a 503, a few kv-writes, one row of the timeline per 100 requests.
    fn shard(latencies: &[u64], seed: u64) -> Stats {
        let mut s = Stats::new(2);
        for (i, &us) in latencies.iter().enumerate() {
            let op = &mut s.ops[0];
            op.requests += 1;
            op.latency.record(us);
            op.service.record(us / 2 + 1);
            let ok = i % 10 != 0;
            if ok {
                op.ok += 1;
                *s.status.entry(200).or_default() += 1;
            } else {
                s.errors.status += 1;
                *s.status.entry(503).or_default() += 1;
            }
            s.timeline.record(i as u64 / 100, ok, Some(us));
        }
        s.ops[1].requests = 3 + seed;
        s.ops[1].ok = 3;
        s.ops[1].latency.record(1000 * (seed + 1));
        s.connect.record(300 + seed);
        s.connections_opened = 10 + seed;
        s.bytes_sent = 1000 * (seed + 1);
        s.bytes_received = 2000 * (seed + 1);
        s.late = seed;
        s.max_lag_us = 5000 * (seed + 1);
        s.note("bad response: 503", latencies.len() as u64 / 10);
        s.elapsed_s = 2.0 + seed as f64;
        s
    }

    fn names() -> Vec<String> {
        vec!["kv-read".into(), "kv-write".into()]
    }

    fn results(connections: u64, stats: Stats) -> Results {
        Results::build(
            info(connections),
            stats,
            names(),
            json!({"target": "x", "token": "hvs.SECRET"}),
            SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123 + connections),
        )
    }

    /// Two shards with different distributions (a fast one, a slow one with a long tail).
    fn samples() -> (Vec<u64>, Vec<u64>) {
        let a: Vec<u64> = (0..5000u64).map(|i| 200 + (i * 7919) % 3000).collect();
        let b: Vec<u64> = (0..3000u64)
            .map(|i| 1500 + (i * 104_729) % 40_000 + if i % 997 == 0 { 2_000_000 } else { 0 })
            .collect();
        (a, b)
    }

    #[test]
    fn merged_shard_files_report_what_one_histogram_over_all_samples_does() {
        let (a, b) = samples();
        let dir = tempfile::tempdir().unwrap();
        let (fa, fb) = (dir.path().join("a.json"), dir.path().join("b.json"));
        results(40, shard(&a, 0)).write(&fa).unwrap();
        results(60, shard(&b, 1)).write(&fb).unwrap();
        let merged = load(&[fa.clone(), fb.clone()], Merging::Unrelated).unwrap();
        let s = merged.summary();

        // One histogram over the union of both shards' samples (kv-read), and over every
        // operation's (the total: the kv-writes' 1 ms and 2 ms too).
        let mut union = Hist::default();
        for &us in a.iter().chain(&b) {
            union.record(us);
        }
        let read = Percentiles::of(&union);
        union.record(1000);
        union.record(2000);
        let total = Percentiles::of(&union);
        for (what, got, want) in [
            ("total", &s.latency_ms, &total),
            ("kv-read", &s.ops[0].latency_ms, &read),
        ] {
            assert_eq!(got.count, want.count, "{what}");
            assert_eq!(got.mean, want.mean, "{what} mean");
            assert_eq!(got.p50, want.p50, "{what} p50");
            assert_eq!(got.p99, want.p99, "{what} p99");
            assert_eq!(got.p999, want.p999, "{what} p99.9");
            assert_eq!(got.max, want.max, "{what} max");
            assert_eq!(got.min, want.min, "{what} min");
        }
        // The tail of the slow shard is in the merge (not an average of shard figures).
        assert!(s.latency_ms.max >= 2000.0, "{}", s.latency_ms.max);

        // Counters add.
        assert_eq!(s.requests, 8000 + 3 + 4);
        assert_eq!(s.ok, 8000 - 800 + 6);
        assert_eq!(s.failed, 800 + 1);
        assert_eq!(s.ops[1].requests, 7);
        assert_eq!(s.status["200"], 7200);
        assert_eq!(s.status["503"], 800);
        assert_eq!(s.errors.status, 800);
        assert_eq!(s.error_messages["bad response: 503"], 800);
        assert_eq!(s.connections_opened, 21);
        assert_eq!(s.connect_ms.count, 2);
        assert_eq!(s.bytes_sent, 3000);
        assert_eq!(s.bytes_received, 6000);
        assert_eq!(s.late, 1);
        assert_eq!(s.max_lag_ms, 10.0);
        assert_eq!(s.run.connections, 100);
        assert_eq!(s.run.threads, 4);
        assert_eq!(s.run.processes, 2);
        // The longest shard's duration; rates over it.
        assert_eq!(s.duration_s, 3.0);
        assert_eq!(s.rps, s.requests as f64 / 3.0);
        // The timeline adds second by second.
        assert_eq!(s.timeline.len(), 50);
        assert_eq!(s.timeline[0].requests, 200);
        assert_eq!(s.timeline[29].requests, 200);
        assert_eq!(s.timeline[30].requests, 100);
        assert_eq!(s.timeline.iter().map(|r| r.requests).sum::<u64>(), 8000);
        assert_eq!(merged.started_at, "2023-11-14T22:13:20.163Z");
        assert_eq!(merged.source, format!("{}, {}", fa.display(), fb.display()));
    }

    #[test]
    fn a_late_shard_is_merged_on_wall_clock_seconds() {
        // Shard 0's clock started at 10:00:00, shard 1's 3.2 s later (it missed --start-at):
        // shard 1's second k is the run's second k + 3.
        let record =
            |index: u64, clock_start: &str, late_ms: u64| crate::results::shards::ShardRecord {
                index,
                count: 2,
                run_id: "run-late".into(),
                clock_start: clock_start.into(),
                late_ms,
            };
        let mut a = results(40, shard(&[500; 500], 0)); // seconds 0..4, 100 requests each
        a.shard = Some(record(0, "2026-11-30T10:00:00.000Z", 0));
        let mut b = results(60, shard(&[300; 300], 1)); // its seconds 0..2
        b.shard = Some(record(1, "2026-11-30T10:00:03.200Z", 3200));
        // Through files, as `vblast report shard-*.json` reads them.
        let dir = tempfile::tempdir().unwrap();
        let (fa, fb) = (dir.path().join("a.json"), dir.path().join("b.json"));
        for (r, f) in [(&a, &fa), (&b, &fb)] {
            let mut file = std::fs::File::create(f).unwrap();
            r.write_to(&mut file).unwrap();
        }
        assert_eq!(
            crate::results::shards::clock_offsets(&[a.clone(), b.clone()]),
            vec![0, 3]
        );
        let merged = load(&[fb.clone(), fa.clone()], Merging::Shards).unwrap();
        let rows: Vec<(u64, u64)> = merged
            .stats
            .timeline
            .seconds()
            .iter()
            .map(|(i, s)| (*i, s.requests))
            .collect();
        assert_eq!(
            rows,
            vec![(0, 100), (1, 100), (2, 100), (3, 200), (4, 200), (5, 100)]
        );
        // The shared seconds hold both shards' samples (500 us and 300 us).
        let s4 = &merged.stats.timeline.seconds()[4].1;
        assert_eq!((s4.latency.0.min(), s4.latency.0.max()), (300, 500));
        // The merged run lasts until the late shard's end: 3 s + its 3 s.
        assert_eq!(merged.stats.elapsed_s, 6.0);
        // Shards that started together are not moved.
        b.shard = Some(record(1, "2026-11-30T10:00:00.400Z", 0));
        let rows = merge(&[a, b], Merging::Shards)
            .unwrap()
            .stats
            .timeline
            .seconds();
        assert_eq!(rows[0].1.requests, 200);
        assert_eq!(rows.len(), 5);
    }

    #[test]
    fn a_file_read_back_reports_what_the_run_did() {
        let (a, _) = samples();
        let r = results(40, shard(&a, 0));
        let mut before = Vec::new();
        report::json::render(&r.summary(), &mut before).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("r.json");
        r.write(&f).unwrap();
        let back = Results::read(&f).unwrap();
        let mut after = Vec::new();
        report::json::render(&back.summary(), &mut after).unwrap();
        assert_eq!(
            String::from_utf8(before).unwrap(),
            String::from_utf8(after).unwrap()
        );
        assert_eq!(back.run, r.run);
        assert_eq!(back.op_names, names());
        // The report of a file names the vblast that made it.
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        v["vblast_version"] = json!("0.0.9");
        let old = Results::parse(&v.to_string(), "old").unwrap();
        assert_eq!(old.summary().vblast_version, "0.0.9");
        // report_files renders it in any format.
        let mut text = Vec::new();
        let s = report_files(
            std::slice::from_ref(&f),
            Format::Text {
                latency: true,
                ci: false,
            },
            &mut text,
        )
        .unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(s.requests, 5003);
        assert!(text.lines().any(|l| l.starts_with("total ")), "{text}");
        assert!(text.contains("Detailed Percentile spectrum"), "{text}");
    }

    #[test]
    fn results_file_holds_every_key_of_the_json_report_and_more() {
        let (a, _) = samples();
        let r = results(40, shard(&a, 0));
        let mut report_json = Vec::new();
        report::json::render(&r.summary(), &mut report_json).unwrap();
        let report_json: Value = serde_json::from_slice(&report_json).unwrap();
        let mut file = Vec::new();
        r.write_to(&mut file).unwrap();
        let text = String::from_utf8(file).unwrap();
        let file: Value = serde_json::from_str(&text).unwrap();
        let report_keys = report_json.as_object().unwrap();
        assert!(report_keys.len() >= 25, "{report_keys:?}");
        for (k, v) in report_keys {
            assert_eq!(&file[k], v, "key {k}");
        }
        assert_eq!(file["results_version"], 1);
        assert_eq!(file["run"]["model"], "open");
        assert_eq!(file["op_names"], json!(["kv-read", "kv-write"]));
        assert_eq!(file["started_at"], "2023-11-14T22:13:20.163Z");
        assert!(!file["host"].as_str().unwrap().is_empty());
        assert!(file["stats"]["ops"][0]["latency"].is_string());
        assert!(file["stats"]["timeline"].is_array());
        // The scenario is redacted whatever the caller passed.
        assert_eq!(file["scenario"], json!({"target": "x"}));
        assert!(!text.contains("hvs.SECRET"));
    }

    #[test]
    fn tls_probe_is_optional_and_read_back() {
        let (a, _) = samples();
        let mut r = results(40, shard(&a, 0));
        let text = |r: &Results| {
            let mut file = Vec::new();
            r.write_to(&mut file).unwrap();
            String::from_utf8(file).unwrap()
        };
        // Without a probe (http), no key; a file without it reads as none.
        let plain = text(&r);
        assert!(!plain.contains("tls_probe"), "{plain}");
        assert_eq!(Results::parse(&plain, "f").unwrap().tls_probe, None);
        let facts = TlsFacts {
            protocol: "TLSv1.3,TLS_AES_128_GCM_SHA256,256,128".into(),
            temp_key: Some("X25519 253 bits".into()),
            server_name: Some("localhost".into()),
        };
        r.tls_probe = Some(facts.clone());
        let with = text(&r);
        let doc: Value = serde_json::from_str(&with).unwrap();
        assert_eq!(doc["results_version"], 1);
        assert_eq!(doc["tls_probe"]["temp_key"], "X25519 253 bits");
        assert_eq!(Results::parse(&with, "f").unwrap().tls_probe, Some(facts));
    }

    #[test]
    fn what_is_not_a_readable_results_file_is_one_clear_message() {
        let (a, _) = samples();
        let mut good = Vec::new();
        results(40, shard(&a, 0)).write_to(&mut good).unwrap();
        let good: Value = serde_json::from_slice(&good).unwrap();
        let mut report_only = Vec::new();
        report::json::render(&results(40, shard(&a, 0)).summary(), &mut report_only).unwrap();
        let report_only = String::from_utf8(report_only).unwrap();
        let with = |f: &dyn Fn(&mut Value)| {
            let mut v = good.clone();
            f(&mut v);
            v.to_string()
        };
        let cases: Vec<(String, &str)> = vec![
            ("hello".into(), "f is not a vblast results file (not JSON"),
            (
                "[1, 2]".into(),
                "f is not a vblast results file (not a JSON object)",
            ),
            (
                "{}".into(),
                "f is not a vblast results file (no results_version)",
            ),
            (report_only, "f is a vblast JSON report, not a results file"),
            (
                with(&|v| v["results_version"] = json!(2)),
                "f is results version 2, newer than this vblast reads (up to 1)",
            ),
            (
                with(&|v| v["results_version"] = json!("one")),
                "f is not a vblast results file (results_version \"one\")",
            ),
            (
                with(&|v| v["stats"]["ops"][0]["latency"] = json!("AAAA")),
                "f: damaged results: stats: bad histogram",
            ),
            (
                with(&|v| v["stats"]["ops"][0]["latency"] = json!("%%%")),
                "f: damaged results: stats: bad histogram encoding",
            ),
            (
                with(&|v| v["stats"]["timeline"][0][1]["latency"] = json!("AAAA")),
                "f: damaged results: stats: bad histogram",
            ),
            (
                with(&|v| {
                    v["op_names"] = json!(["kv-read"]);
                }),
                "f: damaged results: 1 operation names but 2 operations in stats",
            ),
            (
                with(&|v| {
                    v.as_object_mut().unwrap().remove("host");
                }),
                "f: damaged results: missing field `host`",
            ),
            // Counts that cannot be: the field named, never "18446744073709543617 failed".
            (
                with(&|v| v["stats"]["ops"][1]["ok"] = json!(9000)),
                "f: damaged results: stats.ops[1] (kv-write): ok 9000 is above its requests 3",
            ),
            (
                with(&|v| v["stats"]["elapsed_s"] = json!(-1.0)),
                "f: damaged results: stats.elapsed_s is -1, where a duration is 0 seconds or more",
            ),
            (
                with(&|v| {
                    v["op_names"] = json!(["kv-read", "w\u{202e}x"]);
                    v["stats"]["ops"][1]["ok"] = json!(4);
                }),
                "f: damaged results: stats.ops[1] (w\\u{202e}x): ok 4 is above its requests 3",
            ),
        ];
        for (text, want) in cases {
            let e = Results::parse(&text, "f").expect_err(want).to_string();
            assert!(e.starts_with(want), "'{e}' is not '{want}...'");
        }
        let e = Results::read(Path::new("/nonexistent/r.json"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cannot read /nonexistent/r.json"), "{e}");
        assert_eq!(
            load(&[], Merging::Unrelated).unwrap_err().to_string(),
            "give at least one results file".to_string()
        );
    }

    #[test]
    fn merge_refuses_results_of_different_runs() {
        let (a, b) = samples();
        let mut x = results(40, shard(&a, 0));
        x.source = "x.json".into();
        let base = {
            let mut y = results(60, shard(&b, 1));
            y.source = "y.json".into();
            y
        };
        let mut y = base.clone();
        y.op_names = vec!["kv-read".into(), "cert-login".into()];
        let e = merge(&[x.clone(), y], Merging::Unrelated)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("x.json and y.json are not shards of one run: operations"),
            "{e}"
        );
        let mut y = base.clone();
        y.run.model = Model::Closed;
        y.run.target_rate = None;
        let e = merge(&[x.clone(), y], Merging::Unrelated)
            .unwrap_err()
            .to_string();
        assert!(e.contains("load models open and closed"), "{e}");
        let mut y = base.clone();
        y.run.target_rate = Some(100.0);
        assert!(
            merge(&[x.clone(), y], Merging::Unrelated)
                .unwrap_err()
                .to_string()
                .contains("target rates")
        );
        let mut y = base.clone();
        y.run.keepalive = false;
        assert!(
            merge(&[x.clone(), y], Merging::Unrelated)
                .unwrap_err()
                .to_string()
                .contains("keep-alive")
        );
        assert_eq!(
            merge(&[], Merging::Unrelated).unwrap_err().to_string(),
            "no results to merge"
        );
        // Same run on two hosts against two nodes: both named.
        let mut y = base.clone();
        y.host = "other-host".into();
        y.run.target = "http://127.0.0.2:8200".into();
        x.host = "this-host".into();
        let m = merge(&[x, y], Merging::Unrelated).unwrap();
        assert_eq!(m.host, "this-host, other-host");
        assert_eq!(m.run.target, "http://127.0.0.1:8200, http://127.0.0.2:8200");
    }

    #[test]
    fn redact_removes_credentials_at_any_depth() {
        let mut v = json!({
            "target": "https://vault:8200",
            "token": "hvs.A",
            "Client-Token": "hvs.B",
            "auth": {
                "method": "approle",
                "role_id": "r-1",
                "secret_id": "s-1",
                "login": {"password": "p", "username": "u", "vault_token": "hvs.C"},
            },
            "ops": [
                {"name": "kv-read", "secrets": 1000, "secret_size": 100},
                {"name": "userpass", "passphrase": "x", "private_key": "k", "PRIVATE-KEY": "k2"},
            ],
            "headers": [["X-Vault-Token", "hvs.D"], ["Accept", "application/json"], ["authorization", "Bearer E"]],
            "header_objects": [{"name": "Cookie", "value": "F"}, {"name": "X-Req", "value": "ok"}],
            "header_map": {"X-Vault-Token": "hvs.G", "Accept": "*/*"},
            "secret": "H",
            "tls": {"client_cert": "/c.pem", "client_key": "/k.pem", "ca_cert": "/ca.pem"},
        });
        crate::redact::json(&mut v);
        assert_eq!(
            v,
            json!({
                "target": "https://vault:8200",
                "auth": {
                    "method": "approle",
                    "role_id": "r-1",
                    "login": {"username": "u"},
                },
                "ops": [
                    {"name": "kv-read", "secrets": 1000, "secret_size": 100},
                    {"name": "userpass"},
                ],
                "headers": [["Accept", "application/json"]],
                "header_objects": [{"name": "X-Req", "value": "ok"}],
                "header_map": {"Accept": "*/*"},
                "tls": {"client_cert": "/c.pem", "client_key": "/k.pem", "ca_cert": "/ca.pem"},
            })
        );
        let text = v.to_string();
        for secret in ["hvs.", "s-1", "\"p\"", "Bearer", "\"F\"", "\"H\"", "k2"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}
