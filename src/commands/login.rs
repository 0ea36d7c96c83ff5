//! `--auth-method` and its flags into one `vault::login::AdminLogin`, its secrets read from
//! their files or the environment; and a run wrapped in the login (log in, the token for
//! the whole run, revoked when it ends).

use std::path::{Path, PathBuf};

use super::env;
use crate::cli::login::{AuthMethod, LoginArgs};
use crate::cli::target::TargetArgs;
use crate::error::Error;
use crate::vault::login::{AdminLogin, LoginMethod};

/// Where a pod's projected service-account token is.
pub const KUBERNETES_JWT: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// A secret's file (its first line, trimmed), never echoed.
fn read_secret(path: &Path, what: &str) -> Result<String, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::input(format!(
            "cannot read the {what} file {}: {}",
            path.display(),
            crate::error::io_text(&e)
        ))
    })?;
    let value = text.lines().next().unwrap_or("").trim().to_string();
    if value.is_empty() {
        return Err(Error::input(format!(
            "the {what} file {} is empty",
            path.display()
        )));
    }
    Ok(value)
}

/// A secret from `--FLAG-file`, else the environment variable `var`.
fn secret(file: Option<&PathBuf>, var: &str, flag: &str, what: &str) -> Result<String, Error> {
    match file {
        Some(p) => read_secret(p, what),
        None => env(var).ok_or_else(|| {
            Error::input(format!(
                "the login needs the {what}: give {flag} FILE or {var}"
            ))
        }),
    }
}

fn role(args: &LoginArgs, method: &str) -> Result<String, Error> {
    args.auth_role
        .clone()
        .ok_or_else(|| Error::input(format!("--auth-method {method} needs --auth-role NAME")))
}

fn username(args: &LoginArgs) -> Result<String, Error> {
    let name = args
        .auth_username
        .clone()
        .ok_or_else(|| Error::input("--auth-method userpass needs --auth-username NAME"))?;
    if name.is_empty()
        || name.contains(['/', '?', '#', '%', ' '])
        || name.chars().any(|c| c.is_control())
    {
        return Err(Error::input(format!(
            "--auth-username {name:?}: a user name without '/', '?', '#', '%', spaces or control characters"
        )));
    }
    Ok(name)
}

/// The login these flags describe (None without `--auth-method`), checked.
pub fn admin_login(args: &LoginArgs, target: &TargetArgs) -> Result<Option<AdminLogin>, Error> {
    if args.auth_method.is_some() && (target.token.is_some() || target.token_file.is_some()) {
        return Err(Error::input(
            "--auth-method logs in for the run's token: leave out --token and --token-file",
        ));
    }
    login_of(args)
}

/// The login `args` describe (None without an auth method), its secrets read; the
/// caller has refused a token given beside it (`admin_login`; `vblast vault-benchmark
/// run`'s `-vault_token`).
pub fn login_of(args: &LoginArgs) -> Result<Option<AdminLogin>, Error> {
    let Some(m) = args.auth_method else {
        return Ok(None);
    };
    let method = match m {
        AuthMethod::Approle => LoginMethod::AppRole {
            role_id: secret(
                args.auth_role_id_file.as_ref(),
                "VBLAST_AUTH_ROLE_ID",
                "--auth-role-id-file",
                "role id",
            )?,
            secret_id: secret(
                args.auth_secret_id_file.as_ref(),
                "VBLAST_AUTH_SECRET_ID",
                "--auth-secret-id-file",
                "secret id",
            )?,
        },
        AuthMethod::Jwt => LoginMethod::Jwt {
            role: role(args, "jwt")?,
            jwt: match &args.auth_jwt_file {
                Some(p) => read_secret(p, "JWT")?,
                None => return Err(Error::input("--auth-method jwt needs --auth-jwt-file PATH")),
            },
        },
        AuthMethod::Kubernetes => LoginMethod::Kubernetes {
            role: role(args, "kubernetes")?,
            jwt: read_secret(
                args.auth_jwt_file
                    .as_deref()
                    .unwrap_or(Path::new(KUBERNETES_JWT)),
                "service-account token",
            )?,
        },
        AuthMethod::Cert => LoginMethod::Cert {
            role: args.auth_role.clone(),
        },
        AuthMethod::Userpass => LoginMethod::Userpass {
            username: username(args)?,
            password: secret(
                args.auth_password_file.as_ref(),
                "VBLAST_AUTH_PASSWORD",
                "--auth-password-file",
                "password",
            )?,
        },
    };
    let mount = args
        .auth_mount
        .clone()
        .unwrap_or_else(|| method.name().to_string())
        .trim_matches('/')
        .to_string();
    Ok(Some(AdminLogin { method, mount }))
}

/// Logs in (`AdminLogin::log_in`) at the scenario's target and gives the scenario the
/// login's token; the token lives as long as the returned `LoggedIn`.
pub fn log_in(
    login: &AdminLogin,
    scenario: &mut crate::config::scenario::Scenario,
) -> Result<crate::vault::login::LoggedIn, Error> {
    let at = crate::vault::login::LoginTarget {
        address: &scenario.address,
        tls: scenario.tls.as_ref(),
        namespace: scenario.namespace.clone(),
        timeout: scenario.load.timeout,
    };
    let logged_in = login.log_in(&at)?;
    scenario.token = crate::config::scenario::Token(Some(logged_in.token().to_string()));
    Ok(logged_in)
}
