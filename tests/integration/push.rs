//! Final figures reach Prometheus when the process ends (issue 38, item 5): `--metrics-push`
//! to a real Pushgateway (Debian `prometheus-pushgateway`) scraped by a real Prometheus,
//! whose PromQL answer is the results file's request count; an unreachable Pushgateway is
//! one warning, the run goes on, and the final push is retried and its failure reported
//! (exit 2 when the run would have exited 0, its own status otherwise); a Pushgateway that comes up during the run gets
//! the final figures; `--metrics-linger` serves the final figures until a signal ends it at
//! once; bad push flags and a linger past its bound are bad input.

use std::time::{Duration, Instant};

use crate::support::client::scrape;
use crate::support::figures::u;
use crate::support::nginx::Nginx;
use crate::support::ports::free_port;
use crate::support::prometheus::{Prometheus, Pushgateway};
use crate::support::run::{run, spawn};
use crate::support::vblast::url_cmd;

/// The request count of a run's results file (its one operation).
fn results_count(file: &std::path::Path) -> u64 {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let ops = doc["stats"]["ops"].as_array().expect("stats.ops");
    ops.iter().map(|o| u(&o["requests"])).sum()
}

#[test]
fn prometheus_gets_the_pushed_final_count_of_the_results_file() {
    let ng = Nginx::start();
    let gw = Pushgateway::start();
    let prom = Prometheus::scraping(gw.host_port());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let n = 500u64;
    let running = spawn(url_cmd(&[
        "-R",
        "100",
        "-n",
        &n.to_string(),
        "-c",
        "4",
        "--metrics-push",
        &gw.url,
        "--metrics-push-label",
        "instance=nightly",
        "--metrics-push-interval",
        "1s",
        "--threshold",
        "p50<10s",
        "--output",
        file.to_str().unwrap(),
        "-q",
        &url,
    ]));
    // While it runs, the Pushgateway's own view: the interval pushes.
    let series = "vblast_requests_total{instance=\"nightly\",job=\"vblast\"}";
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline && seen.iter().all(|v| *v == 0.0 || *v >= n as f64) {
        if let Some(v) = gw.value(series) {
            seen.push(v);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        seen.iter().any(|v| *v > 0.0 && *v < n as f64),
        "no push during the run: {seen:?}\n{}",
        gw.metrics()
    );
    let out = running.finish(Duration::from_secs(90));
    out.assert_code(0);
    assert!(!out.stderr.contains("metrics-push"), "{}", out.show());
    let count = results_count(&file);
    assert_eq!(count, n);
    // The final push: the Pushgateway holds the results file's count...
    assert_eq!(gw.value(series), Some(count as f64), "{}", gw.metrics());
    // ...and Prometheus, scraping it, answers it to PromQL, the latency histogram's too.
    let q = "vblast_requests_total{job=\"vblast\",instance=\"nightly\"}";
    let (value, body) = prom.query_until(q, count as f64);
    assert_eq!(value, Some(count as f64), "prometheus answered {body}");
    let q = "sum(vblast_latency_seconds_count{job=\"vblast\",instance=\"nightly\"})";
    let (value, body) = prom.query_until(q, count as f64);
    assert_eq!(value, Some(count as f64), "prometheus answered {body}");
    // The threshold's verdict rides along in the final push: 0, it holds.
    let verdict =
        "vblast_threshold_verdict{instance=\"nightly\",job=\"vblast\",threshold=\"p50<10s\"}";
    assert_eq!(gw.value(verdict), Some(0.0), "{}", gw.metrics());
    // The documented way to remove the group (docs/ci.md).
    // 202 Accepted: the Pushgateway applies the delete after it answers, so wait for it.
    assert_eq!(gw.delete("/metrics/job/vblast/instance/nightly"), 202);
    let deadline = Instant::now() + Duration::from_secs(30);
    while gw.value(series).is_some() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(gw.value(series), None, "{}", gw.metrics());
}

#[test]
fn an_unreachable_pushgateway_is_a_warning_and_its_final_failure_exits_2() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let gw = format!("http://127.0.0.1:{}", free_port());
    let out = run(url_cmd(&[
        "-n",
        "100",
        "-c",
        "2",
        "--metrics-push",
        &gw,
        "--format",
        "json",
        "-q",
        &url,
    ]));
    // The run went on: every request made and reported.
    out.assert_code(2);
    assert_eq!(out.json()["requests"].as_u64(), Some(100), "{}", out.show());
    // One warning at the start, then the final push's failure after its retries.
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("vblast: warning: --metrics-push"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.show());
    assert!(warnings[0].contains("the run goes on"), "{}", out.show());
    assert!(
        out.stderr
            .contains("the final figures were not pushed (3 attempts)")
            && out.stderr.contains(&gw),
        "{}",
        out.show()
    );
}

#[test]
fn a_run_that_fails_keeps_its_status_beside_a_failed_push() {
    let ng = Nginx::start();
    let url = format!("{}/status/500", ng.addr);
    let gw = format!("http://127.0.0.1:{}", free_port());
    let out = run(url_cmd(&["-n", "20", "--metrics-push", &gw, "-q", &url]));
    // Failed requests' status, 1, not the push's; the push's failure is still said.
    out.assert_code(1);
    assert!(
        out.stderr
            .contains("the final figures were not pushed (3 attempts)"),
        "{}",
        out.show()
    );
}

#[test]
fn a_pushgateway_that_comes_up_during_the_run_gets_the_final_figures() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let port = free_port();
    let maddr = format!("127.0.0.1:{}", free_port());
    let n = 400u64;
    let running = spawn(url_cmd(&[
        "-R",
        "50",
        "-n",
        &n.to_string(),
        "-c",
        "2",
        "--metrics-listen",
        &maddr,
        "--metrics-push",
        &format!("http://127.0.0.1:{port}"),
        "--metrics-push-label",
        "instance=late",
        "--metrics-push-interval",
        "1s",
        "--format",
        "json",
        "-q",
        &url,
    ]));
    // The push at the start comes before the load: once requests are served, it has
    // failed. Only then does the Pushgateway come up.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !scrape(&maddr)
        .lines()
        .any(|l| l.starts_with("vblast_requests_total ") && !l.ends_with(" 0"))
    {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    let gw = Pushgateway::on(port);
    let out = running.finish(Duration::from_secs(90));
    out.assert_code(0);
    assert!(
        out.stderr.contains("vblast: warning: --metrics-push") && !out.stderr.contains("final"),
        "{}",
        out.show()
    );
    let requests = out.json()["requests"].as_u64();
    assert_eq!(requests, Some(n), "{}", out.show());
    assert_eq!(
        gw.value("vblast_requests_total{instance=\"late\",job=\"vblast\"}"),
        Some(n as f64),
        "{}",
        gw.metrics()
    );
}

#[test]
fn a_signal_ends_the_linger_at_once_with_the_runs_status() {
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let maddr = format!("127.0.0.1:{}", free_port());
    let running = spawn(url_cmd(&[
        "-n",
        "50",
        "-c",
        "1",
        "--metrics-listen",
        &maddr,
        "--metrics-linger",
        "10m",
        "-q",
        &url,
    ]));
    // The final figures are served during the linger.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !scrape(&maddr)
        .lines()
        .any(|l| l == "vblast_requests_total 50")
    {
        assert!(
            Instant::now() < deadline,
            "the final figures were never served"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    crate::support::process::signal(running.child.id(), libc::SIGTERM);
    // Well before the 10 minutes of the linger: the signal ended it; the run had ended
    // well, so its status is 0.
    let out = running.finish(Duration::from_secs(60));
    out.assert_code(0);
    out.assert_total_count(50);
}

#[test]
fn bad_push_flags_and_a_linger_past_its_bound_are_bad_input() {
    for (args, says) in [
        (
            &["--metrics-push", "pgw:9091"][..],
            "give an http:// or https:// URL",
        ),
        (
            &[
                "--metrics-push",
                "http://127.0.0.1:9",
                "--metrics-push-label",
                "instance",
            ][..],
            "give NAME=VALUE",
        ),
        (
            &[
                "--metrics-push",
                "http://127.0.0.1:9",
                "--metrics-push-label",
                "job=x",
            ][..],
            "--metrics-push-job",
        ),
        (
            &["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "11m"][..],
            "at most 600s",
        ),
        (
            &[
                "--metrics-push",
                "http://127.0.0.1:9",
                "--metrics-push-interval",
                "100ms",
            ][..],
            "at least 1s",
        ),
    ] {
        let mut all = vec!["-n", "1"];
        all.extend_from_slice(args);
        all.push("http://127.0.0.1:9/x");
        let out = run(url_cmd(&all));
        out.assert_code(2);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.show());
        // Nothing was sent: no report.
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.show());
    }
}

/// The Grafana panel of the nights (deploy/grafana/vblast.json): each threshold's verdict
/// as pushed, a row per run group and threshold, the gauge's three values named.
#[test]
fn the_dashboard_draws_each_thresholds_verdict_over_the_nights() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/grafana/vblast.json");
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let panels = d["panels"].as_array().unwrap();
    let panel = panels
        .iter()
        .find(|p| {
            p["targets"][0]["expr"]
                .as_str()
                .is_some_and(|e| e.contains("vblast_threshold_verdict"))
        })
        .expect("a panel of vblast_threshold_verdict");
    assert_eq!(panel["type"], "state-timeline", "{panel:#}");
    let expr = panel["targets"][0]["expr"].as_str().unwrap();
    assert!(
        expr.contains("by (job, instance, threshold)"),
        "a row per group and threshold: {expr}"
    );
    let legend = panel["targets"][0]["legendFormat"].as_str().unwrap();
    assert!(legend.contains("{{threshold}}"), "{legend}");
    let names = &panel["fieldConfig"]["defaults"]["mappings"][0]["options"];
    for (value, text) in [("0", "holds"), ("1", "unclear"), ("2", "broken")] {
        assert_eq!(names[value]["text"], text, "{panel:#}");
    }
    // Over the nights, whatever the dashboard's range.
    assert_eq!(panel["timeFrom"], "14d", "{panel:#}");
}
