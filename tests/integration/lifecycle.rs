//! Lifecycle tests: every way a run can end (SIGINT, SIGTERM, SIGHUP, to the parent alone
//! or with worker processes, a lost worker, a stop during setup) prints what it has,
//! removes what it created, leaves no process behind and exits with the documented
//! status; vblast never touches a user's own secrets; the command line's subcommands and
//! registry listing.

use crate::support;
use crate::support::figures::u;
use crate::support::nginx::Nginx;
use crate::support::openbao::{OpenBao, vblast_mounts};
use crate::support::run::{Running, run, spawn};
use crate::support::vblast::{url_cmd, vault_cmd};
use std::thread;
use std::time::{Duration, Instant};

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) on a process this test started and has not reaped.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// Children of `pid` (from /proc), i.e. vblast's worker processes.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // Fields after the command's closing parenthesis: state, ppid, ...
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
    })
}

/// Waits (bounded) until `cond` holds.
fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// A kv-read run under way on `bao` (its mount exists and requests have gone out).
fn kv_run_under_way(bao: &OpenBao) -> Running {
    let running = spawn(vault_cmd(
        bao,
        &["-z", "30s", "--op", "kv-read", "-c", "8", "--secrets", "50"],
    ));
    wait_for("the mount", Duration::from_secs(20), || {
        !vblast_mounts(bao).is_empty()
    });
    thread::sleep(Duration::from_millis(1500));
    running
}

#[test]
fn sigterm_and_sighup_stop_report_and_clean_up() {
    let bao = OpenBao::start();
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let running = kv_run_under_way(&bao);
        signal(running.child.id(), sig);
        let out = running.finish(Duration::from_secs(30));
        out.assert_code(code);
        out.assert_total_row();
        assert!(
            out.stdout.contains("Interrupted:"),
            "the report says it covers the run up to the stop:\n{}",
            out.show()
        );
        assert!(vblast_mounts(&bao).is_empty(), "{:?}", vblast_mounts(&bao));
    }
}

/// A URL-mode run over 2 worker processes against nginx, under way.
fn multi_process_run(ng: &Nginx, duration: &str, extra: &[&str]) -> (Running, Vec<u32>) {
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let mut args = vec!["-c", "40", "-t", "2", "-z", duration, "--format", "json"];
    args.extend_from_slice(extra);
    args.push(&url);
    let mut cmd = url_cmd(&args);
    cmd.env("VBLAST_PROCESS_FDS", "120");
    let running = spawn(cmd);
    let parent = running.child.id();
    let mut workers = Vec::new();
    wait_for("two worker processes", Duration::from_secs(20), || {
        workers = children(parent);
        workers.len() == 2
    });
    thread::sleep(Duration::from_millis(1500));
    (running, workers)
}

#[test]
fn a_signal_to_the_parent_alone_stops_its_workers() {
    let ng = Nginx::start();
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let (running, workers) = multi_process_run(&ng, "30s", &["-R", "200"]);
        signal(running.child.id(), sig);
        let out = running.finish(Duration::from_secs(30));
        out.assert_code(code);
        let j = out.json();
        assert_eq!(u(&j["run"]["processes"]), 2, "{:#}", j["run"]);
        assert!(j["run"]["interrupted"].as_bool().unwrap(), "{:#}", j["run"]);
        // Both workers' results are in: every opened connection is counted.
        assert_eq!(u(&j["connections_opened"]), 40, "{j:#}");
        assert!(u(&j["requests"]) > 0, "{j:#}");
        for w in workers {
            wait_for("the worker to end", Duration::from_secs(10), || !alive(w));
        }
    }
}

#[test]
fn a_killed_parent_takes_its_workers_with_it() {
    let ng = Nginx::start();
    let (running, workers) = multi_process_run(&ng, "30s", &[]);
    signal(running.child.id(), libc::SIGKILL);
    let _ = running.finish(Duration::from_secs(10));
    for w in workers {
        wait_for(
            "the orphaned worker to end",
            Duration::from_secs(10),
            || !alive(w),
        );
    }
}

#[test]
fn a_lost_worker_fails_the_run_and_says_what_is_missing() {
    let ng = Nginx::start();
    let (running, workers) = multi_process_run(&ng, "4s", &[]);
    signal(workers[1], libc::SIGKILL);
    let out = running.finish(Duration::from_secs(30));
    out.assert_code(1);
    assert!(
        out.stderr.contains("was lost")
            && out
                .stderr
                .contains("20 of the 40 planned connections (50%)"),
        "{}",
        out.show()
    );
    // The report of the surviving worker is still printed.
    let j = out.json();
    assert!(u(&j["ok"]) > 0, "{j:#}");

    // --allow-errors reports the loss but exits 0.
    let (running, workers) = multi_process_run(&ng, "4s", &["--allow-errors"]);
    signal(workers[0], libc::SIGKILL);
    let out = running.finish(Duration::from_secs(30));
    out.assert_code(0);
    assert!(out.stderr.contains("was lost"), "{}", out.show());
}

#[test]
fn a_stop_during_seeding_ends_at_once_and_removes_the_mount() {
    let bao = OpenBao::start();
    // 200,000 secrets take far longer to seed than this test waits.
    let running = spawn(vault_cmd(
        &bao,
        &["-n", "10", "--op", "kv-read", "--secrets", "200000"],
    ));
    wait_for("the mount", Duration::from_secs(20), || {
        !vblast_mounts(&bao).is_empty()
    });
    thread::sleep(Duration::from_millis(300));
    signal(running.child.id(), libc::SIGINT);
    let out = running.finish(Duration::from_secs(30));
    out.assert_code(130);
    assert!(vblast_mounts(&bao).is_empty(), "{:?}", vblast_mounts(&bao));
}

#[test]
fn an_existing_mount_keeps_the_users_secrets_untouched() {
    let bao = OpenBao::start();
    let (s, body) = bao.api(
        "POST",
        "/v1/secret/data/s00",
        Some(r#"{"data":{"value":"mine"}}"#),
    );
    assert_eq!(s, 200, "{body}");
    for op in ["kv-write", "kv-read"] {
        let out = run(vault_cmd(
            &bao,
            &[
                "--mount",
                "secret",
                "--op",
                op,
                "-c",
                "4",
                "-n",
                "200",
                "--secrets",
                "20",
                "--format",
                "json",
            ],
        ));
        out.assert_code(0);
        assert_eq!(u(&out.json()["ok"]), 200);
    }
    let (s, body) = bao.api("GET", "/v1/secret/data/s00", None);
    assert_eq!(s, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["data"]["data"]["value"], "mine", "{body}");
    assert_eq!(v["data"]["metadata"]["version"], 1, "{body}");
    // Nothing vblast wrote is left in the mount.
    let (s, body) = bao.api("LIST", "/v1/secret/metadata", None);
    assert_eq!(s, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["data"]["keys"], serde_json::json!(["s00"]), "{body}");
}

#[test]
fn subcommands_and_the_operation_registry() {
    let out = run(url_cmd(&["--list-ops"]));
    out.assert_code(0);
    for name in ["kv-read", "kv-write", "cert-login", "--secret-size"] {
        assert!(out.stdout.contains(name), "{}", out.show());
    }
    // The Markdown form is docs/operations.md, as generated from the registry.
    let out = run(url_cmd(&["--list-ops", "--format", "markdown"]));
    out.assert_code(0);
    assert!(
        out.stdout == include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operations.md")),
        "docs/operations.md differs from `vblast --list-ops --format markdown`"
    );
    // `run` is the default command: the same flags work after it.
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let out = run(url_cmd(&[
        "run", "-c", "2", "-n", "20", "--format", "json", &url,
    ]));
    out.assert_code(0);
    assert_eq!(u(&out.json()["ok"]), 20);
    // No name falls through to another operation.
    let out = run(url_cmd(&["--op", "kv-reed"]));
    out.assert_code(2);
    assert!(
        out.stderr.contains("unknown operation 'kv-reed'") && out.stderr.contains("kv-read"),
        "{}",
        out.show()
    );
    let out = run(url_cmd(&["--op", "kv-read:50,kv-read:50"]));
    out.assert_code(2);
    assert!(out.stderr.contains("twice"), "{}", out.show());
}

#[test]
fn a_weighted_mix_runs_each_operation_on_its_own_fixture() {
    let bao = OpenBao::start();
    let out = run(vault_cmd(
        &bao,
        &[
            "--op",
            "kv-read:3,kv-write:1",
            "-c",
            "8",
            "-n",
            "4000",
            "--secrets",
            "20",
            "--format",
            "json",
        ],
    ));
    out.assert_code(0);
    let j = out.json();
    assert_eq!(u(&j["ok"]), 4000, "{j:#}");
    let ops = j["ops"].as_array().unwrap();
    assert_eq!(ops.len(), 2);
    assert_eq!(ops[0]["name"], "kv-read");
    assert_eq!(ops[1]["name"], "kv-write");
    let (reads, writes) = (u(&ops[0]["requests"]), u(&ops[1]["requests"]));
    assert_eq!(reads + writes, 4000);
    // 3:1 over 4000 picks: far outside noise if the weights were ignored.
    assert!(
        (2700..3300).contains(&reads),
        "{reads} reads, {writes} writes"
    );
    assert!(vblast_mounts(&bao).is_empty(), "{:?}", vblast_mounts(&bao));
}

#[test]
fn the_token_comes_from_a_file_or_stdin() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{}\n", bao.token)).unwrap();
    let mut cmd = vault_cmd(
        &bao,
        &[
            "--token-file",
            file.to_str().unwrap(),
            "--op",
            "kv-read",
            "-n",
            "50",
            "--format",
            "json",
        ],
    );
    cmd.env_remove("VAULT_TOKEN");
    let out = run(cmd);
    out.assert_code(0);
    assert_eq!(u(&out.json()["ok"]), 50);
    let mut cmd = vault_cmd(&bao, &["--token-file", "/nonexistent/t", "--op", "kv-read"]);
    cmd.env_remove("VAULT_TOKEN");
    let out = run(cmd);
    out.assert_code(2);
    assert!(out.stderr.contains("/nonexistent/t"), "{}", out.show());
}

/// A Vault-shaped server scripted per request: health and token checks pass, creating a
/// mount hangs past the client's timeout, and deleting it answers 204 (or hangs too, when
/// `delete_hangs`). Returns its address and the request lines it saw.
fn stalling_mount_server(
    delete_hangs: bool,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    thread::spawn(move || {
        for conn in listener.incoming().take(20) {
            let Ok(conn) = conn else { return };
            let log = log.clone();
            thread::spawn(move || {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(20)));
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut conn = conn;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut length = 0usize;
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h == "\r\n" {
                            break;
                        }
                        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; length];
                    let _ = reader.read_exact(&mut body);
                    let line = line.trim().to_string();
                    log.lock().unwrap().push(line.clone());
                    let hang = (line.starts_with("POST /v1/sys/mounts/"))
                        || (delete_hangs && line.starts_with("DELETE "));
                    if hang {
                        thread::sleep(Duration::from_secs(8));
                        return;
                    }
                    let (status, body) = if line.starts_with("DELETE ") {
                        ("204 No Content", "")
                    } else if line.contains("/v1/sys/health") {
                        ("200 OK", r#"{"initialized":true,"sealed":false}"#)
                    } else {
                        ("200 OK", r#"{"data":{}}"#)
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if conn.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

/// Issue 8, defect 5: a mount whose creation timed out may still have been made: vblast
/// removes it, or names it with the command that removes it.
#[test]
fn a_mount_whose_creation_timed_out_is_removed_or_named() {
    let (addr, seen) = stalling_mount_server(false);
    let mut cmd = support::vblast::vblast();
    cmd.env("VAULT_ADDR", &addr)
        .env("VAULT_TOKEN", "root")
        .args(["--op", "kv-read", "-n", "10", "--timeout", "1s"]);
    let out = run(cmd);
    out.assert_code(2);
    let lines = seen.lock().unwrap().clone();
    let created = lines
        .iter()
        .find_map(|l| l.strip_prefix("POST /v1/sys/mounts/"))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("no mount creation seen: {lines:?}"))
        .to_string();
    assert!(out.stderr.contains(&created), "{}", out.show());
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("DELETE /v1/sys/mounts/{created} "))),
        "the mount was not removed: {lines:?}"
    );

    // Removal hangs too: the message names the mount and the command that removes it.
    let (addr, _) = stalling_mount_server(true);
    let mut cmd = support::vblast::vblast();
    cmd.env("VAULT_ADDR", &addr)
        .env("VAULT_TOKEN", "root")
        .args(["--op", "kv-read", "-n", "10", "--timeout", "1s"]);
    let out = run(cmd);
    out.assert_code(2);
    assert!(
        out.stderr.contains("is left on") && out.stderr.contains("vault secrets disable vblast-"),
        "{}",
        out.show()
    );
}

/// `--progress`: one plain line per second on stderr when it is not a terminal (CI logs);
/// none without it.
#[test]
fn progress_lines_for_logs() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let out = run(url_cmd(&["-c", "2", "-z", "3500ms", "--progress", &url]));
    out.assert_code(0);
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect();
    assert!(lines.len() >= 2, "{}", out.show());
    for l in &lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert!(
            f.len() == 8 && f[1].ends_with('s') && f[3] == "requests" && f[7] == "failed",
            "{l}"
        );
    }
    assert!(
        !out.stderr.contains('\r'),
        "plain lines, no terminal redraws"
    );
    let out = run(url_cmd(&["-c", "2", "-z", "2s", &url]));
    out.assert_code(0);
    assert!(!out.stderr.contains("progress"), "{}", out.show());
}
