//! Raft clusters as a target (issue 39), each started by tools/raft-cluster.sh: `--nodes
//! all` spreads reads over the standbys, which serve them themselves, and their rows say
//! what each node served and forwarded (the server's own `vault.ha.rpc.client.forward`); a
//! sealed node is shown sealed and left out; a node that has not joined is named and
//! waited for. Small counts: nothing here times or rates anything.

use std::thread;
use std::time::Duration;

use serde_json::Value;

use crate::support::figures::u;
use crate::support::raft::RaftCluster;
use crate::support::run::{WATCHDOG, run, spawn};

/// (`-t 1`: a connection's node is its index within its thread modulo the nodes, so one
/// thread with a connection per node loads every node.)
///
/// The node rows of a JSON report as (role, requests).
fn rows(v: &Value) -> Vec<(String, u64)> {
    v["nodes"]
        .as_array()
        .expect("nodes rows in the JSON report")
        .iter()
        .map(|n| {
            (
                n["role"].as_str().unwrap_or("").to_string(),
                u(&n["requests"]),
            )
        })
        .collect()
}

/// The server's own count of the requests each node forwarded (the "Server" part).
fn forwarded(v: &Value) -> Vec<Option<u64>> {
    v["server"]["nodes"]
        .as_array()
        .expect("server nodes in the JSON report")
        .iter()
        .map(|n| n["forwarded"].as_u64())
        .collect()
}

fn run_json(c: &RaftCluster, op: &str, conns: &str, n: &str) -> Value {
    let out = run(c.vblast(&[
        "--op",
        op,
        "--nodes",
        "all",
        "-t",
        "1",
        "-c",
        conns,
        "-n",
        n,
        "--secrets",
        "20",
        "--format",
        "json",
    ]));
    out.assert_code(0);
    out.json()
}

#[test]
fn three_raft_nodes_serve_reads_on_standbys_and_forward_writes() {
    let c = RaftCluster::start(3);
    let v = run_json(&c, "kv-read", "3", "600");
    let r = rows(&v);
    assert_eq!(
        r.iter().filter(|(role, _)| role == "active").count(),
        1,
        "{v}"
    );
    assert_eq!(
        r.iter().filter(|(role, _)| role == "standby").count(),
        2,
        "{v}"
    );
    assert!(
        r.iter().all(|(_, n)| *n > 0),
        "every node takes reads: {r:?}"
    );
    // Reads: served where they landed, nothing forwarded.
    assert!(forwarded(&v).iter().all(|f| *f == Some(0)), "{v}");
    // Raft's own figures, per node, from its telemetry.
    for n in v["server"]["nodes"].as_array().expect("server nodes") {
        assert!(n["raft"]["applied_index"].as_f64() > Some(0.0), "{n}");
        assert!(n["raft"]["leader_changes"].is_u64(), "{n}");
    }

    let v = run_json(&c, "kv-write", "3", "300");
    let r = rows(&v);
    let f = forwarded(&v);
    for (i, (role, n)) in r.iter().enumerate() {
        assert!(*n > 0, "node {i} takes writes: {r:?}");
        if role == "standby" {
            assert!(
                f[i].unwrap_or(0) > 0,
                "standby {i} forwarded its writes: {f:?}"
            );
        } else {
            assert_eq!(f[i], Some(0), "the active node forwards nothing: {f:?}");
        }
    }

    // The text report's node table has the served and forwarded columns.
    let out = run(c.vblast(&[
        "--op",
        "kv-write",
        "--nodes",
        "all",
        "-t",
        "1",
        "-c",
        "3",
        "-n",
        "150",
        "--secrets",
        "20",
    ]));
    out.assert_code(0);
    assert!(out.stdout.contains("served forwarded"), "{}", out.show());
    assert!(
        out.stdout.contains("forwarded to the active node"),
        "{}",
        out.show()
    );
}

#[test]
fn five_raft_nodes_all_take_reads() {
    let c = RaftCluster::start(5);
    let v = run_json(&c, "kv-read", "5", "500");
    let r = rows(&v);
    assert_eq!(r.len(), 5, "{v}");
    assert_eq!(
        r.iter().filter(|(role, _)| role == "standby").count(),
        4,
        "{v}"
    );
    assert!(
        r.iter().all(|(_, n)| *n > 0),
        "every node takes reads: {r:?}"
    );
}

#[test]
fn a_sealed_raft_node_is_shown_sealed_and_the_load_goes_to_the_others() {
    let c = RaftCluster::start(3);
    // Node 0 initialised the cluster and leads it; node 2 is a follower.
    c.seal(2);
    let v = run_json(&c, "kv-read", "3", "300");
    let r = rows(&v);
    assert_eq!(r[2], ("sealed".to_string(), 0), "{v}");
    assert!(r[0].1 > 0 && r[1].1 > 0, "{r:?}");
    assert_eq!(r[0].1 + r[1].1, 300, "{r:?}");
}

#[test]
fn a_raft_node_not_yet_joined_is_named_and_waited_for() {
    let c = RaftCluster::start_unjoined(3, 1);
    let running = spawn(c.vblast(&[
        "--op",
        "kv-read",
        "--nodes",
        "all",
        "-t",
        "1",
        "-c",
        "3",
        "-n",
        "300",
        "--secrets",
        "20",
        "--format",
        "json",
    ]));
    thread::sleep(Duration::from_secs(2));
    // The join completes with the unseal key; until the node has joined it may be refused.
    for _ in 0..40 {
        if c.unseal(2) {
            break;
        }
        thread::sleep(Duration::from_millis(500));
    }
    let out = running.finish(WATCHDOG);
    out.assert_code(0);
    assert!(
        out.stderr.contains(&format!("node 2 {}", c.addrs[2]))
            && out.stderr.contains("not joined the raft cluster yet"),
        "{}",
        out.show()
    );
    assert!(
        out.stderr.contains("every node has joined"),
        "{}",
        out.show()
    );
    let r = rows(&out.json());
    assert_eq!(r[2].0, "standby", "{r:?}");
}

/// `--op kv-staleness` on raft: the write's figures and one row per standby, from real
/// rounds; and against one node it is refused with exit status 2 before any setup.
#[test]
fn staleness_on_raft_has_a_row_per_standby_and_a_single_node_is_refused() {
    let c = RaftCluster::start(3);
    let v = run_json(&c, "kv-staleness", "3", "300");
    let st = &v["staleness"];
    assert!(u(&st["write"]["count"]) > 0, "{st}");
    let standbys = st["standbys"].as_array().expect("standbys");
    assert_eq!(standbys.len(), 2, "{st}");
    for s in standbys {
        let seen = u(&s["delay"]["count"]);
        assert!(seen + u(&s["not_seen"]) > 0, "{s}");
        assert!(s["delay"]["ci"]["p50"].is_object() || seen < 3, "{s}");
    }
    // One node: refused before setup.
    let mut one = crate::support::vblast::vblast();
    one.env("VAULT_TOKEN", &c.token)
        .env("VAULT_ADDR", &c.addrs[0])
        .args(["--op", "kv-staleness", "-n", "10"]);
    let out = run(one);
    out.assert_code(2);
    assert!(out.stderr.contains("not a single node"), "{}", out.show());
}
