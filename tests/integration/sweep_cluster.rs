//! `vblast sweep` against a cluster target (several `--address`): rate steps keep their
//! connections as against one node. Two nginx as a cluster's nodes (canned `sys/health`:
//! one active, one standby, switchable by a file) count the connections the load arrives
//! on: `--nodes active` loads only the active node, over one set of connections for every
//! step, and follows a failover between steps; `--nodes all` opens its connections once
//! per node. A real OpenBao HA cluster: every step's results carry the node rows with
//! their roles, and the fixture is removed at the end. `--nodes each` is refused before
//! anything is sent. No time or throughput is asserted.

use std::path::{Path, PathBuf};

use crate::support;
use crate::support::cluster::Cluster;
use crate::support::figures::{step_requests, u};
use crate::support::nginx::Nginx;
use crate::support::run::{Live, Out, run};
use crate::support::vblast::env_cmd;
use serde_json::Value;

const HEALTH: &str = r#"{"initialized":true,"sealed":false,"standby":false,"cluster_id":"sweep-cluster-test","cluster_name":"nginx"}"#;

/// One node of the nginx cluster: it says it is active while the file `active` exists in
/// its directory (a standby, 429, otherwise), and logs every request to a file named for
/// the connection it came on (`load-N.log` for the load's `sys/seal-status`, `other-N.log`
/// for the rest: probes, preflight), so that the connections are told apart.
struct Node {
    ng: Nginx,
    dir: tempfile::TempDir,
    /// The server's count of accepted connections once started (with that read's own).
    before: u64,
}

impl Node {
    fn start(active: bool) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        // nginx's workers write the logs (as another account when the tests run as root
        // without `user root`: the directory is open to them).
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        let standby = HEALTH.replace("\"standby\":false", "\"standby\":true");
        let ng = Nginx::with_extra(&format!(
            "access_log {d}/other-$connection.log;
    location = /v1/sys/health {{
        if (-f {d}/active) {{ return 200 '{HEALTH}'; }}
        return 429 '{standby}';
    }}
    location = /v1/sys/seal-status {{
        access_log {d}/load-$connection.log;
        return 200 '{{\"sealed\":false}}';
    }}
    location = /vblast_status {{ access_log off; stub_status; }}"
        ));
        let mut n = Node { ng, dir, before: 0 };
        n.set_active(active);
        n.before = n.accepted();
        n
    }

    fn set_active(&self, active: bool) {
        let flag = self.dir.path().join("active");
        if active {
            std::fs::write(&flag, "").unwrap();
        } else {
            let _ = std::fs::remove_file(&flag);
        }
    }

    /// nginx's count of the connections it has accepted (`stub_status`), read over a new
    /// connection, which the count includes.
    fn accepted(&self) -> u64 {
        let text = self.ng.get("/vblast_status").text();
        // "Active connections: 1 \nserver accepts handled requests\n 5 5 7 \n..."
        text.lines()
            .nth(2)
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("stub_status: {text}"))
    }

    fn logs(&self, prefix: &str) -> Vec<PathBuf> {
        std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix))
            })
            .collect()
    }

    /// The connections accepted since the start that carried no probe, preflight or status
    /// read: the load's (a load connection the pacer never used sends nothing, so the
    /// server's count is taken, not the logs'). Also checks that no connection carried
    /// both.
    fn load_connections(&self) -> u64 {
        let during = self.accepted() - self.before - 1;
        let other = self.logs("other-");
        let ids = |v: &[PathBuf]| -> Vec<String> {
            v.iter()
                .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
                .map(|n| n.split_once('-').unwrap().1.to_string())
                .collect()
        };
        let load = ids(&self.logs("load-"));
        assert!(
            ids(&other).iter().all(|o| !load.contains(o)),
            "a connection carried load and something else: {:?}",
            self.dir.path()
        );
        during - other.len() as u64
    }

    /// Load requests the node answered in all.
    fn load_requests(&self) -> u64 {
        self.logs("load-")
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap().lines().count() as u64)
            .sum()
    }
}

/// A rate sweep over the nginx cluster's nodes (the standby first: the active node is not
/// the first address), rate steps of 1 s after 200 ms of warm-up at -c `conns`.
fn sweep_cmd(nodes: &[&Node], rate: &str, conns: u64, file: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec!["sweep".into()];
    for n in nodes {
        args.extend(["--address".into(), n.ng.addr.clone()]);
    }
    for a in [
        "--op",
        "seal-status",
        "--rate",
        rate,
        "--steps",
        "3",
        "--step-duration",
        "1s",
        "--step-warmup",
        "200ms",
        "--slo",
        "success=100",
        "--slo",
        "rate=50%",
        "-t",
        "2",
        "-c",
        &conns.to_string(),
        "--output",
        file.to_str().unwrap(),
    ] {
        args.push(a.into());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn command(args: &[String]) -> std::process::Command {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    env_cmd(&a, &[("VAULT_TOKEN", "test-token")])
}

fn read(file: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// A step's node rows: (role, requests, ok), by node index.
fn rows(step: &Value) -> Vec<(String, u64, u64)> {
    step["results"]["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("no node rows in the step: {step}"))
        .iter()
        .map(|n| {
            (
                n["role"].as_str().unwrap_or_default().to_string(),
                u(&n["requests"]),
                u(&n["ok"]),
            )
        })
        .collect()
}

/// The steps ran at `loads`, each with exactly rate x duration requests per measurement
/// (`step_requests`), none failed.
fn assert_steps(doc: &Value, loads: &[u64], show: &str) -> Vec<Value> {
    let steps = doc["steps"].as_array().expect("steps").clone();
    let got: Vec<u64> = steps.iter().map(|s| u(&s["load"])).collect();
    assert_eq!(got, loads, "{show}");
    for s in &steps {
        let r = &s["results"];
        assert_eq!(u(&r["requests"]), step_requests(s), "{s}\n{show}");
        assert_eq!(u(&r["failed"]), 0, "{s}\n{show}");
    }
    steps
}

/// A rate sweep at 40..160 req/s and -c `conns` (with `extra` flags) over a standby and
/// an active node, in that order, which must pass: the nodes, the output and the steps
/// (`assert_steps`).
fn sweep_standby_and_active(conns: u64, extra: &[&str]) -> (Node, Node, Out, Vec<Value>) {
    let standby = Node::start(false);
    let active = Node::start(true);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    let out = run(command(&sweep_cmd(
        &[&standby, &active],
        "40..160",
        conns,
        &file,
        extra,
    )));
    out.assert_code(0);
    let steps = assert_steps(&read(&file), &[40, 80, 160], &out.show());
    (standby, active, out, steps)
}

#[test]
fn active_mode_holds_one_set_of_connections_on_the_active_node() {
    let conns = 4;
    let (standby, active, out, steps) = sweep_standby_and_active(conns, &[]);
    assert!(
        !out.stderr.contains("each step opens its own connections"),
        "{}",
        out.show()
    );
    // The cluster as its nodes answered, shown before the steps.
    assert!(
        out.stderr.contains("Cluster:")
            && out
                .stderr
                .lines()
                .any(|l| l.contains(&active.ng.addr) && l.ends_with(" active")),
        "{}",
        out.show()
    );
    assert_eq!(
        active.load_connections(),
        conns,
        "three rate steps at -c {conns} must open {conns} connections to the active node, not a set per step\n{}",
        out.show()
    );
    assert_eq!(standby.load_connections(), 0, "{}", out.show());
    assert_eq!(standby.load_requests(), 0, "{}", out.show());
    for s in &steps {
        let load = step_requests(s);
        let r = rows(s);
        assert_eq!(
            r,
            [
                ("standby".to_string(), 0, 0),
                ("active".to_string(), load, load)
            ],
            "{s}"
        );
    }
}

#[test]
fn all_mode_holds_one_set_of_connections_per_node() {
    let conns = 4;
    let (standby, active, out, steps) = sweep_standby_and_active(conns, &["--nodes", "all"]);
    let (s, a) = (standby.load_connections(), active.load_connections());
    assert!(s > 0 && a > 0, "({s}, {a}): {}", out.show());
    assert_eq!(
        s + a,
        conns,
        "three rate steps at -c {conns} over two nodes must open {conns} connections in all, not a set per step\n{}",
        out.show()
    );
    for st in &steps {
        let r = rows(st);
        assert_eq!(
            (r[0].0.as_str(), r[1].0.as_str()),
            ("standby", "active"),
            "{st}"
        );
        // (Which node a step's requests went to is the pacer's choice of free
        // connections: at these rates one connection per thread may take them all.)
        assert!(r.iter().all(|n| n.1 == n.2), "{st}");
        assert_eq!(r[0].1 + r[1].1, step_requests(st), "{st}");
    }
}

/// The cluster fails over after the first step (the active node steps down, the standby
/// takes over, as `sys/health` shows): the watcher, running through the held sweep, moves
/// the load, and the later steps' connections go to the new active node, once.
#[test]
fn a_failover_between_held_steps_moves_the_load() {
    failover_between_held_steps(4, &[]);
}

/// The same over two worker processes (32 connections in processes of 16 descriptors'
/// room): the workers are started once, and the coordinator relays the watcher's move.
#[test]
fn a_failover_between_held_steps_moves_the_load_of_worker_processes() {
    failover_between_held_steps(32, &[("VBLAST_PROCESS_FDS", "116")]);
}

fn failover_between_held_steps(conns: u64, env: &[(&str, &str)]) {
    let a = Node::start(true);
    let b = Node::start(false);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    let mut cmd = command(&sweep_cmd(&[&a, &b], "40..160", conns, &file, &[]));
    cmd.envs(env.iter().copied());
    let mut live = Live::start(cmd);
    live.rows(1);
    a.set_active(false);
    b.set_active(true);
    let out = live.finish();
    out.assert_code(0);
    let steps = assert_steps(&read(&file), &[40, 80, 160], &out.show());
    let processes = if env.is_empty() { 1 } else { 2 };
    for st in &steps {
        assert_eq!(u(&st["results"]["run"]["processes"]), processes, "{st}");
    }
    // Roles as the nodes were before the sweep.
    let first = rows(&steps[0]);
    assert_eq!(
        first,
        [
            ("active".to_string(), 40, 40),
            ("standby".to_string(), 0, 0)
        ],
        "{}",
        out.show()
    );
    // The last step began 1.2 s after the switch, ten times the watcher's period.
    let last = rows(&steps[2]);
    assert_eq!((last[0].1, last[1].1), (0, 160), "{}", out.show());
    assert_eq!(
        (a.load_connections(), b.load_connections()),
        (conns, conns),
        "{conns} connections to the first active node, moved once to the new one\n{}",
        out.show()
    );
    assert_eq!(
        a.load_requests() + b.load_requests(),
        // Each step's warm-up (200 ms) is sent too.
        (40 + 80 + 160) * 12 / 10,
        "{}",
        out.show()
    );
}

#[test]
fn each_mode_is_refused_before_anything_is_sent() {
    let standby = Node::start(false);
    let active = Node::start(true);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    let out = run(command(&sweep_cmd(
        &[&standby, &active],
        "40..160",
        2,
        &file,
        &["--nodes", "each"],
    )));
    out.assert_code(2);
    assert!(
        out.stderr.contains("--nodes each does not go with sweep")
            && out.stderr.contains("vblast compare"),
        "{}",
        out.show()
    );
    for n in [&standby, &active] {
        // Not even a probe: the read's own connection only.
        assert_eq!(n.accepted() - n.before, 1, "{}", out.show());
    }
    assert!(!file.exists());
}

/// A real OpenBao HA cluster (PostgreSQL storage): a short rate sweep with `--nodes
/// active` holds its connections (vblast's own count: opened in the first step, none in
/// the later ones, measured from the first step's start: no warm-up), every step's
/// results carry the node rows with their roles, and the fixture is removed at the end.
#[test]
fn a_sweep_of_a_real_cluster_carries_node_rows_and_cleans_up() {
    let c = Cluster::start(2);
    let active = c.active().expect("an active node");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    let mut cmd = support::vblast::vblast();
    cmd.arg("sweep");
    for a in c.addrs() {
        cmd.arg("--address").arg(a);
    }
    cmd.env("VAULT_TOKEN", &c.token).args([
        "--op",
        "kv-read",
        "--secrets",
        "10",
        "--rate",
        "20..80",
        "--steps",
        "3",
        "--step-duration",
        "1s",
        "--step-warmup",
        "0s",
        "--slo",
        "p50=10s",
        "--slo",
        "rate=50%",
        "-c",
        "2",
        "-t",
        "1",
        "--output",
        file.to_str().unwrap(),
    ]);
    let out = run(cmd);
    out.assert_code(0);
    let steps = assert_steps(&read(&file), &[20, 40, 80], &out.show());
    for (i, s) in steps.iter().enumerate() {
        let load = step_requests(s);
        let r = rows(s);
        assert_eq!(r.len(), 2, "{s}");
        assert_eq!(r[active], ("active".to_string(), load, load), "{s}");
        assert_eq!(r[1 - active], ("standby".to_string(), 0, 0), "{s}");
        let opened = u(&s["results"]["connections_opened"]);
        assert_eq!(
            opened,
            if i == 0 { 2 } else { 0 },
            "connections opened in step {i}"
        );
    }
    let (st, body) = c.api(active, "GET", "/v1/sys/mounts", None);
    assert_eq!(st, 200, "{body}");
    assert!(
        !body.contains("\"vblast-"),
        "the fixture is removed: {body}\n{}",
        out.show()
    );
}
