//! `vblast profile` of real OpenBao audit logs (issue 37, item 1): a known vblast mix run
//! with `--audit-path` gives each operation's count exactly as the run's results file
//! does; a log made with the `bao` CLI and plain HTTP calls, with operations vblast does not
//! map, gives the unmapped count, and prints no path (only shapes) without `--show-paths`,
//! no HMAC'd value and no accessor ever; the JSON validates against its schema.

use crate::support::openbao::{OpenBao, bao_binary};
use crate::support::run::run;
use crate::support::vblast::{scrub_env, url_cmd, vault_cmd};
use serde_json::Value;
use std::path::Path;

/// `vblast profile --format json LOG` as JSON (exit 0), saved beside the log and
/// validated against docs/schema/profile.schema.json.
fn profile_json(log: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["profile", "--format", "json", log.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = run(url_cmd(&args));
    out.assert_code(0);
    assert!(!out.stdout.contains("hmac-sha256"), "{}", out.show());
    let saved = log.with_extension("profile.json");
    std::fs::write(&saved, &out.stdout).unwrap();
    crate::schema::assert_valid("profile.schema.json", &[&saved]);
    out.json()
}

/// The profile's count of operation `name` (0 when absent).
fn count(profile: &Value, name: &str) -> u64 {
    profile["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == name)
        .map_or(0, |o| o["requests"].as_u64().unwrap())
}

/// The mix of the issue, run with `--audit-path` (the device is enabled after the setup,
/// so the setup's own requests are not in the log; what the run adds beside its load, the
/// server sampler's sys/ reads, maps to sys-other and is shown apart, and its check of its
/// tokens' accessors is counted from the log): each operation of the mix counts in the
/// profile exactly what the results file counts.
#[test]
fn a_vblast_mix_is_profiled_with_the_counts_of_its_results_file() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let results = dir.path().join("results.json");
    let mix = "kv-read:3,kv-write:1,kv-list:1,approle-login:1,userpass-login:1,transit-encrypt:1,token-lookup:1";
    let out = run(vault_cmd(
        &bao,
        &[
            "-c",
            "2",
            "-n",
            "450",
            "--op",
            mix,
            "--secrets",
            "50",
            "--audit-path",
            log.to_str().unwrap(),
            "--output",
            results.to_str().unwrap(),
        ],
    ));
    out.assert_code(0);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    let profile = profile_json(&log, &[]);
    let ops = saved["ops"].as_array().unwrap();
    assert_eq!(ops.len(), 7, "{saved}");
    // vblast's own check of its tokens (`auth/token/lookup-accessor`, session/fixtures/
    // server.rs) after the load is a token lookup too, made with the run's token: the
    // log's own count of them is added to the run's token-lookup.
    let own_lookups = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "request")
        .filter(|e| e["request"]["path"] == "auth/token/lookup-accessor")
        .count() as u64;
    // The profile's fast line reader (`profile::scan`) takes every line of this real log
    // and reads it as serde_json does (it panics on any difference).
    let bytes = std::fs::read(&log).unwrap();
    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let taken = vblast::profile::scan::agrees_with_serde(line);
        assert!(taken, "declined: {}", String::from_utf8_lossy(line));
    }
    let mut in_mix = 0;
    for op in ops {
        let name = op["name"].as_str().unwrap();
        let want = op["requests"].as_u64().unwrap();
        assert!(want > 0, "{name}");
        let own = if name == "token-lookup" {
            own_lookups
        } else {
            0
        };
        assert_eq!(count(&profile, name), want + own, "{name}:\n{profile:#}");
        in_mix += want + own;
    }
    let total = profile["requests"].as_u64().unwrap();
    let others: u64 = profile["operations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| !ops.iter().any(|r| r["name"] == o["name"]))
        .map(|o| o["requests"].as_u64().unwrap())
        .sum::<u64>()
        + profile["unmapped"]["requests"].as_u64().unwrap();
    assert_eq!(total, in_mix + others, "{profile:#}");
    // Every request with a time is in the rate curve; the logins made tokens.
    let curve: u64 = profile["rate"]["curve"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(curve, total);
    let logins = count(&profile, "approle-login") + count(&profile, "userpass-login");
    assert_eq!(profile["tokens"]["logins"].as_u64(), Some(logins));
    assert!(
        profile["problems"].as_array().unwrap().is_empty(),
        "{profile:#}"
    );
    for op in profile["operations"].as_array().unwrap() {
        if ops.iter().any(|r| r["name"] == op["name"]) {
            assert!(op["server_ms"]["count"].as_u64().unwrap() > 0, "{op}");
            assert_eq!(op["vblast_op"], true, "{op}");
        }
    }
    // The text and the page say the same, and name no accessor or HMAC.
    let page = dir.path().join("profile.html");
    let text = run(url_cmd(&[
        "profile",
        log.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]));
    text.assert_code(0);
    assert!(
        text.stdout.contains(&format!("Requests: {total} ")),
        "{}",
        text.show()
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg") && html.contains("kv-read"));
    for shown in [&text.stdout, &html] {
        assert!(!shown.contains("hmac-sha256"));
    }
}

/// A log vblast did not make: the `bao` CLI and plain HTTP calls against a server with a
/// declared file audit device, some of them operations vblast does not map (a transit key,
/// an approle role, kv's config) under names that could be secrets. The unmapped count is
/// theirs; without --show-paths no such name is printed, with it they are.
#[test]
fn a_log_made_by_hand_gives_its_unmapped_count_and_no_path() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("declared.log");
    let bao = OpenBao::start_with_config(&format!(
        "audit \"file\" \"declared\" {{\n  options {{\n    file_path = \"{}\"\n  }}\n}}\n",
        log.display()
    ));
    let cli_in = |namespace: &str, args: &[&str]| {
        let mut cmd = std::process::Command::new(bao_binary());
        scrub_env(&mut cmd);
        if !namespace.is_empty() {
            cmd.env("VAULT_NAMESPACE", namespace);
        }
        let out = cmd
            .env("VAULT_ADDR", &bao.addr)
            .env("VAULT_TOKEN", &bao.token)
            .env("HOME", dir.path())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "bao {args:?}: {out:?}");
    };
    let cli = |args: &[&str]| cli_in("", args);
    // One mapped request, so that the log has an entry; what the dev server wrote at its
    // start is counted before the calls of the test.
    let (s, b) = bao.api("GET", "/v1/sys/mounts", None);
    assert_eq!(s, 200, "{b}");
    let baseline = profile_json(&log, &[]);
    let unmapped_before = baseline["unmapped"]["requests"].as_u64().unwrap();
    cli(&["secrets", "enable", "transit"]);
    cli(&["auth", "enable", "approle"]);
    // Unmapped: 3 transit key writes, 2 approle role writes, 1 kv config read (and one
    // user written in a namespace below).
    for k in ["payroll-key-1", "payroll-key-2", "payroll-key-3"] {
        cli(&["write", "-f", &format!("transit/keys/{k}")]);
    }
    for _ in 0..2 {
        cli(&["write", "auth/approle/role/payroll-role", "token_ttl=1m"]);
    }
    let (status, body) = bao.api("GET", "/v1/secret/config", None);
    assert_eq!(status, 200, "{body}");
    // Mapped: kv writes and reads, a transit encryption, in a namespace too.
    for i in 0..4 {
        let (s, b) = bao.api(
            "POST",
            &format!("/v1/secret/data/payroll-db-{i}"),
            Some(r#"{"data":{"password":"hunter2"}}"#),
        );
        assert_eq!(s, 200, "{b}");
        let (s, b) = bao.api("GET", &format!("/v1/secret/data/payroll-db-{i}"), None);
        assert_eq!(s, 200, "{b}");
    }
    cli(&[
        "write",
        "transit/encrypt/payroll-key-1",
        "plaintext=aGVsbG8=",
    ]);
    bao.namespace("team-a");
    let (s, b) = bao.api_in("team-a", "GET", "/v1/sys/mounts");
    assert_eq!(s, 200, "{b}");
    // In a namespace: a kv mount written and read, a userpass user (unmapped: +1) who logs in.
    let in_ns = |args: &[&str]| cli_in("team-a", args);
    in_ns(&["secrets", "enable", "-path=team-kv", "kv-v2"]);
    in_ns(&["kv", "put", "team-kv/payroll-db", "password=hunter2"]);
    in_ns(&["kv", "get", "team-kv/payroll-db"]);
    in_ns(&["auth", "enable", "userpass"]);
    in_ns(&[
        "write",
        "auth/userpass/users/payroll-admin",
        "password=hunter2",
    ]);
    in_ns(&[
        "login",
        "-method=userpass",
        "username=payroll-admin",
        "password=hunter2",
    ]);
    let profile = profile_json(&log, &[]);
    let team = |mount: &str| {
        profile["mounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["namespace"] == "team-a/" && m["mount"] == mount)
            .map(|m| m["operations"].to_string())
            .unwrap_or_else(|| panic!("no team-a/ {mount}: {profile:#}"))
    };
    assert!(team("team-kv/").contains("kv-write") && team("team-kv/").contains("kv-read"));
    assert!(
        team("auth/userpass/").contains("userpass-login"),
        "{profile:#}"
    );
    assert_eq!(
        profile["unmapped"]["requests"].as_u64().unwrap() - unmapped_before,
        7,
        "{profile:#}"
    );
    assert!(count(&profile, "kv-write") >= 4 && count(&profile, "kv-read") >= 4);
    assert!(count(&profile, "transit-encrypt") >= 1);
    let namespaces: Vec<&str> = profile["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["namespace"].as_str().unwrap())
        .collect();
    assert!(namespaces.contains(&"team-a/"), "{namespaces:?}");
    let shapes = profile["unmapped"]["shapes"].to_string();
    assert!(shapes.contains("transit/keys/<path>"), "{shapes}");
    assert!(shapes.contains("auth/approle/role/<path>"), "{shapes}");
    let text = run(url_cmd(&["profile", log.to_str().unwrap()]));
    text.assert_code(0);
    for shown in [&text.stdout, &text.stderr, &profile.to_string()] {
        assert!(!shown.contains("payroll"), "{shown}");
        assert!(
            !shown.contains("hmac-sha256") && !shown.contains("hunter2"),
            "{shown}"
        );
    }
    let with = run(url_cmd(&["profile", "--show-paths", log.to_str().unwrap()]));
    with.assert_code(0);
    assert!(
        with.stdout.contains("transit/keys/payroll-key-1"),
        "{}",
        with.show()
    );
    assert!(!with.stdout.contains("hmac-sha256"));
}

/// Bad input through the command: a log with a non-JSON line and a cut last line is
/// profiled, each problem said with its line on stderr (exit 0); an empty log, or one
/// that is not there, is one message and exit 2.
#[test]
fn bad_input_is_said_with_its_line_and_an_empty_log_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = r#"{"time":"2026-12-05T08:00:00.1Z","type":"request","request":{"id":"1","operation":"read","mount_point":"secret/","mount_type":"kv","path":"secret/data/a"}}"#;
    let log = dir.path().join("bad.log");
    std::fs::write(&log, format!("{good}\nnot json\n{}", &good[..30])).unwrap();
    let out = run(url_cmd(&["profile", log.to_str().unwrap()]));
    out.assert_code(0);
    assert!(out.stderr.contains("bad.log:2: not JSON"), "{}", out.show());
    assert!(
        out.stderr.contains("bad.log:3: the last line is cut short"),
        "{}",
        out.show()
    );
    assert!(out.stdout.contains("Requests: 1 "), "{}", out.show());
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    let out = run(url_cmd(&["profile", empty.to_str().unwrap()]));
    out.assert_code(2);
    assert!(
        out.stderr.contains("no audit entry could be read"),
        "{}",
        out.show()
    );
    let out = run(url_cmd(&[
        "profile",
        dir.path().join("gone.log").to_str().unwrap(),
    ]));
    out.assert_code(2);
    assert!(
        out.stderr.contains("cannot read the audit log"),
        "{}",
        out.show()
    );
}

/// A known mix run in two namespaces (one run each, the server's own file audit device
/// on): the profile gives each namespace's requests of each operation exactly as that
/// run's results file does, both namespaces by name, and each namespace's kv mount with
/// the distinct paths its run read.
#[test]
fn a_mix_run_in_two_namespaces_is_profiled_per_namespace() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    bao.audit_to_file(&log);
    let mix = "kv-read:3,kv-list:1,approle-login:1,transit-encrypt:1";
    let mut runs = Vec::new();
    for (ns, secrets, n) in [("team-a", "12", "240"), ("team-b", "30", "360")] {
        bao.namespace(ns);
        let results = dir.path().join(format!("{ns}.json"));
        let out = run(vault_cmd(
            &bao,
            &[
                "-c",
                "2",
                "-n",
                n,
                "--namespace",
                ns,
                "--op",
                mix,
                "--secrets",
                secrets,
                "--output",
                results.to_str().unwrap(),
                "-q",
            ],
        ));
        out.assert_code(0);
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
        runs.push((format!("{ns}/"), saved, secrets.parse::<u64>().unwrap()));
    }
    bao.audit_off();
    let profile = profile_json(&log, &[]);
    let names: Vec<&str> = profile["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["namespace"].as_str().unwrap())
        .collect();
    for (ns, saved, secrets) in &runs {
        assert!(names.contains(&ns.as_str()), "{ns}: {names:?}");
        let mounts: Vec<&Value> = profile["mounts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["namespace"] == ns.as_str())
            .collect();
        let in_ns = |op: &str| -> u64 {
            mounts
                .iter()
                .flat_map(|m| m["operations"].as_array().unwrap())
                .filter(|o| o["name"] == op)
                .map(|o| o["requests"].as_u64().unwrap())
                .sum()
        };
        // Setup reads one secret of each kv mount it seeds, before the run's start.
        let started = saved["started_at"].as_str().unwrap();
        let setup_reads = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["type"] == "request" && e["time"].as_str().unwrap() < started)
            .filter(|e| e["request"]["namespace"]["path"] == ns.as_str())
            .filter(|e| e["request"]["mount_type"] == "kv" && e["request"]["operation"] == "read")
            .count() as u64;
        for op in saved["ops"].as_array().unwrap() {
            let name = op["name"].as_str().unwrap();
            let want = op["requests"].as_u64().unwrap();
            assert!(want > 0, "{ns} {name}");
            let setup = if name == "kv-read" { setup_reads } else { 0 };
            assert_eq!(in_ns(name), want + setup, "{ns} {name}:\n{profile:#}");
        }
        // Its kv mount: the secrets its setup wrote (and read), its list's path or two.
        // (the kv-list fixture's mount is read once, by setup)
        let reads = |m: &Value| -> u64 {
            m["operations"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| o["name"] == "kv-read")
                .map(|o| o["requests"].as_u64().unwrap())
                .sum()
        };
        let kv = mounts
            .iter()
            .filter(|m| m["mount_type"] == "kv")
            .max_by_key(|m| reads(m))
            .unwrap();
        let distinct = kv["distinct_paths"].as_u64().unwrap();
        assert!(
            (*secrets..=secrets + 3).contains(&distinct),
            "{ns}: {distinct} distinct paths for {secrets} secrets"
        );
    }
}
