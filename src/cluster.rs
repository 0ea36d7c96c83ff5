//! Several addresses as the nodes of one HA cluster: where the addresses come from
//! (repeated `--address`, a comma-separated `VAULT_ADDR`, vault-benchmark's `cluster_json`),
//! what each node says it is (`sys/health`: active, standby, sealed, unreachable; its
//! `cluster_id`), the checks before any load (a node reachable, one active, one cluster,
//! no node twice), and the watcher that follows the active node during a run.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rustls::pki_types::ServerName;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::nodes::Route;
use crate::target::Target;
use crate::vault::client::Client;

/// Which nodes of a cluster take the load (`--nodes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum NodesMode {
    /// The active node (followed when the cluster fails over).
    #[default]
    Active,
    /// Connections spread over every unsealed node.
    All,
    /// The same load against each unsealed node, one after another.
    Each,
}

/// The nodes of a run, as the command line gave them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClusterSpec {
    pub nodes: Vec<String>,
    pub mode: NodesMode,
}

/// vault-benchmark's `cluster_json`.
#[derive(Deserialize)]
struct ClusterJson {
    #[serde(default)]
    token: Option<String>,
    vault_addrs: Vec<String>,
}

/// Reads a `cluster_json` file: its addresses and its token (if it has one).
pub fn read_cluster_json(path: &Path) -> Result<(Vec<String>, Option<String>), Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
    let c: ClusterJson = serde_json::from_str(&text).map_err(|e| {
        Error::input(format!(
            "{} is not a cluster file ({{\"token\": \"...\", \"vault_addrs\": [\"http://...\", ...]}}): {e}",
            path.display()
        ))
    })?;
    if c.vault_addrs.is_empty() {
        return Err(Error::input(format!(
            "{} lists no address in vault_addrs",
            path.display()
        )));
    }
    Ok((c.vault_addrs, c.token.filter(|t| !t.is_empty())))
}

/// The addresses of a run: `--cluster FILE`'s, else the repeated `--address`, else
/// `VAULT_ADDR` split at commas. The same node twice is refused.
pub fn addresses(
    flags: &[String],
    from_file: Vec<String>,
    env: Option<String>,
) -> Result<Vec<String>, Error> {
    let list: Vec<String> = if !from_file.is_empty() {
        from_file
    } else if !flags.is_empty() {
        flags.iter().flat_map(|a| split(a)).collect()
    } else {
        env.map(|e| split(&e)).unwrap_or_default()
    };
    let mut seen: Vec<(String, String)> = Vec::new();
    for a in &list {
        let Ok(t) = Target::parse(a) else { continue };
        let key = format!("{:?} {}", t.scheme, t.addr());
        if let Some((first, _)) = seen.iter().find(|(_, k)| *k == key) {
            return Err(Error::input(format!(
                "the same node is given twice: {first} and {a}"
            )));
        }
        seen.push((a.clone(), key));
    }
    Ok(list)
}

fn split(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect()
}

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

impl Prober {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_come_from_the_file_the_flags_or_the_environment() {
        let env = Some("http://127.0.0.1:1, http://127.0.0.1:2".to_string());
        assert_eq!(addresses(&[], vec![], env.clone()).unwrap().len(), 2);
        let flags = vec!["http://127.0.0.1:3".to_string()];
        assert_eq!(
            addresses(&flags, vec![], env).unwrap(),
            vec!["http://127.0.0.1:3"]
        );
        let twice = vec!["http://127.0.0.1:3".into(), "http://127.0.0.1:3/".into()];
        let e = addresses(&twice, vec![], None).unwrap_err().to_string();
        assert!(e.contains("the same node is given twice"), "{e}");
    }

    #[test]
    fn a_cluster_file_must_parse() {
        let dir = std::env::temp_dir().join(format!("vblast-cj-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.json");
        std::fs::write(
            &good,
            r#"{"token":"t","vault_addrs":["http://127.0.0.1:1"]}"#,
        )
        .unwrap();
        let (a, t) = read_cluster_json(&good).unwrap();
        assert_eq!((a.len(), t.as_deref()), (1, Some("t")));
        let bad = dir.join("bad.json");
        std::fs::write(&bad, r#"{"vault_addrs": "http://x"#).unwrap();
        let e = read_cluster_json(&bad).unwrap_err().to_string();
        assert!(e.contains("is not a cluster file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
