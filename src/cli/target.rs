//! The server a run talks to: its address, token and namespace.

use std::path::PathBuf;

use clap::Args;

/// `--address`, `--token`, `--token-file`, `--namespace`.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Target")]
pub struct TargetArgs {
    /// Vault address [env: VAULT_ADDR, default http://127.0.0.1:8200]. Repeat it (or give
    /// VAULT_ADDR comma-separated) for the nodes of one HA cluster.
    #[arg(long)]
    pub address: Vec<String>,

    /// Vault token [env: VAULT_TOKEN]. Visible in `ps`: prefer VAULT_TOKEN or --token-file.
    #[arg(long)]
    pub token: Option<String>,

    /// Read the Vault token from this file ("-": standard input).
    #[arg(long, conflicts_with = "token")]
    pub token_file: Option<PathBuf>,

    /// Vault namespace [env: VAULT_NAMESPACE].
    #[arg(long)]
    pub namespace: Option<String>,
}
