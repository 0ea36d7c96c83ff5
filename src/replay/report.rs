//! The report of a replay: each replayed operation (recorded count, sent, ok, latency),
//! the recorded rate against the achieved rate in each second of the replay's clock, what
//! was left out and why, as text or JSON, from one `ReplaySummary`. No token, accessor,
//! HMAC'd value or whole path is in it (paths only as shapes unless `--show-paths`).

use serde::Serialize;

use super::{LeftOut, ReplayPlan};
use crate::report::Summary;

/// The formats of `vblast replay --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayFormat {
    Text,
    Json,
}

/// The summary in `format`.
pub fn render(r: &ReplaySummary, format: ReplayFormat) -> String {
    match format {
        ReplayFormat::Text => text(r),
        ReplayFormat::Json => json(r),
    }
}

/// One replayed operation.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayedOp {
    pub name: String,
    /// Requests of it in the log.
    pub recorded: u64,
    /// Requests of it the replay intended (`--scale` applied).
    pub intended: u64,
    /// Responses it got, and how many of them succeeded.
    pub requests: u64,
    pub ok: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// One second of the replay's clock (a recorded second is 1/speed of it).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ReplaySecond {
    pub second: u64,
    /// Requests the log recorded in the recorded seconds this one replays.
    pub recorded: u64,
    /// Requests the replay intended to start in it (the recorded ones, scaled).
    pub intended: u64,
    /// Responses that ended in it.
    pub achieved: u64,
}

/// A replay, as reported.
#[derive(Clone, Debug, Serialize)]
pub struct ReplaySummary {
    pub files: Vec<String>,
    pub speed: f64,
    pub scale: f64,
    /// Requests in the log (replayed or not).
    pub recorded_requests: u64,
    /// The log's requests the replay sent again (before `--scale`).
    pub replayed_requests: u64,
    pub intended_requests: u64,
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    pub not_sent: u64,
    /// The recorded span, seconds, and the replay's intended one.
    pub recorded_span_s: f64,
    pub intended_span_s: f64,
    /// Distinct callers (accessors) among the replayed requests: counted only, never named.
    pub sessions: u64,
    /// The tokens the replay's sessions sent with (one per recorded caller, up to
    /// `replay::callers::MAX_SESSIONS` sessions of a caller in a namespace), and the
    /// (caller, namespace) pairs folded past that bound.
    pub session_tokens: u64,
    pub sessions_folded: u64,
    pub namespaces: Vec<String>,
    pub secrets: u64,
    pub latency_ms: crate::report::Percentiles,
    pub operations: Vec<ReplayedOp>,
    pub seconds: Vec<ReplaySecond>,
    pub left_out: Vec<LeftOut>,
    pub problems: Vec<String>,
    pub notes: Vec<String>,
}

/// The summary of a replay planned as `plan` whose run summed up as `run`.
pub fn summarize(plan: &ReplayPlan, run: &Summary, speed: f64, scale: f64) -> ReplaySummary {
    let mut intended_by_op = vec![0u64; plan.mix.len()];
    for &o in &plan.ops {
        // `ops` holds caller * mix + op.
        intended_by_op[usize::from(o) % plan.mix.len().max(1)] += 1;
    }
    let operations = plan
        .mix
        .iter()
        .zip(&intended_by_op)
        .map(|((name, recorded), &intended)| {
            let o = run.ops.iter().find(|o| &o.name == name);
            ReplayedOp {
                name: name.clone(),
                recorded: *recorded,
                intended,
                requests: o.map_or(0, |o| o.requests),
                ok: o.map_or(0, |o| o.ok),
                p50_ms: o.map_or(0.0, |o| o.latency_ms.p50),
                p99_ms: o.map_or(0.0, |o| o.latency_ms.p99),
                max_ms: o.map_or(0.0, |o| o.latency_ms.max),
            }
        })
        .collect();
    let replayed: u64 = plan.mix.iter().map(|m| m.1).sum();
    let s = &plan.schedule;
    let recorded_span_s = s.recorded_per_second().len() as f64;
    ReplaySummary {
        files: plan.files.clone(),
        speed,
        scale,
        recorded_requests: plan.recorded_requests,
        replayed_requests: replayed,
        intended_requests: plan.ops.len() as u64,
        requests: run.requests,
        ok: run.ok,
        failed: run.failed,
        not_sent: run.not_sent,
        recorded_span_s,
        intended_span_s: recorded_span_s / speed,
        sessions: plan.sessions,
        session_tokens: plan.callers.tokens() as u64,
        sessions_folded: plan.callers.folded,
        namespaces: plan.namespaces.clone(),
        secrets: plan.secrets,
        latency_ms: run.latency_ms.clone(),
        operations,
        seconds: seconds(plan, run, speed),
        left_out: plan.left_out.clone(),
        problems: plan.problems.clone(),
        notes: run.notes.clone(),
    }
}

/// Recorded, intended and achieved per second of the replay's clock: recorded second r
/// falls in replay second floor(r / speed).
fn seconds(plan: &ReplayPlan, run: &Summary, speed: f64) -> Vec<ReplaySecond> {
    let s = &plan.schedule;
    let of = |r: usize| (r as f64 / speed).floor() as usize;
    let n = of(s.recorded_per_second().len().saturating_sub(1)) + 1;
    let n = n.max(
        run.timeline
            .iter()
            .map(|t| t.second as usize + 1)
            .max()
            .unwrap_or(0),
    );
    let mut out: Vec<ReplaySecond> = (0..n as u64)
        .map(|second| ReplaySecond {
            second,
            recorded: 0,
            intended: 0,
            achieved: 0,
        })
        .collect();
    for (r, (&rec, &int)) in s
        .recorded_per_second()
        .iter()
        .zip(&s.intended_per_second())
        .enumerate()
    {
        out[of(r)].recorded += rec;
        out[of(r)].intended += int;
    }
    for t in &run.timeline {
        out[t.second as usize].achieved += t.requests;
    }
    out
}

/// The summary as text.
pub fn text(r: &ReplaySummary) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "Replay of {}", r.files.join(", "));
    let _ = writeln!(
        o,
        "  speed {} (a recorded second lasts {:.3} s), scale {}: {} of the log's {} requests replayed, {} intended over {:.1} s (recorded over {:.1} s)",
        r.speed,
        1.0 / r.speed,
        r.scale,
        r.replayed_requests,
        r.recorded_requests,
        r.intended_requests,
        r.intended_span_s,
        r.recorded_span_s
    );
    let _ = writeln!(
        o,
        "  {} responses, {} ok, {} failed, {} not sent; latency p50 {:.2} ms, p99 {:.2} ms (from each request's recorded instant)",
        r.requests, r.ok, r.failed, r.not_sent, r.latency_ms.p50, r.latency_ms.p99
    );
    let _ = writeln!(
        o,
        "  {} callers in the log, replayed with {} session tokens ({} folded); {} namespace(s): {}; {} secret(s) per kv fixture",
        r.sessions,
        r.session_tokens,
        r.sessions_folded,
        r.namespaces.len(),
        r.namespaces.join(", "),
        r.secrets
    );
    let _ = writeln!(o, "\nOperations");
    let _ = writeln!(
        o,
        "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "operation", "recorded", "intended", "sent", "ok", "p50 ms", "p99 ms"
    );
    for op in &r.operations {
        let _ = writeln!(
            o,
            "  {:<22} {:>9} {:>9} {:>9} {:>9} {:>9.2} {:>9.2}",
            op.name, op.recorded, op.intended, op.requests, op.ok, op.p50_ms, op.p99_ms
        );
    }
    let _ = writeln!(
        o,
        "\nRate per second of the replay (recorded, intended, achieved)"
    );
    let _ = writeln!(
        o,
        "  {:>6} {:>9} {:>9} {:>9}",
        "second", "recorded", "intended", "achieved"
    );
    for s in &r.seconds {
        let _ = writeln!(
            o,
            "  {:>6} {:>9} {:>9} {:>9}",
            s.second, s.recorded, s.intended, s.achieved
        );
    }
    if !r.left_out.is_empty() {
        let _ = writeln!(o, "\nLeft out of the replay");
        for l in &r.left_out {
            let _ = writeln!(o, "  {:<40} {:>9} requests: {}", l.what, l.requests, l.why);
        }
    }
    for n in r.problems.iter().chain(&r.notes) {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

/// The summary as JSON (one object).
pub fn json(r: &ReplaySummary) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_else(|_| "{}".into());
    s.push('\n');
    s
}
