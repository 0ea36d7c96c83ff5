//! Spreading a run over worker processes when one process may not hold enough file
//! descriptors: the layout of processes and threads, and the coordinator's side of the
//! worker protocol (`protocol`): start the workers, start them together, relay a stop and
//! the moves of a cluster's active node, collect and merge their results losslessly, and
//! account for any worker that is lost. A held run (`hold_workers`, a sweep's rate steps)
//! keeps the workers and their connections from step to step: each step's results are
//! merged at its end, and the next step is sent to every worker.
//! `worker` is the other side. The engine knows nothing of processes.

pub mod protocol;
pub mod worker;

use std::io::BufReader;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::engine::{EnginePlan, ProgressFn, StepPlan, Totals};
use crate::pacing::share;
use crate::signals::Stop;
use crate::stats::Stats;
use crate::sys::ephemeral_ports;

use protocol::{FromWorker, ToWorker};

/// Descriptors a process keeps for itself (stdio, epoll, setup client, libraries).
pub const FD_RESERVE: u64 = 100;
/// Time between `go` and the common start, for every worker to read it.
const GO_LEAD: Duration = Duration::from_millis(50);
/// Time between a held run's `step` and its start: the workers are idle and waiting.
const STEP_LEAD: Duration = Duration::from_millis(10);

/// What the engine returned over all processes.
#[derive(Debug)]
pub struct Measured {
    pub stats: Stats,
    /// Set when part of the planned load is missing (a worker process was lost): what is
    /// missing, in words.
    pub lost: Option<String>,
    /// With `--start-at`: the wall-clock instant the workers started their clocks.
    pub clock_start: Option<SystemTime>,
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
    pub fn plan(connections: u64, threads: usize, fd_limit: u64) -> Result<Layout, String> {
        Layout::plan_from(connections, threads, fd_limit, &[])
    }

    /// `plan`, with connections bound round-robin to `sources` (`--source-addrs`): each
    /// local address has the whole ephemeral range.
    pub fn plan_from(
        connections: u64,
        threads: usize,
        fd_limit: u64,
        sources: &[std::net::IpAddr],
    ) -> Result<Layout, String> {
        if !sources.is_empty() {
            crate::source_addrs::check_capacity(connections, sources)?;
        } else if let Some((lo, hi)) = ephemeral_ports() {
            let ports = hi.saturating_sub(lo) + 1;
            if connections > ports {
                return Err(format!(
                    "-c {connections} needs {connections} local ports to one server address, but this system has {ports} ephemeral ports ({lo}-{hi}, net.ipv4.ip_local_port_range)"
                ));
            }
        }
        let per_process = fd_limit.saturating_sub(FD_RESERVE);
        if per_process < 16 {
            return Err(format!(
                "the open-file limit ({fd_limit}) leaves no room for connections"
            ));
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
            return Err(format!(
                "cannot fit {connections} connections into processes of {per_process} descriptors each"
            ));
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
            share(plan.connections, slots, slot)
        })
        .sum();
    let pct = 100.0 * conns as f64 / plan.connections.max(1) as f64;
    let mut text = format!(
        "{conns} of the {} planned connections ({pct:.0}%)",
        plan.connections
    );
    if let Some(n) = plan.requests {
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

struct WorkerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    ready: bool,
    result: Option<Stats>,
    /// A held run: its statistics of the step under way, once it has sent them.
    step: Option<Stats>,
    /// Its output ended (or was unreadable): no more messages.
    gone: bool,
    error: Option<String>,
}

impl WorkerProcess {
    fn tell(&mut self, msg: &ToWorker) {
        if let Some(stdin) = self.stdin.as_mut()
            && protocol::send(stdin, msg).is_err()
        {
            self.stdin = None;
        }
    }
}

/// A held run's step boundary: the step's merged results (a worker's failure during the
/// step makes its `lost`), and the next step (None: the run ends).
pub type NextFn<'a> = &'a mut dyn FnMut(Result<Measured, String>) -> Option<StepPlan>;

/// Runs one plan per worker process and merges their results.
/// With `progress`, workers send their running totals about once a second, and `progress`
/// is called with the latest of every worker (one `Totals` per worker process).
pub fn run_workers(
    plans: &[EnginePlan],
    stop: &Stop,
    progress: Option<ProgressFn<'_>>,
) -> Result<Measured, String> {
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
) -> Result<(), String> {
    drive(plans, stop, progress, Some(next)).map(|_| ())
}

/// Why a worker ended without its results: its error, else its exit status.
fn how_ended(error: &Option<String>, status: std::io::Result<std::process::ExitStatus>) -> String {
    match (error, status) {
        (Some(e), _) => e.clone(),
        (None, Ok(s)) => format!("ended with {s} and gave no result"),
        (None, Err(e)) => e.to_string(),
    }
}

/// A held run's lost worker, mid-run: as `how_ended`, its status waited for briefly (its
/// output has ended: it is ending, if not gone already).
fn how_lost(w: &mut WorkerProcess) -> String {
    if let Some(e) = &w.error {
        return e.clone();
    }
    for _ in 0..50 {
        match w.child.try_wait() {
            Ok(Some(s)) => return how_ended(&None, Ok(s)),
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return how_ended(&None, Err(e)),
        }
    }
    "its output ended and it gave no result".into()
}

/// Worker process `i` lost after it started: what is missing, and from what (`from`: the report,
/// or a held run's step).
fn lost_text(i: usize, how: &str, plan: &EnginePlan, from: &str) -> String {
    format!(
        "worker process {i} was lost ({how}): {} are missing from the {from}",
        share_text(plan)
    )
}

/// `run_workers`, or with `held` a held run (`hold_workers`); the outcome of a held run
/// is empty (each step's went to `held`).
fn drive(
    plans: &[EnginePlan],
    stop: &Stop,
    progress: Option<ProgressFn<'_>>,
    mut held: Option<NextFn<'_>>,
) -> Result<Measured, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let (tx, rx) = crossbeam_channel::unbounded::<(usize, Option<Result<FromWorker, String>>)>();
    let mut workers: Vec<WorkerProcess> = Vec::with_capacity(plans.len());
    let mut start_failure = None;
    for (i, plan) in plans.iter().enumerate() {
        let spawned = Command::new(&exe)
            .arg("--worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                start_failure = Some(format!("cannot start a worker process: {e}"));
                break;
            }
        };
        let stdout = child.stdout.take();
        let stdin = child.stdin.take();
        let mut w = WorkerProcess {
            child,
            stdin,
            ready: false,
            result: None,
            step: None,
            gone: false,
            error: None,
        };
        w.tell(&ToWorker::Plan {
            version: protocol::VERSION,
            plan: Box::new(plan.clone()),
            progress: progress.is_some(),
            held: held.is_some(),
        });
        if let Some(out) = stdout {
            let tx = tx.clone();
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
        } else {
            w.gone = true;
        }
        workers.push(w);
    }
    drop(tx);
    let mut stop_sent = false;
    let mut go_sent = false;
    // A held run: a step is under way (from `go`, then from each `step`); whether one has
    // ended (been given to `held`).
    let mut step_open = false;
    let mut stepped = false;
    let mut latest = vec![Totals::default(); workers.len()];
    let mut clock_start = None;
    // --nodes active: the route the session's watcher moves, and the node the workers
    // were last told (their plan's).
    let route = plans.first().and_then(|p| p.nodes.route.clone());
    let mut told = plans
        .first()
        .and_then(|p| p.nodes.use_nodes.first().copied())
        .unwrap_or(0);
    if start_failure.is_some() {
        for w in &mut workers {
            w.tell(&ToWorker::Stop);
        }
        stop_sent = true;
    }
    // One loop for every phase: collect messages, start everyone together once all are
    // ready, relay a stop, until every worker's output has ended.
    while workers.iter().any(|w| !w.gone) {
        if stop.is_set() && !stop_sent {
            for w in &mut workers {
                w.tell(&ToWorker::Stop);
            }
            stop_sent = true;
        }
        if !go_sent && !stop_sent && workers.iter().all(|w| w.ready) {
            // --start-at (src/shard.rs) names the instant; otherwise just after now.
            let now = SystemTime::now();
            let go = match plans.first().and_then(|p| p.spread.start_at()) {
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
            clock_start = Some(go);
            let at = protocol::unix_ns(go);
            for w in &mut workers {
                w.tell(&ToWorker::Go { at_unix_ns: at });
            }
            go_sent = true;
            step_open = held.is_some();
        }
        if go_sent
            && !stop_sent
            && let Some(r) = &route
            && r.active() != told
        {
            told = r.active();
            for w in &mut workers {
                w.tell(&ToWorker::Route { node: told });
            }
        }
        let Ok((i, msg)) = rx.recv_timeout(Duration::from_millis(50)) else {
            continue;
        };
        let w = &mut workers[i];
        match msg {
            Some(Ok(FromWorker::Ready { version, .. })) if version == protocol::VERSION => {
                w.ready = true;
            }
            Some(Ok(FromWorker::Ready { version, .. })) => {
                w.error = Some(format!(
                    "speaks protocol version {version}, not {}",
                    protocol::VERSION
                ));
            }
            Some(Ok(FromWorker::Progress {
                requests,
                ok,
                figures,
            })) => {
                if let Some(show) = progress {
                    latest[i] = Totals {
                        requests,
                        ok,
                        more: *figures,
                    };
                    show(&latest);
                }
            }
            Some(Ok(FromWorker::Result { stats })) => w.result = Some(*stats),
            Some(Ok(FromWorker::StepDone { stats })) => w.step = Some(*stats),
            Some(Ok(FromWorker::Error { message })) => w.error = Some(message),
            Some(Err(e)) => w.error = Some(e),
            None => {
                w.gone = true;
                w.stdin = None;
                if !w.ready && !stop_sent {
                    // A worker that cannot start stops the others: nothing was measured.
                    for o in &mut workers {
                        o.tell(&ToWorker::Stop);
                    }
                    stop_sent = true;
                }
            }
        }
        // A held run's step ends when every worker has sent its results or is gone.
        if let Some(next) = held.as_mut()
            && step_open
            && workers.iter().all(|w| w.step.is_some() || w.gone)
        {
            step_open = false;
            let mut total = Stats::new(plans.first().map_or(0, |p| p.ops.len()));
            let mut lost = Vec::new();
            for (i, w) in workers.iter_mut().enumerate() {
                match w.step.take() {
                    Some(s) => total.merge(&s),
                    None => lost.push(lost_text(i, &how_lost(w), &plans[i], "step")),
                }
            }
            latest.iter_mut().for_each(|t| *t = Totals::default());
            let outcome = Measured {
                stats: total,
                lost: (!lost.is_empty()).then(|| lost.join("; ")),
                clock_start: None,
            };
            stepped = true;
            match next(Ok(outcome)) {
                Some(step) => {
                    let at = protocol::unix_ns(SystemTime::now() + STEP_LEAD);
                    let step = Box::new(step);
                    for w in workers.iter_mut().filter(|w| !w.gone) {
                        w.tell(&ToWorker::Step {
                            step: step.clone(),
                            at_unix_ns: at,
                        });
                    }
                    step_open = true;
                }
                None => {
                    // No more steps: the end of their input ends the workers.
                    for w in &mut workers {
                        w.stdin = None;
                    }
                }
            }
        }
    }
    let mut total = Stats::new(plans.first().map_or(0, |p| p.ops.len()));
    let mut lost = Vec::new();
    let mut not_started = Vec::new();
    for (i, mut w) in workers.into_iter().enumerate() {
        drop(w.stdin.take());
        let status = w.child.wait();
        if held.is_some() && w.ready {
            // Its steps' results (and losses) went to `held`.
            continue;
        }
        match w.result {
            Some(s) => total.merge(&s),
            None => {
                let how = how_ended(&w.error, status);
                if w.ready {
                    lost.push(lost_text(i, &how, &plans[i], "report"));
                } else {
                    not_started.push(format!("worker process {i} did not start: {how}"));
                }
            }
        }
    }
    if let Some(e) = start_failure.or_else(|| not_started.into_iter().next()) {
        return Err(e);
    }
    if held.is_some() && !stepped {
        // Stopped before the workers were started together: no step ran.
        return Err("stopped before the first step".into());
    }
    Ok(Measured {
        stats: total,
        lost: (!lost.is_empty()).then(|| lost.join("; ")),
        clock_start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
