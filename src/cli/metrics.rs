//! The Prometheus exporter's flags.

use std::time::Duration;

use clap::Args;

/// `--metrics-listen`, `--metrics-hold`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Metrics")]
pub struct MetricsArgs {
    /// Serve live figures for Prometheus at http://ADDR/metrics (e.g. 0.0.0.0:9464).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,

    /// Keep serving the final figures this long after the run (so the last scrape sees them).
    #[arg(long, value_name = "DURATION", value_parser = crate::config::units::parse_duration, requires = "metrics_listen")]
    pub metrics_hold: Option<Duration>,
}
