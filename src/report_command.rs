//! The `report` command: renders saved results files, merging several (shards of one run)
//! into one report, exactly as if one machine had run it all. `deliver` is also how a live
//! run prints its report and saves its files.

use crate::cli::{Format, OutputArgs, ReportArgs};
use crate::error::{Ending, Error};
use crate::report::{self, Summary};
use crate::results::{self, Results};

/// `vblast report FILE...` (alias `review`).
pub fn run(args: &ReportArgs) -> Ending {
    let merged = match results::load(&args.files) {
        Ok(r) => r,
        Err(e) => return Ending::Failed(Error::Input(e)),
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
    };
    let mut text = Vec::new();
    let _ = report::render(summary, format, &mut text);
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
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Output(failures.join("; ")))
    }
}
