//! The thresholds' flags: `--threshold`, `--threshold-abort`, `--threshold-grace`, `--junit`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::threshold::Threshold;

/// A run's thresholds and their JUnit report (docs/thresholds.md).
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Thresholds")]
pub struct ThresholdArgs {
    /// A bound the run must meet, [OPERATION:]METRIC<BOUND (also <=, >, >=): p50..p99.99,
    /// max, mean (a duration: 'p99<20ms'), success ('success>=99.9%'), rate ('rate>=100/s'),
    /// errors ('errors<10'). Repeatable. Broken: exit 99; unclear: exit 98.
    #[arg(long, value_name = "THRESHOLD", value_parser = Threshold::parse)]
    pub threshold: Vec<Threshold>,

    /// Stop the run early once a threshold is broken on the figures so far (after
    /// --threshold-grace); it still cleans up and reports.
    #[arg(long)]
    pub threshold_abort: bool,

    /// How long --threshold-abort waits before judging the figures so far.
    #[arg(long, value_name = "DURATION", default_value = "0s",
          value_parser = crate::config::units::parse_duration)]
    pub threshold_grace: Duration,

    /// Save a JUnit XML report: one test case per threshold.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}
