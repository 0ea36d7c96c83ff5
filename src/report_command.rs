//! The `report` command: renders saved results files, merging several (shards of one run)
//! into one report, exactly as if one machine had run it all. `deliver` is also how a live
//! run prints its report and saves its files.

use std::path::Path;

use crate::cli::{Format, ReportArgs};
use crate::error::{Ending, Error};
use crate::report::{self, Summary};
use crate::results::{self, Results};

/// `vblast report FILE...`.
pub fn run(args: &ReportArgs) -> Ending {
    let merged = match results::load(&args.files) {
        Ok(r) => r,
        Err(e) => return Ending::Failed(Error::Input(e)),
    };
    let summary = merged.summary();
    match deliver(
        &summary,
        &merged,
        args.format,
        args.latency,
        args.output.as_deref(),
        args.hgrm.as_deref(),
    ) {
        Ok(()) => Ending::Ok,
        Err(e) => Ending::Failed(e),
    }
}

/// Prints the report in `format` and saves the files asked for: `output` the results file
/// (a superset of the JSON report), `hgrm` the corrected latency spectrum.
pub fn deliver(
    summary: &Summary,
    results: &Results,
    format: Format,
    latency: bool,
    output: Option<&Path>,
    hgrm: Option<&Path>,
) -> Result<(), Error> {
    let format = match format {
        Format::Json => report::Format::Json,
        Format::Text => report::Format::Text { latency },
    };
    let mut text = Vec::new();
    let _ = report::render(summary, format, &mut text);
    // A closed pipe (`vblast ... | head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), &text);
    let mut failures = Vec::new();
    if let Some(path) = output
        && let Err(e) = results.write(path)
    {
        failures.push(e);
    }
    if let Some(path) = hgrm {
        let mut spectrum = Vec::new();
        let _ = report::render(summary, report::Format::Hgrm, &mut spectrum);
        if let Err(e) = std::fs::write(path, spectrum) {
            failures.push(format!("cannot write {}: {e}", path.display()));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Output(failures.join("; ")))
    }
}
