//! A sweep as data, and its results file: every step's load, pass and full results (the
//! run results document of `results.rs`, histograms included), the spec that drove it,
//! and the answer. The file is results version 2 with `"kind": "sweep"`: a vblast that
//! reads only version 1 refuses it as "newer than this vblast reads", and this one reads
//! it back, replays the search over its steps (a file whose steps are not what the search
//! would have run is refused as damaged) and renders it exactly as it was printed live.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Cause;
use crate::report::Summary;
use crate::results::Results;

use super::objective::{StepFigures, calls, misses};
use super::plan::Spec;
use super::search::{End, Next, Phase, StepVerdict};
use crate::report::ci::Ci;

/// The results version of sweep files (run files stay at 1).
pub const SWEEP_RESULTS_VERSION: u64 = 2;
/// The `kind` of a sweep file.
pub const KIND: &str = "sweep";

/// How long the sweep spent around one step (not rendered in the table; in the file).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Timing {
    /// From the step's end (its load done, connections closed) to its row ready.
    pub report_ready_ms: f64,
    /// The step's wall time beyond its planned warm-up and duration: opening its
    /// connections, the open model's catch-up after the schedule, closing.
    pub overhead_ms: f64,
}

/// One step of a sweep.
#[derive(Clone, Debug)]
pub struct Step {
    pub load: u64,
    pub phase: Phase,
    /// Every measurement of the step pooled (its repeats' histograms merged losslessly).
    pub results: Results,
    /// The last measurement's timing.
    pub timing: Timing,
    /// How many times the step was measured again because it was unclear.
    pub repeats: u32,
    /// Why each repeat was made (the unclear bounds of the samples so far).
    pub repeated_because: Vec<String>,
}

/// A step measured against the objective.
#[derive(Clone, Debug)]
pub struct Judged {
    pub figures: StepFigures,
    pub summary: Summary,
    pub misses: Vec<String>,
    /// The bounds neither clearly held nor missed (their intervals straddle them).
    pub unclear: Vec<String>,
    pub verdict: StepVerdict,
    /// Failed requests over all requests.
    pub error_ratio: f64,
}

/// A whole sweep.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub vblast_version: String,
    pub started_at: String,
    pub host: String,
    pub scenario: Value,
    pub spec: Spec,
    pub steps: Vec<Step>,
    pub interrupted: bool,
    pub setup_s: f64,
    pub cleanup_s: f64,
}

/// Checks one step against the spec's objective: latency bounds with the percentiles'
/// intervals at the spec's level (on their figures alone for a file from before intervals).
pub fn judge(spec: &Spec, load: u64, results: &Results) -> Judged {
    let mut summary = results.summary();
    let level = spec.level();
    if let Some(level) = level
        && summary.latency_ms.confidence != level.level()
    {
        summary.latency_ms = crate::report::Percentiles::at_blocked(
            &summary.latency_hist,
            &summary.latency_blocks,
            level,
        );
    }
    let l = &summary.latency_ms;
    let ci = |key| l.interval(key).copied();
    let figures = StepFigures {
        requests: summary.requests,
        p50_ms: l.p50,
        p90_ms: l.p90,
        p99_ms: l.p99,
        p999_ms: l.p999,
        success_percent: summary.success_ratio * 100.0,
        offered: spec.offered(load),
        achieved: summary.rps,
        p50_ci: ci("p50"),
        p90_ci: ci("p90"),
        p99_ci: ci("p99"),
        p999_ci: ci("p999"),
    };
    let (mut m, unclear) = match level {
        Some(_) => calls(&spec.objectives, &figures),
        None => (misses(&spec.objectives, &figures), Vec::new()),
    };
    let error_ratio = if summary.requests == 0 {
        1.0
    } else {
        summary.failed as f64 / summary.requests as f64
    };
    // Errors above the bound break the step whatever the objective says (one without a
    // success bound would otherwise pass a server that answers every request with a 500).
    let broken = error_ratio > spec.max_error_ratio;
    if broken && summary.requests > 0 {
        m.push(format!(
            "errors {:.2}% > --max-error-ratio {}%",
            error_ratio * 100.0,
            spec.max_error_ratio * 100.0
        ));
    }
    let verdict = if broken {
        StepVerdict::Broken
    } else if !m.is_empty() {
        StepVerdict::Fail
    } else if !unclear.is_empty() {
        StepVerdict::Unclear
    } else {
        StepVerdict::Pass
    };
    Judged {
        figures,
        summary,
        misses: m,
        unclear,
        verdict,
        error_ratio,
    }
}

/// The answer as saved in the file.
#[derive(Serialize)]
struct SavedAnswer {
    #[serde(flatten)]
    end: Option<End>,
    highest_sustained: Option<u64>,
    first_broken: Option<u64>,
    unit: &'static str,
    line: String,
    /// The resource that gave out first at the knee (`sweep::saturation`).
    #[serde(skip_serializing_if = "Option::is_none")]
    saturated: Option<crate::server_stats::verdict::Saturated>,
    /// Which steps were measured again and why (absent before intervals).
    #[serde(skip_serializing_if = "Option::is_none")]
    repeats: Option<String>,
}

#[derive(Serialize)]
struct WrittenStep<'a> {
    load: u64,
    phase: Phase,
    verdict: StepVerdict,
    misses: &'a [String],
    achieved: f64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    /// The percentiles' confidence intervals (null: unknown).
    p50_ci_ms: Option<Ci>,
    p99_ci_ms: Option<Ci>,
    p999_ci_ms: Option<Ci>,
    /// How the intervals were widened for samples correlated in time (absent: the
    /// order-statistic intervals alone).
    #[serde(skip_serializing_if = "crate::report::ci::CiMethod::is_plain")]
    ci_method: &'a crate::report::ci::CiMethod,
    unclear: &'a [String],
    repeats: u32,
    repeated_because: &'a [String],
    success_ratio: f64,
    timing: Timing,
    results: Value,
}

#[derive(Serialize)]
struct WrittenSweep<'a> {
    results_version: u64,
    kind: &'static str,
    vblast_version: &'a str,
    started_at: &'a str,
    host: &'a str,
    scenario: &'a Value,
    sweep: &'a Spec,
    interrupted: bool,
    setup_s: f64,
    cleanup_s: f64,
    answer: SavedAnswer,
    steps: Vec<WrittenStep<'a>>,
}

#[derive(Deserialize)]
struct StoredStep {
    load: u64,
    phase: Phase,
    #[serde(default)]
    timing: Timing,
    #[serde(default)]
    repeats: u32,
    #[serde(default)]
    repeated_because: Vec<String>,
    results: Value,
}

#[derive(Deserialize)]
struct StoredSweep {
    vblast_version: String,
    started_at: String,
    host: String,
    #[serde(default)]
    scenario: Value,
    sweep: Spec,
    #[serde(default)]
    interrupted: bool,
    #[serde(default)]
    setup_s: f64,
    #[serde(default)]
    cleanup_s: f64,
    steps: Vec<StoredStep>,
}

impl Sweep {
    /// Each step's load beside its summary (from `judged`), in order: what
    /// `sweep::saturation` reads.
    pub fn seen<'a>(&self, judged: &'a [Judged]) -> Vec<super::saturation::StepSeen<'a>> {
        self.steps
            .iter()
            .zip(judged)
            .map(|(s, j)| (s.load, &j.summary))
            .collect()
    }

    /// Every step judged, in order.
    pub fn judged(&self) -> Vec<Judged> {
        self.steps
            .iter()
            .map(|s| judge(&self.spec, s.load, &s.results))
            .collect()
    }

    /// How the sweep ended: the search replayed over the steps' verdicts (None when it
    /// was interrupted before the search was done).
    pub fn end(&self, judged: &[Judged]) -> Result<Option<End>, Cause> {
        let mut search = self.spec.search()?;
        for (i, (step, j)) in self.steps.iter().zip(judged).enumerate() {
            match search.next() {
                Next::Run { load, phase } if load == step.load && phase == step.phase => {
                    search.record(j.verdict)
                }
                other => {
                    // The pass as the file spells it ("coarse", "bisect").
                    let pass = |p| match serde_json::to_value(p) {
                        Ok(serde_json::Value::String(s)) => s,
                        _ => String::new(),
                    };
                    let expected = match other {
                        Next::Run { load, phase } => format!("a step at {load} ({})", pass(phase)),
                        Next::Done(_) => "no more steps".into(),
                    };
                    return Err(Cause::Said(format!(
                        "step {} ran {} ({}) where the search gives {expected}: the file was changed after the sweep",
                        i + 1,
                        step.load,
                        pass(step.phase)
                    )));
                }
            }
        }
        Ok(match search.next() {
            Next::Done(end) => Some(end),
            Next::Run { .. } => None,
        })
    }

    /// The whole document (results version 2).
    pub fn to_json(&self) -> Result<String, Cause> {
        let judged = self.judged();
        let end = self.end(&judged)?;
        let mut steps = Vec::new();
        for (s, j) in self.steps.iter().zip(&judged) {
            let mut buf = Vec::new();
            s.results
                .write_to(&mut buf)
                .map_err(|e| Cause::io("cannot render a step", e))?;
            let results: Value = serde_json::from_slice(&buf).map_err(|e| Cause::Json {
                what: "cannot render a step".into(),
                source: e,
            })?;
            steps.push(WrittenStep {
                load: s.load,
                phase: s.phase,
                verdict: j.verdict,
                misses: &j.misses,
                achieved: j.figures.achieved,
                p50_ms: j.figures.p50_ms,
                p99_ms: j.figures.p99_ms,
                p999_ms: j.figures.p999_ms,
                p50_ci_ms: j.figures.p50_ci,
                p99_ci_ms: j.figures.p99_ci,
                p999_ci_ms: j.figures.p999_ci,
                ci_method: &j.summary.latency_ms.ci_method,
                unclear: &j.unclear,
                repeats: s.repeats,
                repeated_because: &s.repeated_because,
                success_ratio: j.summary.success_ratio,
                timing: s.timing,
                results,
            });
        }
        let (highest_sustained, first_broken) = bounds(end);
        let doc = WrittenSweep {
            results_version: SWEEP_RESULTS_VERSION,
            kind: KIND,
            vblast_version: &self.vblast_version,
            started_at: &self.started_at,
            host: &self.host,
            scenario: &self.scenario,
            sweep: &self.spec,
            interrupted: self.interrupted,
            setup_s: self.setup_s,
            cleanup_s: self.cleanup_s,
            answer: SavedAnswer {
                end,
                highest_sustained,
                first_broken,
                unit: self.spec.unit(),
                line: answer_line(self, &judged, end),
                saturated: super::saturation::saturated(&self.seen(&judged), end),
                repeats: repeats_line(self, &judged),
            },
            steps,
        };
        let mut text = serde_json::to_string_pretty(&doc).map_err(|e| Cause::Json {
            what: "cannot render".into(),
            source: e,
        })?;
        text.push('\n');
        Ok(text)
    }

    /// Writes the file whole or not at all: into a temporary file beside it, renamed over
    /// it, so that a sweep killed while writing leaves the previous version intact.
    pub fn write(&self, path: &Path) -> Result<(), Cause> {
        let text = self.to_json()?;
        let fail = |e: std::io::Error| Cause::io(format!("cannot write {}", path.display()), e);
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            // Not a file to replace (a pipe, /dev/stdout): written in place.
            return std::fs::write(path, text).map_err(fail);
        }
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".vblast-tmp");
        let tmp = path.with_file_name(name);
        std::fs::write(&tmp, text).map_err(fail)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(e)
        })
    }

    /// Reads a sweep file; None when the file is not a sweep (a run's results, or not
    /// readable as JSON: the run readers give their own messages).
    pub fn read_if_sweep(path: &Path) -> Option<Result<Sweep, Cause>> {
        let text = std::fs::read_to_string(path).ok()?;
        let doc: Value = serde_json::from_str(&text).ok()?;
        if doc.get("kind").and_then(Value::as_str) != Some(KIND) {
            return None;
        }
        Some(Sweep::parse(doc, &path.display().to_string()))
    }

    /// A sweep document; `name` is where it came from, for messages.
    pub fn parse(doc: Value, name: &str) -> Result<Sweep, Cause> {
        let version = doc.get("results_version").and_then(Value::as_u64);
        if version != Some(SWEEP_RESULTS_VERSION) {
            return Err(Cause::Said(format!(
                "{name} is a sweep of results version {}, which this vblast does not read (it reads {SWEEP_RESULTS_VERSION})",
                version.map_or("?".to_string(), |v| v.to_string())
            )));
        }
        let stored: StoredSweep = serde_json::from_value(doc).map_err(|e| Cause::Json {
            what: format!("{name}: damaged sweep"),
            source: e,
        })?;
        let mut steps = Vec::new();
        for (i, s) in stored.steps.into_iter().enumerate() {
            let text = s.results.to_string();
            let mut results = Results::parse(&text, &format!("{name} step {}", i + 1))?;
            if let Some(level) = stored.sweep.level() {
                results.confidence = level;
            }
            steps.push(Step {
                load: s.load,
                phase: s.phase,
                results,
                timing: s.timing,
                repeats: s.repeats,
                repeated_because: s.repeated_because,
            });
        }
        let sweep = Sweep {
            vblast_version: stored.vblast_version,
            started_at: stored.started_at,
            host: stored.host,
            scenario: stored.scenario,
            spec: stored.sweep,
            steps,
            interrupted: stored.interrupted,
            setup_s: stored.setup_s,
            cleanup_s: stored.cleanup_s,
        };
        let judged = sweep.judged();
        sweep
            .end(&judged)
            .map_err(|e| format!("{name}: damaged sweep: {e}"))?;
        Ok(sweep)
    }
}

/// The highest sustained load and the first that broke, as the end says.
pub fn bounds(end: Option<End>) -> (Option<u64>, Option<u64>) {
    match end {
        Some(End::Edge { pass, fail }) | Some(End::Broken { pass, fail }) => {
            (Some(pass), Some(fail))
        }
        Some(End::AllPassed { top }) => (Some(top), None),
        Some(End::FirstFailed { load }) => (None, Some(load)),
        // Unjudged, not broken: nothing is known of the range.
        Some(End::FirstUnclear { .. }) | None => (None, None),
    }
}

/// Why the step at `load` broke the objective (an unclear step: why it stayed unclear).
fn why(sweep: &Sweep, judged: &[Judged], load: u64) -> String {
    sweep
        .steps
        .iter()
        .zip(judged)
        .find(|(s, _)| s.load == load)
        .map(|(_, j)| match j.verdict {
            StepVerdict::Unclear => format!(
                "unclear after {}, counted as failed: {}",
                crate::report::plural(
                    1 + u64::from(sweep_repeats(sweep, load)),
                    "measurement",
                    "measurements"
                ),
                j.unclear.join("; ")
            ),
            _ => j.misses.join("; "),
        })
        .unwrap_or_default()
}

fn sweep_repeats(sweep: &Sweep, load: u64) -> u32 {
    sweep
        .steps
        .iter()
        .find(|s| s.load == load)
        .map_or(0, |s| s.repeats)
}

/// Why the steps were measured again: a percentile's interval that did not decide its
/// bound, a step that contradicted a lower load (`monotone.rs`), or both.
fn repeat_causes(sweep: &Sweep) -> &'static str {
    let reasons = || sweep.steps.iter().flat_map(|s| s.repeated_because.iter());
    let monotone = reasons().any(|r| r.starts_with("not monotone"));
    let unclear = reasons().any(|r| !r.starts_with("not monotone"));
    match (unclear, monotone) {
        (_, false) => "a percentile's interval did not decide its bound",
        (false, true) => "a step contradicted a lower load (not monotone): both measured again",
        (true, true) => {
            "a percentile's interval did not decide its bound, or a step contradicted a lower load (not monotone): both measured again"
        }
    }
}

/// Which steps were measured again, how often and why, and which stayed unclear; None for
/// a sweep from before intervals.
pub fn repeats_line(sweep: &Sweep, judged: &[Judged]) -> Option<String> {
    sweep.spec.level()?;
    let unit = sweep.spec.unit();
    let repeated: Vec<String> = sweep
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.repeats > 0)
        .map(|(i, s)| {
            format!(
                "step {} at {} {unit} {} more ({})",
                i + 1,
                grouped(s.load),
                crate::report::plural(u64::from(s.repeats), "time", "times"),
                s.repeated_because.first().map_or("", String::as_str)
            )
        })
        .collect();
    let unclear: Vec<String> = sweep
        .steps
        .iter()
        .zip(judged)
        .enumerate()
        .filter(|(_, (_, j))| j.verdict == StepVerdict::Unclear)
        .map(|(i, _)| format!("step {}", i + 1))
        .collect();
    let mut line = if repeated.is_empty() {
        format!(
            "Repeats: none (up to {} per unclear step)",
            sweep.spec.max_repeats
        )
    } else {
        format!(
            "Repeats: {} of {} measured again because {}: {}",
            repeated.len(),
            crate::report::plural(sweep.steps.len() as u64, "step", "steps"),
            repeat_causes(sweep),
            repeated.join("; ")
        )
    };
    if !unclear.is_empty() {
        line.push_str(&format!(
            "; still unclear, counted as failed: {}",
            unclear.join(", ")
        ));
    }
    if let Some((low, high)) = super::search::inversion(
        &sweep
            .steps
            .iter()
            .zip(judged)
            .map(|(s, j)| (s.load, j.verdict))
            .collect::<Vec<_>>(),
    ) {
        line.push_str(&format!(
            "; not monotone: {} {unit} did not hold although {} {unit} did",
            grouped(low),
            grouped(high)
        ));
    }
    Some(line)
}

/// A load with its thousands grouped: "1,444".
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The margin of the step at `load`: each bounded percentile with its interval, in
/// parentheses ("(p99 10.00ms, 95% CI 8.70-11.60ms)"; the level said when `first`); empty
/// when the sweep has no latency bound or predates intervals.
pub fn margin(sweep: &Sweep, judged: &[Judged], load: u64, first: bool) -> String {
    let Some(level) = sweep.spec.level() else {
        return String::new();
    };
    let Some((_, j)) = sweep.steps.iter().zip(judged).find(|(s, _)| s.load == load) else {
        return String::new();
    };
    let parts: Vec<String> = sweep
        .spec
        .objectives
        .iter()
        .filter_map(|o| match o {
            super::objective::Objective::Latency { pct, .. } => {
                let (v, ci) = j.figures.at(*pct);
                // The interval widened for correlated samples: by how much.
                let deff = j
                    .summary
                    .latency_ms
                    .ci_method
                    .design_effect
                    .get(pct.key())
                    .filter(|d| **d > 1.0)
                    .map_or(String::new(), |d| format!(", design effect {d:.1}"));
                Some(format!(
                    "{} {}, {}CI {}{deff}",
                    pct.label(),
                    crate::report::fmt_ms(v),
                    if first {
                        format!("{} ", level.label())
                    } else {
                        String::new()
                    },
                    crate::report::ci::cell(ci.as_ref())
                ))
            }
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

/// The one line with the answer, each load with its margin.
pub fn answer_line(sweep: &Sweep, judged: &[Judged], end: Option<End>) -> String {
    let line = answer_of(sweep, judged, end);
    // A workload sweep's answer as a multiple of the recorded traffic.
    let held = match end {
        Some(End::Edge { pass, .. } | End::Broken { pass, .. }) => Some(pass),
        Some(End::AllPassed { top }) => Some(top),
        _ => None,
    };
    match (&sweep.spec.workload, held) {
        (Some(_), Some(load)) => line.replacen(
            "Answer: ",
            &format!(
                "Answer: holds {:.2}x the recorded traffic: ",
                load as f64 / super::plan::PER_X
            ),
            1,
        ),
        _ => line,
    }
}

fn answer_of(sweep: &Sweep, judged: &[Judged], end: Option<End>) -> String {
    let unit = sweep.spec.unit();
    let m = |load, first| margin(sweep, judged, load, first);
    let g = grouped;
    match end {
        Some(End::Edge { pass, fail }) => format!(
            "Answer: {} {unit} sustained within the objective{}; first broken at {} {unit}{}: {}",
            g(pass),
            m(pass, true),
            g(fail),
            m(fail, false),
            why(sweep, judged, fail)
        ),
        Some(End::Broken { pass, fail }) => format!(
            "Answer: {} {unit} sustained within the objective{}; first broken at {} {unit}, with errors above --max-error-ratio, so the sweep stopped there without narrowing: {}",
            g(pass),
            m(pass, true),
            g(fail),
            why(sweep, judged, fail)
        ),
        Some(End::AllPassed { top }) => format!(
            "Answer: {} {unit} sustained within the objective{}, the top of the range: no step broke it (raise TO to find the edge)",
            g(top),
            m(top, true)
        ),
        Some(End::FirstFailed { load }) => format!(
            "Answer: none: the first step, {} {unit}, already broke the objective{}: {}",
            g(load),
            m(load, true),
            why(sweep, judged, load)
        ),
        Some(End::FirstUnclear { load }) => format!(
            "Answer: none yet: the first step, {} {unit}, was too short to judge against the objective{}: {}; measure longer steps (--step-duration; a lower FROM gives fewer samples still)",
            g(load),
            m(load, true),
            why(sweep, judged, load)
        ),
        None => {
            let best = sweep
                .steps
                .iter()
                .zip(judged)
                .filter(|(_, j)| j.verdict.held())
                .map(|(s, _)| s.load)
                .max();
            match best {
                Some(b) => format!(
                    "Interrupted after {}: {b} {unit} was the highest load within the objective so far",
                    crate::report::plural(sweep.steps.len() as u64, "step", "steps")
                ),
                None => format!(
                    "Interrupted after {}, before any load held the objective",
                    crate::report::plural(sweep.steps.len() as u64, "step", "steps")
                ),
            }
        }
    }
}
