//! What a run's (or saved results') figures become: the report printed in the `Format`
//! asked for, and the files saved (`Output`: the results file, the percentile spectrum,
//! ab's CSV, the interval log, the HTML page). `deliver` does both, for a live run and for
//! `vblast report`.

use std::path::PathBuf;

use crate::error::{Cause, Error};
use crate::report::{self, Summary};
use crate::results::Results;

/// The report printed (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    /// ApacheBench 2.4's report, line for line.
    Ab,
    /// Per operation: latency spectrum, bytes, status codes, errors; setup and cleanup time.
    Verbose,
    /// vault-benchmark's terse table (`-report_mode=terse`).
    VbTerse,
    /// vault-benchmark's verbose sections (`-report_mode=verbose`).
    VbVerbose,
    /// vault-benchmark's JSON report (`-report_mode=json`).
    VbJson,
    /// Markdown, with --list-ops only: the operations' reference (docs/operations.md).
    Markdown,
}

/// The refusal of `--format markdown` anywhere but with --list-ops.
pub const MARKDOWN_ONLY_FOR_LIST_OPS: &str = "--format markdown goes with --list-ops (the operations' reference): a run's report is text, json, ab, verbose, vb-terse, vb-verbose or vb-json";

/// What to print and which files to save: the same for a run and for saved results.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub format: Format,
    /// The latency percentiles and the percentile spectrum in the text report.
    pub latency: bool,
    /// The results file (`-` for stdout).
    pub output: Option<PathBuf>,
    pub hgrm: Option<PathBuf>,
    pub ab_csv: Option<PathBuf>,
    pub hlog: Option<PathBuf>,
    /// Interval of the interval log, whole seconds.
    pub hlog_interval: u64,
    pub html: Option<PathBuf>,
}

/// Prints the report and saves the files asked for; every file is tried, and the failures
/// are reported together.
pub fn deliver(summary: &Summary, results: &Results, o: &Output) -> Result<(), Error> {
    let format = match o.format {
        Format::Json => report::Format::Json,
        Format::Text => report::Format::Text { latency: o.latency },
        Format::Ab => report::Format::Ab,
        Format::Verbose => report::Format::Verbose,
        Format::VbTerse => report::Format::VbTerse,
        Format::VbVerbose => report::Format::VbVerbose,
        Format::VbJson => report::Format::VbJson,
        Format::Markdown => {
            return Err(Error::input(MARKDOWN_ONLY_FOR_LIST_OPS));
        }
    };
    let mut text = Vec::new();
    let _ = match format {
        report::Format::Ab => {
            let mut style = report::ab::AbStyle::of_scenario(&results.scenario);
            style.tls = results.tls_probe.clone();
            report::ab::render_with(summary, &style, &mut text)
        }
        _ => report::render(summary, format, &mut text),
    };
    // A closed pipe (`vblast ... | head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), &text);
    let mut failures = Vec::new();
    if let Some(path) = &o.output
        && let Err(e) = results.write(path)
    {
        failures.push(e);
    }
    for (path, format) in [
        (&o.hgrm, report::Format::Hgrm),
        (&o.ab_csv, report::Format::AbCsv),
    ] {
        if let Some(path) = path
            && let Err(e) = report::save(summary, format, path)
        {
            failures.push(e);
        }
    }
    if let Some(path) = &o.hlog
        && let Err(e) = results.save_hlog(path, o.hlog_interval)
    {
        failures.push(e);
    }
    if let Some(path) = &o.html {
        // The file names the results came from (the merged files' when several).
        let name = if results.source.is_empty() {
            "run".to_string()
        } else {
            results
                .source
                .split(", ")
                .map(|p| {
                    std::path::Path::new(p)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_else(|| p.to_string())
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let page = report::html::report(
            &format!("vblast: {}", summary.run.operation),
            &[report::html::HtmlRun {
                name,
                summary,
                scenario: Some(&results.scenario),
                started_at: Some(&results.started_at),
            }],
        );
        if let Err(e) = std::fs::write(path, page) {
            failures.push(Cause::io(format!("cannot write {}", path.display()), e));
        }
    }
    match failures.len() {
        0 => Ok(()),
        1 => Err(Error::output(failures.remove(0))),
        _ => Err(Error::output(Cause::Several(failures))),
    }
}
