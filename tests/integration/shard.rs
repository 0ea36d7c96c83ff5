//! Sharded runs end to end against nginx: one open-model schedule run as 4 shards started
//! together (`--shard i/4 --start-at`) and as one process give the same request count,
//! each shard exactly its share; `vblast report` merges the shards only when they are one
//! run's, every shard once; bad shard flags are one clear message. Vault operations that
//! create fixtures, against an OpenBao dev server: by default shard 0 sets the shared
//! fixture up, the others (started first) wait for its `ready` in the sync mount, shard 0
//! waits for every shard's `done` and removes everything (also when a shard never reports,
//! and at once on SIGTERM); a joiner stopped before `ready` still reports its end; a
//! joiner whose shard 0 never comes fails before its start;
//! mismatched `--external-setup` flags are one message; a killed shard 0's leftovers go
//! with `vblast cleanup`. With `--external-setup`: `vblast setup` once, the shards (started
//! first, so they wait), then `vblast cleanup` once.

use std::time::{Duration, SystemTime};

use crate::support;
use crate::support::figures::{strict_timing, u};
use crate::support::nginx::Nginx;
use crate::support::openbao::{OpenBao, mounts, server_state};
use crate::support::run::{run, spawn};
use crate::support::vblast::{url_cmd, vault_cmd};
use serde_json::Value;

fn start_in(secs: u64) -> String {
    humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(secs)).to_string()
}

fn read(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn four_shards_make_the_single_process_schedule() {
    let ng = Nginx::with_extra("access_log logs/access.log;");
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let log = ng.prefix().join("logs/access.log");
    let dir = tempfile::tempdir().unwrap();
    let (rate, n, c) = ("400", 800u64, "80");
    let at = start_in(4);
    let files: Vec<_> = (0..4)
        .map(|i| dir.path().join(format!("shard-{i}.json")))
        .collect();
    let running: Vec<_> = (0..4)
        .map(|i| {
            let mut cmd = url_cmd(&[
                "-R",
                rate,
                "-n",
                &n.to_string(),
                "-c",
                c,
                "-t",
                // Shards may run different thread counts: the split still holds.
                if i % 2 == 0 { "1" } else { "2" },
                "--shard",
                &format!("{i}/4"),
                "--start-at",
                &at,
                "--output",
                files[i].to_str().unwrap(),
                "--format",
                "json",
                &url,
            ]);
            if i == 3 {
                // This shard spreads its 20 connections over 2 worker processes.
                cmd.env("VBLAST_PROCESS_FDS", "116");
            }
            spawn(cmd)
        })
        .collect();
    for r in running {
        r.finish(Duration::from_secs(60)).assert_code(0);
    }
    let served = std::fs::read_to_string(&log).unwrap().lines().count() as u64;
    assert_eq!(served, n, "nginx served the shards' requests");
    let mut run_ids = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let j = read(f);
        let share = n / 4;
        assert_eq!(u(&j["requests"]), share, "shard {i}: {j:#}");
        assert_eq!(u(&j["ok"]), share);
        assert_eq!(
            u(&j["run"]["connections"]),
            20,
            "shard {i}'s share of -c 80"
        );
        if i == 3 {
            assert_eq!(u(&j["run"]["processes"]), 2, "{j:#}");
        }
        assert_eq!(u(&j["shard"]["index"]), i as u64);
        assert_eq!(u(&j["shard"]["count"]), 4);
        run_ids.push(j["shard"]["run_id"].as_str().unwrap().to_string());
        assert!(j["shard"]["clock_start"].is_string(), "{j:#}");
        if strict_timing() {
            assert_eq!(u(&j["shard"]["late_ms"]), 0);
        }
    }
    assert!(run_ids.iter().all(|r| r == &run_ids[0]), "{run_ids:?}");
    assert!(run_ids[0].starts_with("run-"), "{run_ids:?}");

    let merged_file = dir.path().join("merged.json");
    let mut args: Vec<&str> = vec!["report"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend([
        "--format",
        "json",
        "--output",
        merged_file.to_str().unwrap(),
    ]);
    let out = run(url_cmd(&args));
    out.assert_code(0);
    let merged = out.json();

    let single_file = dir.path().join("single.json");
    let out = run(url_cmd(&[
        "-R",
        rate,
        "-n",
        &n.to_string(),
        "-c",
        c,
        "-t",
        "2",
        "--output",
        single_file.to_str().unwrap(),
        "--format",
        "json",
        &url,
    ]));
    out.assert_code(0);
    let single = out.json();
    for key in ["requests", "ok"] {
        assert_eq!(u(&merged[key]), u(&single[key]), "{key}");
    }
    assert_eq!(u(&merged["requests"]), n);
    assert_eq!(u(&merged["latency_ms"]["count"]), n);
    assert_eq!(u(&merged["run"]["connections"]), 80);
    assert_eq!(merged["run"]["target_rate"], single["run"]["target_rate"]);
    let timeline_sum = |j: &Value| -> u64 {
        j["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| u(&r["requests"]))
            .sum()
    };
    assert_eq!(timeline_sum(&merged), n);
    if strict_timing() {
        // Same schedule: the same window (n / rate = 2 s), within a few per cent.
        let (m, s) = (
            merged["duration_s"].as_f64().unwrap(),
            single["duration_s"].as_f64().unwrap(),
        );
        assert!((m - s).abs() < 0.05 * s, "merged {m} s, single {s} s");
    }
}

/// Runs a closed-model shard `i` of `count` of run `id` and returns its file.
fn shard_file(dir: &std::path::Path, url: &str, id: &str, i: u64, count: u64) -> String {
    let f = dir.join(format!("{id}-{i}-of-{count}.json"));
    let out = run(url_cmd(&[
        "-c",
        "3",
        "-n",
        "30",
        "--shard",
        &format!("{i}/{count}"),
        "--run-id",
        id,
        "--output",
        f.to_str().unwrap(),
        "-q",
        url,
    ]));
    out.assert_code(0);
    f.display().to_string()
}

#[test]
fn merge_takes_one_runs_shards_each_once() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a: Vec<String> = (0..3).map(|i| shard_file(d, &url, "a", i, 3)).collect();
    let b0 = shard_file(d, &url, "b", 0, 3);
    let c0 = shard_file(d, &url, "a", 0, 2);
    let plain = d.join("plain.json");
    run(url_cmd(&[
        "-c",
        "1",
        "-n",
        "5",
        "-q",
        "--output",
        plain.to_str().unwrap(),
        &url,
    ]))
    .assert_code(0);
    let report = |files: &[&str]| {
        let mut args = vec!["report", "--format", "json"];
        args.extend_from_slice(files);
        run(url_cmd(&args))
    };
    // The whole run: 3 x share of -n 30.
    let out = report(&[&a[0], &a[1], &a[2]]);
    out.assert_code(0);
    assert_eq!(u(&out.json()["requests"]), 30);
    assert_eq!(u(&out.json()["run"]["connections"]), 3);

    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (vec![&a[0], &a[2]], vec!["shard 1 is missing", "3 shards"]),
        (vec![&a[0], &a[1], &a[1], &a[2]], vec!["given twice", &a[1]]),
        (vec![&a[0], &a[1], &b0], vec!["run ids a and b", &b0]),
        (vec![&a[0], &a[1], &c0], vec!["3 and 2 shards"]),
        (
            vec![&a[0], &a[1], &a[2], plain.to_str().unwrap()],
            vec!["is not a shard"],
        ),
    ];
    for (files, needles) in cases {
        let out = report(&files);
        out.assert_code(2);
        for needle in needles {
            assert!(
                out.stderr.contains(needle),
                "{files:?}: {needle:?} not in:\n{}",
                out.stderr
            );
        }
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}

#[test]
fn bad_shard_flags_are_one_clear_message() {
    let url = "http://127.0.0.1:9/x";
    let cases: &[(&[&str], &str)] = &[
        (&["--shard", "4/4", "--run-id", "x"], "out of range"),
        (&["--shard", "x", "--run-id", "x"], "I/N"),
        (&["--shard", "1/2"], "needs --start-at"),
        (
            &["--start-at", "2020-01-01T00:00:00Z"],
            "--start-at 2020-01-01T00:00:00Z is in the past",
        ),
        (&["--start-at", "soon"], "not an RFC 3339 instant"),
        (
            &["--shard", "0/2", "--run-id", "x", "--op", "cubbyhole-read"],
            "--no-setup",
        ),
        (&["--external-setup"], "apply to sharded runs"),
        (
            &["--shard", "0/2", "--run-id", "x", "--shards-wait", "0s"],
            "--shards-wait must be longer than zero",
        ),
    ];
    for (args, needle) in cases {
        let mut all = vec!["-n", "1"];
        all.extend_from_slice(args);
        all.push(url);
        let out = run(url_cmd(&all));
        out.assert_code(2);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
}

#[test]
fn shards_share_one_setup_and_one_cleanup() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let run_id = format!("fixture-test-{}", std::process::id());
    let op = [
        "--op",
        "kv-read:1,approle-login:1",
        "--secrets",
        "40",
        "--run-id",
        &run_id,
    ];
    // The shards start first: each waits for the fixture `vblast setup` is about to make.
    let shards: Vec<_> = (0..3)
        .map(|i| {
            let shard = format!("{i}/3");
            let mut args = vec![
                "-n",
                "150",
                "-c",
                "6",
                "--shard",
                &shard,
                "--format",
                "json",
                "--external-setup",
            ];
            args.extend_from_slice(&op);
            spawn(vault_cmd(&bao, &args))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let mut args = vec!["setup"];
    args.extend_from_slice(&op);
    let setup = run(vault_cmd(&bao, &args));
    setup.assert_code(0);
    let during = server_state(&bao);
    let new_mounts: Vec<&String> = (during.mounts.iter())
        .filter(|m| !before.mounts.contains(m))
        .collect();
    let new_auth: Vec<&String> = (during.auth.iter())
        .filter(|m| !before.auth.contains(m))
        .collect();
    assert_eq!(new_mounts.len(), 1, "{during:?}");
    assert_eq!(new_auth.len(), 1, "{during:?}");
    let path = new_auth[0].trim_end_matches('/').to_string();
    assert!(path.starts_with("vblast-approle-"), "{path}");
    let (_, role) = bao.api("GET", &format!("/v1/auth/{path}/role/vblast/role-id"), None);
    let role_id = serde_json::from_str::<Value>(&role).unwrap()["data"]["role_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut outs = vec![setup];
    let mut total = 0;
    for (i, s) in shards.into_iter().enumerate() {
        let out = s.finish(Duration::from_secs(120));
        out.assert_code(0);
        let j = out.json();
        assert_eq!(u(&j["requests"]), 50, "shard {i}: {}", out.show());
        assert_eq!(u(&j["ok"]), 50, "shard {i}: {}", out.show());
        total += u(&j["requests"]);
        outs.push(out);
    }
    assert_eq!(total, 150);
    // Every shard's secret_id is gone: the role has none left.
    let (st, ids) = bao.api(
        "LIST",
        &format!("/v1/auth/{path}/role/vblast/secret-id"),
        None,
    );
    assert!(st == 404 || !ids.contains("keys"), "{st} {ids}");
    // The fixture outlived the shards (with the identity entities their logins made on
    // its auth path, which go with it); one cleanup removes it.
    let fixtures = crate::support::openbao::fixtures_only;
    assert_eq!(fixtures(server_state(&bao)), fixtures(during));
    let mut args = vec!["cleanup"];
    args.extend_from_slice(&op);
    let cleanup = run(vault_cmd(&bao, &args));
    cleanup.assert_code(0);
    assert!(cleanup.stderr.contains(&path), "{}", cleanup.show());
    assert_eq!(server_state(&bao), before);
    outs.push(cleanup);
    // Nothing of the role's credentials was printed.
    for o in &outs {
        assert!(
            !o.stdout.contains(&role_id) && !o.stderr.contains(&role_id),
            "{}",
            o.show()
        );
    }
    // Operations whose fixture cannot be shared, and a setup without a run id: one message.
    let out = run(vault_cmd(
        &bao,
        &["setup", "--op", "cubbyhole-read", "--run-id", "x"],
    ));
    out.assert_code(2);
    assert!(out.stderr.contains("cubbyhole-read"), "{}", out.stderr);
    let out = run(vault_cmd(&bao, &["cleanup", "--op", "kv-read"]));
    out.assert_code(2);
    assert!(out.stderr.contains("--run-id"), "{}", out.stderr);
    assert_eq!(server_state(&bao), before);
}

const DEFAULT_OP: &str = "kv-read:80,kv-write:10,approle-login:10";

/// Shard `i` of `count` of run `run_id` over `DEFAULT_OP` (-n 150 -c 6 in all, 40
/// secrets unless `extra` says), writing `file`, with `extra` flags.
fn default_shard(
    bao: &OpenBao,
    run_id: &str,
    i: u64,
    count: u64,
    file: &std::path::Path,
    extra: &[&str],
) -> support::run::Running {
    let shard = format!("{i}/{count}");
    let mut args = vec![
        "-n",
        "150",
        "-c",
        "6",
        "--op",
        DEFAULT_OP,
        "--run-id",
        run_id,
        "--shard",
        &shard,
        "--format",
        "json",
        "--output",
        file.to_str().unwrap(),
    ];
    if !extra.contains(&"--secrets") {
        args.extend(["--secrets", "40"]);
    }
    args.extend_from_slice(extra);
    spawn(vault_cmd(bao, &args))
}

/// The sync mounts on the server (shard 0's rendezvous).
fn sync_mounts(bao: &OpenBao) -> Vec<String> {
    mounts(bao)
        .into_iter()
        .map(|(k, _)| k.trim_end_matches('/').to_string())
        .filter(|k| k.starts_with("vblast-sync-"))
        .collect()
}

#[test]
fn shard0_sets_up_waits_for_every_shard_and_cleans_up() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let run_id = format!("shard0-test-{}", std::process::id());
    let files: Vec<_> = (0..3)
        .map(|i| dir.path().join(format!("shard-{i}.json")))
        .collect();
    // Shards 1 and 2 first: they wait for shard 0's `ready`. Shard 2 starts its clock
    // seconds after shard 0's own load has ended, so shard 0 must wait for it: removing
    // the fixture earlier would fail shard 2's requests.
    let at = start_in(8);
    let joiners: Vec<_> = (1..3)
        .map(|i| {
            let extra: &[&str] = if i == 2 { &["--start-at", &at] } else { &[] };
            default_shard(&bao, &run_id, i, 3, &files[i as usize], extra)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(sync_mounts(&bao).is_empty(), "nothing before shard 0");
    let lead = default_shard(&bao, &run_id, 0, 3, &files[0], &[]);
    let mut outs = Vec::new();
    for (i, s) in joiners.into_iter().enumerate() {
        let out = s.finish(Duration::from_secs(120));
        out.assert_code(0);
        outs.push((i + 1, out));
    }
    let lead = lead.finish(Duration::from_secs(120));
    lead.assert_code(0);
    for i in 1..3 {
        assert!(
            lead.stderr.contains(&format!(
                "shard {i} ended (completed: 50 requests, 50 ok, exit 0)"
            )),
            "{}",
            lead.show()
        );
    }
    assert!(
        lead.stderr.contains("every shard has ended"),
        "{}",
        lead.show()
    );
    assert!(
        lead.stderr.contains("removed sync mount 'vblast-sync-"),
        "{}",
        lead.show()
    );
    outs.push((0, lead));
    for (i, f) in files.iter().enumerate() {
        let j = read(f);
        assert_eq!(u(&j["requests"]), 50, "shard {i}: {j:#}");
        assert_eq!(u(&j["ok"]), 50, "shard {i}: {j:#}");
    }
    // One report over the three files.
    let mut args = vec!["report", "--format", "json"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let merged = run(url_cmd(&args));
    merged.assert_code(0);
    assert_eq!(u(&merged.json()["requests"]), 150, "{}", merged.show());
    assert_eq!(u(&merged.json()["ok"]), 150, "{}", merged.show());
    // Mounts (the sync mount too), auth paths (with every AppRole secret_id on them) and
    // policies are as before the run.
    assert_eq!(server_state(&bao), before);
    for (i, o) in &outs {
        assert!(!o.stderr.contains("panicked"), "shard {i}: {}", o.show());
    }
}

#[test]
fn shard0_cleans_up_when_a_shard_never_reports() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let run_id = format!("shard0-missing-{}", std::process::id());
    let f = |i: u64| dir.path().join(format!("shard-{i}.json"));
    // Shard 2 of 3 is never started.
    let joiner = default_shard(&bao, &run_id, 1, 3, &f(1), &[]);
    let lead = default_shard(&bao, &run_id, 0, 3, &f(0), &["--shards-wait", "3s"]);
    let lead = lead.finish(Duration::from_secs(120));
    joiner.finish(Duration::from_secs(120)).assert_code(0);
    // Its own result: every request of its share succeeded.
    lead.assert_code(0);
    assert_eq!(u(&read(&f(0))["ok"]), 50, "{}", lead.show());
    assert!(
        lead.stderr.contains("shard 2 of run") && lead.stderr.contains("never reported"),
        "{}",
        lead.show()
    );
    assert!(lead.stderr.contains("shard 1 ended"), "{}", lead.show());
    assert_eq!(server_state(&bao), before, "{}", lead.show());
}

#[test]
fn sigterm_during_shard0s_wait_cleans_up_at_once() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let run_id = format!("shard0-term-{}", std::process::id());
    let f = |i: u64| dir.path().join(format!("shard-{i}.json"));
    let joiner = default_shard(&bao, &run_id, 1, 3, &f(1), &[]);
    let lead = default_shard(&bao, &run_id, 0, 3, &f(0), &["--shards-wait", "5m"]);
    let joined = joiner.finish(Duration::from_secs(120));
    joined.assert_code(0);
    // Shard 0 writes its results before it waits for shard 2 (never started).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !f(0).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "no results from shard 0"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(u(&read(&f(0))["ok"]), 50);
    // The rendezvous: `ready`, and shard 1's `done` with its totals and nothing secret.
    let sync = sync_mounts(&bao);
    assert_eq!(sync.len(), 1, "{sync:?}");
    let (st, ready) = bao.api("GET", &format!("/v1/{}/ready", sync[0]), None);
    assert_eq!(st, 200, "{ready}");
    let (st, done) = bao.api("GET", &format!("/v1/{}/done/1", sync[0]), None);
    assert_eq!(st, 200, "{done}");
    let done: Value = serde_json::from_str(&done).unwrap();
    let mut keys: Vec<&String> = done["data"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["ended", "exit", "ok", "requests"], "{done}");
    assert_eq!(done["data"]["ended"], "completed", "{done}");
    assert_eq!(u(&done["data"]["requests"]), 50, "{done}");
    assert_eq!(u(&done["data"]["ok"]), 50, "{done}");
    let (st, none) = bao.api("GET", &format!("/v1/{}/done/2", sync[0]), None);
    assert_eq!(st, 404, "{none}");
    // Shards 0 and 1 destroyed their own secret_ids; the role has none left.
    let (_, auth) = bao.api("GET", "/v1/sys/auth", None);
    let auth: Value = serde_json::from_str(&auth).unwrap();
    let path = auth["data"]
        .as_object()
        .unwrap()
        .keys()
        .find(|k| k.starts_with("vblast-approle-"))
        .expect("the shared approle path")
        .trim_end_matches('/')
        .to_string();
    let (st, ids) = bao.api(
        "LIST",
        &format!("/v1/auth/{path}/role/vblast/secret-id"),
        None,
    );
    assert!(st == 404 || !ids.contains("keys"), "{st} {ids}");
    unsafe {
        libc::kill(lead.child.id() as libc::pid_t, libc::SIGTERM);
    }
    let lead = lead.finish(Duration::from_secs(60));
    lead.assert_code(143);
    assert!(
        lead.stderr.contains("removing the shared fixture now"),
        "{}",
        lead.show()
    );
    assert_eq!(server_state(&bao), before, "{}", lead.show());
}

/// A joiner stopped while it still waits for `ready` (shard 0 is setting up) says so in
/// its `done` marker, so shard 0 does not wait for it until its bound (5 minutes here).
#[test]
fn a_joiner_stopped_before_ready_still_reports_its_end() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let run_id = format!("shard0-early-{}", std::process::id());
    let f = |i: u64| dir.path().join(format!("shard-{i}.json"));
    // Seeding 20,000 secrets keeps shard 0 in its setup for seconds, between the sync
    // mount and `ready`.
    let joiner = default_shard(&bao, &run_id, 1, 2, &f(1), &["--secrets", "20000"]);
    let lead = default_shard(
        &bao,
        &run_id,
        0,
        2,
        &f(0),
        &["--shards-wait", "5m", "--secrets", "20000"],
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let sync = loop {
        if let Some(m) = sync_mounts(&bao).pop() {
            break m;
        }
        assert!(std::time::Instant::now() < deadline, "no sync mount");
        std::thread::sleep(Duration::from_millis(50));
    };
    let (st, _) = bao.api("GET", &format!("/v1/{sync}/ready"), None);
    assert_eq!(st, 404, "shard 0 still sets up");
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    unsafe {
        libc::kill(joiner.child.id() as libc::pid_t, libc::SIGTERM);
    }
    let joined = joiner.finish(Duration::from_secs(60));
    joined.assert_code(143);
    let (st, done) = bao.api("GET", &format!("/v1/{sync}/done/1"), None);
    assert_eq!(st, 200, "{done}: {}", joined.show());
    let done: Value = serde_json::from_str(&done).unwrap();
    assert_eq!(done["data"]["ended"], "signal", "{done}");
    assert_eq!(u(&done["data"]["requests"]), 0, "{done}");
    assert_eq!(u(&done["data"]["exit"]), 143, "{done}");
    let lead = lead.finish(Duration::from_secs(120));
    lead.assert_code(0);
    assert!(
        lead.stderr
            .contains("shard 1 ended (signal: 0 requests, 0 ok, exit 143)")
            && lead.stderr.contains("every shard has ended"),
        "{}",
        lead.show()
    );
    assert_eq!(server_state(&bao), before, "{}", lead.show());
}

#[test]
fn joiner_without_shard0_fails_before_its_start() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let at = start_in(4);
    let out = default_shard(
        &bao,
        "no-shard0",
        1,
        2,
        &dir.path().join("shard-1.json"),
        &["--start-at", &at],
    )
    .finish(Duration::from_secs(60));
    out.assert_code(2);
    for needle in [
        "shard 0 of run no-shard0 has not marked the shared fixture ready",
        "sync mount 'vblast-sync-",
        &format!("by the start instant {at}"),
        "--external-setup",
    ] {
        assert!(out.stderr.contains(needle), "{needle:?}: {}", out.show());
    }
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.show());
    assert!(!dir.path().join("shard-1.json").exists());
    assert_eq!(server_state(&bao), before);
}

#[test]
fn mismatched_external_setup_and_a_killed_shard0() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let f = |i: u64| dir.path().join(format!("shard-{i}.json"));
    // Shard 1 with --external-setup, shard 0 without: shard 1 says so and tells shard 0
    // it ended, so shard 0 does not wait for it.
    let run_id = format!("shard0-mismatch-{}", std::process::id());
    let joiner = default_shard(&bao, &run_id, 1, 2, &f(1), &["--external-setup"]);
    let lead = default_shard(&bao, &run_id, 0, 2, &f(0), &["--shards-wait", "5m"]);
    let joined = joiner.finish(Duration::from_secs(180));
    joined.assert_code(2);
    assert!(
        joined
            .stderr
            .contains("this shard has --external-setup, but shard 0"),
        "{}",
        joined.show()
    );
    let lead = lead.finish(Duration::from_secs(120));
    lead.assert_code(0);
    assert!(
        lead.stderr
            .contains("shard 1 ended (failed: 0 requests, 0 ok, exit 2)"),
        "{}",
        lead.show()
    );
    assert_eq!(server_state(&bao), before);

    // Shard 0 killed -9 while it waits: `vblast cleanup` with the run's flags removes its
    // fixture and the sync mount.
    let run_id = format!("shard0-killed-{}", std::process::id());
    let mut lead = default_shard(&bao, &run_id, 0, 2, &f(2), &["--shards-wait", "5m"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !f(2).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "no results from shard 0"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    lead.child.kill().unwrap();
    lead.child.wait().unwrap();
    assert_eq!(sync_mounts(&bao).len(), 1);
    assert_ne!(server_state(&bao), before);
    let cleanup = run(vault_cmd(
        &bao,
        &[
            "cleanup",
            "--run-id",
            &run_id,
            "--op",
            DEFAULT_OP,
            "--secrets",
            "40",
        ],
    ));
    cleanup.assert_code(0);
    assert!(
        cleanup.stderr.contains("removed sync mount 'vblast-sync-"),
        "{}",
        cleanup.show()
    );
    assert_eq!(server_state(&bao), before, "{}", cleanup.show());
}
