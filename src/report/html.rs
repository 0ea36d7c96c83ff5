//! The HTML report (`--html FILE`): one self-contained page per run, per `vblast report` or
//! per `vblast compare` ([`report`], over a list of [`HtmlRun`]s: one for a run, several
//! overlaid for a compare): the description, the latency spectrum, the per-second
//! timeline, the server's figures, the summary, the confidence intervals and the cluster's
//! nodes. The charts, tables and the page around them come from `report::page`.

use std::fmt::Write as _;

use serde_json::Value;

use super::page::{Chart, Scale, Series, escape, page, table};
use super::{PARTIAL_SECOND_DRAWN, Percentiles, SecondSummary, Summary, fmt_ms, ms, tails};
use crate::server_stats::ServerSummary;
use crate::server_stats::summary::ServerNodeSummary;
use crate::server_stats::timeline::Interval;
use crate::stats::Hist;

/// One run of a report page.
pub struct HtmlRun<'a> {
    /// Legend and heading text (a file name for saved runs).
    pub name: String,
    pub summary: &'a Summary,
    /// The run's scenario as saved in its results file (redacted again here).
    pub scenario: Option<&'a Value>,
    /// When the run began, RFC 3339.
    pub started_at: Option<&'a str>,
}

/// HdrHistogram's percentile spectrum of `h`: `(1/(1-p), value in ms)` at 5 ticks per
/// half distance, as `--hgrm` lists it (the 100% row, at infinity, left out).
pub fn spectrum_points(h: &Hist) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    h.0.iter_quantiles(5)
        .filter(|v| v.quantile_iterated_to() < 1.0)
        .map(|v| {
            (
                1.0 / (1.0 - v.quantile_iterated_to()),
                ms(v.value_iterated_to()),
            )
        })
        .collect()
}

/// Mean, p50, p90, p99, p99.9 and max; thin tails marked `*` and listed in `thin`.
fn percentile_cells(p: &Percentiles, what: &str, thin: &mut Vec<String>) -> Vec<String> {
    [
        (p.mean, "", ""),
        (p.p50, "p50", "p50"),
        (p.p90, "p90", "p90"),
        (p.p99, "p99", "p99"),
        (p.p999, "p999", "p99.9"),
        (p.max, "", ""),
    ]
    .into_iter()
    .map(|(v, key, label)| {
        let rests_on = p.thin(key);
        if let Some(n) = rests_on {
            thin.push(format!("{what} {label} rests on {n}"));
        }
        tails::mark(fmt_ms(v), rests_on)
    })
    .collect()
}

/// The per-operation and total rows of one run; thin tails are added to `thin`.
fn summary_rows(run: &str, s: &Summary, rows: &mut Vec<Vec<String>>, thin: &mut Vec<String>) {
    let open = s.is_open();
    let mut add = |op: &str,
                   requests: u64,
                   ok: u64,
                   rps: f64,
                   throughput: f64,
                   l: &Percentiles,
                   sv: &Percentiles,
                   ratio: f64| {
        let mut row = vec![
            run.to_string(),
            op.to_string(),
            requests.to_string(),
            (requests - ok.min(requests)).to_string(),
            format!("{rps:.2}"),
            format!("{throughput:.2}"),
        ];
        let what = if run.is_empty() {
            op.to_string()
        } else {
            format!("{run} {op}")
        };
        row.extend(percentile_cells(l, &what, thin));
        row.push(if open {
            // The same requests as the latency's p99: listed once.
            tails::mark(fmt_ms(sv.p99), sv.thin("p99"))
        } else {
            "-".into()
        });
        row.push(format!("{:.2}%", ratio * 100.0));
        rows.push(row);
    };
    for op in &s.ops {
        add(
            &op.name,
            op.requests,
            op.ok,
            op.rps,
            op.throughput,
            &op.latency_ms,
            &op.service_ms,
            op.success_ratio,
        );
    }
    add(
        "total",
        s.requests,
        s.ok,
        s.rps,
        s.throughput,
        &s.latency_ms,
        &s.service_ms,
        s.success_ratio,
    );
}

/// The run's notes, the warning of a schedule not kept, and the requests never sent with
/// their own latency figure beside every scheduled one's (the text report's lines).
fn notes_and_schedule(s: &Summary) -> Vec<(&'static str, String)> {
    let mut items: Vec<(&str, String)> = s.notes.iter().map(|n| ("note", n.clone())).collect();
    if let Some(w) = &s.schedule_not_kept {
        items.push(("WARNING", format!("{w}.")));
    }
    if let Some(c) = &s.clock {
        items.push(("clock", c.headline()));
        if !c.fell_back() {
            for (name, p) in c.rows() {
                let line = format!(
                    "p50 {}, p99 {}, p99.9 {}, max {} ({} responses)",
                    fmt_ms(p.p50),
                    fmt_ms(p.p99),
                    fmt_ms(p.p999),
                    fmt_ms(p.max),
                    p.count
                );
                items.push((name, line));
            }
            for op in &c.ops {
                let (l, v, d) = (&op.kernel_latency_ms, &op.kernel_service_ms, &op.delay_ms);
                let line = format!(
                    "{}: latency p50 {}, p99 {}; service p50 {}, p99 {}; client delay p50 {}, p99 {} ({} responses)",
                    op.name,
                    fmt_ms(l.p50),
                    fmt_ms(l.p99),
                    fmt_ms(v.p50),
                    fmt_ms(v.p99),
                    fmt_ms(d.p50),
                    fmt_ms(d.p99),
                    l.count
                );
                items.push(("kernel, per operation", line));
            }
        }
    }
    if !s.unsent_ms.is_empty() {
        let three = |p: &Percentiles| {
            format!(
                "p50 {}, p99 {}, max {}",
                fmt_ms(p.p50),
                fmt_ms(p.p99),
                fmt_ms(p.max)
            )
        };
        items.push((
            "not sent",
            format!(
                "{}, each as waiting until the run ended (at least): {}; every scheduled request, sent or not: {}",
                s.not_sent,
                three(&s.unsent_ms),
                three(&s.scheduled_ms)
            ),
        ));
    }
    items
}

/// The description of a run: what `RunInfo` says, and the redacted scenario.
fn description(run: &HtmlRun, o: &mut String) {
    let s = run.summary;
    let r = &s.run;
    let model = match r.target_rate {
        Some(rate) => format!("open, target {rate} req/s"),
        None => "closed".into(),
    };
    let mut items: Vec<(&str, String)> = vec![
        ("target", r.target.clone()),
        ("operation", super::shown(&r.operation).into_owned()),
        ("connections", r.connections.to_string()),
        (
            "threads, processes",
            format!("{}, {}", r.threads, r.processes),
        ),
        ("model", model),
        ("protocol", r.protocol.clone()),
        ("keep-alive", r.keepalive.to_string()),
        ("warm-up", format!("{}s", r.warmup_s)),
        ("duration", format!("{:.2}s", s.duration_s)),
        ("latency measured from", s.latency_measured_from.clone()),
        (
            "setup, cleanup",
            format!("{:.3}s, {:.3}s", r.setup_s, r.cleanup_s),
        ),
        ("vblast", s.vblast_version.clone()),
    ];
    if let Some(t) = run.started_at {
        items.insert(0, ("started", t.to_string()));
    }
    // HTTP/2's streams, resets and GOAWAYs: the text report's line under its header.
    let mut h2 = Vec::new();
    if super::write_http2(&s.http2, &mut h2).is_ok() && !h2.is_empty() {
        let line = String::from_utf8_lossy(&h2);
        let line = line.trim().trim_start_matches("HTTP/2: ");
        items.push(("HTTP/2", line.to_string()));
    }
    if r.interrupted {
        items.push((
            "interrupted",
            "yes: the figures cover the run up to the stop".into(),
        ));
    }
    items.extend(notes_and_schedule(s));
    let status: Vec<String> = s.status.iter().map(|(c, n)| format!("{c}: {n}")).collect();
    items.push(("status codes", status.join(", ")));
    items.push(("errors", super::text::errors_line(s)));
    let c = &s.connection_failures;
    if !c.is_empty() {
        items.push((
            "connection failures (no request failed)",
            format!("{} ({})", c.total, c.kinds()),
        ));
    }
    o.push_str("<dl>");
    for (k, v) in items {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(&v));
    }
    o.push_str("</dl>");
    if !s.error_messages.is_empty() {
        let rows: Vec<Vec<String>> = s
            .error_messages
            .iter()
            .map(|(m, n)| vec![n.to_string(), super::text::message_line(s, m)])
            .collect();
        o.push_str(&table(&["count", "error"], &rows, 99));
    }
    if !c.is_empty() {
        let rows: Vec<Vec<String>> = c
            .messages
            .iter()
            .map(|(m, n)| vec![n.to_string(), m.clone()])
            .collect();
        o.push_str(&table(&["count", "connection failure"], &rows, 99));
    }
    if let Some(scenario) = run.scenario {
        let mut redacted = scenario.clone();
        crate::redact::json(&mut redacted);
        let text = serde_json::to_string_pretty(&redacted).unwrap_or_default();
        let _ = write!(
            o,
            "<details><summary>Scenario (credentials removed)</summary><pre>{}</pre></details>",
            escape(&text)
        );
    }
}

/// The report page of one run (`--html` of a run or of `vblast report`) or of several
/// (`vblast compare --html`: spectra and timelines overlaid, one colour per run).
pub fn report(title: &str, runs: &[HtmlRun]) -> String {
    let mut body = String::new();
    thresholds_section(runs, &mut body);
    spectrum_section(runs, &mut body);
    timeline_section(runs, &mut body);
    server_section(runs, &mut body);
    summary_section(runs, &mut body);
    cluster_tables(runs, &mut body);
    for run in runs {
        let _ = write!(body, "<h2>Run: {}</h2>", escape(&run.name));
        description(run, &mut body);
    }
    page(title, &body)
}

/// Each run's thresholds and their verdicts (`--threshold`), first on the page; nothing
/// when no run had any.
fn thresholds_section(runs: &[HtmlRun], body: &mut String) {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .flat_map(|run| {
            run.summary.thresholds.iter().map(|r| {
                vec![
                    run.name.clone(),
                    r.threshold.clone(),
                    r.verdict.label().to_string(),
                    r.why.clone(),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    body.push_str("<h2>Thresholds</h2>");
    body.push_str(&table(&["run", "threshold", "verdict", "why"], &rows, 4));
}

/// The percentile spectrum of every run, marked where each run's tail turns thin.
fn spectrum_section(runs: &[HtmlRun], body: &mut String) {
    let several = runs.len() > 1;
    // The percentile spectrum: corrected (solid) and uncorrected (dashed) when they differ.
    let mut spectrum = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let s = run.summary;
        let prefix = if several {
            format!("{}: ", run.name)
        } else {
            String::new()
        };
        if s.is_open() {
            spectrum.push(Series {
                name: format!("{prefix}corrected (from intended start)"),
                points: spectrum_points(&s.latency_hist),
                dashed: false,
                color: i,
            });
            spectrum.push(Series {
                name: format!("{prefix}uncorrected (service time, from actual send)"),
                points: spectrum_points(&s.service_hist),
                dashed: true,
                color: i,
            });
        } else {
            spectrum.push(Series {
                name: format!("{prefix}latency (from actual send)"),
                points: spectrum_points(&s.latency_hist),
                dashed: false,
                color: i,
            });
        }
    }
    // Where each run's tail turns thin: beyond 1/(1-p) = n/10, fewer than 10 samples lie
    // above the percentile (`tails.rs`).
    let marks: Vec<(f64, String, usize)> = runs
        .iter()
        .enumerate()
        .filter(|(_, run)| !run.summary.latency_hist.is_empty())
        .map(|(i, run)| {
            let n = run.summary.latency_hist.0.len();
            let x = n as f64 / tails::MIN_SAMPLES_ABOVE as f64;
            let who = if several {
                format!("{}: ", run.name)
            } else {
                String::new()
            };
            (
                x.max(1.0),
                format!(
                    "{who}thin tail from here (fewer than {} of {n} samples above)",
                    tails::MIN_SAMPLES_ABOVE
                ),
                i,
            )
        })
        .collect();
    body.push_str("<h2>Latency by percentile</h2>");
    body.push_str(
        &Chart {
            id: "spectrum".into(),
            title: "Latency by percentile (HdrHistogram)".into(),
            x_label: "percentile".into(),
            y_label: "latency (ms)".into(),
            x_scale: Scale::Percentile,
            y_scale: Scale::Linear,
            series: spectrum,
        }
        .svg_marked(&marks),
    );
}

/// A partial last second as the charts show it: drawn scaled to a whole second when it
/// is long enough (`PARTIAL_SECOND_DRAWN`), left out otherwise; a mark says which.
fn partial_mark(row: &SecondSummary, prefix: &str) -> Option<String> {
    let len = row.partial_s?;
    Some(if len >= PARTIAL_SECOND_DRAWN {
        format!("{prefix}last second partial ({len:.2} s): scaled to a second")
    } else {
        format!(
            "{prefix}last {len:.3} s left out ({}: no rate)",
            super::plural(row.requests, "request", "requests")
        )
    })
}

/// The rows a chart draws, each with the factor that makes its counts a rate per second.
fn drawn(t: &[SecondSummary]) -> impl Iterator<Item = (&SecondSummary, f64)> {
    t.iter().filter_map(|r| match r.partial_s {
        None => Some((r, 1.0)),
        Some(len) if len >= PARTIAL_SECOND_DRAWN => Some((r, 1.0 / len)),
        Some(_) => None,
    })
}

/// Requests, errors and latency per second of every run.
fn timeline_section(runs: &[HtmlRun], body: &mut String) {
    let several = runs.len() > 1;
    // The timeline, one second per point.
    let mut rate = Vec::new();
    let mut latency = Vec::new();
    let mut marks = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let s = run.summary;
        let prefix = if several {
            format!("{}: ", run.name)
        } else {
            String::new()
        };
        let t = &s.timeline;
        if let Some(last) = t.last()
            && let Some(label) = partial_mark(last, &prefix)
        {
            // A second left out is marked at the end of what is drawn.
            let drawn_to = drawn(t).last().map_or(0, |(r, _)| r.second);
            marks.push((drawn_to as f64, label, i));
        }
        rate.push(Series {
            name: format!("{prefix}requests/s"),
            points: drawn(t)
                .map(|(r, k)| (r.second as f64, r.requests as f64 * k))
                .collect(),
            dashed: false,
            color: i,
        });
        rate.push(Series {
            name: format!("{prefix}errors/s"),
            points: drawn(t)
                .map(|(r, k)| (r.second as f64, r.errors as f64 * k))
                .collect(),
            dashed: true,
            color: if several { i } else { 1 },
        });
        // Seconds in which nothing completed have no latency to show.
        let busy = || drawn(t).map(|(r, _)| r).filter(|r| r.requests > 0);
        latency.push(Series {
            name: format!("{prefix}p99"),
            points: busy().map(|r| (r.second as f64, r.p99_ms)).collect(),
            dashed: false,
            color: i,
        });
        if !several {
            latency.push(Series {
                name: "p50".into(),
                points: busy().map(|r| (r.second as f64, r.p50_ms)).collect(),
                dashed: true,
                color: 2,
            });
        }
    }
    body.push_str("<h2>Timeline</h2>");
    body.push_str("<p class=\"note\">Per second of the measured run, by completion time. A last second the run covered only in part is scaled to a whole second when it lasted half a second or more, and left out when shorter (its few samples are no rate); a mark says which.</p>");
    for chart in [
        Chart {
            id: "timeline-rate".into(),
            title: "Requests and errors per second".into(),
            x_label: "second".into(),
            y_label: "per second".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: rate,
        },
        Chart {
            id: "timeline-latency".into(),
            title: "Latency per second".into(),
            x_label: "second".into(),
            y_label: "latency (ms)".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: latency,
        },
    ] {
        body.push_str(&chart.svg_marked(&marks));
    }
}

/// The server's figures of every run (src/server_stats/), per node, on the run's timeline:
/// the node's CPU, the requests in flight and its mean `handle_request` time per sampling
/// interval, beside the client's latency per second; a table of each node's figures over
/// the window. Nothing without samples (URL mode, `--no-server-stats`).
fn server_section(runs: &[HtmlRun], body: &mut String) {
    let sampled: Vec<(usize, &HtmlRun, &ServerSummary)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, r, r.summary.server.as_ref()?)))
        .filter(|(_, _, s)| !s.nodes.is_empty())
        .collect();
    if sampled.is_empty() {
        return;
    }
    body.push_str("<h2 id=\"server\">Server</h2>");
    body.push_str("<p class=\"note\">Sampled on each node while the load ran (every sampling interval; see docs/server-stats.md). Each point sits at the middle of the span it covers: a sampling interval for the server's figures, a second for the client's. Time is seconds of the measured run.</p>");
    let several = runs.len() > 1;
    for (r, run, server) in sampled {
        let prefix = if several {
            format!("{}: ", run.name)
        } else {
            String::new()
        };
        for (n, node) in server.nodes.iter().enumerate() {
            let _ = write!(
                body,
                "<h3 class=\"server-node\">{}{}</h3>",
                escape(&prefix),
                escape(&node.node)
            );
            server_node_charts(run.summary, node, &format!("{r}-{n}"), body);
            if !node.missing.is_empty() {
                let _ = write!(
                    body,
                    "<p class=\"note missing\">Not sampled: {}</p>",
                    escape(&node.missing.join("; "))
                );
            }
        }
        server_table(server, body);
    }
}

/// A series of `(x, y)` from a node's intervals, at each interval's middle on the measured
/// run's clock (`warmup_s` earlier than the sampler's).
/// On the leader, a dotted line per follower it names: that follower's lag behind it at
/// each interval's end, by its raft peer id.
fn follower_lines(it: &[Interval], w: f64) -> Vec<Series> {
    let mut peers: Vec<&str> = it
        .iter()
        .flat_map(|i| i.raft_followers.iter().map(|f| f.peer_id.as_str()))
        .collect();
    peers.sort_unstable();
    peers.dedup();
    peers
        .into_iter()
        .enumerate()
        .map(|(k, peer)| Series {
            name: format!("lag of {peer}"),
            points: it
                .iter()
                .filter_map(|i| {
                    let f = i.raft_followers.iter().find(|f| f.peer_id == peer)?;
                    Some((i.at_s - w - i.duration_s / 2.0, f.lag))
                })
                .collect(),
            dashed: true,
            color: 7 + k,
        })
        .collect()
}

fn interval_points(
    intervals: &[Interval],
    warmup_s: f64,
    value: fn(&Interval) -> Option<f64>,
) -> Vec<(f64, f64)> {
    intervals
        .iter()
        .filter_map(|i| Some((i.at_s - warmup_s - i.duration_s / 2.0, value(i)?)))
        .collect()
}

/// The charts of one node (`key` makes their ids unique): CPU, requests in flight,
/// time per request beside the client's latency, on one time axis. A series with fewer
/// than two points is left out (a figure the node does not give); a chart left without
/// series is not drawn.
fn server_node_charts(s: &Summary, node: &ServerNodeSummary, key: &str, body: &mut String) {
    let kept: Vec<Chart> = server_node_series(s, node, key)
        .into_iter()
        .map(|(id, title, y_label, series)| Chart {
            id,
            title: title.into(),
            x_label: "second".into(),
            y_label: y_label.into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: series.into_iter().filter(|s| s.points.len() >= 2).collect(),
        })
        .filter(|c| !c.series.is_empty())
        .collect();
    if kept.is_empty() {
        body.push_str("<p class=\"note\">Too few samples for a timeline (fewer than three).</p>");
        return;
    }
    // One time axis for the node's charts.
    let span: Vec<f64> = kept
        .iter()
        .flat_map(|c| c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)))
        .collect();
    for c in &kept {
        body.push_str(&c.svg_spanning(&[], &span));
    }
}

/// One node's charts before the series too short to draw are left out: id, title, y
/// axis, series.
fn server_node_series(
    s: &Summary,
    node: &ServerNodeSummary,
    key: &str,
) -> Vec<(String, &'static str, &'static str, Vec<Series>)> {
    let w = s.run.warmup_s;
    let it = &node.intervals;
    let line = |name: &str, points: Vec<(f64, f64)>, dashed: bool, color: usize| Series {
        name: name.into(),
        points,
        dashed,
        color,
    };
    let busy = || drawn(&s.timeline).filter(|(r, _)| r.requests > 0);
    let mid = |r: &SecondSummary| r.second as f64 + r.partial_s.unwrap_or(1.0) / 2.0;
    [
        (
            format!("server-cpu-{key}"),
            "CPU (cores: 1 = one core busy)",
            "cores",
            vec![
                line(
                    "server CPU",
                    interval_points(it, w, |i| i.cpu_cores),
                    false,
                    0,
                ),
                line(
                    "server CPU waited for (runnable, no core)",
                    interval_points(it, w, |i| i.cpu_wait_cores),
                    true,
                    0,
                ),
                line(
                    "vblast CPU",
                    interval_points(it, w, |i| i.client_cpu_cores),
                    false,
                    3,
                ),
            ],
        ),
        (
            format!("server-inflight-{key}"),
            "Requests in flight on the server (its gauge)",
            "requests",
            vec![line(
                "in flight",
                interval_points(it, w, |i| i.in_flight),
                false,
                4,
            )],
        ),
        (
            format!("server-time-{key}"),
            "Time per request: the server's handler beside the client's latency",
            "ms",
            vec![
                line(
                    "server handle_request mean",
                    interval_points(it, w, |i| i.handle_ms),
                    false,
                    1,
                ),
                line(
                    "server storage time per request",
                    interval_points(it, w, |i| i.storage_ms_per_request),
                    true,
                    6,
                ),
                line(
                    "client p50",
                    busy().map(|(r, _)| (mid(r), r.p50_ms)).collect(),
                    false,
                    2,
                ),
                line(
                    "client p99",
                    busy().map(|(r, _)| (mid(r), r.p99_ms)).collect(),
                    true,
                    2,
                ),
            ],
        ),
    ]
    .into_iter()
    .chain(raft_node_series(it, w, key))
    .collect()
}

/// A raft node's charts (none drawn for a node without raft figures): commit and apply
/// times; what waits (fsm_pending, followers' lag, threads waiting for the disk); its
/// BoltDB files and the writes per second.
fn raft_node_series(
    it: &[Interval],
    w: f64,
    key: &str,
) -> [(String, &'static str, &'static str, Vec<Series>); 3] {
    let line = |name: &str, points: Vec<(f64, f64)>, dashed: bool, color: usize| Series {
        name: name.into(),
        points,
        dashed,
        color,
    };
    [
        (
            format!("server-raft-time-{key}"),
            "Raft: mean commit and FSM apply times",
            "ms",
            vec![
                line(
                    "commit",
                    interval_points(it, w, |i| i.raft?.commit_ms),
                    false,
                    0,
                ),
                line(
                    "FSM apply",
                    interval_points(it, w, |i| i.raft?.apply_ms),
                    true,
                    1,
                ),
            ],
        ),
        (
            format!("server-raft-queue-{key}"),
            "Raft and disk: entries not yet applied, followers' lag, threads waiting for the disk",
            "entries / threads",
            vec![
                line(
                    "fsm_pending",
                    interval_points(it, w, |i| i.raft?.fsm_pending),
                    false,
                    4,
                ),
                line(
                    "followers' lag (leader)",
                    interval_points(it, w, |i| i.raft?.followers_lag),
                    true,
                    5,
                ),
                line(
                    "threads waiting for the disk",
                    interval_points(it, w, |i| i.io_blocked_threads.map(f64::from)),
                    false,
                    6,
                ),
            ]
            .into_iter()
            .chain(follower_lines(it, w))
            .collect(),
        ),
        (
            format!("server-bolt-{key}"),
            "BoltDB files (MiB) and the data directory's writes (MiB/s)",
            "MiB, MiB/s",
            vec![
                line(
                    "vault.db",
                    interval_points(it, w, |i| i.raft?.bolt_fsm_bytes.map(mib)),
                    false,
                    0,
                ),
                line(
                    "raft/raft.db",
                    interval_points(it, w, |i| i.raft?.bolt_log_bytes.map(mib)),
                    true,
                    1,
                ),
                line(
                    "writes per second",
                    interval_points(it, w, |i| i.write_bytes_per_s.map(|b| b / 1048576.0)),
                    false,
                    3,
                ),
            ],
        ),
    ]
}

/// Bytes in MiB.
fn mib(b: u64) -> f64 {
    b as f64 / 1048576.0
}

/// Each node's figures over the window, and the accounting cross-check.
fn server_table(server: &ServerSummary, body: &mut String) {
    let f = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    let rows: Vec<Vec<String>> = server
        .nodes
        .iter()
        .map(|n| {
            vec![
                n.node.clone(),
                n.samples.to_string(),
                f(n.cpu_cores_peak, 2),
                f(n.cpu_cores_mean, 2),
                f(n.in_flight_peak, 0),
                n.handled.map_or("-".into(), |h| h.to_string()),
                f(n.handle_ms, 3),
                f(n.token_ms_per_request, 3),
                f(n.barrier_ms_per_request, 3),
                f(n.storage_ms_per_request, 3),
            ]
        })
        .collect();
    body.push_str(&table(
        &[
            "node",
            "samples",
            "CPU peak (cores)",
            "CPU mean (cores)",
            "in flight peak",
            "handled",
            "handle mean (ms)",
            "token check (ms/req)",
            "barrier (ms/req)",
            "storage (ms/req)",
        ],
        &rows,
        1,
    ));
    let mut lines = Vec::new();
    if let (Some(server_ms), Some(outside)) = (server.server_ms, server.outside_ms) {
        lines.push(format!(
            "mean time per request: server {server_ms:.3} ms, client {:.3} ms, outside Vault {outside:.3} ms",
            server.client_ms
        ));
    }
    for n in &server.nodes {
        if let Some(limit) = crate::server_stats::summary::limit_line(n) {
            lines.push(format!("{}: CPU limit: {limit}", n.node));
        }
    }
    if let Some(line) = crate::server_stats::summary::accounting_line(server) {
        lines.push(format!("accounting: {line}"));
    }
    for l in lines {
        let _ = write!(body, "<p class=\"note server-line\">{}</p>", escape(&l));
    }
}

/// The summary table of every run's operations, and the note on its thin tails.
fn summary_section(runs: &[HtmlRun], body: &mut String) {
    // The summary table.
    let mut rows = Vec::new();
    let mut thin = Vec::new();
    for run in runs {
        summary_rows(&run.name, run.summary, &mut rows, &mut thin);
    }
    body.push_str("<h2>Summary</h2>");
    body.push_str(&table(
        &[
            "run",
            "op",
            "requests",
            "failed",
            "rate",
            "throughput",
            "mean",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "svc p99",
            "success",
        ],
        &rows,
        2,
    ));
    if let Some(note) = tails::note(&thin) {
        let _ = write!(body, "<p class=\"note thin\">{}</p>", escape(&note));
    }
    ci_section(runs, body);
}

/// The confidence intervals of every run's percentiles (`report::ci`), a row per operation
/// and total.
fn ci_section(runs: &[HtmlRun], body: &mut String) {
    let keys = ["p50", "p90", "p99", "p999"];
    let mut rows = Vec::new();
    let mut level = None;
    for run in runs {
        let s = run.summary;
        let parts = s.ops.iter().map(|op| (op.name.as_str(), &op.latency_ms));
        for (op, p) in parts.chain([("total", &s.latency_ms)]) {
            level = level.or(crate::stats::interval::Confidence::new(p.confidence));
            let mut row = vec![run.name.clone(), op.to_string()];
            row.extend(keys.iter().map(|k| super::ci::cell(p.interval(k))));
            rows.push(row);
        }
    }
    body.push_str("<h2>Confidence intervals</h2>");
    body.push_str(&table(
        &["run", "op", "p50 CI", "p90 CI", "p99 CI", "p99.9 CI"],
        &rows,
        2,
    ));
    let note = super::ci::note(level.unwrap_or_default());
    let _ = write!(body, "<p class=\"note\">{}</p>", escape(&note));
}

/// Several nodes as one target: a row per node and the windows of unavailability, as in the
/// text report (`nodes.rs`).
fn cluster_tables(runs: &[HtmlRun], body: &mut String) {
    let mut nodes = Vec::new();
    let mut windows = Vec::new();
    for run in runs {
        for n in &run.summary.nodes {
            nodes.push(vec![
                run.name.clone(),
                n.node.to_string(),
                n.addr.clone(),
                n.role.clone(),
                n.requests.to_string(),
                n.ok.to_string(),
                format!("{:.2}/s", n.rps),
                fmt_ms(n.p50_ms),
                fmt_ms(n.p99_ms),
                n.throttled.to_string(),
                n.redirects.to_string(),
                n.followed.to_string(),
                n.hops.to_string(),
            ]);
        }
        for w in &run.summary.windows {
            windows.push(vec![
                run.name.clone(),
                format!("{:.3}s", w.start_s),
                w.end_s.map_or("end of run".into(), |e| format!("{e:.3}s")),
                w.length_s.map_or("-".into(), |l| format!("{l:.3}s")),
                w.failed.to_string(),
                w.recovered_on.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
    }
    if !nodes.is_empty() {
        body.push_str("<h2>Nodes</h2>");
        body.push_str(&table(
            &[
                "run",
                "node",
                "address",
                "role",
                "requests",
                "ok",
                "rate",
                "p50",
                "p99",
                "throttled",
                "307",
                "followed",
                "hops",
            ],
            &nodes,
            4,
        ));
    }
    if !windows.is_empty() {
        body.push_str("<h2>Unavailability</h2>");
        body.push_str(
            "<p class=\"note\">From the first failed request to the first success of a request sent after it, in seconds of the measured run.</p>",
        );
        body.push_str(&table(
            &["run", "from", "to", "length", "failed", "answered by"],
            &windows,
            1,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server_stats::summary::LimitSeen;

    /// The page's Server lines are the text report's: the node's CPU limit (issue 36 item
    /// 16) and the accounting in the same words, what the run explains included.
    #[test]
    fn the_server_lines_are_the_text_reports() {
        let server = ServerSummary {
            nodes: vec![ServerNodeSummary {
                node: "http://127.0.0.1:8200".into(),
                samples: 3,
                cpu_limit_seen: Some(LimitSeen::Read),
                quota_cores: Some(0.5),
                cpu_limit_pct_peak: Some(96.0),
                cpu_limit_pct_mean: Some(80.0),
                throttled_s: Some(1.25),
                ..ServerNodeSummary::default()
            }],
            handled: Some(104),
            difference: Some(4),
            client_answered: 100,
            explained_by: vec!["in flight at the stop 4".into()],
            ..ServerSummary::default()
        };
        let mut body = String::new();
        server_table(&server, &mut body);
        assert!(
            body.contains("CPU limit: quota 0.50 cores (cgroup): used peak 96%  mean 80% of it"),
            "{body}"
        );
        assert!(
            body.contains("difference +4 (within what the run explains: in flight at the stop 4)"),
            "{body}"
        );
        assert!(!body.contains("sampling windows"), "{body}");
    }
}
