//! A sweep as the library runs it: what it was asked to do (`Spec`, saved with it), the
//! checked `Plan` (the scenario and the spec; the commands build it from the flags), the
//! load of each step, and where its figures go (`SweepOutput`).

use serde::{Deserialize, Serialize};

use crate::config::scenario::{Load, Scenario};
use crate::config::schedule::Schedule;
use crate::report::Model;

use super::objective::Objective;
use super::search::{Resolution, Search};

/// What a sweep was asked to do; saved with it, and all `vblast report` needs to render it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Spec {
    /// Open: rate steps; closed: concurrency steps.
    pub model: Model,
    pub from: u64,
    pub to: u64,
    pub steps: usize,
    pub resolution: String,
    pub max_error_ratio: f64,
    pub objectives: Vec<Objective>,
    pub step_duration_s: f64,
    pub step_warmup_s: f64,
    /// Rate sweeps: the open connections of every step.
    pub connections: Option<u64>,
    pub target: String,
    pub operation: String,
    /// The level of the intervals latency bounds are judged with; None in files of a
    /// vblast before intervals, whose steps are judged on their figures alone.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// How many times an unclear step is measured again (`--max-repeats`).
    #[serde(default)]
    pub max_repeats: u32,
    /// A workload sweep: loads are the scale of the recorded traffic in hundredths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadSweep>,
}

/// What a workload sweep (`--workload FILE --scale FROM..TO`) adds to its spec.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct WorkloadSweep {
    pub file: String,
    pub speed: f64,
    /// Req/s the recorded curve offers over a step's measured window at 1x.
    pub offered_per_x: f64,
}

/// A workload sweep's loads: the scale in hundredths (270 is 2.7x the recorded traffic).
pub const PER_X: f64 = 100.0;

impl Spec {
    /// What a load is counted in.
    pub fn unit(&self) -> &'static str {
        match self.model {
            Model::Open if self.workload.is_some() => "% of the recorded traffic",
            Model::Open => "req/s",
            Model::Closed => "connections",
        }
    }

    /// The level of the intervals, when latency bounds are judged with them.
    pub fn level(&self) -> Option<crate::stats::interval::Confidence> {
        self.confidence
            .and_then(crate::stats::interval::Confidence::new)
    }

    /// The rate a step at `load` offers (open model): the load itself, or the recorded
    /// curve's rate times the scale.
    pub fn offered(&self, load: u64) -> Option<f64> {
        match (self.model, &self.workload) {
            (Model::Open, Some(w)) => Some(w.offered_per_x * load as f64 / PER_X),
            (Model::Open, None) => Some(load as f64),
            (Model::Closed, _) => None,
        }
    }

    pub fn search(&self) -> Result<Search, crate::error::Cause> {
        let said = |e: super::search::SearchError| crate::error::Cause::Said(e.to_string());
        Search::new(
            self.from,
            self.to,
            self.steps,
            Resolution::parse(&self.resolution).map_err(said)?,
        )
        .map_err(said)
    }
}

/// A checked sweep.
#[derive(Debug)]
pub struct Plan {
    pub scenario: Scenario,
    pub spec: Spec,
    /// A workload sweep's schedule at 1x, scaled for each step.
    pub curve: Option<Schedule>,
    /// A workload sweep's recorded callers, made once for every step.
    pub callers: Option<StepCallers>,
}

/// A workload sweep's recorded callers (made by `commands::callers`): each step's curve
/// is placed send by send, each send given its caller and operation from the deck in
/// turn (`profile::workload_file::RunCallers::deck`).
#[derive(Clone)]
pub struct StepCallers {
    pub callers: Vec<crate::config::schedule::Caller>,
    pub request_sets: Vec<Vec<crate::template::RequestSpec>>,
    pub deck: Vec<u16>,
}

/// Counts only: the callers hold tokens.
impl std::fmt::Debug for StepCallers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepCallers")
            .field("callers", &self.callers.len())
            .field("deck", &self.deck.len())
            .finish()
    }
}

impl StepCallers {
    /// `curve` (a step's, scaled) placed send by send up to `until`, with the callers.
    fn instants(&self, curve: Schedule, until: std::time::Duration) -> Schedule {
        use crate::profile::workload_file::{MAX_SENDS, deal, step_instants};
        let Schedule::Steps(steps) = &curve else {
            return curve;
        };
        let offsets = step_instants(steps, until, MAX_SENDS);
        let ops = deal(&self.deck, offsets.len() as u64);
        Schedule::Instants(crate::config::schedule::Instants {
            offsets: offsets.into(),
            ops: ops.into(),
            callers: self.callers.clone().into(),
            request_sets: self.request_sets.clone().into(),
        })
    }
}

impl Plan {
    /// The load of one step at `load` req/s or connections.
    pub fn load_for(&self, load: u64) -> Load {
        let mut l = self.scenario.load.clone();
        match self.spec.model {
            Model::Open => {
                let until = l.step.warmup + l.step.duration.unwrap_or_default();
                l.step.schedule = Some(match (&self.curve, &self.callers) {
                    (Some(c), Some(k)) => k.instants(c.times(load as f64 / PER_X), until),
                    (Some(c), None) => c.times(load as f64 / PER_X),
                    (None, _) => Schedule::Constant { rate: load as f64 },
                })
            }
            Model::Closed => {
                l.connections = load;
                l.step.schedule = None;
            }
        }
        l
    }
}

/// Where a sweep's figures go: printed as text (else JSON), the live progress line, the
/// results file and the HTML page.
#[derive(Clone, Debug, Default)]
pub struct SweepOutput {
    pub text: bool,
    pub quiet: bool,
    pub progress: bool,
    pub output: Option<std::path::PathBuf>,
    pub html: Option<std::path::PathBuf>,
    /// Each step's nodes sampled (src/server_stats/); None: none.
    pub server: Option<crate::server_stats::Settings>,
}
