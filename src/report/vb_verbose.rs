//! vault-benchmark's verbose report (`-report_mode=verbose`): one section per test
//! (natural order), then `TOTAL`, each in the layout of the vegeta text report that
//! vault-benchmark prints (Requests, Duration, Latencies, Bytes In, Bytes Out, Success,
//! Status Codes, Error Set), with vblast's figures. Bytes, status codes and errors are
//! counted for the whole run, so they are shown in `TOTAL` (and in a single test's
//! section, where they are the same); bytes are whole HTTP messages, headers included.
//! `wait` is 0: vblast's duration already runs to the last response.

use std::io::{self, Write};

use super::vb_terse::{go_duration, natural_order, tabwrite};
use super::{Percentiles, Summary};

struct Section<'a> {
    requests: u64,
    rate: f64,
    throughput: f64,
    latency: &'a Percentiles,
    success: f64,
    run_wide: bool,
}

fn section(s: &Summary, name: &str, x: &Section, o: &mut dyn Write) -> io::Result<()> {
    writeln!(o)?;
    writeln!(o, "{name}")?;
    let d = go_duration(s.duration_s * 1000.0);
    let l = x.latency;
    let mut lines = vec![
        vec![
            "Requests".into(),
            "[total, rate, throughput]".into(),
            format!("{}, {:.2}, {:.2}", x.requests, x.rate, x.throughput),
        ],
        vec![
            "Duration".into(),
            "[total, attack, wait]".into(),
            format!("{d}, {d}, 0s"),
        ],
        vec![
            "Latencies".into(),
            "[min, mean, 50, 90, 95, 99, max]".into(),
            [l.min, l.mean, l.p50, l.p90, l.p95, l.p99, l.max]
                .map(go_duration)
                .join(", "),
        ],
    ];
    let mean = |n: u64| {
        if s.requests == 0 {
            0.0
        } else {
            n as f64 / s.requests as f64
        }
    };
    if x.run_wide {
        lines.push(vec![
            "Bytes In".into(),
            "[total, mean]".into(),
            format!("{}, {:.2}", s.bytes_received, mean(s.bytes_received)),
        ]);
        lines.push(vec![
            "Bytes Out".into(),
            "[total, mean]".into(),
            format!("{}, {:.2}", s.bytes_sent, mean(s.bytes_sent)),
        ]);
    }
    lines.push(vec![
        "Success".into(),
        "[ratio]".into(),
        format!("{:.2}%", x.success * 100.0),
    ]);
    if x.run_wide {
        // vegeta counts a request without a response under code 0.
        let e = &s.errors;
        let no_response = e.connect + e.read + e.write + e.timeout;
        let mut codes: Vec<(String, u64)> = s.status.iter().map(|(c, n)| (c.clone(), *n)).collect();
        if no_response > 0 {
            codes.push(("0".into(), no_response));
        }
        codes.sort();
        let cells: String = codes.iter().map(|(c, n)| format!("{c}:{n}  ")).collect();
        lines.push(vec!["Status Codes".into(), "[code:count]".into(), cells]);
    }
    tabwrite(&lines, o)?;
    if x.run_wide {
        writeln!(o, "Error Set:")?;
        for m in s.error_messages.keys() {
            writeln!(o, "{m}")?;
        }
    }
    Ok(())
}

/// Writes the verbose report.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    let single = s.ops.len() == 1;
    for op in natural_order(&s.ops) {
        section(
            s,
            &op.name,
            &Section {
                requests: op.requests,
                rate: op.rps,
                throughput: op.throughput,
                latency: &op.latency_ms,
                success: op.success_ratio,
                run_wide: single,
            },
            o,
        )?;
    }
    section(
        s,
        "TOTAL",
        &Section {
            requests: s.requests,
            rate: s.rps,
            throughput: s.throughput,
            latency: &s.latency_ms,
            success: s.success_ratio,
            run_wide: true,
        },
        o,
    )?;
    super::nodes::write_after_peer_layout(s, o)
}
