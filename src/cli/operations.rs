//! What a run sends: Vault operations (`--op`, `--scenario`, `--list-ops`) with the setup
//! flags (the operations' own options come from the registry: `ops`), or URL mode's one
//! request.

use std::path::PathBuf;

use clap::Args;

/// Vault mode: the operations and their options.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Operations")]
pub struct OperationArgs {
    /// Vault operation, or a weighted mix: kv-read, or kv-read:80,kv-write:20 (see --list-ops).
    #[arg(long)]
    pub op: Option<String>,

    /// A scenario instead of --op: login-read (log in, then read a secret with the token).
    #[arg(long, conflicts_with = "op")]
    pub scenario: Option<String>,

    /// List the Vault operations with their options, then exit.
    #[arg(long)]
    pub list_ops: bool,

    /// Keep the mount vblast created (default: removed after the run).
    #[arg(long)]
    pub keep: bool,

    /// Use the target as it is: no mount, no seeding, no checks of the token.
    #[arg(long)]
    pub no_setup: bool,
}

/// URL mode: the request sent.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "URL mode")]
pub struct RequestArgs {
    /// URL mode: request method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,

    /// Extra request header "Name: value" (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,

    /// URL mode: request body.
    #[arg(short = 'd', long = "data", conflicts_with = "post_file")]
    pub data: Option<String>,

    /// URL mode: request body from a file.
    #[arg(short = 'p', long = "post-file")]
    pub post_file: Option<PathBuf>,

    /// Content-Type of the body (URL mode).
    #[arg(short = 'T', long = "content-type")]
    pub content_type: Option<String>,
}
