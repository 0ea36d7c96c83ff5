//! vault-benchmark's verbose report (`-report_mode=verbose`), as its release 0.4.1 prints
//! it: the `total` section first, then one section per test (names in byte order), each in the layout of vegeta's text report that
//! vault-benchmark prints: Requests, Duration, Latencies (durations rounded as vegeta
//! rounds them: `3.012s`, `92.16ms`), Bytes In, Bytes Out, Success, Status Codes and the
//! Error Set, aligned as one tabwriter block (a label column 14 wide). Each test's bytes,
//! codes and errors are its own; bytes are bodies, as vegeta counts them. With `--ci`, a
//! `Latencies CI` line after `Latencies` gives the confidence intervals of its 50, 90, 95
//! and 99 (`ci.rs`), and a `CI:` note ends the report: vegeta has no such line, so it
//! appears only when asked for.

use std::io::{self, Write};

use super::vegeta::{VbReport, VegetaMetrics, go_duration_ns, tabwrite, vegeta_round};
use crate::report::{Percentiles, Summary};

fn cells(label: &str, what: &str, value: String) -> Vec<String> {
    vec![label.into(), what.into(), value]
}

/// One test's section, as vegeta's text reporter writes its metrics.
pub fn section(title: &str, m: &VegetaMetrics, o: &mut dyn Write) -> io::Result<()> {
    section_with(title, m, None, o)
}

/// The `Latencies CI` line of `p`: its 50, 90, 95 and 99's intervals.
fn ci_line(p: &Percentiles) -> Vec<String> {
    let level = crate::report::ci::level_of(p);
    let values: Vec<String> = ["p50", "p90", "p95", "p99"]
        .iter()
        .map(|key| crate::report::ci::cell(p.interval(key)))
        .collect();
    cells(
        "Latencies CI",
        &format!("[{} of 50, 90, 95, 99]", level.label()),
        values.join(", "),
    )
}

/// One test's section, with the `Latencies CI` line of `ci` when given (`--ci`).
fn section_with(
    title: &str,
    m: &VegetaMetrics,
    ci: Option<&Percentiles>,
    o: &mut dyn Write,
) -> io::Result<()> {
    writeln!(o)?;
    writeln!(o, "{title}")?;
    let d = |ns: i64| go_duration_ns(vegeta_round(ns));
    let l = &m.latencies;
    let codes: String = m
        .status_codes
        .iter()
        .map(|(c, n)| format!("{c}:{n}  "))
        .collect();
    let mut lines = vec![
        cells(
            "Requests",
            "[total, rate, throughput]",
            format!("{}, {:.2}, {:.2}", m.requests, m.rate, m.throughput),
        ),
        cells(
            "Duration",
            "[total, attack, wait]",
            format!(
                "{}, {}, {}",
                d(m.duration.saturating_add(m.wait)),
                d(m.duration),
                d(m.wait)
            ),
        ),
        cells(
            "Latencies",
            "[min, mean, 50, 90, 95, 99, max]",
            [l.min, l.mean, l.p50, l.p90, l.p95, l.p99, l.max]
                .map(d)
                .join(", "),
        ),
        cells(
            "Bytes In",
            "[total, mean]",
            format!("{}, {:.2}", m.bytes_in.total, m.bytes_in.mean),
        ),
        cells(
            "Bytes Out",
            "[total, mean]",
            format!("{}, {:.2}", m.bytes_out.total, m.bytes_out.mean),
        ),
        cells("Success", "[ratio]", format!("{:.2}%", m.success * 100.0)),
        cells("Status Codes", "[code:count]", codes),
    ];
    if let Some(p) = ci {
        lines.insert(3, ci_line(p));
    }
    tabwrite(&lines, o)?;
    writeln!(o, "Error Set:")?;
    for e in &m.errors {
        writeln!(o, "{e}")?;
    }
    Ok(())
}

/// Writes one report in the verbose layout.
pub fn render_report(r: &VbReport, o: &mut dyn Write) -> io::Result<()> {
    if let Some(total) = r.metrics.get("total") {
        section("total", total, o)?;
    }
    for name in r.tests() {
        section(name, &r.metrics[name], o)?;
    }
    Ok(())
}

/// Writes the verbose report of a vblast run.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    render_with(s, false, o)
}

/// The same, with each section's `Latencies CI` line when `ci` (`--ci`).
pub fn render_with(s: &Summary, ci: bool, o: &mut dyn Write) -> io::Result<()> {
    if !ci {
        render_report(&VbReport::of(s), o)?;
        return crate::report::nodes::write_after_peer_layout(s, o);
    }
    let r = VbReport::of(s);
    if let Some(total) = r.metrics.get("total") {
        section_with("total", total, Some(&s.latency_ms), o)?;
    }
    for name in r.tests() {
        let p = s
            .ops
            .iter()
            .find(|op| op.name == name)
            .map(|op| &op.latency_ms);
        section_with(name, &r.metrics[name], p, o)?;
    }
    writeln!(
        o,
        "{}",
        crate::report::ci::note(crate::report::ci::level_of(&s.latency_ms))
    )?;
    crate::report::nodes::write_after_peer_layout(s, o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_vegetas_text_report() {
        let mut m = VegetaMetrics {
            duration: 3_011_686_506,
            requests: 4,
            rate: 1.33,
            throughput: 0.99,
            success: 0.75,
            ..VegetaMetrics::default()
        };
        m.latencies.min = 1_234_567;
        m.bytes_in.total = 40;
        m.bytes_in.mean = 10.0;
        m.status_codes.insert("200".into(), 3);
        m.status_codes.insert("404".into(), 1);
        m.errors.push("404 Not Found".into());
        let mut out = Vec::new();
        section("kv_reads", &m, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let want = "\nkv_reads\n\
Requests      [total, rate, throughput]         4, 1.33, 0.99\n\
Duration      [total, attack, wait]             3.012s, 3.012s, 0s\n\
Latencies     [min, mean, 50, 90, 95, 99, max]  1.235ms, 0s, 0s, 0s, 0s, 0s, 0s\n\
Bytes In      [total, mean]                     40, 10.00\n\
Bytes Out     [total, mean]                     0, 0.00\n\
Success       [ratio]                           75.00%\n\
Status Codes  [code:count]                      200:3  404:1  \n\
Error Set:\n\
404 Not Found\n";
        assert_eq!(text, want);
    }

    /// vault-benchmark 0.4.1's order: the `total` section first, in lower case, then the
    /// tests in byte order.
    #[test]
    fn total_comes_first_in_lower_case_then_the_tests() {
        let one = r#"{"target_addr":"http://a:8200","metrics":{"total":{"requests":5},"t2":{"requests":2},"t10":{"requests":3}}}"#;
        let r = &VbReport::read_all(one).unwrap()[0];
        let mut out = Vec::new();
        render_report(r, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let titles: Vec<&str> = text
            .lines()
            .filter(|l| !l.is_empty() && !l.contains('[') && *l != "Error Set:")
            .collect();
        assert_eq!(titles, ["total", "t10", "t2"], "{text}");
    }
}
