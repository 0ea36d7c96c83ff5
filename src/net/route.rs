//! Which node of a cluster each connection goes to (`NodePlan`), and the `Route` to the
//! active node that the cluster watcher moves when the cluster fails over.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::net::target::Target;

/// Where the connections of a run go when it has several nodes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NodePlan {
    /// Every node of the cluster (index = node index in the results); empty: the plan's
    /// one target, and no per-node figures.
    pub targets: Vec<Target>,
    /// The nodes this step loads (indices into `targets`).
    pub use_nodes: Vec<usize>,
    /// Spread the connections over `use_nodes` (`--nodes all`); otherwise every connection
    /// goes to the route's active node (or the first of `use_nodes` without a route).
    pub spread: bool,
    /// The active node, moved by the watcher while the run goes on (in worker processes,
    /// by the coordinator's `route` messages).
    #[serde(skip)]
    pub route: Option<Arc<Route>>,
}

impl NodePlan {
    pub fn is_cluster(&self) -> bool {
        !self.targets.is_empty()
    }

    /// The node a connection (thread-wide index `i`) opens to now.
    #[inline]
    pub fn pick(&self, i: usize) -> usize {
        if self.targets.is_empty() {
            return 0;
        }
        if self.spread && !self.use_nodes.is_empty() {
            return self.use_nodes[i % self.use_nodes.len()];
        }
        match &self.route {
            Some(r) => r.active(),
            None => self.use_nodes.first().copied().unwrap_or(0),
        }
    }

    /// Whether a connection on `node` should move (the active node changed).
    #[inline]
    pub fn should_move(&self, node: usize) -> bool {
        !self.spread && self.route.as_ref().is_some_and(|r| r.active() != node)
    }
}

/// The active node as the watcher last saw it. Read with one relaxed load per connect
/// and per completion; written only when the cluster's leader changes.
#[derive(Debug, Default)]
pub struct Route {
    active: AtomicUsize,
    changes: AtomicU64,
}

impl Route {
    pub fn new(active: usize) -> Route {
        Route {
            active: AtomicUsize::new(active),
            changes: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Moves the route; returns whether it changed.
    pub fn set(&self, node: usize) -> bool {
        let old = self.active.swap(node, Ordering::Relaxed);
        if old != node {
            self.changes.fetch_add(1, Ordering::Relaxed);
        }
        old != node
    }

    /// How many times the route moved (a thread notices a move by a changed count).
    #[inline]
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_route_pick_nodes() {
        let t = Target::parse("http://127.0.0.1:1").unwrap();
        let mut p = NodePlan {
            targets: vec![t.clone(), t.clone(), t],
            use_nodes: vec![0, 2],
            spread: true,
            route: None,
        };
        assert_eq!((p.pick(0), p.pick(1), p.pick(2)), (0, 2, 0));
        p.spread = false;
        assert_eq!(p.pick(5), 0);
        let r = Arc::new(Route::new(1));
        p.route = Some(r.clone());
        assert_eq!(p.pick(5), 1);
        assert!(p.should_move(0));
        assert!(r.set(2));
        assert_eq!((p.pick(0), r.changes()), (2, 1));
    }
}
