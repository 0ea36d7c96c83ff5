//! vault-benchmark's terse report (`-report_mode=terse`): its `Target:` line and its
//! table of one row per test (natural order of the names), a `---` rule and the `TOTAL`
//! row, columns aligned as Go's tabwriter aligns them (two spaces of padding), latencies
//! written as Go writes durations, unrounded (`257.346µs`). The figures are vblast's
//! (`vegeta::VbReport::of`): under `-R` the latency columns are corrected for coordinated
//! omission.

use std::io::{self, Write};

use super::Summary;
use super::vegeta::{VbReport, VegetaMetrics, go_duration_ns, tabwrite};

fn row(label: &str, m: &VegetaMetrics) -> Vec<String> {
    let l = &m.latencies;
    vec![
        label.to_string(),
        m.requests.to_string(),
        format!("{:.2}", m.rate),
        format!("{:.2}", m.throughput),
        go_duration_ns(l.mean),
        go_duration_ns(l.p95),
        go_duration_ns(l.p99),
        format!("{:.2}%", m.success * 100.0),
    ]
}

/// Writes one report in the terse layout.
pub fn render_report(r: &VbReport, o: &mut dyn Write) -> io::Result<()> {
    writeln!(o, "Target: {}", r.target_addr)?;
    let mut lines = vec![
        [
            "op",
            "count",
            "rate",
            "throughput",
            "mean",
            "95th%",
            "99th%",
            "successRatio",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for name in r.tests() {
        lines.push(row(name, &r.metrics[name]));
    }
    if let Some(total) = r.metrics.get("total") {
        lines.push(vec!["---".to_string(); 8]);
        lines.push(row("TOTAL", total));
    }
    tabwrite(&lines, o)
}

/// Writes the terse report of a vblast run.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    render_report(&VbReport::of(s), o)?;
    super::nodes::write_after_peer_layout(s, o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_like_tabwriter() {
        let mut out = Vec::new();
        tabwrite(
            &[
                vec!["op".into(), "count".into(), "x".into()],
                vec!["longer-name".into(), "7".into(), "y".into()],
            ],
            &mut out,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "op           count  x\nlonger-name  7      y\n"
        );
    }
}
