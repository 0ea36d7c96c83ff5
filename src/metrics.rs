//! Live figures for Prometheus (`--metrics-listen ADDR`): a small blocking HTTP server thread
//! answering `GET /metrics` in the Prometheus text format (0.0.4) with the run's counters,
//! gauges and latency histograms.
//!
//! Nothing here touches the request path: the event-loop threads already send a snapshot
//! of their totals once a second for the live progress line (`engine::Totals`, over a
//! channel they never wait on); `Figures` is the rest of that snapshot, built from the
//! thread's own statistics once a second. The coordinating thread hands the latest
//! snapshots to `Metrics::update`, and the server thread renders them when scraped.
//! A scrape shows the figures of every part of the run (each worker process, or each
//! event-loop thread of a run in one process) or none: until every part has sent its
//! first snapshot, the run's figures stay at zero, and `vblast_figures_parts_included`
//! (of `vblast_figures_parts`) says whose figures are in what is served.
//!
//! The nodes' sampled figures (src/server_stats/, the latest interval of each node) are
//! served beside the run's as `vblast_server_*` gauges, each with the node's address as
//! its `node` label, so that a cluster's nodes are told apart.
//!
//! Latency is exported as two histograms (corrected from the intended start, uncorrected
//! from the actual send) over fixed `le` buckets, so that shards scraped separately add up
//! with `sum by (le) (vblast_latency_seconds_bucket)`, unlike quantile summaries.
//!
//! The same figures can be pushed to a Prometheus Pushgateway (`push`, `--metrics-push`),
//! rendered by the same `Text`, and kept up after the run for the last scrape (`linger`,
//! `--metrics-linger`).
//!
//! No crate: the `prometheus` and `metrics-exporter-prometheus` crates keep their own
//! registry of atomics that the engine would have to update per request (or a global
//! recorder), and bring an async HTTP server; the text format and a one-request-at-a-time
//! `std::net` server are a few dozen lines over figures vblast already has.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::schedule::Schedule;
use crate::engine::Totals;
use crate::server_stats::live::LatestIntervals;
use crate::server_stats::timeline::Interval;
use crate::stats::Stats;
use crate::stats::figures::{BUCKETS_US, Buckets, Figures};

pub mod push;

/// What the server renders: the sum over threads, and the rates.
#[derive(Default)]
struct MetricsState {
    requests: u64,
    ok: u64,
    figures: Figures,
    status: std::collections::BTreeMap<u16, u64>,
    achieved_rate: f64,
    target_rate: Option<f64>,
    last: Option<(Instant, u64)>,
    first: Option<Instant>,
    /// Parts of the run that send snapshots (worker processes, or this process's threads).
    parts: usize,
    /// Parts whose figures the served figures include: all of them, or 0 before every
    /// part has sent its first snapshot.
    included: usize,
    /// Open model, once the run has ended: requests never sent, and whether the schedule
    /// was kept (`stats::kept`); None while it runs and in the closed model.
    schedule: Option<(u64, bool)>,
    /// The run's final figures are in (`Metrics::finish`).
    ended: bool,
    /// Once the run has ended: each threshold's text and verdict (`threshold_lines`).
    thresholds: Vec<(String, crate::threshold::ThresholdVerdict)>,
}

/// Why the metrics server could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error(
        "--metrics-listen {0}: the address is in use (another vblast or exporter listens there): choose another port"
    )]
    InUse(String),
    #[error(
        "--metrics-listen {addr}: cannot listen there: {}",
        crate::error::io_text(source)
    )]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--metrics-listen {addr}: {source}")]
    Local {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the metrics server: {0}")]
    Thread(std::io::Error),
}

impl From<MetricsError> for crate::error::Cause {
    fn from(e: MetricsError) -> Self {
        crate::error::Cause::Said(e.to_string())
    }
}

/// The run's live figures for Prometheus: served at `--metrics-listen`, pushed by
/// `--metrics-push` (`push`), or both; one renderer of the text format (`Text`) for both.
pub struct Metrics {
    state: Arc<Mutex<MetricsState>>,
    /// The nodes' latest sampled intervals (the sampler fills them).
    server: LatestIntervals,
    schedule: Option<Schedule>,
    /// Where the figures are served; None when they are only pushed.
    pub addr: Option<std::net::SocketAddr>,
}

/// The figures as Prometheus's text format (0.0.4), rendered when asked: what a scrape of
/// `/metrics` is answered and what a push sends. A handle on the live figures, for the
/// server's thread and the pusher's.
#[derive(Clone)]
pub struct Text {
    state: Arc<Mutex<MetricsState>>,
    nodes: LatestIntervals,
}

impl Text {
    /// The figures now, in the text format: the run's, then its nodes'.
    pub fn render(&self) -> String {
        let mut body = match self.state.lock() {
            Ok(s) => render(&s),
            Err(_) => String::new(),
        };
        render_server(&mut body, &self.nodes.nodes());
        body
    }
}

impl Metrics {
    /// The figures kept for rendering, served nowhere (`--metrics-push` alone).
    pub fn new(schedule: Option<Schedule>) -> Metrics {
        let state = Arc::new(Mutex::new(MetricsState {
            target_rate: schedule.as_ref().map(|s| s.rate_at(Duration::ZERO)),
            ..MetricsState::default()
        }));
        Metrics {
            state,
            server: LatestIntervals::default(),
            schedule,
            addr: None,
        }
    }

    /// Binds `addr` and starts serving. A taken or bad address is one clear message.
    pub fn start(addr: &str, schedule: Option<Schedule>) -> Result<Metrics, MetricsError> {
        let listener = TcpListener::bind(addr).map_err(|e| match e.kind() {
            std::io::ErrorKind::AddrInUse => MetricsError::InUse(addr.into()),
            _ => MetricsError::Listen {
                addr: addr.into(),
                source: e,
            },
        })?;
        let local = listener.local_addr().map_err(|e| MetricsError::Local {
            addr: addr.into(),
            source: e,
        })?;
        let mut metrics = Metrics::new(schedule);
        let text = metrics.text();
        std::thread::Builder::new()
            .name("vblast-metrics".into())
            .spawn(move || {
                for conn in listener.incoming().flatten() {
                    serve(conn, &text);
                }
            })
            .map_err(MetricsError::Thread)?;
        metrics.addr = Some(local);
        Ok(metrics)
    }

    /// Whether the run's final figures are in (a run that ended before its load has none).
    pub fn ended(&self) -> bool {
        self.state.lock().is_ok_and(|s| s.ended)
    }

    /// The renderer of these figures (`Text`).
    pub fn text(&self) -> Text {
        Text {
            state: self.state.clone(),
            nodes: self.server.clone(),
        }
    }

    /// Where the server-side sampler leaves each node's latest interval, served here.
    pub fn server_intervals(&self) -> LatestIntervals {
        self.server.clone()
    }

    /// Takes the latest snapshot of every part of the run (called about once a second).
    /// A sum that lacks a part (one that has not reported yet) is not served: the figures
    /// served stay those of the last sum over every part.
    pub fn update(&self, threads: &[Totals]) {
        if !threads.iter().all(|t| t.reported) {
            if let Ok(mut s) = self.state.lock() {
                s.parts = threads.len();
            }
            return;
        }
        let mut sum = Figures::default();
        let mut status = std::collections::BTreeMap::new();
        let (mut requests, mut ok) = (0, 0);
        for t in threads {
            requests += t.requests;
            ok += t.ok;
            let f = &t.more;
            sum.errors.merge(&f.errors);
            sum.throttled += f.throttled;
            sum.connection_failures.merge(&f.connection_failures);
            sum.connections_open += f.connections_open;
            sum.connections_opened += f.connections_opened;
            sum.latency.add(&f.latency);
            sum.service.add(&f.service);
            for &(code, n) in f.status.iter().filter(|(c, _)| *c != 0) {
                *status.entry(code).or_insert(0) += n;
            }
        }
        self.set(requests, ok, sum, status);
        if let Ok(mut s) = self.state.lock() {
            s.parts = threads.len();
            s.included = threads.len();
        }
    }

    /// The final figures of the run (its merged statistics), `lost` of its parts missing
    /// from them (worker processes lost during the run).
    pub fn finish(&self, stats: &Stats, lost: usize) {
        let f = Figures::of(stats, &[], 0);
        let status = stats.status.clone();
        self.set(stats.requests(), stats.ok(), f, status);
        if let Ok(mut s) = self.state.lock() {
            // The merged statistics of every part that gave its results.
            s.included = s.parts.saturating_sub(lost);
            s.ended = true;
            if self.schedule.is_some() {
                let verdict = crate::stats::kept::verdict(
                    stats.requests(),
                    stats.not_sent,
                    stats.late,
                    stats.max_lag_us,
                );
                s.schedule = Some((
                    stats.not_sent,
                    verdict == crate::stats::kept::ScheduleVerdict::Kept,
                ));
            }
            s.achieved_rate = if stats.elapsed_s > 0.0 {
                stats.requests() as f64 / stats.elapsed_s
            } else {
                0.0
            };
        }
    }

    /// The thresholds' verdicts, once the run has ended (`vblast_threshold_verdict`).
    pub fn set_thresholds(&self, results: &[crate::threshold::ThresholdResult]) {
        if let Ok(mut s) = self.state.lock() {
            s.thresholds = results
                .iter()
                .map(|r| (r.threshold.clone(), r.verdict))
                .collect();
        }
    }

    fn set(
        &self,
        requests: u64,
        ok: u64,
        figures: Figures,
        status: std::collections::BTreeMap<u16, u64>,
    ) {
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        let now = Instant::now();
        let first = *s.first.get_or_insert(now);
        if let Some((t, n)) = s.last {
            let dt = now.duration_since(t).as_secs_f64();
            if dt >= 0.5 {
                s.achieved_rate = requests.saturating_sub(n) as f64 / dt;
                s.last = Some((now, requests));
            }
        } else {
            s.last = Some((now, requests));
        }
        // Snapshots start a second into the run.
        let elapsed = now.duration_since(first) + Duration::from_secs(1);
        s.target_rate = self.schedule.as_ref().map(|sc| sc.rate_at(elapsed));
        s.requests = requests;
        s.ok = ok;
        s.figures = figures;
        s.status = status;
    }
}

/// The longest `--metrics-linger`: long enough for the slowest usual scrape interval
/// (a minute or two) to come round twice, short enough that a forgotten linger does not
/// keep a batch job alive.
pub const MAX_LINGER: Duration = Duration::from_secs(600);

/// Keeps the final figures up `d` after the run (`--metrics-linger`), or until a signal
/// (Ctrl-C, SIGTERM) ends the wait at once; a run that a broken threshold stopped
/// (`--threshold-abort`) lingers as a completed one.
pub fn linger(d: Duration, stop: &crate::signals::Stop) {
    let until = Instant::now() + d;
    while !stop.signalled() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn serve(mut conn: TcpStream, text: &Text) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
    let mut buf = [0u8; 8192];
    let mut len = 0;
    while len < buf.len() {
        match conn.read(&mut buf[len..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                len += n;
                if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
        }
    }
    let head = String::from_utf8_lossy(&buf[..len]);
    let path = head.split_whitespace().nth(1).unwrap_or("");
    let (status, body) =
        if head.starts_with("GET ") && (path == "/metrics" || path.starts_with("/metrics?")) {
            ("200 OK", text.render())
        } else {
            ("404 Not Found", "not found: try /metrics\n".to_string())
        };
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// The family of the connections that failed with no request failing with them, by kind.
fn connection_failures(c: &crate::stats::Errors, o: &mut String) {
    use std::fmt::Write as _;
    let _ = writeln!(
        o,
        "# HELP vblast_connection_failures_total Connections that failed with no request failing with them (a connect refused while re-opening, an HTTP/2 connection error before any stream), by kind; not in vblast_errors_total.\n# TYPE vblast_connection_failures_total counter"
    );
    for (kind, v) in [
        ("connect", c.connect),
        ("read", c.read),
        ("write", c.write),
        ("timeout", c.timeout),
    ] {
        let _ = writeln!(o, "vblast_connection_failures_total{{kind=\"{kind}\"}} {v}");
    }
}

fn render(s: &MetricsState) -> String {
    use std::fmt::Write as _;
    let mut o = String::with_capacity(4096);
    let f = &s.figures;
    let mut counter = |name: &str, help: &str, v: u64| {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
    };
    counter(
        "vblast_requests_total",
        "Requests completed or failed (measured run).",
        s.requests,
    );
    counter("vblast_successes_total", "Requests that succeeded.", s.ok);
    counter(
        "vblast_throttled_total",
        "Requests throttled by a rate-limit quota (a 429 with its headers): failed, not in vblast_errors_total, with which they sum to the failed requests.",
        f.throttled,
    );
    counter(
        "vblast_connections_opened_total",
        "Connections opened (including re-opens).",
        f.connections_opened,
    );
    let _ = writeln!(
        o,
        "# HELP vblast_errors_total Failed requests by kind.\n# TYPE vblast_errors_total counter"
    );
    let e = &f.errors;
    for (kind, v) in [
        ("connect", e.connect),
        ("read", e.read),
        ("write", e.write),
        ("timeout", e.timeout),
        ("status", e.status),
    ] {
        let _ = writeln!(o, "vblast_errors_total{{kind=\"{kind}\"}} {v}");
    }
    connection_failures(&f.connection_failures, &mut o);
    let _ = writeln!(
        o,
        "# HELP vblast_responses_total Responses by HTTP status code.\n# TYPE vblast_responses_total counter"
    );
    for (code, n) in &s.status {
        let _ = writeln!(o, "vblast_responses_total{{code=\"{code}\"}} {n}");
    }
    let _ = writeln!(
        o,
        "# HELP vblast_connections_open Connections open now.\n# TYPE vblast_connections_open gauge\nvblast_connections_open {}",
        f.connections_open
    );
    let _ = writeln!(
        o,
        "# HELP vblast_figures_parts Parts of the run that send live figures: its worker processes, or its event-loop threads when one process runs it.\n# TYPE vblast_figures_parts gauge\nvblast_figures_parts {}",
        s.parts
    );
    let _ = writeln!(
        o,
        "# HELP vblast_figures_parts_included Parts whose figures the figures here include: all of them, or 0 until every part has sent its first (the figures then stay at zero, never part of the run shown as the whole).\n# TYPE vblast_figures_parts_included gauge\nvblast_figures_parts_included {}",
        s.included
    );
    let _ = writeln!(
        o,
        "# HELP vblast_achieved_rate Requests per second over the last interval.\n# TYPE vblast_achieved_rate gauge\nvblast_achieved_rate {:.3}",
        s.achieved_rate
    );
    if let Some((not_sent, kept)) = s.schedule {
        let _ = writeln!(
            o,
            "# HELP vblast_not_sent_total Scheduled requests never sent (the run ended first; known once it has ended).\n# TYPE vblast_not_sent_total counter\nvblast_not_sent_total {not_sent}\n# HELP vblast_schedule_kept 1 when the run kept its schedule, 0 when it did not (docs/exit-status.md; known once it has ended).\n# TYPE vblast_schedule_kept gauge\nvblast_schedule_kept {}",
            u8::from(kept)
        );
    }
    if let Some(r) = s.target_rate {
        let _ = writeln!(
            o,
            "# HELP vblast_target_rate Target rate of the open-model schedule now (this process's whole run; divide by shards).\n# TYPE vblast_target_rate gauge\nvblast_target_rate {r:.3}"
        );
    }
    histogram(
        &mut o,
        "vblast_latency_seconds",
        "Latency from each request's intended start (corrected for coordinated omission; the actual send in the closed model).",
        &f.latency,
    );
    histogram(
        &mut o,
        "vblast_service_seconds",
        "Service time from the actual send (uncorrected).",
        &f.service,
    );
    o.push_str(&threshold_lines(&s.thresholds));
    o
}

/// The thresholds' verdicts as the text format writes them: the gauge
/// `vblast_threshold_verdict{threshold="p99<20ms"}`, 0 holds, 1 unclear, 2 broken
/// (docs/thresholds.md); nothing without thresholds.
pub fn threshold_lines(verdicts: &[(String, crate::threshold::ThresholdVerdict)]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    if verdicts.is_empty() {
        return o;
    }
    o.push_str("# HELP vblast_threshold_verdict Each threshold's verdict once the run has ended: 0 holds, 1 unclear, 2 broken.\n# TYPE vblast_threshold_verdict gauge\n");
    for (t, v) in verdicts {
        let _ = writeln!(
            o,
            "vblast_threshold_verdict{{threshold=\"{}\"}} {}",
            label_value(t),
            v.gauge()
        );
    }
    o
}

/// A label value as the text format writes it: `\`, `"` and newlines escaped.
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A count over an interval, per second of it.
fn per_second(i: &Interval, v: Option<f64>) -> Option<f64> {
    v.filter(|_| i.duration_s > 0.0).map(|v| v / i.duration_s)
}

/// A gauge of the nodes' figures: its name after `vblast_server_`, its help, its value.
type ServerGauge = (&'static str, &'static str, fn(&Interval) -> Option<f64>);

/// Every figure of the nodes served, in the order served.
static SERVER_GAUGES: [ServerGauge; 27] = [
    (
        "cpu_cores",
        "The node's process CPU over the latest sampling interval, in cores (1 = one core busy).",
        |i| i.cpu_cores,
    ),
    (
        "cpu_wait_cores",
        "CPU the node's threads waited for while runnable, in cores (--server-pid).",
        |i| i.cpu_wait_cores,
    ),
    (
        "host_cpu_ratio",
        "The node's host CPU in use, of all its cores (0 to 1; sys/host-info).",
        |i| i.host_cpu_pct.map(|p| p / 100.0),
    ),
    (
        "resident_memory_bytes",
        "The node's process resident memory.",
        |i| i.rss_bytes,
    ),
    (
        "in_flight_requests",
        "Requests in flight on the node (vault.core.in_flight_requests).",
        |i| i.in_flight,
    ),
    ("goroutines", "The node's goroutines.", |i| i.goroutines),
    (
        "leases",
        "Leases on the node (vault.expire.num_leases).",
        |i| i.leases,
    ),
    ("tokens", "Tokens on the node (vault.token.count).", |i| {
        i.tokens
    }),
    (
        "handle_request_seconds",
        "Mean time of the node's request handler over the latest interval (vault.core.handle_request).",
        |i| i.handle_ms.map(|ms| ms / 1000.0),
    ),
    (
        "check_token_seconds",
        "Mean token check time over the latest interval (vault.core.check_token).",
        |i| i.check_token_ms.map(|ms| ms / 1000.0),
    ),
    (
        "barrier_get_seconds",
        "Mean barrier get time over the latest interval (vault.barrier.get).",
        |i| i.barrier_get_ms.map(|ms| ms / 1000.0),
    ),
    (
        "storage_seconds_per_request",
        "Storage backend time (get, put, delete and list) per handled request over the latest interval.",
        |i| i.storage_ms_per_request.map(|ms| ms / 1000.0),
    ),
    (
        "handled_per_second",
        "Requests the node handled per second over the latest interval (less the sampler's own).",
        |i| per_second(i, i.handled),
    ),
    (
        "rate_limit_violations_per_second",
        "Requests the node refused by a rate-limit quota per second over the latest interval (vault.quota.rate_limit.violation).",
        |i| per_second(i, i.rate_limit_violations),
    ),
    (
        "write_bytes_per_second",
        "Bytes the node's process wrote to storage per second over the latest interval (/proc/PID/io, --server-pid): a raft node's data directory.",
        |i| i.write_bytes_per_s,
    ),
    (
        "io_blocked_threads",
        "The node's threads waiting for the disk (state D) at the latest sample (--server-pid).",
        |i| i.io_blocked_threads.map(f64::from),
    ),
    (
        "blkio_wait_seconds_per_second",
        "Time the node's threads waited for block IO per second over the latest interval (delayacct, --server-pid; when the kernel counts it).",
        |i| i.blkio_s_per_s,
    ),
    (
        "raft_commit_seconds",
        "Mean raft commit time over the latest interval (vault.raft.commitTime; the leader's).",
        |i| i.raft?.commit_ms.map(|ms| ms / 1000.0),
    ),
    (
        "raft_commits_per_second",
        "Raft commits per second over the latest interval (the leader's).",
        |i| per_second(i, i.raft?.commits),
    ),
    (
        "raft_apply_seconds",
        "Mean FSM apply time over the latest interval (vault.raft.fsm.applyBatch).",
        |i| i.raft?.apply_ms.map(|ms| ms / 1000.0),
    ),
    (
        "raft_fsm_pending",
        "Entries committed but not yet applied to the FSM (vault.raft_storage.stats.fsm_pending).",
        |i| i.raft?.fsm_pending,
    ),
    (
        "raft_applied_index",
        "The node's raft applied index.",
        |i| i.raft.map(|r| r.applied_index),
    ),
    (
        "raft_followers_lag",
        "On the leader: the followers' applied index behind its own, summed (vault.raft_storage.follower.applied_index_delta).",
        |i| i.raft?.followers_lag,
    ),
    (
        "raft_leader_changes",
        "Leader elections (new raft terms) over the latest interval.",
        |i| i.raft?.leader_changes,
    ),
    (
        "raft_bolt_free_pages",
        "Free pages in the node's BoltDB freelist (vault.raft_storage.bolt.freelist.free_pages).",
        |i| i.raft?.bolt_free_pages,
    ),
    (
        "raft_bolt_fsm_bytes",
        "Size of the node's FSM BoltDB file, vault.db (--server-pid).",
        |i| i.raft?.bolt_fsm_bytes.map(|b| b as f64),
    ),
    (
        "raft_bolt_log_bytes",
        "Size of the node's raft log BoltDB file, raft/raft.db (--server-pid).",
        |i| i.raft?.bolt_log_bytes.map(|b| b as f64),
    ),
];

/// The nodes' figures of their latest sampled interval: a gauge family per figure, a
/// series per node (label `node`, its address); a figure no node gives is left out.
fn render_server(o: &mut String, nodes: &[(String, Interval)]) {
    use std::fmt::Write as _;
    let families = &SERVER_GAUGES;
    let mut family = |name: &str, help: &str, values: Vec<(&str, f64)>| {
        if values.is_empty() {
            return;
        }
        let _ = writeln!(
            o,
            "# HELP vblast_server_{name} {help}\n# TYPE vblast_server_{name} gauge"
        );
        for (node, v) in values {
            let _ = writeln!(
                o,
                "vblast_server_{name}{{node=\"{}\"}} {v}",
                label_value(node)
            );
        }
    };
    for &(name, help, value) in families {
        let values = nodes
            .iter()
            .filter_map(|(n, i)| Some((n.as_str(), value(i)?)))
            .collect();
        family(name, help, values);
    }
    render_follower_lags(o, nodes);
}

/// The leader's lag of each follower (its interval's `raft_followers`): a series per
/// follower, labelled with the leader's address (`node`) and the follower's `peer_id`.
fn render_follower_lags(o: &mut String, nodes: &[(String, Interval)]) {
    use std::fmt::Write as _;
    if nodes.iter().all(|(_, i)| i.raft_followers.is_empty()) {
        return;
    }
    let _ = writeln!(
        o,
        "# HELP vblast_server_raft_follower_lag On the leader: each follower's applied index behind its own (vault.raft_storage.follower.applied_index_delta, label peer_id).\n# TYPE vblast_server_raft_follower_lag gauge"
    );
    for (node, i) in nodes {
        for f in &i.raft_followers {
            let _ = writeln!(
                o,
                "vblast_server_raft_follower_lag{{node=\"{}\",peer_id=\"{}\"}} {}",
                label_value(node),
                label_value(&f.peer_id),
                f.lag
            );
        }
    }
}

fn histogram(o: &mut String, name: &str, help: &str, b: &Buckets) {
    use std::fmt::Write as _;
    let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} histogram");
    for (le, n) in BUCKETS_US.iter().zip(&b.le) {
        let _ = writeln!(o, "{name}_bucket{{le=\"{}\"}} {n}", *le as f64 / 1e6);
    }
    let _ = writeln!(o, "{name}_bucket{{le=\"+Inf\"}} {}", b.count);
    let _ = writeln!(o, "{name}_sum {}", b.sum_us / 1e6);
    let _ = writeln!(o, "{name}_count {}", b.count);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index of the bucket whose upper bound is `us`.
    fn at(us: u64) -> usize {
        BUCKETS_US
            .iter()
            .position(|&b| b == us)
            .expect("a bucket bound")
    }

    #[test]
    fn buckets_are_cumulative_and_add_across_shards() {
        let mut a = Stats::new(1);
        let mut b = Stats::new(1);
        for us in [50u64, 300, 800, 4_000, 2_000_000] {
            a.ops[0].latency.record(us);
        }
        for us in [90u64, 1_000, 20_000_000] {
            b.ops[0].latency.record(us);
        }
        let (fa, fb) = (Figures::of(&a, &[], 0), Figures::of(&b, &[], 0));
        // le 10us: none; le 100us: 50 | 90; le 1ms: 50, 300, 800 | 90, 1000; le 10s: all
        // but 20 s.
        assert_eq!((fa.latency.le[at(10)], fb.latency.le[at(10)]), (0, 0));
        assert_eq!((fa.latency.le[at(100)], fb.latency.le[at(100)]), (1, 1));
        assert_eq!((fa.latency.le[at(1_000)], fb.latency.le[at(1_000)]), (3, 2));
        assert_eq!(
            (
                fa.latency.le[BUCKETS_US.len() - 1],
                fb.latency.le[BUCKETS_US.len() - 1]
            ),
            (5, 2)
        );
        // sum by (le) of the shards == the buckets of both shards' samples together.
        let mut both = a.clone();
        both.merge(&b);
        let mut summed = fa.latency;
        summed.add(&fb.latency);
        assert_eq!(summed.le, Figures::of(&both, &[], 0).latency.le);
        assert_eq!(summed.count, 8);
    }

    #[test]
    fn figures_of_processes_add_up() {
        let mut a = Stats::new(1);
        let mut b = Stats::new(1);
        a.ops[0].latency.record(300);
        b.ops[0].latency.record(3_000);
        a.errors.read = 1;
        b.errors.read = 2;
        let mut sa = vec![0u64; 1000];
        let mut sb = vec![0u64; 1000];
        sa[200] = 3;
        sb[200] = 4;
        sb[503] = 1;
        let mut sum = Figures::of(&a, &sa, 2);
        sum.add(&Figures::of(&b, &sb, 3));
        assert_eq!(sum.errors.read, 3);
        assert_eq!(sum.connections_open, 5);
        assert_eq!(sum.latency.count, 2);
        assert_eq!(sum.latency.le[at(500)], 1); // the 300us sample only
        assert_eq!(sum.latency.le[at(2_500)], 1); // still the 300us sample only
        assert_eq!(sum.latency.le[at(5_000)], 2); // both
        let codes: Vec<(u16, u64)> = sum.status.iter().copied().filter(|s| s.0 != 0).collect();
        assert_eq!(codes, vec![(200, 7), (503, 1)]);
    }

    #[test]
    fn a_sum_without_every_part_is_never_served() {
        let m = Metrics::start("127.0.0.1:0", None).unwrap();
        let mut st = Stats::new(1);
        st.ops[0].requests = 4;
        st.ops[0].latency.record(700);
        let part = Totals {
            requests: 4,
            ok: 4,
            more: Figures::of(&st, &[], 150),
            ops: Vec::new(),
            reported: true,
        };
        let served = || render(&m.state.lock().unwrap());
        let has = |text: &str, line: &str| text.lines().any(|l| l == line);
        // One of two worker processes has reported: nothing of the run is served yet.
        m.update(&[part.clone(), Totals::default()]);
        let text = served();
        assert!(has(&text, "vblast_requests_total 0"), "{text}");
        assert!(has(&text, "vblast_connections_open 0"), "{text}");
        assert!(has(&text, "vblast_figures_parts 2"), "{text}");
        assert!(has(&text, "vblast_figures_parts_included 0"), "{text}");
        // Both: the sum over both.
        m.update(&[part.clone(), part.clone()]);
        let text = served();
        assert!(has(&text, "vblast_requests_total 8"), "{text}");
        assert!(has(&text, "vblast_connections_open 300"), "{text}");
        assert!(has(&text, "vblast_figures_parts_included 2"), "{text}");
        // A later partial sum (a held run's next step) leaves the last whole one served.
        m.update(&[Totals::default(), part]);
        let text = served();
        assert!(has(&text, "vblast_requests_total 8"), "{text}");
        assert!(has(&text, "vblast_figures_parts_included 2"), "{text}");
    }

    #[test]
    fn each_node_is_a_series_of_its_own_by_its_address() {
        let node = |cpu: f64, handled: f64| Interval {
            duration_s: 0.5,
            cpu_cores: Some(cpu),
            handled: Some(handled),
            handle_ms: Some(2.0),
            rate_limit_violations: Some(handled / 10.0),
            raft: Some(crate::server_stats::timeline::RaftInterval {
                commit_ms: Some(4.0),
                commits: Some(handled),
                fsm_pending: Some(3.0),
                applied_index: 1000.0,
                bolt_fsm_bytes: Some(1 << 20),
                ..Default::default()
            }),
            ..Interval::default()
        };
        let mut o = String::new();
        render_server(
            &mut o,
            &[
                ("http://10.0.0.1:8200".into(), node(1.5, 100.0)),
                ("http://10.0.0.2:8200".into(), node(0.25, 10.0)),
                ("a\"b".into(), node(0.0, 0.0)),
            ],
        );
        for line in [
            "vblast_server_cpu_cores{node=\"http://10.0.0.1:8200\"} 1.5",
            "vblast_server_cpu_cores{node=\"http://10.0.0.2:8200\"} 0.25",
            "vblast_server_handled_per_second{node=\"http://10.0.0.1:8200\"} 200",
            "vblast_server_handle_request_seconds{node=\"http://10.0.0.2:8200\"} 0.002",
            "vblast_server_rate_limit_violations_per_second{node=\"http://10.0.0.1:8200\"} 20",
            "vblast_server_cpu_cores{node=\"a\\\"b\"} 0",
            "# TYPE vblast_server_cpu_cores gauge",
            "vblast_server_raft_commit_seconds{node=\"http://10.0.0.1:8200\"} 0.004",
            "vblast_server_raft_commits_per_second{node=\"http://10.0.0.1:8200\"} 200",
            "vblast_server_raft_fsm_pending{node=\"http://10.0.0.2:8200\"} 3",
            "vblast_server_raft_applied_index{node=\"http://10.0.0.2:8200\"} 1000",
            "vblast_server_raft_bolt_fsm_bytes{node=\"http://10.0.0.2:8200\"} 1048576",
        ] {
            assert!(o.lines().any(|l| l == line), "{line} not in\n{o}");
        }
        // A figure no node gives has no family.
        assert!(!o.contains("vblast_server_goroutines"), "{o}");
        assert!(!o.contains("vblast_server_raft_bolt_log_bytes"), "{o}");
        assert!(!o.contains("vblast_server_raft_follower_lag"), "{o}");
        // The leader's followers: a series per follower, by the leader and its peer id.
        let mut leader = node(1.0, 10.0);
        leader.raft_followers = ["node1", "node2"]
            .iter()
            .zip([3.0, 0.0])
            .map(|(p, lag)| crate::server_stats::sample::FollowerLag {
                peer_id: p.to_string(),
                lag,
            })
            .collect();
        let mut o = String::new();
        render_server(&mut o, &[("http://10.0.0.1:8200".into(), leader)]);
        for line in [
            "# TYPE vblast_server_raft_follower_lag gauge",
            "vblast_server_raft_follower_lag{node=\"http://10.0.0.1:8200\",peer_id=\"node1\"} 3",
            "vblast_server_raft_follower_lag{node=\"http://10.0.0.1:8200\",peer_id=\"node2\"} 0",
        ] {
            assert!(o.lines().any(|l| l == line), "{line} not in\n{o}");
        }
    }

    #[test]
    fn text_format_has_the_families() {
        let mut st = Stats::new(1);
        st.ops[0].requests = 3;
        st.ops[0].ok = 1;
        st.ops[0].latency.record(700);
        st.errors.timeout = 1;
        st.throttled = 1;
        st.status.insert(200, 1);
        st.status.insert(429, 1);
        st.connection_failures.count(
            crate::stats::ErrorKind::Connect,
            "connect failed: refused",
            2,
        );
        let mut s = MetricsState::default();
        let f = Figures::of(&st, &[], 5);
        s.requests = 3;
        s.ok = 1;
        s.figures = f;
        s.status = st.status.clone();
        let text = render(&s);
        for line in [
            "vblast_requests_total 3",
            "vblast_successes_total 1",
            "vblast_throttled_total 1",
            "vblast_errors_total{kind=\"timeout\"} 1",
            "vblast_connection_failures_total{kind=\"connect\"} 2",
            "vblast_connection_failures_total{kind=\"read\"} 0",
            "vblast_responses_total{code=\"429\"} 1",
            "vblast_connections_open 5",
            "vblast_latency_seconds_bucket{le=\"0.001\"} 1",
            "vblast_latency_seconds_bucket{le=\"0.0005\"} 0",
            "vblast_latency_seconds_bucket{le=\"+Inf\"} 1",
            "vblast_latency_seconds_count 1",
            "# TYPE vblast_service_seconds histogram",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
