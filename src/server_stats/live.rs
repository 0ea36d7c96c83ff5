//! The latest interval of every node, as the sampler leaves it after each look, for the
//! live exporter (`--metrics-listen`, src/metrics.rs), which serves it with a `node`
//! label. Shared by the sampler's thread and the exporter's, never the load's.

use std::sync::{Arc, Mutex};

use super::timeline::Interval;

/// Each node's address and its latest interval, in the order the nodes were first seen.
#[derive(Clone, Debug, Default)]
pub struct LatestIntervals(Arc<Mutex<Vec<(String, Interval)>>>);

impl LatestIntervals {
    /// Node `node`'s interval ending now.
    pub fn set(&self, node: &str, interval: Interval) {
        let Ok(mut all) = self.0.lock() else {
            return;
        };
        match all.iter_mut().find(|(n, _)| n == node) {
            Some((_, i)) => *i = interval,
            None => all.push((node.to_string(), interval)),
        }
    }

    /// Every node's latest interval.
    pub fn nodes(&self) -> Vec<(String, Interval)> {
        self.0.lock().map(|all| all.clone()).unwrap_or_default()
    }
}
