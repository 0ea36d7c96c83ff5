//! The summary of a run (or of merged results), built from its `Stats`: the figures every
//! format shows. Each format is a renderer in its own module, writing a `Summary` to any
//! `io::Write`: `text`, `json` (the JSON report whose keys scripts read), `hgrm`
//! (HdrHistogram's percentile spectrum and the `--latency` view), `verbose`, `html` (the
//! self-contained page of `--html`, charts as inline SVG). `render` also dispatches to the
//! layouts of the compatibility folders (`crate::ab::report`,
//! `crate::vault_benchmark::report`), which are part of this layer.

pub mod ci;
pub mod clock;
pub mod hgrm;
pub mod hlog;
pub mod html;
pub mod json;
pub mod junit;
pub mod nodes;
pub mod page;
pub mod staleness;
pub mod tails;
pub mod text;
pub mod thresholds;
pub mod verbose;

use std::collections::BTreeMap;
use std::io;

use serde::{Deserialize, Serialize};

use crate::stats::blocks::Blocks;
use crate::stats::interval::Confidence;
use crate::stats::{Errors, Hist, OpStats, Stats};

/// Latency figures in milliseconds.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
    /// Thin tails (`tails.rs`): the percentile keys above with fewer than 10 samples above
    /// them, each with how many there are; empty when every percentile is well supported.
    pub thin_tails: BTreeMap<String, u64>,
    /// The level of `ci` (0.95 unless `--confidence` says otherwise).
    pub confidence: f64,
    /// Each percentile key's confidence interval (`ci.rs`, order statistic); null where
    /// too few samples bound either side.
    pub ci: BTreeMap<String, Option<ci::Ci>>,
    /// The run's latency: how `ci` was widened for samples correlated in time (absent
    /// where it was not: the order-statistic intervals).
    #[serde(skip_serializing_if = "ci::CiMethod::is_plain")]
    pub ci_method: ci::CiMethod,
}

/// A name the user gave (a test's, an operation's, a file's) as it is printed: control
/// characters and the bidirectional controls that reorder what follows them (U+202E,
/// right-to-left override, and its kin) shown as `\u{202e}`, so that no name rewrites the
/// line it is printed on. The one helper every format and message uses for such names.
pub fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    fn hidden(c: char) -> bool {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !name.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Microseconds to milliseconds.
pub(crate) fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl Percentiles {
    /// The figures of `h`, with intervals at the default level.
    pub fn of(h: &Hist) -> Percentiles {
        Percentiles::at(h, Confidence::default())
    }

    /// The figures of `h`, with intervals at `level`.
    pub fn at(h: &Hist, level: Confidence) -> Percentiles {
        Percentiles::at_blocked(h, &Blocks::default(), level)
    }

    /// The figures of `h`, with intervals at `level` widened for the correlation in time
    /// that `blocks` (the same samples by block of time) show.
    pub fn at_blocked(h: &Hist, blocks: &Blocks, level: Confidence) -> Percentiles {
        let h = &h.0;
        if h.is_empty() {
            return Percentiles {
                confidence: level.level(),
                ..Percentiles::default()
            };
        }
        let q = |p: f64| ms(h.value_at_quantile(p));
        let p = Percentiles {
            count: h.len(),
            min: ms(h.min()),
            mean: h.mean() / 1000.0,
            stdev: h.stdev() / 1000.0,
            p50: q(0.50),
            p75: q(0.75),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: ms(h.max()),
            thin_tails: tails::of(h.len()),
            confidence: level.level(),
            ci: BTreeMap::new(),
            ci_method: ci::CiMethod::default(),
        };
        let value = |key: &str| p.value(key);
        let (ci, ci_method) = ci::of(h, blocks, level, value);
        Percentiles { ci, ci_method, ..p }
    }

    /// No sample at all.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The figure of percentile `key` (`"p99"`).
    pub fn value(&self, key: &str) -> f64 {
        match key {
            "p50" => self.p50,
            "p75" => self.p75,
            "p90" => self.p90,
            "p95" => self.p95,
            "p99" => self.p99,
            "p999" => self.p999,
            "p9999" => self.p9999,
            _ => 0.0,
        }
    }

    /// The interval of percentile `key`, when one side at least is known.
    pub fn interval(&self, key: &str) -> Option<&ci::Ci> {
        self.ci.get(key).and_then(Option::as_ref)
    }

    /// Samples above percentile `key` (`"p99"`) when it is a thin tail.
    pub fn thin(&self, key: &str) -> Option<u64> {
        self.thin_tails.get(key).copied()
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct OpSummary {
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    pub rps: f64,
    pub throughput: f64,
    pub success_ratio: f64,
    pub latency_ms: Percentiles,
    pub service_ms: Percentiles,
    /// Body bytes received and sent (vegeta's bytes in and out).
    pub body_in: u64,
    pub body_out: u64,
    /// Responses by status code ("0": no response), as vegeta counts them per test.
    pub status: BTreeMap<String, u64>,
    /// This operation's failure messages with their counts.
    pub error_messages: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SecondSummary {
    pub second: u64,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The run's last second when the run ended part-way through it: how much of it the
    /// run covered, seconds (its counts are over that much, not a whole second).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_s: Option<f64>,
}

/// A partial last second shorter than this is left out of the charts: its few samples
/// are no rate and no percentile. A longer one is drawn scaled to a whole second.
pub const PARTIAL_SECOND_DRAWN: f64 = 0.5;

/// The load model: closed (each connection sends when its previous response is in) or
/// open (requests on a schedule, `-R`). Serialized as "closed" / "open".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    Closed,
    Open,
}

/// What the run was asked to do, for the report's header.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    pub target: String,
    pub operation: String,
    pub connections: u64,
    pub threads: usize,
    pub processes: usize,
    pub model: Model,
    pub target_rate: Option<f64>,
    pub keepalive: bool,
    /// "HTTP/1.1", "HTTP/2 (h2)" or "HTTP/2 (h2c)" (`Http2Options::name`).
    #[serde(default = "http11")]
    pub protocol: String,
    pub warmup_s: f64,
    /// Whether the run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Seconds spent on checks and setup before the run, and on cleanup after it.
    #[serde(default)]
    pub setup_s: f64,
    #[serde(default)]
    pub cleanup_s: f64,
    /// The setup's phases, each with its count, time and rate (src/stats/phases.rs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup_phases: Vec<crate::stats::phases::SetupPhase>,
    /// What a vault-benchmark file asked that this run did differently, each as said on
    /// stderr (`vblast: note: ...`); empty for a run without such a file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    /// URL mode: the HTTP method sent (a body without `-m` makes it POST); None for Vault
    /// operations and in files of an older vblast.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

#[cfg(test)]
impl RunInfo {
    /// A closed-model run of `connections` against `target`, one thread, one process: the
    /// base the tests fill in with struct update syntax.
    pub fn sample(target: &str, connections: u64) -> RunInfo {
        RunInfo {
            target: target.into(),
            operation: String::new(),
            connections,
            threads: 1,
            processes: 1,
            model: Model::Closed,
            target_rate: None,
            keepalive: true,
            protocol: http11(),
            warmup_s: 0.0,
            interrupted: false,
            setup_s: 0.0,
            cleanup_s: 0.0,
            setup_phases: Vec::new(),
            differences: Vec::new(),
            method: None,
        }
    }
}

fn http11() -> String {
    "HTTP/1.1".into()
}

/// The one summary every format renders.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub vblast_version: String,
    pub run: RunInfo,
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    pub duration_s: f64,
    pub rps: f64,
    pub throughput: f64,
    pub success_ratio: f64,
    /// "intended start" in the open model, "actual send" in the closed model.
    pub latency_measured_from: String,
    pub latency_ms: Percentiles,
    pub service_ms: Percentiles,
    pub connect_ms: Percentiles,
    pub tls_ms: Percentiles,
    pub ttfb_ms: Percentiles,
    pub status: BTreeMap<String, u64>,
    pub errors: Errors,
    /// The failed requests' messages, one per failed request: they sum to `failed`, as
    /// the kinds of `errors` and `throttled` do.
    pub error_messages: BTreeMap<String, u64>,
    /// Connections that failed with no request failing with them, apart from `failed`.
    pub connection_failures: crate::stats::ConnectionFailures,
    /// What the run says about itself that is no failure (`--http2-fallback`), apart from
    /// the failures' messages.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Each failed status: the first line of what the server answered with it (redacted).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub failed_answers: BTreeMap<String, String>,
    pub late: u64,
    pub max_lag_ms: f64,
    /// Open model: requests the schedule placed in the measured window that were never
    /// sent (the run ended or was stopped first); `requests` + this = the schedule's count
    /// (less any still in flight when a signal stopped the run). 0 in the closed model.
    pub not_sent: u64,
    /// Open model, when requests were never sent: each as having waited from its intended
    /// start until the run ended (a lower bound of its latency; absent when all were sent).
    #[serde(skip_serializing_if = "Percentiles::is_empty")]
    pub unsent_ms: Percentiles,
    /// Open model, when requests were never sent: every scheduled request's latency, the
    /// sent ones' and the unsent ones' together (what wrk2's tail would show).
    #[serde(skip_serializing_if = "Percentiles::is_empty")]
    pub scheduled_ms: Percentiles,
    /// Open model: the warning when the run did not keep its schedule (`stats::kept`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_not_kept: Option<String>,
    pub connections_opened: u64,
    /// TLS handshakes that resumed a session (of tls_ms.count handshakes).
    pub tls_resumed: u64,
    pub server_closes: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub ops: Vec<OpSummary>,
    pub timeline: Vec<SecondSummary>,
    /// Several nodes as one target: a row per node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<nodes::NodeSummary>,
    /// Several nodes as one target: the windows in which requests failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<nodes::WindowSummary>,
    /// `--op kv-staleness`: the standbys' delays behind the active node's writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staleness: Option<staleness::StalenessSummary>,
    /// `--clock kernel`: both clocks' figures and their difference (`clock.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock: Option<clock::ClockSummary>,
    /// Answers 429 from a rate-limit quota (part of `failed`, not of `errors`).
    #[serde(skip_serializing_if = "is_zero")]
    pub throttled: u64,
    /// Largest Retry-After seen on a throttled answer, seconds.
    #[serde(skip_serializing_if = "is_zero")]
    pub retry_after_s: u64,
    /// Answers 307 (a standby redirecting).
    #[serde(skip_serializing_if = "is_zero")]
    pub redirects: u64,
    /// `--follow-redirects`: redirects followed (hops).
    #[serde(skip_serializing_if = "is_zero")]
    pub followed: u64,
    /// Largest X-Ratelimit-Limit seen on a throttled answer.
    #[serde(skip_serializing_if = "is_zero")]
    pub ratelimit_limit: u64,
    /// What the nodes did during the run, sampled on them (src/server_stats/).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::server_stats::ServerSummary>,
    /// HTTP/2: streams asked and allowed, resets, GOAWAYs (`src/stats/http2.rs`).
    #[serde(skip_serializing_if = "crate::stats::http2::H2Figures::is_empty")]
    pub http2: crate::stats::http2::H2Figures,
    #[serde(skip)]
    pub latency_hist: Hist,
    /// The latency samples by block of time (`stats::blocks`), which its intervals read.
    #[serde(skip)]
    pub latency_blocks: Blocks,
    #[serde(skip)]
    pub service_hist: Hist,
    /// What ApacheBench's report adds (kept out of the JSON report).
    #[serde(skip)]
    pub ab: crate::ab::report::AbFacts,
    /// Each threshold of the run with its verdict (`--threshold`, `thresholds.rs`); absent
    /// when the run had none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<crate::threshold::ThresholdResult>,
}

/// One row per second from the first to the last, seconds in which nothing completed
/// included (a stalled server shows as a gap of zeros, not as a missing row); the last
/// row says how much of its second the run covered when that was less than all of it
/// (`secs`: the measured run's length).
fn timeline(stats: &Stats, secs: f64) -> Vec<SecondSummary> {
    let mut rows: Vec<SecondSummary> = Vec::new();
    for (i, s) in stats.timeline.iter() {
        while rows.len() as u64 <= i {
            rows.push(SecondSummary {
                second: rows.len() as u64,
                requests: 0,
                ok: 0,
                errors: 0,
                p50_ms: 0.0,
                p99_ms: 0.0,
                partial_s: None,
            });
        }
        let row = &mut rows[i as usize];
        row.requests += s.requests;
        row.ok += s.ok;
        row.errors += s.errors;
        if !s.latency.is_empty() {
            row.p50_ms = ms(s.latency.0.value_at_quantile(0.5));
            row.p99_ms = ms(s.latency.0.value_at_quantile(0.99));
        }
    }
    if let Some(last) = rows.last_mut() {
        let covered = secs - last.second as f64;
        if covered < 1.0 && secs > 0.0 {
            last.partial_s = Some((covered.max(0.0) * 1000.0).round() / 1000.0);
        }
    }
    rows
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn per_s(n: u64, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

fn ratio(ok: u64, all: u64) -> f64 {
    if all == 0 {
        0.0
    } else {
        ok as f64 / all as f64
    }
}

/// What ApacheBench's report adds, from the stats of `requests` requests.
fn ab_facts(stats: &Stats, requests: u64) -> crate::ab::report::AbFacts {
    // ab's Connect per request: the TLS handshake included over https (older files
    // lack it: TCP alone), a reused keep-alive connection's zero.
    let mut connect = if stats.connect_tls.is_empty() {
        stats.connect.clone()
    } else {
        stats.connect_tls.clone()
    };
    let reused = requests.saturating_sub(connect.0.len());
    if reused > 0 {
        let _ = connect.0.record_n(0, reused);
    }
    crate::ab::report::AbFacts {
        server: stats.server.clone().unwrap_or_default(),
        doc_length: stats.doc_length.unwrap_or(0),
        length_failures: stats.length_mismatches(),
        body_bytes: stats.body_bytes,
        kept_alive: stats.kept_alive,
        connect,
        waiting: stats.waiting.clone(),
    }
}

impl OpSummary {
    /// One operation's figures over `secs` seconds, its percentiles from `pct`.
    fn of(name: String, o: &OpStats, secs: f64, pct: &dyn Fn(&Hist) -> Percentiles) -> Self {
        OpSummary {
            name: shown(&name).into_owned(),
            requests: o.requests,
            ok: o.ok,
            rps: per_s(o.requests, secs),
            throughput: per_s(o.ok, secs),
            success_ratio: ratio(o.ok, o.requests),
            latency_ms: pct(&o.latency),
            service_ms: pct(&o.service),
            body_in: o.body_in,
            body_out: o.body_out,
            status: o.status.iter().map(|(c, n)| (c.to_string(), n)).collect(),
            error_messages: o.messages.clone(),
        }
    }
}

/// A map by status code, keyed by the code's text (as JSON has it).
fn by_status(m: &BTreeMap<u16, String>) -> BTreeMap<String, String> {
    m.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

impl Summary {
    /// The summary, with intervals at the default level.
    pub fn new(run: RunInfo, stats: &Stats, op_names: &[String]) -> Summary {
        Summary::new_at(run, stats, op_names, Confidence::default())
    }

    /// The summary, with every percentile's interval at `level`.
    pub fn new_at(run: RunInfo, stats: &Stats, op_names: &[String], level: Confidence) -> Summary {
        let pct = |h: &Hist| Percentiles::at(h, level);
        let secs = stats.elapsed_s;
        let mut latency = Hist::default();
        let mut service = Hist::default();
        let ops: Vec<OpSummary> = stats
            .ops
            .iter()
            .enumerate()
            .map(|(i, o)| {
                latency.add(&o.latency);
                service.add(&o.service);
                let name = op_names.get(i).cloned().unwrap_or_else(|| format!("op{i}"));
                OpSummary::of(name, o, secs, &pct)
            })
            .collect();
        let requests = stats.requests();
        let ok = stats.ok();
        let open = run.model == Model::Open;
        let ab = ab_facts(stats, requests);
        let scheduled_ms = if stats.unsent.is_empty() {
            Percentiles::default()
        } else {
            let mut all = latency.clone();
            all.add(&stats.unsent);
            pct(&all)
        };
        let schedule_not_kept = open
            .then(|| {
                crate::stats::kept::verdict(requests, stats.not_sent, stats.late, stats.max_lag_us)
                    .warning()
            })
            .flatten();
        Summary {
            unsent_ms: pct(&stats.unsent),
            scheduled_ms,
            schedule_not_kept,
            http2: stats.http2.clone(),
            vblast_version: env!("CARGO_PKG_VERSION").to_string(),
            requests,
            ok,
            failed: requests - ok,
            duration_s: secs,
            rps: per_s(requests, secs),
            throughput: per_s(ok, secs),
            success_ratio: ratio(ok, requests),
            latency_measured_from: if open {
                "intended start"
            } else {
                "actual send"
            }
            .into(),
            latency_ms: Percentiles::at_blocked(&latency, &stats.blocks, level),
            service_ms: pct(&service),
            connect_ms: pct(&stats.connect),
            tls_ms: pct(&stats.tls),
            ttfb_ms: pct(&stats.ttfb),
            status: stats
                .status
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            errors: stats.errors,
            error_messages: stats.messages.clone(),
            connection_failures: stats.connection_failures.clone(),
            notes: stats.notes.clone(),
            failed_answers: by_status(&stats.failed_answers),
            late: stats.late,
            max_lag_ms: ms(stats.max_lag_us),
            not_sent: stats.not_sent,
            connections_opened: stats.connections_opened,
            tls_resumed: stats.tls_resumed,
            server_closes: stats.server_closes,
            bytes_sent: stats.bytes_sent,
            bytes_received: stats.bytes_received,
            ops,
            timeline: timeline(stats, secs),
            nodes: nodes::nodes(stats),
            windows: nodes::windows(stats),
            staleness: stats.staleness.as_ref().map(staleness::summary),
            clock: stats
                .clock
                .as_ref()
                .map(|c| clock::summary(c, &latency, &service, &stats.ops, op_names)),
            throttled: stats.throttled,
            retry_after_s: stats.retry_after_s,
            redirects: stats.redirects,
            followed: stats.followed,
            ratelimit_limit: stats.ratelimit_limit,
            server: None,
            run,
            latency_hist: latency,
            latency_blocks: stats.blocks.clone(),
            service_hist: service,
            ab,
            thresholds: Vec::new(),
        }
    }

    pub fn is_open(&self) -> bool {
        self.run.model == Model::Open
    }
}

/// The formats a `Summary` is rendered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The terse table; with `latency`, the percentiles and spectra of `--latency` after it.
    Text {
        latency: bool,
        /// Each percentile's confidence interval beside it (`--ci`).
        ci: bool,
    },
    /// The JSON report.
    Json,
    /// The corrected latency's percentile spectrum (what `--hgrm` saves).
    Hgrm,
    /// ApacheBench's report; with `ci`, each percentage row's interval after it (`--ci`).
    Ab {
        ci: bool,
    },
    /// Per operation latency spectrum, bytes, status codes, errors, setup and cleanup;
    /// with `ci`, a line of the percentiles' intervals under each latency line.
    Verbose {
        ci: bool,
    },
    /// ab `-e`'s percentile CSV (what `--ab-csv` saves).
    AbCsv,
    /// vault-benchmark's terse, verbose and JSON layouts; with `ci` (`--ci`), the terse
    /// table's 95th and 99th percentiles' intervals in two columns after it, and a
    /// `Latencies CI` line in each verbose section (vault-benchmark's JSON keeps its keys).
    VbTerse {
        ci: bool,
    },
    VbVerbose {
        ci: bool,
    },
    VbJson,
}

/// Writes `summary` in `format` to `out`.
pub fn render(summary: &Summary, format: Format, out: &mut dyn io::Write) -> io::Result<()> {
    match format {
        Format::Text { latency, ci } => {
            text::render_with(summary, ci, out)?;
            if latency {
                hgrm::render_latency_with(summary, ci, out)?;
            }
            Ok(())
        }
        Format::Json => json::render(summary, out),
        Format::Hgrm => hgrm::render(summary, out),
        Format::Ab { ci } => {
            let style = crate::ab::report::AbStyle {
                ci,
                ..crate::ab::report::AbStyle::default()
            };
            crate::ab::report::render_with(summary, &style, out)
        }
        Format::Verbose { ci } => verbose::render_with(summary, ci, out),
        Format::AbCsv => crate::ab::report::render_csv(summary, out),
        Format::VbTerse { ci } => {
            crate::vault_benchmark::report::terse::render_with(summary, ci, out)
        }
        Format::VbVerbose { ci } => {
            crate::vault_benchmark::report::verbose::render_with(summary, ci, out)
        }
        Format::VbJson => crate::vault_benchmark::report::json::render(summary, out),
    }
}

/// Renders `summary` in `format` into the file at `path`; the error names the file.
pub fn save(
    summary: &Summary,
    format: Format,
    path: &std::path::Path,
) -> Result<(), crate::error::Cause> {
    let mut text = Vec::new();
    let _ = render(summary, format, &mut text);
    std::fs::write(path, text)
        .map_err(|e| crate::error::Cause::io(format!("cannot write {}", path.display()), e))
}

/// "1 request", "2 requests": a count with its noun in the right number.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Milliseconds for a table cell: "12.34ms", "1.85s".
pub fn fmt_ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.2}s", v / 1000.0)
    } else if v >= 1.0 {
        format!("{v:.2}ms")
    } else {
        format!("{:.0}us", v * 1000.0)
    }
}

/// The first lines of the text and verbose reports: target, load and model, and whether the
/// run was stopped early.
pub(crate) fn write_header(s: &Summary, o: &mut dyn std::io::Write) -> std::io::Result<()> {
    let r = &s.run;
    let model = match r.target_rate {
        Some(rate) => format!("open model, target {rate} req/s"),
        None => "closed model".to_string(),
    };
    let processes = if r.processes > 1 {
        format!(" in {} processes", r.processes)
    } else {
        String::new()
    };
    let connections = if r.keepalive {
        "keep-alive"
    } else {
        "new connection per request"
    };
    // URL mode: the method sent (a body makes it POST), before the URL as in a request line.
    let method = r
        .method
        .as_ref()
        .map(|m| format!("{m} "))
        .unwrap_or_default();
    let protocol = if r.protocol == "HTTP/1.1" || r.protocol.is_empty() {
        String::new()
    } else {
        format!(", {}", r.protocol)
    };
    writeln!(
        o,
        "Target: {method}{}  ({} connections, {} threads{processes}, {connections}, {model}{protocol})",
        r.target, r.connections, r.threads
    )?;
    write_http2(&s.http2, o)?;
    if r.interrupted {
        writeln!(
            o,
            "Interrupted: the figures below cover the run up to the stop."
        )?;
    }
    if let Some(w) = &s.schedule_not_kept {
        writeln!(o, "WARNING: {w}.")?;
    }
    Ok(())
}

/// HTTP/2's line under the header: the streams asked for and allowed, and what the
/// server reset or sent away.
fn write_http2(
    h: &crate::stats::http2::H2Figures,
    o: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    if h.is_empty() {
        return Ok(());
    }
    let limit = match h.server_limit {
        0 => "the server set no limit".to_string(),
        n => format!("the server's SETTINGS_MAX_CONCURRENT_STREAMS {n}"),
    };
    write!(
        o,
        "HTTP/2: {} streams per connection asked, {} allowed ({limit})",
        h.streams_asked, h.streams_allowed
    )?;
    for (what, map) in [
        ("RST_STREAM", &h.resets),
        ("GOAWAY", &h.goaways),
        ("connection errors", &h.conn_errors),
    ] {
        if !map.is_empty() {
            let list: Vec<String> = map.iter().map(|(k, n)| format!("{k} {n}")).collect();
            write!(o, "; {what}: {}", list.join(", "))?;
        }
    }
    if h.resent > 0 {
        write!(o, "; {} requests re-sent on a new stream", h.resent)?;
    }
    writeln!(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_shown_with_their_controls_escaped() {
        assert_eq!(shown("kv-read"), "kv-read");
        assert!(matches!(shown("kv-read"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(shown("evil\u{202e}gnp.exe"), "evil\\u{202e}gnp.exe");
        assert_eq!(shown("a\u{2066}b\u{200f}c"), "a\\u{2066}b\\u{200f}c");
        assert_eq!(shown("line\nbreak\x1b[31m"), "line\\u{a}break\\u{1b}[31m");
        // Letters of any script stay as they are.
        assert_eq!(shown("lecture-été-読む"), "lecture-été-読む");
    }

    #[test]
    fn percentiles_in_ms() {
        let mut h = Hist::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p = Percentiles::of(&h);
        assert!((p.p50 - 500.0).abs() < 1.0, "{}", p.p50);
        assert!((p.p99 - 990.0).abs() < 1.0);
        assert!((p.max - 1000.0).abs() < 1.0);
        assert_eq!(p.count, 1000);
    }

    /// A run of `secs` seconds with one request completed in each second 0..=last.
    fn timed(secs: f64, last: u64) -> Summary {
        let mut stats = Stats::new(1);
        for sec in 0..=last {
            for _ in 0..100 {
                stats.timeline.record(sec, true, Some(1000));
                stats.ops[0].latency.record(1000);
                stats.ops[0].requests += 1;
                stats.ops[0].ok += 1;
            }
        }
        stats.elapsed_s = secs;
        let run = RunInfo {
            model: Model::Open,
            target_rate: Some(100.0),
            ..RunInfo::sample("http://127.0.0.1:8200/x", 1)
        };
        Summary::new(run, &stats, &["GET".to_string()])
    }

    #[test]
    fn a_partial_last_second_is_marked_and_drawn_scaled_or_left_out() {
        let page = |s: &Summary| {
            html::report(
                "t",
                &[html::HtmlRun {
                    name: "run".into(),
                    summary: s,
                    scenario: None,
                    started_at: None,
                }],
            )
        };
        // 5.004 s: the sixth second holds 4 ms of the run, left out of the charts.
        let short = timed(5.004, 5);
        assert_eq!(short.timeline[5].partial_s, Some(0.004));
        assert!(short.timeline[..5].iter().all(|r| r.partial_s.is_none()));
        let json = serde_json::to_value(&short.timeline).unwrap();
        assert_eq!(json[5]["partial_s"], 0.004);
        assert!(json[4].get("partial_s").is_none());
        let p = page(&short);
        assert!(
            p.contains("last 0.004 s left out (100 requests: no rate)"),
            "{p}"
        );
        // The rate chart: 5 points per series, the partial second left out.
        assert!(p.contains(r#"data-points="5" d="M"#), "{p}");
        // 5.5 s: the sixth second is half covered: drawn at 200/s, marked.
        let half = timed(5.5, 5);
        assert_eq!(half.timeline[5].partial_s, Some(0.5));
        let p = page(&half);
        assert!(
            p.contains("last second partial (0.50 s): scaled to a second"),
            "{p}"
        );
        assert!(p.contains(r#"data-points="6" d="M"#), "{p}");
        // A run that ends on a whole second has no partial row.
        assert!(timed(6.0, 5).timeline.iter().all(|r| r.partial_s.is_none()));
    }

    /// A run whose requests failed in every way, as the engine's `Counter` counts them (one
    /// message per failed request), beside connections that failed no request.
    fn failed_every_way() -> Summary {
        use crate::stats::{ErrorKind, THROTTLED_MESSAGE, status_message};
        let mut st = Stats::new(2);
        st.ops[0].requests = 12;
        st.ops[0].ok = 3;
        st.ops[1].requests = 2;
        st.ops[1].ok = 1;
        st.ops[0].latency.record(1000);
        st.status.insert(200, 4);
        for (op, code, n) in [
            (0, 200, 3),
            (1, 200, 1),
            (0, 503, 3),
            (0, 429, 1),
            (0, 0, 4),
        ] {
            st.ops[op].status.add(code, n);
        }
        st.ops[1].status.add(0, 1);
        for (op, kind, msg) in [
            (0, ErrorKind::Connect, "connect failed: Connection refused"),
            (0, ErrorKind::Connect, "connect failed: Connection refused"),
            (0, ErrorKind::Read, "read failed: Connection reset by peer"),
            (1, ErrorKind::Timeout, "no response within 2s"),
            (0, ErrorKind::Write, "write failed: Broken pipe"),
            (
                1,
                ErrorKind::Read,
                "response has no value at .auth.client_token",
            ),
        ] {
            st.count_error(kind);
            st.note_op(op, msg);
        }
        let mut buf = [0; 8];
        for _ in 0..3 {
            st.errors.status += 1;
            st.note_op(0, status_message(503, &mut buf));
        }
        st.status.insert(503, 3);
        st.note_failed_answer(503, b"{\"errors\":[\"sealed\"]}");
        st.throttled = 1;
        st.note_op(0, THROTTLED_MESSAGE);
        st.status.insert(429, 1);
        for _ in 0..36 {
            st.connection_failures.count(
                ErrorKind::Connect,
                "connect failed: Connection refused",
                1,
            );
        }
        st.connection_failures.count(
            ErrorKind::Read,
            "HTTP/2 connection error: PROTOCOL_ERROR",
            1,
        );
        st.elapsed_s = 2.0;
        let run = RunInfo {
            operation: "kv-read,kv-write".into(),
            ..RunInfo::sample("http://127.0.0.1:8200", 4)
        };
        Summary::new(run, &st, &["kv-read".into(), "kv-write".into()])
    }

    fn rendered(s: &Summary, f: Format) -> String {
        let mut out = Vec::new();
        render(s, f, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The counts of the `  N x message` lines after `first`, until a line of another shape.
    fn listed(text: &str, first: &str) -> u64 {
        text.lines()
            .skip_while(|l| !l.starts_with(first))
            .skip(1)
            .map_while(|l| {
                let (n, _) = l.trim_start().split_once(" x ")?;
                n.parse::<u64>().ok()
            })
            .sum()
    }

    #[test]
    fn every_format_lists_failures_that_sum_to_the_failed_requests() {
        let s = failed_every_way();
        assert_eq!(s.failed, 10);
        // JSON: the kinds with throttled, and the messages, each sum to failed; the
        // connections that failed no request apart.
        let j: serde_json::Value = serde_json::from_str(&rendered(&s, Format::Json)).unwrap();
        let e = &j["errors"];
        let kinds: u64 = ["connect", "read", "write", "timeout", "status"]
            .iter()
            .map(|k| e[*k].as_u64().unwrap())
            .sum();
        assert_eq!(kinds + j["throttled"].as_u64().unwrap(), 10, "{j:#}");
        let msgs = |m: &serde_json::Value| -> u64 {
            m.as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum()
        };
        assert_eq!(msgs(&j["error_messages"]), 10, "{j:#}");
        let per_op: u64 = j["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| msgs(&o["error_messages"]))
            .sum();
        assert_eq!(per_op, 10, "{j:#}");
        let c = &j["connection_failures"];
        assert_eq!(c["total"], 37, "{j:#}");
        assert_eq!(
            (c["connect"].as_u64(), c["read"].as_u64()),
            (Some(36), Some(1))
        );
        assert_eq!(msgs(&c["messages"]), 37, "{j:#}");
        // Text: the Errors line's kinds and the listed messages sum to failed; the
        // connections on their own line.
        let text = rendered(
            &s,
            Format::Text {
                latency: false,
                ci: false,
            },
        );
        let line = text.lines().find(|l| l.starts_with("Errors: ")).unwrap();
        let counted: u64 = line["Errors: ".len()..]
            .split(", ")
            .map(|kv| kv.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(counted, 10, "{text}");
        assert!(line.ends_with("non-2xx 3, throttled 1"), "{line}");
        assert_eq!(listed(&text, "Errors: "), 10, "{text}");
        assert!(
            text.contains("  3 x HTTP 503 Service Unavailable (sealed, standby or in maintenance); the server said: {\"errors\":[\"sealed\"]}"),
            "{text}"
        );
        assert!(
            text.contains("\nConnection failures (no request failed): 37 (connect 36, read 1)\n"),
            "{text}"
        );
        assert!(
            text.contains("\n  36 x connect failed: Connection refused\n"),
            "{text}"
        );
        assert_eq!(listed(&text, "Connection failures"), 37, "{text}");
    }

    #[test]
    fn the_other_layouts_list_the_same_failures() {
        let s = failed_every_way();
        // Verbose: its Error Set sums to failed; the connections after it.
        let verbose = rendered(&s, Format::Verbose { ci: false });
        assert_eq!(listed(&verbose, "  Error Set:"), 10, "{verbose}");
        assert_eq!(listed(&verbose, "  Connection failures"), 37, "{verbose}");
        // ab's layout: its own counts, and vblast's line for the connections.
        let ab = rendered(&s, Format::Ab { ci: false });
        assert!(
            ab.contains("Connection failures:    37 (connect 36, read 1)"),
            "{ab}"
        );
        // vault-benchmark's Error Set names each failure once, a status as vegeta does.
        let vb = rendered(&s, Format::VbVerbose { ci: false });
        assert!(vb.contains("\n503 Service Unavailable\n"), "{vb}");
        assert!(
            !vb.contains("HTTP 503") && !vb.contains("throttled by"),
            "{vb}"
        );
        // HTML: the same lines.
        let page = html::report(
            "run",
            &[html::HtmlRun {
                name: "run".into(),
                summary: &s,
                scenario: None,
                started_at: None,
            }],
        );
        assert!(page.contains("non-2xx 3, throttled 1"), "{page}");
        assert!(page.contains("connection failures (no request failed)"));
        assert!(page.contains("37 (connect 36, read 1)"));
    }

    #[test]
    fn model_serializes_as_before() {
        assert_eq!(serde_json::to_value(Model::Open).unwrap(), "open");
        assert_eq!(serde_json::to_value(Model::Closed).unwrap(), "closed");
        let m: Model = serde_json::from_str("\"closed\"").unwrap();
        assert_eq!(m, Model::Closed);
    }
}
