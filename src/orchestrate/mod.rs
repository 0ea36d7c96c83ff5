//! Spreading a run over worker processes when one process may not hold enough file
//! descriptors: the layout of processes and threads, what a run over them measured (and
//! lost), and why one could not run. The coordinator's side of the worker protocol
//! (`protocol`) is a state machine of its own (`coordinator`): start the workers, start
//! them together, relay a stop and the moves of a cluster's active node, collect and merge
//! their results losslessly, and account for any worker that is lost. A held run
//! (`hold_workers`, a sweep's rate steps) keeps the workers and their connections from
//! step to step: each step's results are merged at its end, and the next step is sent to
//! every worker. `worker` is the other side. The engine knows nothing of processes.

mod coordinator;
pub mod protocol;
pub mod worker;

use std::time::SystemTime;

use crate::engine::{EnginePlan, ProgressFn, StepPlan};
use crate::error::{Cause, io_text};
use crate::pacing::share;
use crate::signals::Stop;
use crate::stats::Stats;
use crate::sys::ephemeral_ports;

use coordinator::Coordinator;
use protocol::ProtocolError;

/// Descriptors a process keeps for itself (stdio, epoll, setup client, libraries).
pub const FD_RESERVE: u64 = 100;

/// What the engine returned over all processes.
#[derive(Debug)]
pub struct Measured {
    pub stats: Stats,
    /// Set when part of the planned load is missing (a worker process was lost): what is
    /// missing (its text says it in words).
    pub lost: Option<Lost>,
    /// With `--start-at`: the wall-clock instant the workers started their clocks.
    pub clock_start: Option<SystemTime>,
}

/// Why the connections cannot be laid out over processes here.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// `--source-addrs` cannot hold the connections.
    #[error("{0}")]
    Sources(Cause),
    #[error(
        "-c {connections} needs {connections} local ports to one server address, but this system has {ports} ephemeral ports ({lo}-{hi}, net.ipv4.ip_local_port_range)"
    )]
    Ports {
        connections: u64,
        ports: u64,
        lo: u64,
        hi: u64,
    },
    #[error("the open-file limit ({fd_limit}) leaves no room for connections")]
    NoRoom { fd_limit: u64 },
    #[error(
        "cannot fit {connections} connections into processes of {per_process} descriptors each"
    )]
    CannotFit { connections: u64, per_process: u64 },
}

impl From<LayoutError> for Cause {
    fn from(e: LayoutError) -> Cause {
        match e {
            LayoutError::Sources(c) => c,
            other => Cause::Said(other.to_string()),
        }
    }
}

/// How a run is laid out over processes and threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub processes: usize,
    pub threads: usize,
}

impl Layout {
    /// Plans `connections` over enough processes that each stays within `fd_limit`
    /// descriptors, with `threads` event loops in total (at least one per process).
    pub fn plan(connections: u64, threads: usize, fd_limit: u64) -> Result<Layout, LayoutError> {
        Layout::plan_from(connections, threads, fd_limit, &[])
    }

    /// `plan`, with connections bound round-robin to `sources` (`--source-addrs`): each
    /// local address has the whole ephemeral range.
    pub fn plan_from(
        connections: u64,
        threads: usize,
        fd_limit: u64,
        sources: &[std::net::IpAddr],
    ) -> Result<Layout, LayoutError> {
        if !sources.is_empty() {
            crate::net::source_addrs::check_capacity(connections, sources)
                .map_err(LayoutError::Sources)?;
        } else if let Some((lo, hi)) = ephemeral_ports() {
            let ports = hi.saturating_sub(lo) + 1;
            if connections > ports {
                return Err(LayoutError::Ports {
                    connections,
                    ports,
                    lo,
                    hi,
                });
            }
        }
        let per_process = fd_limit.saturating_sub(FD_RESERVE);
        if per_process < 16 {
            return Err(LayoutError::NoRoom { fd_limit });
        }
        let processes = connections.div_ceil(per_process).max(1) as usize;
        // No more threads than connections: a thread without a connection would still
        // get a share of -n (or of the -R schedule) that it can never send.
        let threads = threads
            .min(usize::try_from(connections).unwrap_or(usize::MAX))
            .max(processes);
        // Connections are split evenly over all threads; check the busiest process.
        let busiest = (0..processes)
            .map(|p| {
                let first: usize = (0..p)
                    .map(|q| share(threads as u64, processes, q) as usize)
                    .sum();
                let n = share(threads as u64, processes, p) as usize;
                (first..first + n)
                    .map(|t| share(connections, threads, t))
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0);
        if busiest > per_process {
            return Err(LayoutError::CannotFit {
                connections,
                per_process,
            });
        }
        Ok(Layout { processes, threads })
    }

    /// This layout's share for process `p`: (first global thread, threads).
    pub fn threads_of(&self, p: usize) -> (usize, usize) {
        let first: usize = (0..p)
            .map(|q| share(self.threads as u64, self.processes, q) as usize)
            .sum();
        (
            first,
            share(self.threads as u64, self.processes, p) as usize,
        )
    }
}

/// A worker's share of the plan, for saying what is missing when it is lost.
fn share_text(plan: &EnginePlan) -> String {
    let threads = plan.thread_offset..plan.thread_offset + plan.threads_here;
    let conns: u64 = threads
        .clone()
        .map(|t| {
            let (slot, slots) = plan.slot(t);
            share(plan.load.connections, slots, slot)
        })
        .sum();
    let pct = 100.0 * conns as f64 / plan.load.connections.max(1) as f64;
    let mut text = format!(
        "{conns} of the {} planned connections ({pct:.0}%)",
        plan.load.connections
    );
    if let Some(n) = plan.load.step.requests {
        let reqs: u64 = threads
            .map(|t| {
                let (slot, slots) = plan.slot(t);
                share(n, slots, slot)
            })
            .sum();
        text.push_str(&format!(" and up to {reqs} of the {n} requests"));
    } else {
        text.push_str(" and their requests");
    }
    text
}

/// Why a worker process failed, as it said or as the coordinator saw it.
#[derive(Debug, thiserror::Error)]
pub enum WorkerFailure {
    /// The worker's own message (`error`).
    #[error("{0}")]
    Said(String),
    #[error("speaks protocol version {0}, not {VERSION}", VERSION = protocol::VERSION)]
    Version(u32),
    /// Its output could not be read as messages.
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
}

/// How a worker process ended without its results.
#[derive(Debug, thiserror::Error)]
pub enum Ended {
    #[error("{0}")]
    Failed(WorkerFailure),
    #[error("ended with {0} and gave no result")]
    Status(std::process::ExitStatus),
    #[error("{0}")]
    Wait(std::io::Error),
    /// A held run's worker whose output ended and whose status did not come in time.
    #[error("its output ended and it gave no result")]
    OutputEnded,
}

impl Ended {
    /// Its error, else its exit status.
    fn of(
        error: Option<WorkerFailure>,
        status: std::io::Result<std::process::ExitStatus>,
    ) -> Ended {
        match (error, status) {
            (Some(e), _) => Ended::Failed(e),
            (None, Ok(s)) => Ended::Status(s),
            (None, Err(e)) => Ended::Wait(e),
        }
    }
}

/// A worker lost after it started: what is missing, and from what (the report, or a held
/// run's step).
#[derive(Debug, thiserror::Error)]
#[error("worker process {index} was lost ({how}): {share} are missing from the {from}")]
pub struct LostWorker {
    pub index: usize,
    pub how: Ended,
    /// Its share of the plan, in words.
    pub share: String,
    pub from: &'static str,
}

impl LostWorker {
    fn new(index: usize, how: Ended, plan: &EnginePlan, from: &'static str) -> LostWorker {
        LostWorker {
            index,
            how,
            share: share_text(plan),
            from,
        }
    }
}

/// The workers lost during a run (or a held run's step): part of the planned load is
/// missing. Reads as one sentence per worker, joined by "; ".
#[derive(Debug)]
pub struct Lost(pub Vec<LostWorker>);

impl Lost {
    fn of(lost: Vec<LostWorker>) -> Option<Lost> {
        (!lost.is_empty()).then_some(Lost(lost))
    }
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, w) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{w}")?;
        }
        Ok(())
    }
}

impl From<Lost> for Cause {
    fn from(l: Lost) -> Cause {
        match <[LostWorker; 1]>::try_from(l.0) {
            Ok([one]) => Cause::Said(one.to_string()),
            Err(several) => Cause::Several(
                several
                    .into_iter()
                    .map(|w| Cause::Said(w.to_string()))
                    .collect(),
            ),
        }
    }
}

/// Why a run over worker processes could not run (nothing was measured).
#[derive(Debug, thiserror::Error)]
pub enum WorkersError {
    #[error("cannot find own executable: {}", io_text(.0))]
    NoExe(std::io::Error),
    #[error("cannot start a worker process: {}", io_text(.0))]
    Spawn(std::io::Error),
    #[error("worker process {index} did not start: {how}")]
    NotStarted { index: usize, how: Ended },
    #[error("stopped before the first step")]
    StoppedBeforeFirstStep,
}

impl From<WorkersError> for Cause {
    fn from(e: WorkersError) -> Cause {
        match e {
            WorkersError::NoExe(source) => Cause::io("cannot find own executable", source),
            WorkersError::Spawn(source) => Cause::io("cannot start a worker process", source),
            other => Cause::Said(other.to_string()),
        }
    }
}

/// A held run's step boundary: the step's merged results (a worker lost during the step
/// makes its `lost`), and the next step (None: the run ends).
pub type NextFn<'a> = &'a mut dyn FnMut(Measured) -> Option<StepPlan>;

/// Runs one plan per worker process and merges their results.
/// With `progress`, workers send their running totals about once a second, and `progress`
/// is called with the latest of every worker (one `Totals` per worker process).
pub fn run_workers(
    plans: &[EnginePlan],
    stop: &Stop,
    progress: Option<ProgressFn<'_>>,
) -> Result<Measured, WorkersError> {
    drive(plans, stop, progress, None)
}

/// A held run over worker processes (`engine::run_held` in each): the workers are started
/// and open their connections once; the plans' own step runs first, then each step `next`
/// returns for the step just ended, sent to every worker (each takes its threads' share
/// of the step's rate, as in a single run), until it returns None, which ends the workers.
/// A worker lost during a step makes that step's `Measured::lost`; a worker that cannot
/// start is the error returned (nothing ran).
pub fn hold_workers(
    plans: &[EnginePlan],
    stop: &Stop,
    progress: Option<ProgressFn<'_>>,
    next: NextFn<'_>,
) -> Result<(), WorkersError> {
    drive(plans, stop, progress, Some(next)).map(|_| ())
}

/// `run_workers`, or with `held` a held run (`hold_workers`): the coordinator's states
/// from start to finish (`coordinator`).
fn drive(
    plans: &[EnginePlan],
    stop: &Stop,
    progress: Option<ProgressFn<'_>>,
    held: Option<NextFn<'_>>,
) -> Result<Measured, WorkersError> {
    let mut coordinator = Coordinator::start(plans, stop, progress, held)?;
    coordinator.drive();
    coordinator.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_workers_read_as_one_sentence_each() {
        let lost = Lost(vec![
            LostWorker {
                index: 1,
                how: Ended::OutputEnded,
                share: "150 of the 300 planned connections (50%) and their requests".into(),
                from: "step",
            },
            LostWorker {
                index: 2,
                how: Ended::Failed(WorkerFailure::Version(4)),
                share: "1 of the 3 planned connections (33%) and up to 5 of the 9 requests".into(),
                from: "report",
            },
        ]);
        let text = lost.to_string();
        assert_eq!(
            text,
            format!(
                "worker process 1 was lost (its output ended and it gave no result): 150 of the 300 planned connections (50%) and their requests are missing from the step; \
                 worker process 2 was lost (speaks protocol version 4, not {}): 1 of the 3 planned connections (33%) and up to 5 of the 9 requests are missing from the report",
                protocol::VERSION
            )
        );
        assert_eq!(Cause::from(lost).to_string(), text);
        assert_eq!(
            WorkersError::StoppedBeforeFirstStep.to_string(),
            "stopped before the first step"
        );
    }

    #[test]
    fn layouts() {
        let l = Layout::plan(20_000, 2, 20_000).unwrap();
        assert_eq!(
            l,
            Layout {
                processes: 2,
                threads: 2
            }
        );
        assert_eq!(l.threads_of(0), (0, 1));
        assert_eq!(l.threads_of(1), (1, 1));
        let l = Layout::plan(64, 2, 20_000).unwrap();
        assert_eq!(l.processes, 1);
        let l = Layout::plan(20_000, 1, 20_000).unwrap();
        assert_eq!(
            l,
            Layout {
                processes: 2,
                threads: 2
            }
        );
        let l = Layout::plan(25_000, 8, 20_000).unwrap();
        assert_eq!(l.processes, 2);
        assert_eq!(l.threads_of(1), (4, 4));
        assert!(Layout::plan(1_000_000, 2, 20_000).is_err());
    }
}
