//! The JSON Schemas of docs/schema/ against real outputs: results files (`--output`, a merge
//! of shards, a sweep) and JSON reports (`--format json`, `vblast report --format json`) of
//! runs against nginx (URL mode, plain and TLS, a cluster of two nodes) and an OpenBao dev
//! server (`--op kv-read`, a mix, a sweep), each validated by `tools/validate-json.py` with
//! the Python jsonschema package. Without that package the tests fail with the reason.

use crate::support::nginx::Nginx;
use crate::support::openbao::OpenBao;
use crate::support::run::{Out, lines, reader, run};
use crate::support::vblast::{env_cmd, url_cmd, vault_cmd};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The Python of the venv tools/deps.sh installs (jsonschema among others).
fn venv_python() -> PathBuf {
    let venv = std::env::var_os("VBLAST_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/vblast/venv")
        });
    venv.join("bin/python")
}

/// `tools/validate-json.py SCHEMA FILES...`: its exit code and what it said.
fn validator(schema: &str, files: &[&Path]) -> (Option<i32>, String) {
    let python = venv_python();
    assert!(
        python.exists(),
        "{} missing: run tools/deps.sh (it installs the Python jsonschema package into the venv)",
        python.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/validate-json.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(schema)
        .args(files)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// Every file is valid against `schema` (a missing jsonschema fails here, with the reason).
pub fn assert_valid(schema: &str, files: &[&Path]) {
    let (code, text) = validator(schema, files);
    assert_eq!(code, Some(0), "{schema}: {text}");
}

/// Writes `text` into `dir/name` and returns the path.
fn save(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `out`'s stdout (a JSON report) saved as `dir/name`, after checking it is JSON.
fn report_of(out: &Out, dir: &Path, name: &str) -> PathBuf {
    let _: Value = out.json();
    save(dir, name, &out.stdout)
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn url_mode_outputs_match_the_schemas() {
    let ng = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let url = format!("{}/v1/secret/data/foo", ng.addr);

    // Closed model, every request ok.
    let closed = d.join("closed.json");
    let out = run(url_cmd(&[
        "-c",
        "4",
        "-n",
        "300",
        "--format",
        "json",
        "--output",
        &s(&closed),
        &url,
    ]));
    out.assert_code(0);
    let closed_report = report_of(&out, d, "closed-report.json");

    // Open model, redirects not followed (to another path): failures, their messages,
    // status codes, the redirect count.
    let failing = d.join("failing.json");
    let out = run(url_cmd(&[
        "-R",
        "200",
        "-n",
        "200",
        "-c",
        "4",
        "--follow-redirects",
        "--format",
        "json",
        "--output",
        &s(&failing),
        &format!("{}/status/307", ng.addr),
    ]));
    out.assert_code(1);
    let failing_report = report_of(&out, d, "failing-report.json");
    let j: Value = out.json();
    assert!(j["redirects"].as_u64().unwrap_or(0) > 0, "{}", out.show());
    // A ramp of the open model, answered by a bare 429 (a non-2xx error).
    let out = run(url_cmd(&[
        "-R",
        "100..300",
        "--ramp",
        "1s",
        "-z",
        "2s",
        "-c",
        "4",
        "--format",
        "json",
        "--output",
        &s(&d.join("throttled.json")),
        &format!("{}/status/429", ng.addr),
    ]));
    out.assert_code(1);
    let throttled_report = report_of(&out, d, "throttled-report.json");

    // A quota's 429 (Retry-After, X-Ratelimit-Limit): throttled answers.
    let quota = Nginx::with_extra(
        "location = /v1/quota { add_header Retry-After 1 always; add_header X-Ratelimit-Limit 100 always; return 429 '{\"errors\":[\"rate limit quota exceeded\"]}'; }",
    );
    let throttled = d.join("quota.json");
    let out = run(url_cmd(&[
        "-c",
        "2",
        "-n",
        "50",
        "--format",
        "json",
        "--output",
        &s(&throttled),
        &format!("{}/v1/quota", quota.addr),
    ]));
    out.assert_code(1);
    let j: Value = out.json();
    assert!(j["throttled"].as_u64().unwrap_or(0) > 0, "{}", out.show());
    assert!(j["ratelimit_limit"].as_u64().is_some(), "{}", out.show());
    let quota_report = report_of(&out, d, "quota-report.json");

    // Two shards of one run, and their merge.
    let shards: Vec<PathBuf> = (0..2).map(|i| d.join(format!("shard-{i}.json"))).collect();
    for (i, f) in shards.iter().enumerate() {
        let shard = format!("{i}/2");
        let out = run(url_cmd(&[
            "-c",
            "4",
            "-n",
            "200",
            "--shard",
            &shard,
            "--run-id",
            "schema-test",
            "--output",
            &s(f),
            &url,
        ]));
        out.assert_code(0);
    }
    let merged = d.join("merged.json");
    let out = run(url_cmd(&[
        "report",
        &s(&shards[0]),
        &s(&shards[1]),
        "--format",
        "json",
        "--output",
        &s(&merged),
    ]));
    out.assert_code(0);
    let merged_report = report_of(&out, d, "merged-report.json");
    let out = run(url_cmd(&["report", &s(&closed), "--format", "json"]));
    out.assert_code(0);
    let rendered_again = report_of(&out, d, "closed-again.json");

    assert_valid(
        "results.schema.json",
        &[
            &closed,
            &failing,
            &d.join("throttled.json"),
            &throttled,
            &shards[0],
            &shards[1],
            &merged,
        ],
    );
    assert_valid(
        "report.schema.json",
        &[
            &closed_report,
            &failing_report,
            &throttled_report,
            &quota_report,
            &merged_report,
            &rendered_again,
        ],
    );
    for f in &shards {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        assert!(
            v.get("shard").is_some(),
            "a shard's file has its record: {v}"
        );
    }
}

#[test]
fn tls_outputs_match_the_schemas() {
    let (ng, _files) = Nginx::start_tls_generated();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("tls.json");
    let out = run(url_cmd(&[
        "-k",
        "-c",
        "2",
        "-n",
        "100",
        "--no-keepalive",
        "--format",
        "json",
        "--output",
        &s(&file),
        &format!("{}/v1/secret/data/foo", ng.addr),
    ]));
    out.assert_code(0);
    let report = report_of(&out, d, "tls-report.json");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(saved.get("tls_probe").is_some(), "{saved}");
    assert_valid("results.schema.json", &[&file]);
    assert_valid("report.schema.json", &[&report]);
}

/// `sys/health` of a node of the two-nginx cluster below.
const HEALTH: &str = r#"{"initialized":true,"sealed":false,"standby":false,"cluster_id":"schema-test","cluster_name":"nginx"}"#;

#[test]
fn cluster_outputs_match_the_schemas() {
    let standby = HEALTH.replace("\"standby\":false", "\"standby\":true");
    let node = |health: &str, status: u16| {
        Nginx::with_extra(&format!(
            "location = /v1/sys/health {{ return {status} '{health}'; }}
    location = /v1/sys/seal-status {{ return 200 '{{\"sealed\":false}}'; }}"
        ))
    };
    let active = node(HEALTH, 200);
    // The standby answers the load with a 307 to the active node, which --follow-redirects
    // follows: redirects, followed and hops in the node rows.
    let standby = Nginx::with_extra(&format!(
        "location = /v1/sys/health {{ return 429 '{standby}'; }}
    location = /v1/sys/seal-status {{ return 307 {}/v1/sys/seal-status; }}",
        active.addr
    ));
    let nodes = [active, standby];
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("cluster.json");
    let out = run(env_cmd(
        &[
            "--address",
            &nodes[0].addr,
            "--address",
            &nodes[1].addr,
            "--nodes",
            "all",
            "--follow-redirects",
            "--op",
            "seal-status",
            "-c",
            "4",
            "-n",
            "200",
            "--format",
            "json",
            "--output",
            &s(&file),
        ],
        &[("VAULT_TOKEN", "test-token")],
    ));
    out.assert_code(0);
    let j: Value = out.json();
    assert_eq!(
        j["nodes"].as_array().map(Vec::len),
        Some(2),
        "{}",
        out.show()
    );
    assert!(j["followed"].as_u64().unwrap_or(0) > 0, "{}", out.show());
    let report = report_of(&out, d, "cluster-report.json");
    assert_valid("results.schema.json", &[&file]);
    assert_valid("report.schema.json", &[&report]);
}

#[test]
fn vault_mode_outputs_match_the_schemas() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    let read = d.join("kv-read.json");
    let out = run(vault_cmd(
        &bao,
        &[
            "-c",
            "4",
            "-n",
            "400",
            "--op",
            "kv-read",
            "--format",
            "json",
            "--output",
            &s(&read),
        ],
    ));
    out.assert_code(0);
    let read_report = report_of(&out, d, "kv-read-report.json");

    let mix = d.join("mix.json");
    let out = run(vault_cmd(
        &bao,
        &[
            "-R",
            "200",
            "-z",
            "2s",
            "--warmup",
            "500ms",
            "-c",
            "4",
            "--op",
            "kv-read:80,kv-write:10,approle-login:10",
            "--format",
            "json",
            "--output",
            &s(&mix),
        ],
    ));
    out.assert_code(0);
    let mix_report = report_of(&out, d, "mix-report.json");

    // A sweep: its file, its --format json (the same document) and its report again.
    let sweep = d.join("sweep.json");
    let out = run(vault_cmd(
        &bao,
        &[
            "sweep",
            "--op",
            "kv-read",
            "--rate",
            "50..200",
            "--steps",
            "2",
            // Steps long enough, and an objective loose enough, that a step on a machine at
            // load 14 (where a 2 s step once completed no request) still has its figures.
            "--step-duration",
            "4s",
            "--step-warmup",
            "200ms",
            "--slo",
            "p50=60s",
            "-c",
            "4",
            "--format",
            "json",
            "--output",
            &s(&sweep),
        ],
    ));
    out.assert_code(0);
    let sweep_printed = report_of(&out, d, "sweep-printed.json");
    let out = run(url_cmd(&["report", &s(&sweep), "--format", "json"]));
    out.assert_code(0);
    let sweep_again = report_of(&out, d, "sweep-again.json");

    assert_valid(
        "results.schema.json",
        &[&read, &mix, &sweep, &sweep_printed, &sweep_again],
    );
    assert_valid("report.schema.json", &[&read_report, &mix_report]);
}

/// The schemas are closed where the formats are, and the validator is real: a key vblast
/// does not write, a missing key, a wrong type and a sweep passed as a report are refused.
#[test]
fn the_schemas_refuse_what_vblast_does_not_write() {
    let ng = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("run.json");
    let out = run(url_cmd(&[
        "-c",
        "2",
        "-n",
        "50",
        "--format",
        "json",
        "--output",
        &s(&file),
        &format!("{}/v1/secret/data/foo", ng.addr),
    ]));
    out.assert_code(0);
    let report: Value = out.json();
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_valid("report.schema.json", &[&save(d, "ok.json", &out.stdout)]);

    type Edit = fn(&mut Value);
    let edits: [(&str, Edit); 6] = [
        ("an unknown key", |v| {
            v["surprise"] = Value::from(1);
        }),
        ("a missing key", |v| {
            v.as_object_mut().unwrap().remove("latency_ms");
        }),
        ("a wrong type", |v| {
            v["requests"] = Value::from("many");
        }),
        ("an unknown key in a nested object", |v| {
            v["run"]["surprise"] = Value::from(true);
        }),
        ("a negative count", |v| {
            v["errors"]["read"] = Value::from(-1);
        }),
        ("an unknown model", |v| {
            v["run"]["model"] = Value::from("half-open");
        }),
    ];
    for (what, edit) in edits {
        for (schema, base) in [
            ("report.schema.json", &report),
            ("results.schema.json", &results),
        ] {
            let mut v = base.clone();
            edit(&mut v);
            let p = save(d, "bad.json", &v.to_string());
            let (code, text) = validator(schema, &[&p]);
            assert_eq!(code, Some(1), "{schema} accepted {what}: {text}");
        }
    }
    // A report is not a results file (no histograms), nor the other way round.
    let (code, text) = validator("results.schema.json", &[&save(d, "r.json", &out.stdout)]);
    assert_eq!(code, Some(1), "a report passed as a results file: {text}");
    let (code, text) = validator("report.schema.json", &[&file]);
    assert_eq!(code, Some(1), "a results file passed as a report: {text}");
    // A damaged histogram.
    let mut v = results.clone();
    v["stats"]["connect"] = Value::from("not base64!");
    let (code, text) = validator("results.schema.json", &[&save(d, "h.json", &v.to_string())]);
    assert_eq!(code, Some(1), "a damaged histogram: {text}");
}

/// A failover mid-run: the active node (nginx) failing the load and stepping down, the
/// standby taking over; the window of unavailability in the report (`windows`) and in the results file
/// (`stats.windows`).
#[test]
fn a_failover_window_matches_the_schemas() {
    let standby_health = HEALTH.replace("\"standby\":false", "\"standby\":true");
    let flags = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        flags.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let flag = flags.path().join("active");
    // The old active node fails the load (503) and says it is a standby once the flag
    // file exists; the new one then says it is active.
    let old = Nginx::with_extra(&format!(
        "location = /v1/sys/health {{
        if (-f {f}) {{ return 429 '{standby_health}'; }}
        return 200 '{HEALTH}';
    }}
    location = /v1/sys/seal-status {{
        if (-f {f}) {{ return 503 '{{\"errors\":[\"stepping down\"]}}'; }}
        return 200 '{{\"sealed\":false}}';
    }}",
        f = flag.display()
    ));
    let new = Nginx::with_extra(&format!(
        "location = /v1/sys/health {{
        if (-f {}) {{ return 200 '{HEALTH}'; }}
        return 429 '{standby_health}';
    }}
    location = /v1/sys/seal-status {{ return 200 '{{\"sealed\":false}}'; }}",
        flag.display()
    ));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("failover.json");
    let mut cmd = env_cmd(
        &[
            "--address",
            &old.addr,
            "--address",
            &new.addr,
            "--op",
            "seal-status",
            "-R",
            "200",
            "-z",
            "4s",
            "-c",
            "4",
            "--timeout",
            "1s",
            "--progress",
            "--format",
            "json",
            "--output",
            &s(&file),
        ],
        &[("VAULT_TOKEN", "test-token")],
    );
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn vblast");
    let stdout = reader(child.stdout.take().unwrap());
    let stderr = lines(child.stderr.take().unwrap());
    // The load is under way once the first progress line is out (so never during the
    // cluster check): then the active node steps down, and the standby takes over.
    let mut said = Vec::new();
    loop {
        let line = stderr
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no progress line: {said:?}"));
        // The load's line ("progress: 1s ..."), not a setup phase's ("progress: checks ...").
        let progress = line
            .strip_prefix("progress: ")
            .and_then(|r| r.split_once("s "))
            .is_some_and(|(secs, _)| secs.parse::<u64>().is_ok());
        said.push(line);
        if progress {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(&flag, "").unwrap();
    // The rest of stderr until vblast ends (60 s at most: a hang fails the test).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match stderr.recv_timeout(left) {
            Ok(line) => said.push(line),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("vblast still running after 60 s; killed: {said:?}");
            }
        }
    }
    let status = child.wait().unwrap();
    let stdout = stdout.join().unwrap();
    let show = format!("stdout:\n{stdout}\nstderr:\n{}", said.join("\n"));
    assert_eq!(status.code(), Some(1), "{show}");
    let j: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {show}"));
    assert!(
        j["windows"].as_array().is_some_and(|w| !w.is_empty()),
        "{show}"
    );
    let report = save(d, "failover-report.json", &stdout);
    assert_valid("results.schema.json", &[&file]);
    assert_valid("report.schema.json", &[&report]);
}
