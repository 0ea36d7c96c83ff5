//! The server-side sampling's flags (src/server_stats/).

use std::time::Duration;

use clap::Args;

/// `--no-server-stats`, `--server-interval`, `--server-pid`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Server side")]
pub struct ServerArgs {
    /// Do not sample the nodes' telemetry, host and process during the run (Vault mode
    /// samples them by default: sys/metrics, sys/host-info).
    #[arg(long)]
    pub no_server_stats: bool,

    /// How often each node is sampled [default: 1s].
    #[arg(long, value_name = "DURATION", value_parser = crate::config::units::parse_duration, conflicts_with = "no_server_stats")]
    pub server_interval: Option<Duration>,

    /// A local node's process, read from /proc for its CPU, RSS and IO; repeat it, one per
    /// node, in the nodes' order.
    #[arg(long, value_name = "PID", conflicts_with = "no_server_stats")]
    pub server_pid: Vec<u32>,
}
