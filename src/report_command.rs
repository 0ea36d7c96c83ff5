//! The `report` command: renders saved results files, merging several (shards of one run)
//! into one report, exactly as if one machine had run it all. `deliver` is also how a live
//! run prints its report and saves its files.

use crate::cli::{Format, OutputArgs, ReportArgs};
use crate::error::{Ending, Error};
use crate::report::{self, Summary};
use crate::results::{self, Results};

/// `vblast report FILE...` (alias `review`).
pub fn run(args: &ReportArgs) -> Ending {
    if let Some(ending) = crate::sweep::report_if_sweep(&args.files, &args.out) {
        return ending;
    }
    let merged = match results::load(&args.files) {
        Ok(r) => r,
        Err(e) => return Ending::Failed(Error::input(e)),
    };
    let summary = merged.summary();
    match deliver(&summary, &merged, &args.out) {
        Ok(()) => Ending::Ok,
        Err(e) => Ending::Failed(e),
    }
}

/// Prints the report and saves the files asked for; every file is tried, and the failures
/// are reported together.
pub fn deliver(summary: &Summary, results: &Results, o: &OutputArgs) -> Result<(), Error> {
    let format = match o.format {
        Format::Json => report::Format::Json,
        Format::Text => report::Format::Text { latency: o.latency },
        Format::Ab => report::Format::Ab,
        Format::Verbose => report::Format::Verbose,
        Format::VbTerse => report::Format::VbTerse,
        Format::VbVerbose => report::Format::VbVerbose,
        Format::VbJson => report::Format::VbJson,
        Format::Markdown => {
            return Err(Error::input(crate::cli::MARKDOWN_ONLY_FOR_LIST_OPS));
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
            failures.push(format!("cannot write {}: {e}", path.display()));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Error::output(failures.join("; ")))
    }
}
