//! A profile as text, as JSON (docs/schema/profile.schema.json) and as a self-contained
//! page (the rate over time and the mix, drawn with `report::page`).

use super::figures::Profile;
use crate::report::page::{Chart, Scale, Series, escape, page, table};

/// The formats of `vblast profile --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileFormat {
    Text,
    Json,
}

/// The profile in `format`.
pub fn render(p: &Profile, format: ProfileFormat) -> String {
    match format {
        ProfileFormat::Text => text(p),
        ProfileFormat::Json => {
            let mut s = serde_json::to_string_pretty(p).expect("a profile serializes");
            s.push('\n');
            s
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The profile as text.
pub fn text(p: &Profile) -> String {
    let mut o = String::new();
    let span = match (&p.span.first, &p.span.last) {
        (Some(f), Some(l)) => format!("{f} to {l} ({:.3} s)", p.span.seconds),
        _ => "no time".into(),
    };
    o.push_str(&format!(
        "Audit logs: {}\nSpan: {span}\n",
        p.files.join(", ")
    ));
    o.push_str(&format!(
        "Requests: {}   rate per second: mean {:.2}, p99 {:.0}, peak {:.0} (per {} s buckets)\n",
        p.requests, p.rate.mean, p.rate.p99, p.rate.peak, p.rate.step_s
    ));
    o.push_str("\nOperations (vblast's names; * = no such vblast operation yet):\n");
    let mut rows = vec![
        [
            "operation",
            "requests",
            "share",
            "errors",
            "server p50 ms",
            "p99 ms",
            "bytes/req",
            "entries/req",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for op in &p.operations {
        let (p50, p99) = op.server_ms.as_ref().map_or(("-".into(), "-".into()), |s| {
            (format!("{:.3}", s.p50), format!("{:.3}", s.p99))
        });
        rows.push(vec![
            format!("{}{}", op.name, if op.vblast_op { "" } else { " *" }),
            op.requests.to_string(),
            pct(op.share),
            op.error_ratio.map_or("-".into(), pct),
            p50,
            p99,
            format!("{:.0}", op.bytes_per_request),
            format!("{:.2}", op.entries_per_request),
        ]);
    }
    rows.push(vec![
        "(unmapped)".into(),
        p.unmapped.requests.to_string(),
        pct(p.unmapped.share),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
    ]);
    o.push_str(&columns(&rows));
    unmapped(p, &mut o);
    places(p, &mut o);
    tokens_and_volume(p, &mut o);
    o
}

fn unmapped(p: &Profile, o: &mut String) {
    if p.unmapped.requests == 0 {
        return;
    }
    o.push_str(&format!(
        "\nUnmapped: {} requests ({}); most frequent path shapes:\n",
        p.unmapped.requests,
        pct(p.unmapped.share)
    ));
    for s in &p.unmapped.shapes {
        o.push_str(&format!("  {:>8}  {}\n", s.requests, s.path));
    }
    if let Some(paths) = &p.unmapped.paths {
        o.push_str("Most frequent unmapped paths (--show-paths):\n");
        for s in paths {
            o.push_str(&format!("  {:>8}  {}\n", s.requests, s.path));
        }
    }
}

fn places(p: &Profile, o: &mut String) {
    o.push_str("\nNamespaces:");
    for n in &p.namespaces {
        o.push_str(&format!(" {} {},", n.namespace, n.requests));
    }
    o.pop();
    o.push_str("\n\nMounts (distinct paths size a replay's seeding):\n");
    let mut rows = vec![
        ["namespace", "mount", "type", "requests", "distinct paths"]
            .map(String::from)
            .to_vec(),
    ];
    for m in &p.mounts {
        rows.push(vec![
            m.namespace.clone(),
            m.mount.clone(),
            m.mount_type.clone(),
            m.requests.to_string(),
            format!("{}{}", if m.estimated { "~" } else { "" }, m.distinct_paths),
        ]);
    }
    o.push_str(&columns(&rows));
}

fn tokens_and_volume(p: &Profile, o: &mut String) {
    let t = &p.tokens;
    o.push_str(&format!(
        "\nTokens: {}{} distinct accessors; {} requests carried a token",
        if t.accessors_estimated { "~" } else { "" },
        t.distinct_accessors,
        t.requests_with_token
    ));
    if let Some(r) = &t.requests_per_token {
        o.push_str(&format!(
            "; requests per token mean {:.1}, p50 {}, p99 {}, max {}",
            r.mean, r.p50, r.p99, r.max
        ));
    }
    o.push_str(&format!(
        "\nLogins: {} ({:.2} per minute, {} in the busiest minute); requests by tokens that logged in inside the span: {} ({}{})\n",
        t.logins,
        t.logins_per_minute,
        t.peak_logins_per_minute,
        t.logged_in_requests,
        if t.logged_in_exact { "" } else { "at least " },
        pct(t.logged_in_share)
    ));
    let a = &p.audit;
    o.push_str(&format!(
        "\nAudit volume: {} in {} entries ({:.0} bytes, {:.2} entries per request); at this rate {} and {:.0} entries per day\n",
        bytes(a.bytes as f64),
        a.entries,
        a.bytes_per_request,
        a.entries_per_request,
        bytes(a.bytes_per_day),
        a.entries_per_day
    ));
    if !p.problems.is_empty() {
        o.push_str(&format!(
            "\nProblems in the input: {} (listed on stderr)\n",
            p.problems.len()
        ));
    }
}

/// Rows as left-aligned first column and right-aligned others, two spaces apart.
fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut o = String::new();
    for r in rows {
        o.push_str("  ");
        for (i, c) in r.iter().enumerate() {
            if i == 0 {
                o.push_str(&format!("{c:<w$}", w = widths[i]));
            } else {
                o.push_str(&format!("  {c:>w$}", w = widths[i]));
            }
        }
        let trimmed = o.trim_end().len();
        o.truncate(trimmed);
        o.push('\n');
    }
    o
}

/// The profile as one self-contained page: the summary, the rate over time, the mix.
pub fn html(p: &Profile) -> String {
    let mut body = String::new();
    body.push_str(&format!(
        "<p>The workload of the audit logs: {} requests from {} to {} ({:.1} s): mean {:.2}/s, p99 {:.0}/s, peak {:.0}/s.</p>",
        p.requests,
        escape(p.span.first.as_deref().unwrap_or("-")),
        escape(p.span.last.as_deref().unwrap_or("-")),
        p.span.seconds,
        p.rate.mean,
        p.rate.p99,
        p.rate.peak
    ));
    let step = p.rate.step_s as f64;
    let points: Vec<(f64, f64)> = p
        .rate
        .curve
        .iter()
        .enumerate()
        .map(|(i, n)| (i as f64 * step, *n as f64 / step))
        .collect();
    body.push_str("<h2>Rate over time</h2>");
    body.push_str(
        &Chart {
            id: "rate".into(),
            title: format!("Requests per second (buckets of {} s)", p.rate.step_s),
            x_label: "seconds from the start".into(),
            y_label: "requests per second".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: vec![Series {
                name: "requests/s".into(),
                points,
                dashed: false,
                color: 0,
            }],
        }
        .svg(),
    );
    body.push_str("<h2>The mix</h2>");
    let mut rows: Vec<Vec<String>> = p
        .operations
        .iter()
        .map(|o| {
            vec![
                o.name.clone(),
                if o.vblast_op { "yes" } else { "not yet" }.into(),
                o.requests.to_string(),
                pct(o.share),
                o.error_ratio.map_or("-".into(), pct),
                o.server_ms
                    .as_ref()
                    .map_or("-".into(), |s| format!("{:.3}", s.p99)),
            ]
        })
        .collect();
    rows.push(vec![
        "(unmapped)".into(),
        String::new(),
        p.unmapped.requests.to_string(),
        pct(p.unmapped.share),
        String::new(),
        String::new(),
    ]);
    body.push_str(&table(
        &[
            "operation",
            "vblast op",
            "requests",
            "share",
            "errors",
            "server p99 ms",
        ],
        &rows,
        2,
    ));
    page("vblast profile", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_trim() {
        let rows = vec![
            vec!["a".to_string(), "1".to_string()],
            vec!["long".to_string(), "100".to_string()],
        ];
        assert_eq!(columns(&rows), "  a       1\n  long  100\n");
    }
}
