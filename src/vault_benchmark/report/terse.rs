//! vault-benchmark's terse report (`-report_mode=terse`), line for line as its release
//! 0.4.1 prints it (`benchmarktests/reports.go`): its `Target:` line and its table of one
//! row per test (names in byte order), no total row, `rate` and `throughput` with six
//! decimals (Go's `%f`), columns aligned as Go's tabwriter aligns them (two spaces of
//! padding), latencies written as Go writes durations, unrounded (`257.346µs`).
//! (vault-benchmark's main branch, unreleased, has since changed the table: two decimals,
//! natural order, a `---` rule and a `TOTAL` row; scripts read the release's.) The figures are vblast's
//! (`vegeta::VbReport::of`): under `-R` the latency columns are corrected for coordinated
//! omission. With `--ci`, two columns after `successRatio` give the 95th and 99th
//! percentiles' confidence intervals (`ci.rs`) and a `CI:` note follows the table; without
//! it the table is vault-benchmark's alone.

use std::io::{self, Write};

use super::vegeta::{VbReport, VegetaMetrics, go_duration_ns, tabwrite};
use crate::report::{Percentiles, Summary};

fn row(label: &str, m: &VegetaMetrics) -> Vec<String> {
    let l = &m.latencies;
    vec![
        label.to_string(),
        m.requests.to_string(),
        format!("{:.6}", m.rate),
        format!("{:.6}", m.throughput),
        go_duration_ns(l.mean),
        go_duration_ns(l.p95),
        go_duration_ns(l.p99),
        format!("{:.2}%", m.success * 100.0),
    ]
}

/// Writes one report in the terse layout.
pub fn render_report(r: &VbReport, o: &mut dyn Write) -> io::Result<()> {
    render_report_with(r, None, o)
}

/// The two interval cells of a row (95th%, 99th%).
fn ci_cells(p: Option<&Percentiles>) -> [String; 2] {
    let cell = |key| crate::report::ci::cell(p.and_then(|p| p.interval(key)));
    [cell("p95"), cell("p99")]
}

/// The terse layout; with `ci` (a run's summary, `--ci`), each row's intervals after it.
fn render_report_with(r: &VbReport, ci: Option<&Summary>, o: &mut dyn Write) -> io::Result<()> {
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
    let latency = |name: &str| {
        ci.and_then(|s| s.ops.iter().find(|op| op.name == name))
            .map(|op| &op.latency_ms)
    };
    if ci.is_some() {
        lines[0].extend(["95th% CI".to_string(), "99th% CI".to_string()]);
    }
    for name in r.tests() {
        let mut cells = row(name, &r.metrics[name]);
        if ci.is_some() {
            cells.extend(ci_cells(latency(name)));
        }
        lines.push(cells);
    }
    tabwrite(&lines, o)?;
    match ci {
        Some(s) => writeln!(
            o,
            "{}",
            crate::report::ci::note(crate::report::ci::level_of(&s.latency_ms))
        ),
        None => Ok(()),
    }
}

/// Writes the terse report of a vblast run.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    render_with(s, false, o)
}

/// The same, with the interval columns when `ci` (`--ci`).
pub fn render_with(s: &Summary, ci: bool, o: &mut dyn Write) -> io::Result<()> {
    render_report_with(&VbReport::of(s), ci.then_some(s), o)?;
    crate::report::nodes::write_after_peer_layout(s, o)
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

    /// vault-benchmark 0.4.1's table: its header, one row per test in byte order, six
    /// decimals for rate and throughput, and no total row (a script reads every row as a
    /// test).
    #[test]
    fn the_table_is_vault_benchmarks_line_for_line() {
        let one = r#"{"target_addr":"http://a:8200","metrics":{
            "total":{"requests":5,"rate":1.5,"throughput":1.25,"success":1},
            "t2":{"requests":2,"rate":0.5,"throughput":0.5,"success":1,"latencies":{"mean":1000,"95th":2000,"99th":3000}},
            "t10":{"requests":3,"rate":5185.1018154,"throughput":0.75,"success":1}}}"#;
        let r = &VbReport::read_all(one).unwrap()[0];
        let mut out = Vec::new();
        render_report(r, &mut out).unwrap();
        let want = "Target: http://a:8200\n\
op   count  rate         throughput  mean  95th%  99th%  successRatio\n\
t10  3      5185.101815  0.750000    0s    0s     0s     100.00%\n\
t2   2      0.500000     0.500000    1µs   2µs    3µs    100.00%\n";
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
