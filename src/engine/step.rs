//! A thread's end of the channels that carry the steps of a held run (`Link`); what
//! changes from one step to the next is the load's `StepPlan` (`src/config/scenario.rs`,
//! also sent to worker processes). Held runs themselves are `held.rs`.

use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use super::{EngineError, StepPlan};
use crate::stats::Stats;

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
