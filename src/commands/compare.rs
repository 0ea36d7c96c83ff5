//! `vblast compare A B ...`: saved runs (or sweeps) side by side.

use crate::cli::CompareArgs;
use crate::error::Ending;

/// Runs `vblast compare`.
pub fn run(args: &CompareArgs) -> Ending {
    let judging = crate::compare::Judging {
        fail_on: &args.fail_on,
        junit: args.junit.as_deref(),
    };
    crate::compare::run(&args.files, args.html.as_deref(), &judging)
}
