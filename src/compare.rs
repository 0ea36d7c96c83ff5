//! Saved runs compared (`vblast compare`): side by side (rate, throughput, p50, p99, p99.9, max,
//! success ratio), each with its ratio against the first run, per operation where the runs
//! share operations, and what differs in the runs' descriptions. A thin tail is marked `*`,
//! with a note of the samples it rests on.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{Ending, Error};
use crate::report::junit::{JunitCase, JunitOutcome};
use crate::report::tails::{self, mark};
use crate::report::thresholds::observe_metric;
use crate::report::{Percentiles, Summary, fmt_ms, html};
use crate::results::Results;
use crate::threshold::{FailOn, ThresholdVerdict, fail_on};

/// What a comparison is judged by: `--fail-on` lines, and where their JUnit report goes.
#[derive(Default)]
pub struct Judging<'a> {
    pub fail_on: &'a [FailOn],
    pub junit: Option<&'a Path>,
}

/// `vblast compare A B ...`: the runs in `files` (or sweeps), the first the reference;
/// also an HTML page at `html_page`; each later run judged by `judging`'s lines (a broken
/// one: exit 99).
pub fn run(files: &[PathBuf], html_page: Option<&Path>, judging: &Judging) -> Ending {
    // One rule for runs and sweeps alike: a comparison needs two files or more.
    if files.len() < 2 {
        return Ending::Failed(Error::input(format!(
            "compare needs at least two results files, got {}: to show one run or sweep, use vblast report {}",
            files.len(),
            files
                .first()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "FILE".into())
        )));
    }
    if let Some(twice) = given_twice(files) {
        eprintln!("vblast: warning: {twice}");
    }
    for (flag, path) in [("--html", html_page), ("--junit", judging.junit)] {
        if let Some(path) = path
            && let Err(e) = crate::results::deliver::check_path(flag, path)
        {
            return Ending::Failed(e);
        }
    }
    if let Some(ending) = crate::sweep::compare_if_sweeps(files, html_page) {
        if !judging.fail_on.is_empty() {
            return Ending::Failed(Error::input(
                "--fail-on judges runs, and these are sweeps: compare their runs' files (a step's --output) instead",
            ));
        }
        return ending;
    }
    let mut runs = Vec::new();
    let mut saved = Vec::new();
    for path in files {
        match Results::read(path) {
            Ok(r) => {
                runs.push((name(path), r.summary()));
                saved.push(r);
            }
            Err(e) => return Ending::Failed(Error::input(e)),
        }
    }
    if let Err(e) = check_ops(&runs, judging.fail_on) {
        return Ending::Failed(e);
    }
    let mut text = Vec::new();
    let _ = render(&runs, &mut text);
    let lines = judge_lines(&runs, judging.fail_on);
    let _ = write_lines(&lines, &runs[0].0, &mut text);
    if let Err(e) = crate::results::deliver::print_or_fail(&text) {
        return Ending::Failed(e);
    }
    if let Some(path) = judging.junit {
        let cases: Vec<JunitCase> = lines
            .iter()
            .map(|l| JunitCase {
                name: format!("{}: {}", l.run, l.fail_on),
                classname: "vblast.compare".into(),
                // Unclear is within the noise: it does not fail a comparison.
                outcome: match l.verdict {
                    ThresholdVerdict::Broken => JunitOutcome::Failed,
                    _ => JunitOutcome::Passed,
                },
                why: format!("{}: {}", l.verdict.label(), l.why),
            })
            .collect();
        if let Err(e) = crate::report::junit::save("vblast compare", &cases, path) {
            return Ending::Failed(Error::output(e));
        }
    }
    let broken = lines.iter().any(|l| l.verdict == ThresholdVerdict::Broken);
    if let Some(path) = html_page {
        let pages: Vec<html::HtmlRun> = runs
            .iter()
            .zip(&saved)
            .map(|((name, summary), r)| html::HtmlRun {
                name: name.clone(),
                summary,
                scenario: Some(&r.scenario),
                started_at: Some(&r.started_at),
            })
            .collect();
        let page = html::report(&format!("vblast compare: {}", names_of(&runs)), &pages);
        if let Err(e) = std::fs::write(path, page) {
            return Ending::Failed(Error::output(format!(
                "cannot write {}: {e}",
                path.display()
            )));
        }
    }
    if broken {
        Ending::ThresholdBroken
    } else {
        Ending::Ok
    }
}

/// One `--fail-on` line judged for one run against the first.
struct JudgedLine {
    run: String,
    fail_on: String,
    verdict: ThresholdVerdict,
    why: String,
}

/// Every line of `fail_on` on an operation the runs do not all have is refused (exit 2).
fn check_ops(runs: &[(String, Summary)], fail_on: &[FailOn]) -> Result<(), Error> {
    for f in fail_on {
        if let Some(op) = &f.op
            && let Some((name, _)) = runs
                .iter()
                .find(|(_, s)| !s.ops.iter().any(|o| &o.name == op))
        {
            return Err(Error::input(format!(
                "--fail-on {}: {name} has no operation '{}'",
                f.text(),
                crate::report::shown(op)
            )));
        }
    }
    Ok(())
}

/// Each line of `fail_on` judged for each run after the first, against the first.
fn judge_lines(runs: &[(String, Summary)], fail_on: &[FailOn]) -> Vec<JudgedLine> {
    let base = &runs[0].1;
    let level = crate::stats::interval::Confidence::new(base.latency_ms.confidence)
        .unwrap_or_default()
        .label();
    let mut out = Vec::new();
    for (name, s) in &runs[1..] {
        for f in fail_on {
            let observe = |x: &Summary| observe_metric(x, f.op.as_deref(), f.metric);
            let (verdict, why) = fail_on::judge(f, observe(base), observe(s), &level);
            out.push(JudgedLine {
                run: name.clone(),
                fail_on: f.text(),
                verdict,
                why,
            });
        }
    }
    out
}

/// The lines' verdicts after the comparison: one line each, with why.
fn write_lines(lines: &[JudgedLine], base: &str, o: &mut dyn Write) -> io::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    writeln!(o)?;
    writeln!(
        o,
        "Fail-on (each run against {base}; broken only beyond the noise of both runs):"
    )?;
    for l in lines {
        writeln!(
            o,
            "  {:<7} {} {}: {}",
            l.verdict.label(),
            l.run,
            l.fail_on,
            l.why
        )?;
    }
    Ok(())
}

/// A file given twice (by any path to it): compared with itself, which is harmless (a
/// comparison adds nothing up, unlike `vblast report A A`, whose merge would count every
/// request twice and is refused), so it is said and the comparison goes on. Most often a
/// slip for another file.
fn given_twice(files: &[PathBuf]) -> Option<String> {
    for (i, a) in files.iter().enumerate() {
        for b in &files[i + 1..] {
            if let (Ok(x), Ok(y)) = (a.canonicalize(), b.canonicalize())
                && x == y
            {
                let also = if a.as_os_str() == b.as_os_str() {
                    String::new()
                } else {
                    format!(" (as {})", crate::report::shown(&b.display().to_string()))
                };
                return Some(format!(
                    "{} is given twice{also}: it is compared with itself (its columns are the same run)",
                    crate::report::shown(&a.display().to_string())
                ));
            }
        }
    }
    None
}

fn names_of(runs: &[(String, Summary)]) -> String {
    runs.iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(" vs ")
}

fn name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    crate::report::shown(&name).into_owned()
}

/// One compared figure: how to read it from a run's figures, how to show it.
struct Metric {
    label: &'static str,
    /// The `Percentiles` key of a percentile (thin tails are marked), or "".
    key: &'static str,
    value: fn(&ComparedFigures) -> f64,
    show: fn(f64) -> String,
}

/// What is compared, for the whole run or one operation.
struct ComparedFigures<'a> {
    rps: f64,
    throughput: f64,
    latency: &'a Percentiles,
    success_ratio: f64,
}

const METRICS: [Metric; 7] = [
    Metric {
        label: "rate",
        key: "",
        value: |f| f.rps,
        show: |v| format!("{v:.2}"),
    },
    Metric {
        label: "throughput",
        key: "",
        value: |f| f.throughput,
        show: |v| format!("{v:.2}"),
    },
    Metric {
        label: "p50",
        key: "p50",
        value: |f| f.latency.p50,
        show: fmt_ms,
    },
    Metric {
        label: "p99",
        key: "p99",
        value: |f| f.latency.p99,
        show: fmt_ms,
    },
    Metric {
        label: "p99.9",
        key: "p999",
        value: |f| f.latency.p999,
        show: fmt_ms,
    },
    Metric {
        label: "max",
        key: "",
        value: |f| f.latency.max,
        show: fmt_ms,
    },
    Metric {
        label: "success ratio",
        key: "",
        value: |f| f.success_ratio * 100.0,
        show: |v| format!("{v:.2}%"),
    },
];

/// "1.23x" against the first run; "-" when the first is zero.
fn ratio(v: f64, first: f64) -> String {
    if first == 0.0 {
        "-".into()
    } else {
        format!("{:.2}x", v / first)
    }
}

fn table(
    o: &mut dyn Write,
    title: &str,
    names: &[&str],
    figures: &[ComparedFigures],
) -> io::Result<()> {
    let mut thin = Vec::new();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0).max(20);
    write!(o, "{title:<14}")?;
    for n in names {
        write!(o, " {n:>width$}")?;
    }
    writeln!(o)?;
    for m in &METRICS {
        write!(o, "{:<14}", m.label)?;
        let first = (m.value)(&figures[0]);
        for (i, f) in figures.iter().enumerate() {
            let v = (m.value)(f);
            let rests_on = f.latency.thin(m.key);
            if let Some(n) = rests_on {
                thin.push(format!("{} {} rests on {n}", names[i], m.label));
            }
            let shown = mark((m.show)(v), rests_on);
            let cell = if i == 0 {
                shown
            } else {
                format!("{shown} ({})", ratio(v, first))
            };
            write!(o, " {cell:>width$}")?;
        }
        writeln!(o)?;
    }
    if let Some(note) = tails::note(&thin) {
        writeln!(o)?;
        writeln!(o, "{note}")?;
    }
    Ok(())
}

/// A part of a run's description: its label, and how to read it.
type Described = (&'static str, fn(&Summary) -> String);

/// Writes the comparison of `runs` (name, summary), the first being the reference.
pub fn render(runs: &[(String, Summary)], o: &mut dyn Write) -> io::Result<()> {
    let names: Vec<&str> = runs.iter().map(|(n, _)| n.as_str()).collect();
    writeln!(
        o,
        "Compared with {} (ratios: each run's figure over the first's; latency in the model each run used)",
        names[0]
    )?;
    writeln!(o)?;
    let totals: Vec<ComparedFigures> = runs
        .iter()
        .map(|(_, s)| ComparedFigures {
            rps: s.rps,
            throughput: s.throughput,
            latency: &s.latency_ms,
            success_ratio: s.success_ratio,
        })
        .collect();
    table(o, "total", &names, &totals)?;
    // Operations every run has, in the first run's order.
    let first_ops: Vec<&str> = runs[0].1.ops.iter().map(|op| op.name.as_str()).collect();
    let shared: Vec<&str> = first_ops
        .iter()
        .copied()
        .filter(|name| {
            runs.iter()
                .all(|(_, s)| s.ops.iter().any(|op| op.name == *name))
        })
        .collect();
    if runs.iter().any(|(_, s)| s.ops.len() > 1) {
        for op in &shared {
            let figures: Vec<ComparedFigures> = runs
                .iter()
                .map(|(_, s)| {
                    let x = s.ops.iter().find(|x| x.name == *op).expect("shared op");
                    ComparedFigures {
                        rps: x.rps,
                        throughput: x.throughput,
                        latency: &x.latency_ms,
                        success_ratio: x.success_ratio,
                    }
                })
                .collect();
            writeln!(o)?;
            table(o, op, &names, &figures)?;
        }
    }
    writeln!(o)?;
    let describe: [Described; 6] = [
        ("operation", |s| s.run.operation.clone()),
        ("connections", |s| s.run.connections.to_string()),
        ("model", |s| format!("{:?}", s.run.model).to_lowercase()),
        ("rate", |s| {
            s.run
                .target_rate
                .map(|r| format!("{r} req/s"))
                .unwrap_or_else(|| "as fast as possible".into())
        }),
        ("keep-alive", |s| s.run.keepalive.to_string()),
        ("target", |s| s.run.target.clone()),
    ];
    let mut differs = false;
    for (label, f) in describe {
        let values: Vec<String> = runs.iter().map(|(_, s)| f(s)).collect();
        if values.iter().any(|v| *v != values[0]) {
            if !differs {
                writeln!(o, "The runs differ in:")?;
                differs = true;
            }
            writeln!(o, "  {label:<12} {}", values.join(" | "))?;
        }
    }
    if !differs {
        writeln!(
            o,
            "The runs are described alike (operation, connections, model, rate, keep-alive, target)."
        )?;
    }
    let ops_differ = runs
        .iter()
        .any(|(_, s)| s.run.operation != runs[0].1.run.operation);
    if ops_differ {
        writeln!(
            o,
            "Their operations differ: the totals compare different work, not like for like; {}.",
            if shared.is_empty() {
                "no operation is common to all runs, so none is compared on its own".to_string()
            } else {
                format!(
                    "only {} (common to all runs) can be compared like for like",
                    shared.join(", ")
                )
            }
        )?;
    }
    Ok(())
}
