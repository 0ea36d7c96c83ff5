//! A session's load steps: the layout of a load over processes and threads, the engine's
//! plan over the session's target (a cluster's node plans), one step (`step`, node after
//! node for `--nodes each`), and held steps over one set of connections (`hold`), in this
//! process or over worker processes.

use std::time::SystemTime;

use crate::config::cluster::NodesMode;
use crate::config::scenario::Load;
use crate::engine::{self, EnginePlan, LocalGate, ProgressFn};
use crate::error::Error;
use crate::net::route::NodePlan;
use crate::orchestrate::{self, Layout, Measured};
use crate::session::cluster::ClusterRun;
use crate::session::{Session, StepResult};

impl Session {
    /// How `load` is laid out over processes and threads here.
    pub fn layout(&self, load: &Load) -> Result<Layout, Error> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Layout::plan_from(
            // A shard lays out its own share (src/session/shard.rs).
            load.spread.shard.share(load.connections),
            load.threads.unwrap_or(cores),
            self.fd_limit,
            &load.spread.source_addrs,
        )
        .map_err(Error::input)
    }

    /// Runs one load step over the fixtures: in this process, or spread over worker
    /// processes when one process cannot hold the connections.
    pub fn step(
        &mut self,
        load: &Load,
        progress: Option<ProgressFn<'_>>,
    ) -> Result<StepResult, Error> {
        let layout = self.layout(load)?;
        if let Some(s) = self.stop.signal() {
            return Err(Error::Stopped(s));
        }
        let plan = self.engine_plan(load, &layout);
        let started_at = SystemTime::now();
        let Some(cluster) = self.cluster.as_ref() else {
            let outcome = self.run_plan(&plan, &layout, progress)?;
            return Ok(StepResult {
                outcome,
                layout,
                started_at,
                server_samples: None,
            });
        };
        let plans = cluster.node_plans();
        let mut total: Option<Measured> = None;
        let mut elapsed = 0.0;
        // --nodes each: where the next step begins in the timeline (src/stats/nodes.rs).
        let mut at_second = 0;
        for nodes in plans {
            let plan = EnginePlan {
                target: nodes.targets[nodes.pick(0)].clone(),
                nodes,
                ..plan.clone()
            };
            let watcher = cluster.watcher();
            let probe = self.start_staleness();
            let outcome = self.run_plan(&plan, &layout, progress);
            if let Some(w) = watcher {
                w.stop();
            }
            let staleness = probe.map(|p| p.stop());
            let mut outcome = outcome?;
            outcome.stats.staleness = staleness;
            elapsed += outcome.stats.elapsed_s;
            at_second = crate::stats::nodes::place_step(&mut outcome.stats, at_second);
            match &mut total {
                None => total = Some(outcome),
                Some(t) => {
                    t.stats.merge(&outcome.stats);
                    if t.lost.is_none() {
                        t.lost = outcome.lost;
                    }
                }
            }
            if self.stop.signal().is_some() {
                break;
            }
        }
        // What the session removes at the end goes to the node active now.
        self.target = cluster.active_target();
        let mut outcome = total.ok_or_else(|| Error::input("no unsealed node to load"))?;
        // Steps one after another: the run lasts as long as all of them.
        outcome.stats.elapsed_s = elapsed;
        cluster.set_roles(&mut outcome.stats);
        Ok(StepResult {
            outcome,
            layout,
            started_at,
            server_samples: None,
        })
    }

    /// The engine's plan of `load` laid out as `layout`, over this session's target.
    fn engine_plan(&self, load: &Load, layout: &Layout) -> EnginePlan {
        EnginePlan {
            target: self.target.clone(),
            tls: self.tls.clone(),
            token: self.token.clone(),
            namespace: self.namespace.clone(),
            ops: self
                .operations
                .iter()
                .cloned()
                .map(|mut o| {
                    if load.no_forwarding {
                        o.request
                            .headers
                            .push(("X-Vault-No-Request-Forwarding".into(), "true".into()));
                    }
                    o
                })
                .collect(),
            load: load.clone(),
            threads_total: layout.threads,
            thread_offset: 0,
            threads_here: layout.threads,
            nodes: NodePlan::default(),
        }
    }

    /// Why the steps of `load` cannot run over the same open connections (`hold`), or
    /// None when they can: open-model steps with keep-alive, in one process or over worker
    /// processes, on one node or a cluster's `--nodes active` / `all` (not node after node).
    pub fn hold_refusal(&self, load: &Load) -> Result<Option<&'static str>, Error> {
        self.layout(load)?;
        Ok(if load.step.schedule.is_none() {
            Some("closed-model steps each have their own number of connections")
        } else if !load.keepalive {
            Some("--no-keepalive opens a connection per request")
        } else if self
            .cluster
            .as_ref()
            .is_some_and(|c| c.mode == NodesMode::Each)
        {
            Some("--nodes each runs each step over each node in turn")
        } else if load.spread.start_at().is_some() {
            Some("--start-at starts one step at a wall-clock instant")
        } else {
            None
        })
    }

    /// Runs `first`, then each load `next` returns for the step just ended, over the same
    /// event-loop threads and open connections, until it returns None (`hold_refusal`
    /// says when they can be held), in this process or over worker processes (which are
    /// started once and kept for every step). A later load changes only its step (the
    /// schedule, the warm-up and the bounds); its connections and the rest are the first's. A cluster
    /// target holds the node plan a `step` has (the failover watcher of `--nodes active`
    /// runs through every step and the waits between them), each step's node rows carry
    /// their roles, and the cleanup goes to the node active at the end.
    pub fn hold(
        &mut self,
        first: &Load,
        progress: Option<ProgressFn<'_>>,
        next: &mut dyn FnMut(Result<StepResult, Error>) -> Option<Load>,
    ) -> Result<(), Error> {
        let layout = self.layout(first)?;
        if let Some(s) = self.stop.signal() {
            return Err(Error::Stopped(s));
        }
        let mut plan = self.engine_plan(first, &layout);
        // A cluster target: the node plan a step has, held (one plan, or refused above).
        let cluster = self.cluster.as_ref();
        if let Some(c) = cluster {
            let [nodes] = <[NodePlan; 1]>::try_from(c.node_plans())
                .map_err(|_| Error::input("--nodes each cannot hold its connections"))?;
            plan.target = nodes.targets[nodes.pick(0)].clone();
            plan.nodes = nodes;
        }
        // For the whole held run: a failover between steps moves the load too.
        let watcher = cluster.and_then(ClusterRun::watcher);
        let mut started_at = SystemTime::now();
        // --op kv-staleness: a probe per step, its figures in that step's.
        let mut probe = self.start_staleness();
        let mut on_step = |r: Result<Measured, engine::EngineError>| {
            let staleness = probe.take().map(|p| p.stop());
            let result = r.map_err(Error::engine).map(|mut outcome| {
                if let Some(c) = cluster {
                    c.set_roles(&mut outcome.stats);
                }
                outcome.stats.staleness = staleness;
                StepResult {
                    outcome,
                    layout,
                    started_at,
                    server_samples: None,
                }
            });
            let load = next(result)?;
            started_at = SystemTime::now();
            probe = self.start_staleness();
            Some(load.step)
        };
        let ran = if layout.processes > 1 {
            let plans = process_plans(&plan, &layout);
            orchestrate::hold_workers(&plans, &self.stop, progress, &mut |m| on_step(Ok(m)))
                .map_err(Error::engine)
        } else {
            let mut on_stats = |r: Result<crate::stats::Stats, engine::EngineError>| {
                on_step(r.map(|stats| Measured {
                    stats,
                    lost: None,
                    clock_start: None,
                }))
            };
            engine::run_held(&plan, &self.stop, progress, &mut on_stats).map_err(Error::engine)
        };
        if let Some(w) = watcher {
            w.stop();
        }
        // What the session removes at the end goes to the node active now.
        if let Some(c) = &self.cluster {
            self.target = c.active_target();
        }
        ran
    }

    /// Runs one plan here, or over worker processes when the layout says so.
    fn run_plan(
        &self,
        plan: &EnginePlan,
        layout: &Layout,
        progress: Option<ProgressFn<'_>>,
    ) -> Result<Measured, Error> {
        let outcome = if layout.processes == 1 {
            // --start-at: the clock starts at that wall-clock instant (src/session/shard.rs).
            let wall = plan
                .load
                .spread
                .start_at()
                .map(|at| crate::session::shard::WallGate::new(plan.threads_here, at));
            let local = LocalGate::new(plan.threads_here);
            let gate: &dyn engine::StartGate = match &wall {
                Some(w) => w,
                None => &local,
            };
            let stats = engine::run(plan, &self.stop, gate, progress).map_err(Error::engine)?;
            Measured {
                stats,
                lost: None,
                clock_start: wall.and_then(|w| w.started()),
            }
        } else {
            let plans = process_plans(plan, layout);
            orchestrate::run_workers(&plans, &self.stop, progress).map_err(Error::engine)?
        };
        Ok(outcome)
    }
}

/// `plan` split over `layout`'s processes: each runs its threads' share (the threads
/// divide the connections and the rate among themselves as in one process).
fn process_plans(plan: &EnginePlan, layout: &Layout) -> Vec<EnginePlan> {
    (0..layout.processes)
        .map(|p| {
            let (first, n) = layout.threads_of(p);
            EnginePlan {
                thread_offset: first,
                threads_here: n,
                ..plan.clone()
            }
        })
        .collect()
}
