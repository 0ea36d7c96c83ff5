//! A session owns everything vblast does to a server around the load: resolving the
//! target and its TLS settings, the checks before setup, the fixtures each operation
//! creates (once), any number of load steps over them (`step`, which the sweep will call
//! many times), and their removal, guaranteed on every exit path: success, failure, a
//! signal, or a setup that failed half-way (`close`, also run on drop).

pub mod cluster;
pub mod fixtures;
pub mod live;
pub mod one_step;
pub mod shard;
pub mod url_request;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustls::pki_types::ServerName;

use crate::config::cluster::NodesMode;
use crate::config::fixtures::{FixturePlan, Mode};
use crate::config::scenario::{Load, Scenario, Workload};
use crate::engine::{self, EnginePlan, LocalGate, ProgressFn};
use crate::error::Error;
use crate::error::io_text;
use crate::net::route::{NodePlan, Route};
use crate::net::target::Target;
use crate::net::tls::{self, TlsOptions};
use crate::orchestrate::{self, Layout, Measured};
use crate::session::cluster::{ClusterView, Prober, Watcher};
use crate::session::fixtures::{server, state};
use crate::signals::Stop;
use crate::vault::client::Client;
use crate::vault::fixture::Naming;
use crate::vault::ops::{self, Created, SetupCtx, VaultOp};
use crate::vault::preflight::preflight;
use crate::vault::progress::{Display, SetupLog};
use crate::workload::Operation;

/// How long standbys may take to serve a fresh fixture (`Session::wait_for_standbys`).
const STANDBY_READY_WAIT: Duration = Duration::from_secs(10);

/// Timeout of each cleanup request: a removal the server takes longer over is waited for
/// by looking (`fixtures::server::wait_gone`, bounded by `--cleanup-timeout`).
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(10);

/// What one load step measured.
#[derive(Debug)]
pub struct StepResult {
    pub outcome: Measured,
    pub layout: Layout,
    /// Wall-clock time the step started (after setup).
    pub started_at: SystemTime,
    /// The nodes' samples over the step (`session::one_step` fills them in).
    pub server_samples: Option<crate::server_stats::ServerSamples>,
}

pub struct Session {
    target: Target,
    tls: Option<TlsOptions>,
    tls_config: Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    token: Option<String>,
    namespace: Option<String>,
    /// Per-request timeout of setup calls (the run's --timeout).
    timeout: Duration,
    keep: bool,
    fd_limit: u64,
    fixtures: Vec<Box<dyn VaultOp>>,
    operations: Vec<Operation>,
    stop: Stop,
    closed: bool,
    /// The names of the session's fixtures (its run id, its mode).
    naming: Naming,
    /// Where the run's state file is, and how long cleanup waits for the server.
    plan: FixturePlan,
    /// Several nodes of one HA cluster as the target.
    cluster: Option<ClusterRun>,
    /// The setup's progress and its phases' times.
    log: SetupLog,
}

/// A cluster target: its nodes, how they looked before the run, and the active node
/// (moved by the watcher during `--nodes active` steps).
struct ClusterRun {
    targets: Vec<Target>,
    view: ClusterView,
    mode: NodesMode,
    prober: Prober,
    route: Arc<Route>,
}

impl ClusterRun {
    /// Where a step's connections go, per `--nodes`: `active`, one plan on the active node
    /// whose route the watcher moves; `all`, one plan spread over the unsealed nodes;
    /// `each`, a plan per unsealed node, run one after another. `Session::step` runs them
    /// all; `Session::hold` holds the one plan of `active` and `all`.
    fn node_plans(&self) -> Vec<NodePlan> {
        let unsealed = self.view.unsealed();
        let base = NodePlan {
            targets: self.targets.clone(),
            ..NodePlan::default()
        };
        match self.mode {
            NodesMode::Active => vec![NodePlan {
                use_nodes: vec![self.route.active()],
                route: Some(self.route.clone()),
                ..base
            }],
            NodesMode::All => vec![NodePlan {
                use_nodes: unsealed,
                spread: true,
                ..base
            }],
            NodesMode::Each => unsealed
                .into_iter()
                .map(|n| NodePlan {
                    use_nodes: vec![n],
                    ..base.clone()
                })
                .collect(),
        }
    }

    /// `--nodes active`: the watcher that moves the route while the load runs. It runs in
    /// this process; worker processes hear of its moves from the coordinator
    /// (src/orchestrate/).
    fn watcher(&self) -> Option<Watcher> {
        (self.mode == NodesMode::Active).then(|| {
            Watcher::start(
                self.prober.clone(),
                self.targets.clone(),
                self.route.clone(),
            )
        })
    }

    /// Each node's row says what the node was before the run.
    fn set_roles(&self, stats: &mut crate::stats::Stats) {
        for (n, v) in stats.nodes.iter_mut().zip(&self.view.nodes) {
            n.role = v.state.word();
        }
    }

    /// The node active now (as the watcher last saw it).
    fn active_target(&self) -> Target {
        self.targets[self.route.active()].clone()
    }
}

fn has_control(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_control())
}

impl Session {
    /// Resolves the scenario's target, checks the server and sets every operation up. On
    /// any failure what was created so far is removed before the error is returned.
    /// The setup's long phases show their progress on a terminal (`open_showing`).
    pub fn open(scenario: &Scenario, stop: &Stop) -> Result<Session, Error> {
        Self::open_showing(scenario, stop, Display::new(false, false))
    }

    /// `open`, the setup's progress shown as `display` says (src/vault/progress.rs).
    pub fn open_showing(
        scenario: &Scenario,
        stop: &Stop,
        display: Display,
    ) -> Result<Session, Error> {
        let mut target = Target::parse(&scenario.address).map_err(Error::input)?;
        if !matches!(scenario.workload, Workload::Url(_)) {
            target.path = "/".into();
        }
        let tls = if target.is_tls() {
            Some(scenario.tls.clone().unwrap_or_default())
        } else {
            None
        };
        // Bad files and names are reported now, before anything is sent.
        let tls_config = match &tls {
            Some(opts) => Some((
                tls::client_config(opts).map_err(Error::input)?,
                tls::server_name(opts, &target.host).map_err(Error::input)?,
            )),
            None => None,
        };
        let token = scenario.token.0.clone();
        // Both go into request headers verbatim.
        if token.as_deref().is_some_and(has_control) {
            return Err(Error::input(
                "the token holds control characters (check VAULT_TOKEN, --token or --token-file)",
            ));
        }
        if scenario.namespace.as_deref().is_some_and(has_control) {
            return Err(Error::input("the namespace holds control characters"));
        }
        let mut cluster = None;
        if let Some(spec) = &scenario.cluster
            && matches!(scenario.workload, Workload::Vault(_))
        {
            let run = Self::probe_cluster(scenario, spec, &tls_config)?;
            let active = run.route.active();
            target = run.targets[active].clone();
            cluster = Some(run);
        }
        let fd_limit = fd_limit();
        let mut session = Session {
            target,
            tls,
            tls_config,
            token,
            namespace: scenario.namespace.clone(),
            timeout: scenario.load.timeout,
            keep: scenario.keep,
            fd_limit,
            fixtures: Vec::new(),
            operations: Vec::new(),
            stop: stop.clone(),
            closed: false,
            naming: fixtures::naming(scenario),
            plan: scenario.fixtures.clone(),
            cluster,
            log: SetupLog::new(display),
        };
        // The layout is checked now so that impossible loads are refused before setup.
        session.layout(&scenario.load)?;
        match &scenario.workload {
            Workload::Url(req) => {
                // The request first: a bad body file is reported whatever the server's state.
                let op = crate::session::url_request::operation(req, &session.target)
                    .map_err(Error::input)?;
                session.check_reachable()?;
                session.operations = vec![op];
            }
            Workload::Vault(choices) => {
                session.fixtures = ops::build(choices).map_err(Error::input)?;
                if let Err(e) = session.set_up(scenario.no_setup) {
                    // Whatever was created half-way goes now, before the error is shown.
                    session.close_reporting();
                    return Err(stop.signal().map_or(e, Error::Stopped));
                }
                session.wait_for_standbys();
                for (fixture, choice) in session.fixtures.iter().zip(choices) {
                    session
                        .operations
                        .extend(steps_of(fixture.as_ref(), choice));
                }
                if let Err(e) = session.enable_audit() {
                    session.close_reporting();
                    return Err(stop.signal().map_or(e, Error::Stopped));
                }
            }
        }
        Ok(session)
    }

    /// Asks every node's `sys/health` and refuses a cluster that cannot be measured.
    fn probe_cluster(
        scenario: &Scenario,
        spec: &crate::config::cluster::ClusterSpec,
        tls_config: &Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
    ) -> Result<ClusterRun, Error> {
        let mut targets = Vec::with_capacity(spec.nodes.len());
        for a in &spec.nodes {
            let mut t = Target::parse(a).map_err(Error::input)?;
            t.path = "/".into();
            targets.push(t);
        }
        if targets.iter().any(|t| t.scheme != targets[0].scheme) {
            return Err(Error::input(
                "the nodes of a cluster must all be http:// or all https://",
            ));
        }
        let prober = Prober {
            tls: tls_config.as_ref().map(|(c, _)| {
                (
                    c.clone(),
                    scenario.tls.as_ref().and_then(|t| t.server_name.clone()),
                )
            }),
            timeout: scenario.load.timeout.min(Duration::from_secs(5)),
        };
        let view = prober.probe(&targets);
        let active = view.check()?;
        Ok(ClusterRun {
            targets,
            view,
            mode: spec.mode,
            prober: Prober {
                timeout: Duration::from_millis(500),
                ..prober
            },
            route: Arc::new(Route::new(active)),
        })
    }

    /// A client per node (a cluster's every node, or the one target), each with a
    /// connection of its own: for the server sampler (src/server_stats/).
    pub fn node_clients(&self, timeout: Duration) -> Vec<Client> {
        match &self.cluster {
            Some(c) => c
                .targets
                .iter()
                .map(|t| self.client_for(t, timeout))
                .collect(),
            None => vec![self.client(timeout)],
        }
    }

    /// The cluster's nodes as they answered before the run (a cluster target only).
    pub fn cluster_view(&self) -> Option<&ClusterView> {
        self.cluster.as_ref().map(|c| &c.view)
    }

    fn set_up(&mut self, no_setup: bool) -> Result<(), Error> {
        // Setup requests end soon after a signal; cleanup's client has no such stop.
        let proto = self.client(self.timeout).with_stop(self.stop.clone());
        let make = || proto.clone_fresh();
        let ctx = SetupCtx {
            make_client: &make,
            tls: self.tls.as_ref(),
            no_setup,
            stop: &self.stop,
            naming: &self.naming,
            log: &self.log,
        };
        for f in &self.fixtures {
            f.check(&ctx)?;
        }
        self.log.fixture("checks", || {
            if no_setup {
                self.check_reachable()
            } else {
                preflight(&mut proto.clone_fresh()).map_err(Error::unreachable)
            }
        })?;
        for (i, f) in self.fixtures.iter_mut().enumerate() {
            if let Some(s) = self.stop.signal() {
                return Err(Error::Stopped(s));
            }
            self.naming.set_owner(i);
            if no_setup {
                f.setup(&ctx)?;
                continue;
            }
            // An operation that kept no phase of its own is one phase, with its line.
            let name = format!("{} setup", f.operation().name);
            self.log.fixture(&name, || f.setup(&ctx))?;
        }
        if let Some(s) = self.stop.signal() {
            return Err(Error::Stopped(s));
        }
        Ok(())
    }

    /// `--nodes all` / `each` send load to standbys, which load a new fixture (a mount) a
    /// moment after the active node it was made on: wait, bounded, until every unsealed
    /// node answers for each fixture itself (asked without forwarding), so the run does
    /// not count that moment as failures. A node still not ready is only noted: its
    /// answers are then measured as they are.
    fn wait_for_standbys(&self) {
        let Some(cluster) = self
            .cluster
            .as_ref()
            .filter(|c| c.mode != NodesMode::Active)
        else {
            return;
        };
        let active = cluster.route.active();
        let deadline = std::time::Instant::now() + STANDBY_READY_WAIT;
        for i in cluster.view.unsealed().into_iter().filter(|&i| i != active) {
            let t = &cluster.targets[i];
            let mut client = self.client_for(t, self.timeout).without_forwarding();
            for f in &self.fixtures {
                loop {
                    if self.stop.signal().is_some() {
                        return;
                    }
                    match f.ready_on(&mut client) {
                        Ok(true) => break,
                        Ok(false) | Err(_) if std::time::Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        Ok(false) | Err(_) => {
                            eprintln!(
                                "vblast: note: {} does not serve the fixture yet after {} s; its answers are measured as they come",
                                t.base(),
                                STANDBY_READY_WAIT.as_secs()
                            );
                            break;
                        }
                    }
                }
            }
        }
    }

    /// A setup client with its own connection.
    fn client(&self, timeout: Duration) -> Client {
        self.client_for(&self.target, timeout)
    }

    /// A client of node `target` with the run's token and TLS settings.
    fn client_for(&self, target: &Target, timeout: Duration) -> Client {
        let (config, name) = match &self.tls_config {
            // The node set up on is reached under its own name (a cluster's active node
            // need not be the first address).
            Some((c, n)) => (
                Some(c.clone()),
                Some(
                    self.tls
                        .as_ref()
                        .and_then(|o| tls::server_name(o, &target.host).ok())
                        .unwrap_or_else(|| n.clone()),
                ),
            ),
            None => (None, None),
        };
        Client::new(
            target,
            config,
            name,
            self.token.clone(),
            self.namespace.clone(),
            timeout,
        )
    }

    /// URL mode and --no-setup: the server must at least accept a connection (and a TLS
    /// handshake) before the run starts.
    fn check_reachable(&self) -> Result<(), Error> {
        use std::net::TcpStream;
        let addr = self.target.addr();
        let base = self.target.base();
        let limit = self.timeout.min(Duration::from_secs(10));
        let tcp = TcpStream::connect_timeout(&addr, limit).map_err(|e| {
            Error::unreachable(format!("cannot connect to {base}: {}", io_text(&e)))
        })?;
        if let Some((config, name)) = &self.tls_config {
            let _ = tcp.set_read_timeout(Some(limit));
            let _ = tcp.set_write_timeout(Some(limit));
            let mut conn = rustls::ClientConnection::new(config.clone(), name.clone())
                .map_err(|e| Error::unreachable(format!("TLS setup failed: {e}")))?;
            let mut tcp = tcp;
            let host_port = base.rsplit("://").next().unwrap_or(&base);
            tls::blocking_handshake(&mut conn, &mut tcp, host_port).map_err(Error::unreachable)?;
        }
        Ok(())
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Names of the operations, in the order of the results' per-operation rows.
    /// `--audit-path`: the file audit device, the session's last fixture (so that its
    /// cleanup disables it on every exit path), enabled after the operations' setup.
    fn enable_audit(&mut self) -> Result<(), Error> {
        let Some(path) = self.plan.audit_path.clone() else {
            return Ok(());
        };
        let proto = self.client(self.timeout).with_stop(self.stop.clone());
        let make = || proto.clone_fresh();
        let ctx = SetupCtx {
            make_client: &make,
            tls: self.tls.as_ref(),
            no_setup: false,
            stop: &self.stop,
            naming: &self.naming,
            log: &self.log,
        };
        let mut device = crate::vault::audit::AuditDevice::new(&path);
        self.naming.set_owner(self.fixtures.len());
        let enabled = device.setup(&ctx);
        self.fixtures.push(Box::new(device));
        enabled
    }

    /// `--audit-path` of a local server: the responses its audit log holds per operation
    /// (from `from` on), in the order of `op_names`, beside the client's `counts`, as the
    /// report's line. None without an audit device.
    pub fn audit_line(&self, from: Option<SystemTime>, counts: &[u64]) -> Option<String> {
        let path = self.plan.audit_path.as_ref()?;
        Some(
            match crate::vault::audit::count(path, &self.operations, from) {
                Ok(audit) => crate::vault::audit::agreement(&self.op_names(), &audit, counts),
                Err(e) => format!("audit log not counted (a server on another machine?): {e}"),
            },
        )
    }

    pub fn op_names(&self) -> Vec<String> {
        self.operations.iter().map(|o| o.name.clone()).collect()
    }

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
            let outcome = self.run_plan(&plan, &layout, progress);
            if let Some(w) = watcher {
                w.stop();
            }
            let mut outcome = outcome?;
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
            connections: load.connections,
            requests: load.requests,
            duration: load.duration,
            warmup: load.warmup,
            schedule: load.schedule.clone(),
            keepalive: load.keepalive,
            timeout: load.timeout,
            threads_total: layout.threads,
            thread_offset: 0,
            threads_here: layout.threads,
            pin: load.pin,
            nodes: NodePlan::default(),
            respect_retry_after: load.respect_retry_after,
            spread: load.spread.clone(),
            follow_redirects: load.follow_redirects,
            http2: load.http2,
        }
    }

    /// Why the steps of `load` cannot run over the same open connections (`hold`), or
    /// None when they can: open-model steps with keep-alive, in one process or over worker
    /// processes, on one node or a cluster's `--nodes active` / `all` (not node after node).
    pub fn hold_refusal(&self, load: &Load) -> Result<Option<&'static str>, Error> {
        self.layout(load)?;
        Ok(if load.schedule.is_none() {
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
    /// started once and kept for every step). A later load changes only the schedule, the
    /// warm-up and the bounds; its connections and the rest are the first's. A cluster
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
        let mut on_step = |r: Result<Measured, engine::EngineError>| {
            let result = r.map_err(Error::engine).map(|mut outcome| {
                if let Some(c) = cluster {
                    c.set_roles(&mut outcome.stats);
                }
                StepResult {
                    outcome,
                    layout,
                    started_at,
                    server_samples: None,
                }
            });
            let load = next(result)?;
            started_at = SystemTime::now();
            Some(engine::StepPlan {
                schedule: load.schedule,
                warmup: load.warmup,
                duration: load.duration,
                requests: load.requests,
            })
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

    /// Keeps what the session created at `close` (or removes it): a shared fixture's setup
    /// opens with `keep` false, so that a setup failing half-way removes what it made, and
    /// keeps the fixture once it is complete (src/session/fixtures.rs).
    pub fn set_keep(&mut self, keep: bool) {
        self.keep = keep;
    }

    /// The fixture names the session drew (none for a shard: its names are the shared
    /// fixture's).
    pub fn fixture_names(&self) -> Vec<String> {
        self.naming.names()
    }

    /// The names, prefixes and tokens of the session's fixtures (`Naming::made`).
    pub fn fixture_made(&self) -> crate::vault::fixture::Made {
        self.naming.made()
    }

    /// The setup's phases so far, each with its count and time.
    pub fn setup_phases(&self) -> Vec<crate::stats::phases::SetupPhase> {
        self.log.phases()
    }

    /// The run id that names the session's fixtures.
    pub fn run_id(&self) -> &str {
        self.naming.run_id()
    }

    /// What is on the server because of this session.
    pub fn created(&self) -> Vec<Created> {
        self.fixtures.iter().flat_map(|f| f.created()).collect()
    }

    /// Removes everything the session created (unless asked to keep it). Idempotent. A
    /// removal the server takes long over is waited for (`--cleanup-timeout`), and what
    /// is named is looked for afterwards: a failure names what is left and the command
    /// that removes it. The state file goes once nothing is left.
    pub fn close(&mut self) -> Result<(), Error> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        if self.keep {
            for c in self.created() {
                eprintln!("vblast: kept {}", c.what);
            }
            return Ok(());
        }
        let stop = self.stop.clone();
        // A cluster may have failed over since the last step, or during the setup: what
        // was created goes from the node active now.
        if !self.created().is_empty()
            && let Some(c) = &self.cluster
            && let Some(i) = active_now(c, &stop)
        {
            self.target = c.targets[i].clone();
        }
        let urgent = server::UrgentStop::watch(&stop);
        let mut client = self
            .client(CLEANUP_TIMEOUT)
            .with_stop(urgent.stop().clone());
        let mut left = self.remove_fixtures(&mut client, &stop);
        if left.is_empty() {
            if let Some(dir) = &self.plan.state_dir {
                match self.naming.mode() {
                    Mode::Own | Mode::Remove => state::remove(dir, self.naming.run_id()),
                    Mode::Join => {
                        state::remove_shard(dir, self.naming.run_id(), std::process::id())
                    }
                    Mode::Create => {}
                }
            }
            return Ok(());
        }
        // A shard's own parent token is named by its own state file (it draws no name).
        let named = !self.naming.names().is_empty() || !self.naming.tokens().is_empty();
        if self.plan.state_dir.is_some() && named {
            left.push(format!(
                "or run `vblast cleanup --run-id {}` (with this run's address and token)",
                self.naming.run_id()
            ));
        }
        Err(Error::cleanup(server::one_per_line(&left)))
    }

    /// Each operation's cleanup, newest first, then a bounded look for what it named;
    /// returns a line per thing left.
    fn remove_fixtures(&mut self, client: &mut Client, stop: &Stop) -> Vec<String> {
        let names = self.naming.names();
        let own = self.naming.mode() != Mode::Join && !names.is_empty();
        // What of the names is there now (a failed look: nothing is assumed), and of the
        // tokens (a shard's parent token is its own too).
        let mut before = if own {
            server::locate(client, &names).unwrap_or_default()
        } else {
            Vec::new()
        };
        let tokens = self.naming.tokens();
        before.extend(server::locate_tokens(client, &tokens).unwrap_or_default());
        let mut left = Vec::new();
        let mut reported: Vec<String> = Vec::new();
        for i in (0..self.fixtures.len()).rev() {
            let created = self.fixtures[i].created();
            if created.is_empty() {
                continue;
            }
            let result = if stop.is_urgent() {
                Err(crate::error::Cause::from(
                    "cleanup skipped after a second signal",
                ))
            } else {
                self.fixtures[i].cleanup(client, stop)
            };
            let Err(e) = result else { continue };
            // A removal the server is still busy with (an auth path revoking its
            // tokens, a parent token its children): waited for, bounded.
            let (names_of, tokens_of) = (self.naming.names_of(i), self.naming.tokens_of(i));
            let mine: Vec<server::Found> = before
                .iter()
                .filter(|f| match f.table {
                    server::Table::Token => tokens_of.contains(&f.name),
                    _ => names_of.contains(&f.name),
                })
                .cloned()
                .collect();
            if !mine.is_empty()
                && !stop.is_urgent()
                && server::wait_gone(
                    client,
                    mine.clone(),
                    self.plan.cleanup_timeout,
                    stop,
                    self.log.display(),
                )
                .is_empty()
            {
                for f in &mine {
                    eprintln!("vblast: the server has removed {f}");
                }
                continue;
            }
            reported.extend(names_of);
            reported.extend(tokens_of);
            for c in created {
                left.push(format!(
                    "{} is left on {} ({e}): remove it with `{}`",
                    c.what,
                    self.target.base(),
                    c.remove_with
                ));
            }
        }
        if (own || !tokens.is_empty()) && !stop.is_urgent() {
            // A removal answered 204 is not yet a removal: look.
            let mut there = if own {
                server::locate(client, &names).unwrap_or_default()
            } else {
                Vec::new()
            };
            there.extend(server::locate_tokens(client, &tokens).unwrap_or_default());
            let there: Vec<server::Found> = there
                .into_iter()
                .filter(|f| !reported.contains(&f.name))
                .collect();
            for f in server::wait_gone(
                client,
                there,
                self.plan.cleanup_timeout,
                stop,
                self.log.display(),
            ) {
                left.push(format!(
                    "{f} is left on {} (still there after {}): remove it with `{}`",
                    self.target.base(),
                    humantime::format_duration(self.plan.cleanup_timeout),
                    f.table.command(&f.name)
                ));
            }
        }
        left
    }

    /// `close`, printing a failure (for paths that already have an error to report).
    fn close_reporting(&mut self) {
        if let Err(e) = self.close() {
            eprintln!("vblast: {e}");
        }
    }
}

/// The requests of one configured operation: the first with the choice's weight; a
/// labelled operation (a vault-benchmark test's name) reports under its label, its steps
/// keeping their suffix ("NAME/create").
fn steps_of(fixture: &dyn VaultOp, choice: &crate::config::scenario::OpChoice) -> Vec<Operation> {
    let mut steps = fixture.operations();
    if let Some(first) = steps.first_mut() {
        first.weight = choice.weight;
    }
    if let Some(label) = &choice.label {
        for step in &mut steps {
            step.name = match step.name.strip_prefix(choice.name.as_str()) {
                Some(rest) => format!("{label}{rest}"),
                None => label.clone(),
            };
        }
    }
    steps
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

/// How long the cleanup waits for a cluster to have an active node again (a PostgreSQL HA
/// lock outlives a killed node by up to 15 s).
const CLEANUP_ACTIVE_WAIT: Duration = Duration::from_secs(20);

/// The cluster's active node now, waiting up to `CLEANUP_ACTIVE_WAIT` for one (not after
/// a second signal); None: no node became active.
fn active_now(c: &ClusterRun, stop: &Stop) -> Option<usize> {
    let deadline = std::time::Instant::now() + CLEANUP_ACTIVE_WAIT;
    loop {
        if let Some(i) = c.prober.probe(&c.targets).active() {
            return Some(i);
        }
        if std::time::Instant::now() >= deadline || stop.is_urgent() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close_reporting();
    }
}
/// The descriptors a process may hold, raised to its hard limit. For tests and
/// experiments, `VBLAST_PROCESS_FDS` pretends a process may hold fewer, so that small runs
/// are spread over worker processes too.
fn fd_limit() -> u64 {
    let limit = crate::sys::raise_nofile();
    match std::env::var("VBLAST_PROCESS_FDS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(n) => limit.min(n),
        None => limit,
    }
}
