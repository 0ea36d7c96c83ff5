//! Workload files (issue 37, item 2): a real OpenBao audit log profiled into a workload file
//! (valid against docs/schema/workload.schema.json), run with `vblast run --workload` at
//! `--scale 1`, `--scale 2` and `--speed 10` against an OpenBao dev server: the achieved mix
//! is the file's shares (within sampling error: the mix is picked at random by weight), the
//! totals are the file's requests times the scale, and nothing is left on the server. A
//! file naming an operation vblast does not have runs the rest with a note; bad scales,
//! speeds and files are one message and exit 2. Counts and shares only, never timings.

use crate::support::openbao::{OpenBao, server_state};
use crate::support::run::run;
use crate::support::vblast::{url_cmd, vault_cmd};
use serde_json::{Value, json};
use std::path::Path;

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// (name, requests) of each entry of `list` (a results file's `ops`, a workload's `mix`).
fn named_requests(list: &Value) -> Vec<(String, u64)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["name"].as_str().unwrap().to_string(),
                o["requests"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// (name, requests) of each operation of a results file.
fn ops_of(results: &Value) -> Vec<(String, u64)> {
    named_requests(&results["ops"])
}

/// (name, requests) of each operation of a workload file's mix.
fn mix_of(file: &Value) -> Vec<(String, u64)> {
    named_requests(&file["mix"])
}

/// `vblast run --workload W` with `extra` into a results file: its operations' counts.
/// `vblast profile LOG --workload DIR/w.json`, checked against its schema: the file.
fn workload_of(log: &Path, dir: &Path) -> std::path::PathBuf {
    let w = dir.join("w.json");
    run(url_cmd(&[
        "profile",
        log.to_str().unwrap(),
        "--workload",
        w.to_str().unwrap(),
    ]))
    .assert_code(0);
    crate::schema::assert_valid("workload.schema.json", &[&w]);
    w
}

fn run_workload(bao: &OpenBao, w: &Path, results: &Path, extra: &[&str]) -> Vec<(String, u64)> {
    let mut args = vec![
        "run",
        "--workload",
        w.to_str().unwrap(),
        "-c",
        "8",
        "--output",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run(vault_cmd(bao, &args));
    out.assert_code(0);
    assert!(!out.stderr.contains("is left"), "{}", out.show());
    ops_of(&read_json(results))
}

#[test]
fn a_profiled_log_runs_at_its_mix_scaled_and_compressed_with_nothing_left() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    run(vault_cmd(
        &bao,
        &[
            "--op",
            "kv-read:3,kv-write:1,kv-list:1",
            "-R",
            "25",
            "-z",
            "4s",
            "-c",
            "4",
            "--secrets",
            "20",
            "--audit-path",
            log.to_str().unwrap(),
        ],
    ))
    .assert_code(0);
    let w = workload_of(&log, dir.path());
    let file = read_json(&w);
    let text = std::fs::read_to_string(&w).unwrap();
    assert!(
        !text.contains("hmac-sha256") && !text.contains("/s1"),
        "{text}"
    );
    let mix = mix_of(&file);
    for name in ["kv-read", "kv-write", "kv-list"] {
        assert!(mix.iter().any(|(n, _)| n == name), "{file:#}");
    }
    let curve: u64 = file["rate"]["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(curve, file["source"]["requests"].as_u64().unwrap());
    assert_eq!(file["rate"]["step_s"], 1);
    let recorded: u64 = mix.iter().map(|m| m.1).sum();
    let before = server_state(&bao);
    for (i, (extra, scale)) in [
        (&[][..], 1),
        (&["--scale", "2"][..], 2),
        (&["--speed", "10"][..], 1),
    ]
    .into_iter()
    .enumerate()
    {
        let results = dir.path().join(format!("r{i}.json"));
        let ran = run_workload(&bao, &w, &results, extra);
        let total: u64 = ran.iter().map(|r| r.1).sum();
        // The schedule places the recorded requests times the scale (its request 0 at the
        // origin: one more when the last lands a rounding error before the end).
        let want = recorded * scale;
        assert!(
            total == want || total == want + 1,
            "{extra:?}: {total} sent, {want} wanted: {ran:?}"
        );
        for (name, n) in &ran {
            let Some((_, r)) = mix.iter().find(|m| &m.0 == name) else {
                panic!("{name} is not in the workload's mix {mix:?}");
            };
            let p = *r as f64 / recorded as f64;
            let got = *n as f64 / total as f64;
            let sigma = (p * (1.0 - p) / total as f64).sqrt();
            assert!(
                (got - p).abs() <= 5.0 * sigma + 0.01,
                "{extra:?} {name}: {got:.3} of the run, {p:.3} of the log: {ran:?}"
            );
        }
        assert_eq!(server_state(&bao), before, "{extra:?}");
    }
}

/// A hand-written file: a curve of 20 requests over 2 s, 10 of them kv-read, 5 of an
/// operation vblast does not have, 5 unmapped.
fn hand_written(mix: Value) -> Value {
    json!({
        "workload_version": 1,
        "source": {"files": ["a.log"], "first": null, "last": null, "requests": 20},
        "mix": mix,
        "not_run": {"note": "", "operations": [], "unmapped_requests": 5, "unmapped_share": 0.25},
        "rate": {"step_s": 1, "rule": "", "start": null, "requests": [10, 10]},
        "fixtures": [{"namespace": "root", "mount": "secret/", "mount_type": "kv",
                      "distinct_paths": 4, "estimated": false}],
        "namespaces": [{"namespace": "root", "requests": 20}]
    })
}

#[test]
fn an_operation_vblast_does_not_have_is_named_and_the_rest_runs() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.json");
    let file = hand_written(json!([
        {"name": "kv-read", "requests": 10, "share": 0.5},
        {"name": "aws-creds", "requests": 5, "share": 0.25}
    ]));
    std::fs::write(&w, file.to_string()).unwrap();
    crate::schema::assert_valid("workload.schema.json", &[&w]);
    let before = server_state(&bao);
    let results = dir.path().join("r.json");
    let mut args = vec![
        "run",
        "--workload",
        w.to_str().unwrap(),
        "-c",
        "2",
        "--output",
        results.to_str().unwrap(),
    ];
    let out = run(vault_cmd(&bao, &args));
    out.assert_code(0);
    assert!(
        out.stderr
            .contains("operation 'aws-creds' of the workload (5 requests, 25.0%) is not run"),
        "{}",
        out.show()
    );
    assert!(
        out.stderr.contains("unmapped requests (25.0%)"),
        "{}",
        out.show()
    );
    // 10 of the 20 requests run: 10 scheduled (11 when the last lands on the end).
    let ran = ops_of(&read_json(&results));
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert!(
        ran[0].0 == "kv-read" && (10..=11).contains(&ran[0].1),
        "{ran:?}"
    );
    assert_eq!(server_state(&bao), before);
    // None left: refused before anything is made.
    let none = hand_written(json!([{"name": "aws-creds", "requests": 5, "share": 0.25}]));
    std::fs::write(&w, none.to_string()).unwrap();
    args.truncate(3);
    let out = run(vault_cmd(&bao, &args));
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("no operation of the workload is one vblast runs")
            && out.stderr.contains("aws-creds"),
        "{}",
        out.show()
    );
    assert_eq!(server_state(&bao), before);
}

#[test]
fn bad_scales_speeds_and_files_are_one_message_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.json");
    let good = hand_written(json!([{"name": "kv-read", "requests": 10, "share": 0.5}]));
    std::fs::write(&w, good.to_string()).unwrap();
    let ws = w.to_str().unwrap();
    let addr = ["--address", "http://127.0.0.1:1", "--token", "t"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--scale", "0"], "--scale 0: must be above 0"),
        (vec!["--scale", "-2"], "--scale -2: must be above 0"),
        (vec!["--speed", "0"], "--speed 0: must be above 0"),
        (vec!["--speed", "-1"], "--speed -1: must be above 0"),
        (
            vec!["--scale", "twice"],
            "--scale twice: give a number above 0",
        ),
    ];
    for (extra, said) in cases {
        let mut args = vec!["run", "--workload", ws];
        args.extend_from_slice(&addr);
        args.extend_from_slice(&extra);
        let out = run(url_cmd(&args));
        out.assert_code(2);
        assert!(out.stderr.contains(said), "{extra:?}: {}", out.show());
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.show());
    }
    let mut versioned = good.clone();
    versioned["workload_version"] = json!(9);
    let mut bad_curve = good.clone();
    bad_curve["rate"]["requests"] = json!([1, 1]);
    let files = [
        (
            versioned.to_string(),
            "is version 9: this vblast reads version 1",
        ),
        (
            "{\"workload_version\": 1, ".to_string(),
            "is not a workload: not JSON",
        ),
        (
            json!({"workload_version": 1}).to_string(),
            "is not a workload: missing field",
        ),
        (
            bad_curve.to_string(),
            "its rate curve holds 2 requests, source.requests says 20",
        ),
    ];
    for (text, said) in files {
        std::fs::write(&w, text).unwrap();
        let mut args = vec!["run", "--workload", ws];
        args.extend_from_slice(&addr);
        let out = run(url_cmd(&args));
        out.assert_code(2);
        assert!(out.stderr.contains(said), "{said}: {}", out.show());
    }
    // --scale without a workload is clap's refusal, exit 2 too.
    let out = run(url_cmd(&["run", "--op", "kv-read", "--scale", "2"]));
    out.assert_code(2);
    assert!(out.stderr.contains("--workload"), "{}", out.show());
    let missing = dir.path().join("nope.json");
    let out = run(url_cmd(&[
        "run",
        "--workload",
        missing.to_str().unwrap(),
        "--address",
        "http://127.0.0.1:1",
    ]));
    out.assert_code(2);
    assert!(
        out.stderr.contains("cannot read the workload file"),
        "{}",
        out.show()
    );
}

/// A workload sweep (issue 37, item 4): the scale of a hand-written curve swept against
/// OpenBao, few and short steps; the answer is a multiple of the recorded traffic with
/// its interval. No throughput is asserted: only the answer's form and the file's.
#[test]
fn a_workload_sweep_answers_as_a_multiple_of_the_recorded_traffic() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.json");
    let mut file = hand_written(json!([{"name": "kv-read", "requests": 600, "share": 1.0}]));
    file["source"]["requests"] = json!(600);
    file["not_run"]["unmapped_requests"] = json!(0);
    file["not_run"]["unmapped_share"] = json!(0.0);
    file["rate"]["requests"] = json!([100, 300, 200]);
    std::fs::write(&w, file.to_string()).unwrap();
    let results = dir.path().join("sweep.json");
    let before = server_state(&bao);
    let out = run(vault_cmd(
        &bao,
        &[
            "sweep",
            "--workload",
            w.to_str().unwrap(),
            "--speed",
            "3",
            "--scale",
            "0.5..100",
            "--steps",
            "3",
            "--step-duration",
            "1s",
            "--step-warmup",
            "300ms",
            "--resolution",
            "50%",
            "--max-repeats",
            "1",
            "--slo",
            "p50=2s",
            "-c",
            "4",
            "--output",
            results.to_str().unwrap(),
        ],
    ));
    let answer = out.line("Answer:").to_string();
    assert!(
        answer.starts_with("Answer: holds ") && answer.contains("x the recorded traffic"),
        "{}",
        out.show()
    );
    assert!(answer.contains("CI"), "{}", out.show());
    out.assert_code(0);
    crate::schema::assert_valid("results.schema.json", &[&results]);
    let doc = read_json(&results);
    assert_eq!(doc["sweep"]["workload"]["speed"], 3.0);
    assert_eq!(
        (doc["sweep"]["from"].as_u64(), doc["sweep"]["to"].as_u64()),
        (Some(50), Some(10000))
    );
    assert_eq!(server_state(&bao), before);
    // A scale range that is not one: exit 2 before anything is made.
    let out = run(vault_cmd(
        &bao,
        &[
            "sweep",
            "--workload",
            w.to_str().unwrap(),
            "--scale",
            "8..0.5",
            "--slo",
            "p99=1s",
        ],
    ));
    out.assert_code(2);
    assert!(out.stderr.contains("--scale 8..0.5"), "{}", out.show());
}

/// A log of several callers in two namespaces (`replay::log_of_callers`: the root token
/// and three tokens of their own, in the root and in team-a), profiled into a workload
/// file that records them (per namespace, each caller's requests, never its accessor),
/// then run: the run makes team-a again, sends each caller's requests with a token of
/// its own in the recorded namespace, and the server's own log of the run shows the same
/// callers in the same namespaces with the same requests; nothing is left.
#[test]
fn a_workload_runs_each_recorded_caller_with_a_session_of_its_own_in_its_namespace() {
    use crate::replay::{callers_shape, no_namespace_left};
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = crate::replay::log_of_callers(&bao, dir.path());
    let before = server_state(&bao);
    let w = workload_of(&log, dir.path());
    let file = read_json(&w);
    let text = std::fs::read_to_string(&w).unwrap();
    assert!(!text.contains("hmac-sha256"), "{text}");
    // Per caller in each namespace, its kv reads: tokens 1-3 read 2, 4 and 6 times in each.
    let reads = |ns: &str| -> Vec<u64> {
        let mut v: Vec<u64> = file["callers"]["callers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["namespace"] == ns && c["token"] == true)
            .filter_map(|c| {
                c["ops"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|o| o["name"] == "kv-read")
                    .and_then(|o| o["requests"].as_u64())
            })
            .collect();
        v.sort_unstable();
        v
    };
    assert_eq!(reads("root"), [2, 4, 6], "{file:#}");
    assert_eq!(reads("team-a/"), [2, 4, 6], "{file:#}");

    let again = dir.path().join("run.log");
    let results = dir.path().join("r.json");
    let out = run(vault_cmd(
        &bao,
        &[
            "run",
            "--workload",
            w.to_str().unwrap(),
            "-c",
            "4",
            "--output",
            results.to_str().unwrap(),
            "--audit-path",
            again.to_str().unwrap(),
        ],
    ));
    out.assert_code(0);
    let printed = format!("{}{}", out.stdout, out.stderr);
    assert!(!printed.contains("hmac-sha256"), "{}", out.show());
    // The recorded callers as (namespace, kv requests) each, the run's likewise: a caller
    // that called in both namespaces is two sessions of the run (a file keeps each
    // namespace's callers apart), so both sides are compared per (caller, namespace).
    let flat = |log: &Path| {
        let mut v: Vec<(String, u64)> = callers_shape(log).into_iter().flatten().collect();
        v.sort();
        v
    };
    let sent: u64 = ops_of(&read_json(&results)).iter().map(|o| o.1).sum();
    let recorded: u64 = mix_of(&file).iter().map(|m| m.1).sum();
    // The schedule places the recorded requests (one more when the last lands a rounding
    // error before the end): each card of the recorded deck sent once.
    assert!(
        sent == recorded || sent == recorded + 1,
        "{sent} sent, {recorded} recorded\n{}",
        out.show()
    );
    assert_eq!(flat(&again), flat(&log), "{}", out.show());
    assert_eq!(server_state(&bao), before, "the run left something");
    no_namespace_left(&bao);

    // A sweep of the workload makes the callers once for its steps: the server's log of
    // it shows team-a read by several tokens of the sweep's own; nothing is left.
    let swept = dir.path().join("sweep.log");
    bao.audit_to_file(&swept);
    let out = run(vault_cmd(
        &bao,
        &[
            "sweep",
            "--workload",
            w.to_str().unwrap(),
            "--scale",
            "0.5..2",
            "--steps",
            "2",
            "--step-duration",
            "1s",
            "--step-warmup",
            "300ms",
            "--max-repeats",
            "0",
            "--slo",
            "p50=10s",
            "-c",
            "4",
        ],
    ));
    bao.audit_off();
    out.assert_code(0);
    let in_team_a = callers_shape(&swept)
        .iter()
        .filter(|c| c.iter().any(|(ns, n)| ns == "team-a/" && *n > 0))
        .count();
    assert!(
        in_team_a >= 3,
        "{in_team_a} callers in team-a\n{}",
        out.show()
    );
    assert_eq!(server_state(&bao), before, "the sweep left something");
    no_namespace_left(&bao);
}

/// The callers' log (`replay::log_of_callers`) made against a TLS dev server, profiled and
/// run over HTTP/2 (h2 by ALPN): each request's header block carries its session's token
/// and namespace as over HTTP/1.1, and the server's own log of the run shows the same
/// (caller, namespace) request counts as the log; nothing is left.
#[test]
fn a_workload_runs_its_callers_over_http2_as_over_http1() {
    use crate::replay::{callers_shape, no_namespace_left};
    let bao = OpenBao::start_tls_with_config("unsafe_allow_api_audit_creation = true\n");
    let ca = bao.ca_cert.clone().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = crate::replay::log_of_callers(&bao, dir.path());
    let before = server_state(&bao);
    let w = workload_of(&log, dir.path());
    let again = dir.path().join("run.log");
    let results = dir.path().join("r.json");
    let out = run(vault_cmd(
        &bao,
        &[
            "run",
            "--workload",
            w.to_str().unwrap(),
            "--http2",
            "--ca-cert",
            ca.to_str().unwrap(),
            "-c",
            "2",
            "--output",
            results.to_str().unwrap(),
            "--audit-path",
            again.to_str().unwrap(),
        ],
    ));
    out.assert_code(0);
    assert_eq!(
        read_json(&results)["run"]["protocol"],
        "HTTP/2 (h2)",
        "{}",
        out.show()
    );
    let flat = |log: &Path| {
        let mut v: Vec<(String, u64)> = callers_shape(log).into_iter().flatten().collect();
        v.sort();
        v
    };
    assert_eq!(flat(&again), flat(&log), "{}", out.show());
    assert_eq!(server_state(&bao), before, "the run left something");
    no_namespace_left(&bao);
}

/// The log of two kv mounts in the root and in team-a (`replay::log_of_kv_mounts`),
/// profiled into a workload file (each mount with its kv version and its reads) and run:
/// the server's own audit log of the run shows a kv mount of the same version per
/// recorded mount in each namespace, seeded with that mount's distinct paths, and each
/// recorded mount's reads sent to its own (one more in all when the schedule places one
/// more send); nothing is left.
#[test]
fn a_workload_runs_each_recorded_kv_mount_on_a_fixture_of_its_own_size() {
    use crate::replay::{log_of_kv_mounts, no_namespace_left};
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = log_of_kv_mounts(&bao, dir.path());
    let before = server_state(&bao);
    let w = workload_of(&log, dir.path());
    let file = read_json(&w);
    let sizes: Vec<(String, String, u64, u64)> = file["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| {
            Some((
                f["namespace"].as_str().unwrap().to_string(),
                f["mount"].as_str().unwrap().to_string(),
                f["kv_version"].as_u64()?,
                f["distinct_paths"].as_u64().unwrap(),
            ))
        })
        .collect();
    assert!(
        sizes.contains(&("team-a/".into(), "kv-b/".into(), 1, 2)),
        "{file:#}"
    );
    let seen = dir.path().join("server.log");
    bao.audit_to_file(&seen);
    let results = dir.path().join("r.json");
    let ops = run_workload(&bao, &w, &results, &[]);
    bao.audit_off();
    let names: Vec<&str> = ops.iter().map(|o| o.0.as_str()).collect();
    assert_eq!(names, ["kv-read@kv-a", "kv-read@kv-b"], "{ops:?}");
    kv_fixtures_as_recorded(&seen, "");
    assert_eq!(server_state(&bao), before, "the run left something");
    no_namespace_left(&bao);
}

/// h2c: OpenBao speaks no HTTP/2 without TLS (Go's server; `http2.rs` checks the refusal),
/// so the load goes through nginx speaking h2c (`listen ... http2`, its access log
/// showing each request's protocol) and proxying to OpenBao over HTTP/1.1. vblast's setup
/// speaks HTTP/1.1 to the same address, which nginx 1.22's h2c port does not take: the
/// address is a splice (`by_preface`) that sends a connection opening with the HTTP/2
/// preface to nginx and any other to OpenBao itself. The workload
/// of two kv mounts in two namespaces (`replay::log_of_kv_mounts`) run with
/// `--http2-prior-knowledge` says `HTTP/2 (h2c)`, and a replay of its log with the same
/// flag too: the server's audit log of each shows each recorded mount's fixture and
/// reads as over HTTP/1.1 (the sessions' tokens and namespaces in the h2 header blocks),
/// nginx logged them as HTTP/2.0, and nothing is left.
#[test]
fn a_workload_and_a_replay_run_their_kv_mounts_over_h2c() {
    use crate::replay::{log_of_kv_mounts, no_namespace_left};
    use crate::support::nginx::Nginx;
    use crate::support::vblast::env_cmd;
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let dir = tempfile::tempdir().unwrap();
    let log = log_of_kv_mounts(&bao, dir.path());
    let before = server_state(&bao);
    let w = workload_of(&log, dir.path());
    let access = dir.path().join("proxy.log");
    let proxy = format!(
        "location ~ ^/v1/ {{\n        access_log {};\n        proxy_pass {};\n        proxy_http_version 1.1;\n        proxy_set_header Connection \"\";\n    }}",
        access.display(),
        bao.addr
    );
    let ng = Nginx::start_h2(false, "", &proxy);
    let front = by_preface(&ng.addr, &bao.addr);
    let env = [
        ("VAULT_ADDR", front.as_str()),
        ("VAULT_TOKEN", bao.token.as_str()),
    ];
    // Requests nginx logged as HTTP/2.0.
    let h2_lines = || {
        std::fs::read_to_string(&access)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("HTTP/2.0\""))
            .count() as u64
    };
    let reads: u64 = crate::replay::kv_fixtures_recorded()
        .iter()
        .map(|f| f.3)
        .sum();

    let seen = dir.path().join("server.log");
    bao.audit_to_file(&seen);
    let results = dir.path().join("r.json");
    let w_arg = w.to_str().unwrap();
    let r_arg = results.to_str().unwrap();
    let out = run(env_cmd(
        &[
            "run",
            "--workload",
            w_arg,
            "--http2-prior-knowledge",
            "-c",
            "2",
            "--output",
            r_arg,
        ],
        &env,
    ));
    bao.audit_off();
    out.assert_code(0);
    assert_eq!(
        read_json(&results)["run"]["protocol"],
        "HTTP/2 (h2c)",
        "{}",
        out.show()
    );
    kv_fixtures_as_recorded(&seen, &out.show());
    let after_run = h2_lines();
    assert!(
        after_run >= reads,
        "{after_run} HTTP/2.0 lines\n{}",
        out.show()
    );
    assert_eq!(server_state(&bao), before, "the run left something");
    no_namespace_left(&bao);

    let seen = dir.path().join("server-replay.log");
    bao.audit_to_file(&seen);
    let l_arg = log.to_str().unwrap();
    let out = run(env_cmd(
        &[
            "replay",
            "--http2-prior-knowledge",
            "-c",
            "2",
            "--format",
            "json",
            "-q",
            l_arg,
        ],
        &env,
    ));
    bao.audit_off();
    out.assert_code(0);
    assert_eq!(
        crate::replay::kv_fixtures_in(&seen),
        crate::replay::kv_fixtures_recorded(),
        "{}",
        out.show()
    );
    let replayed = h2_lines() - after_run;
    assert!(
        replayed >= reads,
        "{replayed} HTTP/2.0 lines\n{}",
        out.show()
    );
    assert_eq!(server_state(&bao), before, "the replay left something");
    no_namespace_left(&bao);
}

/// The server's audit log `seen` of a run of `replay::log_of_kv_mounts`' workload shows a
/// fixture per recorded kv mount in each namespace, of its version and distinct paths,
/// and each mount's recorded reads sent to it (one more in all when the schedule places
/// one more send).
fn kv_fixtures_as_recorded(seen: &Path, shown: &str) {
    let got = crate::replay::kv_fixtures_in(seen);
    let want = crate::replay::kv_fixtures_recorded();
    assert_eq!(got.len(), want.len(), "{got:?}\n{shown}");
    let mut over = 0;
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((&g.0, g.1, g.2), (&w.0, w.1, w.2), "{got:?}");
        assert!(g.3 >= w.3, "{got:?} against {want:?}");
        over += g.3 - w.3;
    }
    assert!(over <= 1, "{got:?} against {want:?}");
}

/// A loopback address that hands each connection on by its first bytes: one opening with
/// the HTTP/2 preface (`PRI * HTTP/2.0`) to `h2c`, any other to `http1` (both
/// `http://HOST:PORT`), spliced both ways by a thread each way. Lives as long as the
/// test process.
fn by_preface(h2c: &str, http1: &str) -> String {
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};
    let host = |a: &str| a.trim_start_matches("http://").to_string();
    let (h2c, http1) = (host(h2c), host(http1));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (h2c, http1) = (h2c.clone(), http1.clone());
            std::thread::spawn(move || {
                // The first three bytes, waited for (bounded): PRI or a method.
                let mut first = [0u8; 3];
                let deadline = Instant::now() + Duration::from_secs(30);
                while conn.peek(&mut first).is_ok_and(|n| n > 0 && n < 3)
                    && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let to = if &first == b"PRI" { &h2c } else { &http1 };
                let Ok(up) = TcpStream::connect(to) else {
                    return;
                };
                let (Ok(mut c2), Ok(mut u2)) = (conn.try_clone(), up.try_clone()) else {
                    return;
                };
                let (mut c, mut u) = (conn, up);
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c2, &mut u2);
                    let _ = u2.shutdown(std::net::Shutdown::Write);
                });
                let _ = std::io::copy(&mut u, &mut c);
                let _ = c.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    format!("http://{addr}")
}
