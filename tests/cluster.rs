//! HA clusters: a real OpenBao cluster (PostgreSQL storage, HA lock in the database) as
//! one target: the cluster view before the run, load on the active node only or spread
//! over every node, per-node rows, failover windows, rate-limit quotas.

mod common;

use common::cluster::Cluster;

#[test]
fn harness_starts_one_active_and_standbys() {
    let c = Cluster::start(2);
    let active = c.active().expect("an active node");
    let other = 1 - active;
    assert_eq!(c.health(other), Some(429), "{}", c.logs());
    // The standby knows the active node (both share the PostgreSQL HA lock).
    let (s, body) = c.api(other, "GET", "/v1/sys/leader", None);
    assert_eq!(s, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["leader_address"], c.nodes[active].addr.as_str());
    assert_eq!(v["is_self"], false);
}
