//! ApacheBench 2.4's report (`--format ab`): its labels, units, number formats and
//! definitions, line for line, so that scripts that parse ab's output read vblast's; and
//! ab `-e`'s percentile CSV (`--ab-csv`).
//!
//! ab keeps every request's times and sorts them; vblast keeps histograms (3 significant
//! digits), so a median or percentile here is the histogram's, within 0.1% of the exact one.
//! The rows of "Connection Times (ms)" are: Connect, the TCP connect of each request (zero
//! for a request that reused a keep-alive connection, as in ab); Processing, the service
//! time (from the request's first byte written to the response's last byte read);
//! Waiting, from the request's first byte written to the response's first byte; Total,
//! the latency (with `-R`, the corrected latency, from the intended start).

use std::io::{self, Write};

use crate::report::Summary;
use crate::stats::Hist;

/// ab's percentage rows.
const PERCS: [u64; 9] = [50, 66, 75, 80, 90, 95, 98, 99, 100];

/// What ab's report needs beyond the figures every format shows.
#[derive(Clone, Debug, Default)]
pub struct AbFacts {
    /// The first response's `Server` header (empty when none came).
    pub server: String,
    pub doc_length: u64,
    /// Responses whose body length differed from the first one's.
    pub length_failures: u64,
    pub body_bytes: u64,
    pub kept_alive: u64,
    /// Per request: connect time (0 when the connection was reused).
    pub connect: Hist,
    /// Per request: first byte written to first byte read.
    pub waiting: Hist,
}

/// How ab's options change its report (`vblast ab`); the default is ab's plain report.
#[derive(Clone, Debug, Default)]
pub struct AbStyle {
    /// `-l`: "Document Length: Variable", and no Length failures.
    pub variable_length: bool,
    /// `-p`/`-u`: "Total body sent" (request bytes, headers included, as ab counts them)
    /// and the sent and total transfer rates.
    pub body_sent: bool,
    /// `-S`: the short Connection Times table (min, avg, max) and no warnings.
    pub no_confidence: bool,
    /// `-d`: no percentage table.
    pub no_percentiles: bool,
    /// https: the TLS lines ab prints under "Server Port".
    pub tls: Option<TlsFacts>,
    /// ab's progress is on (`vblast ab` without `-q`): "Completed N requests" go to
    /// stderr, and the banner ends "(be patient)" without ab's dots and "done".
    pub heartbeat: bool,
    /// Vault operations: their answers differ in length from one request to the next
    /// (a secret's version, a token, a lease id), so Length failures are not counted, as
    /// with ab's `-l`, and a line under the report says so.
    pub vault_bodies: bool,
    /// `--ci`: each percentage row but 100% ends in its confidence interval, in
    /// parentheses after the figure as ab's own 100% row ends in "(longest request)", and a
    /// `CI:` note goes under the report. Off, the table is ab's alone.
    pub ci: bool,
}

impl AbStyle {
    /// The layout a run's own (redacted) scenario implies: `Total body sent` when its
    /// request has a body (`vblast run -p FILE --format ab`, and the same run re-rendered).
    pub fn of_scenario(scenario: &serde_json::Value) -> AbStyle {
        let vault = scenario.pointer("/workload/vault").is_some();
        AbStyle {
            body_sent: scenario
                .pointer("/workload/url/body")
                .is_some_and(|b| !b.is_null()),
            variable_length: vault,
            vault_bodies: vault,
            ..AbStyle::default()
        }
    }
}

/// ab's TLS lines, from a handshake with the run's settings (kept in the results file as
/// `tls_probe`, so that a saved run prints them again).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TlsFacts {
    /// `SSL/TLS Protocol`: version, cipher (OpenSSL's name), server key bits, cipher bits.
    pub protocol: String,
    /// `Server Temp Key`: the key exchange group, as OpenSSL names it ("X25519 253 bits").
    pub temp_key: Option<String>,
    /// `TLS Server Name`: the SNI sent (none for an IP address).
    pub server_name: Option<String>,
}

/// Host, port and path of a target URL as ab shows them.
fn split_target(target: &str) -> (String, u16, String) {
    let (tls, rest) = match target.split_once("://") {
        Some((scheme, rest)) => (scheme.eq_ignore_ascii_case("https"), rest),
        None => (false, target),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let default = if tls { 443 } else { 80 };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => match p.parse() {
            Ok(p) => (h, p),
            Err(_) => (authority, default),
        },
        _ => (authority, default),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host.to_string(), port, path.to_string())
}

/// ab's `ap_round_ms`: microseconds to whole milliseconds, rounded half up.
fn round_ms(us: u64) -> u64 {
    (us + 500) / 1000
}

/// One row of "Connection Times (ms)": min, mean, sd, median, max as ab prints them
/// (mean and median rounded to whole ms, sd as the sample deviation in ms).
struct AbRow {
    min: u64,
    mean: u64,
    sd: f64,
    median: u64,
    max: u64,
}

impl AbRow {
    fn of(h: &Hist) -> AbRow {
        let h = &h.0;
        if h.is_empty() {
            return AbRow {
                min: 0,
                mean: 0,
                sd: 0.0,
                median: 0,
                max: 0,
            };
        }
        let n = h.len() as f64;
        // ab divides by n - 1 (the sample variance); the histogram by n.
        let sd = if h.len() > 1 {
            h.stdev() * (n / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        AbRow {
            min: round_ms(h.min()),
            mean: round_ms(h.mean() as u64),
            sd: sd / 1000.0,
            median: round_ms(h.median_equivalent(h.value_at_quantile(0.5))),
            max: round_ms(h.max()),
        }
    }

    fn write(&self, o: &mut dyn Write, label: &str) -> io::Result<()> {
        writeln!(
            o,
            "{label:<12}{:5} {:4} {:5.1} {:6} {:7}",
            self.min, self.mean, self.sd, self.median, self.max
        )
    }

    /// ab's warning when mean and median are far apart for the deviation.
    fn sane(&self, o: &mut dyn Write, what: &str) -> io::Result<()> {
        let d = (self.mean as f64 - self.median as f64).abs();
        if d > 2.0 * self.sd {
            writeln!(
                o,
                "ERROR: The median and mean for {what} are more than twice the standard\n       deviation apart. These results are NOT reliable."
            )
        } else if d > self.sd {
            writeln!(
                o,
                "WARNING: The median and mean for {what} are not within a normal deviation\n        These results are probably not that reliable."
            )
        } else {
            Ok(())
        }
    }
}

/// The value at 0-based rank `index` of the sorted samples, microseconds.
fn at_rank(h: &Hist, index: u64) -> u64 {
    let n = h.0.len();
    if n == 0 {
        return 0;
    }
    let q = ((index + 1).min(n)) as f64 / n as f64;
    // The middle of the value's bucket: within half a bucket (0.05%) of the exact value.
    h.0.median_equivalent(h.0.value_at_quantile(q))
}

/// Non-2xx responses, as ab counts them (any status outside 200..300).
fn non_2xx(s: &Summary) -> u64 {
    s.status
        .iter()
        .filter(|(code, _)| !code.starts_with('2') || code.len() != 3)
        .map(|(_, n)| n)
        .sum()
}

/// Writes ab's report.
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    render_with(s, &AbStyle::default(), o)
}

/// Writes ab's report as ab's options (`style`) lay it out.
pub fn render_with(s: &Summary, style: &AbStyle, o: &mut dyn Write) -> io::Result<()> {
    server_and_document(s, style, o)?;
    counts(s, style, o)?;
    if s.requests == 0 || s.latency_hist.is_empty() {
        return Ok(());
    }
    connection_times(s, style, o)?;
    percentages(s, style, o)?;
    notes(s, style, o)?;
    crate::report::nodes::write_after_peer_layout(s, o)
}

/// ab's "Server Software": the `Server` header up to its first space or control
/// character, as ab copies it ("nginx/1.22.1", not "nginx/1.22.1 (Debian)").
fn server_software(header: &str) -> &str {
    header.split(|c: char| c <= ' ').next().unwrap_or_default()
}

/// vblast's notes below ab's report, where no ab parser reads: why no Length failures
/// are counted on Vault's answers, which percentage rows rest on few requests, and with
/// `--ci` what the intervals are.
fn notes(s: &Summary, style: &AbStyle, o: &mut dyn Write) -> io::Result<()> {
    let n = s.latency_hist.0.len();
    let thin: Vec<String> = if style.no_percentiles || n <= 1 {
        Vec::new()
    } else {
        PERCS
            .iter()
            .filter(|&&p| p < 100)
            .filter_map(|&p| crate::report::tails::thin(n, p * 10_000).map(|above| (p, above)))
            .map(|(p, above)| format!("{p}% ({above} above)"))
            .collect()
    };
    if !thin.is_empty() {
        writeln!(o)?;
        writeln!(
            o,
            "Thin tail: {} {} on fewer than {} requests above",
            thin.join(", "),
            if thin.len() == 1 { "rests" } else { "rest" },
            crate::report::tails::MIN_SAMPLES_ABOVE
        )?;
    }
    if style.vault_bodies {
        if thin.is_empty() {
            writeln!(o)?;
        }
        writeln!(
            o,
            "Length failures are not counted: Vault's answers differ in length from one request to the next (as ab -l)"
        )?;
    }
    if style.ci && !style.no_percentiles && n > 1 {
        if thin.is_empty() && !style.vault_bodies {
            writeln!(o)?;
        }
        writeln!(
            o,
            "{}",
            crate::report::ci::note(crate::report::ci::level_of(&s.latency_ms))
        )?;
    }
    Ok(())
}

/// From the banner to `Document Length`.
fn server_and_document(s: &Summary, style: &AbStyle, o: &mut dyn Write) -> io::Result<()> {
    let ab = &s.ab;
    let (host, port, path) = split_target(&s.run.target);
    let path = if s.run.target.contains("://") && !s.run.operation.is_empty() {
        // Vault mode: the target is the server; the operations stand for the document.
        if path == "/" {
            format!("/ ({})", s.run.operation)
        } else {
            path
        }
    } else {
        path
    };
    writeln!(
        o,
        "This is vblast {}, reporting as ApacheBench, Version 2.3 does",
        s.vblast_version
    )?;
    writeln!(o)?;
    if style.heartbeat {
        writeln!(o, "Benchmarking {host} (be patient)")?;
    } else {
        writeln!(o, "Benchmarking {host} (be patient).....done")?;
    }
    if s.run.interrupted {
        writeln!(
            o,
            "Interrupted: the figures below cover the run up to the stop."
        )?;
    }
    if let Some(w) = &s.schedule_not_kept {
        writeln!(o, "WARNING: {w}.")?;
    }
    writeln!(o)?;
    writeln!(o)?;
    writeln!(o, "Server Software:        {}", server_software(&ab.server))?;
    writeln!(o, "Server Hostname:        {host}")?;
    writeln!(o, "Server Port:            {port}")?;
    if let Some(tls) = &style.tls {
        writeln!(o, "SSL/TLS Protocol:       {}", tls.protocol)?;
        if let Some(k) = &tls.temp_key {
            writeln!(o, "Server Temp Key:        {k}")?;
        }
        if let Some(n) = &tls.server_name {
            writeln!(o, "TLS Server Name:        {n}")?;
        }
    }
    writeln!(o)?;
    writeln!(o, "Document Path:          {path}")?;
    if style.variable_length {
        writeln!(o, "Document Length:        Variable")?;
    } else {
        writeln!(o, "Document Length:        {} bytes", ab.doc_length)?;
    }
    writeln!(o)?;
    Ok(())
}

/// From `Concurrency Level` to `Transfer rate`: counts, failures, bytes and rates.
fn counts(s: &Summary, style: &AbStyle, o: &mut dyn Write) -> io::Result<()> {
    let ab = &s.ab;
    let length_failures = if style.variable_length {
        0
    } else {
        ab.length_failures
    };
    writeln!(o, "Concurrency Level:      {}", s.run.connections)?;
    let t = s.duration_s;
    writeln!(o, "Time taken for tests:   {t:.3} seconds")?;
    let done = s.requests;
    writeln!(o, "Complete requests:      {done}")?;
    let e = &s.errors;
    let exceptions = e.timeout;
    let bad = e.connect + e.read + length_failures + exceptions;
    writeln!(o, "Failed requests:        {bad}")?;
    if bad > 0 {
        writeln!(
            o,
            "   (Connect: {}, Receive: {}, Length: {}, Exceptions: {})",
            e.connect, e.read, length_failures, exceptions
        )?;
    }
    if e.write > 0 {
        writeln!(o, "Write errors:           {}", e.write)?;
    }
    // vblast's own line (ab has none): connections that failed no request.
    let c = &s.connection_failures;
    if !c.is_empty() {
        writeln!(o, "Connection failures:    {} ({})", c.total, c.kinds())?;
    }
    let non2xx = non_2xx(s);
    if non2xx > 0 {
        writeln!(o, "Non-2xx responses:      {non2xx}")?;
    }
    if s.run.keepalive {
        writeln!(o, "Keep-Alive requests:    {}", ab.kept_alive)?;
    }
    writeln!(o, "Total transferred:      {} bytes", s.bytes_received)?;
    if style.body_sent {
        // ab prints this count without a unit.
        writeln!(o, "Total body sent:        {}", s.bytes_sent)?;
    }
    writeln!(o, "HTML transferred:       {} bytes", ab.body_bytes)?;
    if t > 0.0 && done > 0 {
        let d = done as f64;
        writeln!(o, "Requests per second:    {:.2} [#/sec] (mean)", d / t)?;
        writeln!(
            o,
            "Time per request:       {:.3} [ms] (mean)",
            s.run.connections as f64 * t * 1000.0 / d
        )?;
        writeln!(
            o,
            "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
            t * 1000.0 / d
        )?;
        writeln!(
            o,
            "Transfer rate:          {:.2} [Kbytes/sec] received",
            s.bytes_received as f64 / 1024.0 / t
        )?;
        if style.body_sent {
            writeln!(
                o,
                "                        {:.2} kb/s sent",
                s.bytes_sent as f64 / 1024.0 / t
            )?;
            writeln!(
                o,
                "                        {:.2} kb/s total",
                (s.bytes_received + s.bytes_sent) as f64 / 1024.0 / t
            )?;
        }
    }
    Ok(())
}

/// The `Connection Times (ms)` table, and ab's sanity notes under it.
fn connection_times(s: &Summary, style: &AbStyle, o: &mut dyn Write) -> io::Result<()> {
    let ab = &s.ab;
    let total = &s.latency_hist;
    let rows = [
        (
            "Connect:",
            "the initial connection time",
            AbRow::of(&ab.connect),
        ),
        (
            "Processing:",
            "the processing time",
            AbRow::of(&s.service_hist),
        ),
        ("Waiting:", "the waiting time", AbRow::of(&ab.waiting)),
        ("Total:", "the total time", AbRow::of(total)),
    ];
    writeln!(o)?;
    writeln!(o, "Connection Times (ms)")?;
    if style.no_confidence {
        writeln!(o, "              min   avg   max")?;
        for (label, _, row) in &rows {
            // ab's format has no space between avg and max ("%5d %5d%5d").
            writeln!(o, "{label:<12}{:5} {:5}{:5}", row.min, row.mean, row.max)?;
        }
    } else {
        writeln!(o, "              min  mean[+/-sd] median   max")?;
        for (label, _, row) in &rows {
            row.write(o, label)?;
        }
        for (_, what, row) in &rows {
            row.sane(o, what)?;
        }
    }
    Ok(())
}

/// `Percentage of the requests served within a certain time (ms)`.
fn percentages(s: &Summary, style: &AbStyle, o: &mut dyn Write) -> io::Result<()> {
    let total = &s.latency_hist;
    let n = total.0.len();
    if n > 1 && !style.no_percentiles {
        writeln!(o)?;
        writeln!(
            o,
            "Percentage of the requests served within a certain time (ms)"
        )?;
        for p in PERCS {
            if p >= 100 {
                writeln!(o, " 100%  {:5} (longest request)", round_ms(total.0.max()))?;
            } else {
                // A thin tail is said below the table (`notes`): ab adds text only to
                // the 100% line.
                let v = at_rank(total, n * p / 100);
                write!(o, "  {p}%  {:5}", round_ms(v))?;
                if style.ci {
                    let level = crate::report::ci::level_of(&s.latency_ms);
                    let q = p as f64 / 100.0;
                    let (ci, _) = crate::report::ci::at_blocked(
                        &total.0,
                        &s.latency_blocks,
                        q,
                        level,
                        crate::report::ms(v),
                    );
                    write!(o, " ({} CI {})", level.label(), ci_cell(ci.as_ref()))?;
                }
                writeln!(o)?;
            }
        }
    }
    Ok(())
}

/// A percentage row's interval in ab's unit, whole milliseconds widened outwards (the
/// lower bound rounded down, the upper up): "1970-1991 ms", "?" a side unknown, `!` when
/// wider than the value.
fn ci_cell(ci: Option<&crate::report::ci::Ci>) -> String {
    let Some(ci) = ci else {
        return "unknown".into();
    };
    let side = |v: Option<f64>, f: fn(f64) -> f64| v.map_or("?".into(), |v| f(v).to_string());
    let wide = if ci.wide { "!" } else { "" };
    format!(
        "{}-{} ms{wide}",
        side(ci.low, f64::floor),
        side(ci.high, f64::ceil)
    )
}

/// Writes ab `-e`'s CSV: the time in ms within which each percentage (0..100) was served.
pub fn render_csv(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    let total = &s.latency_hist;
    writeln!(o, "Percentage served,Time in ms")?;
    let n = total.0.len();
    for i in 0..=100u64 {
        let us = if n == 0 {
            0
        } else if i == 0 {
            total.0.min()
        } else if i == 100 {
            total.0.max()
        } else {
            at_rank(total, (0.5 + n as f64 * i as f64 / 100.0) as u64)
        };
        writeln!(o, "{i},{:.3}", us as f64 / 1000.0)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_as_ab_shows_them() {
        assert_eq!(
            split_target("http://127.0.0.1:8200/v1/secret/data/foo?x=1"),
            ("127.0.0.1".into(), 8200, "/v1/secret/data/foo?x=1".into())
        );
        assert_eq!(
            split_target("https://vault.example.com"),
            ("vault.example.com".into(), 443, "/".into())
        );
        assert_eq!(
            split_target("http://[::1]:8080/a"),
            ("::1".into(), 8080, "/a".into())
        );
    }

    /// A summary of n requests taking 1, 2, ..., n ms.
    fn thousand() -> Summary {
        of_n(1000)
    }

    fn of_n(n: u64) -> Summary {
        use crate::report::RunInfo;
        use crate::stats::Stats;
        let mut stats = Stats::new(1);
        for ms in 1..=n {
            stats.ops[0].latency.record(ms * 1000);
            stats.ops[0].service.record(ms * 1000);
            stats.ops[0].requests += 1;
            stats.ops[0].ok += 1;
        }
        stats.elapsed_s = 2.0;
        let run = RunInfo {
            keepalive: false,
            ..RunInfo::sample("http://127.0.0.1:8200/v1/sys/health", 10)
        };
        Summary::new(run, &stats, &["GET".to_string()])
    }

    #[test]
    fn server_software_is_cut_at_the_first_space_and_connect_includes_tls() {
        assert_eq!(server_software("nginx/1.22.1 (Debian)"), "nginx/1.22.1");
        assert_eq!(server_software("Apache/2.4\tx"), "Apache/2.4");
        assert_eq!(server_software(""), "");
        use crate::report::RunInfo;
        use crate::stats::Stats;
        let mut stats = Stats::new(1);
        stats.ops[0].latency.record(9000);
        stats.ops[0].requests = 2;
        stats.ops[0].latency.record(9000);
        stats.connect.record(1000);
        stats.connect.record(1000);
        stats.connect_tls.record(5000);
        stats.connect_tls.record(5000);
        stats.elapsed_s = 1.0;
        let run = RunInfo {
            keepalive: false,
            ..RunInfo::sample("https://127.0.0.1:8200/v1/sys/health", 1)
        };
        let s = Summary::new(run, &stats, &["GET".to_string()]);
        let mut out = Vec::new();
        render(&s, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("Connect:        5    5   0.0      5       5\n"),
            "{text}"
        );
    }

    #[test]
    fn the_thin_tail_note_goes_below_the_table() {
        let s = of_n(500);
        let mut out = Vec::new();
        render(&s, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\n  99%    496\n"), "{text}");
        assert!(
            text.ends_with(
                " 100%    500 (longest request)\n\nThin tail: 99% (5 above) rests on fewer than 10 requests above\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn percentage_rows_and_csv_take_abs_ranks() {
        let s = thousand();
        let mut out = Vec::new();
        render(&s, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        // ab: the value at 0-based rank done * p / 100 of the sorted times.
        for (p, ms) in [(50, 501), (66, 661), (90, 901), (99, 991)] {
            let line = format!("  {p}%  {ms:5}\n");
            assert!(text.contains(&line), "no {line:?} in\n{text}");
        }
        assert!(text.contains(" 100%   1000 (longest request)\n"), "{text}");
        assert!(text.contains("Requests per second:    500.00 [#/sec] (mean)\n"));
        assert!(text.contains("Time per request:       20.000 [ms] (mean)\n"));
        assert!(
            text.contains("Total:          1  501 288.8    500    1000\n"),
            "{text}"
        );
        let mut csv = Vec::new();
        render_csv(&s, &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let rows: Vec<&str> = csv.lines().collect();
        assert_eq!(rows.len(), 102);
        // ab -e: rank (0.5 + done * i / 100), 0-based.
        for (i, ms) in [(0, 1.0), (1, 11.0), (50, 501.0), (66, 661.0), (100, 1000.0)] {
            let (p, t) = rows[i + 1].split_once(',').unwrap();
            assert_eq!(p, i.to_string());
            let t: f64 = t.parse().unwrap();
            // Histogram precision: within 0.1% of the exact value.
            assert!((t - ms).abs() <= ms * 0.001, "{i}%: {t} ms, not {ms}");
        }
        // Ranks round half up: of 30 requests, 5% is rank 0.5 + 1.5 = 2 (0-based), 3 ms.
        let mut csv = Vec::new();
        render_csv(&of_n(30), &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let five = csv.lines().nth(6).and_then(|l| l.strip_prefix("5,"));
        let five: f64 = five.unwrap().parse().unwrap();
        assert!((five - 3.0).abs() <= 0.003, "{csv}");
    }

    #[test]
    fn abs_options_lay_the_report_out_as_ab_does() {
        let s = thousand();
        let style = AbStyle {
            variable_length: true,
            body_sent: true,
            no_confidence: true,
            no_percentiles: true,
            tls: Some(TlsFacts {
                protocol: "TLSv1.3,TLS_AES_128_GCM_SHA256,256,128".into(),
                temp_key: Some("X25519 253 bits".into()),
                server_name: Some("vault.example".into()),
            }),
            ..AbStyle::default()
        };
        let mut out = Vec::new();
        render_with(&s, &style, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let expect = [
            "Server Port:            8200\nSSL/TLS Protocol:       TLSv1.3,TLS_AES_128_GCM_SHA256,256,128\nServer Temp Key:        X25519 253 bits\nTLS Server Name:        vault.example\n\nDocument Path:",
            "Document Length:        Variable\n",
            "Total transferred:      0 bytes\nTotal body sent:        0\nHTML transferred:",
            "                        0.00 kb/s sent\n                        0.00 kb/s total\n",
            "              min   avg   max\nConnect:        0     0    0\n",
            "Total:          1   501 1000\n",
        ];
        for e in expect {
            assert!(text.contains(e), "no {e:?} in\n{text}");
        }
        assert!(!text.contains("Percentage"), "{text}");
        assert!(!text.contains("+/-sd"), "{text}");
        // The default style is ab's plain report.
        let mut plain = Vec::new();
        render(&s, &mut plain).unwrap();
        let plain = String::from_utf8(plain).unwrap();
        for absent in ["SSL/TLS", "Total body sent", "Variable", "kb/s sent"] {
            assert!(!plain.contains(absent), "{absent} in\n{plain}");
        }
    }

    #[test]
    fn rows_round_like_ab() {
        let mut h = Hist::default();
        for us in [400u64, 1400, 1600, 2600, 100_000] {
            h.record(us);
        }
        let r = AbRow::of(&h);
        assert_eq!((r.min, r.median, r.max), (0, 2, 100));
        // Mean 21.2 ms; sample sd (n - 1) of the five values 44.06 ms.
        assert_eq!(r.mean, 21);
        assert!((r.sd - 44.06).abs() < 0.1, "{}", r.sd);
        let mut line = Vec::new();
        r.write(&mut line, "Total:").unwrap();
        assert_eq!(
            String::from_utf8(line).unwrap(),
            "Total:          0   21  44.1      2     100\n"
        );
    }
}
