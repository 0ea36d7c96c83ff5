//! The `report` command: renders saved results files, merging several into one report.

use crate::cli::ReportArgs;
use crate::error::{Ending, Error};

/// `vblast report FILE...`.
pub fn run(args: &ReportArgs) -> Ending {
    Ending::Failed(Error::Input(format!(
        "cannot read {}: results files are not supported yet",
        args.files
            .first()
            .map_or(String::new(), |p| p.display().to_string())
    )))
}
