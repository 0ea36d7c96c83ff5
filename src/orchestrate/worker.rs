//! The worker's side of the protocol (`vblast --worker`): read the plan, open the
//! connections, say `ready`, start the clock at the instant `go` names, stop on `stop` or
//! when the coordinator goes away (end of input, or its death: PR_SET_PDEATHSIG), and send
//! the result; with a plan that asks for it, its running totals about once a second on the
//! way; with `--nodes active`, move its connections to the node each `route` names. A held
//! plan (a sweep's rate steps) runs step after step over the same connections: `step_done`
//! at each step's end, then the next `step` it is sent, until `stop` or the end of input.
//! Never quotes the plan (it holds the token).

use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::protocol::{self, FromWorker, ToWorker};
use crate::engine::{self, EnginePlan, StartGate, StepPlan};
use crate::error::EXIT_BAD_INPUT;
use crate::net::route::Route;
use crate::signals::{Signal, Stop};

/// The worker's start gate: the first thread through says `ready`, reads `go` and waits
/// for its instant; then a thread watches the input for `stop`.
struct ParentGate<R: BufRead + Send> {
    barrier: Barrier,
    origin: OnceLock<Instant>,
    input: Mutex<Option<R>>,
    stop: Stop,
    connections: u64,
    /// `--nodes active`: the route the coordinator's `route` messages move, and the
    /// plan's node count.
    route: Option<(Arc<Route>, usize)>,
    /// A held run: where the `step` messages read after `go` go.
    steps: Mutex<Option<Sender<(StepPlan, u64)>>>,
    /// The coordinator said stop (or went away): a stop not set by it is this process's
    /// own signal.
    told: Arc<AtomicBool>,
}

/// A held step as the coordinator sent it: the plan and its wall-clock start.
type NextStep = (StepPlan, u64);

fn reply(msg: &FromWorker) {
    // The coordinator may be gone: nothing useful to do about a closed pipe.
    let _ = protocol::send(&mut std::io::stdout().lock(), msg);
}

impl<R: BufRead + Send + 'static> StartGate for ParentGate<R> {
    fn wait(&self) -> Instant {
        if self.barrier.wait().is_leader() {
            reply(&FromWorker::Ready {
                version: protocol::VERSION,
                connections: self.connections,
            });
            let input = self.input.lock().ok().and_then(|mut g| g.take());
            let origin = match input {
                Some(mut input) => {
                    let origin = loop {
                        match protocol::recv::<ToWorker>(&mut input) {
                            Ok(Some(ToWorker::Go { at_unix_ns })) => {
                                let wait = protocol::until(at_unix_ns);
                                let origin = Instant::now() + wait;
                                std::thread::sleep(wait);
                                break origin;
                            }
                            Ok(Some(ToWorker::Route { node })) => follow(&self.route, node),
                            _ => {
                                self.told.store(true, Ordering::SeqCst);
                                self.stop.request(Signal::Terminate);
                                break Instant::now();
                            }
                        }
                    };
                    let steps = self.steps.lock().ok().and_then(|mut g| g.take());
                    watch_for_stop(
                        input,
                        (self.stop.clone(), self.told.clone()),
                        self.route.clone(),
                        steps,
                    );
                    origin
                }
                None => Instant::now(),
            };
            let _ = self.origin.set(origin);
        }
        self.barrier.wait();
        *self.origin.get_or_init(Instant::now)
    }
}

/// After `go`: `stop`, or the end of input (the coordinator is gone), stops the run (and
/// a held run: `steps` is dropped, so no step follows); `route` moves the connections to
/// the cluster's new active node; `step` goes to `steps` (a held run's next step).
fn watch_for_stop<R: BufRead + Send + 'static>(
    mut input: R,
    (stop, told): (Stop, Arc<AtomicBool>),
    route: Option<(Arc<Route>, usize)>,
    steps: Option<Sender<NextStep>>,
) {
    std::thread::spawn(move || {
        loop {
            match protocol::recv::<ToWorker>(&mut input) {
                Ok(Some(ToWorker::Stop)) | Ok(None) | Err(_) => {
                    told.store(true, Ordering::SeqCst);
                    stop.request(Signal::Terminate);
                    return;
                }
                Ok(Some(ToWorker::Route { node })) => follow(&route, node),
                Ok(Some(ToWorker::Step { step, at_unix_ns })) => {
                    if let Some(tx) = &steps {
                        let _ = tx.send((*step, at_unix_ns));
                    }
                }
                Ok(Some(_)) => {}
            }
        }
    });
}

/// A held run's step boundary in the worker: the step's statistics go to the coordinator
/// (or its failure, which ends the run), then the next step it sends, started at the
/// instant it names; None once the run is stopped or the coordinator says no more. A step
/// cut short by a signal to this process alone is not a step: it is reported as an error.
fn next_step(
    ended: Result<crate::stats::Stats, engine::EngineError>,
    steps: &Receiver<NextStep>,
    stop: &Stop,
    told: &AtomicBool,
) -> Option<StepPlan> {
    match (ended, stop.signal()) {
        (Ok(_), Some(s)) if !told.load(Ordering::SeqCst) => {
            // The coordinator says whether it matters (it may have the same signal).
            reply(&FromWorker::Error {
                message: format!("stopped by {s} during a step"),
            });
            return None;
        }
        (Ok(stats), _) => reply(&FromWorker::StepDone {
            stats: Box::new(stats),
        }),
        (Err(e), _) => {
            let _ = writeln!(std::io::stderr(), "vblast worker: {e}");
            reply(&FromWorker::Error {
                message: e.to_string(),
            });
            return None;
        }
    }
    loop {
        // A stop (from the coordinator, or a signal to this process) ends the run even
        // when no message follows it.
        if stop.is_set() {
            return None;
        }
        match steps.recv_timeout(Duration::from_millis(50)) {
            Ok((step, at)) => {
                std::thread::sleep(protocol::until(at));
                return Some(step);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// A `route` message: the engine's threads see the move at their next loop pass. A node
/// the plan does not have is ignored (the coordinator sends only indices of its plan).
fn follow(route: &Option<(Arc<Route>, usize)>, node: usize) {
    if let Some((r, nodes)) = route
        && node < *nodes
    {
        r.set(node);
    }
}

/// The plan, first on the input: it, whether to send progress, and whether it is held;
/// or the exit code of a worker that has none it can run (its error said).
fn read_plan(input: &mut impl BufRead) -> Result<(EnginePlan, bool, bool), i32> {
    match protocol::recv::<ToWorker>(input) {
        Ok(Some(ToWorker::Plan {
            version,
            plan,
            progress,
            held,
        })) if version == protocol::VERSION => Ok((*plan, progress, held)),
        Ok(Some(ToWorker::Plan { version, .. })) => Err(fail(&format!(
            "coordinator speaks protocol version {version}, not {}",
            protocol::VERSION
        ))),
        Ok(Some(_)) => Err(fail("expected a plan first")),
        Ok(None) => Err(fail("no plan on stdin")),
        Err(e) => Err(fail(&format!("bad plan: {e}"))),
    }
}

/// `vblast --worker`. Returns the exit code.
pub fn main(stop: &Stop) -> i32 {
    // Die with the coordinator, so that no orphan keeps sending load.
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and changes nothing else.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
    }
    crate::sys::raise_nofile();
    let mut input = BufReader::new(std::io::stdin());
    let (mut plan, progress, held) = match read_plan(&mut input) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // --nodes active over a cluster: the route starts on the plan's node and moves when the
    // coordinator says so (the route itself does not travel in the plan).
    let route = (plan.nodes.is_cluster() && !plan.nodes.spread).then(|| {
        Arc::new(Route::new(
            plan.nodes.use_nodes.first().copied().unwrap_or(0),
        ))
    });
    plan.nodes.route.clone_from(&route);
    let route = route.map(|r| (r, plan.nodes.targets.len()));
    let connections = (plan.thread_offset..plan.thread_offset + plan.threads_here)
        .map(|t| {
            let (slot, slots) = plan.slot(t);
            crate::pacing::share(plan.load.connections, slots, slot)
        })
        .sum();
    let (steps_tx, steps) = crossbeam_channel::unbounded::<NextStep>();
    let told = Arc::new(AtomicBool::new(false));
    let gate = ParentGate {
        barrier: Barrier::new(plan.threads_here),
        origin: OnceLock::new(),
        input: Mutex::new(Some(input)),
        stop: stop.clone(),
        connections,
        route,
        steps: Mutex::new(held.then_some(steps_tx)),
        told: told.clone(),
    };
    // Progress: the threads' totals (sent by them about once a second over the engine's
    // channel, which they never wait on) summed and passed on as one small line, at most
    // once a second, from this thread: nothing in the event loops changes. Only sums over
    // every thread go out: the coordinator takes each as the whole process's figures.
    let last = Mutex::new(None::<Instant>);
    let relay = |threads: &[engine::Totals]| {
        if !threads.iter().all(|t| t.reported) {
            return;
        }
        let Ok(mut last) = last.lock() else {
            return;
        };
        let now = Instant::now();
        if last.is_some_and(|t| now.duration_since(t).as_secs_f64() < 0.9) {
            return;
        }
        *last = Some(now);
        let mut figures = Box::<crate::stats::figures::Figures>::default();
        let n = threads.iter().map(|t| t.ops.len()).max().unwrap_or(0);
        let mut ops = vec![crate::stats::figures::OpFigures::default(); n];
        for t in threads {
            figures.add(&t.more);
            for (sum, o) in ops.iter_mut().zip(&t.ops) {
                sum.add(o);
            }
        }
        reply(&FromWorker::Progress {
            requests: threads.iter().map(|t| t.requests).sum(),
            ok: threads.iter().map(|t| t.ok).sum(),
            figures,
            ops,
        });
    };
    let relay: Option<engine::ProgressFn<'_>> = progress.then_some(&relay);
    if held {
        let mut next = |ended| next_step(ended, &steps, stop, &told);
        return match engine::run_held_at(&plan, stop, &gate, relay, &mut next) {
            Ok(()) => 0,
            Err(e) => fail(&e.to_string()),
        };
    }
    match engine::run(&plan, stop, &gate, relay) {
        Ok(stats) => {
            reply(&FromWorker::Result {
                stats: Box::new(stats),
            });
            0
        }
        Err(e) => fail(&e.to_string()),
    }
}

fn fail(message: &str) -> i32 {
    let _ = writeln!(std::io::stderr(), "vblast worker: {message}");
    reply(&FromWorker::Error {
        message: message.to_string(),
    });
    EXIT_BAD_INPUT
}
