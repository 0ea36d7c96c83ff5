//! The shard flags: `--shard`, `--start-at`, `--run-id`, `--external-setup`,
//! `--shards-wait`.

use std::time::Duration;

use clap::Args;

use crate::config::spread::Shard;

/// `--shard`, `--start-at`, `--run-id`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Shards")]
pub struct ShardArgs {
    /// Run shard I of N of the load (0 <= I < N): its share of -c, -n and the -R schedule.
    /// The shards' results files merge with `vblast report` into the whole run.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,

    /// Start the measured run at this wall-clock instant (RFC 3339, e.g.
    /// 2026-12-01T10:00:00Z), after setup and opening connections: every shard starts its
    /// clock together.
    #[arg(long, value_name = "RFC3339")]
    pub start_at: Option<String>,

    /// Identifies the run in every shard's results file (default with --start-at: derived
    /// from the start instant and the scenario).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,

    /// A sharded Vault run's shared fixture comes from `vblast setup --run-id ID` and goes
    /// with `vblast cleanup` (default: shard 0 sets it up, and removes it once every shard
    /// has ended). Give it to every shard or to none (`--external-setup=false` is the default).
    #[arg(
        long,
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        default_value = "false",
        action = clap::ArgAction::Set
    )]
    pub external_setup: bool,

    /// Shard 0 (sharing a fixture it set up): how long, after its own load, it waits for the
    /// other shards to end before it removes the fixture (default: until --start-at +
    /// -z + --timeout + 60 s when both are given, else 10m).
    #[arg(long, value_name = "DURATION", value_parser = crate::config::units::parse_duration)]
    pub shards_wait: Option<Duration>,
}
