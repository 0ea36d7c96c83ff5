//! The login-then-read scenario (`--scenario login-read`): each iteration logs in as the
//! next of `--users` userpass users in turn (login i as user i mod N; the step
//! `login-read/login`) and reads a seeded KV secret
//! with the token that login returned, on the same connection (`login-read`); the read
//! uses the token up, so the next read logs in again. Setup seeds the secrets (as
//! `kv-read` does), writes a policy that lets its users read exactly those secrets, and
//! creates the users; cleanup disables the auth path (revoking every token the logins
//! made), deletes the policy and removes the secrets.
//!
//! Shared by the shards of a run (src/session/fixtures.rs): setup seeds the secrets (as kv-read's
//! shared fixture) and writes the policy; no password travels: each shard makes its own
//! userpass path (`vblast-read-xxxxxxxx-yyyyyyyy`: a prefix derived from the run id, then
//! 8 random hex digits) with its own users and a random password kept in memory, and
//! disables it at its end; cleanup disables every path under the prefix (a killed
//! shard's), deletes the policy and removes the secrets.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::auth::{DEFAULT_TOKEN_TTL, check_token_settings};
use super::{
    Created, Fixture, OpInfo, OptionKind, OptionSpec, OptionValues, SetupCtx, VaultBenchmark,
    VaultOp, call, delete_policy, disable_auth, needs_setup, random_secret,
    shared::{self, Mode},
};
use crate::capture::{Capture, Expect};
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::bulk::{self, Job};
use crate::vault::client::Client;
use crate::workload::Operation;

/// The slot holding the token of the connection's last login.
const TOKEN_SLOT: u8 = 2;

pub const LOGIN_READ: OpInfo = OpInfo {
    name: "login-read",
    about: "scenario: log in as the next of --users users in turn, then read a secret with that token",
    request: "POST /v1/auth/<path>/login/<user>, then GET /v1/<mount>/data/s<i> with its token",
    doc: "Run with `--scenario login-read`. Each iteration logs in as the next of `--users` userpass users in turn (the step `login-read/login`) and reads a seeded KV secret with the token that login returned, on the same connection (`login-read`); the read uses the token up, so the next read logs in again. Setup seeds the secrets (as kv-read does), writes a policy that lets its users read exactly those secrets, and creates the users; cleanup disables the auth path (revoking every token the logins made), deletes the policy and removes the secrets. Shards share the secrets and the policy; each makes its own userpass path and users.",
    options: &[
        OptionSpec {
            flag: "auth",
            value_name: "userpass",
            kind: OptionKind::Text,
            default: None,
            help: "Auth method of the login-read scenario (userpass)",
        },
        OptionSpec {
            flag: "users",
            value_name: "N",
            kind: OptionKind::Count { min: 0 },
            default: None,
            help: "Users of the login-read scenario, created at setup (default 100)",
        },
        OptionSpec {
            help: "secrets seeded (as kv-read), readable by every user through a policy vblast writes",
            ..super::kv::SECRETS
        },
        OptionSpec {
            help: "size of each secret's value (as kv-read)",
            ..super::kv::SECRET_SIZE
        },
        OptionSpec {
            help: "as kv-read",
            ..super::kv::KV_VERSION
        },
        OptionSpec {
            help: "as kv-read",
            ..super::kv::MOUNT
        },
        OptionSpec {
            help: "the logins' tokens (default 2m); all revoked at cleanup",
            ..super::auth::TOKEN_TTL
        },
        OptionSpec {
            help: "the logins' tokens (default service)",
            ..super::auth::TOKEN_TYPE
        },
    ],
    also: &[],
    config_from,
    build,
    vault_benchmark: VaultBenchmark::NoType,
    fixture: Fixture::Shared,
    bounds: &[],
};

/// The scenario's config: the KV part is kv-read's.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginReadConfig {
    pub auth: String,
    pub users: u64,
    pub token_ttl: String,
    pub token_type: String,
    pub kv: Value,
}

fn config_from(f: &OptionValues) -> Value {
    serde_json::to_value(LoginReadConfig {
        auth: f.text("auth").unwrap_or_else(|| "userpass".into()),
        users: f.number("users").unwrap_or(100),
        token_ttl: f
            .text("token-ttl")
            .unwrap_or_else(|| DEFAULT_TOKEN_TTL.into()),
        token_type: f.text("token-type").unwrap_or_else(|| "service".into()),
        kv: super::kv::config_from(f),
    })
    .unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: LoginReadConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    if config.auth != "userpass" {
        return Err(Cause::from(format!(
            "--auth {} is not supported by login-read: use userpass",
            config.auth
        )));
    }
    if config.users == 0 || config.users > 1_000_000 {
        return Err(Cause::from(format!(
            "--users {} is not between 1 and 1000000",
            config.users
        )));
    }
    check_token_settings(&config.token_ttl, &config.token_type)?;
    let kv = super::kv::build_read(&config.kv)?;
    Ok(Box::new(LoginRead {
        config,
        kv,
        policy: None,
        path: None,
        password: String::new(),
        sweep: None,
    }))
}

struct LoginRead {
    config: LoginReadConfig,
    /// The secrets, set up and removed as kv-read's.
    kv: Box<dyn VaultOp>,
    policy: Option<String>,
    path: Option<String>,
    /// The users' password (never printed).
    password: String,
    /// Cleanup of a shared run: the prefix of the shards' own auth paths.
    sweep: Option<String>,
}

/// The user names: "u" and the index, padded as secret names are.
fn user_name(i: u64, count: u64) -> String {
    format!("u{}", &super::kv::secret_name(i, count)[1..])
}

impl LoginRead {
    /// The policy path matching exactly the seeded secrets ("m/data/s*").
    fn secrets_glob(&self) -> String {
        let read = self.kv.operation();
        let first = match read.request.path.first() {
            Some(Piece::Lit(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        format!("{}*", first.trim_start_matches("/v1/"))
    }

    /// Writes the policy letting the users read the secrets; cleanup deletes it from then on.
    fn write_policy(&mut self, client: &mut Client, policy: &str) -> Result<(), Cause> {
        self.policy = Some(policy.to_string());
        let rules = format!(
            "path \"{}\" {{ capabilities = [\"read\"] }}\n",
            self.secrets_glob()
        );
        call(
            client,
            "PUT",
            &format!("/v1/sys/policies/acl/{policy}"),
            Some(&json!({ "policy": rules })),
            &format!("writing policy '{policy}'"),
        )
        .map(drop)
    }

    fn prepare(&mut self, ctx: &SetupCtx) -> Result<(), Cause> {
        let mut client = (ctx.make_client)();
        let policy = ctx.naming.random_name("vblast-read-");
        self.write_policy(&mut client, &policy)?;
        let path = ctx.naming.random_name("vblast-userpass-");
        self.users_at(ctx, &mut client, path, &policy)
    }

    /// Enables userpass at `path` (disabled by cleanup from then on) and creates the
    /// users there, with one random password kept in memory and `policy`.
    fn users_at(
        &mut self,
        ctx: &SetupCtx,
        client: &mut Client,
        path: String,
        policy: &str,
    ) -> Result<(), Cause> {
        self.path = Some(path.clone());
        call(
            client,
            "POST",
            &format!("/v1/sys/auth/{path}"),
            Some(&json!({"type": "userpass", "description": "vblast load test (temporary)"})),
            &format!("enabling userpass auth at '{path}'"),
        )
        .inspect_err(|_| self.path = None)?;
        self.password = random_secret();
        let user = json!({
            "password": self.password,
            "token_ttl": self.config.token_ttl,
            "token_max_ttl": self.config.token_ttl,
            "token_type": self.config.token_type,
            "token_policies": ["default", policy],
        })
        .to_string();
        let users = self.config.users;
        let job = Job {
            name: "userpass users",
            unit: "users",
            flag: Some("--users"),
            count: users,
        };
        // The users go with the auth path at cleanup, however far this got.
        let made = bulk::each(ctx.make_client, ctx.log, ctx.stop, &job, &|client, i| {
            let name = user_name(i, users);
            let r = client.request(
                "POST",
                &format!("/v1/auth/{path}/users/{name}"),
                Some(user.as_bytes()),
            )?;
            if (200..300).contains(&r.status) {
                Ok(())
            } else {
                Err(Cause::Http {
                    what: format!("creating user '{name}' at '{path}'"),
                    status: r.status,
                    excerpt: r.error_text(),
                })
            }
        });
        made.result.map_err(|e| Cause::from(e.to_string()))
    }
}

impl VaultOp for LoginRead {
    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, "login-read")
    }

    fn setup(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, "login-read")?;
        self.kv.setup(ctx)?;
        if let Some(s) = ctx.stop.signal() {
            return Err(Error::Stopped(s));
        }
        // Shared runs (src/session/fixtures.rs): names derived in one order in every mode, the
        // policy, then the prefix of the shards' own paths.
        let result = match shared::mode(ctx) {
            Mode::Own => self.prepare(ctx),
            Mode::Create => {
                let policy = ctx.naming.random_name("vblast-read-");
                // The shards' own paths' prefix, in the state file for `vblast cleanup`.
                ctx.naming.random_prefix("vblast-read-");
                let mut client = (ctx.make_client)();
                self.write_policy(&mut client, &policy)
            }
            Mode::Remove => {
                self.policy = Some(ctx.naming.random_name("vblast-read-"));
                self.sweep = Some(format!("{}-", ctx.naming.random_prefix("vblast-read-")));
                Ok(())
            }
            Mode::Join => {
                let policy = ctx.naming.random_name("vblast-read-");
                shared::wait_policy(ctx, "login-read ", &policy)?;
                let path = shared::own_name(&ctx.naming.random_name("vblast-read-"));
                let mut client = (ctx.make_client)();
                self.users_at(ctx, &mut client, path, &policy)
            }
        };
        result.map_err(|e| match ctx.stop.signal() {
            Some(s) => Error::Stopped(s),
            None => Error::setup(e),
        })
    }

    fn operations(&self) -> Vec<Operation> {
        let mut read = self.kv.operation();
        read.name = "login-read".into();
        read.request.captured_headers = vec![("X-Vault-Token".into(), TOKEN_SLOT)];
        read.needs = Some(TOKEN_SLOT);
        read.consumes = true;
        read.expect = Some(Expect::present(if self.kv_version() == 2 {
            "data.data.value"
        } else {
            "data.value"
        }));
        let path = self.path.as_deref().unwrap_or("unset");
        let mut login = Operation::new(
            "login-read/login",
            RequestSpec {
                method: "POST".into(),
                path: vec![
                    Piece::lit(format!("/v1/auth/{path}/login/u")),
                    Piece::Turn {
                        count: self.config.users,
                    },
                ],
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: Some(vec![Piece::lit(
                    json!({ "password": self.password }).to_string(),
                )]),
                captured_headers: vec![],
            },
        );
        login.weight = 0;
        login.capture = Some(Capture {
            slot: TOKEN_SLOT,
            path: vec!["auth".into(), "client_token".into()],
        });
        vec![read, login]
    }

    fn operation(&self) -> Operation {
        let mut ops = self.operations();
        ops.swap_remove(0)
    }

    fn created(&self) -> Vec<Created> {
        let mut out = Vec::new();
        if let Some(prefix) = &self.sweep {
            out.push(Created::shards_auth_paths("userpass", prefix));
        }
        if let Some(p) = &self.path {
            let holds = format!(" ({} users)", self.config.users);
            out.push(Created::auth_path("userpass", p, &holds));
        }
        if let Some(policy) = &self.policy {
            out.push(Created::policy(policy));
        }
        out.extend(self.kv.created());
        out
    }

    fn cleanup(&mut self, client: &mut Client, stop: &Stop) -> Result<(), Cause> {
        if let Some(prefix) = self.sweep.clone() {
            shared::disable_auth_under(client, &prefix)?;
            self.sweep = None;
        }
        disable_auth(client, &mut self.path)?;
        delete_policy(client, &mut self.policy)?;
        self.kv.cleanup(client, stop)
    }
}

impl LoginRead {
    fn kv_version(&self) -> u64 {
        self.config
            .kv
            .get("version")
            .and_then(Value::as_u64)
            .unwrap_or(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_are_padded_like_the_login_path() {
        assert_eq!(user_name(0, 1000), "u000");
        assert_eq!(user_name(999, 1000), "u999");
        assert_eq!(user_name(0, 1), "u0");
        assert_eq!(
            crate::template::index_width(1000),
            user_name(5, 1000).len() - 1
        );
    }
}
