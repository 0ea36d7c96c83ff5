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

/// Staleness by load (a sweep of `--op kv-staleness`): a row per step, the delay until a
/// write shows on the standbys (all standbys pooled) with its p50 and p99 and their
/// intervals, so that how staleness grows with the load beside it reads down the rows.
pub fn by_load(steps: &[StalenessStep<'_>], unit: &str, o: &mut dyn Write) -> io::Result<()> {
    if steps.is_empty() {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(
        o,
        "Staleness by load (load in {unit}; until a write on the active node shows on the standbys, every standby pooled):"
    )?;
    writeln!(
        o,
        "{:>3}  {:>11} {:>11} {:>7} {:>9} {:>19} {:>9} {:>19} {:>9} {:>8}",
        "", "load", "achieved", "rounds", "p50", "p50 CI", "p99", "p99 CI", "max", "not seen"
    )?;
    for (i, st) in steps.iter().enumerate() {
        let (h, not_seen) = pooled(st.staleness);
        let p = super::Percentiles::of(&h);
        let interval = |key: &str| ci::cell(p.ci.get(key).and_then(Option::as_ref));
        writeln!(
            o,
            "{:>3}  {:>11} {:>11.1} {:>7} {:>9} {:>19} {:>9} {:>19} {:>9} {:>8}",
            i + 1,
            st.load,
            st.achieved,
            st.staleness.write.0.len(),
            fmt_ms(p.p50),
            interval("p50"),
            fmt_ms(p.p99),
            interval("p99"),
            fmt_ms(p.max),
            not_seen
        )?;
    }
    Ok(())
}
