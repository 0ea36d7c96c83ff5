//! What a run's (or saved results') figures become: the report printed in the `OutputFormat`
//! asked for, and the files saved (`Output`: the results file, the percentile spectrum,
//! ab's CSV, the interval log, the HTML page). `deliver` does both, for a live run and for
//! `vblast report`.

use std::path::PathBuf;

use crate::error::{Cause, Error};
use crate::report::{self, Summary};
use crate::results::Results;

/// The report printed (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
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
    pub format: OutputFormat,
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
    /// The text report's confidence intervals beside its percentiles (`--ci`).
    pub ci: bool,
    /// The level of every interval (`--confidence`).
    pub confidence: crate::stats::interval::Confidence,
    /// The JUnit XML report of the run's thresholds (`--junit`).
    pub junit: Option<PathBuf>,
}

/// Writes `text` to stdout and flushes it: a write error (a full disk, `> /dev/full`) is
/// the error returned, so that a report is never lost in silence. A reader that closed the
/// pipe early (`vblast ... | head`) took what it wanted: that is not an error.
pub fn print(text: &[u8]) -> Result<(), Cause> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Cause::io("cannot write the report to standard output", e))
        }
        _ => Ok(()),
    }
}

/// `print`, as a command's error (an output error: exit 2).
pub fn print_or_fail(text: &[u8]) -> Result<(), Error> {
    print(text).map_err(Error::output)
}

/// Checks, before the first request, that every file `o` names can be written: its
/// directory exists and is writable, and the path is not a directory (nor a file that
/// cannot be written). A mistyped path is refused at once, not found out once the run is
/// over and its results lost. Nothing is created.
pub fn check_paths(o: &Output) -> Result<(), Error> {
    let paths = [
        ("--output", &o.output),
        ("--hgrm", &o.hgrm),
        ("--ab-csv", &o.ab_csv),
        ("--hlog", &o.hlog),
        ("--html", &o.html),
        ("--junit", &o.junit),
    ];
    for (flag, path) in paths {
        if let Some(path) = path {
            check_path(flag, path)?;
        }
    }
    Ok(())
}

/// One output path: see `check_paths`. `-` (stdout) is always writable.
pub fn check_path(flag: &str, path: &std::path::Path) -> Result<(), Error> {
    if path.as_os_str() == "-" && flag == "--output" {
        return Ok(());
    }
    let refuse = |why: String| Err(Error::input(format!("{flag} {}: {why}", path.display())));
    if path.is_dir() {
        return refuse("is a directory, not a file".into());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    match std::fs::metadata(dir) {
        Err(e) => {
            return refuse(format!(
                "directory {} cannot be used: {}",
                dir.display(),
                crate::error::io_text(&e)
            ));
        }
        Ok(m) if !m.is_dir() => return refuse(format!("{} is not a directory", dir.display())),
        Ok(_) => {}
    }
    let (what, probe) = if path.exists() {
        ("the file", path)
    } else {
        ("its directory", dir)
    };
    if !writable(probe) {
        return refuse(format!("{what} is not writable"));
    }
    Ok(())
}

/// Whether this process may write `path` (access(2), W_OK).
fn writable(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Prints the report and saves the files asked for; every file is tried, and the failures
/// are reported together.
pub fn deliver(summary: &Summary, results: &Results, o: &Output) -> Result<(), Error> {
    let format = match o.format {
        OutputFormat::Json => report::Format::Json,
        OutputFormat::Text => report::Format::Text {
            latency: o.latency,
            ci: o.ci,
        },
        OutputFormat::Ab => report::Format::Ab { ci: o.ci },
        OutputFormat::Verbose => report::Format::Verbose { ci: o.ci },
        OutputFormat::VbTerse => report::Format::VbTerse { ci: o.ci },
        OutputFormat::VbVerbose => report::Format::VbVerbose { ci: o.ci },
        OutputFormat::VbJson => report::Format::VbJson,
        OutputFormat::Markdown => {
            return Err(Error::input(MARKDOWN_ONLY_FOR_LIST_OPS));
        }
    };
    let mut text = Vec::new();
    let _ = match format {
        report::Format::Ab { ci } => {
            let mut style = crate::ab::report::AbStyle::of_scenario(&results.scenario);
            style.tls = results.tls_probe.clone();
            style.ci = ci;
            crate::ab::report::render_with(summary, &style, &mut text)
        }
        _ => report::render(summary, format, &mut text),
    };
    // Every text layout ends with the thresholds' verdicts; the JSON ones carry them as a key.
    if !matches!(format, report::Format::Json | report::Format::VbJson) {
        let _ = report::thresholds::write_text(&summary.thresholds, &mut text);
    }
    let mut failures = Vec::new();
    if let Err(e) = print(&text) {
        failures.push(e);
    }
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
    if let Some(path) = &o.junit
        && let Err(e) = report::junit::save(
            &format!("vblast: {}", summary.run.operation),
            &report::junit::of_thresholds(&summary.thresholds),
            path,
        )
    {
        failures.push(e);
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
