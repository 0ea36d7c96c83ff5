//! The nodes of an HA cluster: vault-benchmark's cluster file, and which nodes take the load.

use std::path::PathBuf;

use clap::Args;

/// `--cluster`, `--nodes`.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Cluster")]
pub struct ClusterArgs {
    /// The nodes of an HA cluster from vault-benchmark's cluster_json:
    /// {"token": "...", "vault_addrs": ["http://...", ...]}.
    #[arg(long, value_name = "FILE")]
    pub cluster: Option<PathBuf>,

    /// Which nodes of a cluster take the load: the active one (followed through a
    /// failover), all unsealed ones, or each in turn [default: active].
    #[arg(long, value_enum)]
    pub nodes: Option<crate::config::cluster::NodesMode>,
}
