//! What a run sends: Vault operations (`--op`, `--scenario`, `--list-ops`) with the setup
//! flags and the operations' own options, or URL mode's one request.

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

    // The operations' own options (each is read by the operations that name it).
    /// Auth method of the login-read scenario (userpass).
    #[arg(long)]
    pub auth: Option<String>,

    /// Users of the login-read scenario, created at setup (default 100).
    #[arg(long)]
    pub users: Option<u64>,

    /// KV engine version for a mount vblast creates (or expects with --mount).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub kv_version: u8,

    /// Use this existing KV mount instead of creating a fresh one.
    #[arg(long)]
    pub mount: Option<String>,

    /// Secrets seeded before the run.
    #[arg(long, default_value_t = 1000)]
    pub secrets: u64,

    /// Size of each secret's value, in bytes.
    #[arg(long, default_value_t = 100)]
    pub secret_size: usize,

    /// TTL of the tokens logins and token-create make (approle-login, userpass-login,
    /// token-*; default 2m).
    #[arg(long)]
    pub token_ttl: Option<String>,

    /// Type of those tokens: service or batch.
    #[arg(long)]
    pub token_type: Option<String>,

    /// Transit key type (aes256-gcm96, ecdsa-p256, ed25519, rsa-2048, ...).
    #[arg(long)]
    pub key_type: Option<String>,

    /// Bytes of plaintext or input per transit request (default 128).
    #[arg(long)]
    pub payload_size: Option<usize>,

    /// pki-issue, pki-sign: certificates are not stored on the server (no_store).
    #[arg(long)]
    pub no_store: bool,

    /// db-creds: the database, postgres://USER:PASS@HOST:PORT/DB or mysql://USER:PASS@HOST:PORT/DB.
    #[arg(long)]
    pub db_url: Option<String>,

    /// db-creds: postgresql or mysql (default: from the --db-url scheme).
    #[arg(long)]
    pub db_plugin: Option<String>,

    /// cert-login: CA certificate (PEM) that issued the client certificate, registered as
    /// the trusted role (default: the --client-cert file itself).
    #[arg(long)]
    pub client_ca: Option<PathBuf>,
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
