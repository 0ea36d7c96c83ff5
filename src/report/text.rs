//! The text report: vault-benchmark's terse table (per operation and total; a thin tail
//! marked `*`, with a note of the samples it rests on), then the run's duration, where
//! latency is measured from, connections, status codes and errors; with `--ci`, the 95th and
//! 99th percentiles' confidence intervals at the end of each row (`ci.rs`).

use std::io::{self, Write};

use super::tails::mark;
use super::{Percentiles, Summary, fmt_ms};

/// Writes the terse table and what follows it.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    render_with(s, false, o)
}

/// The same, with each percentile's confidence interval beside it when `ci` (`--ci`).
pub fn render_with(s: &Summary, ci: bool, o: &mut dyn Write) -> io::Result<()> {
    super::write_header(s, o)?;
    writeln!(o)?;
    table(s, ci, o)?;
    super::nodes::write(s, o)?;
    super::clock::write(s, o)?;
    writeln!(o)?;
    footer(s, o)?;
    match &s.server {
        Some(server) => crate::server_stats::summary::write_text(server, o),
        None => Ok(()),
    }
}

/// The table of operations and their total, and the note on its thin tails.
fn table(s: &Summary, ci: bool, o: &mut dyn Write) -> io::Result<()> {
    let open = s.is_open();
    // The first column is as wide as the longest operation name (14 at least).
    let width = s.ops.iter().map(|op| op.name.len()).fold(14, usize::max);
    write!(
        o,
        "{:<width$} {:>9} {:>11} {:>11} {:>10} {:>10} {:>10} {:>13}",
        "op", "count", "rate", "throughput", "mean", "95th%", "99th%", "successRatio"
    )?;
    if open {
        write!(o, "   {:>10} {:>10}", "svc 95th%", "svc 99th%")?;
    }
    if ci {
        write!(o, "   {:>17} {:>17}", "95th% CI", "99th% CI")?;
    }
    writeln!(o)?;
    for op in &s.ops {
        let row = TextRow {
            name: &op.name,
            count: op.requests,
            rate: op.rps,
            throughput: op.throughput,
            latency: &op.latency_ms,
            service: &op.service_ms,
            success_ratio: op.success_ratio,
        };
        row.write(o, open, ci, width)?;
    }
    let total = TextRow {
        name: "total",
        count: s.requests,
        rate: s.rps,
        throughput: s.throughput,
        latency: &s.latency_ms,
        service: &s.service_ms,
        success_ratio: s.success_ratio,
    };
    total.write(o, open, ci, width)?;
    // Thin tails among the table's percentiles, with the samples each rests on.
    let mut thin = Vec::new();
    // (Service time counts the same requests: its columns are marked alike.)
    for (name, p) in s
        .ops
        .iter()
        .map(|op| (op.name.as_str(), &op.latency_ms))
        .chain([("total", &s.latency_ms)])
    {
        for (key, label) in [("p95", "95th%"), ("p99", "99th%")] {
            if let Some(n) = p.thin(key) {
                thin.push(format!("{name} {label} rests on {n}"));
            }
        }
    }
    if let Some(note) = super::tails::note(&thin) {
        writeln!(o, "{note}")?;
    }
    if ci {
        let level = crate::stats::interval::Confidence::new(s.latency_ms.confidence);
        writeln!(o, "{}", super::ci::note(level.unwrap_or_default()))?;
    }
    Ok(())
}

/// What follows the table: duration, where latency is measured from, connections,
/// status codes and errors.
fn footer(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    let open = s.is_open();
    writeln!(
        o,
        "Duration {:.2}s, {}, {} ok, {} failed.",
        s.duration_s,
        super::plural(s.requests, "request", "requests"),
        s.ok,
        s.failed
    )?;
    if open {
        schedule_lines(s, o)?;
    } else {
        writeln!(
            o,
            "Latency is measured from the actual send (closed model: no coordinated-omission correction; use -R for it)."
        )?;
    }
    if s.connect_ms.count > 0 {
        write!(
            o,
            "Connections: {} opened, connect mean {} p99 {}",
            s.connections_opened,
            fmt_ms(s.connect_ms.mean),
            fmt_ms(s.connect_ms.p99)
        )?;
        if s.tls_ms.count > 0 {
            write!(
                o,
                ", TLS handshake mean {} p99 {} ({} resumed)",
                fmt_ms(s.tls_ms.mean),
                fmt_ms(s.tls_ms.p99),
                s.tls_resumed
            )?;
        }
        if s.server_closes > 0 {
            write!(
                o,
                ", {} closed by the server and re-opened",
                s.server_closes
            )?;
        }
        writeln!(o)?;
    }
    let codes: Vec<String> = s.status.iter().map(|(c, n)| format!("{c}: {n}")).collect();
    writeln!(
        o,
        "Status codes: {}",
        if codes.is_empty() {
            "none".into()
        } else {
            codes.join(", ")
        }
    )?;
    for n in &s.notes {
        writeln!(o, "Note: {n}")?;
    }
    writeln!(o, "Errors: {}", errors_line(s))?;
    for (m, n) in &s.error_messages {
        writeln!(o, "  {n} x {}", message_line(s, m))?;
    }
    connection_failures(s, "", o)?;
    crate::stats::phases::write(s.run.setup_s, &s.run.setup_phases, o)
}

/// The failed requests by kind, `connect 0, read 2, write 0, timeout 0, non-2xx 3` and
/// `, throttled N` when a quota throttled some: they sum to the failed requests.
pub(super) fn errors_line(s: &Summary) -> String {
    let e = &s.errors;
    let mut line = format!(
        "connect {}, read {}, write {}, timeout {}, non-2xx {}",
        e.connect, e.read, e.write, e.timeout, e.status
    );
    if s.throttled > 0 {
        line.push_str(&format!(", throttled {}", s.throttled));
    }
    line
}

/// A failed requests' message as listed: a failed status with what it means and what the
/// server said with it (so that a URL answered 403 or 404 says why it failed).
pub(super) fn message_line(s: &Summary, m: &str) -> String {
    // (a message with more words, as a quota's 429 has, is listed as it is)
    let code = match crate::stats::message_status(m) {
        Some(c) if m.len() == "HTTP 000".len() => c.to_string(),
        _ => return m.to_string(),
    };
    let mut line = m.to_string();
    if let Some(meaning) = failed_status(&code) {
        line.push(' ');
        line.push_str(meaning);
    }
    if let Some(said) = s.failed_answers.get(&code) {
        line.push_str("; the server said: ");
        line.push_str(said);
    }
    line
}

/// The line of the connections that failed with no request failing with them, and their
/// messages (each line after `indent`); nothing when there were none.
pub(super) fn connection_failures(s: &Summary, indent: &str, o: &mut dyn Write) -> io::Result<()> {
    let c = &s.connection_failures;
    if c.is_empty() {
        return Ok(());
    }
    writeln!(
        o,
        "{indent}Connection failures (no request failed): {} ({})",
        c.total,
        c.kinds()
    )?;
    for (m, n) in &c.messages {
        writeln!(o, "{indent}  {n} x {m}")?;
    }
    Ok(())
}

/// The open model's lines: where latency is measured from, how late requests went out,
/// and the requests never sent with their own latency figure beside every scheduled one's.
fn schedule_lines(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    writeln!(
        o,
        "Latency is measured from each request's intended start (corrected for coordinated omission); svc columns are service time from the actual send (uncorrected)."
    )?;
    writeln!(
        o,
        "Started late (>10ms behind schedule): {}   largest lag: {}",
        s.late,
        fmt_ms(s.max_lag_ms)
    )?;
    writeln!(
        o,
        "Not sent (scheduled in the run's window, the run ended first): {}",
        s.not_sent
    )?;
    if s.unsent_ms.is_empty() {
        return Ok(());
    }
    let three = |p: &Percentiles| {
        format!(
            "p50 {}  p99 {}  max {}",
            fmt_ms(p.p50),
            fmt_ms(p.p99),
            fmt_ms(p.max)
        )
    };
    writeln!(
        o,
        "Not sent, each as waiting until the run ended (at least): {}",
        three(&s.unsent_ms)
    )?;
    writeln!(
        o,
        "Every scheduled request, sent or not (as wrk2's tail counts them): {}",
        three(&s.scheduled_ms)
    )
}

/// What a 4xx or 5xx status means, for the failure lines (None for the others).
fn failed_status(code: &str) -> Option<&'static str> {
    let meaning = match code {
        "400" => "Bad Request: the server refused the request as malformed",
        "401" => "Unauthorized: no valid credentials were sent",
        "403" => {
            "Forbidden: permission denied (a missing or wrong token, or a policy that does not allow the path)"
        }
        "404" => "Not Found: nothing at this path",
        "405" => "Method Not Allowed",
        "412" => "Precondition Failed (a standby or performance replica not caught up yet)",
        "429" => "Too Many Requests: a rate limit",
        "500" => "Internal Server Error",
        "502" => "Bad Gateway",
        "503" => "Service Unavailable (sealed, standby or in maintenance)",
        "504" => "Gateway Timeout",
        c if c.len() == 3 && (c.starts_with('4') || c.starts_with('5')) => "(a failed status)",
        _ => return None,
    };
    Some(meaning)
}

/// One line of the table.
struct TextRow<'a> {
    name: &'a str,
    count: u64,
    rate: f64,
    throughput: f64,
    latency: &'a Percentiles,
    service: &'a Percentiles,
    success_ratio: f64,
}

impl TextRow<'_> {
    fn write(&self, o: &mut dyn Write, open: bool, ci: bool, width: usize) -> io::Result<()> {
        write!(
            o,
            "{:<width$} {:>9} {:>11.2} {:>11.2} {:>10} {:>10} {:>10} {:>12.2}%",
            self.name,
            self.count,
            self.rate,
            self.throughput,
            fmt_ms(self.latency.mean),
            mark(fmt_ms(self.latency.p95), self.latency.thin("p95")),
            mark(fmt_ms(self.latency.p99), self.latency.thin("p99")),
            self.success_ratio * 100.0
        )?;
        if open {
            write!(
                o,
                "   {:>10} {:>10}",
                mark(fmt_ms(self.service.p95), self.service.thin("p95")),
                mark(fmt_ms(self.service.p99), self.service.thin("p99"))
            )?;
        }
        if ci {
            let cell = |key| super::ci::cell(self.latency.interval(key));
            write!(o, "   {:>17} {:>17}", cell("p95"), cell("p99"))?;
        }
        writeln!(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::RunInfo;
    use crate::stats::Stats;

    #[test]
    fn long_operation_names_widen_their_column() {
        let mut stats = Stats::new(2);
        for op in &mut stats.ops {
            op.requests = 1;
            op.ok = 1;
            op.latency.record(1000);
        }
        stats.elapsed_s = 1.0;
        let run = RunInfo {
            operation: "a,b".into(),
            ..RunInfo::sample("http://127.0.0.1:8200", 1)
        };
        let names = [
            "kv-read".to_string(),
            "database-static-creds-read".to_string(),
        ];
        let s = Summary::new(run, &stats, &names);
        let mut out = Vec::new();
        render(&s, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        // Every row's count column starts where the header's does.
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.starts_with("op ") || l.starts_with("kv-read ") || l.starts_with("database-")
            })
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        let header_end = lines[0].find("count").unwrap() + "count".len();
        for l in &lines[1..] {
            let name = l.split_whitespace().next().unwrap();
            assert!(l[name.len()..].starts_with(' '), "{text}");
            let count_end = l[..header_end].trim_end().len();
            assert_eq!(count_end, header_end, "{l:?} in\n{text}");
        }
        assert!(
            text.contains("Duration 1.00s, 2 requests, 2 ok, 0 failed."),
            "{text}"
        );
    }
}
