//! Held runs: several load steps over the same event-loop threads and the same open
//! connections. The threads open their connections once; each step then runs its own
//! schedule (rate, warm-up, duration) with its own pacer and statistics (warm-up left
//! out, latency corrected against that step's schedule), and its results come back to
//! the controller, which decides the next step while the connections wait open and idle.
//!
//! The step boundary is the only place the threads and the controller talk, over
//! channels: a thread sends its step's statistics when its schedule is done and every
//! request it started is answered, then blocks on its own channel for the next step
//! (with the instant it starts). Nothing is added per request.

use std::panic::AssertUnwindSafe;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use mio::Events;

use super::driver::{self, Wheel};
use super::h2::H2Loop;
use super::worker::EventLoop;
use super::{
    EngineError, EnginePlan, LocalGate, NewWheel, ProgressFn, StartGate, StepPlan, Totals, build,
};
use crate::signals::Stop;
use crate::stats::Stats;

/// Runs `plan` (its own schedule as the first step), then each step `next` returns,
/// over the same threads and connections, until it returns None. `next` receives each
/// step's merged statistics (or the first thread failure, after which the run ends).
/// Only keep-alive runs hold their connections; every step must keep the first one's
/// model (open or closed).
pub fn run_held(
    plan: &EnginePlan,
    stop: &Stop,
    progress: Option<ProgressFn<'_>>,
    next: &mut dyn FnMut(Result<Stats, EngineError>) -> Option<StepPlan>,
) -> Result<(), EngineError> {
    run_held_at(
        plan,
        stop,
        &LocalGate::new(plan.threads_here),
        progress,
        next,
    )
}

/// `run_held` whose first step starts at `gate` (a worker process's share of a held run
/// starts with the other processes: src/orchestrate/worker.rs). Each later step starts
/// when `next` returns it.
pub fn run_held_at(
    plan: &EnginePlan,
    stop: &Stop,
    gate: &dyn StartGate,
    progress: Option<ProgressFn<'_>>,
    next: &mut dyn FnMut(Result<Stats, EngineError>) -> Option<StepPlan>,
) -> Result<(), EngineError> {
    if !plan.load.keepalive {
        return Err(EngineError::HeldWithoutKeepalive);
    }
    if plan.load.http2.is_some() {
        hold(plan, stop, gate, progress, next, H2Loop::new)
    } else {
        hold(plan, stop, gate, progress, next, EventLoop::new)
    }
}

/// `run_held_at` over one protocol (`new`: its connections).
fn hold<'p, W: Wheel<'p>>(
    plan: &'p EnginePlan,
    stop: &Stop,
    gate: &dyn StartGate,
    progress: Option<ProgressFn<'_>>,
    next: &mut dyn FnMut(Result<Stats, EngineError>) -> Option<StepPlan>,
    new: NewWheel<'p, W>,
) -> Result<(), EngineError> {
    let threads = plan.threads_here;
    let (report, reports) = crossbeam_channel::bounded::<(usize, Totals)>(threads * 4);
    let workers = build(plan, progress.map(|_| &report), new)?;
    drop(report);
    let (done, dones) = crossbeam_channel::unbounded();
    let open_model = plan.load.step.schedule.is_some();
    std::thread::scope(|s| {
        let mut steps = Vec::with_capacity(threads);
        for (local, (worker, core)) in workers.into_iter().enumerate() {
            let (tx, rx) = crossbeam_channel::bounded(1);
            steps.push(tx);
            let link = StepChannels {
                local,
                done: done.clone(),
                next: rx,
            };
            s.spawn(move || run_thread(worker, core, stop, gate, &link));
        }
        drop(done);
        let mut reports = reports;
        let mut latest = vec![Totals::default(); threads];
        let mut total = Stats::new(plan.ops.len());
        let mut failure: Option<EngineError> = None;
        let mut got = 0;
        loop {
            crossbeam_channel::select! {
                recv(reports) -> m => match m {
                    Ok((thread, p)) => {
                        latest[thread] = p;
                        if let Some(show) = progress {
                            show(&latest);
                        }
                    }
                    // Every thread has ended: nothing more to relay.
                    Err(_) => reports = crossbeam_channel::never(),
                },
                recv(dones) -> m => {
                    let Ok((_, result)) = m else {
                        // Every thread has ended.
                        break;
                    };
                    match result {
                        Ok(stats) => total.merge(&stats),
                        Err(e) => {
                            failure.get_or_insert(e);
                        }
                    }
                    got += 1;
                    if got < threads {
                        continue;
                    }
                    got = 0;
                    latest.iter_mut().for_each(|t| *t = Totals::default());
                    let merged = std::mem::replace(&mut total, Stats::new(plan.ops.len()));
                    let step = match failure.take() {
                        Some(e) => {
                            next(Err(e));
                            None
                        }
                        None => next(Ok(merged)),
                    };
                    let step = match step {
                        Some(st) if st.schedule.is_some() != open_model => {
                            next(Err(EngineError::HeldModelChanged));
                            None
                        }
                        other => other,
                    };
                    // The step starts now for every thread (its connections are open).
                    let at = Instant::now();
                    for tx in &steps {
                        let _ = tx.send(step.clone().map(|st| (st, at)));
                    }
                    if step.is_none() {
                        break;
                    }
                }
            }
        }
    });
    Ok(())
}

/// One event-loop thread of a held run, pinned to `core`; a panic is its step's failure.
fn run_thread<'p, W: Wheel<'p>>(
    worker: W,
    core: Option<core_affinity::CoreId>,
    stop: &Stop,
    gate: &dyn StartGate,
    link: &StepChannels,
) {
    if let Some(c) = core {
        core_affinity::set_for_current(c);
    }
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| run_steps(worker, stop, gate, link)));
    if ran.is_err() {
        link.done(Err(EngineError::Panicked));
    }
}

/// A held run: the first step starts at the gate, each next one when the controller
/// sends it (with its origin); every step's statistics go back over `link`. Ends when
/// the controller sends no step, or at a failure (sent as that step's result).
fn run_steps<'p, W: Wheel<'p>>(mut w: W, stop: &Stop, gate: &dyn StartGate, link: &StepChannels) {
    w.core().hold = true;
    crate::net::stamp::stamp_reads(w.core().kernel);
    let mut events = Events::with_capacity(1024);
    if let Err(e) = w.open_first(stop, &mut events) {
        // Sent as the first step's result, after the gate, so that no thread waits
        // for this one at the gate.
        gate.wait();
        link.done(Err(e));
        return;
    }
    if w.core().kernel {
        crate::net::stamp::wait_for_stamps();
    }
    let mut origin = gate.wait();
    loop {
        let result = driver::run_step(&mut w, origin, stop, &mut events);
        let failed = result.is_err();
        link.done(result);
        if failed {
            return;
        }
        match link.next() {
            Some((step, at)) => {
                w.core().step = step;
                origin = at;
            }
            None => return,
        }
    }
}

/// A thread's end of the step protocol.
pub(super) struct StepChannels {
    pub(super) local: usize,
    pub(super) done: Sender<(usize, Result<Stats, EngineError>)>,
    pub(super) next: Receiver<Option<(StepPlan, Instant)>>,
}

impl StepChannels {
    /// Sends this thread's results of the step just ended.
    pub(super) fn done(&self, result: Result<Stats, EngineError>) {
        let _ = self.done.send((self.local, result));
    }

    /// Waits for the next step and the instant it starts (None: the run is over).
    pub(super) fn next(&self) -> Option<(StepPlan, Instant)> {
        self.next.recv().ok().flatten()
    }
}
