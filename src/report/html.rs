//! The HTML report (`--html FILE`): one self-contained page per run, per `vblast report` or
//! per `vblast compare`, with its charts drawn as inline SVG generated here.
//!
//! Why hand-written SVG: the page must open without a network, so any charting library
//! would have to be embedded whole (hundreds of KiB of JavaScript to review and keep up to
//! date) for a few line charts; SVG written in Rust is static, deterministic, testable, and
//! draws in any browser with scripting off. The one script on the page is a self-check of
//! a few lines: it measures each chart's drawn lines in the browser, writes the length into
//! the chart's `data-drawn` attribute, and logs a console error for a chart that drew
//! nothing (what the browser test looks for).
//!
//! The API, for any page that wants charts (the sweep report uses it):
//! - [`Chart`] with [`Series`] of `(x, y)` points, [`Scale`]s for its axes, rendered by
//!   [`Chart::svg`] into an `<svg class="chart">` element;
//! - [`table`] for an HTML table, [`escape`] for any text from input;
//! - [`page`] wraps a body into the whole document (style and self-check included);
//! - [`report`] is the run/report/compare page: a list of [`HtmlRun`]s (one for a run,
//!   several overlaid for a compare).

use std::fmt::Write as _;

use serde_json::Value;

use super::{PARTIAL_SECOND_DRAWN, Percentiles, SecondSummary, Summary, fmt_ms, ms, tails};
use crate::server_stats::ServerSummary;
use crate::server_stats::summary::ServerNodeSummary;
use crate::server_stats::timeline::Interval;
use crate::stats::Hist;

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// From zero (or the lowest value when negative) to a rounded maximum.
    Linear,
    /// Base-10 logarithmic, over the positive values.
    Log,
    /// HdrHistogram's percentile axis: values are `1/(1-p)` on a log scale, labelled as
    /// percentiles (0%, 90%, 99%, 99.9%, ...).
    Percentile,
}

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text (escaped when drawn).
    pub name: String,
    /// Points in drawing order; non-finite ones are left out.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (the uncorrected view beside a corrected one).
    pub dashed: bool,
    /// Index into the palette; series of one run share a colour.
    pub color: usize,
}

/// A line chart.
#[derive(Clone, Debug)]
pub struct Chart {
    /// An identifier, unique in the page (`id` of the `<svg>`; escaped).
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    pub series: Vec<Series>,
}

const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

const WIDTH: f64 = 900.0;
const PLOT_HEIGHT: f64 = 300.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 36.0;
const LEGEND_LINE: f64 = 18.0;

/// One axis: its range in scale units and where its ticks go.
struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

/// A number for a tick label: no trailing zeros.
fn tick_label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let text = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// The percentile `1 - 1/x` as a label: 1 -> "0%", 10 -> "90%", 1000 -> "99.9%".
fn percentile_label(x: f64) -> String {
    let p = (1.0 - 1.0 / x) * 100.0;
    let digits = (x.log10().round() as i32 - 2).max(0) as usize;
    format!("{p:.digits$}%")
}

/// A rounded step of 1, 2 or 5 times a power of ten, near `raw`.
fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let n = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * mag
}

impl Axis {
    fn new(scale: Scale, values: &[f64]) -> Axis {
        match scale {
            Scale::Linear => {
                let max = values.iter().copied().fold(0.0, f64::max);
                let min = values.iter().copied().fold(0.0, f64::min);
                let span = if max - min > 0.0 { max - min } else { 1.0 };
                let mut step = nice_step(span / 5.0);
                // Counts and seconds: no ticks between whole numbers.
                if values.iter().all(|v| v.fract() == 0.0) {
                    step = step.max(1.0);
                }
                let lo = (min / step).floor() * step;
                let hi = ((max / step).ceil() * step).max(lo + step);
                let mut ticks = Vec::new();
                let mut i = 0;
                while lo + step * i as f64 <= hi + step * 1e-9 && i < 50 {
                    let v = lo + step * i as f64;
                    ticks.push((v, tick_label(v)));
                    i += 1;
                }
                Axis {
                    scale,
                    lo,
                    hi,
                    ticks,
                }
            }
            Scale::Log | Scale::Percentile => {
                let positive: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0).collect();
                let (mut lo, mut hi) = if scale == Scale::Percentile {
                    // From 0% to at least 99%.
                    (0.0, 2.0f64)
                } else {
                    (f64::INFINITY, f64::NEG_INFINITY)
                };
                for v in &positive {
                    lo = lo.min(v.log10().floor());
                    hi = hi.max(v.log10().ceil());
                }
                if !lo.is_finite() {
                    (lo, hi) = (0.0, 1.0);
                }
                if hi <= lo {
                    hi = lo + 1.0;
                }
                let ticks = (lo as i32..=hi as i32)
                    .map(|e| {
                        let v = 10f64.powi(e);
                        let label = if scale == Scale::Percentile {
                            percentile_label(v)
                        } else {
                            tick_label(v)
                        };
                        (e as f64, label)
                    })
                    .collect();
                Axis {
                    scale,
                    lo,
                    hi,
                    ticks,
                }
            }
        }
    }

    /// The value in scale units (log10 for logarithmic axes); `None` when it has no place.
    fn unit(&self, v: f64) -> Option<f64> {
        match self.scale {
            Scale::Linear => v.is_finite().then_some(v),
            Scale::Log | Scale::Percentile => (v > 0.0 && v.is_finite()).then(|| v.log10()),
        }
    }

    /// Where scale unit `u` falls between `from` (lo) and `to` (hi), in pixels.
    fn place(&self, u: f64, from: f64, to: f64) -> f64 {
        from + (u - self.lo) / (self.hi - self.lo) * (to - from)
    }
}

impl Chart {
    /// Points over all series.
    fn points(&self) -> usize {
        self.series.iter().map(|s| s.points.len()).sum()
    }

    /// The chart as an `<svg class="chart">` element (legend under the plot). A chart
    /// without a single point says so in place of its lines.
    pub fn svg(&self) -> String {
        self.svg_marked(&[])
    }

    /// `svg`, with vertical marks: at each `(x, label, color)` a dashed line across the plot
    /// and its label (the spectrum's start of a thin tail, the timeline's partial second).
    fn svg_marked(&self, marks: &[(f64, String, usize)]) -> String {
        self.svg_spanning(marks, &[])
    }

    /// `svg_marked`, with the x axis covering `span` as well as the points (charts that
    /// share one time axis give it the same span).
    fn svg_spanning(&self, marks: &[(f64, String, usize)], span: &[f64]) -> String {
        let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
        let mut xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter(finite).map(|p| p.0))
            .collect();
        xs.extend(span.iter().copied().filter(|x| x.is_finite()));
        let ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().filter(finite).map(|p| p.1))
            .collect();
        let plot = Plot {
            x: Axis::new(self.x_scale, &xs),
            y: Axis::new(self.y_scale, &ys),
            x0: LEFT,
            x1: WIDTH - RIGHT,
            y0: TOP + PLOT_HEIGHT,
            y1: TOP,
        };
        let height = TOP + PLOT_HEIGHT + 56.0 + LEGEND_LINE * self.series.len() as f64;
        let mut o = String::new();
        let _ = write!(
            o,
            r#"<svg class="chart" id="{}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" data-points="{}">"#,
            escape(&self.id),
            self.points()
        );
        let _ = write!(
            o,
            r#"<text class="title" x="{LEFT}" y="20">{}</text>"#,
            escape(&self.title)
        );
        plot.frame(&self.x_label, &self.y_label, &mut o);
        plot.marks(marks, &mut o);
        if self.points() == 0 {
            let _ = write!(
                o,
                r#"<text class="nodata" x="{:.1}" y="{:.1}" text-anchor="middle">no data</text>"#,
                (plot.x0 + plot.x1) / 2.0,
                (plot.y0 + plot.y1) / 2.0
            );
        }
        for s in &self.series {
            plot.line(s, &mut o);
        }
        for (i, s) in self.series.iter().enumerate() {
            plot.legend(i, s, &mut o);
        }
        o.push_str("</svg>");
        o
    }
}

/// A chart's plot area: its axes and where they are drawn (pixels; `y0` the bottom).
struct Plot {
    x: Axis,
    y: Axis,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

/// A series' dash pattern, when dashed.
fn dash(s: &Series) -> &'static str {
    if s.dashed {
        r#" stroke-dasharray="6 4""#
    } else {
        ""
    }
}

impl Plot {
    /// Grid, tick labels, the frame and the axes' labels.
    fn frame(&self, x_label: &str, y_label: &str, o: &mut String) {
        let (x0, x1, y0, y1) = (self.x0, self.x1, self.y0, self.y1);
        for (u, label) in &self.x.ticks {
            let px = self.x.place(*u, x0, x1);
            let _ = write!(
                o,
                r#"<line class="grid" x1="{px:.1}" y1="{y1}" x2="{px:.1}" y2="{y0}"/><text class="tick" x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                y0 + 16.0,
                escape(label)
            );
        }
        for (u, label) in &self.y.ticks {
            let py = self.y.place(*u, y0, y1);
            let _ = write!(
                o,
                r#"<line class="grid" x1="{x0}" y1="{py:.1}" x2="{x1}" y2="{py:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                x0 - 6.0,
                py + 4.0,
                escape(label)
            );
        }
        let _ = write!(
            o,
            r#"<rect class="frame" x="{x0}" y="{y1}" width="{:.1}" height="{PLOT_HEIGHT}"/>"#,
            x1 - x0
        );
        let _ = write!(
            o,
            r#"<text class="axis" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            (x0 + x1) / 2.0,
            y0 + 36.0,
            escape(x_label)
        );
        let _ = write!(
            o,
            r#"<text class="axis" transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            (y0 + y1) / 2.0,
            escape(y_label)
        );
    }

    /// The vertical marks, each a dashed line and its label.
    fn marks(&self, marks: &[(f64, String, usize)], o: &mut String) {
        let (x0, x1, y0, y1) = (self.x0, self.x1, self.y0, self.y1);
        for (i, (mx, label, color)) in marks.iter().enumerate() {
            let Some(u) = self
                .x
                .unit(*mx)
                .filter(|u| *u >= self.x.lo && *u <= self.x.hi)
            else {
                continue;
            };
            let px = self.x.place(u, x0, x1);
            let color = PALETTE[color % PALETTE.len()];
            // Labels right of the line, or left of it past the middle.
            let (tx, anchor) = if px > (x0 + x1) / 2.0 {
                (px - 4.0, "end")
            } else {
                (px + 4.0, "start")
            };
            let _ = write!(
                o,
                r#"<g class="mark"><line x1="{px:.1}" y1="{y1}" x2="{px:.1}" y2="{y0}" stroke="{color}" stroke-opacity="0.6" stroke-dasharray="2 3"/><text x="{tx:.1}" y="{:.1}" fill="{color}" text-anchor="{anchor}">{}</text></g>"#,
                y1 + 14.0 + 14.0 * i as f64,
                escape(label)
            );
        }
    }

    /// One series' line, with markers where its points are few enough to be told apart.
    fn line(&self, s: &Series, o: &mut String) {
        let color = PALETTE[s.color % PALETTE.len()];
        let placed: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter_map(|&(px, py)| {
                let (ux, uy) = (self.x.unit(px)?, self.y.unit(py)?);
                Some((
                    self.x.place(ux, self.x0, self.x1),
                    self.y.place(uy, self.y0, self.y1),
                ))
            })
            .collect();
        let mut d = String::new();
        for (i, (px, py)) in placed.iter().enumerate() {
            let _ = write!(d, "{}{px:.1} {py:.1}", if i == 0 { "M" } else { " L" });
        }
        let _ = write!(
            o,
            r#"<g class="series-group"><title>{}</title><path class="series" data-points="{}" d="{d}" fill="none" stroke="{color}" stroke-width="2"{}/>"#,
            escape(&s.name),
            placed.len(),
            dash(s)
        );
        if placed.len() <= 60 {
            for (px, py) in &placed {
                let _ = write!(
                    o,
                    r#"<circle cx="{px:.1}" cy="{py:.1}" r="2.5" fill="{color}"/>"#
                );
            }
        }
        o.push_str("</g>");
    }

    /// Legend line `i`, for series `s`.
    fn legend(&self, i: usize, s: &Series, o: &mut String) {
        let color = PALETTE[s.color % PALETTE.len()];
        let ly = self.y0 + 56.0 + LEGEND_LINE * i as f64;
        let _ = write!(
            o,
            r#"<g class="legend"><line x1="{}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2"{}/><text x="{:.1}" y="{ly:.1}">{}</text></g>"#,
            self.x0,
            ly - 4.0,
            self.x0 + 28.0,
            ly - 4.0,
            dash(s),
            self.x0 + 36.0,
            escape(&s.name)
        );
    }
}

/// An HTML table; every cell is escaped. `numeric` columns are right-aligned.
pub fn table(header: &[&str], rows: &[Vec<String>], numeric_from: usize) -> String {
    let mut o = String::from("<table><thead><tr>");
    let class = |i: usize| {
        if i >= numeric_from {
            " class=\"num\""
        } else {
            ""
        }
    };
    for (i, h) in header.iter().enumerate() {
        let _ = write!(o, "<th{}>{}</th>", class(i), escape(h));
    }
    o.push_str("</tr></thead><tbody>");
    for row in rows {
        o.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let _ = write!(o, "<td{}>{}</td>", class(i), escape(cell));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>");
    o
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:960px}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}\
table{border-collapse:collapse;margin:8px 0;font-size:0.9em}\
th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left}\
.num{text-align:right;font-variant-numeric:tabular-nums}\
svg.chart{display:block;margin:12px 0;font-size:12px}\
svg .title{font-weight:bold;font-size:14px}svg .grid{stroke:#e4e4e4}\
svg .frame{fill:none;stroke:#999}svg .tick{fill:#555}svg .nodata{fill:#b00;font-size:16px}\
pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:0.85em}\
dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px}dt{color:#555}dd{margin:0}\
.note{color:#555;font-size:0.9em}";

/// The self-check: measures each chart's lines as the browser drew them.
const CHECK: &str = "for(const c of document.querySelectorAll('svg.chart')){\
let len=0;for(const p of c.querySelectorAll('path.series')){len+=p.getTotalLength();}\
c.setAttribute('data-drawn',len.toFixed(1));\
if(!(len>0)){console.error('vblast: chart '+c.id+' drew nothing');}}";

/// The page's Content-Security-Policy: nothing is fetched from anywhere, and the only
/// script that may run is the self-check (by its hash), so a string from input that
/// escaped escaping still could not run or load anything (the browser logs the refusal).
fn content_security_policy() -> String {
    use base64::Engine as _;
    let hash = ring::digest::digest(&ring::digest::SHA256, CHECK.as_bytes());
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(hash.as_ref())
    )
}

/// The whole document: `body` (HTML, already escaped where needed) under a `<h1>` of
/// `title`, with the page's style, its Content-Security-Policy and the self-check script.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\"><title>{t}</title><style>{STYLE}</style></head>\n<body><h1>{t}</h1>\n{body}\n<script>{CHECK}</script></body></html>\n",
        csp = content_security_policy(),
        t = escape(title)
    )
}

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
    let e = &s.errors;
    items.push((
        "errors",
        format!(
            "connect {}, read {}, write {}, timeout {}, non-2xx {}",
            e.connect, e.read, e.write, e.timeout, e.status
        ),
    ));
    o.push_str("<dl>");
    for (k, v) in items {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(&v));
    }
    o.push_str("</dl>");
    if !s.error_messages.is_empty() {
        let rows: Vec<Vec<String>> = s
            .error_messages
            .iter()
            .map(|(m, n)| vec![n.to_string(), m.clone()])
            .collect();
        o.push_str(&table(&["count", "error"], &rows, 99));
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

/// The three charts of one node (`key` makes their ids unique): CPU, requests in flight,
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
) -> [(String, &'static str, &'static str, Vec<Series>); 3] {
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
    if let (Some(h), Some(d)) = (server.handled, server.difference) {
        lines.push(format!(
            "accounting: server handled {h}, client answered {}, difference {d:+}{}",
            server.client_answered,
            if server.beyond {
                " (beyond what the sampling windows explain)"
            } else {
                ""
            }
        ));
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

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<script>alert("x") & 'y'</script>"#),
            "&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;"
        );
    }

    #[test]
    fn percentile_axis_labels() {
        assert_eq!(percentile_label(1.0), "0%");
        assert_eq!(percentile_label(10.0), "90%");
        assert_eq!(percentile_label(100.0), "99%");
        assert_eq!(percentile_label(1000.0), "99.9%");
        assert_eq!(percentile_label(100000.0), "99.999%");
        let a = Axis::new(Scale::Percentile, &[1.0, 5.0, 3000.0]);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
    }

    #[test]
    fn linear_axis_covers_values() {
        let a = Axis::new(Scale::Linear, &[0.0, 7.3]);
        assert_eq!(a.lo, 0.0);
        assert!(a.hi >= 7.3 && a.hi <= 10.0, "{}", a.hi);
        assert!(a.ticks.len() >= 3);
    }

    #[test]
    fn chart_draws_its_points_and_escapes_names() {
        let c = Chart {
            id: "c".into(),
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Log,
            series: vec![Series {
                name: "<op>".into(),
                points: vec![(0.0, 1.0), (1.0, 10.0), (2.0, f64::NAN), (3.0, 0.0)],
                dashed: false,
                color: 0,
            }],
        };
        let svg = c.svg();
        assert!(svg.contains(r#"data-points="2""#), "{svg}");
        assert!(svg.contains("&lt;op&gt;") && !svg.contains("<op>"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(!svg.contains("no data"));
        let empty = Chart {
            series: vec![],
            ..c
        };
        assert!(empty.svg().contains("no data"));
    }
}
