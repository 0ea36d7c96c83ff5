//! What a run or a report prints and saves, and the live progress.

use std::path::PathBuf;

use clap::Args;

use crate::config::units::parse_duration;
use crate::results::deliver::OutputFormat;

/// Why `--hlog-interval` is refused.
#[derive(Debug, thiserror::Error)]
enum WholeSecondsError {
    #[error(transparent)]
    Duration(#[from] crate::config::units::DurationError),
    #[error(
        "{0} is not a whole number of seconds (at least 1s): intervals are made of the run's seconds"
    )]
    NotWhole(String),
}

/// `--hlog-interval`: a duration of whole seconds, at least one (the timeline is per second).
fn parse_whole_seconds(text: &str) -> Result<u64, WholeSecondsError> {
    let d = parse_duration(text)?;
    if d.subsec_nanos() != 0 || d.as_secs() == 0 {
        return Err(WholeSecondsError::NotWhole(text.into()));
    }
    Ok(d.as_secs())
}

/// What to print and which files to save: the same for a run and for saved results.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Report format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// Print the latency percentiles and the HdrHistogram percentile spectrum.
    #[arg(long)]
    pub latency: bool,

    /// Save the results file (every key of the JSON report, and what merging needs).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,

    /// Save the latency percentile spectrum (HdrHistogram text format) to this file.
    #[arg(long)]
    pub hgrm: Option<PathBuf>,

    /// Save ab -e's CSV (time in ms within which each percentage 0..100 was served).
    #[arg(long, value_name = "FILE")]
    pub ab_csv: Option<PathBuf>,

    /// Save an HdrHistogram interval log (.hlog): corrected and uncorrected latency per interval.
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,

    /// Interval of --hlog, whole seconds.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_whole_seconds)]
    pub hlog_interval: u64,

    /// Save a self-contained HTML report: percentile spectrum, per-second timeline, summary
    /// table and the run's description (opens offline in any browser).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Each percentile's confidence interval beside it in the text formats (text, --latency,
    /// ab, verbose, vb-terse, vb-verbose); JSON, results files, HTML and sweeps always carry them.
    #[arg(long)]
    pub ci: bool,

    /// The level of the percentiles' confidence intervals, strictly between 0 and 1.
    #[arg(long, value_name = "LEVEL", default_value = "0.95",
          value_parser = crate::stats::interval::Confidence::parse)]
    pub confidence: crate::stats::interval::Confidence,
}

/// The live progress and the exit status of failed requests.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Output")]
pub struct ShowArgs {
    /// No live progress line on stderr (shown only when stderr is a terminal anyway).
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// Progress once a second as plain lines on stderr even when it is not a terminal (CI
    /// logs); runs over worker processes too.
    #[arg(long)]
    pub progress: bool,

    /// Exit 0 even when requests failed.
    #[arg(long)]
    pub allow_errors: bool,
}
