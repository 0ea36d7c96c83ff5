//! vault-benchmark's files and command lines against a real OpenBao dev server: its
//! tutorial and PKI files run unchanged (`--config`, `vblast vault-benchmark run`), rows
//! carry the tests' names, precedence is flags over environment over file, its terse,
//! verbose and JSON layouts print the run's counts, `review` re-renders a saved run, and
//! bad files and flags are one message with exit 2. Nothing is left on the server.

use std::path::{Path, PathBuf};

use crate::support::openbao::{OpenBao, keys, server_state};
use crate::support::postgres::Postgres;
use crate::support::run::run;
use crate::support::vblast::{env_cmd, url_cmd, vault_cmd};
use serde_json::Value;

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
        .display()
        .to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn op_rows(j: &Value) -> Vec<(String, u64)> {
    j["ops"]
        .as_array()
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

#[test]
fn tutorial_file_runs_unchanged_with_the_tests_names_as_rows() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    // The file says 127.0.0.1:8200; VAULT_ADDR (the environment) wins over it.
    let file = data("vb-getting-started.hcl");
    let r = run(vault_cmd(
        &bao,
        &[
            "--config", &file, "-n", "400", "-c", "8", "--format", "json",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    assert_eq!(j["requests"], 400, "{}", r.show());
    assert_eq!(j["ok"], 400, "{}", r.show());
    let rows = op_rows(&j);
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["approle_logins", "static_secret_writes"], "{j}");
    assert!(rows.iter().all(|r| r.1 > 0), "{rows:?}");
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), 400);
    // The file's namespace "root" is the root namespace: no header, no failure.
    assert!(
        r.stderr.contains("role_name"),
        "the unused key is said: {}",
        r.show()
    );
    assert_eq!(server_state(&bao), before, "the run left something behind");
}

#[test]
fn pki_file_through_vault_benchmark_run_and_review() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("result.json");
    let saved_arg = format!("-result_file={}", saved.display());
    let config_arg = format!("-config={}", data("vb-pki.hcl"));
    let r = run(vault_cmd(
        &bao,
        &[
            "vault-benchmark",
            "run",
            &config_arg,
            "-duration=1s",
            "-workers",
            "4",
            "-report_mode=json",
            &saved_arg,
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one JSON line: {}", r.show());
    let j: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(j["target_addr"], bao.addr.as_str(), "{j}");
    let total = &j["metrics"]["total"];
    let issued = total["requests"].as_u64().unwrap();
    assert!(issued > 0, "{j}");
    assert_eq!(j["metrics"]["pki_issue"]["requests"], issued, "{j}");
    assert_eq!(total["success"], 1.0, "{j}");
    assert_eq!(total["status_codes"]["200"], issued, "{j}");
    let lat = &total["latencies"];
    assert!(lat["min"].as_u64() <= lat["50th"].as_u64(), "{j}");
    assert!(lat["50th"].as_u64() <= lat["99th"].as_u64(), "{j}");
    assert!(lat["99th"].as_u64() <= lat["max"].as_u64(), "{j}");
    assert_eq!(server_state(&bao), before, "the run left something behind");

    // review: the saved run in the terse layout, the same counts.
    let r = run(vault_cmd(
        &bao,
        &[
            "vault-benchmark",
            "review",
            &saved_arg,
            "-report_mode=terse",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], format!("Target: {}", bao.addr), "{}", r.show());
    let header: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "op",
            "count",
            "rate",
            "throughput",
            "mean",
            "95th%",
            "99th%",
            "successRatio"
        ]
    );
    let row: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(row[0], "pki_issue");
    assert_eq!(row[1], issued.to_string());
    assert_eq!(row[7], "100.00%");
    // vault-benchmark's table: rate and throughput with six decimals, no total row.
    for cell in [row[2], row[3]] {
        assert_eq!(
            cell.split_once('.').map(|(_, f)| f.len()),
            Some(6),
            "{}",
            r.show()
        );
    }
    assert!(
        !r.stdout
            .lines()
            .any(|l| l.starts_with("TOTAL") || l.starts_with("---")),
        "{}",
        r.show()
    );
    // Columns line up as Go's tabwriter lines them up.
    assert_eq!(lines[1].find("count"), lines[2].find(&issued.to_string()));

    // verbose: the total first, in lower case, then a section per test.
    let r = run(vault_cmd(
        &bao,
        &[
            "vault-benchmark",
            "review",
            "-results_file",
            saved.to_str().unwrap(),
            "--report_mode=verbose",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let requests_line = format!("{issued}, ");
    assert!(r.stdout.contains("\npki_issue\nRequests"), "{}", r.show());
    assert!(r.stdout.starts_with("\ntotal\nRequests"), "{}", r.show());
    assert!(!r.stdout.contains("TOTAL"), "{}", r.show());
    assert!(
        r.stdout
            .lines()
            .filter(|l| l.starts_with("Requests") && l.contains(&requests_line))
            .count()
            == 2,
        "{}",
        r.show()
    );
    assert!(r.stdout.contains(&format!("200:{issued}")), "{}", r.show());
}

#[test]
fn flags_override_the_environment_which_overrides_the_file() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    // The file points nowhere and asks for 3 workers, 30 s and a rate.
    let file = write(
        dir.path(),
        "p.hcl",
        "vault_addr = \"http://127.0.0.1:1\"\nvault_token = \"wrong\"\nworkers = 3\nduration = \"30s\"\nrps = 200\nreport_mode = \"json\"\ntest \"seal_status\" \"seal\" {\n  weight = 100\n}\n",
    );
    let f = file.to_str().unwrap();
    // Environment over file: VAULT_ADDR and VAULT_TOKEN reach the server; the file's
    // workers and rps stay; the flag -z shortens the run.
    let r = run(vault_cmd(
        &bao,
        &["--config", f, "-z", "1s", "--format", "json"],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    assert_eq!(j["run"]["connections"], 3, "{j}");
    assert_eq!(j["run"]["model"], "open", "{j}");
    assert_eq!(j["run"]["target_rate"], 200.0, "{j}");
    assert_eq!(op_rows(&j)[0].0, "seal");
    // A flag over both: -c wins over workers.
    let r = run(vault_cmd(
        &bao,
        &["--config", f, "-z", "1s", "-c", "2", "--format", "json"],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.json()["run"]["connections"], 2);
    // vault-benchmark's flags over the environment: the environment points nowhere.
    let addr_arg = format!("-vault_addr={}", bao.addr);
    let saved = dir.path().join("r.json");
    let saved_arg = format!("-result_file={}", saved.display());
    let config_arg = format!("-config={f}");
    let r = run(env_cmd(
        &[
            "vault-benchmark",
            "run",
            &config_arg,
            &addr_arg,
            "-vault_token=root",
            "-duration=1s",
            "-rps=0",
            &saved_arg,
        ],
        &[
            ("VAULT_ADDR", "http://127.0.0.1:1"),
            ("VAULT_TOKEN", "wrong"),
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    // The file's report_mode gives the layout; -rps=0 is the closed model.
    let j: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert!(
        j["metrics"]["seal"]["requests"].as_u64().unwrap() > 0,
        "{j}"
    );
    let saved: Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
    assert_eq!(saved["run"]["model"], "closed", "{saved}");
    assert_eq!(saved["run"]["connections"], 3, "{saved}");
    // Without the flags, the file's address is used, and it is unreachable.
    let r = run(env_cmd(
        &["vault-benchmark", "run", &config_arg, "-duration=1s"],
        &[],
    ));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(r.stderr.contains("127.0.0.1:1"), "{}", r.show());
}

#[test]
fn cluster_json_is_read_as_a_cluster_and_its_nodes_shown() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let cluster = write(
        dir.path(),
        "cluster.json",
        &format!(
            "{{\"token\": \"root\", \"vault_addrs\": [\"{}\", \"http://127.0.0.1:2\"]}}",
            bao.addr
        ),
    );
    let config_arg = format!("-config={}", data("vb-getting-started.hcl"));
    let cluster_arg = format!("-cluster_json={}", cluster.display());
    let r = run(env_cmd(
        &[
            "vault-benchmark",
            "run",
            &config_arg,
            &cluster_arg,
            "-duration=1s",
            "-workers=2",
        ],
        &[],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(
        r.stdout.starts_with(&format!("Target: {}", bao.addr)),
        "{}",
        r.show()
    );
    // The nodes are asked before the run: the dev server is active, the other unreachable.
    assert!(r.stderr.contains("active"), "{}", r.show());
    assert!(r.stderr.contains("unreachable"), "{}", r.show());
}

#[test]
fn bad_files_and_flags_are_one_message_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--config".into(),
                write(d, "bad.hcl", "duration = \"2s\"\ntest \"kvv2_read\" \"r\" {\n  weight = = 100\n}\n")
                    .display()
                    .to_string(),
            ],
            "bad.hcl:3:",
        ),
        (
            vec![
                "--config".into(),
                write(d, "t.hcl", "test \"aws_auth\" \"a\" {\n  weight = 100\n}\n")
                    .display()
                    .to_string(),
            ],
            "unsupported test type 'aws_auth'",
        ),
        (
            vec![
                "--config".into(),
                write(d, "k.hcl", "vault_adr = \"x\"\ntest \"metrics\" \"m\" {\n  weight = 50\n  bogus = 1\n}\ntest \"kvv2_read\" \"r\" {\n  weight = 50\n  config {\n    nonsense = 1\n  }\n}\n")
                    .display()
                    .to_string(),
            ],
            "k.hcl:4:3: test 'm': test.bogus",
        ),
        (
            vec![
                "--config".into(),
                write(d, "c.hcl", "test \"transit_encrypt\" \"e\" {\n  weight = 100\n  config {\n    encrypt {\n      batch_input = []\n    }\n  }\n}\n")
                    .display()
                    .to_string(),
            ],
            "c.hcl:5:7: test 'e': config.encrypt.batch_input is not supported",
        ),
        (
            vec![
                "--config".into(),
                write(d, "w.hcl", "test \"kvv2_read\" \"r\" {\n  weight = 100\n  config {\n    numkvs = \"many\"\n  }\n}\n")
                    .display()
                    .to_string(),
            ],
            "w.hcl:4:5: test 'r': config.numkvs must be a whole number",
        ),
        (
            vec![
                "--config".into(),
                write(d, "g.hcl", "duration = 5\ntest \"kvv2_read\" \"r\" {\n  weight = 100\n}\n")
                    .display()
                    .to_string(),
            ],
            "g.hcl:1:1: 'duration' must be a string",
        ),
        (
            vec![
                "--config".into(),
                write(d, "n.hcl", "test \"kvv2_read\" \"r\" {\n  weight = 50\n}\ntest \"kvv2_write\" \"r\" {\n  weight = 50\n}\n")
                    .display()
                    .to_string(),
            ],
            "two tests are named 'r'",
        ),
        (
            vec![
                "--config".into(),
                write(d, "s.hcl", "test \"kvv2_read\" \"r\" {\n  weight = 60\n}\ntest \"kvv2_write\" \"w\" {\n  weight = 30\n}\n")
                    .display()
                    .to_string(),
            ],
            "the tests' weights add up to 90: they must add up to 100",
        ),
        (
            vec!["--config".into(), d.join("missing.hcl").display().to_string()],
            "cannot read the config file",
        ),
        (
            vec!["vault-benchmark".into(), "run".into(), "-confg=x.hcl".into()],
            "flag provided but not defined: -confg",
        ),
        (
            vec!["vault-benchmark".into(), "run".into(), "-duration=1s".into()],
            "-config=FILE is required",
        ),
        (
            vec!["vault-benchmark".into(), "bench".into()],
            "unknown command 'bench'",
        ),
        (
            vec!["vault-benchmark".into(), "review".into(), "-report_mode=terse".into()],
            "-result_file=FILE is required",
        ),
    ];
    for (args, want) in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run(env_cmd(&a, &[("VAULT_ADDR", "http://127.0.0.1:1")]));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.show());
        assert!(
            r.stderr.contains(want),
            "{args:?}: want '{want}': {}",
            r.show()
        );
        assert!(!r.stderr.contains("panicked"), "{}", r.show());
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.show());
    }
    // Both refusals of a file with two, each with its line and column.
    let r = run(env_cmd(
        &["--config", d.join("k.hcl").to_str().unwrap()],
        &[("VAULT_ADDR", "http://127.0.0.1:1")],
    ));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(
        r.stderr.contains("k.hcl:4:3: test 'm': test.bogus"),
        "{}",
        r.show()
    );
    assert!(
        r.stderr.contains("k.hcl:9:5: test 'r': config.nonsense"),
        "{}",
        r.show()
    );
    // The HCL error gives line and column.
    let r = run(env_cmd(
        &["--config", d.join("bad.hcl").to_str().unwrap()],
        &[],
    ));
    assert!(r.stderr.contains("line 3, column"), "{}", r.show());
}

#[test]
fn signing_and_jwt_files_run_through_the_chain_vblast_makes() {
    // pki_sign goes through a root and an intermediate made at setup; jwt_auth logs in with
    // JWTs signed by a key vblast made, meeting the file's bound_issuer, bound_subject and
    // audiences (which the server checks); both rows carry the tests' names; nothing is left.
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let config_arg = format!("-config={}", data("vb-sign-and-jwt.hcl"));
    let r = run(vault_cmd(
        &bao,
        &[
            "vault-benchmark",
            "run",
            &config_arg,
            "-duration=1s",
            "-workers=4",
            "-report_mode=json",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j: Value = serde_json::from_str(r.stdout.lines().next().unwrap_or("")).unwrap();
    for name in ["csr_signing", "jwt_logins"] {
        let row = &j["metrics"][name];
        assert!(row["requests"].as_u64().unwrap_or(0) > 0, "{name}: {j}");
    }
    assert_eq!(j["metrics"]["total"]["success"], 1.0, "{j}");
    assert_eq!(server_state(&bao), before, "the run left something behind");
}

/// vault-benchmark's transit and PKI examples with `cleanup = false`: the keys, roles and
/// issuers read back from the server are what vault-benchmark would have created
/// (rsa-2048 transit keys; a root and an intermediate of the configured key; its role).
#[test]
fn documented_examples_create_what_vault_benchmark_creates() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "vb.hcl",
        "cleanup = false\ntest \"transit_sign\" \"ts\" {\n  weight = 25\n}\ntest \"transit_verify\" \"tv\" {\n  weight = 25\n  config {\n    verify {\n      signature_algorithm = \"pkcs1v15\"\n    }\n  }\n}\ntest \"pki_issue\" \"pi\" {\n  weight = 25\n  config {\n    root_ca {\n      common_name = \"benchmark.test Root Authority\"\n      key_type = \"ec\"\n      key_bits = \"384\"\n    }\n    intermediate_csr {\n      common_name = \"benchmark.test Intermediate Authority\"\n      key_type = \"ec\"\n      key_bits = \"384\"\n    }\n    role {\n      ttl = \"10s\"\n      generate_lease = true\n      key_type = \"ec\"\n      key_bits = \"521\"\n    }\n  }\n}\ntest \"pki_sign\" \"ps\" {\n  weight = 25\n}\n",
    );
    let file = file.display().to_string();
    let r = run(vault_cmd(
        &bao,
        &["--config", &file, "-n", "80", "-c", "8", "--format", "json"],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["failed"], 0, "{}", r.show());
    let mounts = crate::support::openbao::vblast_mounts(&bao);
    let read = |path: &str| -> Value {
        let (status, body) = bao.api("GET", path, None);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    };
    let mut transit = 0;
    let mut chains = Vec::new();
    for m in &mounts {
        let m = m.trim_end_matches('/');
        if m.starts_with("vblast-transit-") {
            assert_eq!(
                read(&format!("/v1/{m}/keys/vblast"))["data"]["type"],
                "rsa-2048"
            );
            transit += 1;
        } else if m.starts_with("vblast-pki-int-") {
            let role = read(&format!("/v1/{m}/roles/vblast"))["data"].clone();
            assert_eq!(role["allow_any_name"], true, "{role}");
            let issuer = read(&format!("/v1/{m}/issuer/default"))["data"].clone();
            assert_eq!(
                issuer["ca_chain"].as_array().map(Vec::len),
                Some(2),
                "an intermediate and its root: {issuer}"
            );
            chains.push((
                role["key_type"].as_str().unwrap().to_string(),
                role["key_bits"].as_u64().unwrap(),
                role["ttl"].as_u64().unwrap(),
                role["generate_lease"].as_bool().unwrap_or(false),
            ));
        }
    }
    assert_eq!(transit, 2, "{mounts:?}");
    chains.sort();
    assert_eq!(
        chains,
        vec![
            ("ec".into(), 521, 10, true),
            ("rsa".into(), 2048, 300, false),
        ],
        "{mounts:?}"
    );
    for m in &mounts {
        let (status, body) = bao.api(
            "DELETE",
            &format!("/v1/sys/mounts/{}", m.trim_end_matches('/')),
            None,
        );
        assert!(status == 204 || status == 200, "{m}: {body}");
    }
    assert_eq!(server_state(&bao), before);
}

/// `review` reads vault-benchmark's own JSON report (two reports one after another, with
/// vegeta's timestamps) and prints it as vault-benchmark's review does: terse by default,
/// verbose in vegeta's text layout, durations rounded as vegeta rounds them; JSON refused.
#[test]
fn review_renders_vault_benchmarks_own_json_report() {
    let file = format!("-result_file={}", data("vb-report.json"));
    let r = run(env_cmd(&["vault-benchmark", "review", &file], &[]));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let want = "Target: http://10.0.0.5:8200\n\
op          count  rate      throughput  mean  95th%  99th%  successRatio\n\
kv_read_10  3      1.200000  0.799201    2ms   2.6ms  2.7ms  66.67%\n\
kv_read_9   1      1.000000  1.000000    1ms   1ms    1ms    100.00%\n\
Target: http://10.0.0.6:8200\n\
op  count  rate  throughput  mean  95th%  99th%  successRatio\n";
    assert!(r.stdout.starts_with(want), "{}", r.show());
    let r = run(env_cmd(
        &["vault-benchmark", "review", &file, "-report_mode=verbose"],
        &[],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let section = "\nkv_read_10\n\
Requests      [total, rate, throughput]         3, 1.20, 0.80\n\
Duration      [total, attack, wait]             2.502s, 2.5s, 2.5ms\n\
Latencies     [min, mean, 50, 90, 95, 99, max]  1.75ms, 2ms, 1.5ms, 2.5ms, 2.6ms, 2.7ms, 2.75ms\n\
Bytes In      [total, mean]                     900, 300.00\n\
Bytes Out     [total, mean]                     0, 0.00\n\
Success       [ratio]                           66.67%\n\
Status Codes  [code:count]                      200:2  503:1  \n\
Error Set:\n\
503 Service Unavailable\n";
    assert!(r.stdout.contains(section), "{}", r.show());
    assert!(
        r.stdout.find("\ntotal\n") < r.stdout.find("\nkv_read_10\n")
            && r.stdout.find("\nkv_read_10\n") < r.stdout.find("\nkv_read_9\n"),
        "total first, then byte order, as vault-benchmark 0.4.1: {}",
        r.show()
    );
    assert_eq!(r.stdout.matches("\ntotal\n").count(), 2, "{}", r.show());
    assert!(!r.stdout.contains("TOTAL"), "{}", r.show());
    let r = run(env_cmd(
        &["vault-benchmark", "review", &file, "-report_mode=json"],
        &[],
    ));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(r.stderr.contains("already is"), "{}", r.show());
}

/// Each test of a run carries its own body bytes, status codes and errors, in the JSON
/// report and in the verbose one, and the JSON a run prints is what `review` reads.
#[test]
fn each_test_has_its_own_bytes_status_codes_and_errors() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let config_arg = format!("-config={}", data("vb-getting-started.hcl"));
    let r = run(vault_cmd(
        &bao,
        &[
            "vault-benchmark",
            "run",
            &config_arg,
            "-duration=1s",
            "-workers=4",
            "-report_mode=json",
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    let mut requests = 0;
    for name in ["approle_logins", "static_secret_writes"] {
        let m = &j["metrics"][name];
        let n = m["requests"].as_u64().unwrap();
        assert!(n > 0, "{name}: {j}");
        requests += n;
        let codes: u64 = m["status_codes"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(codes, n, "{name}: every request has its code: {j}");
        // A login answers with a token and sends a role and secret id; a write sends
        // its 100-byte secret.
        assert!(
            m["bytes_in"]["total"].as_u64().unwrap() >= n * 100,
            "{name}: {j}"
        );
        assert!(
            m["bytes_out"]["total"].as_u64().unwrap() >= n * 50,
            "{name}: {j}"
        );
        assert_eq!(m["errors"], Value::Array(vec![]), "{name}: {j}");
    }
    let total = &j["metrics"]["total"];
    assert_eq!(total["requests"], requests, "{j}");
    let sum = |key: &str| -> u64 {
        ["approle_logins", "static_secret_writes"]
            .iter()
            .map(|n| j["metrics"][n][key]["total"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(total["bytes_in"]["total"], sum("bytes_in"), "{j}");
    assert_eq!(total["bytes_out"]["total"], sum("bytes_out"), "{j}");
    // The report printed is what vault-benchmark's review reads.
    let saved = write(dir.path(), "vb.json", &r.stdout);
    let saved_arg = format!("-result_file={}", saved.display());
    let r = run(env_cmd(
        &[
            "vault-benchmark",
            "review",
            &saved_arg,
            "-report_mode=verbose",
        ],
        &[],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(
        r.stdout.matches("\nStatus Codes  [code:count]  ").count(),
        3,
        "{}",
        r.show()
    );
    assert_eq!(
        r.stdout.matches("\nBytes In      [total, mean]  ").count(),
        3,
        "{}",
        r.show()
    );
    assert_eq!(
        r.stdout.matches("\nError Set:\n").count(),
        3,
        "{}",
        r.show()
    );
}

/// vault-benchmark's approle example with a `secret_id` block and more role keys, run
/// with `cleanup = false`: the role and the secret_id read back from the server carry
/// what the file asked, as vault-benchmark would have sent it.
#[test]
fn approle_role_and_secret_id_keys_reach_the_server() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "approle.hcl",
        "cleanup = false\ntest \"approle_auth\" \"logins\" {\n  weight = 100\n  config {\n    role {\n      role_name = \"benchmark-role\"\n      token_ttl = \"2m\"\n      secret_id_num_uses = 0\n      token_num_uses = 3\n    }\n    secret_id {\n      ttl = \"10m\"\n      token_bound_cidrs = [\"127.0.0.0/8\"]\n    }\n  }\n}\n",
    );
    let file = file.display().to_string();
    let r = run(vault_cmd(
        &bao,
        &["--config", &file, "-n", "40", "-c", "4", "--format", "json"],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert_eq!(r.json()["ok"], 40, "{}", r.show());
    let auths: Vec<String> = keys(&bao, "/v1/sys/auth")
        .into_iter()
        .filter(|k| k.starts_with("vblast-approle-"))
        .collect();
    assert_eq!(auths.len(), 1, "{auths:?}");
    let path = auths[0].trim_end_matches('/');
    let read = |method: &str, p: &str, body: Option<&str>| -> Value {
        let (status, text) = bao.api(method, p, body);
        assert_eq!(status, 200, "{p}: {text}");
        serde_json::from_str(&text).unwrap()
    };
    let role = read("GET", &format!("/v1/auth/{path}/role/vblast"), None)["data"].clone();
    assert_eq!(role["token_ttl"], 120, "{role}");
    assert_eq!(role["token_num_uses"], 3, "{role}");
    assert_eq!(role["secret_id_num_uses"], 0, "{role}");
    let list = read(
        "LIST",
        &format!("/v1/auth/{path}/role/vblast/secret-id"),
        None,
    );
    let accessor = list["data"]["keys"][0].as_str().unwrap().to_string();
    let body = format!("{{\"secret_id_accessor\": \"{accessor}\"}}");
    let secret = read(
        "POST",
        &format!("/v1/auth/{path}/role/vblast/secret-id-accessor/lookup"),
        Some(&body),
    )["data"]
        .clone();
    assert_eq!(secret["secret_id_ttl"], 600, "{secret}");
    assert_eq!(secret["token_bound_cidrs"][0], "127.0.0.0/8", "{secret}");
    // Kept by `cleanup = false`: removed with the logins' identity entity.
    let orphans = run(vault_cmd(&bao, &["cleanup", "--orphans", "--yes"]));
    orphans.assert_code(0);
    assert_eq!(server_state(&bao), before, "{}", orphans.show());
}

/// The responses an audit log holds (one JSON object a line, `"type": "response"`).
fn audit_responses(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "response")
        .count()
}

/// vault-benchmark's `audit_path` and `pprof_interval` keys (and flags) run as vblast's
/// `--audit-path` and `--pprof-interval` (docs/coming-from-vault-benchmark.md): a
/// `vault-benchmark run` of a file with both leaves an audit log with the run's responses
/// and no audit device, and non-empty profiles beside its `-result_file`, listed there;
/// `-audit_path` given as a flag wins over the file's key.
#[test]
fn audit_path_and_pprof_interval_run_as_vblasts_own() {
    let bao = OpenBao::start_with_config("unsafe_allow_api_audit_creation = true\n");
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let (file_log, flag_log) = (dir.path().join("file.log"), dir.path().join("flag.log"));
    let config = write(
        dir.path(),
        "audit.hcl",
        &format!(
            "audit_path = \"{}\"\npprof_interval = \"2s\"\ntest \"kvv2_read\" \"reads\" {{\n  weight = 100\n  config {{\n    numkvs = 10\n  }}\n}}\n",
            file_log.display()
        ),
    );
    let saved = dir.path().join("saved.json");
    let r = run(vault_cmd(
        &bao,
        &[
            "vault-benchmark",
            "run",
            &format!("-config={}", config.display()),
            "-duration=3s",
            "-rps=50",
            "-workers=2",
            &format!("-result_file={}", saved.display()),
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let requests = doc["requests"].as_u64().unwrap_or(0);
    assert!(requests > 0, "{doc}");
    let responses = audit_responses(&file_log);
    assert!(
        responses as u64 >= requests,
        "{responses} responses in the log, {requests} requests: {}",
        r.show()
    );
    assert!(
        r.stderr
            .contains("exact agreement with the client's counts"),
        "{}",
        r.show()
    );
    let (s, b) = bao.api("GET", "/v1/sys/audit", None);
    assert_eq!(s, 200, "{b}");
    assert!(!b.contains("vblast-audit-"), "an audit device is left: {b}");
    let profiles: Vec<&str> = doc["server_samples"]["profiles"]
        .as_array()
        .unwrap_or_else(|| panic!("no profiles listed: {}", r.show()))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for kind in ["-cpu.pb.gz", "-heap.pb.gz", "-goroutine.pb.gz"] {
        assert!(
            profiles.iter().any(|f| f.ends_with(kind)),
            "{kind}: {profiles:?}"
        );
    }
    for f in &profiles {
        let p = Path::new(f);
        assert_eq!(p.parent(), Some(dir.path()), "{f}: not beside -result_file");
        assert!(std::fs::metadata(p).unwrap().len() > 0, "{f} is empty");
    }
    // The flag over the key.
    let r = run(vault_cmd(
        &bao,
        &[
            "vault-benchmark",
            "run",
            &format!("-config={}", config.display()),
            "-duration=1s",
            "-rps=20",
            &format!("-audit_path={}", flag_log.display()),
            &format!("-result_file={}", dir.path().join("again.json").display()),
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let was = responses;
    assert!(audit_responses(&flag_log) > 0, "{}", r.show());
    assert_eq!(audit_responses(&file_log), was, "the file's log grew");
    assert_eq!(server_state(&bao), before, "the runs left something behind");
}

/// A kvv2_read file for `addr` with `workers` and any `extra` global keys.
fn kv_file(dir: &Path, name: &str, addr: &str, ca: Option<&Path>, extra: &str) -> String {
    let ca = ca.map_or(String::new(), |c| {
        format!("ca_pem_file = \"{}\"\n", c.display())
    });
    let text = format!(
        "vault_addr = \"{addr}\"\nvault_token = \"root\"\nworkers = 6\n{ca}{extra}test \"kvv2_read\" \"reads\" {{\n  weight = 100\n  config {{\n    numkvs = 10\n  }}\n}}\n"
    );
    write(dir, name, &text).display().to_string()
}

/// The protocol and the TCP connections of a `vblast --config FILE -n 300` run.
fn protocol_of(file: &str, more: &[&str]) -> (String, u64, Value) {
    let mut args = vec!["--config", file, "-n", "300", "--format", "json"];
    args.extend(more);
    let r = run(url_cmd(&args));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = r.json();
    assert_eq!(j["ok"], 300, "{}", r.show());
    let p = j["run"]["protocol"].as_str().unwrap().to_string();
    (p, j["connections_opened"].as_u64().unwrap(), j)
}

#[test]
fn https_files_speak_http2_as_vault_benchmark_does_unless_disable_http2() {
    let bao = OpenBao::start_tls();
    let ca = bao.ca_cert.clone().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Go's client: the 6 workers are 6 streams on one TCP connection.
    let h2 = kv_file(d, "h2.hcl", &bao.addr, Some(&ca), "");
    let (p, conns, j) = protocol_of(&h2, &[]);
    assert_eq!((p.as_str(), conns), ("HTTP/2 (h2)", 1), "{j}");
    assert_eq!(j["http2"]["streams_asked"], 6, "{j}");
    // The same through vault-benchmark's own command line, in its results file.
    let saved = d.join("run.json").display().to_string();
    let cfg = format!("-config={h2}");
    let out = format!("-result_file={saved}");
    let r = run(url_cmd(&[
        "vault-benchmark",
        "run",
        &cfg,
        "-duration=1s",
        &out,
    ]));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let r = run(url_cmd(&["report", &saved, "--format", "json"]));
    let j = r.json();
    assert_eq!(j["run"]["protocol"], "HTTP/2 (h2)", "{j}");
    assert_eq!(j["connections_opened"], 1, "{j}");
    // disable_http2 = true, or the flag: HTTP/1.1, a connection per worker.
    let h1 = kv_file(d, "h1.hcl", &bao.addr, Some(&ca), "disable_http2 = true\n");
    let (p, conns, j) = protocol_of(&h1, &[]);
    assert_eq!((p.as_str(), conns), ("HTTP/1.1", 6), "{j}");
    let (p, conns, j) = protocol_of(&h2, &["--http1.1"]);
    assert_eq!((p.as_str(), conns), ("HTTP/1.1", 6), "{j}");
    let r = run(url_cmd(&[
        "vault-benchmark",
        "run",
        &cfg,
        "-duration=1s",
        "-disable_http2",
        "-report_mode=json",
        &out,
    ]));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j = run(url_cmd(&["report", &saved, "--format", "json"])).json();
    assert_eq!(j["run"]["protocol"], "HTTP/1.1", "{j}");
    // An http:// address stays HTTP/1.1 (Go speaks no h2c).
    let plain = OpenBao::start();
    let http = kv_file(d, "http.hcl", &plain.addr, None, "");
    let (p, conns, j) = protocol_of(&http, &[]);
    assert_eq!((p.as_str(), conns), ("HTTP/1.1", 6), "{j}");
}

/// The auth methods a run created (`vblast-...`), without trailing slash.
fn vblast_auths(bao: &OpenBao) -> Vec<String> {
    keys(bao, "/v1/sys/auth")
        .into_iter()
        .filter(|k| k.starts_with("vblast-"))
        .map(|k| k.trim_end_matches('/').to_string())
        .collect()
}

/// One documented-style file of seven families with `cleanup = false`, in one server:
/// what is read back is what vault-benchmark would have created from it (kv: numkvs
/// secrets of kvsize bytes; ssh: the CA's RSA key, the role's user certificates; jwt: the
/// file's role; totp: the key's algorithm, digits, period; userpass: the token TTL; the
/// database role's TTLs and statements; pki_issue: an intermediate of the configured EC
/// key). The run's results file names what vblast did differently. Then all is removed.
#[test]
fn every_family_creates_what_vault_benchmark_creates() {
    let pg = Postgres::start().expect("PostgreSQL missing: run tools/deps.sh");
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let url = pg.url();
    let (user, rest) = url
        .strip_prefix("postgres://")
        .unwrap()
        .split_once(':')
        .unwrap();
    let (password, host) = rest.split_once('@').unwrap();
    let text = format!(
        r#"cleanup = false
timeout = "5s"
test "kvv2_write" "kv_writes" {{
  weight = 15
  config {{
    numkvs = 20
    kvsize = 30
  }}
}}
test "ssh_sign" "ssh_signs" {{
  weight = 15
  config {{
    role {{
      allow_user_certificates = true
      allowed_extensions = "permit-pty"
    }}
    key_signing {{
      ttl = "5m"
      extensions = {{ permit-pty = "" }}
    }}
  }}
}}
test "jwt_auth" "jwt_logins" {{
  weight = 15
}}
test "totp_read" "totp_reads" {{
  weight = 15
  config {{
    key_name = "benchmark-key"
    algorithm = "SHA256"
    digits = 8
    period = 60
  }}
}}
test "userpass_auth" "userpass_logins" {{
  weight = 10
  config {{
    token_ttl = "1m"
    token_num_uses = 5
  }}
}}
test "pki_issue" "pki_issues" {{
  weight = 15
  config {{
    root_ca {{
      key_type = "ec"
      key_bits = 384
    }}
    intermediate_csr {{
      key_type = "ec"
      key_bits = 384
    }}
  }}
}}
test "postgresql_secret" "pg_creds" {{
  weight = 15
  config {{
    db_connection {{
      connection_url = "postgresql://{{{{username}}}}:{{{{password}}}}@{host}"
      username = "{user}"
      password = "{password}"
      max_idle_connections = 2
    }}
    role {{
      creation_statements = "CREATE ROLE \"{{{{name}}}}\" WITH LOGIN PASSWORD '{{{{password}}}}' VALID UNTIL '{{{{expiration}}}}';"
      default_ttl = "1m"
      max_ttl = "5m"
    }}
  }}
}}
"#
    );
    let file = write(dir.path(), "all.hcl", &text).display().to_string();
    let saved = dir.path().join("run.json");
    let r = run(vault_cmd(
        &bao,
        &[
            "--config",
            &file,
            "-n",
            "140",
            "-c",
            "8",
            "--format",
            "json",
            "--output",
            saved.to_str().unwrap(),
        ],
    ));
    assert_eq!(r.code, Some(0), "{}", r.show());
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["failed"], 0, "{}", r.show());
    // Said on stderr and kept in the results file's run section.
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let diffs = results["run"]["differences"].to_string();
    for said in ["cleanup = false", "config.key_name"] {
        assert!(diffs.contains(said), "{said}: {diffs}");
    }
    assert!(r.stderr.contains("cleanup = false"), "{}", r.show());
    // An unknown global key: one warning naming it, and the run goes on.
    let unknown: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("unknown global key"))
        .collect();
    assert_eq!(unknown.len(), 1, "{}", r.show());
    assert!(unknown[0].contains("timeout"), "{}", r.show());
    crate::schema::assert_valid("results.schema.json", &[&saved]);
    let read = |path: &str| -> Value {
        let (status, body) = bao.api("GET", path, None);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str::<Value>(&body).unwrap()["data"].clone()
    };
    let mounts = crate::support::openbao::vblast_mounts(&bao);
    let auths = vblast_auths(&bao);
    let mut seen = Vec::new();
    for m in mounts.iter().map(|m| m.trim_end_matches('/')) {
        let kind = read(&format!("/v1/sys/mounts/{m}"))["type"]
            .as_str()
            .unwrap()
            .to_string();
        match kind.as_str() {
            "kv" => {
                let listed = read(&format!("/v1/{m}/metadata?list=true"))["keys"].clone();
                assert_eq!(listed.as_array().unwrap().len(), 20, "numkvs: {listed}");
                let first = listed[0].as_str().unwrap();
                let v = read(&format!("/v1/{m}/data/{first}"))["data"].clone();
                let value = v.as_object().unwrap().values().next().unwrap();
                assert_eq!(value.as_str().unwrap().len(), 30, "kvsize: {v}");
            }
            "ssh" => {
                let ca = read(&format!("/v1/{m}/config/ca"))["public_key"].clone();
                assert!(ca.as_str().unwrap().starts_with("ssh-rsa "), "{ca}");
                let role = read(&format!("/v1/{m}/roles/vblast"));
                assert_eq!(role["allow_user_certificates"], true, "{role}");
                assert_eq!(role["key_type"], "ca", "{role}");
                assert_eq!(role["allowed_extensions"], "permit-pty", "{role}");
            }
            "totp" => {
                let key = read(&format!("/v1/{m}/keys/vblast"));
                assert_eq!(key["algorithm"], "SHA256", "{key}");
                assert_eq!(key["digits"], 8, "{key}");
                assert_eq!(key["period"], 60, "{key}");
            }
            "pki" if m.starts_with("vblast-pki-int-") => {
                let key = read(&format!("/v1/{m}/key/default"));
                assert_eq!(key["key_type"], "ec", "{key}");
                let role = read(&format!("/v1/{m}/roles/vblast"));
                assert_eq!(role["key_type"], "rsa", "{role}");
                assert_eq!(role["key_bits"], 2048, "{role}");
            }
            "database" => {
                let role = read(&format!("/v1/{m}/roles/vblast"));
                assert_eq!(role["default_ttl"], 60, "{role}");
                assert_eq!(role["max_ttl"], 300, "{role}");
                let conn = read(&format!("/v1/{m}/config/vblast"));
                assert_eq!(conn["plugin_name"], "postgresql-database-plugin", "{conn}");
                assert_eq!(
                    conn["connection_details"]["max_idle_connections"], 2,
                    "{conn}"
                );
            }
            _ => {}
        }
        seen.push(kind);
    }
    for a in &auths {
        if a.starts_with("vblast-userpass-") {
            let user = read(&format!("/v1/auth/{a}/users/vblast"));
            assert_eq!(user["token_ttl"], 60, "{user}");
            assert_eq!(user["token_num_uses"], 5, "{user}");
            seen.push("userpass".into());
        } else if a.starts_with("vblast-jwt-") {
            let role = read(&format!("/v1/auth/{a}/role/benchmark-role"));
            assert_eq!(role["user_claim"], "https://vault/user", "{role}");
            assert_eq!(
                role["bound_audiences"][0], "https://vault.plugin.auth.jwt.test",
                "{role}"
            );
            seen.push("jwt".into());
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen,
        ["database", "jwt", "kv", "pki", "ssh", "totp", "userpass"],
        "{mounts:?} {auths:?}"
    );
    // What `cleanup = false` kept, removed as an operator would: every `vblast-` object,
    // and the identity entities the logins on its auth paths made.
    let orphans = run(vault_cmd(&bao, &["cleanup", "--orphans", "--yes"]));
    orphans.assert_code(0);
    assert_eq!(server_state(&bao), before, "{}", orphans.show());
    assert_eq!(pg.vault_users(), 0, "database users left");
}

/// tests/data/vb-examples/*.hcl, vblast's own files exercising the keys of vault-benchmark's
/// PKI examples and test pages for the types vblast runs: each runs unchanged at -c 8 with
/// every request a success, and leaves the server as it found it.
#[test]
fn example_corpus_runs_at_c8_with_full_success_and_nothing_left() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/vb-examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hcl"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "{files:?}");
    for f in &files {
        let file = f.display().to_string();
        let r = run(vault_cmd(
            &bao,
            &[
                "--config", &file, "-n", "160", "-c", "8", "--format", "json",
            ],
        ));
        assert_eq!(r.code, Some(0), "{file}: {}", r.show());
        let j: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(j["requests"], 160, "{file}: {}", r.show());
        assert_eq!(j["ok"], 160, "{file}: {}", r.show());
        assert_eq!(server_state(&bao), before, "{file} left something behind");
    }
}

/// Every number of a file has its flag's bound, checked before setup (issue 36, item 2):
/// `kvsize` as `--secret-size` (16 MiB), `numkvs` as `--secrets` (ten million), one message,
/// exit 2, and nothing created on the server; `--secrets` given the same value too.
#[test]
fn a_files_numbers_are_held_to_their_flags_bounds_before_setup() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, kind: &str, config: &str| {
        let text = format!(
            "duration = \"2s\"\ntest \"{kind}\" \"t\" {{\n  weight = 100\n  config {{\n    {config}\n  }}\n}}\n"
        );
        write(dir.path(), name, &text).display().to_string()
    };
    let cases = [
        (
            file("size.hcl", "kvv2_write", "kvsize = 4000000000"),
            "--secret-size is larger than 16 MiB",
        ),
        (
            file("count.hcl", "kvv2_read", "numkvs = 18446744073709551615"),
            "--secrets 18446744073709551615 is more than 10000000",
        ),
    ];
    for (path, said) in &cases {
        for args in [
            vec!["--config", path.as_str()],
            vec!["vault-benchmark", "run", "-config", path.as_str()],
        ] {
            let r = run(vault_cmd(&bao, &args));
            assert_eq!(r.code, Some(2), "{args:?}: {}", r.show());
            assert!(r.stderr.contains(said), "{args:?}: {}", r.show());
            assert_eq!(server_state(&bao), before, "{args:?} created something");
        }
    }
    let r = run(vault_cmd(
        &bao,
        &[
            "--op",
            "kv-read",
            "--secrets",
            "18446744073709551615",
            "-n",
            "10",
        ],
    ));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(r.stderr.contains("is more than 10000000"), "{}", r.show());
    assert_eq!(server_state(&bao), before);
}

/// The numbers no flag of the same name bounds have bounds of their own, checked in the
/// same pass before setup (issue 36, item 2): a CA's `key_bits` as OpenBao takes them for
/// its `key_type`, identity's counts as their flags (ten million) and its spreads' sizes
/// (at most 100 alias paths an entity), transit's `context_len` (1 MiB). One file with
/// every hostile value: each named with its value and bound, exit 2, and no mount, auth
/// path, policy or entity on the server afterwards.
#[test]
fn a_files_nested_and_renamed_numbers_are_bounded_before_setup() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let dir = tempfile::tempdir().unwrap();
    let text = r#"duration = "2s"
test "pki_sign" "ca" {
  weight = 25
  config {
    root_ca {
      key_bits = 4000000000
    }
    intermediate_csr {
      key_type = "ec"
      key_bits = 2048
    }
  }
}
test "identity" "id" {
  weight = 25
  config {
    entity_count = 18446744073709551615
    aliases {
      count = 1
      size = 4000000000
    }
  }
}
test "transit_encrypt" "tr" {
  weight = 25
  config {
    context_len = 18446744073709551615
  }
}
test "kvv2_read" "kv" {
  weight = 25
}
"#;
    let path = write(dir.path(), "hostile.hcl", text).display().to_string();
    for args in [
        vec!["--config", path.as_str()],
        vec!["vault-benchmark", "run", "-config", path.as_str()],
    ] {
        let r = run(vault_cmd(&bao, &args));
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.show());
        for said in [
            "test 'ca': config.root_ca.key_bits = 4000000000 is not one of 0, 2048, 3072, 4096, 8192 (for key_type rsa)",
            "test 'ca': config.intermediate_csr.key_bits = 2048 is not one of 0, 224, 256, 384, 521 (for key_type ec)",
            "test 'id': config.entity_count = 18446744073709551615 is out of the bounds of --entities",
            "test 'id': config.aliases.size = 4000000000 is not between 0 and 100",
            "test 'tr': config.context_len = 18446744073709551615 is not between 0 and 1048576",
        ] {
            assert!(r.stderr.contains(said), "{args:?}: {said}: {}", r.show());
        }
        assert_eq!(server_state(&bao), before, "{args:?} created something");
    }
}

/// A file of 20,000 test blocks is refused by its count at once (weights of 1 to 100
/// adding up to 100 allow at most 100 tests), in one message; and a signal while a file
/// is read and checked ends the command with the signal's status (issue 36, item 7). The
/// file is a FIFO, so that the signal arrives while vblast is reading it: deterministic.
#[test]
fn many_tests_are_refused_by_their_count_and_a_signal_ends_the_check() {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..20_000)
        .map(|i| format!("test \"kvv2_read\" \"t{i}\" {{\n  weight = 1\n}}\n"))
        .collect();
    let path = write(dir.path(), "many.hcl", &text).display().to_string();
    let args = ["vault-benchmark", "run", "-config", path.as_str()];
    let r = run(env_cmd(&args, &[("VAULT_ADDR", "http://127.0.0.9:1")]));
    assert_eq!(r.code, Some(2), "{}", r.show());
    assert!(
        r.stderr
            .contains("20000 test blocks: a file holds at most 100 tests"),
        "{}",
        r.show()
    );
    assert_eq!(
        r.stderr.matches("vblast:").count(),
        1,
        "one message: {}",
        r.show()
    );

    let fifo = dir.path().join("slow.hcl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    let fifo_arg = fifo.display().to_string();
    let child = env_cmd(
        &["vault-benchmark", "run", "-config", fifo_arg.as_str()],
        &[("VAULT_ADDR", "http://127.0.0.9:1")],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Opening the FIFO's writing end without blocking succeeds once vblast has it open
    // for reading: it is then reading the file (its signal handlers are set before that).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut w = loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
        {
            Ok(f) => break f,
            Err(_) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            Err(e) => panic!("vblast never opened the file: {e}"),
        }
    };
    // SAFETY: fcntl on a descriptor this test owns, clearing O_NONBLOCK.
    unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETFL, 0) };
    // SAFETY: kill sends a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    w.write_all(text.as_bytes()).unwrap();
    drop(w);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("SIGTERM"), "{stderr}");
}
