//! The cleanup flags: `--cleanup-timeout` (every run), `--orphans` and `--yes`
//! (`vblast cleanup`).

use std::time::Duration;

use clap::Args;

/// `--cleanup-timeout`, `--orphans`, `--yes`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Cleanup")]
pub struct CleanupArgs {
    /// How long cleanup waits for the server to remove what the run made (disabling an
    /// auth path revokes every token its logins made; a database mount, every lease).
    /// Past it, vblast says what is left and the command that finishes the job.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::config::units::parse_duration)]
    pub cleanup_timeout: Duration,

    /// `vblast cleanup`: list every `vblast-` mount, auth path, policy, audit device and
    /// identity object on the server, with its age (remove them with --yes).
    #[arg(long)]
    pub orphans: bool,

    /// `vblast cleanup --orphans`: remove what it lists.
    #[arg(long, requires = "orphans")]
    pub yes: bool,
}
