//! `--metrics-listen`: a real Prometheus (Debian `prometheus`) scrapes a running vblast every
//! second, and its HTTP API then reports vblast's request count; the text served has every
//! family; a run spread over worker processes serves the figures of all of them, live, and
//! after a lost worker says that its figures are missing from the final ones; a
//! taken address is one clear message.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::client::http_request;
use crate::support::deps::program;
use crate::support::nginx::Nginx;
use crate::support::ports::free_port;
use crate::support::run::{run, spawn};
use crate::support::vblast::url_cmd;

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Debian's prometheus; fails the test when it is not installed.
fn prometheus() -> String {
    program(&["prometheus"], "prometheus")
        .to_string_lossy()
        .into_owned()
}

/// Scrapes vblast's `--metrics-listen` at `maddr` until every line prefix in `want` is
/// served (60 s at most, then the last text, for the caller's assertion to show). A fixed
/// wait raced the run's setup and the first samples on a busy machine.
fn scrape_until(maddr: &str, want: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut text = String::new();
    loop {
        let served = want.iter().all(|w| text.lines().any(|l| l.starts_with(w)));
        if served || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(250));
        text = crate::support::client::scrape(maddr);
    }
}

#[test]
fn prometheus_scrapes_the_request_count() {
    let prom = prometheus();
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let mport = free_port();
    let (_prom, papi) = start_prometheus(&prom, dir.path(), mport);
    let n = 1200u64;
    let maddr = format!("127.0.0.1:{mport}");
    let running = spawn(url_cmd(&[
        "-R",
        "300",
        "-n",
        &n.to_string(),
        "-c",
        "4",
        "--metrics-listen",
        &maddr,
        "--metrics-hold",
        "4s",
        "-q",
        &url,
    ]));
    // While it runs, the text itself: every family, with fixed buckets.
    let families = [
        "vblast_requests_total ",
        "vblast_successes_total ",
        "vblast_errors_total{kind=\"timeout\"} 0",
        "vblast_responses_total{code=\"200\"} ",
        "vblast_throttled_total 0",
        "vblast_connections_open 4",
        "vblast_target_rate 300",
        "vblast_achieved_rate ",
        "vblast_latency_seconds_bucket{le=\"0.001\"} ",
        "vblast_latency_seconds_bucket{le=\"+Inf\"} ",
        "vblast_service_seconds_count ",
    ];
    let text = scrape_until(&maddr, &families);
    for family in families {
        assert!(
            text.lines().any(|l| l.starts_with(family)),
            "{family} not in\n{text}"
        );
    }
    let out = running.finish(Duration::from_secs(60));
    out.assert_code(0);
    // Prometheus's own answer: the counter's highest sample is vblast's figure (max over
    // time, because once vblast exits Prometheus marks the series stale).
    let q = "/api/v1/query?query=max_over_time(vblast_requests_total%5B5m%5D)";
    let deadline = Instant::now() + Duration::from_secs(10);
    let last = loop {
        let body = http_request(&papi, "GET", q, &[], None, None)
            .map(|r| r.text())
            .unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let value = v["data"]["result"][0]["value"][1]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok());
        if value == Some(n) || Instant::now() > deadline {
            break (value, body);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(last.0, Some(n), "prometheus answered {}", last.1);
}

#[test]
fn a_taken_metrics_address_is_one_clear_message() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run(url_cmd(&[
        "-n",
        "1",
        "--metrics-listen",
        &addr,
        "http://127.0.0.1:9/x",
    ]));
    out.assert_code(2);
    assert!(
        out.stderr.contains("in use") && out.stderr.contains(&addr),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

/// A Prometheus scraping 127.0.0.1:`mport` every second; its API address.
fn start_prometheus(prom: &str, dir: &std::path::Path, mport: u16) -> (Killed, String) {
    let pport = free_port();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: vblast\n    static_configs:\n      - targets: ['127.0.0.1:{mport}']\n"
        ),
    )
    .unwrap();
    let child = Killed(
        Command::new(prom)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{pport}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );
    let papi = format!("http://127.0.0.1:{pport}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while http_request(&papi, "GET", "/-/ready", &[], None, None).map_or(true, |r| r.status != 200)
    {
        assert!(Instant::now() < deadline, "prometheus did not become ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    (child, papi)
}

/// The samples Prometheus holds for `query` between two instants, by timestamp.
fn range(papi: &str, query: &str, from: f64, to: f64) -> Vec<(i64, u64)> {
    let q = format!("/api/v1/query_range?query={query}&start={from:.3}&end={to:.3}&step=0.5");
    let body = http_request(papi, "GET", &q, &[], None, None)
        .map(|r| r.text())
        .unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    v["data"]["result"][0]["values"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| {
                    let t = (p[0].as_f64()? * 1000.0) as i64;
                    Some((t, p[1].as_str()?.parse::<u64>().ok()?))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn worker_processes_are_served_as_one_run() {
    let prom = prometheus();
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let dir = tempfile::tempdir().unwrap();
    let mport = free_port();
    let (_prom, papi) = start_prometheus(&prom, dir.path(), mport);
    // Prometheus scrapes a new target only after its discovery settles (about 5 s): wait
    // for its first attempt (`up` 0, nothing listens yet), so it sees the run from its start.
    let deadline = Instant::now() + Duration::from_secs(30);
    while range(&papi, "up", unix_now() - 60.0, unix_now()).is_empty() {
        assert!(Instant::now() < deadline, "prometheus never scraped");
        std::thread::sleep(Duration::from_millis(250));
    }
    // 300 connections over processes of at most 150 descriptors: every request is sent by
    // a worker process, none by the coordinator serving /metrics.
    let (n, conns) = (1500u64, 300u64);
    let maddr = format!("127.0.0.1:{mport}");
    let mut cmd = url_cmd(&[
        "-R",
        "300",
        "-n",
        &n.to_string(),
        "-c",
        &conns.to_string(),
        "--metrics-listen",
        &maddr,
        "--metrics-hold",
        "4s",
        "-q",
        "--format",
        "json",
        &url,
    ]);
    cmd.env("VBLAST_PROCESS_FDS", "150");
    let from = unix_now();
    let running = spawn(cmd);
    // Mid-run, scraped directly: the figures of every process, all from one set of
    // snapshots (so they agree exactly), not only the request count. Every scrape shows
    // every worker process's figures or none (a busy machine may delay a worker's first
    // snapshot): never one process's figures as the whole run's.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut scrapes = 0;
    let mut parts_served = Vec::new();
    let mid = loop {
        std::thread::sleep(Duration::from_millis(300));
        let text = crate::support::client::scrape(&maddr);
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
                .map(|v| v as u64)
        };
        let requests = value("vblast_requests_total").unwrap_or(0);
        if !text.is_empty() {
            scrapes += 1;
            let (parts, included) = (
                value("vblast_figures_parts"),
                value("vblast_figures_parts_included"),
            );
            assert!(
                included == parts || (included == Some(0) && requests == 0),
                "a scrape served part of the run as the whole:\n{text}"
            );
            if requests > 0 {
                assert_eq!(value("vblast_connections_open"), Some(conns), "{text}");
                parts_served.push(parts);
            }
        }
        if (requests > 0 && requests < n) || Instant::now() > deadline {
            break (
                requests,
                value("vblast_latency_seconds_count"),
                value("vblast_service_seconds_count"),
                value("vblast_responses_total{code=\"200\"}"),
                value("vblast_connections_open"),
                text,
            );
        }
    };
    let (requests, latency, service, ok200, open, text) = mid;
    assert!(
        requests > 0 && requests < n,
        "no mid-run scrape ({scrapes} scrapes):\n{text}"
    );
    assert_eq!(latency, Some(requests), "{text}");
    assert_eq!(service, Some(requests), "{text}");
    assert_eq!(ok200, Some(requests), "{text}");
    assert_eq!(open, Some(conns), "{text}");
    let out = running.finish(Duration::from_secs(90));
    out.assert_code(0);
    let j = out.json();
    assert!(
        j["run"]["processes"].as_u64().unwrap_or(0) >= 2,
        "{}",
        j["run"]
    );
    assert_eq!(j["requests"].as_u64(), Some(n));
    // The parts of the figures served are the worker processes.
    assert!(
        parts_served
            .iter()
            .all(|p| *p == j["run"]["processes"].as_u64()),
        "{parts_served:?} against {}",
        j["run"]
    );
    // Prometheus's own view: every sample of the latency histogram's count is the request
    // count of the same scrape (the workers' histograms came with their counts), and the
    // highest is the total of all processes.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (reqs, lat) = loop {
        let to = unix_now();
        let reqs = range(&papi, "vblast_requests_total", from, to);
        let lat = range(&papi, "vblast_latency_seconds_count", from, to);
        if reqs.iter().any(|p| p.1 == n) || Instant::now() > deadline {
            break (reqs, lat);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(reqs.iter().map(|p| p.1).max(), Some(n), "{reqs:?}");
    assert!(
        reqs.iter().any(|p| p.1 > 0 && p.1 < n),
        "prometheus saw no mid-run sample: {reqs:?}; up: {:?}; targets: {}",
        range(&papi, "up", from, unix_now()),
        http_request(&papi, "GET", "/api/v1/targets", &[], None, None)
            .map(|r| r.text())
            .unwrap_or_default()
    );
    assert_eq!(
        reqs, lat,
        "requests and latency counts differ in prometheus"
    );
}

/// Children of `pid` (from /proc): vblast's worker processes.
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
        if rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok())
            == Some(pid)
        {
            out.push(child);
        }
    }
    out
}

#[test]
fn a_lost_worker_is_left_out_of_the_final_figures_parts() {
    // Two worker processes; one is killed mid-run. The final figures (served during
    // --metrics-hold) lack its results, and the gauges say so: 1 part of 2 included.
    let ng = Nginx::start();
    let url = format!("{}/v1/secret/data/foo", ng.addr);
    let mport = free_port();
    let maddr = format!("127.0.0.1:{mport}");
    let mut cmd = url_cmd(&[
        "-c",
        "40",
        "-t",
        "2",
        "-z",
        "3s",
        "--metrics-listen",
        &maddr,
        "--metrics-hold",
        "8s",
        "-q",
        "--allow-errors",
        "--format",
        "json",
        &url,
    ]);
    cmd.env("VBLAST_PROCESS_FDS", "120");
    let running = spawn(cmd);
    let parent = running.child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    let workers = loop {
        let w = children(parent);
        if w.len() == 2 {
            break w;
        }
        assert!(Instant::now() < deadline, "no two worker processes");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(1500));
    crate::support::process::signal(workers[1], libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    let served = loop {
        let text = crate::support::client::scrape(&maddr);
        let has = |line: &str| text.lines().any(|l| l == line);
        if has("vblast_figures_parts_included 1") {
            break has("vblast_figures_parts 2");
        }
        if !text.is_empty() {
            last = text;
        }
        if Instant::now() > deadline {
            panic!("the final figures never left the lost worker out:\n{last}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(served, "1 of 2 parts should be served:\n{last}");
    let out = running.finish(Duration::from_secs(30));
    out.assert_code(0);
    assert!(out.stderr.contains("was lost"), "{}", out.show());
}

/// The nodes' sampled figures on `--metrics-listen` (src/metrics.rs, `render_server`): a
/// run against a real OpenBao dev server serves `vblast_server_*` gauges labelled with
/// the node's address; `promtool check metrics` reads the text without a problem, and a
/// real Prometheus scraping it answers a query for the node's series by that label.
#[test]
fn the_nodes_sampled_figures_are_served_with_a_node_label() {
    let prom = prometheus();
    let bao = crate::support::openbao::OpenBao::start();
    let dir = tempfile::tempdir().unwrap();
    let mport = free_port();
    let (_prom, papi) = start_prometheus(&prom, dir.path(), mport);
    let maddr = format!("127.0.0.1:{mport}");
    let running = spawn(crate::support::vblast::vault_cmd(
        &bao,
        &[
            "-R",
            "100",
            "-z",
            "4s",
            "-c",
            "2",
            "--op",
            "kv-read",
            "--server-interval",
            "500ms",
            "--metrics-listen",
            &maddr,
            // Prometheus must scrape the node's series while they are served: on a busy
            // machine its 1 s scrapes come late, so the figures stay up long enough
            // (the query below is made while they are, and the run is waited for after).
            "--metrics-hold",
            "15s",
            "-q",
        ],
    ));
    let label = format!("{{node=\"{}\"}} ", bao.addr);
    let series: Vec<String> = [
        "vblast_server_cpu_cores",
        "vblast_server_in_flight_requests",
        "vblast_server_handle_request_seconds",
        "vblast_server_handled_per_second",
        "vblast_server_goroutines",
    ]
    .iter()
    .map(|family| format!("{family}{label}"))
    .collect();
    let series: Vec<&str> = series.iter().map(String::as_str).collect();
    // A per-second rate needs two samples of the node.
    let text = scrape_until(&maddr, &series);
    for series in series {
        assert!(
            text.lines().any(|l| l.starts_with(series)),
            "{series} not in\n{text}"
        );
    }
    // Prometheus's own linter on the whole text.
    let mut lint = Command::new(program(&["promtool"], "promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start promtool");
    std::io::Write::write_all(&mut lint.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let linted = lint.wait_with_output().unwrap();
    assert!(
        linted.status.success(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&linted.stdout),
        String::from_utf8_lossy(&linted.stderr)
    );
    // Prometheus answers for the node by its label.
    let q = format!(
        "/api/v1/query?query=max_over_time(vblast_server_handled_per_second%7Bnode%3D%22{}%22%7D%5B5m%5D)",
        bao.addr.replace(':', "%3A").replace('/', "%2F")
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let (node, body) = loop {
        let body = http_request(&papi, "GET", &q, &[], None, None)
            .map(|r| r.text())
            .unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let node = v["data"]["result"][0]["metric"]["node"]
            .as_str()
            .map(String::from);
        if node.is_some() || Instant::now() > deadline {
            break (node, body);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let out = running.finish(Duration::from_secs(90));
    out.assert_code(0);
    assert_eq!(
        node.as_deref(),
        Some(bao.addr.as_str()),
        "prometheus answered {body}\n{}",
        out.show()
    );
}
