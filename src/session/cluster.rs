//! The nodes of one HA cluster during a session: what each node says it is
//! (`sys/health`: active, standby, sealed, unreachable; its `cluster_id`), the checks
//! before any load (a node reachable, one active, one cluster, no node twice), and the
//! watcher that follows the active node during a run, and a session's cluster target
//! (`ClusterRun`: its nodes, the view before the run, where each step's connections go).
//! Where the addresses come from is `config::cluster`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rustls::pki_types::ServerName;
use serde::{Deserialize, Serialize};

use crate::config::cluster::{ClusterSpec, NodesMode};
use crate::error::Error;
use crate::net::route::{NodePlan, Route};
use crate::net::target::Target;
use crate::signals::Stop;
use crate::vault::client::Client;

/// What a node's `sys/health` said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    Active,
    Standby,
    PerfStandby,
    DrSecondary,
    Sealed,
    Uninitialized,
    Unreachable(String),
    Other(u16),
}

impl NodeState {
    fn of_status(status: u16) -> NodeState {
        match status {
            200 => NodeState::Active,
            429 => NodeState::Standby,
            473 => NodeState::PerfStandby,
            472 => NodeState::DrSecondary,
            503 => NodeState::Sealed,
            501 => NodeState::Uninitialized,
            s => NodeState::Other(s),
        }
    }

    /// Takes requests (forwarded or answered).
    pub fn is_unsealed(&self) -> bool {
        matches!(
            self,
            NodeState::Active | NodeState::Standby | NodeState::PerfStandby
        )
    }

    pub fn word(&self) -> String {
        match self {
            NodeState::Active => "active".into(),
            NodeState::Standby => "standby".into(),
            NodeState::PerfStandby => "performance standby".into(),
            NodeState::DrSecondary => "DR secondary".into(),
            NodeState::Sealed => "sealed".into(),
            NodeState::Uninitialized => "uninitialised".into(),
            NodeState::Unreachable(e) => format!("unreachable ({e})"),
            NodeState::Other(s) => format!("sys/health answered {s}"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct NodeView {
    pub target: Target,
    pub state: NodeState,
    pub cluster_id: Option<String>,
    pub cluster_name: Option<String>,
}

/// Every node as `sys/health` showed it before the run.
#[derive(Clone, Debug)]
pub struct ClusterView {
    pub nodes: Vec<NodeView>,
}

/// How the probe reaches the nodes (TLS settings resolved once).
#[derive(Clone)]
pub struct Prober {
    pub tls: Option<(Arc<rustls::ClientConfig>, Option<String>)>,
    pub timeout: Duration,
}

/// How long a run waits for nodes that have not joined the raft cluster yet (sealed, with
/// fewer servers in the active node's raft configuration than nodes given) before it goes
/// on without them (docs/clusters.md).
pub const JOIN_WAIT: Duration = Duration::from_secs(30);

impl Prober {
    /// The servers of the active node's raft configuration
    /// (`sys/storage/raft/configuration`, which needs the token), as their cluster
    /// addresses (`host:port`); None on other storage, or when the token may not read it.
    pub fn raft_servers(&self, active: &Target, token: Option<&str>) -> Option<Vec<String>> {
        let v = self.read_json(active, token, "/v1/sys/storage/raft/configuration")?;
        let servers = v["data"]["config"]["servers"].as_array()?;
        Some(
            servers
                .iter()
                .map(|s| s["address"].as_str().unwrap_or("").to_string())
                .collect(),
        )
    }

    /// The nodes the active node has heard from lately (`sys/ha-status`, which needs the
    /// token), as (API address, cluster address `host:port`); a node sealed a moment ago
    /// is still listed for a while. Empty when it cannot be read.
    pub fn ha_nodes(&self, active: &Target, token: Option<&str>) -> Vec<(String, String)> {
        let Some(v) = self.read_json(active, token, "/v1/sys/ha-status") else {
            return Vec::new();
        };
        let Some(nodes) = v["data"]["nodes"].as_array() else {
            return Vec::new();
        };
        nodes
            .iter()
            .map(|n| {
                let field = |k: &str| n[k].as_str().unwrap_or("").trim_end_matches('/');
                let cluster = field("cluster_address");
                let cluster = cluster.split_once("://").map_or(cluster, |(_, a)| a);
                (field("api_address").to_string(), cluster.to_string())
            })
            .collect()
    }

    /// A 200 answer's JSON from `path` on `t`, with the token.
    fn read_json(&self, t: &Target, token: Option<&str>, path: &str) -> Option<serde_json::Value> {
        let mut c = self.client(t);
        if let Some(t) = token {
            c = c.with_token(t);
        }
        let r = c.request_root("GET", path, None).ok()?;
        if r.status != 200 {
            return None;
        }
        r.json()
    }

    fn client(&self, t: &Target) -> Client {
        let (config, name) = match &self.tls {
            Some((c, forced)) => {
                let name = forced.clone().unwrap_or_else(|| t.host.clone());
                (Some(c.clone()), ServerName::try_from(name).ok())
            }
            None => (None, None),
        };
        Client::new(t, config, name, None, None, self.timeout)
    }

    /// One node's state now. Both kinds of standby answer with their own codes (no
    /// `standbyok`), so the active node is the one answering 200.
    pub fn state(&self, t: &Target) -> (NodeState, Option<serde_json::Value>) {
        match self.client(t).request_root("GET", "/v1/sys/health", None) {
            Ok(r) => (NodeState::of_status(r.status), r.json()),
            Err(e) => (NodeState::Unreachable(e.to_string()), None),
        }
    }

    pub fn probe(&self, targets: &[Target]) -> ClusterView {
        let nodes = std::thread::scope(|s| {
            let hs: Vec<_> = targets
                .iter()
                .map(|t| s.spawn(move || (t.clone(), self.state(t))))
                .collect();
            hs.into_iter()
                .map(|h| {
                    let (target, (state, json)) = h.join().expect("probe thread");
                    let field = |k: &str| {
                        json.as_ref()
                            .and_then(|j| j.get(k))
                            .and_then(|v| v.as_str())
                            .filter(|v| !v.is_empty())
                            .map(str::to_string)
                    };
                    NodeView {
                        cluster_id: field("cluster_id"),
                        cluster_name: field("cluster_name"),
                        target,
                        state,
                    }
                })
                .collect()
        });
        ClusterView { nodes }
    }
}

impl ClusterView {
    pub fn active(&self) -> Option<usize> {
        self.nodes.iter().position(|n| n.state == NodeState::Active)
    }

    pub fn unsealed(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].state.is_unsealed())
            .collect()
    }

    /// The cluster as a few lines: each node and its state, the cluster id.
    pub fn render(&self) -> String {
        let mut out = String::from("Cluster:\n");
        for (i, n) in self.nodes.iter().enumerate() {
            out.push_str(&format!(
                "  node {i}  {:<28} {}\n",
                n.target.base(),
                n.state.word()
            ));
        }
        let mut ids: Vec<&str> = self
            .nodes
            .iter()
            .filter_map(|n| n.cluster_id.as_deref())
            .collect();
        ids.dedup();
        if let Some(id) = ids.first() {
            let name = self.nodes.iter().find_map(|n| n.cluster_name.as_deref());
            out.push_str(&format!(
                "  cluster_id {id}{}\n",
                name.map(|n| format!(" ({n})")).unwrap_or_default()
            ));
        }
        out
    }

    /// Refuses a cluster that cannot be measured: no node reachable, nodes of different
    /// clusters, no active node.
    pub fn check(&self) -> Result<usize, Error> {
        if self
            .nodes
            .iter()
            .all(|n| matches!(n.state, NodeState::Unreachable(_)))
        {
            return Err(Error::unreachable(format!(
                "no node of the cluster is reachable\n{}",
                self.render()
            )));
        }
        let mut ids = self
            .nodes
            .iter()
            .filter_map(|n| n.cluster_id.as_deref().map(|id| (n, id)));
        if let Some((first, id)) = ids.next()
            && let Some((other, other_id)) = ids.find(|(_, o)| *o != id)
        {
            return Err(Error::input(format!(
                "the nodes belong to different clusters: {} has cluster_id {id}, {} has {other_id}",
                first.target.base(),
                other.target.base()
            )));
        }
        self.active().ok_or_else(|| {
            Error::unreachable(format!(
                "no node of the cluster is active (sys/health 200)\n{}",
                self.render()
            ))
        })
    }
}

/// Re-reads the nodes' `sys/health` a few times a second while a run goes on, off the
/// event loops, and moves the route when another node becomes active.
pub struct Watcher {
    done: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// Pause between two rounds of health checks.
const WATCH_EVERY: Duration = Duration::from_millis(100);

impl Watcher {
    pub fn start(prober: Prober, targets: Vec<Target>, route: Arc<Route>) -> Watcher {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let handle = std::thread::Builder::new()
            .name("vblast-watch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    let current = route.active();
                    if prober.state(&targets[current]).0 != NodeState::Active {
                        // Ask the others (the current one first is the common case).
                        if let Some(i) = (0..targets.len())
                            .filter(|&i| i != current)
                            .find(|&i| prober.state(&targets[i]).0 == NodeState::Active)
                        {
                            route.set(i);
                        }
                    }
                    std::thread::sleep(WATCH_EVERY);
                }
            })
            .ok();
        Watcher { done, handle }
    }

    pub fn stop(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// The sealed nodes that have not joined the raft cluster yet, when the active node's raft
/// configuration lists fewer servers than the nodes given. A sealed node that
/// `sys/ha-status` still lists with a cluster address in the configuration has joined: it
/// is only sealed. Of the others, none has joined when every server of the configuration
/// is accounted for by a node known to have joined; otherwise it cannot be told which
/// have, and all are counted as not joined.
fn unjoined(
    prober: &Prober,
    targets: &[Target],
    view: &ClusterView,
    token: Option<&str>,
) -> Vec<usize> {
    let Some(active) = view.active() else {
        return Vec::new();
    };
    let sealed: Vec<usize> = (0..view.nodes.len())
        .filter(|&i| {
            matches!(
                view.nodes[i].state,
                NodeState::Sealed | NodeState::Uninitialized
            )
        })
        .collect();
    if sealed.is_empty() {
        return sealed;
    }
    let servers = match prober.raft_servers(&targets[active], token) {
        Some(s) if s.len() < targets.len() => s,
        _ => return Vec::new(),
    };
    let ha = prober.ha_nodes(&targets[active], token);
    let member = |i: usize| {
        let api = targets[i].base();
        ha.iter()
            .any(|(a, c)| *a == api && servers.iter().any(|s| s == c))
    };
    let candidates: Vec<usize> = sealed.into_iter().filter(|&i| !member(i)).collect();
    // Servers of the configuration no node known to have joined accounts for.
    let known = (0..targets.len())
        .filter(|&i| view.nodes[i].state.is_unsealed() || member(i))
        .count();
    let unaccounted = servers.len().saturating_sub(known);
    if unaccounted >= candidates.len() {
        // Every candidate is in the configuration: sealed, not unjoined.
        return Vec::new();
    }
    candidates
}

/// The sealed nodes of a raft cluster that have not joined it yet (`unjoined`): each is
/// named, and waited for up to `JOIN_WAIT`; the view when they have joined, or at the bound
/// (the run goes on with the others, and says so). A stop request (Ctrl-C) ends the wait
/// at once, with `Error::Stopped`.
fn wait_for_joins(
    prober: &Prober,
    targets: &[Target],
    mut view: ClusterView,
    token: Option<&str>,
    stop: &Stop,
) -> Result<ClusterView, Error> {
    let waiting = unjoined(prober, targets, &view, token);
    if waiting.is_empty() {
        return Ok(view);
    }
    let names = |w: &[usize]| {
        w.iter()
            .map(|&i| format!("node {i} {}", targets[i].base()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    eprintln!(
        "vblast: {} not joined the raft cluster yet (sealed, and the active node's raft configuration lists fewer servers than the nodes given): waiting up to {} s",
        names(&waiting),
        JOIN_WAIT.as_secs()
    );
    let deadline = std::time::Instant::now() + JOIN_WAIT;
    loop {
        pause_unless_stopped(stop, Duration::from_millis(500))?;
        view = prober.probe(targets);
        // Joined is not yet unsealed: each named node is waited for until it serves.
        let still: Vec<usize> = waiting
            .iter()
            .copied()
            .filter(|&i| !view.nodes[i].state.is_unsealed())
            .collect();
        if still.is_empty() {
            eprintln!("vblast: every node has joined");
            return Ok(view);
        }
        if std::time::Instant::now() >= deadline {
            eprintln!(
                "vblast: {} did not join within {} s: the load goes to the others",
                names(&still),
                JOIN_WAIT.as_secs()
            );
            return Ok(view);
        }
    }
}

/// Sleeps `d` in short slices; a stop request ends it at once, as `Error::Stopped`.
fn pause_unless_stopped(stop: &Stop, d: Duration) -> Result<(), Error> {
    let end = std::time::Instant::now() + d;
    loop {
        if let Some(s) = stop.signal() {
            return Err(Error::Stopped(s));
        }
        let now = std::time::Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// A cluster target: its nodes, how they looked before the run, and the active node
/// (moved by the watcher during `--nodes active` steps).
pub(super) struct ClusterRun {
    pub(super) targets: Vec<Target>,
    pub(super) view: ClusterView,
    pub(super) mode: NodesMode,
    pub(super) prober: Prober,
    pub(super) route: Arc<Route>,
}

impl ClusterRun {
    /// Where a step's connections go, per `--nodes`: `active`, one plan on the active node
    /// whose route the watcher moves; `all`, one plan spread over the unsealed nodes;
    /// `each`, a plan per unsealed node, run one after another. `Session::step` runs them
    /// all; `Session::hold` holds the one plan of `active` and `all`.
    pub(super) fn node_plans(&self) -> Vec<NodePlan> {
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
    pub(super) fn watcher(&self) -> Option<Watcher> {
        (self.mode == NodesMode::Active).then(|| {
            Watcher::start(
                self.prober.clone(),
                self.targets.clone(),
                self.route.clone(),
            )
        })
    }

    /// Each node's row says what the node was before the run.
    pub(super) fn set_roles(&self, stats: &mut crate::stats::Stats) {
        for (n, v) in stats.nodes.iter_mut().zip(&self.view.nodes) {
            n.role = v.state.word();
        }
    }

    /// The node active now (as the watcher last saw it).
    pub(super) fn active_target(&self) -> Target {
        self.targets[self.route.active()].clone()
    }

    /// Asks every node's `sys/health` and refuses a cluster that cannot be measured; waits
    /// for nodes not yet joined (`wait_for_joins`), until `stop` says otherwise.
    pub(super) fn probe(
        scenario: &crate::config::scenario::Scenario,
        spec: &ClusterSpec,
        tls_config: &Option<(Arc<rustls::ClientConfig>, ServerName<'static>)>,
        stop: &Stop,
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
        view.check()?;
        let view = wait_for_joins(&prober, &targets, view, scenario.token.0.as_deref(), stop)?;
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

    /// The cluster's active node now, waiting up to `wait` for one (not after a second
    /// signal); None: no node became active.
    pub(super) fn active_now(&self, stop: &Stop, wait: Duration) -> Option<usize> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            if let Some(i) = self.prober.probe(&self.targets).active() {
                return Some(i);
            }
            if std::time::Instant::now() >= deadline || stop.is_urgent() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cluster target of three nodes, the second sealed, the third active.
    fn run(mode: NodesMode) -> ClusterRun {
        let targets: Vec<Target> = (0..3)
            .map(|i| Target::parse(&format!("http://127.0.0.1:{}", 8200 + i)).unwrap())
            .collect();
        let states = [NodeState::Standby, NodeState::Sealed, NodeState::Active];
        let view = ClusterView {
            nodes: targets
                .iter()
                .zip(states)
                .map(|(t, state)| NodeView {
                    target: t.clone(),
                    state,
                    cluster_id: Some("c".into()),
                    cluster_name: None,
                })
                .collect(),
        };
        ClusterRun {
            targets,
            view,
            mode,
            prober: Prober {
                tls: None,
                timeout: Duration::from_millis(100),
            },
            route: Arc::new(Route::new(2)),
        }
    }

    #[test]
    fn node_plans_follow_nodes_mode_over_the_unsealed_nodes() {
        let active = run(NodesMode::Active).node_plans();
        assert_eq!(active.len(), 1);
        assert_eq!(active[0].use_nodes, [2]);
        assert!(active[0].route.is_some() && !active[0].spread);
        assert_eq!(active[0].targets.len(), 3);
        let all = run(NodesMode::All).node_plans();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].use_nodes, [0, 2]);
        assert!(all[0].spread && all[0].route.is_none());
        let each = run(NodesMode::Each).node_plans();
        let used: Vec<Vec<usize>> = each.iter().map(|p| p.use_nodes.clone()).collect();
        assert_eq!(used, [vec![0], vec![2]]);
        assert!(each.iter().all(|p| !p.spread && p.route.is_none()));
    }

    #[test]
    fn roles_and_the_active_target_come_from_the_view_and_the_route() {
        let c = run(NodesMode::Active);
        assert_eq!(c.active_target().port, 8202);
        c.route.set(0);
        assert_eq!(c.active_target().port, 8200);
        assert!(run(NodesMode::All).watcher().is_none());
    }
}
