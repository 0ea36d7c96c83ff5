//! The Prometheus exporter's flags: where the figures are served, how long they stay up
//! after the run, and the Pushgateway they are pushed to.

use std::time::Duration;

use clap::Args;

/// `--metrics-listen`, `--metrics-linger`, `--metrics-push` and its job, labels, interval.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Metrics")]
pub struct MetricsArgs {
    /// Serve live figures for Prometheus at http://ADDR/metrics (e.g. 0.0.0.0:9464).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,

    /// Keep serving the final figures this long after the run, so that the last scrape
    /// sees them (at most 10m; Ctrl-C or SIGTERM ends it at once).
    #[arg(long, visible_alias = "metrics-hold", value_name = "DURATION", value_parser = linger, requires = "metrics_listen")]
    pub metrics_linger: Option<Duration>,

    /// Push the figures to the Prometheus Pushgateway at URL (http://pushgateway:9091):
    /// at the start, every --metrics-push-interval, and the final ones at the end
    /// (docs/ci.md). An unreachable one is a warning; the run goes on.
    #[arg(long, value_name = "URL")]
    pub metrics_push: Option<String>,

    /// The `job` label of the pushed group.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "vblast",
        requires = "metrics_push"
    )]
    pub metrics_push_job: String,

    /// A grouping label of the pushed group (repeatable), e.g. instance=nightly: a group
    /// is replaced by the next push with the same job and labels.
    #[arg(long, value_name = "NAME=VALUE", requires = "metrics_push")]
    pub metrics_push_label: Vec<String>,

    /// How often the figures are pushed while the run goes on (at least 1s).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = push_interval, requires = "metrics_push")]
    pub metrics_push_interval: Duration,
}

/// A linger: a duration of at most `metrics::MAX_LINGER`.
fn linger(text: &str) -> Result<Duration, String> {
    let d = crate::config::units::parse_duration(text).map_err(|e| e.to_string())?;
    let max = crate::metrics::MAX_LINGER;
    if d > max {
        return Err(format!(
            "at most {}s: the linger only has to outlast the last scrape",
            max.as_secs()
        ));
    }
    Ok(d)
}

/// An interval of at least `metrics::push::MIN_INTERVAL`.
fn push_interval(text: &str) -> Result<Duration, String> {
    let d = crate::config::units::parse_duration(text).map_err(|e| e.to_string())?;
    let min = crate::metrics::push::MIN_INTERVAL;
    if d < min {
        return Err(format!("at least {}s", min.as_secs()));
    }
    Ok(d)
}
