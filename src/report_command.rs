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
        Format::Ab => report::Format::Ab,
        Format::Verbose => report::Format::Verbose,
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
    for (path, format) in [
        (&args.hgrm, report::Format::Hgrm),
        (&args.ab_csv, report::Format::AbCsv),
    ] {
        if let Some(path) = path
            && let Err(e) = report::save(&summary, format, path)
        {
            return Ending::Failed(Error::Output(e));
        }
    }
    if let Some(path) = &args.hlog
        && let Err(e) = merged.save_hlog(path, args.hlog_interval)
    {
        return Ending::Failed(Error::Output(e));
    }
    Ending::Ok
}
