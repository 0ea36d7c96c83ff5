//! The flag of the local source addresses (`--source-addrs`).

use clap::Args;

/// `--source-addrs`.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Load")]
pub struct SourceArgs {
    /// Bind connections round-robin to these local addresses: a range
    /// (127.0.0.2-127.0.0.4) or a comma list (10.0.0.5,10.0.0.6).
    #[arg(long, value_name = "ADDRS")]
    pub source_addrs: Option<String>,
}
