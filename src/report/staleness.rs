//! The staleness part of a report (`--op kv-staleness`): the write's percentiles on the
//! active node, and per standby the delay until it showed the written version, each with
//! the confidence intervals of every other figure (`Percentiles`, `ci`); shared by the text
//! and verbose renderers (the JSON report carries it as `staleness`).

use std::io::{self, Write};

use serde::Serialize;

use super::{Percentiles, ci, fmt_ms};
use crate::stats::staleness::Staleness;

#[derive(Clone, Debug, Serialize)]
pub struct StalenessSummary {
    /// The probe's writes on the active node.
    pub write: Percentiles,
    pub write_errors: u64,
    pub standbys: Vec<StandbySummary>,
}

#[derive(Clone, Debug, Serialize)]
pub struct StandbySummary {
    pub addr: String,
    /// From the write's answer to the first read on this standby showing its version.
    pub delay: Percentiles,
    /// Versions not seen within the probe's bound.
    pub not_seen: u64,
}

pub fn summary(s: &Staleness) -> StalenessSummary {
    StalenessSummary {
        write: Percentiles::of(&s.write),
        write_errors: s.write_errors,
        standbys: s
            .standbys
            .iter()
            .map(|st| StandbySummary {
                addr: st.addr.clone(),
                delay: Percentiles::of(&st.delay),
                not_seen: st.not_seen,
            })
            .collect(),
    }
}

/// "p50 1.20ms [1.10-1.40ms]  p99 ...  max ...".
fn figures(p: &Percentiles) -> String {
    let at = |key: &str, v: f64| {
        format!(
            "{key} {} [{}]",
            fmt_ms(v),
            ci::cell(p.ci.get(key).and_then(Option::as_ref))
        )
    };
    format!(
        "{}  {}  max {}",
        at("p50", p.p50),
        at("p99", p.p99),
        fmt_ms(p.max)
    )
}

/// The staleness lines, after the node table.
pub fn write(s: &super::Summary, o: &mut dyn Write) -> io::Result<()> {
    let Some(st) = &s.staleness else {
        return Ok(());
    };
    writeln!(o)?;
    writeln!(
        o,
        "Staleness ({} rounds; intervals at {:.0}%): write on the active node  {}{}",
        st.write.count,
        st.write.confidence * 100.0,
        figures(&st.write),
        if st.write_errors > 0 {
            format!("  ({} writes failed)", st.write_errors)
        } else {
            String::new()
        }
    )?;
    for sb in &st.standbys {
        writeln!(
            o,
            "  until visible on {:<26} {}{}",
            sb.addr,
            figures(&sb.delay),
            if sb.not_seen > 0 {
                format!("  ({} versions not seen within 5 s)", sb.not_seen)
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

/// One step of a sweep for `by_load`: its offered load, its achieved rate, its staleness.
pub struct StalenessStep<'a> {
    pub load: u64,
    pub achieved: f64,
    pub staleness: &'a Staleness,
}

/// Every standby's delays pooled into one histogram, and the versions none saw in time.
fn pooled(s: &Staleness) -> (crate::stats::Hist, u64) {
    let mut h = crate::stats::Hist::default();
    let mut not_seen = 0;
    for sb in &s.standbys {
        h.add(&sb.delay);
        not_seen += sb.not_seen;
    }
    (h, not_seen)
}

/// The columns of the staleness by load table, text and HTML alike.
pub const BY_LOAD_HEADER: [&str; 10] = [
    "", "load", "achieved", "rounds", "p50", "p50 CI", "p99", "p99 CI", "max", "not seen",
];

/// The rows of the staleness by load table, one per step, its cells as `BY_LOAD_HEADER`
/// names them: the delay until a write shows on the standbys (all standbys pooled), its p50
/// and p99 with their intervals.
pub fn by_load_rows(steps: &[StalenessStep<'_>]) -> Vec<Vec<String>> {
    steps
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let (h, not_seen) = pooled(st.staleness);
            let p = super::Percentiles::of(&h);
            let interval = |key: &str| ci::cell(p.ci.get(key).and_then(Option::as_ref));
            vec![
                (i + 1).to_string(),
                st.load.to_string(),
                format!("{:.1}", st.achieved),
                st.staleness.write.0.len().to_string(),
                fmt_ms(p.p50),
                interval("p50"),
                fmt_ms(p.p99),
                interval("p99"),
                fmt_ms(p.max),
                not_seen.to_string(),
            ]
        })
        .collect()
}

/// The table's title: what a row says, in the sweep's load unit.
pub fn by_load_title(unit: &str) -> String {
    format!(
        "Staleness by load (load in {unit}; until a write on the active node shows on the standbys, every standby pooled)"
    )
}

/// Staleness by load (a sweep of `--op kv-staleness`): a row per step, so that how
/// staleness grows with the load beside it reads down the rows; `name` (a compared
/// sweep's) before the title when given.
pub fn by_load(
    steps: &[StalenessStep<'_>],
    unit: &str,
    name: Option<&str>,
    o: &mut dyn Write,
) -> io::Result<()> {
    if steps.is_empty() {
        return Ok(());
    }
    writeln!(o)?;
    let named = name.map_or(String::new(), |n| format!("{n}: "));
    writeln!(o, "{named}{}:", by_load_title(unit))?;
    let widths = [3, 11, 11, 7, 9, 19, 9, 19, 9, 8];
    let line = |cells: &[String]| {
        let mut l = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            let sep = match i {
                0 => "",
                1 => "  ",
                _ => " ",
            };
            l.push_str(&format!("{sep}{c:>w$}"));
        }
        l
    };
    let header: Vec<String> = BY_LOAD_HEADER.iter().map(|h| h.to_string()).collect();
    writeln!(o, "{}", line(&header))?;
    for row in by_load_rows(steps) {
        writeln!(o, "{}", line(&row))?;
    }
    Ok(())
}
