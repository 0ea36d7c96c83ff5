//! The chaos soak's smoke run: `tools/chaos.sh 60` (a mixed run at a fixed rate against a
//! 3-node OpenBao HA cluster on PostgreSQL, every process in network namespaces of its
//! own, with the active node killed and restarted, a standby stopped, one node's link
//! degraded, PostgreSQL stopped and the connections reset) must hold every check it makes:
//! the accounting per operation, node and second, the schedule's requests = sent + not
//! sent, each unavailability window beside a fault, vblast's RSS flat, no hang, the
//! cluster whole, nothing left on the server, the audit log between the client's
//! successful and sent requests per operation. 60 s of load, as issue 25 asks of the smoke
//! run, not the soak's 10 minutes: the SIGKILL's failover (PostgreSQL's 15 s HA lock) no
//! longer takes most of it, so the faults after it meet a cluster that is whole again.
//! The smoke run's only tolerance: a window may start within 3 s of its fault (the soak
//! asks for 1 s), since a busy 2-core machine delays the script's own fault times.
//! Needs root (network namespaces, tc, iptables) and PostgreSQL; skipped, as
//! docs/testing.md documents, where namespaces cannot be made.
//!
//! Also here: the open model's exact accounting across a stalled server, on one OpenBao
//! (`a_stall_past_the_end_leaves_requests_not_sent_and_every_one_counted`).

use std::process::Command;

use std::time::Duration;

use serde_json::Value;

use crate::support::deps::{documented_skip, program};
use crate::support::openbao::{OpenBao, bao_binary};
use crate::support::run::{WATCHDOG, lines, reader};
use crate::support::vblast::vault_cmd;

/// The smoke run's length and rate: the schedule holds their product.
const SMOKE_SECONDS: u64 = 60;
const SMOKE_RATE: u64 = 50;

#[test]
fn a_minute_of_faults_against_a_cluster_keeps_every_check() {
    let ip = program(&["ip"], "iproute2");
    let probe = format!("vcprobe{}", std::process::id());
    let made = Command::new(&ip)
        .args(["netns", "add", &probe])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !made {
        documented_skip(
            "chaos::a_minute_of_faults_against_a_cluster_keeps_every_check",
            "cannot create network namespaces here (needs root and CAP_SYS_ADMIN)",
        );
        return;
    }
    let _ = Command::new(&ip).args(["netns", "del", &probe]).output();
    let child = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tools/chaos.sh"))
        .arg(SMOKE_SECONDS.to_string())
        .env("VBLAST", env!("CARGO_BIN_EXE_vblast"))
        .env("VBLAST_BAO", bao_binary())
        .env("RATE", SMOKE_RATE.to_string())
        .env("C", "16")
        .env("WINDOW_TOL", "3")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let tag = format!("vc{}-", child.id());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let show = format!("{stdout}\n--- stderr ---\n{stderr}");
    assert!(out.status.success(), "{show}");
    let scheduled = format!("ok    scheduled {} = sent ", SMOKE_SECONDS * SMOKE_RATE);
    for check in [
        "ok    requests ",
        scheduled.as_str(),
        "ok    the operations add up",
        "ok    the nodes add up",
        "ok    every second's requests = ok + failed",
        "ok    each window starts within 3 s of a fault",
        "ok    the SIGKILL of the active node opened a window",
        "ok    vblast RSS ",
        "ok    no hang",
        "ok    the cluster survived",
        "ok    nothing left on the server",
        "ok    the audit log holds every successful request",
        "ok    every fault injected",
    ] {
        assert!(stdout.contains(check), "no '{check}':\n{show}");
    }
    assert!(!stdout.contains("FAIL"), "{show}");
    // Each of the five faults was injected and said so.
    for fault in [
        "SIGKILL active node",
        "SIGSTOP standby node",
        "'s link: ",
        "PostgreSQL stopped",
        "reset (",
    ] {
        assert!(stderr.contains(fault), "no '{fault}':\n{show}");
    }
    let left = Command::new(&ip).args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(!left.contains(&tag), "namespaces left behind:\n{left}");
}

/// The open model counts every request its schedule intended: answered ok, failed (by
/// reason), or not sent. OpenBao is frozen (SIGSTOP) from about 1 s into a 5 s run at
/// 100 req/s on 2 connections until well past the deadline's 2 s grace, then thawed: the
/// two requests in flight are answered late, the ones that fell due while both connections
/// waited are given up at the grace's end, and ok + failed + not_sent is exactly the 500 the
/// schedule placed, in the JSON report, the results file and the text report alike.
#[test]
fn a_stall_past_the_end_leaves_requests_not_sent_and_every_one_counted() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.json");
    let mut cmd = vault_cmd(
        &bao,
        &[
            "-R",
            "100",
            "-c",
            "2",
            "-z",
            "5s",
            "--timeout",
            "60s",
            "--op",
            "kv-read",
            "--secrets",
            "10",
            "--progress",
            "--format",
            "json",
            "--output",
        ],
    );
    cmd.arg(&results);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn vblast");
    let stdout = reader(child.stdout.take().unwrap());
    let err = lines(child.stderr.take().unwrap());
    let mut seen = Vec::new();
    // The load's first progress line ("progress: 1s ...", not the seeding's) comes a
    // second into the load.
    let load_line = |l: &str| {
        l.strip_prefix("progress: ")
            .and_then(|r| r.split_once("s "))
            .is_some_and(|(secs, _)| secs.parse::<u64>().is_ok())
    };
    while let Ok(line) = err.recv_timeout(WATCHDOG) {
        let first = load_line(&line);
        seen.push(line);
        if first {
            break;
        }
    }
    assert!(
        seen.last().is_some_and(|l| load_line(l)),
        "no progress line:\n{}",
        seen.join("\n")
    );
    // Frozen from ~1 s of load to ~8 s: past the 5 s deadline and its 2 s grace.
    bao.stop_signal();
    std::thread::sleep(Duration::from_secs(7));
    bao.cont_signal();
    let until = std::time::Instant::now() + WATCHDOG;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > until {
            let _ = child.kill();
            panic!(
                "vblast still running {WATCHDOG:?} after the thaw:\n{}",
                seen.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr: Vec<String> = err.iter().collect();
    let out = stdout.join().unwrap();
    let show = format!(
        "{out}\n--- stderr ---\n{}\n{}",
        seen.join("\n"),
        stderr.join("\n")
    );
    // Most of the schedule was never sent: the schedule was not kept (exit 3,
    // docs/exit-status.md), whatever the requests that were sent did.
    assert_eq!(status.code(), Some(3), "{show}");
    let j: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {show}"));
    assert!(
        j["schedule_not_kept"]
            .as_str()
            .is_some_and(|w| w.contains("never sent")),
        "{show}"
    );
    let n = |k: &str| j[k].as_u64().unwrap_or_else(|| panic!("no {k}: {show}"));
    eprintln!(
        "stall past the end: {} requests = {} ok + {} failed, {} not sent",
        n("requests"),
        n("ok"),
        n("failed"),
        n("not_sent")
    );
    assert_eq!(j["run"]["model"], "open", "{show}");
    assert_eq!(n("requests"), n("ok") + n("failed"), "{show}");
    assert_eq!(n("requests") + n("not_sent"), 500, "{show}");
    // The stall covered the grace's end: some requests were never sent, and none of them
    // is counted as a failure.
    assert!(n("not_sent") > 0, "{show}");
    let file: Value = serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
    assert_eq!(file["stats"]["not_sent"], j["not_sent"], "{file}");
    let text = crate::support::run::run({
        let mut c = crate::support::vblast::url_cmd(&["report"]);
        c.arg(&results);
        c
    });
    text.assert_code(0);
    assert!(
        text.stdout.contains(&format!(
            "Not sent (scheduled in the run's window, the run ended first): {}",
            n("not_sent")
        )),
        "{}",
        text.show()
    );
}
