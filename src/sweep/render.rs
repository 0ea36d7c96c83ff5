//! The sweep as text: a header, one row per step (offered load, achieved rate, p50, p99,
//! p99.9, success ratio, pass or fail and why), and the answer line. The live sweep prints
//! the same pieces as they come, so `vblast report sweep.json` prints exactly what was
//! printed live. Also the comparison of several sweeps (`vblast compare a.json b.json`):
//! their answers, then their step curves side by side.

use std::io::{self, Write};

use crate::report::{Model, fmt_ms};

use super::file::{Judged, Step, Sweep, answer_line, bounds, grouped, repeats_line};
use super::plan::Spec;
use super::search::{End, Phase, StepVerdict};
use crate::report::ci::cell;
use crate::report::staleness::{StalenessStep, by_load};

/// The lines before the first step.
pub fn header(spec: &Spec, o: &mut dyn Write) -> io::Result<()> {
    let how = match (spec.model, spec.connections) {
        (Model::Open, Some(c)) => format!(
            "open model, rate steps {}..{} req/s over {c} connections, latency from each request's intended start",
            spec.from, spec.to
        ),
        _ => format!(
            "closed model, concurrency steps {}..{} connections",
            spec.from, spec.to
        ),
    };
    writeln!(o, "Sweep of {} on {}: {how}", spec.operation, spec.target)?;
    writeln!(
        o,
        "Steps: {} coarse (geometric), then bisection to {}; each {}s measured after {}s of warm-up; errors above {}% end the sweep",
        spec.steps,
        spec.resolution,
        spec.step_duration_s,
        spec.step_warmup_s,
        spec.max_error_ratio * 100.0
    )?;
    let objective: Vec<String> = spec.objectives.iter().map(|o| o.describe()).collect();
    writeln!(o, "Objective: {}", objective.join(", "))?;
    if let Some(level) = spec.level() {
        writeln!(
            o,
            "Judged with each percentile's {} confidence interval (order statistic, widened by the design effect of 100 ms blocks where samples are correlated in time): pass when it lies within the bound, FAIL when beyond, unclear otherwise, measured again up to {} (samples pooled), then counted as failed",
            level.label(),
            crate::report::plural(u64::from(spec.max_repeats), "time", "times")
        )?;
    }
    writeln!(o)?;
    write!(
        o,
        "{:>3}  {:<6} {:>11} {:>11} {:>9} {:>9} {:>9} {:>8}",
        "#",
        "phase",
        match spec.model {
            Model::Open => "offered/s",
            Model::Closed => "connections",
        },
        "achieved/s",
        "p50",
        "p99",
        "p99.9",
        "success"
    )?;
    if spec.level().is_some() {
        write!(o, " {:>17} {:>17} {:>17}", "p50 CI", "p99 CI", "p99.9 CI")?;
    }
    writeln!(o, "  result")
}

/// A step's result cell: its verdict and why, and how many times it was measured.
pub fn result(step: &Step, j: &Judged) -> String {
    let text = match j.verdict {
        StepVerdict::Pass => "pass".to_string(),
        StepVerdict::Fail => format!("FAIL: {}", j.misses.join("; ")),
        StepVerdict::Broken => format!("BROKEN: {}", j.misses.join("; ")),
        StepVerdict::Unclear => format!("UNCLEAR, counted as FAIL: {}", j.unclear.join("; ")),
    };
    if step.repeats > 0 {
        format!("{text} [measured {}x, pooled]", step.repeats + 1)
    } else {
        text
    }
}

/// One step's row.
pub fn row(i: usize, step: &Step, j: &Judged, o: &mut dyn Write, spec: &Spec) -> io::Result<()> {
    let result = result(step, j);
    let cis = if spec.level().is_some() {
        let f = &j.figures;
        format!(
            " {:>17} {:>17} {:>17}",
            cell(f.p50_ci.as_ref()),
            cell(f.p99_ci.as_ref()),
            cell(f.p999_ci.as_ref())
        )
    } else {
        String::new()
    };
    writeln!(
        o,
        "{:>3}  {:<6} {:>11} {:>11.1} {:>9} {:>9} {:>9} {:>7.2}%{cis}  {result}",
        i + 1,
        match step.phase {
            Phase::Coarse => "coarse",
            Phase::Bisect => "bisect",
        },
        step.load,
        j.figures.achieved,
        fmt_ms(j.figures.p50_ms),
        fmt_ms(j.figures.p99_ms),
        fmt_ms(j.figures.p999_ms),
        j.figures.success_percent
    )
}

/// The whole sweep, as printed live.
pub fn render(sweep: &Sweep, o: &mut dyn Write) -> io::Result<()> {
    header(&sweep.spec, o)?;
    let judged = sweep.judged();
    for (i, (s, j)) in sweep.steps.iter().zip(&judged).enumerate() {
        row(i, s, j, o, &sweep.spec)?;
    }
    let end = sweep.end(&judged).ok().flatten();
    footer(sweep, &judged, end, o)
}

/// The lines after the last step.
pub fn footer(
    sweep: &Sweep,
    judged: &[Judged],
    end: Option<End>,
    o: &mut dyn Write,
) -> io::Result<()> {
    staleness_by_load(sweep, judged, o)?;
    writeln!(o)?;
    writeln!(o, "{}", answer_line(sweep, judged, end))?;
    if let Some(line) = repeats_line(sweep, judged) {
        writeln!(o, "{line}")?;
    }
    if let Some(line) = super::saturation::line(&sweep.seen(judged), end, sweep.spec.unit()) {
        writeln!(o, "{line}")?;
    }
    Ok(())
}

/// A sweep of `--op kv-staleness`: each step's staleness, by its load (none otherwise).
fn staleness_by_load(sweep: &Sweep, judged: &[Judged], o: &mut dyn Write) -> io::Result<()> {
    by_load(&staleness_steps(sweep, judged), sweep.spec.unit(), None, o)
}

/// The steps of a sweep that measured staleness, with their loads and achieved rates.
pub fn staleness_steps<'a>(sweep: &'a Sweep, judged: &[Judged]) -> Vec<StalenessStep<'a>> {
    sweep
        .steps
        .iter()
        .zip(judged)
        .filter_map(|(s, j)| {
            Some(StalenessStep {
                load: s.load,
                achieved: j.figures.achieved,
                staleness: s.results.stats.staleness.as_ref()?,
            })
        })
        .collect()
}

/// Each compared sweep's staleness by load, under its name (the sweeps that have none
/// are left out).
fn staleness_compared(
    sweeps: &[(String, Sweep)],
    judged: &[Vec<Judged>],
    o: &mut dyn Write,
) -> io::Result<()> {
    for ((name, s), j) in sweeps.iter().zip(judged) {
        by_load(&staleness_steps(s, j), s.spec.unit(), Some(name), o)?;
    }
    Ok(())
}

/// Each sweep's highest sustained load as a ratio to the first's: the scaling curve when
/// the sweeps differ in one thing (the nodes of a cluster, say).
fn ratios(names: &[&str], ends: &[Option<End>], unit: &str, o: &mut dyn Write) -> io::Result<()> {
    let first = bounds(ends[0]).0;
    writeln!(o)?;
    writeln!(
        o,
        "Ratio to the first (highest load sustained within the objective):"
    )?;
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
    for (name, e) in names.iter().zip(ends) {
        let held = bounds(*e).0;
        let ratio = match (held, first) {
            (Some(v), Some(f)) if f > 0 => format!("{:.2}x", v as f64 / f as f64),
            _ => "-".into(),
        };
        let held = held.map_or("none".to_string(), |v| format!("{} {unit}", grouped(v)));
        writeln!(o, "  {name:<width$}  {held:>16}  {ratio:>7}")?;
    }
    Ok(())
}

/// Several sweeps side by side: answers (with ratios to the first), then each sweep's
/// achieved rate and p99 at every load any of them ran.
pub fn compare(sweeps: &[(String, Sweep)], o: &mut dyn Write) -> io::Result<()> {
    let names: Vec<&str> = sweeps.iter().map(|(n, _)| n.as_str()).collect();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0).max(22);
    writeln!(
        o,
        "Sweeps compared with {} (ratios: each sweep's answer over the first's)",
        names[0]
    )?;
    writeln!(o)?;
    let judged: Vec<Vec<Judged>> = sweeps.iter().map(|(_, s)| s.judged()).collect();
    let ends: Vec<Option<End>> = sweeps
        .iter()
        .zip(&judged)
        .map(|((_, s), j)| s.end(j).ok().flatten())
        .collect();
    write!(o, "{:<20}", "")?;
    for n in &names {
        write!(o, " {n:>width$}")?;
    }
    writeln!(o)?;
    let first = bounds(ends[0]);
    let cell = |v: Option<u64>, f: Option<u64>, i: usize| match (v, f) {
        (Some(v), Some(f)) if i > 0 && f > 0 => format!("{v} ({:.2}x)", v as f64 / f as f64),
        (Some(v), _) => v.to_string(),
        (None, _) => "-".into(),
    };
    write!(o, "{:<20}", "highest sustained")?;
    for (i, e) in ends.iter().enumerate() {
        write!(o, " {:>width$}", cell(bounds(*e).0, first.0, i))?;
    }
    writeln!(o)?;
    write!(o, "{:<20}", "first broken")?;
    for (i, e) in ends.iter().enumerate() {
        write!(o, " {:>width$}", cell(bounds(*e).1, first.1, i))?;
    }
    writeln!(o)?;
    write!(o, "{:<20}", "steps")?;
    for (_, s) in sweeps {
        write!(o, " {:>width$}", s.steps.len())?;
    }
    writeln!(o)?;
    writeln!(o)?;
    for ((name, s), (j, e)) in sweeps.iter().zip(judged.iter().zip(&ends)) {
        writeln!(o, "{name}: {}", answer_line(s, j, *e))?;
    }
    ratios(&names, &ends, sweeps[0].1.spec.unit(), o)?;
    margins(sweeps, &ends, o)?;
    curves(sweeps, &judged, &names, width, o)?;
    staleness_compared(sweeps, &judged, o)?;
    differences(sweeps, o)
}

/// Where a sweep's edge lies: above the highest load sustained, at most the first that
/// broke (None on a side the sweep did not find).
fn bracket(end: Option<End>) -> Option<(Option<u64>, Option<u64>)> {
    end.map(|e| bounds(Some(e)))
}

/// A bracket as text: "1,444..1,512 req/s", "above 20,000", "below 100".
fn bracket_text(b: (Option<u64>, Option<u64>), unit: &str) -> String {
    match b {
        (Some(p), Some(f)) => format!("{}..{} {unit}", grouped(p), grouped(f)),
        (Some(p), None) => format!("above {} {unit}", grouped(p)),
        (None, Some(f)) => format!("below {} {unit}", grouped(f)),
        (None, None) => "nowhere found".into(),
    }
}

/// Whether each sweep's answer differs from the first's beyond their margins: the edge of
/// each lies between its highest sustained load and its first broken one, so two answers
/// differ when one sweep broke at a load the other sustained, and are within their
/// margins when the brackets overlap.
fn margins(sweeps: &[(String, Sweep)], ends: &[Option<End>], o: &mut dyn Write) -> io::Result<()> {
    writeln!(o)?;
    writeln!(
        o,
        "Margins: each edge lies between its highest sustained load and its first broken one"
    )?;
    let unit = sweeps[0].1.spec.unit();
    let (first_name, first) = (&sweeps[0].0, bracket(ends[0]));
    for ((name, _), end) in sweeps.iter().zip(ends).skip(1) {
        let (Some(a), Some(b)) = (first, bracket(*end)) else {
            writeln!(
                o,
                "{name} against {first_name}: no answer to compare (interrupted)"
            )?;
            continue;
        };
        let (at, bt) = (bracket_text(a, unit), bracket_text(b, unit));
        // a's edge is below b's for certain when a broke at or below a load b sustained.
        let below = |x: (Option<u64>, Option<u64>), y: (Option<u64>, Option<u64>)| matches!((x.1, y.0), (Some(f), Some(p)) if f <= p);
        let line = if below(a, b) {
            format!(
                "{name} sustains more than {first_name}, beyond their margins: {first_name} broke at {} {unit}, which {name} sustained ({first_name} {at}; {name} {bt})",
                grouped(a.1.unwrap_or_default()),
            )
        } else if below(b, a) {
            format!(
                "{name} sustains less than {first_name}, beyond their margins: {name} broke at {} {unit}, which {first_name} sustained ({first_name} {at}; {name} {bt})",
                grouped(b.1.unwrap_or_default()),
            )
        } else {
            format!(
                "{name} and {first_name} do not differ beyond their margins: their edges' brackets overlap ({first_name} {at}; {name} {bt})"
            )
        };
        writeln!(o, "{line}")?;
    }
    Ok(())
}

/// A step's verdict in the comparison's step table: an unclear step (counted as failed)
/// is said to be unclear, as its own report says, not FAIL beside a p99 under the bound.
fn curve_word(v: StepVerdict) -> &'static str {
    match v {
        StepVerdict::Pass => "pass",
        StepVerdict::Fail => "FAIL",
        StepVerdict::Broken => "BROKEN",
        StepVerdict::Unclear => "unclear",
    }
}

/// The step curves: every load any sweep ran, ascending, with each sweep's achieved rate,
/// p99 and verdict there.
fn curves(
    sweeps: &[(String, Sweep)],
    judged: &[Vec<Judged>],
    names: &[&str],
    width: usize,
    o: &mut dyn Write,
) -> io::Result<()> {
    let mut loads: Vec<u64> = sweeps
        .iter()
        .flat_map(|(_, s)| s.steps.iter().map(|x| x.load))
        .collect();
    loads.sort_unstable();
    loads.dedup();
    writeln!(o)?;
    let unit = sweeps[0].1.spec.unit();
    writeln!(
        o,
        "Step curves: achieved req/s and p99 at each load ({unit}; '-' where a sweep did not run it)"
    )?;
    write!(o, "{:>12}", "load")?;
    for n in names {
        write!(o, " {n:>width$}")?;
    }
    writeln!(o)?;
    for load in loads {
        write!(o, "{load:>12}")?;
        for ((_, s), j) in sweeps.iter().zip(judged) {
            let c = s
                .steps
                .iter()
                .zip(j)
                .find(|(x, _)| x.load == load)
                .map(|(_, j)| {
                    format!(
                        "{:.0}/s {} {}",
                        j.figures.achieved,
                        fmt_ms(j.figures.p99_ms),
                        curve_word(j.verdict)
                    )
                })
                .unwrap_or_else(|| "-".into());
            write!(o, " {c:>width$}")?;
        }
        writeln!(o)?;
    }
    Ok(())
}

/// Notes on what differs between the sweeps (model, operation, objectives).
fn differences(sweeps: &[(String, Sweep)], o: &mut dyn Write) -> io::Result<()> {
    let models: Vec<Model> = sweeps.iter().map(|(_, s)| s.spec.model).collect();
    if models.iter().any(|m| *m != models[0]) {
        writeln!(
            o,
            "The sweeps differ in load model (rate steps against concurrency steps): their loads are not the same unit."
        )?;
    }
    let ops: Vec<&str> = sweeps
        .iter()
        .map(|(_, s)| s.spec.operation.as_str())
        .collect();
    if ops.iter().any(|x| *x != ops[0]) {
        writeln!(o, "The sweeps differ in operation: {}", ops.join(" | "))?;
    }
    let objectives: Vec<String> = sweeps
        .iter()
        .map(|(_, s)| {
            s.spec
                .objectives
                .iter()
                .map(|x| x.describe())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    if objectives.iter().any(|x| *x != objectives[0]) {
        writeln!(
            o,
            "The sweeps differ in objective: {}",
            objectives.join(" | ")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep() -> Sweep {
        Sweep {
            vblast_version: String::new(),
            started_at: String::new(),
            host: String::new(),
            scenario: serde_json::Value::Null,
            spec: Spec {
                model: Model::Open,
                from: 100,
                to: 4000,
                steps: 4,
                resolution: "5%".into(),
                max_error_ratio: 0.1,
                objectives: Vec::new(),
                step_duration_s: 1.0,
                step_warmup_s: 0.0,
                connections: Some(1),
                target: String::new(),
                operation: String::new(),
                confidence: Some(0.95),
                max_repeats: 3,
                workload: None,
            },
            steps: Vec::new(),
            interrupted: false,
            setup_s: 0.0,
            cleanup_s: 0.0,
        }
    }

    fn said(ends: &[Option<End>]) -> String {
        let sweeps: Vec<(String, Sweep)> = ["a", "b"]
            .iter()
            .map(|n| (n.to_string(), sweep()))
            .collect();
        let mut o = Vec::new();
        margins(&sweeps, ends, &mut o).unwrap();
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn answers_differ_beyond_their_margins_only_when_their_brackets_do_not_overlap() {
        let edge = |pass, fail| Some(End::Edge { pass, fail });
        let t = said(&[edge(1444, 1512), edge(2936, 3080)]);
        assert!(
            t.contains("b sustains more than a, beyond their margins: a broke at 1,512 req/s"),
            "{t}"
        );
        let t = said(&[edge(2936, 3080), edge(1444, 1512)]);
        assert!(
            t.contains("b sustains less than a, beyond their margins"),
            "{t}"
        );
        let t = said(&[edge(1444, 1512), edge(1479, 1550)]);
        assert!(t.contains("do not differ beyond their margins"), "{t}");
        assert!(
            t.contains("a 1,444..1,512 req/s; b 1,479..1,550 req/s"),
            "{t}"
        );
        // The top of the range held: that sweep's edge is above it.
        let t = said(&[edge(900, 1000), Some(End::AllPassed { top: 4000 })]);
        assert!(t.contains("b sustains more than a"), "{t}");
        assert!(t.contains("b above 4,000 req/s"), "{t}");
        assert!(said(&[edge(1, 2), None]).contains("no answer to compare"));
    }
}
