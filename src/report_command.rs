//! The `report` command: renders saved results files, merging several (shards of one run)
//! into one report, exactly as if one machine had run it all.

use crate::cli::{Format, ReportArgs};
use crate::error::{Ending, Error};
use crate::report;
use crate::results;

/// `vblast report FILE...`.
pub fn run(args: &ReportArgs) -> Ending {
    let merged = match results::load(&args.files) {
        Ok(r) => r,
        Err(e) => return Ending::Failed(Error::Input(e)),
    };
    let summary = merged.summary();
    let format = match args.format {
        Format::Json => report::Format::Json,
        Format::Text => report::Format::Text {
            latency: args.latency,
        },
    };
    let mut text = Vec::new();
    let _ = report::render(&summary, format, &mut text);
    // A closed pipe (`vblast report ... | head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), &text);
    if let Some(path) = &args.output
        && let Err(e) = merged.write(path)
    {
        return Ending::Failed(Error::Output(e));
    }
    if let Some(path) = &args.hgrm {
        let mut spectrum = Vec::new();
        let _ = report::render(&summary, report::Format::Hgrm, &mut spectrum);
        if let Err(e) = std::fs::write(path, spectrum) {
            return Ending::Failed(Error::Output(format!(
                "cannot write {}: {e}",
                path.display()
            )));
        }
    }
    Ending::Ok
}
