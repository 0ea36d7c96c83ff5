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

    /// Every DURATION, save CPU (over half of it), heap and goroutine profiles of the
    /// first node (sys/pprof) into --pprof-dir.
    #[arg(long, value_name = "DURATION", value_parser = crate::config::units::parse_duration, conflicts_with = "no_server_stats")]
    pub pprof_interval: Option<Duration>,

    /// Where the profiles go [default: beside the results file, else the current directory].
    #[arg(long, value_name = "DIR", requires = "pprof_interval")]
    pub pprof_dir: Option<std::path::PathBuf>,

    /// Enable a file audit device writing FILE (on the server's machine) for the run,
    /// disabled after it; a local server's log is counted against vblast's own counts.
    /// A device of the server's own already writing FILE is used instead, nothing enabled.
    #[arg(long, value_name = "FILE")]
    pub audit_path: Option<std::path::PathBuf>,

    /// Count the run's requests in FILE, the log of a file audit device the server already
    /// has (OpenBao 2 declares them in its configuration), creating nothing.
    #[arg(long, value_name = "FILE", conflicts_with = "audit_path")]
    pub audit_log: Option<std::path::PathBuf>,
}
