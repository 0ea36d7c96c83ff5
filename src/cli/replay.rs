//! `vblast replay`: the audit logs to replay, how fast and how much, where to, and how
//! to show it.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::replay::report::ReplayFormat;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// OpenBao or Vault file audit logs (JSON lines; plain or gzip'd, rotated ones in any
    /// order: they are read by the time of their first entry).
    #[arg(required = true, value_name = "AUDIT_LOG")]
    pub files: Vec<PathBuf>,

    /// Compresses time: 10 runs ten seconds of log in one.
    #[arg(
        long,
        default_value_t = 1.0,
        allow_negative_numbers = true,
        value_name = "F"
    )]
    pub speed: f64,

    /// Multiplies the rate at every instant: 2 sends each recorded second's n requests as
    /// 2n spread evenly over that second (fractions carried to the next second).
    #[arg(
        long,
        default_value_t = 1.0,
        allow_negative_numbers = true,
        value_name = "F"
    )]
    pub scale: f64,

    /// What to print on standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReplayFormat,

    /// Name the left-out unmapped paths themselves, not only their shapes (a path may
    /// name a secret: off by default).
    #[arg(long)]
    pub show_paths: bool,

    /// Connections kept open to the server.
    #[arg(
        short = 'c',
        long = "concurrency",
        visible_alias = "connections",
        default_value_t = 64
    )]
    pub connections: u64,

    /// Event-loop threads (default: one per core).
    #[arg(short = 't', long)]
    pub threads: Option<usize>,

    /// A request without an answer after this long fails.
    #[arg(long, default_value = "30s", value_parser = crate::config::units::parse_duration)]
    pub timeout: Duration,

    /// Speak HTTP/2: h2 negotiated by ALPN over TLS, as `vblast run --http2`.
    #[arg(long)]
    pub http2: bool,

    /// Speak HTTP/2 on plain TCP without asking (h2c with prior knowledge), as `vblast
    /// run --http2-prior-knowledge`.
    #[arg(long, conflicts_with = "http2")]
    pub http2_prior_knowledge: bool,

    /// Keep what the replay set up (mounts, secrets, roles) instead of removing it.
    #[arg(long)]
    pub keep: bool,

    #[command(flatten)]
    pub target: super::target::TargetArgs,

    #[command(flatten)]
    pub tls: super::tls::TlsArgs,

    #[command(flatten)]
    pub show: super::ShowArgs,

    #[command(flatten)]
    pub server: super::server::ServerArgs,
}
