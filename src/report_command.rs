//! The `report` command: renders saved results files, merging several (shards of one run)
//! into one report, exactly as if one machine had run it all. `deliver` is also how a live
//! run prints its report and saves its files.

use std::path::Path;

use crate::cli::{Format, ReportArgs};
use crate::error::{Ending, Error};
use crate::report::{self, Summary};
use crate::results::{self, Results};

/// What to print and which files to save, for a live run and a saved one alike.
pub struct Outputs<'a> {
    pub format: Format,
    pub latency: bool,
    /// The results file (a superset of the JSON report).
    pub output: Option<&'a Path>,
    /// The corrected latency spectrum (HdrHistogram text).
    pub hgrm: Option<&'a Path>,
    /// ab -e's percentile CSV.
    pub ab_csv: Option<&'a Path>,
    /// The HdrHistogram interval log, and its interval in seconds.
    pub hlog: Option<&'a Path>,
    pub hlog_interval: u64,
}

/// `vblast report FILE...` (alias `review`).
pub fn run(args: &ReportArgs) -> Ending {
    let merged = match results::load(&args.files) {
        Ok(r) => r,
        Err(e) => return Ending::Failed(Error::Input(e)),
    };
    let summary = merged.summary();
    let outputs = Outputs {
        format: args.format,
        latency: args.latency,
        output: args.output.as_deref(),
        hgrm: args.hgrm.as_deref(),
        ab_csv: args.ab_csv.as_deref(),
        hlog: args.hlog.as_deref(),
        hlog_interval: args.hlog_interval,
    };
    match deliver(&summary, &merged, &outputs) {
        Ok(()) => Ending::Ok,
        Err(e) => Ending::Failed(e),
    }
}

/// Prints the report and saves the files asked for; every file is tried, and the failures
/// are reported together.
pub fn deliver(summary: &Summary, results: &Results, o: &Outputs) -> Result<(), Error> {
    let format = match o.format {
        Format::Json => report::Format::Json,
        Format::Text => report::Format::Text { latency: o.latency },
        Format::Ab => report::Format::Ab,
        Format::Verbose => report::Format::Verbose,
    };
    let mut text = Vec::new();
    let _ = report::render(summary, format, &mut text);
    // A closed pipe (`vblast ... | head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), &text);
    let mut failures = Vec::new();
    if let Some(path) = o.output
        && let Err(e) = results.write(path)
    {
        failures.push(e);
    }
    for (path, format) in [
        (o.hgrm, report::Format::Hgrm),
        (o.ab_csv, report::Format::AbCsv),
    ] {
        if let Some(path) = path
            && let Err(e) = report::save(summary, format, path)
        {
            failures.push(e);
        }
    }
    if let Some(path) = o.hlog
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
