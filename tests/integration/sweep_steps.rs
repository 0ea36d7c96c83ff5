//! The steps of `vblast sweep` as a server sees them: rate steps over one set of open
//! connections (counted at the server, by nginx's own count of accepted connections),
//! each step with its own statistics, the results file rewritten after every step (a
//! sweep killed with SIGKILL leaves a valid file of the steps done), and SIGINT / SIGTERM
//! during a sweep: the steps so far printed and saved, the fixture removed, a non-zero
//! exit. No time or throughput is asserted.

use std::time::{Duration, Instant};

use crate::support;
use crate::support::nginx::Nginx;
use crate::support::openbao::{OpenBao, vblast_mounts};
use crate::support::run::{Live, is_sweep_row as is_row, run};
use crate::support::vblast::{url_cmd, vault_cmd};
use serde_json::Value;

/// nginx's count of the connections it has accepted (`stub_status`), read over a new
/// connection, which the count includes.
fn accepted(ng: &Nginx) -> u64 {
    let text = ng.get("/vblast_status").text();
    // "Active connections: 1 \nserver accepts handled requests\n 5 5 7 \n..."
    let line = text
        .lines()
        .nth(2)
        .unwrap_or_else(|| panic!("stub_status: {text}"));
    line.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("stub_status: {text}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn rate_steps_run_over_the_same_connections() {
    let ng = Nginx::with_extra("location = /vblast_status { stub_status; }");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let conns = 6u64;
    let before = accepted(&ng);
    let out = run(url_cmd(&[
        "sweep",
        "--rate",
        "64..256",
        "--steps",
        "3",
        "--step-duration",
        "1s",
        "--step-warmup",
        "500ms",
        "--slo",
        "success=100",
        "--slo",
        "rate=50%",
        "-c",
        &conns.to_string(),
        "-t",
        "2",
        "--output",
        file.to_str().unwrap(),
        &url,
    ]));
    out.assert_code(0);
    // This read's own connection is counted; before it, one connection per load
    // connection and the reachability check URL mode makes before any load.
    let during = accepted(&ng) - before - 1;
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let steps = doc["steps"].as_array().expect("steps");
    let loads: Vec<u64> = steps.iter().map(|s| u(&s["load"])).collect();
    assert_eq!(loads, [64, 128, 256], "{}", out.show());
    assert_eq!(
        during,
        conns + 1,
        "three rate steps at -c {conns} must open {conns} load connections (and the reachability check), not a set per step\n{}",
        out.show()
    );
    for s in steps {
        // Each step's own statistics: its warm-up left out, nothing of the other steps
        // (the schedule places exactly rate x duration requests in the measured second).
        let r = &s["results"];
        assert_eq!(u(&r["requests"]), support::figures::step_requests(s), "{s}");
        assert_eq!(u(&r["failed"]), 0, "{s}");
        assert_eq!(r["run"]["target_rate"].as_f64(), Some(u(&s["load"]) as f64));
    }
    assert_eq!(doc["interrupted"], false);
}

/// The worker processes (`vblast --worker`) whose parent is `pid`, from /proc.
fn workers_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        // "PID (comm) STATE PPID ...": the fields after the last ')'.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) && is_worker(child) {
            found.push(child);
        }
    }
    found
}

/// Process `pid` exists and is a vblast worker (a zombie has no command line).
fn is_worker(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == b"--worker"))
}

/// Rate steps spread over worker processes (one process may not hold the connections)
/// keep the same workers and connections too: the server accepts the load connections
/// once for all three steps, and each step's share of the rate is split over the
/// processes' threads as in a single run (exactly rate x duration requests a step).
#[test]
fn rate_steps_over_worker_processes_keep_their_connections() {
    let ng = Nginx::with_extra("location = /vblast_status { stub_status; }");
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let before = accepted(&ng);
    let out = run(support::vblast::env_cmd(
        &[
            "sweep",
            "--rate",
            "20..80",
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
            "-c",
            "60",
            "-t",
            "4",
            "--format",
            "json",
            &url,
        ],
        // 30 connections per process: two worker processes, of two threads each.
        &[("VBLAST_PROCESS_FDS", "130")],
    ));
    out.assert_code(0);
    assert!(
        !out.stderr.contains("each step opens its own connections"),
        "{}",
        out.show()
    );
    let doc = out.json();
    let steps = doc["steps"].as_array().unwrap();
    let loads: Vec<u64> = steps.iter().map(|s| u(&s["load"])).collect();
    assert_eq!(loads, [20, 40, 80], "{}", out.show());
    for s in steps {
        let r = &s["results"];
        assert_eq!(u(&r["run"]["processes"]), 2, "{s}");
        assert_eq!(u(&r["run"]["threads"]), 4, "{s}");
        assert_eq!(u(&r["requests"]), support::figures::step_requests(s), "{s}");
        assert_eq!(u(&r["failed"]), 0, "{s}");
    }
    // The load connections and the reachability check; this read's own is the last 1.
    assert_eq!(
        accepted(&ng) - before - 1,
        60 + 1,
        "three rate steps over worker processes must open their 60 connections once\n{}",
        out.show()
    );
}

/// A worker process killed during a held step (SIGKILL), or stopped by a signal of its
/// own (SIGTERM to it alone), ends the sweep with one message naming the lost share (no
/// hang, and the step cut short is not counted), and the other worker ends too.
#[test]
fn a_worker_lost_mid_sweep_ends_it_with_one_message() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    for (sig, how) in [
        (libc::SIGKILL, "signal: 9"),
        (libc::SIGTERM, "stopped by SIGTERM during a step"),
    ] {
        let cmd = support::vblast::env_cmd(
            &[
                "sweep",
                "--rate",
                "20..80",
                "--steps",
                "3",
                // Long enough that the kill, 0.5 s into the second step, lands in it on a
                // busy machine too.
                "--step-duration",
                "6s",
                "--step-warmup",
                "200ms",
                "--slo",
                "success=100",
                // The achieved rate's default bound (2%) is a timing: at load average ~23
                // the first step came in under it, the sweep ended there, and one worker
                // had already gone when the test looked for two.
                "--slo",
                "rate=50%",
                "-c",
                "40",
                &url,
            ],
            &[("VBLAST_PROCESS_FDS", "120")],
        );
        let mut s = Live::start(cmd);
        s.rows(1);
        let workers = workers_of(s.pid());
        assert_eq!(workers.len(), 2, "two worker processes: {workers:?}");
        // In the second step.
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: kill(2) on a worker process of the sweep this test started, found by
        // its parent's pid and its command line just now.
        unsafe {
            libc::kill(workers[1] as libc::pid_t, sig);
        }
        let out = s.finish();
        assert_eq!(out.code, Some(1), "{}", out.show());
        let rows: Vec<&str> = out.stdout.lines().filter(|l| is_row(l)).collect();
        assert_eq!(
            rows.len(),
            1,
            "the step cut short is not a row\n{}",
            out.show()
        );
        let lost: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.contains("was lost"))
            .collect();
        assert_eq!(lost.len(), 1, "{}", out.show());
        assert!(
            lost[0].contains("worker process 1 was lost")
                && lost[0].contains(how)
                && lost[0].contains("20 of the 40 planned connections"),
            "{}",
            out.show()
        );
        for w in workers {
            assert!(!is_worker(w), "worker {w} is left\n{}", out.show());
        }
    }
}

/// The sweep the signal tests stop: rate steps over a kv-read fixture, results to `file`.
fn start_sweep(bao: &OpenBao, file: &std::path::Path) -> Live {
    Live::start(sweep_cmd(bao, file, 4))
}

/// `start_sweep`'s command, over `conns` connections.
fn sweep_cmd(bao: &OpenBao, file: &std::path::Path, conns: u64) -> std::process::Command {
    let conns = conns.to_string();
    vault_cmd(
        bao,
        &[
            "sweep",
            "--op",
            "kv-read",
            "--secrets",
            "10",
            "--rate",
            "20..2000",
            "--steps",
            "6",
            "--step-duration",
            "2s",
            "--step-warmup",
            "200ms",
            "--slo",
            "p50=10s",
            "--slo",
            "rate=90%",
            "-c",
            &conns,
            "--output",
            file.to_str().unwrap(),
        ],
    )
}

#[test]
fn a_stopped_sweep_keeps_its_steps_and_removes_its_fixture() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();

    // SIGKILL after two steps: no cleanup runs, but the file holds both steps and reads
    // back as a sweep interrupted after them.
    let file = dir.path().join("killed.json");
    let mut s = start_sweep(&bao, &file);
    s.rows(2);
    // The row is printed, then the file saved: wait for the save (the third step runs).
    let saved = |n: usize| {
        std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|d| d["steps"].as_array().is_some_and(|a| a.len() == n))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !saved(2) {
        assert!(Instant::now() < deadline, "two steps are never saved");
        std::thread::sleep(Duration::from_millis(5));
    }
    s.signal(libc::SIGKILL);
    let out = s.finish();
    let (code, stdout) = (out.code, out.stdout);
    assert_eq!(code, None, "{stdout}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{doc}");
    assert_eq!(doc["interrupted"], true);
    let report = run(url_cmd(&["report", file.to_str().unwrap()]));
    report.assert_code(0);
    let line = format!(
        "Interrupted after 2 steps: {} req/s was the highest load",
        u(&steps[1]["load"])
    );
    assert!(report.stdout.contains(&line), "{line}\n{}", report.show());
    // What the killed sweep left is removed here, so the next ones start clean.
    for m in vblast_mounts(&bao) {
        let (code, _) = bao.api("DELETE", &format!("/v1/sys/mounts/{m}"), None);
        assert!(code < 300, "unmount {m}: {code}");
    }

    for (sig, status) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let file = dir.path().join(format!("stopped-{sig}.json"));
        let mut s = start_sweep(&bao, &file);
        s.rows(1);
        // In the second step.
        std::thread::sleep(Duration::from_millis(700));
        assert!(vblast_mounts(&bao).len() == 1, "the fixture is there");
        s.signal(sig);
        let out = s.finish();
        let (code, stdout, stderr) = (out.code, out.stdout, out.stderr);
        assert_eq!(code, Some(status), "{stdout}\n{stderr}");
        let rows: Vec<&str> = stdout.lines().filter(|l| is_row(l)).collect();
        assert_eq!(
            rows.len(),
            1,
            "the step done, not the one cut short:\n{stdout}"
        );
        assert!(
            stdout.contains("Interrupted after 1 step: 20 req/s was the highest load"),
            "{stdout}"
        );
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(doc["steps"].as_array().unwrap().len(), 1, "{doc}");
        assert_eq!(doc["interrupted"], true);
        assert_eq!(
            vblast_mounts(&bao),
            Vec::<String>::new(),
            "the fixture is removed"
        );
    }
}

/// SIGTERM during a sweep whose steps are held over worker processes: the workers end with
/// it, the step done is printed and saved, the fixture is removed, exit 143.
#[test]
fn a_stopped_sweep_over_worker_processes_ends_its_workers() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stopped.json");
    let mut cmd = sweep_cmd(&bao, &file, 40);
    // 20 connections per process: two worker processes.
    cmd.env("VBLAST_PROCESS_FDS", "120");
    let mut s = Live::start(cmd);
    s.rows(1);
    let workers = workers_of(s.pid());
    assert_eq!(workers.len(), 2, "two worker processes: {workers:?}");
    // In the second step.
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        workers_of(s.pid()),
        workers,
        "the same workers run the second step"
    );
    assert!(vblast_mounts(&bao).len() == 1, "the fixture is there");
    s.signal(libc::SIGTERM);
    let out = s.finish();
    assert_eq!(out.code, Some(143), "{}", out.show());
    let rows: Vec<&str> = out.stdout.lines().filter(|l| is_row(l)).collect();
    assert_eq!(rows.len(), 1, "{}", out.show());
    assert!(
        out.stdout
            .contains("Interrupted after 1 step: 20 req/s was the highest load"),
        "{}",
        out.show()
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{doc}");
    assert_eq!(u(&steps[0]["results"]["run"]["processes"]), 2, "{doc}");
    assert_eq!(doc["interrupted"], true);
    for w in workers {
        assert!(!is_worker(w), "worker {w} is left\n{}", out.show());
    }
    assert_eq!(
        vblast_mounts(&bao),
        Vec::<String>::new(),
        "the fixture is removed"
    );
}
