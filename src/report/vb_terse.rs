//! vault-benchmark's terse report (`-report_mode=terse`): its `Target:` line and its
//! table of one row per test (natural order of the names), a `---` rule and the `TOTAL`
//! row, columns aligned as Go's tabwriter aligns them (two spaces of padding), latencies
//! written as Go writes durations (`257.346µs`). The figures are vblast's: under `-R`
//! the latency columns are corrected for coordinated omission.

use std::io::{self, Write};

use super::{OpSummary, Summary};

/// A duration in milliseconds written as Go's `time.Duration.String()` writes it.
pub(crate) fn go_duration(ms: f64) -> String {
    let ns = (ms * 1e6).round().max(0.0) as u64;
    if ns == 0 {
        return "0s".into();
    }
    let frac = |v: u64, unit: u64, digits: usize| -> String {
        let whole = v / unit;
        let rest = v % unit;
        if rest == 0 {
            whole.to_string()
        } else {
            let f = format!("{rest:0digits$}");
            format!("{whole}.{}", f.trim_end_matches('0'))
        }
    };
    if ns < 1_000 {
        return format!("{ns}ns");
    }
    if ns < 1_000_000 {
        return format!("{}µs", frac(ns, 1_000, 3));
    }
    if ns < 1_000_000_000 {
        return format!("{}ms", frac(ns, 1_000_000, 6));
    }
    let secs = ns / 1_000_000_000;
    let sub = ns % 1_000_000_000;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let s = frac(s * 1_000_000_000 + sub, 1_000_000_000, 9);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// Lines of tab-separated cells aligned as Go's `tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)`
/// aligns a block: each cell but a line's last padded to its column's widest plus two.
pub(crate) fn tabwrite(lines: &[Vec<String>], o: &mut dyn Write) -> io::Result<()> {
    let mut widths: Vec<usize> = Vec::new();
    for l in lines {
        for (i, c) in l.iter().enumerate().take(l.len().saturating_sub(1)) {
            if widths.len() <= i {
                widths.push(0);
            }
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    for l in lines {
        let mut text = String::new();
        for (i, c) in l.iter().enumerate() {
            if i + 1 < l.len() {
                text.push_str(&format!("{c:<w$}", w = widths[i] + 2));
            } else {
                text.push_str(c);
            }
        }
        writeln!(o, "{text}")?;
    }
    Ok(())
}

/// Names in natural order ("t2" before "t10"), as vault-benchmark sorts its tests.
pub(crate) fn natural_order(ops: &[OpSummary]) -> Vec<&OpSummary> {
    fn key(s: &str) -> Vec<(u8, u128, String)> {
        let mut out = Vec::new();
        let mut digits = String::new();
        let mut text = String::new();
        for ch in s.chars() {
            if ch.is_ascii_digit() {
                if !text.is_empty() {
                    out.push((1, 0, std::mem::take(&mut text)));
                }
                digits.push(ch);
            } else {
                if !digits.is_empty() {
                    out.push((0, digits.parse().unwrap_or(u128::MAX), String::new()));
                    digits.clear();
                }
                text.push(ch);
            }
        }
        if !digits.is_empty() {
            out.push((0, digits.parse().unwrap_or(u128::MAX), String::new()));
        }
        if !text.is_empty() {
            out.push((1, 0, text));
        }
        out
    }
    let mut v: Vec<&OpSummary> = ops.iter().collect();
    v.sort_by_key(|o| key(&o.name));
    v
}

/// Writes the terse report.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    writeln!(o, "Target: {}", s.run.target)?;
    let row = |label: &str, n: u64, rate: f64, tput: f64, l: &super::Percentiles, ok: f64| {
        vec![
            label.to_string(),
            n.to_string(),
            format!("{rate:.2}"),
            format!("{tput:.2}"),
            go_duration(l.mean),
            go_duration(l.p95),
            go_duration(l.p99),
            format!("{:.2}%", ok * 100.0),
        ]
    };
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
    for op in natural_order(&s.ops) {
        lines.push(row(
            &op.name,
            op.requests,
            op.rps,
            op.throughput,
            &op.latency_ms,
            op.success_ratio,
        ));
    }
    lines.push(vec!["---".to_string(); 8]);
    lines.push(row(
        "TOTAL",
        s.requests,
        s.rps,
        s.throughput,
        &s.latency_ms,
        s.success_ratio,
    ));
    tabwrite(&lines, o)?;
    super::nodes::write_after_peer_layout(s, o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_as_go_writes_them() {
        assert_eq!(go_duration(0.0), "0s");
        assert_eq!(go_duration(0.000_5), "500ns");
        assert_eq!(go_duration(0.257_346), "257.346µs");
        assert_eq!(go_duration(0.397), "397µs");
        assert_eq!(go_duration(1.5), "1.5ms");
        assert_eq!(go_duration(92.16), "92.16ms");
        assert_eq!(go_duration(10_094.965_987), "10.094965987s");
        assert_eq!(go_duration(90_500.0), "1m30.5s");
        assert_eq!(go_duration(3_600_000.0), "1h0m0s");
    }

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
