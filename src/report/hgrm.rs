//! HdrHistogram's percentile spectrum in its standard text layout (values in
//! milliseconds), which HdrHistogram's plotter reads: the file `--hgrm` saves, and the
//! `--latency` view (headline percentiles, thin tails marked, with `--ci` each one's
//! confidence interval beside it, then the spectrum of each latency; the spectrum's layout
//! is HdrHistogram's own and stays unmarked).

use std::io::{self, Write};

use super::{Summary, fmt_ms, ms, tails};
use crate::stats::Hist;

/// The corrected latency's spectrum (what `--hgrm` saves).
pub fn render(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    spectrum(&s.latency_hist, o)
}

/// `--latency`: the headline percentiles, then the full spectrum (corrected and service
/// time side by side in the open model).
pub fn render_latency(s: &Summary, o: &mut dyn Write) -> io::Result<()> {
    render_latency_with(s, false, o)
}

/// The headline rows of `--latency`: label, quantile, parts per million.
const ROWS: [(&str, f64, u64); 8] = [
    ("50.000%", 0.5, 500_000),
    ("75.000%", 0.75, 750_000),
    ("90.000%", 0.9, 900_000),
    ("99.000%", 0.99, 990_000),
    ("99.900%", 0.999, 999_000),
    ("99.990%", 0.9999, 999_900),
    ("99.999%", 0.99999, 999_990),
    ("100.000%", 1.0, 1_000_000),
];

/// Width of a CI column of `--latency --ci`.
const CI_W: usize = 19;

/// The same, with each headline percentile's confidence interval after its value when
/// `ci` (`--ci`); the 100% row's is the largest sample's (`max-?`: the true maximum is at
/// least the largest seen, and nothing bounds it from above).
pub fn render_latency_with(s: &Summary, ci: bool, o: &mut dyn Write) -> io::Result<()> {
    let views: Vec<(&str, &Hist)> = if s.is_open() {
        vec![
            ("Latency (corrected, from intended start)", &s.latency_hist),
            (
                "Service time (uncorrected, from actual send)",
                &s.service_hist,
            ),
        ]
    } else {
        vec![("Latency (from actual send)", &s.latency_hist)]
    };
    writeln!(o)?;
    writeln!(o, "  Latency Distribution (HdrHistogram)")?;
    write!(o, "  {:>9}", "")?;
    for (name, _) in &views {
        let short = if name.starts_with("Service") {
            "service"
        } else {
            "latency"
        };
        write!(o, " {short:>12}")?;
        if ci {
            write!(o, " {:>CI_W$}", format!("{short} CI"))?;
        }
    }
    writeln!(o)?;
    let level = super::ci::level_of(&s.latency_ms);
    let mut thin = Vec::new();
    for (label, q, ppm) in ROWS {
        write!(o, "  {label:>9}")?;
        // The views count the same requests: one mark for the row.
        let rests_on = match ppm {
            1_000_000 => None,
            _ => views.first().and_then(|(_, h)| tails::thin(h.0.len(), ppm)),
        };
        for (_, h) in &views {
            let v = if h.is_empty() {
                0.0
            } else {
                ms(h.0.value_at_quantile(q))
            };
            write!(o, " {:>12}", tails::mark(fmt_ms(v), rests_on))?;
            if ci {
                let cell = super::ci::cell(super::ci::at(&h.0, q, level, v).as_ref());
                write!(o, " {cell:>CI_W$}")?;
            }
        }
        writeln!(o)?;
        if let Some(n) = rests_on {
            thin.push(format!("{label} rests on {n}"));
        }
    }
    if let Some(note) = tails::note(&thin) {
        writeln!(o, "  {note}")?;
    }
    if ci {
        writeln!(o, "  {}", super::ci::note(level))?;
    }
    for (name, h) in &views {
        writeln!(o)?;
        writeln!(o, "  Detailed Percentile spectrum: {name}")?;
        spectrum(h, o)?;
    }
    Ok(())
}

/// The percentile distribution of `h` in HdrHistogram's text layout (values in
/// milliseconds, 5 ticks per half distance).
pub fn spectrum(h: &Hist, o: &mut dyn Write) -> io::Result<()> {
    let h = &h.0;
    writeln!(
        o,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    if h.is_empty() {
        writeln!(
            o,
            "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
            0.0, 0.0
        )?;
        writeln!(o, "#[Max     = {:>12.3}, Total count    = {:>12}]", 0.0, 0)?;
        writeln!(
            o,
            "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
            h.buckets(),
            h.distinct_values()
        )?;
        return Ok(());
    }
    let total = h.len();
    // TotalCount: values recorded up to this row's value, as HdrHistogram prints it.
    let mut cum = 0u64;
    for v in h.iter_quantiles(5) {
        let value = v.value_iterated_to();
        let q = v.quantile_iterated_to();
        cum += v.count_since_last_iteration();
        if q < 1.0 {
            writeln!(
                o,
                "{:>12.3} {:>14.12} {:>10} {:>14.2}",
                ms(value),
                q,
                cum,
                1.0 / (1.0 - q)
            )?;
        } else {
            writeln!(o, "{:>12.3} {:>14.12} {:>10}", ms(value), q, total)?;
        }
    }
    writeln!(
        o,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        h.mean() / 1000.0,
        h.stdev() / 1000.0
    )?;
    writeln!(
        o,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        ms(h.max()),
        total
    )?;
    writeln!(
        o,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        h.distinct_values()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spectrum_layout() {
        let mut h = Hist::default();
        for v in 1..=10_000u64 {
            h.record(v * 10);
        }
        let mut out = Vec::new();
        spectrum(&h, &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0].contains("Value") && lines[0].contains("1/(1-Percentile)"));
        assert!(lines.iter().any(|l| l.starts_with("#[Mean")));
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("#[Max") && l.contains("Total count"))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("#[Buckets") && l.contains("SubBuckets"))
        );
        // Data rows: value, percentile, count, and a rising count.
        let rows: Vec<Vec<&str>> = lines[2..]
            .iter()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert!(rows.len() > 50);
        let last = rows.last().unwrap();
        assert_eq!(last[1].parse::<f64>().unwrap(), 1.0);
        assert_eq!(last[2], "10000");
    }
}
