//! The sweep as an HTML page (`vblast sweep --html`, `vblast report sweep.json --html`,
//! `vblast compare a.json b.json --html`), drawn with the charts of `report::page`: the
//! knee (latency p50 and p99 against the achieved throughput), the per-step percentiles
//! against the offered load, the achieved rate against the offered one, the steps' table
//! and the answer (with the resource that gave out first at the knee), and a sweep of
//! `--op kv-staleness`'s staleness by load. Several sweeps
//! are overlaid, one colour each: two instance sizes in one chart.

use crate::report::Model;
use crate::report::ci::cell;
use crate::report::fmt_ms;
use crate::report::page::{Chart, Scale, Series, escape, page, table};

use super::file::{Judged, Sweep, answer_line};
use super::objective::Objective;
use super::search::Phase;

/// How a step's figure is read.
type Figure = fn(&Judged) -> f64;

/// One sweep's steps judged and sorted by load (lines are drawn in load order).
fn curve(sweep: &Sweep) -> Vec<(u64, Judged)> {
    let judged = sweep.judged();
    let mut v: Vec<(u64, Judged)> = sweep.steps.iter().map(|s| s.load).zip(judged).collect();
    v.sort_by_key(|(load, _)| *load);
    v
}

/// The page of one sweep, or of several overlaid (the first is the reference).
pub fn render(title: &str, sweeps: &[(String, &Sweep)]) -> String {
    let p = Page {
        sweeps,
        curves: sweeps.iter().map(|(_, s)| curve(s)).collect(),
        several: sweeps.len() > 1,
        unit: sweeps[0].1.spec.unit(),
    };
    let mut body = String::new();
    p.answers(&mut body);
    p.knee(&mut body);
    p.percentiles(&mut body);
    p.throughput(&mut body);
    p.steps(&mut body);
    p.staleness(&mut body);
    page(title, &body)
}

/// What the page's sections draw from: the sweeps, their curves, the load unit.
struct Page<'a> {
    sweeps: &'a [(String, &'a Sweep)],
    curves: Vec<Vec<(u64, Judged)>>,
    several: bool,
    unit: &'a str,
}

impl Page<'_> {
    /// A series name's prefix: the sweep's name when several are overlaid.
    fn name(&self, i: usize) -> String {
        if self.several {
            format!("{}: ", self.sweeps[i].0)
        } else {
            String::new()
        }
    }

    /// Each sweep's answer, with its model, operation, target and objective.
    fn answers(&self, body: &mut String) {
        body.push_str("<h2>Answer</h2>");
        for (n, s) in self.sweeps {
            let judged = s.judged();
            let end = s.end(&judged).ok().flatten();
            let objective: Vec<String> = s.spec.objectives.iter().map(|o| o.describe()).collect();
            body.push_str(&format!(
                "<p><b>{}</b>{}</p><p class=\"note\">{} of {} on {}; objective: {}</p>",
                escape(if self.several { n } else { "" }),
                escape(&format!(
                    "{}{}",
                    if self.several { ": " } else { "" },
                    answer_line(s, &judged, end)
                )),
                match s.spec.model {
                    Model::Open => "rate steps",
                    Model::Closed => "concurrency steps",
                },
                escape(&s.spec.operation),
                escape(&s.spec.target),
                escape(&objective.join(", "))
            ));
            // What gave out first at the knee, as the footer says it.
            if let Some(line) = super::saturation::line(&s.seen(&judged), end, s.spec.unit()) {
                body.push_str(&format!("<p class=\"saturated\">{}</p>", escape(&line)));
            }
        }
    }

    /// The knee, with the first sweep's latency bounds.
    fn knee(&self, body: &mut String) {
        // The knee: latency against what the server actually delivered.
        let mut knee = Vec::new();
        for (i, c) in self.curves.iter().enumerate() {
            knee.push(Series {
                name: format!("{}p99", self.name(i)),
                points: c
                    .iter()
                    .map(|(_, j)| (j.figures.achieved, j.figures.p99_ms))
                    .collect(),
                dashed: false,
                color: i,
            });
            knee.push(Series {
                name: format!("{}p50", self.name(i)),
                points: c
                    .iter()
                    .map(|(_, j)| (j.figures.achieved, j.figures.p50_ms))
                    .collect(),
                dashed: true,
                color: i,
            });
        }
        // The first sweep's latency bounds, as flat lines across the delivered range.
        let achieved = self
            .curves
            .iter()
            .flat_map(|c| c.iter().map(|(_, j)| j.figures.achieved));
        let (lo, hi) = achieved.fold((f64::INFINITY, 0.0f64), |(lo, hi), a| {
            (lo.min(a), hi.max(a))
        });
        if lo.is_finite() {
            for o in &self.sweeps[0].1.spec.objectives {
                if let Objective::Latency { max_ms, .. } = o {
                    knee.push(Series {
                        name: format!("objective {}", o.describe()),
                        points: vec![(lo, *max_ms), (hi, *max_ms)],
                        dashed: true,
                        color: 6,
                    });
                }
            }
        }
        body.push_str("<h2>The knee</h2>");
        body.push_str(
            &Chart {
                id: "knee".into(),
                title: "Latency against achieved throughput (p99 solid, p50 dashed)".into(),
                x_label: "achieved throughput (req/s)".into(),
                y_label: "latency (ms)".into(),
                x_scale: Scale::Linear,
                y_scale: Scale::Log,
                series: knee,
            }
            .svg(),
        );
    }

    /// The percentiles of each step against the offered load.
    fn percentiles(&self, body: &mut String) {
        // Per-step percentiles against the offered load.
        let mut pct = Vec::new();
        for (i, c) in self.curves.iter().enumerate() {
            let figures: [(&str, Figure); 4] = [
                ("p50", |j| j.figures.p50_ms),
                ("p90", |j| j.figures.p90_ms),
                ("p99", |j| j.figures.p99_ms),
                ("p99.9", |j| j.figures.p999_ms),
            ];
            for (k, (label, f)) in figures.iter().enumerate() {
                pct.push(Series {
                    name: format!("{}{label}", self.name(i)),
                    points: c.iter().map(|(l, j)| (*l as f64, f(j))).collect(),
                    dashed: self.several && k != 2,
                    // One colour per percentile for one sweep; one per sweep when overlaid.
                    color: if self.several { i } else { k },
                });
            }
        }
        body.push_str("<h2>Percentiles per step</h2>");
        body.push_str(
            &Chart {
                id: "percentiles".into(),
                title: format!("Latency percentiles by load ({})", self.unit),
                x_label: format!("load ({})", self.unit),
                y_label: "latency (ms)".into(),
                x_scale: Scale::Log,
                y_scale: Scale::Log,
                series: pct,
            }
            .svg(),
        );
    }

    /// The achieved rate of each step against the offered one.
    fn throughput(&self, body: &mut String) {
        let mut rate = Vec::new();
        for (i, c) in self.curves.iter().enumerate() {
            rate.push(Series {
                name: format!("{}achieved", self.name(i)),
                points: c
                    .iter()
                    .map(|(l, j)| (*l as f64, j.figures.achieved))
                    .collect(),
                dashed: false,
                color: i,
            });
        }
        if self.sweeps[0].1.spec.model == Model::Open {
            let top = self
                .curves
                .iter()
                .flat_map(|c| c.iter().map(|(l, _)| *l))
                .max()
                .unwrap_or(1);
            let bottom = self
                .curves
                .iter()
                .flat_map(|c| c.iter().map(|(l, _)| *l))
                .min()
                .unwrap_or(1);
            rate.push(Series {
                name: "offered".into(),
                points: vec![(bottom as f64, bottom as f64), (top as f64, top as f64)],
                dashed: true,
                color: 7,
            });
        }
        body.push_str("<h2>Throughput per step</h2>");
        body.push_str(
            &Chart {
                id: "throughput".into(),
                title: format!("Achieved throughput by load ({})", self.unit),
                x_label: format!("load ({})", self.unit),
                y_label: "achieved (req/s)".into(),
                x_scale: Scale::Linear,
                y_scale: Scale::Linear,
                series: rate,
            }
            .svg(),
        );
    }

    /// Each sweep's staleness by load (a sweep of `--op kv-staleness`), as its text says it.
    fn staleness(&self, body: &mut String) {
        use crate::report::staleness::{BY_LOAD_HEADER, by_load_rows, by_load_title};
        for (n, s) in self.sweeps {
            let steps = super::render::staleness_steps(s, &s.judged());
            if steps.is_empty() {
                continue;
            }
            let named = if self.several {
                format!("{n}: ")
            } else {
                String::new()
            };
            body.push_str(&format!(
                "<h2>Staleness by load</h2><p class=\"note\">{}</p>",
                escape(&format!("{named}{}", by_load_title(s.spec.unit())))
            ));
            body.push_str(&table(&BY_LOAD_HEADER, &by_load_rows(&steps), 1));
        }
    }

    /// Each sweep's table of steps.
    fn steps(&self, body: &mut String) {
        for (n, s) in self.sweeps {
            body.push_str(&format!(
                "<h2>Steps{}</h2>",
                escape(&if self.several {
                    format!(": {n}")
                } else {
                    String::new()
                })
            ));
            let rows: Vec<Vec<String>> = s
                .steps
                .iter()
                .zip(s.judged())
                .enumerate()
                .map(|(i, (st, j))| {
                    vec![
                        (i + 1).to_string(),
                        match st.phase {
                            Phase::Coarse => "coarse".into(),
                            Phase::Bisect => "bisect".into(),
                        },
                        super::render::result(st, &j),
                        st.load.to_string(),
                        format!("{:.1}", j.figures.achieved),
                        fmt_ms(j.figures.p50_ms),
                        cell(j.figures.p50_ci.as_ref()),
                        fmt_ms(j.figures.p99_ms),
                        cell(j.figures.p99_ci.as_ref()),
                        fmt_ms(j.figures.p999_ms),
                        cell(j.figures.p999_ci.as_ref()),
                        format!("{:.2}%", j.figures.success_percent),
                    ]
                })
                .collect();
            body.push_str(&table(
                &[
                    "#",
                    "phase",
                    "result",
                    self.unit,
                    "achieved/s",
                    "p50",
                    "p50 CI",
                    "p99",
                    "p99 CI",
                    "p99.9",
                    "p99.9 CI",
                    "success",
                ],
                &rows,
                3,
            ));
        }
    }
}
