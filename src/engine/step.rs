//! The step protocol's values: what changes from one step of a held run to the next
//! (`StepPlan`, also sent to worker processes) and a thread's end of the channels that
//! carry the steps (`Link`). Held runs themselves are `held.rs`.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use serde::{Deserialize, Serialize};

use super::{EngineError, EnginePlan};
use crate::config::schedule::Schedule;
use crate::stats::Stats;

/// What changes from one step of a held run to the next (also sent to worker processes,
/// src/orchestrate/).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepPlan {
    /// Open model: the step's schedule (its times counted from the step's start).
    pub schedule: Option<Schedule>,
    pub warmup: Duration,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
}

impl StepPlan {
    /// The plan's own step (the first of a held run, the only one of a single run).
    pub fn of(plan: &EnginePlan) -> StepPlan {
        StepPlan {
            schedule: plan.schedule.clone(),
            warmup: plan.warmup,
            duration: plan.duration,
            requests: plan.requests,
        }
    }
}

/// A thread's end of the step protocol.
pub(super) struct Link {
    pub(super) local: usize,
    pub(super) done: Sender<(usize, Result<Stats, EngineError>)>,
    pub(super) next: Receiver<Option<(StepPlan, Instant)>>,
}

impl Link {
    /// Sends this thread's results of the step just ended.
    pub(super) fn done(&self, result: Result<Stats, EngineError>) {
        let _ = self.done.send((self.local, result));
    }

    /// Waits for the next step and the instant it starts (None: the run is over).
    pub(super) fn next(&self) -> Option<(StepPlan, Instant)> {
        self.next.recv().ok().flatten()
    }
}
