//! Confidence intervals and the sweep's margin against real servers: the text report's
//! `--ci` columns and the JSON report's intervals (nginx), a sweep against OpenBao whose
//! short steps are unclear until their pooled samples bound the p99 (repeated, pooled,
//! marked, re-rendered exactly by `vblast report`, compared with its margins), a step
//! still unclear with no repeats counted as failed, and bad `--confidence` / `--max-repeats`
//! refused before any request. No time or throughput is asserted.

use crate::support::nginx::Nginx;
use crate::support::openbao::OpenBao;
use crate::support::raw::RawServer;
use crate::support::run::run;
use crate::support::vblast::{url_cmd, vault_cmd, vblast};
use serde_json::Value;

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

#[test]
fn a_run_reports_each_percentile_with_its_interval() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let out = run(url_cmd(&["-n", "2000", "-c", "2", "--ci", &url]));
    out.assert_code(0);
    let header = out.line("op ");
    assert!(header.contains("99th% CI"), "{}", out.show());
    // 2,000 samples bound p95 and p99 on both sides: "low-high" with a unit.
    let total = out.total_row();
    let cells = &total[total.len() - 2..];
    for c in cells {
        assert!(
            c.contains('-') && !c.contains('?'),
            "{c} in\n{}",
            out.show()
        );
    }
    assert!(
        out.stdout.contains("CI: 95% confidence interval"),
        "{}",
        out.show()
    );

    // JSON: the level and every key's interval, enclosing its value.
    let json = run(url_cmd(&[
        "-n",
        "300",
        "-c",
        "1",
        "--format",
        "json",
        "--confidence",
        "0.9",
        &url,
    ]));
    json.assert_code(0);
    let l = &json.json()["latency_ms"];
    assert_eq!(l["confidence"], 0.9);
    let p50 = &l["ci"]["p50"];
    let (lo, hi, v) = (
        p50["low"].as_f64().unwrap(),
        p50["high"].as_f64().unwrap(),
        l["p50"].as_f64().unwrap(),
    );
    assert!(lo <= v && v <= hi, "{l}");
    // 300 samples cannot bound p99.99 from above: that side is unknown, never invented.
    assert!(l["ci"]["p9999"]["high"].is_null(), "{l}");
    // Bad levels: one message, exit 2, nothing sent.
    let raw = RawServer::silent();
    for bad in ["1.5", "0", "1", "x"] {
        let url = format!("{}/x", raw.addr);
        let out = run(url_cmd(&["-n", "1", "--confidence", bad, &url]));
        out.assert_code(2);
        assert!(
            out.stderr.contains("not a confidence level"),
            "{}",
            out.show()
        );
    }
    assert_eq!(raw.connections(), 0);
}

/// A sweep of kv-read with 1 s steps at `rate` req/s and `extra` flags, saved in `file`.
fn sweep(
    bao: &OpenBao,
    rate: &str,
    file: &std::path::Path,
    extra: &[&str],
) -> crate::support::run::Out {
    let mut args = vec![
        "sweep",
        "--op",
        "kv-read",
        "--secrets",
        "5",
        "--rate",
        rate,
        "--steps",
        "2",
        "--step-duration",
        "1s",
        "--step-warmup",
        "200ms",
        "--resolution",
        "50%",
        "--slo",
        "p99=2s",
        "--slo",
        "rate=50%",
        "-c",
        "2",
        "--output",
        file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(vault_cmd(bao, &args))
}

#[test]
fn unclear_steps_are_measured_again_and_the_answer_has_its_margin() {
    let bao = OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.json");
    // 150 requests cannot bound a p99 from above at 95% (it takes about 450): the first
    // step is unclear, measured again with its samples pooled until they do.
    let out = sweep(&bao, "150..300", &file, &["--max-repeats", "3"]);
    out.assert_code(0);
    assert!(out.stdout.contains("p99 CI"), "{}", out.show());
    assert!(out.stderr.contains("is unclear"), "{}", out.show());
    assert!(out.stderr.contains("measuring it again"), "{}", out.show());
    let doc = read_json(&file);
    let first = &doc["steps"][0];
    let repeats = first["repeats"].as_u64().unwrap();
    assert!(repeats >= 1, "{first}");
    assert_eq!(
        first["repeated_because"].as_array().unwrap().len() as u64,
        repeats
    );
    // The step's results pool every measurement: more requests than one second's 150.
    assert!(
        first["results"]["requests"].as_u64().unwrap() > 200,
        "{first}"
    );
    assert!(
        out.stdout
            .contains(&format!("[measured {}x, pooled]", repeats + 1)),
        "{}",
        out.show()
    );
    let answer = out.line("Answer: ");
    assert!(
        answer.contains("p99") && answer.contains("95% CI"),
        "{answer}"
    );
    let repeated = out.line("Repeats: ");
    assert!(repeated.contains("step 1 at 150 req/s"), "{repeated}");
    // The file says the same, and re-renders exactly.
    assert_eq!(doc["sweep"]["max_repeats"], 3);
    assert_eq!(doc["answer"]["repeats"], repeated);
    assert!(first["p99_ci_ms"].is_object(), "{first}");
    let again = run({
        let mut c = vblast();
        c.args(["report", file.to_str().unwrap()]);
        c
    });
    again.assert_code(0);
    assert_eq!(again.stdout, out.stdout);
    // Compared with itself: within its margins.
    let cmp = run({
        let mut c = vblast();
        c.args(["compare", file.to_str().unwrap(), file.to_str().unwrap()]);
        c
    });
    cmp.assert_code(0);
    assert!(
        cmp.stdout.contains("do not differ beyond their margins"),
        "{}",
        cmp.show()
    );

    // No repeats: the unclear first step counts as failed, and says so.
    let none = dir.path().join("none.json");
    let out = sweep(&bao, "150..300", &none, &["--max-repeats", "0"]);
    out.assert_code(1);
    assert!(
        out.stdout.contains("UNCLEAR, counted as FAIL"),
        "{}",
        out.show()
    );
    assert!(!out.stderr.contains("measuring it again"), "{}", out.show());
    let doc = read_json(&none);
    assert_eq!(doc["steps"][0]["verdict"], "unclear");
    assert_eq!(doc["steps"][0]["repeats"], 0);
    assert!(
        out.line("Repeats: ")
            .contains("still unclear, counted as failed: step 1"),
        "{}",
        out.show()
    );
}

#[test]
fn bad_repeats_and_levels_are_refused_before_any_request() {
    let raw = RawServer::silent();
    let base = [
        "sweep",
        "--address",
        raw.addr.as_str(),
        "--token",
        "t",
        "--op",
        "kv-read",
        "--rate",
        "100..500",
        "--slo",
        "p99=20ms",
    ];
    for (extra, message) in [
        (["--max-repeats", "11"], "from 0 to 10"),
        (["--max-repeats=-1", "--steps=4"], "from 0 to 10"),
        (["--max-repeats", "1.5"], "from 0 to 10"),
        (["--max-repeats", "many"], "from 0 to 10"),
        (["--confidence", "1.5"], "not a confidence level"),
        (["--confidence", "0"], "not a confidence level"),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(&extra);
        let mut cmd = vblast();
        cmd.args(&args);
        let out = run(cmd);
        out.assert_code(2);
        assert!(out.stderr.contains(message), "{args:?}\n{}", out.show());
    }
    assert_eq!(raw.connections(), 0, "a request reached the server");
}
