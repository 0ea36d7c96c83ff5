//! A private Prometheus Pushgateway (Debian `prometheus-pushgateway`) and a private
//! Prometheus (Debian `prometheus`) scraping it, each on 127.0.0.1 on a port of its own with
//! its data in a temporary directory, stopped (SIGTERM, then SIGKILL) by pid when dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::client::http_request;
use super::deps::program;
use super::ports::free_port;
use super::process::{READY_TIMEOUT, stop_server};

/// A Pushgateway on 127.0.0.1; its figures kept in its own persistence file.
pub struct Pushgateway {
    /// `http://127.0.0.1:PORT`, what `--metrics-push` is given.
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Pushgateway {
    /// A Pushgateway on a free port.
    pub fn start() -> Pushgateway {
        Pushgateway::on(free_port())
    }

    /// A Pushgateway on `port`, ready.
    pub fn on(port: u16) -> Pushgateway {
        let bin = program(&["prometheus-pushgateway"], "prometheus-pushgateway");
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(bin)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!(
                "--persistence.file={}",
                dir.path().join("pushgateway.data").display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus-pushgateway");
        let gw = Pushgateway {
            url: format!("http://127.0.0.1:{port}"),
            child,
            _dir: dir,
        };
        ready(&gw.url, "the pushgateway");
        gw
    }

    /// The text the Pushgateway serves on /metrics (every group's figures).
    pub fn metrics(&self) -> String {
        http_request(&self.url, "GET", "/metrics", &[], None, None)
            .map(|r| r.text())
            .unwrap_or_default()
    }

    /// The value of the series written exactly as `series` (name and labels, in the
    /// Pushgateway's order: sorted by name) in what it serves.
    pub fn value(&self, series: &str) -> Option<f64> {
        self.metrics()
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    /// `curl -X DELETE URL/PATH`'s status: deletes a group.
    pub fn delete(&self, path: &str) -> u16 {
        http_request(&self.url, "DELETE", path, &[], None, None)
            .map(|r| r.status)
            .unwrap_or(0)
    }

    /// `host:port`, for a scrape configuration.
    pub fn host_port(&self) -> &str {
        self.url.trim_start_matches("http://")
    }
}

impl Drop for Pushgateway {
    fn drop(&mut self) {
        stop_server(&mut self.child, libc::SIGTERM);
    }
}

/// A Prometheus scraping one target every second, with `honor_labels` (a Pushgateway's
/// `job` and `instance` are the pushed ones, not the scrape's).
pub struct Prometheus {
    /// `http://127.0.0.1:PORT`, its HTTP API.
    pub api: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    pub fn scraping(target: &str) -> Prometheus {
        let bin = program(&["prometheus"], "prometheus");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let p = Prometheus {
            api: format!("http://127.0.0.1:{port}"),
            child,
            _dir: dir,
        };
        ready(&p.api, "prometheus");
        p
    }

    /// The PromQL `query`'s first value now, and the answer's body (for messages).
    pub fn query(&self, query: &str) -> (Option<f64>, String) {
        let q: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
        let body = http_request(
            &self.api,
            "GET",
            &format!("/api/v1/query?query={q}"),
            &[],
            None,
            None,
        )
        .map(|r| r.text())
        .unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let value = v["data"]["result"][0]["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok());
        (value, body)
    }

    /// Asks `query` until its value is `want` (60 s at most: Prometheus scrapes a new
    /// target only once its discovery settles); the last value and body.
    pub fn query_until(&self, query: &str, want: f64) -> (Option<f64>, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (value, body) = self.query(query);
            if value == Some(want) || Instant::now() > deadline {
                return (value, body);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        stop_server(&mut self.child, libc::SIGTERM);
    }
}

/// Waits until the server at `base` answers `/-/ready` with 200.
fn ready(base: &str, what: &str) {
    let deadline = Instant::now() + READY_TIMEOUT;
    while http_request(base, "GET", "/-/ready", &[], None, None).map_or(true, |r| r.status != 200) {
        assert!(Instant::now() < deadline, "{what} did not become ready");
        std::thread::sleep(Duration::from_millis(200));
    }
}
