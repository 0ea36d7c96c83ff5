//! Thresholds (issue 38 items 1-3) against a real OpenBao dev server and nginx: a run whose
//! thresholds hold exits 0, one broken (a bound no real server meets, `p50<1us`: its whole
//! interval lies beyond it) exits 99, one unclear (p99.99 of 50 requests: too few samples to
//! bound it) exits 98; every format shows the verdicts (text, JSON, the results file and its
//! schema, HTML, the Prometheus gauge, JUnit read back by the Python junitparser package);
//! per-operation thresholds, a vault-benchmark file's threshold blocks, `vblast ab`,
//! `--threshold-abort` (stopped before its count, cleaned up), `vblast compare --fail-on`
//! both ways, and the bad inputs (exit 2, nothing sent). No time or throughput is asserted.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::nginx::Nginx;
use crate::support::openbao::{OpenBao, ServerState, live_tokens, server_state};
use crate::support::ports::free_port;
use crate::support::run::{Out, run, spawn};
use crate::support::vblast::{url_cmd, vault_cmd};

/// The venv's Python, with junitparser (tools/deps.sh).
fn venv_python() -> PathBuf {
    std::env::var_os("VBLAST_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/vblast/venv")
        })
        .join("bin/python")
}

/// The test cases of a JUnit file as junitparser reads them: (name, outcome), the outcome
/// "passed", "failure" or "error".
fn junit_cases(path: &Path) -> Vec<(String, String)> {
    const READ: &str = r#"
import json, sys
from junitparser import JUnitXml, Failure, Error
cases = []
for suite in JUnitXml.fromfile(sys.argv[1]):
    for case in suite:
        kinds = [type(r).__name__ for r in case.result]
        outcome = "failure" if any(isinstance(r, Failure) for r in case.result) else \
                  "error" if any(isinstance(r, Error) for r in case.result) else "passed"
        cases.append([case.name, outcome])
print(json.dumps(cases))
"#;
    let python = venv_python();
    let out = Command::new(&python)
        .arg("-c")
        .arg(READ)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e} (run tools/deps.sh)", python.display()));
    assert!(
        out.status.success(),
        "junitparser could not read {} (tools/deps.sh installs it): {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn verdicts(j: &Value) -> Vec<(String, String)> {
    j["thresholds"]
        .as_array()
        .unwrap_or_else(|| panic!("no thresholds in {j}"))
        .iter()
        .map(|t| {
            (
                t["threshold"].as_str().unwrap().to_string(),
                t["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn with_thresholds<'a>(mut args: Vec<&'a str>, thresholds: &[&'a str]) -> Vec<&'a str> {
    for t in thresholds {
        args.push("--threshold");
        args.push(t);
    }
    args
}

#[test]
fn thresholds_that_hold_exit_0_and_a_broken_one_99_in_every_format() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let before = server_state(&bao);
    // Holds: bounds any server meets.
    let holds = [
        "p99<60s",
        "kv-read:p99<60s",
        "errors<1",
        "success>=99%",
        "max<120s",
    ];
    let out = run(vault_cmd(
        &bao,
        &with_thresholds(
            vec![
                "--op", "kv-read", "-n", "1500", "-c", "2", "--format", "json",
            ],
            &holds,
        ),
    ));
    out.assert_code(0);
    let j = out.json();
    let all_hold: Vec<(&str, &str)> = holds.iter().map(|t| (*t, "holds")).collect();
    assert_eq!(verdicts(&j), pairs(&all_hold), "{}", out.show());

    // Broken: p50 under a microsecond, which no server answers in.
    let results = dir.path().join("run.json");
    let html = dir.path().join("run.html");
    let junit = dir.path().join("run.xml");
    let mport = free_port();
    let maddr = format!("127.0.0.1:{mport}");
    let args = with_thresholds(
        vec![
            "--op",
            "kv-read",
            "-n",
            "1500",
            "-c",
            "2",
            "-o",
            results.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--metrics-listen",
            &maddr,
            "--metrics-hold",
            "20s",
        ],
        &["p50<1us", "kv-read:p99<60s"],
    );
    let running = spawn(vault_cmd(&bao, &args));
    // The gauge, once the run has ended (the exporter holds the final figures).
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut scraped = String::new();
    while Instant::now() < deadline && !scraped.contains("vblast_threshold_verdict{") {
        std::thread::sleep(Duration::from_millis(250));
        scraped = crate::support::client::scrape(&maddr);
    }
    let out = running.finish(Duration::from_secs(180));
    out.assert_code(99);
    assert!(
        scraped.contains("vblast_threshold_verdict{threshold=\"p50<1us\"} 2"),
        "{scraped}"
    );
    assert!(
        scraped.contains("vblast_threshold_verdict{threshold=\"kv-read:p99<60s\"} 0"),
        "{scraped}"
    );
    // Text: one line per threshold with its verdict and why.
    assert!(out.stdout.contains("Thresholds:"), "{}", out.show());
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("p50<1us"))
        .unwrap_or_else(|| panic!("{}", out.show()));
    assert!(line.trim_start().starts_with("broken"), "{line}");
    assert!(line.contains("lies beyond < 1us"), "{line}");
    // The results file (and its schema), and vblast report of it.
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    assert_eq!(
        verdicts(&saved),
        pairs(&[("p50<1us", "broken"), ("kv-read:p99<60s", "holds")])
    );
    assert!(saved["thresholds"][0]["ci_low"].as_f64().unwrap() > 0.001);
    crate::schema::assert_valid("results.schema.json", &[&results]);
    let report = run(url_cmd(&[
        "report",
        results.to_str().unwrap(),
        "--format",
        "json",
    ]));
    report.assert_code(0);
    assert_eq!(verdicts(&report.json()), verdicts(&saved));
    // HTML.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<h2>Thresholds</h2>"),
        "no thresholds section"
    );
    assert!(
        page.contains("p50&lt;1us"),
        "the threshold is not on the page"
    );
    // JUnit, read by a real consumer.
    assert_eq!(
        junit_cases(&junit),
        pairs(&[("p50<1us", "failure"), ("kv-read:p99<60s", "passed")])
    );
    assert_eq!(server_state(&bao), before, "the runs left something behind");
}

#[test]
fn too_few_samples_to_bound_a_percentile_is_unclear_and_exits_98() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("unclear.xml");
    // p99.99 of 50 requests: no sample ranks above it, so its upper side is unknown.
    let out = run(vault_cmd(
        &bao,
        &[
            "--op",
            "kv-read",
            "-n",
            "50",
            "-c",
            "1",
            "--format",
            "json",
            "--threshold",
            "p99.99<60s",
            "--junit",
            junit.to_str().unwrap(),
        ],
    ));
    out.assert_code(98);
    assert_eq!(verdicts(&out.json()), pairs(&[("p99.99<60s", "unclear")]));
    assert!(
        out.json()["thresholds"][0]["why"]
            .as_str()
            .unwrap()
            .contains("too few samples"),
        "{}",
        out.show()
    );
    assert_eq!(junit_cases(&junit), pairs(&[("p99.99<60s", "error")]));
}

const VB_FILE: &str = r#"
duration = "2s"
workers = 2
test "kvv2_read" "reads" {
  weight = 50
  config {
    numkvs = 10
  }
}
test "kvv2_write" "writes" {
  weight = 50
  config {
    numkvs = 10
  }
}
threshold {
  p99    = "< 60s"
  errors = "< 1"
}
threshold "reads" {
  p50 = "< 1us"
}
threshold "writes" {
  success = ">= 99%"
}
"#;

#[test]
fn a_vault_benchmark_file_carries_per_test_thresholds() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let before = server_state(&bao);
    let file = dir.path().join("bench.hcl");
    std::fs::write(&file, VB_FILE).unwrap();
    let config = format!("-config={}", file.display());
    let out = run(vault_cmd(&bao, &["vault-benchmark", "run", &config]));
    out.assert_code(99);
    for (t, v) in [
        ("p99<60s", "holds"),
        ("errors<1", "holds"),
        ("reads:p50<1us", "broken"),
        ("writes:success>=99%", "holds"),
    ] {
        let line = out
            .stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(t))
            .unwrap_or_else(|| panic!("no line for {t}: {}", out.show()));
        assert!(line.trim_start().starts_with(v), "{line}");
    }
    // vblast run --config reads the same blocks, and takes --threshold beside them.
    let out = run(vault_cmd(
        &bao,
        &[
            "--config",
            file.to_str().unwrap(),
            "--format",
            "json",
            "--threshold",
            "writes:p99<60s",
        ],
    ));
    out.assert_code(99);
    assert_eq!(verdicts(&out.json()).len(), 5, "{}", out.show());
    // A block naming a test the file does not have: exit 2, nothing sent.
    std::fs::write(
        &file,
        VB_FILE.replace("threshold \"writes\"", "threshold \"deletes\""),
    )
    .unwrap();
    let out = run(vault_cmd(&bao, &["vault-benchmark", "run", &config]));
    out.assert_code(2);
    assert!(
        out.stderr.contains("no operation 'deletes'"),
        "{}",
        out.show()
    );
    assert_eq!(server_state(&bao), before, "the runs left something behind");
}

/// A vault-benchmark file's `abort = true` (with `abort_grace`) is `--threshold-abort`: a
/// 10-minute run whose test breaks its threshold stops early with exit 99 naming it, and
/// leaves the server as found.
#[test]
fn a_vault_benchmark_files_abort_stops_the_run_on_a_broken_threshold() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let before = server_state(&bao);
    let file = dir.path().join("bench.hcl");
    let text = VB_FILE
        .replace("duration = \"2s\"", "duration = \"600s\"")
        .replace(
            "  errors = \"< 1\"\n}",
            "  errors = \"< 1\"\n  abort = true\n  abort_grace = \"1s\"\n}",
        );
    assert!(text.contains("abort = true") && text.contains("600s"));
    std::fs::write(&file, text).unwrap();
    let config = format!("-config={}", file.display());
    let out = run(vault_cmd(&bao, &["vault-benchmark", "run", &config]));
    out.assert_code(99);
    assert!(
        out.stderr
            .contains("stopped early: the threshold reads:p50<1us was broken"),
        "{}",
        out.show()
    );
    assert_eq!(server_state(&bao), before, "the run left something behind");
}

#[test]
fn ab_takes_thresholds() {
    let ng = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("ab.xml");
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let out = run(url_cmd(&[
        "ab",
        "-n",
        "500",
        "-c",
        "2",
        "--threshold",
        "p99<60s",
        "--threshold",
        "url:errors<1",
        &url,
    ]));
    out.assert_code(0);
    assert!(out.stdout.contains("holds   p99<60s"), "{}", out.show());
    let out = run(url_cmd(&[
        "ab",
        "-n",
        "500",
        "-c",
        "2",
        "--threshold=p50<1us",
        "--junit",
        junit.to_str().unwrap(),
        &url,
    ]));
    out.assert_code(99);
    assert_eq!(junit_cases(&junit), pairs(&[("p50<1us", "failure")]));
    // --threshold-abort: judged live, the run stops long before its count. Live figures
    // are the buckets (10us, 25us, ... 10s); a p50 under the first would show no bucket above
    // 1us, so the test takes a lower bound the p50 certainly misses (`p50>10s`), broken on the
    // buckets at any speed of the server.
    let out = run(url_cmd(&[
        "ab",
        "-n",
        "5000000",
        "-c",
        "2",
        "--threshold=p50>10s",
        "--threshold-abort",
        "--threshold-grace",
        "1s",
        &url,
    ]));
    out.assert_code(99);
    assert!(
        out.stderr
            .contains("stopped early: the threshold p50>10s was broken"),
        "{}",
        out.show()
    );
}

#[test]
fn threshold_abort_stops_the_run_before_its_count_and_cleans_up() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let n: u64 = 5_000_000;
    let out = run(vault_cmd(
        &bao,
        &[
            "--op",
            "kv-read",
            "-n",
            &n.to_string(),
            "-c",
            "2",
            "--format",
            "json",
            "--threshold",
            "p50<1us",
            "--threshold-abort",
            "--threshold-grace",
            "1s",
        ],
    ));
    out.assert_code(99);
    let j = out.json();
    let requests = j["requests"].as_u64().unwrap();
    assert!(requests > 0 && requests < n, "{requests} of {n}");
    assert!(
        j["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x.as_str().unwrap().contains("stopped early")),
        "{}",
        out.show()
    );
    assert!(out.stderr.contains("stopped early"), "{}", out.show());
    assert_eq!(verdicts(&j), pairs(&[("p50<1us", "broken")]));
    assert_eq!(
        server_state(&bao),
        before,
        "the aborted run left something behind"
    );
    // Within --threshold-grace nothing stops the run: it makes every request, and the
    // threshold judged at its end exits 99.
    let out = run(vault_cmd(
        &bao,
        &[
            "--op",
            "kv-read",
            "-n",
            "2000",
            "-c",
            "2",
            "--format",
            "json",
            "--threshold",
            "p50<1us",
            "--threshold-abort",
            "--threshold-grace",
            "1h",
        ],
    ));
    out.assert_code(99);
    assert_eq!(
        out.json()["requests"].as_u64(),
        Some(2000),
        "{}",
        out.show()
    );
    assert!(!out.stderr.contains("stopped early"), "{}", out.show());
    assert_eq!(server_state(&bao), before, "the run left something behind");
}

/// A run stopped by `--threshold-abort`: exit 99, fewer requests than asked, the note
/// naming `threshold` on stdout's JSON and stderr.
fn assert_stopped_by(out: &Out, threshold: &str, asked: u64) {
    out.assert_code(99);
    let j = out.json();
    let requests = j["requests"].as_u64().unwrap();
    assert!(requests < asked, "{requests} of {asked}: {}", out.show());
    let note = format!("the threshold {threshold} was broken");
    assert!(
        j["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x.as_str().unwrap().contains(&note)),
        "{}",
        out.show()
    );
    assert!(out.stderr.contains(&note), "{}", out.show());
}

/// Every kind of threshold is judged live: one operation's percentile (OpenBao), the
/// achieved rate (an open model at 20/s against a bound of 100,000/s), a lower bound on
/// latency (p50 over 30 s, which nginx never takes), one operation's error count (a 404
/// path): each stops the run with its own threshold named, and the OpenBao run leaves the
/// server as it found it. Bounds certain to hold, of every kind, let a run finish.
#[test]
fn threshold_abort_judges_every_kind_of_threshold_live() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    let n: u64 = 5_000_000;
    let ns = n.to_string();
    let abort = ["--threshold-abort", "--threshold-grace", "1s"];
    let mut args = vec![
        "--op",
        "kv-read:1,kv-write:1",
        "-n",
        &ns,
        "-c",
        "2",
        "--format",
        "json",
        "--threshold",
        "kv-read:p99<60s",
        "--threshold",
        "kv-write:p50<1us",
    ];
    args.extend(abort);
    let out = run(vault_cmd(&bao, &args));
    assert_stopped_by(&out, "kv-write:p50<1us", n);
    assert_eq!(
        server_state(&bao),
        before,
        "the aborted run left something behind"
    );

    let ng = Nginx::start();
    let ok = format!("{}/v1/secret/data/foo", ng.addr);
    let missing = format!("{}/status/404", ng.addr);
    let url_run = |url: &str, more: &[&str]| {
        let mut a = vec![url, "-c", "2", "--format", "json"];
        a.extend(more);
        a.extend(abort);
        run(url_cmd(&a))
    };
    // The rate: at most 20/s scheduled, for up to 10 minutes, against 100,000/s.
    let out = url_run(
        &ok,
        &["-R", "20", "-z", "600s", "--threshold", "rate>=100000/s"],
    );
    assert_stopped_by(&out, "rate>=100000/s", 20 * 600);
    // A lower bound on latency.
    let out = url_run(&ok, &["-n", &ns, "--threshold", "p50>30s"]);
    assert_stopped_by(&out, "p50>30s", n);
    // One operation's errors (URL mode's one operation is "url").
    let out = url_run(
        &missing,
        &["-n", &ns, "--allow-errors", "--threshold", "url:errors<1"],
    );
    assert_stopped_by(&out, "url:errors<1", n);
    // The same over worker processes: their progress carries each operation's figures.
    let mut cmd = url_cmd(&[
        &missing,
        "-c",
        "300",
        "--format",
        "json",
        "-n",
        &ns,
        "--allow-errors",
        "--threshold",
        "url:errors<1",
        "--threshold-abort",
        "--threshold-grace",
        "1s",
    ]);
    cmd.env("VBLAST_PROCESS_FDS", "150");
    let out = run(cmd);
    assert!(
        out.json()["run"]["processes"].as_u64().unwrap_or(0) >= 2,
        "{}",
        out.show()
    );
    assert_stopped_by(&out, "url:errors<1", n);

    // Bounds certain to hold run to their count.
    let out = url_run(
        &ok,
        &[
            "-n",
            "3000",
            "--threshold",
            "url:p99<60s",
            "--threshold",
            "url:p50>=1us",
            "--threshold",
            "url:rate>=0.01/s",
            "--threshold",
            "url:errors<1",
            "--threshold",
            "success>=50%",
            "--threshold",
            "mean<60s",
        ],
    );
    out.assert_code(0);
    let j = out.json();
    assert_eq!(j["requests"].as_u64(), Some(3000), "{}", out.show());
    assert!(!out.stderr.contains("stopped early"), "{}", out.show());
}

/// The server's state with its live tokens counted apart (`live_tokens`): a token
/// creation a stopped run cut short (its connection closed) can leave an accessor that
/// names no token, which only `auth/token/tidy` removes.
fn tokens_apart(bao: &OpenBao) -> (ServerState, u64) {
    let s = ServerState {
        tokens: 0,
        ..server_state(bao)
    };
    (s, live_tokens(bao))
}

/// A threshold on one step of an operation of several requests (`token-revoke`: a
/// token created, `token-revoke/create`, then revoked) is judged live like any
/// operation's: each step's figures ride in the once-a-second progress report, from the
/// event-loop threads and from worker processes. A bound no server meets stops the run
/// with exit 99 naming it, leaving the server as found; bounds certain to hold let the
/// run make all its requests with exit 0.
#[test]
fn threshold_abort_judges_a_step_of_an_operation_live() {
    let bao = OpenBao::start();
    let before = tokens_apart(&bao);
    let n: u64 = 5_000_000;
    let ns = n.to_string();
    let step_run = |more: &[&str], fds: Option<&str>| {
        let mut a = vec!["--op", "token-revoke", "--format", "json"];
        a.extend(more);
        a.extend(["--threshold-abort", "--threshold-grace", "1s"]);
        let mut cmd = vault_cmd(&bao, &a);
        if let Some(fds) = fds {
            cmd.env("VBLAST_PROCESS_FDS", fds);
        }
        run(cmd)
    };
    let impossible = [
        "--threshold",
        "token-revoke:p50<60s",
        "--threshold",
        "token-revoke/create:p50<1us",
    ];
    // In threads.
    let mut a = vec!["-n", &ns, "-c", "2"];
    a.extend(impossible);
    let out = step_run(&a, None);
    assert_stopped_by(&out, "token-revoke/create:p50<1us", n);
    assert_eq!(
        tokens_apart(&bao),
        before,
        "the aborted run left something behind"
    );
    // In worker processes (300 connections, 150 a process).
    let mut a = vec!["-n", &ns, "-c", "300"];
    a.extend(impossible);
    let out = step_run(&a, Some("150"));
    assert!(
        out.json()["run"]["processes"].as_u64().unwrap_or(0) >= 2,
        "{}",
        out.show()
    );
    assert_stopped_by(&out, "token-revoke/create:p50<1us", n);
    assert_eq!(
        tokens_apart(&bao),
        before,
        "the aborted run left something behind"
    );
    // Bounds certain to hold: every request is made.
    let out = step_run(
        &[
            "-n",
            "4000",
            "-c",
            "2",
            "--threshold",
            "token-revoke/create:p50<60s",
            "--threshold",
            "token-revoke/create:p50>=1us",
            "--threshold",
            "token-revoke/create:mean<60s",
        ],
        None,
    );
    out.assert_code(0);
    let j = out.json();
    assert_eq!(j["requests"].as_u64(), Some(4000), "{}", out.show());
    assert!(!out.stderr.contains("stopped early"), "{}", out.show());
    assert_eq!(
        verdicts(&j),
        pairs(&[
            ("token-revoke/create:p50<60s", "holds"),
            ("token-revoke/create:p50>=1us", "holds"),
            ("token-revoke/create:mean<60s", "holds"),
        ])
    );
}

#[test]
fn compare_fails_only_beyond_the_noise_of_both_runs() {
    let ng = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    run(url_cmd(&[
        "-n",
        "3000",
        "-c",
        "2",
        "-q",
        "-o",
        base.to_str().unwrap(),
        &url,
    ]))
    .assert_code(0);
    let b = base.to_str().unwrap();
    // The same run twice: no change is beyond the noise of the two.
    let junit = dir.path().join("compare.xml");
    let out = run(url_cmd(&[
        "compare",
        b,
        b,
        "--fail-on",
        "p99>+10%",
        "--fail-on",
        "rate<-5%",
        "--junit",
        junit.to_str().unwrap(),
    ]));
    out.assert_code(0);
    assert!(out.stdout.contains("Fail-on"), "{}", out.show());
    assert_eq!(
        junit_cases(&junit),
        pairs(&[
            ("base.json: p99>+10%", "passed"),
            ("base.json: rate<-5%", "passed")
        ])
    );
    // A bound any run breaks: p50 changed by more than -50% (it changed by 0%, and the
    // intervals are narrower than a factor of two).
    let out = run(url_cmd(&[
        "compare",
        b,
        b,
        "--fail-on",
        "p50>-50%",
        "--junit",
        junit.to_str().unwrap(),
    ]));
    out.assert_code(99);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("p50>-50%"))
        .unwrap_or_else(|| panic!("{}", out.show()));
    assert!(line.trim_start().starts_with("broken"), "{line}");
    assert!(
        line.contains("even at the ends of both intervals"),
        "{line}"
    );
    assert_eq!(
        junit_cases(&junit),
        pairs(&[("base.json: p50>-50%", "failure")])
    );
    // Bad lines: exit 2.
    for bad in ["p99>10", "latency>+10%", "nosuch:p99>+10%"] {
        let out = run(url_cmd(&["compare", b, b, "--fail-on", bad]));
        out.assert_code(2);
    }
}

/// The verdict line of `fail_on` in `vblast compare`'s text: (verdict, the rest).
fn fail_on_line<'a>(out: &'a Out, fail_on: &str) -> (&'a str, &'a str) {
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains(&format!(" {fail_on}: ")))
        .unwrap_or_else(|| panic!("no line for {fail_on}: {}", out.show()));
    let (verdict, rest) = line
        .trim_start()
        .split_once(' ')
        .unwrap_or_else(|| panic!("{line}"));
    (verdict, rest.trim_start())
}

/// `vblast compare --fail-on` on real runs of one OpenBao. kv-read (2 connections) against
/// transit-sign with an RSA-4096 key on 32 connections (each signature costs the server
/// far more CPU than a read, and 32 of them queue for its cores, so every signature waits
/// for many others: a difference no load can hide, as the machine's load slows the
/// signatures as much as the reads): `p99>+10%` is broken, its line says so and why, exit 99,
/// and JUnit (read back by junitparser) has the failure; `p99>+100000%`, a bound the
/// difference cannot reach, passes with exit 0. Two kv-read runs made at once (so the
/// machine's load is the same for both) are within the noise of a modest bound (`p99>+100%`:
/// "holds" or "unclear", never "broken"), exit 0.
#[test]
fn compare_fails_a_real_change_and_passes_the_same_run_twice() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (kv, kv_again, rsa) = (file("kv.json"), file("kv-again.json"), file("rsa.json"));
    let junit = dir.path().join("compare.xml");
    let junit_arg = junit.to_str().unwrap().to_string();
    let saved = |args: &[&str], to: &str| {
        let mut a = args.to_vec();
        a.extend(["-q", "-o", to]);
        spawn(vault_cmd(&bao, &a))
    };
    let kv_read = ["--op", "kv-read", "-n", "2000", "-c", "2"];
    let (a, b) = (saved(&kv_read, &kv), saved(&kv_read, &kv_again));
    a.finish(Duration::from_secs(600)).assert_code(0);
    b.finish(Duration::from_secs(600)).assert_code(0);
    let sign = [
        "--op",
        "transit-sign",
        "--key-type",
        "rsa-4096",
        "-n",
        "400",
        "-c",
        "32",
    ];
    saved(&sign, &rsa)
        .finish(Duration::from_secs(600))
        .assert_code(0);
    let compare = |new: &str, fail_on: &str| {
        run(url_cmd(&[
            "compare",
            &kv,
            new,
            "--fail-on",
            fail_on,
            "--junit",
            &junit_arg,
        ]))
    };

    // A certain change, beyond a 10% bound even at the ends of both intervals.
    let out = compare(&rsa, "p99>+10%");
    out.assert_code(99);
    let (verdict, why) = fail_on_line(&out, "p99>+10%");
    assert_eq!(verdict, "broken", "{}", out.show());
    assert!(why.starts_with("rsa.json p99>+10%: p99 "), "{why}");
    assert!(
        why.contains("beyond >+10% even at the ends of both intervals"),
        "{why}"
    );
    assert_eq!(
        junit_cases(&junit),
        pairs(&[("rsa.json: p99>+10%", "failure")])
    );
    // The same change against a bound it cannot reach (1001 times the base).
    let out = compare(&rsa, "p99>+100000%");
    out.assert_code(0);
    let (verdict, _) = fail_on_line(&out, "p99>+100000%");
    assert_ne!(verdict, "broken", "{}", out.show());
    assert_eq!(
        junit_cases(&junit),
        pairs(&[("rsa.json: p99>+100000%", "passed")])
    );

    // The same run twice: within the noise of a modest bound.
    let out = compare(&kv_again, "p99>+100%");
    out.assert_code(0);
    let (verdict, why) = fail_on_line(&out, "p99>+100%");
    assert!(
        ["holds", "unclear"].contains(&verdict),
        "{verdict}: {}",
        out.show()
    );
    assert!(
        why.contains(": within >+100%") || why.contains("within the noise of the two runs"),
        "{why}"
    );
    assert_eq!(
        junit_cases(&junit),
        pairs(&[("kv-again.json: p99>+100%", "passed")])
    );
}

fn refused(bao: &OpenBao, thresholds: &[&str], said: &str) -> Out {
    let out = run(vault_cmd(
        bao,
        &with_thresholds(vec!["--op", "kv-read", "-n", "100"], thresholds),
    ));
    out.assert_code(2);
    assert!(out.stderr.contains(said), "{said}: {}", out.show());
    assert!(
        !out.stdout.contains("total"),
        "a report was printed: {}",
        out.show()
    );
    out
}

#[test]
fn bad_thresholds_are_one_message_and_exit_2_before_any_load() {
    let bao = OpenBao::start();
    let before = server_state(&bao);
    refused(
        &bao,
        &["kv-list:p99<10ms"],
        "the run has no operation 'kv-list'",
    );
    // A step the run's operations do not have.
    refused(
        &bao,
        &["kv-read/create:p99<10ms"],
        "the run has no operation 'kv-read/create'",
    );
    refused(&bao, &["latency<10ms"], "unknown metric 'latency'");
    refused(&bao, &["p99<20"], "has no unit");
    refused(
        &bao,
        &["p99<10ms", "p99>20ms"],
        "thresholds 'p99<10ms' and 'p99>20ms' contradict each other",
    );
    let out = run(vault_cmd(
        &bao,
        &["--op", "kv-read", "-n", "10", "--threshold-abort"],
    ));
    out.assert_code(2);
    let out = run(url_cmd(&[
        "ab",
        "-n",
        "10",
        "--threshold",
        "p99<20",
        "http://127.0.0.1:9/",
    ]));
    out.assert_code(2);
    assert!(out.stderr.contains("has no unit"), "{}", out.show());
    assert_eq!(
        server_state(&bao),
        before,
        "a refused run created something"
    );
}
