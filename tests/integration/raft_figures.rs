//! Raft's figures per node per interval (issue 39 item 2), against a raft cluster started by
//! tools/raft-cluster.sh: each interval of the JSON report carries the node's raft figures
//! and, with `--server-pid`, its BoltDB files' sizes (found through /proc/PID/fd); the HTML
//! report draws their charts; the leader's timeline has each follower's lag by peer id; a
//! live scrape of `--metrics-listen` serves every node's raft gauges, growing; a token that
//! may not read sys/metrics loses them, the run goes on and the loss is said once. Small
//! counts: nothing here times or rates anything.

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
    // Each follower's lag, on the leader's timeline, by the followers' own peer ids.
    let peer = |n: &Value| n["raft"]["peer_id"].as_str().map(str::to_string);
    let peers: Vec<String> = nodes.iter().filter_map(peer).collect();
    assert_eq!(peers.len(), 3, "each node's peer id: {v}");
    let leaders: Vec<&Value> = nodes
        .iter()
        .filter(|n| !n["raft"]["followers"].as_array().is_none_or(Vec::is_empty))
        .collect();
    // A leader change under a busy machine could make two: at least one, each consistent.
    assert!(!leaders.is_empty(), "a leader's followers: {v}");
    for leader in leaders {
        let own = peer(leader).expect("the leader's peer id");
        let mut named: Vec<String> = leader["raft"]["followers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| f["peer_id"].as_str().expect("peer_id").to_string())
            .collect();
        named.sort();
        let mut others: Vec<String> = peers.iter().filter(|p| **p != own).cloned().collect();
        others.sort();
        assert_eq!(named, others, "the leader names its followers: {leader}");
        let timed = leader["intervals"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["raft_followers"].as_array())
            .any(|f| f.len() == 2 && f.iter().all(|x| x["lag"].as_f64() >= Some(0.0)));
        assert!(timed, "each follower's lag per interval: {leader}");
    }
    let page = std::fs::read_to_string(&html).expect("the HTML report");
    assert!(
        page.contains("Raft: mean commit and FSM apply times"),
        "raft chart"
    );
    assert!(page.contains("BoltDB files (MiB)"), "BoltDB chart");
    // Each follower the leader named in two intervals or more is a line of its own there.
    for leader in nodes.iter().filter(|n| n["raft"]["followers"].is_array()) {
        for p in &peers {
            let seen = leader["intervals"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["raft_followers"].as_array())
                .filter(|f| f.iter().any(|x| x["peer_id"] == p.as_str()))
                .count();
            if seen >= 2 {
                assert!(page.contains(&format!("lag of {p}")), "{p}'s lag line");
            }
        }
    }

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

/// The value of the series `name{node="addr"}` (its first label `node`) in a scrape.
fn series(text: &str, name: &str, node: &str) -> Option<f64> {
    let prefix = format!("{name}{{node=\"{node}\"");
    text.lines()
        .find(|l| l.starts_with(&prefix))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Issue 39: during a run against 3 raft nodes with `--metrics-listen`, a scrape of
/// /metrics serves each node's raft gauges, and their values make sense: every node's
/// applied index grows between scrapes (writes go to the leader and are applied
/// everywhere), and the leader's lag of each of its two followers is served. Polled with
/// a bound of minutes, then the run is stopped (Ctrl-C): no time is asserted.
#[test]
fn a_live_scrape_serves_each_raft_nodes_gauges() {
    let c = RaftCluster::start(3);
    let maddr = format!("127.0.0.1:{}", crate::support::ports::free_port());
    let running = crate::support::run::spawn(c.vblast(&[
        "--op",
        "kv-write",
        "--nodes",
        "all",
        "-t",
        "1",
        "-c",
        "3",
        "-z",
        "10m",
        "--secrets",
        "20",
        "--server-interval",
        "500ms",
        "--metrics-listen",
        &maddr,
        "-q",
    ]));
    let applied = |text: &str| -> Vec<Option<f64>> {
        c.addrs
            .iter()
            .map(|a| series(text, "vblast_server_raft_applied_index", a))
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let mut first: Option<Vec<f64>> = None;
    let mut text;
    let grown = loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        text = crate::support::client::scrape(&maddr);
        let now: Option<Vec<f64>> = applied(&text).into_iter().collect();
        let lags = text
            .lines()
            .filter(|l| l.starts_with("vblast_server_raft_follower_lag{"))
            .count();
        match (&first, now) {
            (None, Some(now)) => first = Some(now),
            (Some(was), Some(now)) if lags >= 2 && now.iter().zip(was).all(|(n, w)| n > w) => {
                break Some((was.clone(), now));
            }
            _ => {}
        }
        if std::time::Instant::now() > deadline {
            break None;
        }
    };
    // SAFETY: kill has no preconditions; the pid is the run's, still ours to signal.
    unsafe { libc::kill(running.child.id() as libc::pid_t, libc::SIGINT) };
    let out = running.finish(std::time::Duration::from_secs(120));
    let (was, now) = grown.unwrap_or_else(|| {
        panic!(
            "no growth seen in 180 s; last scrape:\n{text}\n{}",
            out.show()
        )
    });
    eprintln!("applied indexes {was:?} -> {now:?}");
    out.assert_code(130);
    for family in [
        "vblast_server_raft_fsm_pending",
        "vblast_server_raft_applied_index",
        "vblast_server_raft_bolt_free_pages",
    ] {
        for a in &c.addrs {
            assert!(
                series(&text, family, a).is_some(),
                "{family} of {a}:\n{text}"
            );
        }
    }
    // The leader's followers: two series of the same leader, each lag a count.
    let lags: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("vblast_server_raft_follower_lag{"))
        .collect();
    assert_eq!(lags.len(), 2, "{text}");
    for l in lags {
        let lag: f64 = l
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .expect("a value");
        assert!(lag >= 0.0 && lag.fract() == 0.0, "{l}");
        assert!(l.contains(",peer_id=\"node"), "{l}");
    }
}
