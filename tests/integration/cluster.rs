//! HA clusters: a real OpenBao cluster (PostgreSQL storage, HA lock in the database) as
//! one target: the cluster view before the run, load on the active node only or spread
//! over every node, per-node rows, failover windows, rate-limit quotas.

use std::process::Stdio;
use std::time::{Duration, SystemTime};

use crate::support;
use crate::support::cluster::Cluster;

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
    let mut cmd = support::vblast::vblast();
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
                support::figures::u(&n["requests"]),
                support::figures::u(&n["ok"]),
            )
        })
        .collect()
}

#[test]
fn active_mode_loads_only_the_active_node_and_all_mode_every_node() {
    let c = Cluster::start(2);
    let active = c.active().unwrap();
    let out = support::run::run(cluster_cmd(
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
    let out = support::run::run(cluster_cmd(
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
    let out = support::run::run(cluster_cmd(
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
    assert_eq!(support::figures::u(&out.json()["requests"]), 200);
    // Each node's step has its own seconds in the timeline: the first node's 100 requests
    // fill the first seconds, the second node's begin after them (not at second 0 again).
    let timeline = out.json()["timeline"].as_array().unwrap().clone();
    let mut sum = 0;
    let mut prefix = Vec::new();
    for s in &timeline {
        sum += support::figures::u(&s["requests"]);
        prefix.push(sum);
    }
    assert_eq!(sum, 200, "{}", out.show());
    assert!(prefix.contains(&100), "steps overlap: {}", out.show());

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
        let out = support::run::run(cluster_cmd(&c, &args));
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
    let mut cmd = support::vblast::vblast();
    cmd.args(["-c", "2", "-n", "10", "--op", "kv-read", "--token", "root"])
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = support::run::run(cmd);
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
    let a = format!("http://127.0.0.1:{}", support::ports::free_port());
    refused(
        &["--address", &a, "--address", &format!("{a}/")],
        &[],
        "the same node is given twice",
    );
    let b = format!("http://127.0.0.1:{}", support::ports::free_port());
    refused(
        &[],
        &[("VAULT_ADDR", &format!("{a},{b}"))],
        "no node of the cluster is reachable",
    );

    // Two dev servers are two clusters.
    let x = support::openbao::OpenBao::start();
    let y = support::openbao::OpenBao::start();
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
    let mut cmd = support::vblast::vblast();
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
    let out = support::run::run(cmd);
    out.assert_code(0);
    let v = out.json();
    assert_eq!(
        support::figures::u(&v["nodes"][0]["ok"]),
        20,
        "{}",
        out.show()
    );
    assert!(out.stderr.contains("unreachable"), "{}", out.show());
}

/// Starts a `--nodes active` run, waits until its setup reached the active node and
/// `after` more, does `action` to the active node, and returns the finished run with the
/// instant of the action and the active node at the start.
fn failover_run(
    c: &mut Cluster,
    args: &[&str],
    env: &[(&str, &str)],
    after: Duration,
    action: impl FnOnce(&mut Cluster, usize),
) -> (support::run::Out, SystemTime, usize) {
    let old = c.active().expect("an active node");
    let mut cmd = cluster_cmd(c, args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let running = support::run::spawn(cmd);
    assert!(
        c.wait_for_vblast_mount(old, Duration::from_secs(30)),
        "the run's setup never reached node {old}"
    );
    std::thread::sleep(after);
    let at = SystemTime::now();
    action(c, old);
    (running.finish(Duration::from_secs(90)), at, old)
}

/// The failover left one window holding every failed request of the run, ended by a
/// success on `new`; the new active node answered everything sent to it; the timeline
/// has no failure outside the window and successes after it. Returns (start, end).
fn assert_one_window(out: &support::run::Out, c: &Cluster, old: usize, new: usize) -> (f64, f64) {
    assert_one_window_ended_on(out, c, old, new, &[new])
}

/// `assert_one_window`, with the first success after the window on one of `ended_on`.
fn assert_one_window_ended_on(
    out: &support::run::Out,
    c: &Cluster,
    old: usize,
    new: usize,
    ended_on: &[usize],
) -> (f64, f64) {
    let v = out.json();
    let windows = v["windows"].as_array().expect("windows in the report");
    assert_eq!(windows.len(), 1, "{}", out.show());
    let w = &windows[0];
    let failed = support::figures::u(&v["failed"]);
    assert!(failed > 0, "{}", out.show());
    assert_eq!(support::figures::u(&w["failed"]), failed, "{}", out.show());
    assert!(
        ended_on
            .iter()
            .any(|&n| w["recovered_on"] == c.nodes[n].addr.as_str()),
        "{}",
        out.show()
    );
    let (start, end) = (w["start_s"].as_f64().unwrap(), w["end_s"].as_f64().unwrap());
    assert!(end > start, "{}", out.show());
    let rows = node_rows(&v);
    assert!(
        rows[new].2 > 0 && rows[new].2 == rows[new].3,
        "{}",
        out.show()
    );
    assert!(rows[old].3 > 0, "{}", out.show());
    for s in v["timeline"].as_array().unwrap() {
        let sec = support::figures::u(&s["second"]) as f64;
        if sec > end.ceil() || sec + 1.0 < start.floor() {
            assert_eq!(
                support::figures::u(&s["errors"]),
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
            .any(|s| (s["second"].as_f64().unwrap()) > end && support::figures::u(&s["ok"]) > 0),
        "{}",
        out.show()
    );
    (start, end)
}

/// The cluster's own leader change: from `at` to the new active node's `active_time`
/// (sys/leader), in seconds.
fn leader_change(c: &Cluster, new: usize, at: SystemTime) -> f64 {
    let (_, leader) = c.api(new, "GET", "/v1/sys/leader", None);
    let leader: serde_json::Value = serde_json::from_str(&leader).unwrap();
    let active_since =
        humantime::parse_rfc3339(leader["active_time"].as_str().expect("active_time")).unwrap();
    active_since
        .duration_since(at)
        .expect("the new node became active after the failure")
        .as_secs_f64()
}

/// Under VBLAST_STRICT_TIMING=1: the window's length is the cluster's leader change
/// within a second. Always printed.
fn compare_with_leader(what: &str, (start, end): (f64, f64), change: f64) {
    let length = end - start;
    eprintln!("{what}: window {length:.3}s, leader change {change:.3}s");
    if support::figures::strict_timing() {
        assert!(
            (length - change).abs() < 1.0,
            "{what}: window {length:.3}s against the cluster's leader change {change:.3}s"
        );
    }
}

/// A short closed-model kv-read run for the failover tests.
fn failover_args(secs: &'static str, conns: &'static str) -> Vec<&'static str> {
    vec![
        "-c",
        conns,
        "-z",
        secs,
        "--op",
        "kv-read",
        "--secrets",
        "10",
        "--format",
        "json",
        "--allow-errors",
        "-q",
    ]
}

#[test]
fn killing_the_active_node_mid_run_gives_one_window_and_load_moves_to_the_new_active() {
    let mut c = Cluster::start(2);
    let (out, killed_at, old) = failover_run(
        &mut c,
        &failover_args("32s", "8"),
        &[],
        Duration::from_secs(4),
        |c, old| c.kill(old),
    );
    let new = 1 - old;
    out.assert_code(0);
    assert_eq!(c.active(), Some(new), "{}", c.logs());
    let window = assert_one_window(&out, &c, old, new);
    compare_with_leader("kill", window, leader_change(&c, new, killed_at));
}

#[test]
fn sealing_or_stepping_down_the_active_node_mid_run_moves_the_load() {
    let mut c = Cluster::start(3);
    // Sealed: the node fails the requests it holds (500), holds new ones until it is
    // sealed, then answers 503 until the run leaves it; a standby takes the lock.
    let (out, sealed_at, old) = failover_run(
        &mut c,
        &failover_args("10s", "8"),
        &[],
        Duration::from_secs(2),
        |c, old| c.seal(old),
    );
    out.assert_code(0);
    let new = c
        .wait_active(Some(old), Duration::from_secs(30))
        .expect("a new active node");
    assert_eq!(c.health(old), Some(503), "{}", c.logs());
    let window = assert_one_window(&out, &c, old, new);
    compare_with_leader("seal", window, leader_change(&c, new, sealed_at));

    // The sealed node comes back as a standby; then the active one steps down.
    c.unseal(old);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while c.health(old) != Some(429) {
        assert!(std::time::Instant::now() < deadline, "{}", c.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    let (out, stepped_at, old) = failover_run(
        &mut c,
        &failover_args("10s", "8"),
        &[],
        Duration::from_secs(2),
        |c, old| c.step_down(old),
    );
    out.assert_code(0);
    let new = c
        .wait_active(Some(old), Duration::from_secs(30))
        .expect("a new active node");
    // The node that stepped down fails requests (500, some 307) until a standby holds the
    // lock; then, a standby itself, it forwards to the new active node: the first success
    // after the window may come through it, before the watcher has moved the load.
    let window = assert_one_window_ended_on(&out, &c, old, new, &[old, new]);
    compare_with_leader("step-down", window, leader_change(&c, new, stepped_at));

    // Sealed during the setup (while thousands of secrets are written): the setup fails,
    // and what it created goes from the node active after the failover.
    let (out, _, old) = failover_run(
        &mut c,
        &[
            "-c",
            "2",
            "-z",
            "3s",
            "--op",
            "kv-read",
            "--secrets",
            "5000",
        ],
        &[],
        Duration::ZERO,
        |c, old| c.seal(old),
    );
    assert_ne!(out.code, Some(0), "{}", out.show());
    assert!(!out.stderr.contains("panicked"), "{}", out.show());
    let new = c
        .wait_active(Some(old), Duration::from_secs(30))
        .expect("a new active node");
    let (_, mounts) = c.api(new, "GET", "/v1/sys/mounts", None);
    assert!(
        !mounts.contains("\"vblast-") && !out.stderr.contains("is left on"),
        "{mounts}\n{}",
        out.show()
    );
}

#[test]
fn worker_processes_follow_a_failover() {
    let mut c = Cluster::start(2);
    // 32 connections in processes of 16 descriptors' room: two worker processes.
    let mut args = failover_args("24s", "32");
    args.extend(["-t", "2"]);
    let (out, killed_at, old) = failover_run(
        &mut c,
        &args,
        &[("VBLAST_PROCESS_FDS", "116")],
        Duration::from_secs(3),
        |c, old| c.kill(old),
    );
    let new = 1 - old;
    out.assert_code(0);
    let v = out.json();
    assert!(
        support::figures::u(&v["run"]["processes"]) >= 2,
        "{}",
        out.show()
    );
    assert_eq!(c.active(), Some(new), "{}", c.logs());
    let window = assert_one_window(&out, &c, old, new);
    compare_with_leader(
        "kill, worker processes",
        window,
        leader_change(&c, new, killed_at),
    );
}

#[test]
fn a_raft_cluster_fails_over_to_the_new_leader() {
    let mut c = Cluster::start_raft(3);
    let (out, killed_at, old) = failover_run(
        &mut c,
        &failover_args("12s", "8"),
        &[],
        Duration::from_secs(3),
        |c, old| c.kill(old),
    );
    let new = c
        .wait_active(Some(old), Duration::from_secs(10))
        .unwrap_or_else(|| panic!("no new leader:\n{}", c.logs()));
    out.assert_code(0);
    let window = assert_one_window(&out, &c, old, new);
    compare_with_leader("raft kill", window, leader_change(&c, new, killed_at));
}

fn strs(a: &[String]) -> Vec<&str> {
    a.iter().map(String::as_str).collect()
}

/// The node rows of `v` as (requests, ok, redirects, throttled), by node.
fn node_answers(v: &serde_json::Value) -> Vec<(u64, u64, u64, u64)> {
    v["nodes"]
        .as_array()
        .expect("nodes rows in the JSON report")
        .iter()
        .map(|n| {
            let u = |k: &str| support::figures::u(&n[k]);
            (u("requests"), u("ok"), u("redirects"), u("throttled"))
        })
        .collect()
}

/// Cluster mode over HTTP/2 (docs/http2.md): an HA OpenBao cluster over TLS, h2 by ALPN.
/// `--nodes active` loads the active node alone; `--nodes all` every node, each link to
/// its node under the node's own `:authority`; a standby asked not to forward answers
/// 307, counted in its row as over HTTP/1.1, and `--follow-redirects` sends those writes
/// on to the active node, every one a success; a step-down mid-run moves the h2 load to the
/// new active node, with one window of failures.
#[test]
fn a_tls_cluster_over_http2_per_node_rows_standby_redirects_and_a_failover() {
    let mut c = Cluster::start_tls(2);
    let ca = c.ca.clone().unwrap().display().to_string();
    let active = c.active().unwrap();
    let standby = 1 - active;
    let h2 = |extra: &[&'static str]| -> Vec<String> {
        let mut a: Vec<String> = ["--http2", "--ca-cert", &ca, "--format", "json"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let args = h2(&["-c", "2", "--streams", "4", "-n", "400", "--op", "kv-read"]);
    let args = [strs(&args), vec!["--secrets", "10"]].concat();
    let out = support::run::run(cluster_cmd(&c, &args));
    out.assert_code(0);
    let v = out.json();
    assert_eq!(v["run"]["protocol"], "HTTP/2 (h2)", "{}", out.show());
    let rows = node_answers(&v);
    assert_eq!(rows[active], (400, 400, 0, 0), "{}", out.show());
    assert_eq!(rows[standby], (0, 0, 0, 0), "{}", out.show());

    let args = h2(&[
        "-c",
        "4",
        "-t",
        "1",
        "--streams",
        "4",
        "-n",
        "400",
        "--nodes",
        "all",
        "--op",
        "seal-status",
    ]);
    let out = support::run::run(cluster_cmd(&c, &strs(&args)));
    out.assert_code(0);
    let rows = node_answers(&out.json());
    assert_eq!(rows.iter().map(|r| r.0).sum::<u64>(), 400, "{}", out.show());
    assert!(rows.iter().all(|r| r.0 > 0 && r.0 == r.1), "{}", out.show());

    // A standby asked not to forward: its answers, over HTTP/1.1 and over HTTP/2.
    let write = [
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "60",
        "--nodes",
        "all",
        "--op",
        "kv-write",
        "--kv-version",
        "1",
        "--secrets",
        "5",
        "--no-forwarding",
        "--allow-errors",
    ];
    let mut rows_by = Vec::new();
    for over_h2 in [false, true] {
        let args = if over_h2 {
            h2(&write)
        } else {
            let mut a = h2(&write);
            a.remove(0);
            a
        };
        let out = support::run::run(cluster_cmd(&c, &strs(&args)));
        out.assert_code(0);
        let rows = node_answers(&out.json());
        let (r, ok, redirects, throttled) = rows[standby];
        assert!(r > 0 && ok == 0, "h2 {over_h2}: {}", out.show());
        assert_eq!(
            (redirects, throttled),
            (r, 0),
            "h2 {over_h2}: {}",
            out.show()
        );
        assert_eq!(
            rows[active].0,
            rows[active].1,
            "h2 {over_h2}: {}",
            out.show()
        );
        assert_eq!(
            support::figures::u(&out.json()["redirects"]),
            r,
            "{}",
            out.show()
        );
        rows_by.push(rows);
    }
    eprintln!("standby rows over HTTP/1.1 and HTTP/2: {rows_by:?}");
    // Followed: every write succeeds; the standby's count for it, answered by the active
    // node (its `hops`), over HTTP/1.1 and over HTTP/2 alike.
    for over_h2 in [false, true] {
        let mut args = h2(&write);
        if !over_h2 {
            args.remove(0);
        }
        args.push("--follow-redirects".into());
        let out = support::run::run(cluster_cmd(&c, &strs(&args)));
        out.assert_code(0);
        let v = out.json();
        let u = support::figures::u;
        assert_eq!((u(&v["requests"]), u(&v["ok"])), (60, 60), "{}", out.show());
        let rows = node_answers(&v);
        let r = rows[standby].0;
        assert!(r > 0, "h2 {over_h2}: {}", out.show());
        assert_eq!(rows[standby], (r, r, r, 0), "h2 {over_h2}: {}", out.show());
        let n = &v["nodes"];
        assert_eq!(u(&n[standby]["followed"]), r, "{}", out.show());
        assert_eq!(u(&n[active]["hops"]), r, "{}", out.show());
        assert_eq!(u(&v["followed"]), r, "{}", out.show());
    }

    // A step-down mid-run: the h2 load follows the new active node.
    let args = h2(&[
        "-c",
        "4",
        "--streams",
        "4",
        "-z",
        "8s",
        "--op",
        "kv-read",
        "--secrets",
        "10",
        "--allow-errors",
        "-q",
    ]);
    let (out, _, old) = failover_run(
        &mut c,
        &strs(&args),
        &[],
        Duration::from_secs(2),
        |c, old| c.step_down(old),
    );
    out.assert_code(0);
    assert_eq!(
        out.json()["run"]["protocol"],
        "HTTP/2 (h2)",
        "{}",
        out.show()
    );
    let new = c
        .wait_active(Some(old), Duration::from_secs(30))
        .expect("a new active node");
    // As over HTTP/1.1: the node stepping down fails requests (500, some 307) until the
    // other holds the lock; the links then re-open to it.
    assert_one_window_ended_on(&out, &c, old, new, &[old, new]);
}
