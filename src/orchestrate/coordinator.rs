//! The coordinator of a run's worker processes, as a small state machine: `Starting`
//! (plans sent, waiting for every `ready`), `Running` (`go` sent; a held run's step under
//! way), `Stopping` (a stop relayed: waiting for every output to end) and, for a held run,
//! `Ending` (no more steps: the workers' input is closed). Each turn of `drive` takes one
//! transition (`turn`) and handles one message (`on_message`); a held run's step ends
//! (`end_step`) when every worker has sent its results or is gone. `finish` waits for the
//! processes and merges what they sent.

use std::io::BufReader;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, SystemTime};

use crossbeam_channel::Receiver;

use super::protocol::{self, FromWorker, ProtocolError, ToWorker};
use super::{Ended, Lost, LostWorker, Measured, NextFn, WorkerFailure, WorkersError};
use crate::engine::{EnginePlan, ProgressFn, Totals};
use crate::net::route::Route;
use crate::signals::Stop;
use crate::stats::Stats;

/// Time between `go` and the common start, for every worker to read it.
const GO_LEAD: Duration = Duration::from_millis(50);
/// Time between a held run's `step` and its start: the workers are idle and waiting.
const STEP_LEAD: Duration = Duration::from_millis(10);

/// Where the run of worker processes is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunState {
    /// Plans sent; waiting for every worker's `ready`.
    Starting,
    /// `go` sent: the run is under way (a held run: `step_open`, a step is).
    Running { step_open: bool },
    /// `stop` sent (a signal, or a worker that could not start): waiting for every
    /// worker's output to end; a held run's step under way still ends (`step_open`).
    Stopping { step_open: bool },
    /// A held run with no more steps: the workers' input is closed, so they end.
    Ending,
}

/// A message from worker `i` (its reader thread's), None at the end of its output.
type Message = (usize, Option<Result<FromWorker, ProtocolError>>);

/// The coordinator's handle of one worker process.
struct WorkerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    ready: bool,
    result: Option<Stats>,
    /// A held run: its statistics of the step under way, once it has sent them.
    step: Option<Stats>,
    /// Its output ended (or was unreadable): no more messages.
    gone: bool,
    error: Option<WorkerFailure>,
}

impl WorkerProcess {
    fn tell(&mut self, msg: &ToWorker) {
        if let Some(stdin) = self.stdin.as_mut()
            && protocol::send(stdin, msg).is_err()
        {
            self.stdin = None;
        }
    }

    /// A held run's lost worker, mid-run: why it ended, its status waited for briefly (its
    /// output has ended: it is ending, if not gone already).
    fn how_lost(&mut self) -> Ended {
        if let Some(e) = self.error.take() {
            return Ended::Failed(e);
        }
        for _ in 0..50 {
            match self.child.try_wait() {
                Ok(Some(s)) => return Ended::Status(s),
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => return Ended::Wait(e),
            }
        }
        Ended::OutputEnded
    }
}

/// The coordinator: the workers, where the run is, and what it has gathered.
pub(super) struct Coordinator<'a, 'h> {
    plans: &'a [EnginePlan],
    stop: &'a Stop,
    progress: Option<ProgressFn<'a>>,
    held: Option<NextFn<'h>>,
    workers: Vec<WorkerProcess>,
    messages: Receiver<Message>,
    state: RunState,
    /// A worker process that could not be spawned (nothing runs).
    start_failure: Option<WorkersError>,
    /// Every worker's latest running totals (one per process).
    latest: Vec<Totals>,
    /// The wall-clock instant the workers were told to start at.
    clock_start: Option<SystemTime>,
    /// A held run: the steps that have ended (been given to `held`).
    steps_ended: u64,
    /// --nodes active: the route the session's watcher moves, and the node the workers
    /// were last told (their plan's).
    route: Option<std::sync::Arc<Route>>,
    told: usize,
}

impl<'a, 'h> Coordinator<'a, 'h> {
    /// Starts one worker process per plan and sends each its plan (`Starting`); a worker
    /// that cannot be spawned stops the others at once (`Stopping`).
    pub(super) fn start(
        plans: &'a [EnginePlan],
        stop: &'a Stop,
        progress: Option<ProgressFn<'a>>,
        held: Option<NextFn<'h>>,
    ) -> Result<Coordinator<'a, 'h>, WorkersError> {
        let exe = std::env::current_exe().map_err(WorkersError::NoExe)?;
        let (tx, messages) = crossbeam_channel::unbounded::<Message>();
        let mut c = Coordinator {
            plans,
            stop,
            progress,
            held,
            workers: Vec::with_capacity(plans.len()),
            messages,
            state: RunState::Starting,
            start_failure: None,
            latest: Vec::new(),
            clock_start: None,
            steps_ended: 0,
            route: plans.first().and_then(|p| p.nodes.route.clone()),
            told: plans
                .first()
                .and_then(|p| p.nodes.use_nodes.first().copied())
                .unwrap_or(0),
        };
        for (i, plan) in plans.iter().enumerate() {
            match c.spawn(&exe, i, plan, &tx) {
                Ok(w) => c.workers.push(w),
                Err(e) => {
                    c.start_failure = Some(e);
                    c.stop_all();
                    break;
                }
            }
        }
        c.latest = vec![Totals::default(); c.workers.len()];
        Ok(c)
    }

    /// Spawns worker `i`, sends it its plan, and starts the thread reading its output.
    fn spawn(
        &self,
        exe: &std::path::Path,
        i: usize,
        plan: &EnginePlan,
        tx: &crossbeam_channel::Sender<Message>,
    ) -> Result<WorkerProcess, WorkersError> {
        let mut child = Command::new(exe)
            .arg("--worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(WorkersError::Spawn)?;
        let stdout = child.stdout.take();
        let stdin = child.stdin.take();
        let mut w = WorkerProcess {
            child,
            stdin,
            ready: false,
            result: None,
            step: None,
            gone: stdout.is_none(),
            error: None,
        };
        w.tell(&ToWorker::Plan {
            version: protocol::VERSION,
            plan: Box::new(plan.clone()),
            progress: self.progress.is_some(),
            held: self.held.is_some(),
        });
        if let Some(out) = stdout {
            read_messages(i, out, tx.clone());
        }
        Ok(w)
    }

    /// Runs until every worker's output has ended.
    pub(super) fn drive(&mut self) {
        while self.workers.iter().any(|w| !w.gone) {
            self.turn();
            let Ok((i, msg)) = self.messages.recv_timeout(Duration::from_millis(50)) else {
                continue;
            };
            self.on_message(i, msg);
            self.end_step();
        }
    }

    /// The transition a turn of the loop takes before it waits for a message: relay a
    /// stop, start everyone together once all are ready, relay a move of the active node.
    fn turn(&mut self) {
        match self.state {
            RunState::Starting | RunState::Running { .. } if self.stop.is_set() => self.stop_all(),
            RunState::Starting if self.workers.iter().all(|w| w.ready) => self.go(),
            RunState::Running { .. } => self.follow_route(),
            RunState::Starting | RunState::Stopping { .. } | RunState::Ending => {}
        }
    }

    /// Stop everyone (`Stopping`); a held run's step under way still ends.
    fn stop_all(&mut self) {
        for w in &mut self.workers {
            w.tell(&ToWorker::Stop);
        }
        let step_open = matches!(
            self.state,
            RunState::Running { step_open: true } | RunState::Stopping { step_open: true }
        );
        self.state = RunState::Stopping { step_open };
    }

    /// Every worker is ready: tell them the common start (`Running`).
    fn go(&mut self) {
        // --start-at (src/config/spread.rs) names the instant; otherwise just after now.
        let now = SystemTime::now();
        let go = match self.plans.first().and_then(|p| p.load.spread.start_at()) {
            Some(at) if at > now => at,
            Some(at) => {
                eprintln!(
                    "vblast: --start-at {} had passed when the connections were open: starting now",
                    humantime::format_rfc3339_millis(at)
                );
                now + GO_LEAD
            }
            None => now + GO_LEAD,
        };
        self.clock_start = Some(go);
        let at = protocol::unix_ns(go);
        for w in &mut self.workers {
            w.tell(&ToWorker::Go { at_unix_ns: at });
        }
        self.state = RunState::Running {
            step_open: self.held.is_some(),
        };
        self.follow_route();
    }

    /// --nodes active: the watcher moved the active node; the workers follow it.
    fn follow_route(&mut self) {
        if let Some(r) = &self.route
            && r.active() != self.told
        {
            self.told = r.active();
            for w in &mut self.workers {
                w.tell(&ToWorker::Route { node: self.told });
            }
        }
    }

    /// One message from worker `i`.
    fn on_message(&mut self, i: usize, msg: Option<Result<FromWorker, ProtocolError>>) {
        let w = &mut self.workers[i];
        match msg {
            Some(Ok(FromWorker::Ready { version, .. })) if version == protocol::VERSION => {
                w.ready = true;
            }
            Some(Ok(FromWorker::Ready { version, .. })) => {
                w.error = Some(WorkerFailure::Version(version));
            }
            Some(Ok(FromWorker::Progress {
                requests,
                ok,
                figures,
                ops,
            })) => {
                if let Some(show) = self.progress {
                    self.latest[i] = Totals {
                        requests,
                        ok,
                        more: *figures,
                        ops,
                        reported: true,
                    };
                    show(&self.latest);
                }
            }
            Some(Ok(FromWorker::Result { stats })) => w.result = Some(*stats),
            Some(Ok(FromWorker::StepDone { stats })) => w.step = Some(*stats),
            Some(Ok(FromWorker::Error { message })) => w.error = Some(WorkerFailure::Said(message)),
            Some(Err(e)) => w.error = Some(WorkerFailure::Protocol(e)),
            None => {
                w.gone = true;
                w.stdin = None;
                let started = w.ready;
                if !started && !matches!(self.state, RunState::Stopping { .. }) {
                    // A worker that cannot start stops the others: nothing was measured.
                    self.stop_all();
                }
            }
        }
    }

    /// A held run's step ends when every worker has sent its results or is gone: its
    /// merged results go to `held`, then the next step to every worker (`Running`), or
    /// none (`Ending`).
    fn end_step(&mut self) {
        let step_open = match self.state {
            RunState::Running { step_open } | RunState::Stopping { step_open } => step_open,
            RunState::Starting | RunState::Ending => false,
        };
        if self.held.is_none()
            || !step_open
            || !self.workers.iter().all(|w| w.step.is_some() || w.gone)
        {
            return;
        }
        let measured = self.step_results();
        self.steps_ended += 1;
        let stopping = matches!(self.state, RunState::Stopping { .. });
        let next = self.held.as_mut().and_then(|next| next(measured));
        match next {
            Some(step) => {
                let at = protocol::unix_ns(SystemTime::now() + STEP_LEAD);
                let step = Box::new(step);
                for w in self.workers.iter_mut().filter(|w| !w.gone) {
                    w.tell(&ToWorker::Step {
                        step: step.clone(),
                        at_unix_ns: at,
                    });
                }
                self.state = if stopping {
                    RunState::Stopping { step_open: true }
                } else {
                    RunState::Running { step_open: true }
                };
            }
            None => {
                // No more steps: the end of their input ends the workers.
                for w in &mut self.workers {
                    w.stdin = None;
                }
                self.state = if stopping {
                    RunState::Stopping { step_open: false }
                } else {
                    RunState::Ending
                };
            }
        }
    }

    /// The step just ended, merged over the workers (a worker gone makes it `lost`).
    fn step_results(&mut self) -> Measured {
        let mut total = Stats::new(self.plans.first().map_or(0, |p| p.ops.len()));
        let mut lost = Vec::new();
        for (i, w) in self.workers.iter_mut().enumerate() {
            match w.step.take() {
                Some(s) => total.merge(&s),
                None => lost.push(LostWorker::new(i, w.how_lost(), &self.plans[i], "step")),
            }
        }
        self.latest.iter_mut().for_each(|t| *t = Totals::default());
        Measured {
            stats: total,
            lost: Lost::of(lost),
            clock_start: None,
        }
    }

    /// Waits for every worker process and merges their results; the outcome of a held
    /// run is empty (each step's went to `held`).
    pub(super) fn finish(self) -> Result<Measured, WorkersError> {
        let held = self.held.is_some();
        let mut total = Stats::new(self.plans.first().map_or(0, |p| p.ops.len()));
        let mut lost = Vec::new();
        let mut not_started = None;
        for (i, mut w) in self.workers.into_iter().enumerate() {
            drop(w.stdin.take());
            let status = w.child.wait();
            if held && w.ready {
                // Its steps' results (and losses) went to `held`.
                continue;
            }
            match w.result {
                Some(s) => total.merge(&s),
                None => {
                    let how = Ended::of(w.error, status);
                    if w.ready {
                        lost.push(LostWorker::new(i, how, &self.plans[i], "report"));
                    } else if not_started.is_none() {
                        not_started = Some(WorkersError::NotStarted { index: i, how });
                    }
                }
            }
        }
        if let Some(e) = self.start_failure.or(not_started) {
            return Err(e);
        }
        if held && self.steps_ended == 0 {
            // Stopped before the workers were started together: no step ran.
            return Err(WorkersError::StoppedBeforeFirstStep);
        }
        Ok(Measured {
            stats: total,
            lost: Lost::of(lost),
            clock_start: self.clock_start,
        })
    }
}

/// Reads worker `i`'s messages on a thread of their own, passing each to the coordinator
/// (None once its output has ended; a message that cannot be read ends it too).
fn read_messages(i: usize, out: ChildStdout, tx: crossbeam_channel::Sender<Message>) {
    std::thread::spawn(move || {
        let mut input = BufReader::new(out);
        loop {
            match protocol::recv::<FromWorker>(&mut input) {
                Ok(Some(m)) => {
                    if tx.send((i, Some(Ok(m)))).is_err() {
                        return;
                    }
                }
                Ok(None) => {
                    let _ = tx.send((i, None));
                    return;
                }
                Err(e) => {
                    let _ = tx.send((i, Some(Err(e))));
                    let _ = tx.send((i, None));
                    return;
                }
            }
        }
    });
}
