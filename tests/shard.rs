//! Sharded runs end to end against nginx: one open-model schedule run as 4 shards started
//! together (`--shard i/4 --start-at`) and as one process give the same request count,
//! each shard exactly its share; `vblast report` merges the shards only when they are one
//! run's, every shard once; bad shard flags are one clear message. Vault operations that
//! create fixtures: `vblast setup` once, the shards (started first, so they wait), then
//! `vblast cleanup` once, against an OpenBao dev server.

mod common;

use std::time::{Duration, SystemTime};

use common::run::{mounts, run, spawn, strict_timing, u, url_cmd, vault_cmd};
use common::{Nginx, OpenBao};
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
            &["--shard", "0/2", "--run-id", "x", "--op", "jwt-login"],
            "--no-setup",
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

/// The names under `data` of a sys/ listing (mounts, auth paths), and the ACL policies.
fn server_state(bao: &OpenBao) -> (Vec<String>, Vec<String>, String) {
    let (st, auth) = bao.api("GET", "/v1/sys/auth", None);
    assert_eq!(st, 200, "{auth}");
    let auth: Value = serde_json::from_str(&auth).unwrap();
    let mut auth: Vec<String> = auth["data"].as_object().unwrap().keys().cloned().collect();
    auth.sort();
    let (st, policies) = bao.api("GET", "/v1/sys/policies/acl?list=true", None);
    assert_eq!(st, 200, "{policies}");
    let policies: Value = serde_json::from_str(&policies).unwrap();
    let mut m: Vec<String> = mounts(bao).into_iter().map(|(k, _)| k).collect();
    m.sort();
    (m, auth, policies["data"]["keys"].to_string())
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
                "-n", "150", "-c", "6", "--shard", &shard, "--format", "json",
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
    let new_mounts: Vec<&String> = during.0.iter().filter(|m| !before.0.contains(m)).collect();
    let new_auth: Vec<&String> = during.1.iter().filter(|m| !before.1.contains(m)).collect();
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
    // The fixture outlived the shards; one cleanup removes it.
    assert_eq!(server_state(&bao), during);
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
        &["setup", "--op", "jwt-login", "--run-id", "x"],
    ));
    out.assert_code(2);
    assert!(out.stderr.contains("jwt-login"), "{}", out.stderr);
    let out = run(vault_cmd(&bao, &["cleanup", "--op", "kv-read"]));
    out.assert_code(2);
    assert!(out.stderr.contains("--run-id"), "{}", out.stderr);
    assert_eq!(server_state(&bao), before);
}
