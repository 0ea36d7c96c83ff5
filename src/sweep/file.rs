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

use super::objective::{StepFigures, misses};
use super::plan::Spec;
use super::search::{End, Next, Phase, StepVerdict};

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
    pub results: Results,
    pub timing: Timing,
}

/// A step measured against the objective.
#[derive(Clone, Debug)]
pub struct Judged {
    pub figures: StepFigures,
    pub summary: Summary,
    pub misses: Vec<String>,
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

/// Checks one step against the spec's objective.
pub fn judge(spec: &Spec, load: u64, results: &Results) -> Judged {
    let summary = results.summary();
    let l = &summary.latency_ms;
    let figures = StepFigures {
        requests: summary.requests,
        p50_ms: l.p50,
        p90_ms: l.p90,
        p99_ms: l.p99,
        p999_ms: l.p999,
        success_percent: summary.success_ratio * 100.0,
        offered: (spec.model == crate::report::Model::Open).then_some(load as f64),
        achieved: summary.rps,
    };
    let mut m = misses(&spec.objectives, &figures);
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
    } else if m.is_empty() {
        StepVerdict::Pass
    } else {
        StepVerdict::Fail
    };
    Judged {
        figures,
        summary,
        misses: m,
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
                saturated: super::saturation::saturated(self, &judged, end),
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
            let results = Results::parse(&text, &format!("{name} step {}", i + 1))?;
            steps.push(Step {
                load: s.load,
                phase: s.phase,
                results,
                timing: s.timing,
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
        None => (None, None),
    }
}

/// Why the step at `load` broke the objective.
fn why(sweep: &Sweep, judged: &[Judged], load: u64) -> String {
    sweep
        .steps
        .iter()
        .zip(judged)
        .find(|(s, _)| s.load == load)
        .map(|(_, j)| j.misses.join("; "))
        .unwrap_or_default()
}

/// The one line with the answer.
pub fn answer_line(sweep: &Sweep, judged: &[Judged], end: Option<End>) -> String {
    let unit = sweep.spec.unit();
    match end {
        Some(End::Edge { pass, fail }) => format!(
            "Answer: {pass} {unit} sustained within the objective; first broken at {fail} {unit}: {}",
            why(sweep, judged, fail)
        ),
        Some(End::Broken { pass, fail }) => format!(
            "Answer: {pass} {unit} sustained within the objective; first broken at {fail} {unit}, with errors above --max-error-ratio, so the sweep stopped there without narrowing: {}",
            why(sweep, judged, fail)
        ),
        Some(End::AllPassed { top }) => format!(
            "Answer: {top} {unit} sustained within the objective, the top of the range: no step broke it (raise TO to find the edge)"
        ),
        Some(End::FirstFailed { load }) => format!(
            "Answer: none: the first step, {load} {unit}, already broke the objective: {}",
            why(sweep, judged, load)
        ),
        None => {
            let best = sweep
                .steps
                .iter()
                .zip(judged)
                .filter(|(_, j)| j.verdict == StepVerdict::Pass)
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
