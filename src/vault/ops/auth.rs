//! The login family: `approle-login` and `userpass-login`. Setup enables the auth method
//! at a fresh path (`vblast-approle-xxxxxxxx`, `vblast-userpass-xxxxxxxx`) with one role
//! or user whose tokens carry only the `default` policy and a short TTL; each request logs
//! in and must answer with `auth.client_token`. Cleanup disables the path, which revokes
//! every token its logins made.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    Created, OpFlags, OpInfo, SetupCtx, VaultOp, call, disable_auth, json_str, needs_setup,
    random_name, random_secret, setup_with,
};
use crate::capture::Expect;
use crate::error::Error;
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::workload::Operation;

/// TTL of login tokens unless `--token-ttl` says otherwise.
pub const DEFAULT_TOKEN_TTL: &str = "2m";
/// The role or user vblast creates.
pub const NAME: &str = "vblast";

const OPTIONS: &[(&str, &str)] = &[
    (
        "--token-ttl DURATION",
        "TTL of each login's token (default 2m); all are revoked at cleanup",
    ),
    (
        "--token-type service|batch",
        "type of the tokens (default service; batch spares the server)",
    ),
];

pub const APPROLE: OpInfo = OpInfo {
    name: "approle-login",
    about: "POST auth/<path>/login with the role_id and secret_id of a role made at setup",
    options: OPTIONS,
    config_from_flags,
    build: build_approle,
};

pub const USERPASS: OpInfo = OpInfo {
    name: "userpass-login",
    about: "POST auth/<path>/login/vblast with the password of a user made at setup",
    options: OPTIONS,
    config_from_flags,
    build: build_userpass,
};

/// The family's config (vault-benchmark's `token_ttl`, `token_type`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginConfig {
    pub token_ttl: String,
    pub token_type: String,
}

fn config_from_flags(f: &OpFlags) -> Value {
    serde_json::to_value(LoginConfig {
        token_ttl: f
            .token_ttl
            .clone()
            .unwrap_or_else(|| DEFAULT_TOKEN_TTL.into()),
        token_type: f.token_type.clone().unwrap_or_else(|| "service".into()),
    })
    .unwrap_or(Value::Null)
}

/// Checks a token TTL and type as Vault would take them.
pub fn check_token_settings(ttl: &str, kind: &str) -> Result<(), String> {
    crate::units::parse_duration(ttl)
        .map_err(|e| format!("token TTL '{ttl}' is not a duration: {e}"))?;
    if kind != "service" && kind != "batch" {
        return Err(format!("token type '{kind}' is not one of service, batch"));
    }
    Ok(())
}

fn parse(v: &Value) -> Result<LoginConfig, String> {
    let c: LoginConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    check_token_settings(&c.token_ttl, &c.token_type)?;
    Ok(c)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    AppRole,
    Userpass,
}

impl Method {
    fn kind(self) -> &'static str {
        match self {
            Method::AppRole => "approle",
            Method::Userpass => "userpass",
        }
    }
    fn op_name(self) -> &'static str {
        match self {
            Method::AppRole => "approle-login",
            Method::Userpass => "userpass-login",
        }
    }
}

fn build_approle(v: &Value) -> Result<Box<dyn VaultOp>, String> {
    Ok(Box::new(Login::new(Method::AppRole, parse(v)?)))
}

fn build_userpass(v: &Value) -> Result<Box<dyn VaultOp>, String> {
    Ok(Box::new(Login::new(Method::Userpass, parse(v)?)))
}

struct Login {
    method: Method,
    config: LoginConfig,
    /// The auth path, as soon as it may exist.
    path: Option<String>,
    /// The login body (holds the credentials; never printed).
    body: String,
}

impl Login {
    fn new(method: Method, config: LoginConfig) -> Login {
        Login {
            method,
            config,
            path: None,
            body: String::new(),
        }
    }

    fn prepare(&mut self, client: &mut Client) -> Result<(), String> {
        let kind = self.method.kind();
        let path = random_name(&format!("vblast-{kind}-"));
        // From here on the path may exist: the session disables it whatever happens next.
        self.path = Some(path.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/auth/{path}"),
            Some(&json!({"type": kind, "description": "vblast load test (temporary)"})),
            &format!("enabling {kind} auth at '{path}'"),
        )
        .inspect_err(|_| self.path = None)?;
        let token = json!({
            "token_ttl": self.config.token_ttl,
            "token_max_ttl": self.config.token_ttl,
            "token_type": self.config.token_type,
            "token_policies": ["default"],
        });
        match self.method {
            Method::Userpass => {
                let password = random_secret();
                let mut user = token;
                user["password"] = Value::String(password.clone());
                call(
                    client,
                    "POST",
                    &format!("/v1/auth/{path}/users/{NAME}"),
                    Some(&user),
                    &format!("creating user '{NAME}' at '{path}'"),
                )?;
                self.body = json!({ "password": password }).to_string();
            }
            Method::AppRole => {
                let role = format!("/v1/auth/{path}/role/{NAME}");
                call(
                    client,
                    "POST",
                    &role,
                    Some(&token),
                    &format!("creating role '{NAME}' at '{path}'"),
                )?;
                let what = format!("reading the role_id of '{NAME}'");
                let v = call(client, "GET", &format!("{role}/role-id"), None, &what)?;
                let role_id = json_str(&v, "data.role_id", &what)?;
                let what = format!("creating a secret_id for '{NAME}'");
                let v = call(
                    client,
                    "POST",
                    &format!("{role}/secret-id"),
                    Some(&json!({})),
                    &what,
                )?;
                let secret_id = json_str(&v, "data.secret_id", &what)?;
                self.body = json!({ "role_id": role_id, "secret_id": secret_id }).to_string();
            }
        }
        Ok(())
    }
}

impl VaultOp for Login {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, self.method.op_name())
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        setup_with(ctx, self.method.op_name(), |client| self.prepare(client))
    }

    fn operation(&self) -> Operation {
        let path = self.path.as_deref().unwrap_or("unset");
        let url = match self.method {
            Method::AppRole => format!("/v1/auth/{path}/login"),
            Method::Userpass => format!("/v1/auth/{path}/login/{NAME}"),
        };
        login_operation(self.method.op_name(), url, &self.body)
    }

    fn created(&self) -> Vec<Created> {
        match &self.path {
            Some(p) => vec![Created {
                what: format!("{} auth path '{p}'", self.method.kind()),
                remove_with: format!("vault auth disable {p}"),
            }],
            None => Vec::new(),
        }
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), String> {
        disable_auth(client, &mut self.path)
    }
}

/// A login POST whose answer must carry `auth.client_token`.
pub fn login_operation(name: &str, url: String, body: &str) -> Operation {
    let mut op = Operation::new(
        name,
        RequestSpec {
            method: "POST".into(),
            path: vec![Piece::lit(url)],
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(vec![Piece::lit(body)]),
            captured_headers: vec![],
        },
    );
    op.expect = Some(Expect::present("auth.client_token"));
    op
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_settings_are_checked() {
        assert!(check_token_settings("2m", "service").is_ok());
        assert!(check_token_settings("30s", "batch").is_ok());
        assert!(
            check_token_settings("soon", "service")
                .unwrap_err()
                .contains("soon")
        );
        assert!(
            check_token_settings("2m", "default")
                .unwrap_err()
                .contains("service, batch")
        );
    }
}
