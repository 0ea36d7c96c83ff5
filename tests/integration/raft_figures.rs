//! Raft's figures per node per interval (issue 39 item 2), against a raft cluster started by
//! tools/raft-cluster.sh: each interval of the JSON report carries the node's raft figures
//! and, with `--server-pid`, its BoltDB files' sizes (found through /proc/PID/fd); the HTML
//! report draws their charts; a token that may not read sys/metrics loses them, the run
//! goes on and the loss is said once. Small counts: nothing here times or rates anything.

use std::process::Command;

use serde_json::Value;

use crate::support::openbao::bao_binary;
use crate::support::raft::RaftCluster;
use crate::support::run::run;
use crate::support::vblast::scrub_env;

/// A kv-write run over every node, each node's process given; its JSON report.
fn sampled_run(c: &RaftCluster, token: Option<&str>, extra: &[&str]) -> crate::support::run::Out {
    let pids: Vec<String> = c.pids().iter().map(u32::to_string).collect();
    let mut args = vec![
        "--op",
        "kv-write",
        "--nodes",
        "all",
        "-t",
        "1",
        "-c",
        "3",
        "-z",
        "4s",
        "--secrets",
        "20",
        "--server-interval",
        "1s",
        "--format",
        "json",
    ];
    for p in &pids {
        args.extend(["--server-pid", p.as_str()]);
    }
    args.extend(extra);
    let mut cmd = c.vblast(&args);
    if let Some(t) = token {
        cmd.env("VAULT_TOKEN", t);
    }
    run(cmd)
}

#[test]
fn each_raft_nodes_figures_are_on_its_timeline() {
    let c = RaftCluster::start(3);
    let dir = tempfile::tempdir().expect("tempdir");
    let html = dir.path().join("run.html");
    let file = dir.path().join("run.json");
    let out = sampled_run(
        &c,
        None,
        &[
            "--html",
            html.to_str().expect("utf8"),
            "--output",
            file.to_str().expect("utf8"),
        ],
    );
    // A busy machine may miss the -R-less run's nothing: it has no schedule to miss.
    out.assert_code(0);
    let v: Value = out.json();
    // The raft figures are in the schemas, in the JSON report and in the results file.
    let report = dir.path().join("report.json");
    std::fs::write(&report, &out.stdout).expect("write the report");
    crate::schema::assert_valid("report.schema.json", &[&report]);
    crate::schema::assert_valid("results.schema.json", &[&file]);
    let nodes = v["server"]["nodes"].as_array().expect("server nodes");
    assert_eq!(nodes.len(), 3, "{v}");
    let mut committed = false;
    for n in nodes {
        let intervals = n["intervals"].as_array().expect("intervals");
        let rafts: Vec<&Value> = intervals.iter().filter_map(|i| i.get("raft")).collect();
        assert!(!rafts.is_empty(), "raft figures on the timeline: {n}");
        assert!(
            rafts
                .iter()
                .all(|r| r["applied_index"].as_f64() > Some(0.0)),
            "{n}"
        );
        // The files each node holds open, read through /proc/PID/fd.
        assert!(
            rafts.iter().any(|r| r["bolt_fsm_bytes"].as_u64() > Some(0)
                && r["bolt_log_bytes"].as_u64() > Some(0)),
            "BoltDB files' sizes: {n}"
        );
        assert!(n["raft"]["bolt_fsm_bytes"].as_u64() > Some(0), "{n}");
        assert!(n["io_blocked_threads_mean"].is_number(), "{n}");
        // Only the leader commits: its intervals have the commit times.
        committed |= rafts.iter().any(|r| r["commit_ms"].is_number());
    }
    assert!(committed, "the leader's commit times: {v}");
    let page = std::fs::read_to_string(&html).expect("the HTML report");
    assert!(
        page.contains("Raft: mean commit and FSM apply times"),
        "raft chart"
    );
    assert!(page.contains("BoltDB files (MiB)"), "BoltDB chart");

    // The text report's raft line names the files.
    let out = run(c.vblast(&[
        "--op",
        "kv-write",
        "-c",
        "2",
        "-n",
        "100",
        "--secrets",
        "10",
        "--server-pid",
        &c.pids()[0].to_string(),
    ]));
    out.assert_code(0);
    assert!(
        out.stdout.contains("BoltDB files vault.db "),
        "{}",
        out.show()
    );
}

/// `bao ARGS` against node 0 with the root token: its stdout, asserted to succeed.
fn bao(c: &RaftCluster, args: &[&str]) -> String {
    let home = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(bao_binary());
    scrub_env(&mut cmd);
    let out = cmd
        .args(args)
        .env("VAULT_ADDR", &c.addrs[0])
        .env("VAULT_TOKEN", &c.token)
        .env("HOME", home.path())
        .output()
        .expect("bao");
    assert!(
        out.status.success(),
        "bao {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Raft figures the token may not read: the run goes on, and what is missing is said once
/// per node, naming raft's figures and why.
#[test]
fn raft_figures_the_token_may_not_read_are_said_once() {
    let c = RaftCluster::start(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("no-metrics.hcl");
    std::fs::write(
        &policy,
        "path \"vblast-*\" { capabilities = [\"create\", \"read\", \"update\", \"delete\", \"list\"] }\npath \"sys/mounts*\" { capabilities = [\"create\", \"read\", \"update\", \"delete\", \"list\", \"sudo\"] }\n",
    )
    .expect("policy file");
    bao(
        &c,
        &[
            "policy",
            "write",
            "no-metrics",
            policy.to_str().expect("utf8"),
        ],
    );
    let token = bao(
        &c,
        &["token", "create", "-policy=no-metrics", "-field=token"],
    );
    let out = sampled_run(&c, Some(&token), &[]);
    out.assert_code(0);
    assert!(!out.stderr.contains(&token) && !out.stdout.contains(&token));
    let said = "raft's figures (commit and apply times";
    assert_eq!(out.stderr.matches(said).count(), 1, "{}", out.show());
    let v: Value = out.json();
    let missing = v["server"]["nodes"][0]["missing"].to_string();
    assert!(missing.contains("sys/metrics: HTTP 403"), "{missing}");
    assert_eq!(missing.matches(said).count(), 1, "{missing}");
    assert!(v["server"]["nodes"][0].get("raft").is_none(), "{v}");
}
