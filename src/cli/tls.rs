//! TLS to the server: CA, client certificate, server name, record engine, resumption.

use std::path::PathBuf;

use clap::Args;

use crate::net::tls::TlsEngine;

/// The TLS flags (each with its Vault environment variable).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "TLS")]
pub struct TlsArgs {
    /// CA certificate file (PEM) [env: VAULT_CACERT].
    #[arg(long)]
    pub ca_cert: Option<PathBuf>,

    /// Directory of CA certificates (PEM) [env: VAULT_CAPATH].
    #[arg(long)]
    pub ca_path: Option<PathBuf>,

    /// Skip TLS certificate verification [env: VAULT_SKIP_VERIFY].
    #[arg(short = 'k', long)]
    pub insecure: bool,

    /// Client certificate (PEM) for mutual TLS [env: VAULT_CLIENT_CERT].
    #[arg(long)]
    pub client_cert: Option<PathBuf>,

    /// Client key (PEM) [env: VAULT_CLIENT_KEY].
    #[arg(long)]
    pub client_key: Option<PathBuf>,

    /// Name to verify the server certificate against [env: VAULT_TLS_SERVER_NAME].
    #[arg(long)]
    pub tls_server_name: Option<String>,

    /// TLS record layer after the handshake: in-place (default, no allocation per request)
    /// or rustls (its own ClientConnection, the cross-check) [env: VBLAST_TLS_ENGINE].
    #[arg(long, value_enum)]
    pub tls_engine: Option<TlsEngine>,

    /// Full TLS handshakes on every new connection (no session resumption).
    #[arg(long)]
    pub no_tls_resume: bool,
}
