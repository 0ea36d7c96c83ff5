//! `vblast report FILE...` (alias `review`): renders saved results files, merging several
//! (shards of one run) into one report, exactly as if one machine had run it all; a sweep's
//! file is rendered as the sweep printed it.

use crate::cli::ReportArgs;
use crate::error::{Ending, Error};
use crate::results;
use crate::results::deliver::deliver;

use super::scenario::output;

/// Runs `vblast report`.
pub fn run(args: &ReportArgs) -> Ending {
    let out = output(&args.out);
    if let Err(e) = crate::results::deliver::check_paths(&out) {
        return Ending::Failed(e);
    }
    if let Some(ending) = crate::sweep::report_if_sweep(&args.files, &out) {
        return ending;
    }
    let merged = match results::load(
        &args.files,
        if args.merge_unrelated {
            results::Merging::Unrelated
        } else {
            results::Merging::Shards
        },
    ) {
        Ok(r) => r,
        Err(e) => return Ending::Failed(Error::input(e)),
    };
    let mut merged = merged;
    merged.confidence = out.confidence;
    let summary = merged.summary();
    match deliver(&summary, &merged, &out) {
        Ok(()) => Ending::Ok,
        Err(e) => Ending::Failed(e),
    }
}
