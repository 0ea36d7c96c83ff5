//! `--auth-method` and its flags into one `vault::login::AdminLogin`, its secrets read from
//! their files or the environment; and a run wrapped in the login (log in, the token for
//! the whole run, revoked when it ends).
//!
//! What is wrong with the settings is typed (`LoginProblem`: which setting, and how), and
//! the command that parsed the flags renders it in its own flags' form (`FlagStyle`:
//! `--auth-role` for vblast's flags, `-auth_role` for `vblast vault-benchmark run`'s).

use std::path::{Path, PathBuf};

use super::env;
use crate::cli::login::{AuthMethod, LoginArgs};
use crate::cli::target::TargetArgs;
use crate::error::{Cause, Error};
use crate::vault::login::{AdminLogin, LoginMethod};

/// Where a pod's projected service-account token is.
pub const KUBERNETES_JWT: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/// A setting of the tool's login (a flag, in whichever form the command takes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    Method,
    Role,
    RoleIdFile,
    SecretIdFile,
    JwtFile,
    Username,
    PasswordFile,
}

impl Setting {
    /// The flag's words, dash-joined: "auth-role-id-file".
    fn stem(self) -> &'static str {
        match self {
            Setting::Method => "auth-method",
            Setting::Role => "auth-role",
            Setting::RoleIdFile => "auth-role-id-file",
            Setting::SecretIdFile => "auth-secret-id-file",
            Setting::JwtFile => "auth-jwt-file",
            Setting::Username => "auth-username",
            Setting::PasswordFile => "auth-password-file",
        }
    }

    /// What its value stands for, as a placeholder: "NAME", "FILE", "PATH".
    fn placeholder(self) -> &'static str {
        match self {
            Setting::Method | Setting::Role | Setting::Username => "NAME",
            Setting::JwtFile => "PATH",
            Setting::RoleIdFile | Setting::SecretIdFile | Setting::PasswordFile => "FILE",
        }
    }

    /// The secret its file holds, for `method`: "role id", "service-account token".
    fn secret(self, method: AuthMethod) -> &'static str {
        match (self, method) {
            (Setting::RoleIdFile, _) => "role id",
            (Setting::SecretIdFile, _) => "secret id",
            (Setting::JwtFile, AuthMethod::Kubernetes) => "service-account token",
            (Setting::JwtFile, _) => "JWT",
            _ => "password",
        }
    }
}

/// How the command that parsed the login's flags writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagStyle {
    /// vblast's own: `--auth-role NAME`.
    Gnu,
    /// `vblast vault-benchmark run`'s Go-style flags: `-auth_role=NAME`.
    Go,
}

impl FlagStyle {
    /// The setting's flag: "--auth-role" or "-auth_role".
    pub fn flag(self, s: Setting) -> String {
        match self {
            FlagStyle::Gnu => format!("--{}", s.stem()),
            FlagStyle::Go => format!("-{}", s.stem().replace('-', "_")),
        }
    }

    /// The flag with `value`: "--auth-role NAME" or "-auth_role=NAME".
    fn given(self, s: Setting, value: &str) -> String {
        match self {
            FlagStyle::Gnu => format!("{} {value}", self.flag(s)),
            FlagStyle::Go => format!("{}={value}", self.flag(s)),
        }
    }
}

/// What is wrong with the login's settings, typed: the command renders it with its own
/// flags' names (`render`).
#[derive(Debug)]
pub enum LoginProblem {
    /// `method` needs `setting`, which was not given (`var`: the environment variable
    /// that may give it instead).
    Missing {
        method: AuthMethod,
        setting: Setting,
        var: Option<&'static str>,
    },
    /// The file of `setting` could not be read.
    Unreadable {
        method: AuthMethod,
        setting: Setting,
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file of `setting` is empty.
    Empty {
        method: AuthMethod,
        setting: Setting,
        path: PathBuf,
    },
    /// A user name that cannot be part of the login's path.
    BadUsername { name: String },
    /// The cert login without a client certificate (or over plain HTTP).
    NoClientCert,
}

impl LoginProblem {
    /// The problem as bad input, naming the flags as `style` writes them.
    pub fn render(self, style: FlagStyle) -> Error {
        let method = |m: AuthMethod| style.given(Setting::Method, method_name(m));
        Error::input(match self {
            LoginProblem::Missing {
                method: m,
                setting,
                var: Some(var),
            } => Cause::Said(format!(
                "{} needs the {}: give {} or {var}",
                method(m),
                setting.secret(m),
                style.given(setting, setting.placeholder()),
            )),
            LoginProblem::Missing {
                method: m,
                setting,
                var: None,
            } => Cause::Said(format!(
                "{} needs {}",
                method(m),
                style.given(setting, setting.placeholder()),
            )),
            LoginProblem::Unreadable {
                method: m,
                setting,
                path,
                source,
            } => Cause::io(
                format!(
                    "{}: cannot read the {} file {}",
                    style.flag(setting),
                    setting.secret(m),
                    path.display()
                ),
                source,
            ),
            LoginProblem::Empty {
                method: m,
                setting,
                path,
            } => Cause::Said(format!(
                "{}: the {} file {} is empty",
                style.flag(setting),
                setting.secret(m),
                path.display()
            )),
            LoginProblem::BadUsername { name } => Cause::Said(format!(
                "{}: a user name without '/', '?', '#', '%', spaces or control characters",
                style.given(Setting::Username, &format!("{name:?}")),
            )),
            LoginProblem::NoClientCert => Cause::Said(format!(
                "{} logs in with the client certificate: give {} and an https:// address",
                method(AuthMethod::Cert),
                match style {
                    FlagStyle::Gnu => {
                        "--client-cert and --client-key (or VAULT_CLIENT_CERT and VAULT_CLIENT_KEY)"
                    }
                    FlagStyle::Go => "VAULT_CLIENT_CERT and VAULT_CLIENT_KEY",
                }
            )),
        })
    }
}

/// The method as its flag's value names it.
fn method_name(m: AuthMethod) -> &'static str {
    match m {
        AuthMethod::Approle => "approle",
        AuthMethod::Jwt => "jwt",
        AuthMethod::Kubernetes => "kubernetes",
        AuthMethod::Cert => "cert",
        AuthMethod::Userpass => "userpass",
    }
}

/// A secret's file (its first line, trimmed), never echoed.
fn read_secret(path: &Path, method: AuthMethod, setting: Setting) -> Result<String, LoginProblem> {
    let text = std::fs::read_to_string(path).map_err(|source| LoginProblem::Unreadable {
        method,
        setting,
        path: path.to_path_buf(),
        source,
    })?;
    let value = text.lines().next().unwrap_or("").trim().to_string();
    if value.is_empty() {
        return Err(LoginProblem::Empty {
            method,
            setting,
            path: path.to_path_buf(),
        });
    }
    Ok(value)
}

/// A secret from its file's setting, else the environment variable `var`.
fn secret(
    file: Option<&PathBuf>,
    method: AuthMethod,
    setting: Setting,
    var: &'static str,
) -> Result<String, LoginProblem> {
    match file {
        Some(p) => read_secret(p, method, setting),
        None => env(var).ok_or(LoginProblem::Missing {
            method,
            setting,
            var: Some(var),
        }),
    }
}

/// A setting `method` cannot do without.
fn needed(
    value: &Option<String>,
    method: AuthMethod,
    setting: Setting,
) -> Result<String, LoginProblem> {
    value.clone().ok_or(LoginProblem::Missing {
        method,
        setting,
        var: None,
    })
}

fn username(args: &LoginArgs) -> Result<String, LoginProblem> {
    let name = needed(&args.auth_username, AuthMethod::Userpass, Setting::Username)?;
    if name.is_empty()
        || name.contains(['/', '?', '#', '%', ' '])
        || name.chars().any(|c| c.is_control())
    {
        return Err(LoginProblem::BadUsername { name });
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
    login_of(args).map_err(|p| p.render(FlagStyle::Gnu))
}

/// The login `args` describe (None without an auth method), its secrets read; the
/// caller has refused a token given beside it (`admin_login`; `vblast vault-benchmark
/// run`'s `-vault_token`) and renders a problem in its flags' form.
pub fn login_of(args: &LoginArgs) -> Result<Option<AdminLogin>, LoginProblem> {
    let Some(m) = args.auth_method else {
        return Ok(None);
    };
    let method = match m {
        AuthMethod::Approle => LoginMethod::AppRole {
            role_id: secret(
                args.auth_role_id_file.as_ref(),
                m,
                Setting::RoleIdFile,
                "VBLAST_AUTH_ROLE_ID",
            )?,
            secret_id: secret(
                args.auth_secret_id_file.as_ref(),
                m,
                Setting::SecretIdFile,
                "VBLAST_AUTH_SECRET_ID",
            )?,
        },
        AuthMethod::Jwt => LoginMethod::Jwt {
            role: needed(&args.auth_role, m, Setting::Role)?,
            jwt: match &args.auth_jwt_file {
                Some(p) => read_secret(p, m, Setting::JwtFile)?,
                None => {
                    return Err(LoginProblem::Missing {
                        method: m,
                        setting: Setting::JwtFile,
                        var: None,
                    });
                }
            },
        },
        AuthMethod::Kubernetes => LoginMethod::Kubernetes {
            role: needed(&args.auth_role, m, Setting::Role)?,
            jwt: read_secret(
                args.auth_jwt_file
                    .as_deref()
                    .unwrap_or(Path::new(KUBERNETES_JWT)),
                m,
                Setting::JwtFile,
            )?,
        },
        AuthMethod::Cert => LoginMethod::Cert {
            role: args.auth_role.clone(),
        },
        AuthMethod::Userpass => LoginMethod::Userpass {
            username: username(args)?,
            password: secret(
                args.auth_password_file.as_ref(),
                m,
                Setting::PasswordFile,
                "VBLAST_AUTH_PASSWORD",
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
/// login's token; the token lives as long as the returned `LoggedIn`. `style`: how the
/// command that parsed the login's flags names them, in the message of a cert login
/// without a client certificate.
pub fn log_in(
    login: &AdminLogin,
    scenario: &mut crate::config::scenario::Scenario,
    style: FlagStyle,
) -> Result<crate::vault::login::LoggedIn, Error> {
    let with_cert = scenario
        .tls
        .as_ref()
        .is_some_and(|t| t.client_cert.is_some());
    if matches!(login.method, LoginMethod::Cert { .. }) && !with_cert {
        return Err(LoginProblem::NoClientCert.render(style));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(method: AuthMethod) -> LoginArgs {
        LoginArgs {
            auth_method: Some(method),
            auth_mount: None,
            auth_role: None,
            auth_role_id_file: None,
            auth_secret_id_file: None,
            auth_jwt_file: None,
            auth_username: None,
            auth_password_file: None,
        }
    }

    fn said(p: LoginProblem, style: FlagStyle) -> String {
        p.render(style).to_string()
    }

    #[test]
    fn a_problem_names_the_flag_in_the_form_the_command_takes() {
        let missing = || login_of(&args(AuthMethod::Jwt)).unwrap_err();
        assert_eq!(
            said(missing(), FlagStyle::Gnu),
            "--auth-method jwt needs --auth-role NAME"
        );
        assert_eq!(
            said(missing(), FlagStyle::Go),
            "-auth_method=jwt needs -auth_role=NAME"
        );
        let bad = || {
            let mut a = args(AuthMethod::Userpass);
            a.auth_username = Some("a/b".into());
            login_of(&a).unwrap_err()
        };
        assert!(matches!(bad(), LoginProblem::BadUsername { .. }));
        assert!(
            said(bad(), FlagStyle::Go).starts_with("-auth_username=\"a/b\": a user name without")
        );
        assert!(
            said(bad(), FlagStyle::Gnu).starts_with("--auth-username \"a/b\": a user name without")
        );
        let unreadable = || {
            let mut a = args(AuthMethod::Approle);
            a.auth_role_id_file = Some("/nonexistent/vblast-role-id".into());
            login_of(&a).unwrap_err()
        };
        assert!(
            said(unreadable(), FlagStyle::Go)
                .starts_with("-auth_role_id_file: cannot read the role id file /nonexistent/")
        );
        assert!(
            said(unreadable(), FlagStyle::Gnu)
                .starts_with("--auth-role-id-file: cannot read the role id file /nonexistent/")
        );
    }
}
