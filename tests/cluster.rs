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

fn cluster_cmd(c: &Cluster, extra: &[&str]) -> std::process::Command {
    let mut cmd = common::vblast();
    for a in c.addrs() {
        cmd.arg("--address").arg(a);
    }
    cmd.env("VAULT_TOKEN", &c.token).args(extra);
    cmd
}

fn node_rows(v: &serde_json::Value) -> Vec<(String, String, u64, u64)> {
    v["nodes"]
        .as_array()
        .expect("nodes rows in the JSON report")
        .iter()
        .map(|n| {
            (
                n["addr"].as_str().unwrap().to_string(),
                n["role"].as_str().unwrap().to_string(),
                common::run::u(&n["requests"]),
                common::run::u(&n["ok"]),
            )
        })
        .collect()
}

#[test]
fn active_mode_loads_only_the_active_node_and_all_mode_every_node() {
    let c = Cluster::start(2);
    let active = c.active().unwrap();
    let out = common::run::run(cluster_cmd(
        &c,
        &[
            "-c",
            "4",
            "-n",
            "400",
            "--op",
            "kv-read",
            "--secrets",
            "10",
            "--format",
            "json",
        ],
    ));
    out.assert_code(0);
    assert!(out.stderr.contains("Cluster:"), "{}", out.show());
    assert!(
        out.stderr.contains("active") && out.stderr.contains("standby"),
        "{}",
        out.show()
    );
    let v = out.json();
    let rows = node_rows(&v);
    assert_eq!(rows.len(), 2, "{}", out.show());
    assert_eq!(rows[active].0, c.nodes[active].addr);
    assert_eq!(rows[active].1, "active");
    assert_eq!(
        (rows[active].2, rows[active].3),
        (400, 400),
        "{}",
        out.show()
    );
    assert_eq!(
        (rows[1 - active].2, rows[1 - active].3),
        (0, 0),
        "{}",
        out.show()
    );
    assert_eq!(rows[1 - active].1, "standby");

    // all: every unsealed node carries connections. (seal-status, which every node
    // answers itself: OpenBao's standbys serve KV reads locally, and a standby can answer
    // a fresh KV v2 mount with 400 "upgrading" for a long time; vblast shows that in the
    // standby's row.)
    let out = common::run::run(cluster_cmd(
        &c,
        &[
            "-c",
            "4",
            "-t",
            "1",
            "-n",
            "400",
            "--nodes",
            "all",
            "--op",
            "seal-status",
            "--format",
            "json",
        ],
    ));
    out.assert_code(0);
    let v = out.json();
    let rows = node_rows(&v);
    let total: u64 = rows.iter().map(|r| r.2).sum();
    assert_eq!(total, 400, "{}", out.show());
    assert!(rows.iter().all(|r| r.2 > 0 && r.2 == r.3), "{}", out.show());

    // each: the same load against each node in turn.
    let out = common::run::run(cluster_cmd(
        &c,
        &[
            "-c",
            "2",
            "-n",
            "100",
            "--nodes",
            "each",
            "--op",
            "seal-status",
            "--format",
            "json",
        ],
    ));
    out.assert_code(0);
    let rows = node_rows(&out.json());
    assert!(
        rows.iter().all(|r| r.2 == 100 && r.3 == 100),
        "{}",
        out.show()
    );
    assert_eq!(common::run::u(&out.json()["requests"]), 200);

    // A write through the standby is forwarded to the active node; with
    // --no-forwarding the standby answers on its own, and cannot write.
    for (flag, standby_ok) in [(None, true), (Some("--no-forwarding"), false)] {
        let mut args = vec![
            "-c",
            "1",
            "-n",
            "20",
            "--nodes",
            "each",
            "--op",
            "kv-write",
            "--kv-version",
            "1",
            "--secrets",
            "5",
            "--format",
            "json",
            "--allow-errors",
        ];
        args.extend(flag);
        let out = common::run::run(cluster_cmd(&c, &args));
        out.assert_code(0);
        let rows = node_rows(&out.json());
        assert_eq!((rows[active].2, rows[active].3), (20, 20), "{}", out.show());
        let s = &rows[1 - active];
        assert_eq!(s.2, 20, "{}", out.show());
        assert_eq!(s.3 == 20, standby_ok, "{flag:?}: {}", out.show());
    }
}

/// One clear message before any load, exit 2.
fn refused(args: &[&str], env: &[(&str, &str)], expect: &str) {
    let mut cmd = common::vblast();
    cmd.args(["-c", "2", "-n", "10", "--op", "kv-read", "--token", "root"])
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = common::run::run(cmd);
    out.assert_code(2);
    assert!(out.stderr.contains(expect), "{}", out.show());
    assert!(out.stdout.is_empty(), "{}", out.show());
}

#[test]
fn bad_clusters_are_refused_before_load() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"vault_addrs": ["http://127.0.0.1:1""#).unwrap();
    refused(
        &["--cluster", bad.to_str().unwrap()],
        &[],
        "is not a cluster file",
    );
    let a = format!("http://127.0.0.1:{}", common::free_port());
    refused(
        &["--address", &a, "--address", &format!("{a}/")],
        &[],
        "the same node is given twice",
    );
    let b = format!("http://127.0.0.1:{}", common::free_port());
    refused(
        &[],
        &[("VAULT_ADDR", &format!("{a},{b}"))],
        "no node of the cluster is reachable",
    );

    // Two dev servers are two clusters.
    let x = common::OpenBao::start();
    let y = common::OpenBao::start();
    refused(
        &["--address", &x.addr, "--address", &y.addr],
        &[],
        "the nodes belong to different clusters",
    );
    // A sealed node and an unreachable one: nothing active.
    let (s, _) = x.api("PUT", "/v1/sys/seal", None);
    assert_eq!(s, 204);
    refused(
        &["--address", &x.addr, "--address", &a],
        &[],
        "no node of the cluster is active",
    );

    // vault-benchmark's cluster_json is read (its token too) and the run goes to the
    // active node.
    let good = dir.path().join("cluster.json");
    std::fs::write(
        &good,
        format!(
            r#"{{"token": "{}", "vault_addrs": ["{}", "{a}"]}}"#,
            y.token, y.addr
        ),
    )
    .unwrap();
    let mut cmd = common::vblast();
    cmd.args([
        "-c",
        "2",
        "-n",
        "20",
        "--op",
        "seal-status",
        "--format",
        "json",
        "--cluster",
    ])
    .arg(&good);
    let out = common::run::run(cmd);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(common::run::u(&v["nodes"][0]["ok"]), 20, "{}", out.show());
    assert!(out.stderr.contains("unreachable"), "{}", out.show());
}

#[test]
fn killing_the_active_node_mid_run_gives_one_window_and_load_moves_to_the_new_active() {
    let mut c = Cluster::start(2);
    let old = c.active().unwrap();
    let new = 1 - old;
    let mut cmd = cluster_cmd(
        &c,
        &[
            "-c",
            "8",
            "-z",
            "32s",
            "--op",
            "kv-read",
            "--secrets",
            "10",
            "--format",
            "json",
            "--allow-errors",
            "-q",
        ],
    );
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let running = common::run::spawn(cmd);
    // Let the run get going (setup and the first seconds of load), then kill the active
    // node without a goodbye.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !c.log(old).contains("vblast-") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_secs(4));
    let killed_at = std::time::SystemTime::now();
    c.kill(old);
    let out = running.finish(std::time::Duration::from_secs(90));
    out.assert_code(0);
    assert_eq!(c.active(), Some(new), "{}", c.logs());
    let v = out.json();
    let windows = v["windows"].as_array().expect("windows in the report");
    assert_eq!(windows.len(), 1, "{}", out.show());
    let w = &windows[0];
    let failed = common::run::u(&v["failed"]);
    assert!(failed > 0, "{}", out.show());
    // Every failed request of the run fell in the window.
    assert_eq!(common::run::u(&w["failed"]), failed, "{}", out.show());
    assert_eq!(
        w["recovered_on"],
        c.nodes[new].addr.as_str(),
        "{}",
        out.show()
    );
    let (start, end) = (w["start_s"].as_f64().unwrap(), w["end_s"].as_f64().unwrap());
    assert!(end > start, "{}", out.show());
    // The new active node answered everything sent to it; the timeline shows no failure
    // after the window and successes in it again.
    let rows = node_rows(&v);
    assert!(
        rows[new].2 > 0 && rows[new].2 == rows[new].3,
        "{}",
        out.show()
    );
    assert!(rows[old].3 > 0, "{}", out.show());
    for s in v["timeline"].as_array().unwrap() {
        let sec = common::run::u(&s["second"]) as f64;
        if sec > end.ceil() {
            assert_eq!(
                common::run::u(&s["errors"]),
                0,
                "second {sec}: {}",
                out.show()
            );
        }
        if sec + 1.0 < start.floor() {
            assert_eq!(
                common::run::u(&s["errors"]),
                0,
                "second {sec}: {}",
                out.show()
            );
        }
    }
    assert!(
        v["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| (s["second"].as_f64().unwrap()) > end && common::run::u(&s["ok"]) > 0),
        "{}",
        out.show()
    );
    // The cluster's own leader change: the new active node's active_time.
    let (_, leader) = c.api(new, "GET", "/v1/sys/leader", None);
    let leader: serde_json::Value = serde_json::from_str(&leader).unwrap();
    let active_since =
        humantime::parse_rfc3339(leader["active_time"].as_str().expect("active_time")).unwrap();
    let change = active_since
        .duration_since(killed_at)
        .expect("the new node became active after the kill")
        .as_secs_f64();
    let length = end - start;
    eprintln!("window {length:.3}s, leader change {change:.3}s");
    if common::run::strict_timing() {
        assert!(
            (length - change).abs() < 1.0,
            "window {length:.3}s against the cluster's leader change {change:.3}s"
        );
    }
}
