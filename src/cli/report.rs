//! `vblast report` and `vblast compare`: the saved results files and what to show of them.

use std::path::PathBuf;

use clap::Args;

use super::OutputArgs;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results files written by `vblast ... --output FILE`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,

    /// Merge files of different runs (no shared run id) all the same, their timelines
    /// laid over each other; without it only the shards of one run are merged.
    #[arg(long)]
    pub merge_unrelated: bool,

    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Results files written by `vblast ... --output FILE`; the first is the reference.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,

    /// Also save the comparison as one self-contained HTML page (spectra and timelines
    /// overlaid, summary table, descriptions).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Fail (exit 99) when a figure changed beyond this from the first run, beyond the noise
    /// of both runs: [OPERATION:]METRIC>+N% or METRIC<-N% ('p99>+10%', 'rate<-5%').
    /// Repeatable.
    #[arg(long, value_name = "CHANGE", value_parser = crate::threshold::FailOn::parse)]
    pub fail_on: Vec<crate::threshold::FailOn>,

    /// Save a JUnit XML report: one test case per --fail-on line and run.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}
