//! The page toolkit, knowing nothing of runs: charts drawn as inline SVG ([`Chart`] with
//! [`Series`] of `(x, y)` points and a [`Scale`] per axis, rendered by [`Chart::svg`] into an
//! `<svg class="chart">` element), [`table`] for an HTML table, [`escape`] for any text from
//! input, and [`page`], which wraps a body into the whole self-contained document (its style,
//! its Content-Security-Policy and its self-check script). The run page (`report::html`) and
//! the sweep's page (`sweep::html`) are drawn with it.
//!
//! Why hand-written SVG: the page must open without a network, so any charting library
//! would have to be embedded whole (hundreds of KiB of JavaScript to review and keep up to
//! date) for a few line charts; SVG written in Rust is static, deterministic, testable, and
//! draws in any browser with scripting off. The one script on the page is a self-check of
//! a few lines: it measures each chart's drawn lines in the browser, writes the length into
//! the chart's `data-drawn` attribute, and logs a console error for a chart that drew
//! nothing (what the browser test looks for).

use std::fmt::Write as _;

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
    pub fn svg_marked(&self, marks: &[(f64, String, usize)]) -> String {
        self.svg_spanning(marks, &[])
    }

    /// `svg_marked`, with the x axis covering `span` as well as the points (charts that
    /// share one time axis give it the same span).
    pub fn svg_spanning(&self, marks: &[(f64, String, usize)], span: &[f64]) -> String {
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
