//! `vblast compare A B ...`: saved runs (or sweeps) side by side.

use crate::cli::CompareArgs;
use crate::error::Ending;

/// Runs `vblast compare`.
pub fn run(args: &CompareArgs) -> Ending {
    crate::compare::run(&args.files, args.html.as_deref())
}
