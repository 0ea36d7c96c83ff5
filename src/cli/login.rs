//! The tool's own login: `--auth-method` and the flags it needs (secrets only from files or
//! the environment).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// The auth methods vblast logs in with.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    Approle,
    Jwt,
    Kubernetes,
    Cert,
    Userpass,
}

/// `--auth-method` and its settings.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Login")]
pub struct LoginArgs {
    /// Log in with this auth method for the run's token (instead of VAULT_TOKEN, which it
    /// overrides; refused with --token or --token-file). Revoked at the end.
    #[arg(long, value_enum)]
    pub auth_method: Option<AuthMethod>,

    /// The method's mount path (default: the method's name).
    #[arg(long, value_name = "PATH", requires = "auth_method")]
    pub auth_mount: Option<String>,

    /// The role: jwt and kubernetes (required), cert (optional: the certificate's name).
    #[arg(long, value_name = "NAME", requires = "auth_method")]
    pub auth_role: Option<String>,

    /// approle: a file holding the role id [env: VBLAST_AUTH_ROLE_ID].
    #[arg(long, value_name = "FILE", requires = "auth_method")]
    pub auth_role_id_file: Option<PathBuf>,

    /// approle: a file holding the secret id [env: VBLAST_AUTH_SECRET_ID].
    #[arg(long, value_name = "FILE", requires = "auth_method")]
    pub auth_secret_id_file: Option<PathBuf>,

    /// jwt: the JWT's file; kubernetes: the service-account token's file (default
    /// /var/run/secrets/kubernetes.io/serviceaccount/token).
    #[arg(long, value_name = "PATH", requires = "auth_method")]
    pub auth_jwt_file: Option<PathBuf>,

    /// userpass: the user name.
    #[arg(long, value_name = "NAME", requires = "auth_method")]
    pub auth_username: Option<String>,

    /// userpass: a file holding the password [env: VBLAST_AUTH_PASSWORD].
    #[arg(long, value_name = "FILE", requires = "auth_method")]
    pub auth_password_file: Option<PathBuf>,
}
