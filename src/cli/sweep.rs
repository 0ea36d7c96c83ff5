//! `vblast sweep`'s flags: the run's, with the range to sweep, each step's length, the
//! search's resolution and the objectives.

use std::time::Duration;

use clap::Args;

use crate::cli::RunArgs;
use crate::config::units::parse_duration;
use crate::sweep::search::MAX_REPEATS;

/// Connections of a rate sweep when -c is not given: enough for the open model to offer
/// thousands of requests per second to a server answering in milliseconds.
pub const DEFAULT_SWEEP_CONNECTIONS: &str = "100";

/// Why `--max-repeats` is refused.
#[derive(Debug, thiserror::Error)]
#[error("'{0}' is not a whole number from 0 to {MAX_REPEATS}")]
struct RepeatsError(String);

/// `--max-repeats`: a whole number from 0 to `MAX_REPEATS`.
fn parse_repeats(text: &str) -> Result<u32, RepeatsError> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| *n <= MAX_REPEATS)
        .ok_or_else(|| RepeatsError(text.into()))
}

#[derive(Args, Debug)]
#[command(mut_arg("connections", |a| a
    .default_value(DEFAULT_SWEEP_CONNECTIONS)
    .visible_alias(None)
    .long("connections")
    .help("Rate sweeps: the open connections every step uses (concurrency sweeps: --concurrency)")))]
#[command(mut_arg("rate", |a| a
    .help("Open model: the range of target rates, FROM..TO req/s (corrected latency)")
    .value_name("FROM..TO")))]
pub struct SweepArgs {
    #[command(flatten)]
    pub run: RunArgs,

    /// Closed model: the range of connections, FROM..TO (each step's connections).
    #[arg(
        help_heading = "Sweep",
        long = "concurrency",
        value_name = "FROM..TO",
        conflicts_with = "rate"
    )]
    pub concurrency: Option<String>,

    /// How long each step is measured, after its warm-up.
    #[arg(help_heading = "Sweep", long, default_value = "20s", value_parser = parse_duration)]
    pub step_duration: Duration,

    /// Load before each step's measurement, left out of its figures.
    #[arg(help_heading = "Sweep", long, default_value = "2s", value_parser = parse_duration)]
    pub step_warmup: Duration,

    /// Steps of the coarse pass, geometrically spaced from FROM to TO (both included).
    #[arg(help_heading = "Sweep", long, default_value_t = 6)]
    pub steps: usize,

    /// When the bisection after the coarse pass stops: a percentage of the load (5%) or a
    /// whole number of req/s or connections (250).
    #[arg(help_heading = "Sweep", long, default_value = "5%")]
    pub resolution: String,

    /// A step failing with more errors than this (10% or 0.1) ends the sweep at once.
    #[arg(help_heading = "Sweep", long, default_value = "10%")]
    pub max_error_ratio: String,

    /// An unclear step (a percentile's confidence interval straddling its bound) is measured
    /// again up to this many times, its samples pooled; 0 to 10.
    #[arg(help_heading = "Sweep", long, default_value_t = 3, value_name = "N",
          value_parser = parse_repeats)]
    pub max_repeats: u32,

    /// Objective, repeatable: p50|p90|p99|p999=DURATION, success=PERCENT, rate=PERCENT
    /// (rate sweeps always bound the achieved rate: 2% under the offered unless given).
    #[arg(help_heading = "Sweep", long = "slo", value_name = "OBJECTIVE")]
    pub slo: Vec<String>,
}
