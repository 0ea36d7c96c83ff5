//! The steps of `vblast sweep` as a server sees them: rate steps over one set of open
//! connections (counted at the server, by nginx's own count of accepted connections),
//! each step with its own statistics, the results file rewritten after every step (a
//! sweep killed with SIGKILL leaves a valid file of the steps done), and SIGINT / SIGTERM
//! during a sweep: the steps so far printed and saved, the fixture removed, a non-zero
//! exit. No time or throughput is asserted.

mod common;

use std::time::{Duration, Instant};

use common::run::{Live, is_sweep_row as is_row, run, url_cmd, vault_cmd, vblast_mounts};
use common::{Nginx, OpenBao};
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
        assert_eq!(u(&r["requests"]), u(&s["load"]), "{s}");
        assert_eq!(u(&r["failed"]), 0, "{s}");
        assert_eq!(r["run"]["target_rate"].as_f64(), Some(u(&s["load"]) as f64));
    }
    assert_eq!(doc["interrupted"], false);
}

/// Rate steps spread over worker processes (one process may not hold the connections) are
/// each a run of the workers: they work, each opening its own connections, and the sweep
/// says so.
#[test]
fn rate_steps_over_worker_processes_say_they_reopen() {
    let ng = Nginx::with_extra("location = /vblast_status { stub_status; }");
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let before = accepted(&ng);
    let out = run(common::run::env_cmd(
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
            "--format",
            "json",
            &url,
        ],
        // 30 connections per process: two worker processes.
        &[("VBLAST_PROCESS_FDS", "130")],
    ));
    out.assert_code(0);
    assert!(
        out.stderr.contains(
            "each step opens its own connections: the connections are spread over worker processes"
        ),
        "{}",
        out.show()
    );
    let doc = out.json();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{}", out.show());
    for s in steps {
        assert_eq!(u(&s["results"]["run"]["processes"]), 2, "{s}");
    }
    assert_eq!(accepted(&ng) - before - 1, 3 * 60 + 1, "{}", out.show());
}

/// The sweep the signal tests stop: rate steps over a kv-read fixture, results to `file`.
fn start_sweep(bao: &OpenBao, file: &std::path::Path) -> Live {
    let cmd = vault_cmd(
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
            "p99=10s",
            "--slo",
            "rate=90%",
            "-c",
            "4",
            "--output",
            file.to_str().unwrap(),
        ],
    );
    Live::start(cmd)
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
            stdout.contains("Interrupted after 1 steps: 20 req/s was the highest load"),
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
