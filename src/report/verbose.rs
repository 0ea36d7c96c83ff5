//! The verbose report (`--format verbose`, vault-benchmark's word): per operation its
//! requests, rates, success ratio and latency (min, mean, stdev, 50, 90, 95, 99, 99.9, max;
//! corrected and service time in the open model), then for the run: bytes in and out, status
//! codes, the distinct errors with their counts, and the setup and cleanup times. A thin
//! tail (`tails.rs`) is marked `*` and followed by a line of the samples it rests on. With
//! `--ci`, each latency line is followed by one of its percentiles' confidence intervals
//! (`ci.rs`), and a `CI:` note ends the report.

use std::io::{self, Write};

use super::tails::{self, mark};
use super::{Percentiles, Summary, fmt_ms};

/// Label column width.
const W: usize = 56;

/// The percentiles of the latency line that have an interval, with their labels.
const CI_KEYS: [(&str, &str); 5] = [
    ("p50", "50"),
    ("p90", "90"),
    ("p95", "95"),
    ("p99", "99"),
    ("p999", "99.9"),
];

/// `--ci`: the line of the intervals of `p`'s percentiles (`[50, 90, 95, 99, 99.9]`).
fn intervals(o: &mut dyn Write, label: &str, p: &Percentiles) -> io::Result<()> {
    let level = super::ci::level_of(p);
    let labels: Vec<&str> = CI_KEYS.iter().map(|(_, l)| *l).collect();
    let cells: Vec<String> = CI_KEYS
        .iter()
        .map(|(key, _)| super::ci::cell(p.interval(key)))
        .collect();
    writeln!(
        o,
        "  {:<W$}{}",
        format!("{label} {} CI [{}]", level.label(), labels.join(", ")),
        cells.join(", ")
    )
}

fn latencies(o: &mut dyn Write, label: &str, p: &Percentiles, ci: bool) -> io::Result<()> {
    let keys = ["", "", "", "p50", "p90", "p95", "p99", "p999", ""];
    let cells: Vec<String> = [
        p.min, p.mean, p.stdev, p.p50, p.p90, p.p95, p.p99, p.p999, p.max,
    ]
    .into_iter()
    .zip(keys)
    .map(|(v, key)| mark(fmt_ms(v), p.thin(key)))
    .collect();
    writeln!(
        o,
        "  {:<W$}{}",
        format!("{label} [min, mean, stdev, 50, 90, 95, 99, 99.9, max]"),
        cells.join(", ")
    )?;
    // The thin tails (`*`) and the samples above each.
    let thin: Vec<String> = tails::KEYS
        .iter()
        .filter(|(key, _, _)| keys.contains(key))
        .filter_map(|(key, _, label)| p.thin(key).map(|n| format!("{label}: {n}")))
        .collect();
    if !thin.is_empty() {
        writeln!(
            o,
            "  {:<W$}{}",
            format!(
                "* Thin tails [percentile: samples above, under {}]",
                tails::MIN_SAMPLES_ABOVE
            ),
            thin.join(", ")
        )?;
    }
    if ci {
        intervals(o, label, p)?;
    }
    Ok(())
}

/// Writes the verbose report.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    render_with(s, false, o)
}

/// The same, with each latency line's intervals under it when `ci` (`--ci`).
pub fn render_with(s: &Summary, ci: bool, o: &mut dyn Write) -> io::Result<()> {
    super::write_header(s, o)?;
    let open = s.is_open();
    let latency_label = if open { "Corrected" } else { "Latency" };
    // Several operations on the kernel's clock: each one's kernel figures under its own.
    let kernel_ops = s.clock.as_ref().map_or(&[][..], |c| &c.ops[..]);
    for (i, op) in s.ops.iter().enumerate() {
        writeln!(o)?;
        writeln!(o, "{}", op.name)?;
        writeln!(
            o,
            "  {:<W$}{}, {:.2}, {:.2}",
            "Requests [total, rate, throughput]", op.requests, op.rps, op.throughput
        )?;
        latencies(o, latency_label, &op.latency_ms, ci)?;
        if open {
            latencies(o, "Service", &op.service_ms, ci)?;
        }
        if let Some(k) = kernel_ops.get(i) {
            latencies(o, "Kernel latency", &k.kernel_latency_ms, ci)?;
            latencies(o, "Kernel service", &k.kernel_service_ms, ci)?;
        }
        writeln!(
            o,
            "  {:<W$}{:.2}%",
            "Success [ratio]",
            op.success_ratio * 100.0
        )?;
    }
    writeln!(o)?;
    writeln!(o, "total")?;
    writeln!(
        o,
        "  {:<W$}{}, {:.2}, {:.2}",
        "Requests [total, rate, throughput]", s.requests, s.rps, s.throughput
    )?;
    writeln!(o, "  {:<W$}{:.2}s", "Duration [measured]", s.duration_s)?;
    latencies(o, latency_label, &s.latency_ms, ci)?;
    if open {
        latencies(o, "Service", &s.service_ms, ci)?;
    }
    bytes_and_codes(s, o)?;
    for p in &s.run.setup_phases {
        writeln!(o, "  {:<W$}{}", "Setup phase", p.text())?;
    }
    if ci {
        let level = super::ci::level_of(&s.latency_ms);
        writeln!(o, "  {}", super::ci::note(level))?;
    }
    super::nodes::write(s, o)
}

/// The run's bytes, success, status codes, errors, and setup and cleanup times.
fn bytes_and_codes(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    let mean = |bytes: u64| {
        if s.requests > 0 {
            bytes as f64 / s.requests as f64
        } else {
            0.0
        }
    };
    writeln!(
        o,
        "  {:<W$}{}, {:.2}",
        "Bytes In [total, mean]",
        s.bytes_received,
        mean(s.bytes_received)
    )?;
    writeln!(
        o,
        "  {:<W$}{}, {:.2}",
        "Bytes Out [total, mean]",
        s.bytes_sent,
        mean(s.bytes_sent)
    )?;
    writeln!(
        o,
        "  {:<W$}{:.2}%",
        "Success [ratio]",
        s.success_ratio * 100.0
    )?;
    let codes: Vec<String> = s.status.iter().map(|(c, n)| format!("{c}:{n}")).collect();
    writeln!(
        o,
        "  {:<W$}{}",
        "Status Codes [code:count]",
        codes.join("  ")
    )?;
    let e = &s.errors;
    write!(
        o,
        "  {:<W$}{}, {}, {}, {}, {}",
        "Errors [connect, read, write, timeout, status]",
        e.connect,
        e.read,
        e.write,
        e.timeout,
        e.status
    )?;
    if s.throttled > 0 {
        write!(o, " (and {} throttled)", s.throttled)?;
    }
    writeln!(o)?;
    writeln!(o, "  Error Set:")?;
    for (m, n) in &s.error_messages {
        writeln!(o, "  {n} x {}", super::text::message_line(s, m))?;
    }
    super::text::connection_failures(s, "  ", o)?;
    writeln!(
        o,
        "  {:<W$}{:.3}s, {:.3}s",
        "Setup, cleanup [time]", s.run.setup_s, s.run.cleanup_s
    )
}
