//! Confidence intervals beside the percentiles: each percentile's interval
//! (`stats::interval`) in milliseconds, as `Percentiles::ci` holds it and every format shows
//! it. The run's latency (all operations) is read with its blocks of time, so its
//! intervals are widened where its samples are correlated in time (`interval::of_blocked`,
//! said in `CiMethod`); every other figure's is the order-statistic interval. A side the
//! samples cannot bound is unknown (`?`, null in JSON); an interval wider than the value
//! itself is flagged (`wide`, `!` after the cell).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::stats::blocks::Blocks;
use crate::stats::interval::{self, Confidence};

use super::{fmt_ms, ms};

/// One percentile's interval, milliseconds.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Ci {
    /// The lower bound; None when too few samples bound it.
    pub low: Option<f64>,
    /// The upper bound; None when too few samples bound it.
    pub high: Option<f64>,
    /// Wider than the value itself (high - low > value).
    pub wide: bool,
}

impl Ci {
    /// Whether both sides are known.
    pub fn known(&self) -> bool {
        self.low.is_some() && self.high.is_some()
    }
}

/// How a figure's intervals were made when its samples' blocks of time were read: how
/// many blocks, how wide, and each percentile's design effect (the variance of its count
/// over the binomial's; 1 for independent samples), where it was estimated.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct CiMethod {
    /// Blocks of time that held samples.
    pub blocks: usize,
    /// The width of one block, milliseconds.
    pub block_ms: u64,
    /// Each percentile key's design effect; a key without one has the order-statistic
    /// interval (too few samples on one side of it).
    pub design_effect: BTreeMap<String, f64>,
}

impl CiMethod {
    /// Whether no block was read (the order-statistic intervals alone).
    pub fn is_plain(&self) -> bool {
        self.design_effect.is_empty()
    }

    /// "design effect 3.2 over 20 blocks of 100 ms" for `key`, when it has one.
    pub fn describe(&self, key: &str) -> Option<String> {
        self.design_effect.get(key).map(|d| {
            format!(
                "design effect {d:.1} over {} blocks of {} ms",
                self.blocks, self.block_ms
            )
        })
    }
}

/// The intervals of the percentiles of `tails::KEYS` of `h` (microseconds) at `level`, by
/// key, given each point value (ms); None where neither side is known. With `blocks` (the
/// same samples by block of time; empty for none) widened for correlation, and how.
pub fn of(
    h: &hdrhistogram::Histogram<u64>,
    blocks: &Blocks,
    level: Confidence,
    value: impl Fn(&str) -> f64,
) -> (BTreeMap<String, Option<Ci>>, CiMethod) {
    let mut method = CiMethod {
        blocks: blocks.held(),
        block_ms: blocks.width_ms(),
        design_effect: BTreeMap::new(),
    };
    let cis = super::tails::KEYS
        .iter()
        .map(|(key, ppm, _)| {
            let (ci, deff) = at_blocked(h, blocks, *ppm as f64 / 1e6, level, value(key));
            if let Some(d) = deff {
                method.design_effect.insert(key.to_string(), d);
            }
            (key.to_string(), ci)
        })
        .collect();
    if method.is_plain() {
        method = CiMethod::default();
    }
    (cis, method)
}

/// The interval of quantile `q` (0.66 for ab's 66%) of `h` (microseconds) at `level`,
/// given its point value (ms); None where neither side is known.
pub fn at(h: &hdrhistogram::Histogram<u64>, q: f64, level: Confidence, value: f64) -> Option<Ci> {
    cell_of(interval::of(h, q, level), value)
}

/// `at`, widened for the correlation `blocks` show; with the design effect used.
pub fn at_blocked(
    h: &hdrhistogram::Histogram<u64>,
    blocks: &Blocks,
    q: f64,
    level: Confidence,
    value: f64,
) -> (Option<Ci>, Option<f64>) {
    let (i, deff) = interval::of_blocked(h, blocks, q, level);
    (cell_of(i, value), deff)
}

/// An interval in milliseconds, flagged when wider than `value`; None when unknown.
fn cell_of(i: interval::RankInterval, value: f64) -> Option<Ci> {
    (!i.unknown()).then(|| {
        let low = i.low.map(ms);
        let high = i.high.map(ms);
        let wide = match (low, high) {
            (Some(l), Some(h)) => h - l > value,
            _ => false,
        };
        Ci { low, high, wide }
    })
}

/// The level a summary's intervals were built at (its latency's), the default when the
/// figures are empty.
pub fn level_of(p: &super::Percentiles) -> Confidence {
    Confidence::new(p.confidence).unwrap_or_default()
}

/// A cell: "8.70-11.60ms", "?-2.10s" (a side unknown), "unknown", with `!` when wide.
pub fn cell(ci: Option<&Ci>) -> String {
    let Some(ci) = ci else {
        return "unknown".into();
    };
    let side = |v: Option<f64>| v.map_or("?".to_string(), fmt_ms);
    let (lo, hi) = (side(ci.low), side(ci.high));
    let unit = |s: &str| {
        s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
            .to_string()
    };
    let text = if ci.known() && unit(&lo) == unit(&hi) {
        format!(
            "{}-{hi}",
            lo.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        )
    } else {
        format!("{lo}-{hi}")
    };
    if ci.wide { text + "!" } else { text }
}

/// The note under a table with intervals: the level, the method, and what `!` and `?` say.
pub fn note(level: Confidence) -> String {
    format!(
        "CI: {} confidence interval of the percentile (order statistic, distribution-free; the latency's widened for samples correlated in time); '?' a side too few samples bound, '!' wider than the value itself",
        level.label()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells() {
        let ci = |low, high, wide| Ci { low, high, wide };
        assert_eq!(
            cell(Some(&ci(Some(8.7), Some(11.6), false))),
            "8.70-11.60ms"
        );
        assert_eq!(
            cell(Some(&ci(Some(0.5), Some(11.6), true))),
            "500us-11.60ms!"
        );
        assert_eq!(cell(Some(&ci(Some(8.7), None, false))), "8.70ms-?");
        assert_eq!(cell(None), "unknown");
    }

    #[test]
    fn the_latency_interval_widens_for_samples_correlated_in_time() {
        use crate::report::{Percentiles, RunInfo, Summary};
        use crate::stats::Stats;
        // 4 s, a request a millisecond: about 1 ms, but 8 ms in the first 60 ms of every
        // 500 (a stall): the samples above p90 come in bursts.
        let mut stats = Stats::new(1);
        for ms in 0..4000u64 {
            let us = if ms % 500 < 60 {
                8000 + ms % 7 * 100
            } else {
                1000 + ms % 13 * 10
            };
            stats.ops[0].latency.record(us);
            stats.ops[0].requests += 1;
            stats.ops[0].ok += 1;
            stats.blocks.record(ms, us);
        }
        stats.elapsed_s = 4.0;
        let run = RunInfo::sample("http://127.0.0.1:8200/v1/secret/data/foo", 4);
        let s = Summary::new(run, &stats, &["kv-read".to_string()]);
        let plain = Percentiles::at(&s.latency_hist, Confidence::default());
        let (wide, narrow) = (s.latency_ms.interval("p90"), plain.interval("p90"));
        let (wide, narrow) = (wide.unwrap(), narrow.unwrap());
        assert!(
            wide.low < narrow.low || wide.high > narrow.high,
            "{wide:?} {narrow:?}"
        );
        assert!(wide.low <= narrow.low && wide.high >= narrow.high);
        let m = &s.latency_ms.ci_method;
        assert_eq!((m.blocks, m.block_ms), (40, 100));
        assert!(m.design_effect["p90"] > 2.0, "{m:?}");
        assert!(
            m.describe("p90")
                .unwrap()
                .contains("over 40 blocks of 100 ms")
        );
        let json = serde_json::to_value(&s.latency_ms).unwrap();
        assert_eq!(json["ci_method"]["blocks"], 40);
        // Without blocks (an older file): the order-statistic interval, and no ci_method.
        assert!(plain.ci_method.is_plain());
        assert!(
            serde_json::to_value(&plain)
                .unwrap()
                .get("ci_method")
                .is_none()
        );
    }

    /// One summary (2,000 requests of 1..=2,000 ms, intervals at 99%) for every renderer.
    fn summary() -> super::super::Summary {
        use crate::report::{RunInfo, Summary};
        use crate::stats::Stats;
        let mut stats = Stats::new(1);
        for ms in 1..=2000u64 {
            stats.ops[0].latency.record(ms * 1000);
            stats.ops[0].service.record(ms * 1000);
            stats.ops[0].requests += 1;
            stats.ops[0].ok += 1;
        }
        stats.elapsed_s = 2.0;
        let run = RunInfo::sample("http://127.0.0.1:8200/v1/secret/data/foo", 4);
        let level = Confidence::new(0.99).unwrap();
        Summary::new_at(run, &stats, &["kv-read".to_string()], level)
    }

    fn rendered(format: super::super::Format) -> String {
        let mut out = Vec::new();
        super::super::render(&summary(), format, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_renderer_shows_the_intervals_only_when_asked() {
        use super::super::Format;
        let s = summary();
        let p99 = cell(s.latency_ms.interval("p99"));
        let p50 = cell(s.latency_ms.interval("p50"));
        let note = "CI: 99% confidence interval of the percentile";
        // --latency: a CI column after the value, the 100% row's "max-?", then the note.
        let text = rendered(Format::Text {
            latency: true,
            ci: true,
        });
        let row = |t: &str, label: &str| {
            t.lines()
                .find(|l| l.trim_start().starts_with(label))
                .unwrap_or_else(|| panic!("no {label} in\n{t}"))
                .to_string()
        };
        assert!(
            row(&text, "Latency Distribution").contains("Latency"),
            "{text}"
        );
        assert!(text.contains("latency CI"), "{text}");
        assert!(
            row(&text, "99.000%").ends_with(&format!(" {p99}")),
            "{text}"
        );
        assert!(
            row(&text, "50.000%").ends_with(&format!(" {p50}")),
            "{text}"
        );
        assert!(row(&text, "100.000%").ends_with("2.00s-?"), "{text}");
        assert!(text.contains(&format!("  {note}")), "{text}");
        // ab: "(99% CI ...)" after each figure but 100%, whose line stays ab's.
        let ab = rendered(Format::Ab { ci: true });
        for p in [50u64, 66, 75, 80, 90, 95, 98, 99] {
            let line = row(&ab, &format!("{p}%  "));
            let (figure, rest) = line.trim_start()[format!("{p}%").len()..]
                .trim_start()
                .split_once(' ')
                .unwrap();
            let figure: f64 = figure.parse().unwrap();
            let ci = rest.strip_prefix("(99% CI ").unwrap();
            let (lo, hi) = ci.strip_suffix(" ms)").unwrap().split_once('-').unwrap();
            let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
            assert!(lo <= figure && figure <= hi, "{line}");
            assert!(hi - lo < figure * 0.2, "{line}");
        }
        assert!(ab.contains("\n 100%   2001 (longest request)\n"), "{ab}");
        assert!(
            ab.trim_end().ends_with("wider than the value itself"),
            "{ab}"
        );
        assert!(ab.contains(note), "{ab}");
        // verbose: a line under each latency line.
        let verbose = rendered(Format::Verbose { ci: true });
        let line = row(&verbose, "Latency 99% CI [50, 90, 95, 99, 99.9]");
        assert!(
            line.contains(&format!("{p50}, ")) && line.contains(&p99),
            "{verbose}"
        );
        assert_eq!(verbose.matches("Latency 99% CI").count(), 2, "{verbose}");
        // vault-benchmark's terse table: two columns after successRatio.
        let terse = rendered(Format::VbTerse { ci: true });
        let header = row(&terse, "op ");
        assert!(header.contains("successRatio  95th% CI  "), "{terse}");
        assert!(header.ends_with("99th% CI"), "{terse}");
        // (vault-benchmark's table has no total row: the one operation's row.)
        let op_row = terse.lines().nth(2).unwrap();
        assert!(op_row.ends_with(&p99), "{terse}");
        assert!(terse.contains(note), "{terse}");
        // vault-benchmark's verbose sections: a Latencies CI line in the tabwriter block.
        let vb = rendered(Format::VbVerbose { ci: true });
        let line = row(&vb, "Latencies CI");
        assert!(line.ends_with(&p99), "{vb}");
        let col = |l: &str| l.find('[').unwrap();
        assert_eq!(col(&line), col(&row(&vb, "Latencies  ")), "{vb}");
        // Without --ci each format is as before: no interval anywhere.
        for format in [
            Format::Text {
                latency: true,
                ci: false,
            },
            Format::Ab { ci: false },
            Format::Verbose { ci: false },
            Format::VbTerse { ci: false },
            Format::VbVerbose { ci: false },
        ] {
            let t = rendered(format);
            assert!(!t.contains("CI"), "{format:?}\n{t}");
        }
    }
}
