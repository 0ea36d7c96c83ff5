//! The login family: `approle-login` and `userpass-login`. Setup enables the auth method
//! at a fresh path (`vblast-approle-xxxxxxxx`, `vblast-userpass-xxxxxxxx`) with one role
//! or user whose tokens carry only the `default` policy and a short TTL; each request logs
//! in and must answer with `auth.client_token`. Cleanup disables the path, which revokes
//! every token its logins made.
//!
//! Shared by the shards of a run (src/session/fixtures.rs): `vblast setup` makes the path (and the
//! AppRole role) under a name derived from the run id; no credential travels: an AppRole
//! shard makes its own secret_id, a userpass shard its own user (`vblast-xxxxxxxx`, a
//! random password kept in memory), each removed at the shard's end; `vblast cleanup`
//! disables the path.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::vb::{Keys, Mapped, token_settings};
use super::{
    Created, Fixture, OpInfo, OptionKind, OptionSpec, OptionValues, SetupCtx, VaultBenchmark,
    VaultOp, VbType, call, disable_auth, json_str, needs_setup, random_secret, setup_with,
    shared::{self, Mode},
};
use crate::capture::Expect;
use crate::error::{Cause, Error};
use crate::signals::Stop;
use crate::template::{Piece, RequestSpec};
use crate::vault::client::Client;
use crate::vault::fixture::Naming;
use crate::workload::Operation;

/// TTL of login tokens unless `--token-ttl` says otherwise.
pub const DEFAULT_TOKEN_TTL: &str = "2m";
/// The role or user vblast creates.
pub const NAME: &str = "vblast";

/// `--token-ttl`: the TTL of the tokens logins and token-create make.
pub(crate) const TOKEN_TTL: OptionSpec = OptionSpec {
    flag: "token-ttl",
    value_name: "DURATION",
    kind: OptionKind::Text,
    default: None,
    help: "TTL of the tokens logins and token-create make (approle-login, userpass-login, token-*; default 2m)",
};

/// `--token-type`: service or batch.
pub(crate) const TOKEN_TYPE: OptionSpec = OptionSpec {
    flag: "token-type",
    value_name: "service|batch",
    kind: OptionKind::Text,
    default: None,
    help: "Type of those tokens: service or batch",
};

const OPTIONS: &[OptionSpec] = &[TOKEN_TTL, TOKEN_TYPE];

const DOC: &str = "Setup enables the auth method at a fresh path (`vblast-approle-xxxxxxxx`, `vblast-userpass-xxxxxxxx`) with one role or user whose tokens carry only the `default` policy and a short TTL; each request logs in and must answer with `auth.client_token`. Cleanup disables the path, which revokes every token its logins made. Shards share the path; each shard makes its own secret_id or user.";

fn approle_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    let mut role = c.block("role")?;
    role.names(&["role_name"]);
    role.only(
        "bind_secret_id",
        &[json!(true)],
        "its logins always present a secret_id",
    )?;
    silent_token_ttl(&role, out);
    token_settings(&mut role, &mut out.config)?;
    pass_through(&mut role, APPROLE_ROLE_KEYS, &mut out.config, "role");
    role.finish(&mut out.named)?;
    let mut secret = c.block("secret_id")?;
    pass_through(&mut secret, SECRET_ID_KEYS, &mut out.config, "secret_id");
    secret.finish(&mut out.named)
}

/// The role keys vault-benchmark documents beyond the token's TTL and type: sent to the
/// server in the role's write, as vault-benchmark sends them.
const APPROLE_ROLE_KEYS: &[&str] = &[
    "secret_id_bound_cidrs",
    "secret_id_num_uses",
    "secret_id_ttl",
    "local_secret_ids",
    "token_max_ttl",
    "token_policies",
    "policies",
    "token_bound_cidrs",
    "token_explicit_max_ttl",
    "token_no_default_policy",
    "token_num_uses",
    "token_period",
];

/// The keys of vault-benchmark's `secret_id` block, sent when the secret_id is made.
const SECRET_ID_KEYS: &[&str] = &[
    "metadata",
    "cidr_list",
    "num_uses",
    "ttl",
    "token_bound_cidrs",
];

/// Takes each of `keys` the block has into `cfg[into]`, as given.
fn pass_through(k: &mut Keys, keys: &[&str], cfg: &mut Map<String, Value>, into: &str) {
    for key in keys {
        if let Some(v) = k.take(key) {
            super::vb::set_in(cfg, into, key, v);
        }
    }
}

fn userpass_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    // The password: vblast makes a random one (never printed or saved).
    c.names(&["username", "password"]);
    silent_token_ttl(c, out);
    token_settings(c, &mut out.config)?;
    pass_through(c, USERPASS_TOKEN_KEYS, &mut out.config, "role");
    Ok(())
}

/// The token keys of vault-benchmark's userpass test beyond `token_ttl` and `token_type`:
/// sent in the user's write, as vault-benchmark sends them.
const USERPASS_TOKEN_KEYS: &[&str] = &[
    "token_max_ttl",
    "token_policies",
    "token_bound_cidrs",
    "token_explicit_max_ttl",
    "token_no_default_policy",
    "token_num_uses",
    "token_period",
];

/// A deliberate difference said when the file gives no `token_ttl`: vault-benchmark sends
/// none (the mount's default, 768h on a default server), vblast's tokens live 2m.
fn silent_token_ttl(k: &Keys, out: &mut Mapped) {
    if !k.has("token_ttl") {
        out.notes.push(format!(
            "test '{}': {}.token_ttl not given: vblast's tokens live {DEFAULT_TOKEN_TTL} (token_max_ttl the same), where vault-benchmark sends none and the mount's default applies (768h on a default server); set token_ttl to choose",
            k.test, k.path
        ));
    }
}

pub const APPROLE: OpInfo = OpInfo {
    name: "approle-login",
    about: "POST auth/<path>/login with the role_id and secret_id of a role made at setup",
    request: "POST /v1/auth/<path>/login",
    doc: DOC,
    options: OPTIONS,
    also: &[],
    config_from,
    build: build_approle,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "approle_auth",
        config: approle_hcl,
    }]),
    fixture: Fixture::Shared,
    bounds: &[],
};

pub const USERPASS: OpInfo = OpInfo {
    name: "userpass-login",
    about: "POST auth/<path>/login/vblast with the password of a user made at setup",
    request: "POST /v1/auth/<path>/login/<user>",
    doc: DOC,
    options: OPTIONS,
    also: &[],
    config_from,
    build: build_userpass,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "userpass_auth",
        config: userpass_hcl,
    }]),
    fixture: Fixture::Shared,
    bounds: &[],
};

/// The family's config (vault-benchmark's `token_ttl`, `token_type`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginConfig {
    pub token_ttl: String,
    pub token_type: String,
    /// vault-benchmark's other `role` keys, sent in the role's write as it sends them.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub role: Map<String, Value>,
    /// vault-benchmark's `secret_id` block, sent when the secret_id is made.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub secret_id: Map<String, Value>,
}

fn config_from(f: &OptionValues) -> Value {
    serde_json::to_value(LoginConfig {
        token_ttl: f
            .text("token-ttl")
            .unwrap_or_else(|| DEFAULT_TOKEN_TTL.into()),
        token_type: f.text("token-type").unwrap_or_else(|| "service".into()),
        role: Map::new(),
        secret_id: Map::new(),
    })
    .unwrap_or(Value::Null)
}

/// Checks a token TTL and type as Vault would take them.
pub fn check_token_settings(ttl: &str, kind: &str) -> Result<(), Cause> {
    crate::config::units::parse_duration(ttl)
        .map_err(|e| format!("token TTL '{ttl}' is not a duration: {e}"))?;
    if kind != "service" && kind != "batch" {
        return Err(Cause::from(format!(
            "token type '{kind}' is not one of service, batch"
        )));
    }
    Ok(())
}

fn parse(v: &Value) -> Result<LoginConfig, Cause> {
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

fn build_approle(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    Ok(Box::new(Login::new(Method::AppRole, parse(v)?)))
}

fn build_userpass(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    Ok(Box::new(Login::new(Method::Userpass, parse(v)?)))
}

struct Login {
    method: Method,
    config: LoginConfig,
    /// The auth path, as soon as it may exist.
    path: Option<String>,
    /// The login body (holds the credentials; never printed).
    body: String,
    /// A shard of a run sharing the fixture (src/session/fixtures.rs): the auth path and the
    /// accessor of the secret_id this shard made for itself (destroyed at its end).
    own_secret: Option<(String, String)>,
    /// The shared auth path a shard logs in at (not its own: never disabled by it).
    shared_path: Option<String>,
    /// A userpass shard's: the auth path and the user it made for itself (deleted at
    /// its end).
    own_user: Option<(String, String)>,
}

impl Login {
    fn new(method: Method, config: LoginConfig) -> Login {
        Login {
            method,
            config,
            path: None,
            body: String::new(),
            own_secret: None,
            shared_path: None,
            own_user: None,
        }
    }

    /// The fixture shared by a run's shards (src/session/fixtures.rs). AppRole: `vblast setup`
    /// makes the path and the role but no secret_id; a shard waits for the role, reads its
    /// role_id and makes a secret_id of its own. Userpass: `vblast setup` makes the path
    /// alone; a shard waits for it and makes a user of its own. `vblast cleanup` disables
    /// the path. Returns false outside those modes.
    fn shared(&mut self, ctx: &SetupCtx) -> Result<bool, Error> {
        let mode = shared::mode(ctx);
        if mode == Mode::Own {
            return Ok(false);
        }
        match (mode, self.method) {
            (Mode::Create, Method::Userpass) => {
                setup_with(ctx, self.method.op_name(), |client| {
                    self.enable(client, ctx.naming).map(drop)
                })?;
            }
            (Mode::Create, _) => {
                setup_with(ctx, self.method.op_name(), |client| {
                    self.prepare_with(client, ctx.naming, false)
                })?;
            }
            (Mode::Remove, _) => {
                self.path = Some(
                    ctx.naming
                        .random_name(&format!("vblast-{}-", self.method.kind())),
                );
            }
            (_, Method::Userpass) => self.join_userpass(ctx)?,
            _ => {
                let path = ctx.naming.random_name("vblast-approle-");
                let mut client = (ctx.make_client)();
                let role = format!("/v1/auth/{path}/role/{NAME}");
                let what = format!("reading the role_id of '{NAME}' at '{path}'");
                let mut role_id = String::new();
                ctx.naming.wait_for(
                    &format!("the shared approle path '{path}'"),
                    ctx.stop,
                    || match client.request("GET", &format!("{role}/role-id"), None) {
                        Ok(r) if (200..300).contains(&r.status) => {
                            let v = r.json().unwrap_or(Value::Null);
                            role_id = json_str(&v, "data.role_id", &what)?;
                            Ok(true)
                        }
                        Ok(r) if r.status == 404 || r.status == 400 || r.status == 403 => Ok(false),
                        Ok(r) => Err(Cause::Http {
                            what: what.clone(),
                            status: r.status,
                            excerpt: r.error_text(),
                        }),
                        Err(_) => Ok(false),
                    },
                )?;
                let what = format!("creating this shard's secret_id for '{NAME}' at '{path}'");
                let v = call(
                    &mut client,
                    "POST",
                    &format!("{role}/secret-id"),
                    Some(&self.secret_id_body(json!({"metadata": "{\"vblast\":\"shard\"}"}))),
                    &what,
                )
                .map_err(Error::setup)?;
                let secret_id = json_str(&v, "data.secret_id", &what).map_err(Error::setup)?;
                let accessor =
                    json_str(&v, "data.secret_id_accessor", &what).map_err(Error::setup)?;
                self.own_secret = Some((path.clone(), accessor));
                self.body = json!({ "role_id": role_id, "secret_id": secret_id }).to_string();
                self.shared_path = Some(path);
            }
        }
        Ok(true)
    }

    /// A userpass shard of a run sharing the fixture: waits for the path `vblast setup`
    /// makes, then makes a user of its own there, with a random password that stays in
    /// this process.
    fn join_userpass(&mut self, ctx: &SetupCtx) -> Result<(), Error> {
        let path = ctx.naming.random_name("vblast-userpass-");
        let v = shared::wait_readable(
            ctx,
            &format!("the shared userpass path '{path}'"),
            &format!("/v1/sys/auth/{path}"),
        )?;
        let kind = v
            .pointer("/data/type")
            .or_else(|| v.get("type"))
            .and_then(Value::as_str);
        if kind != Some("userpass") {
            return Err(Error::setup(format!(
                "the shared auth path '{path}' is not userpass ({kind:?})"
            )));
        }
        let user = shared::own_name(NAME);
        let password = random_secret();
        let mut body = self.token_settings();
        body["password"] = Value::String(password.clone());
        // From here on the user may exist: the shard's cleanup deletes it whatever
        // happens next.
        self.own_user = Some((path.clone(), user.clone()));
        let mut client = (ctx.make_client)();
        call(
            &mut client,
            "POST",
            &format!("/v1/auth/{path}/users/{user}"),
            Some(&body),
            &format!("creating this shard's user '{user}' at '{path}'"),
        )
        .map_err(Error::setup)?;
        self.body = json!({ "password": password }).to_string();
        self.shared_path = Some(path);
        Ok(())
    }

    fn prepare(&mut self, client: &mut Client, naming: &Naming) -> Result<(), Cause> {
        self.prepare_with(client, naming, true)
    }

    /// Enables the auth method at a fresh path; returns the path.
    fn enable(&mut self, client: &mut Client, naming: &Naming) -> Result<String, Cause> {
        let kind = self.method.kind();
        let path = naming.random_name(&format!("vblast-{kind}-"));
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
        Ok(path)
    }

    /// The settings of the tokens a role's or user's logins make.
    fn token_settings(&self) -> Value {
        let mut v = json!({
            "token_ttl": self.config.token_ttl,
            "token_max_ttl": self.config.token_ttl,
            "token_type": self.config.token_type,
            "token_policies": ["default"],
        });
        for (k, x) in &self.config.role {
            v[k] = x.clone();
        }
        v
    }

    /// The body of a secret_id's creation: vault-benchmark's `secret_id` block, and `extra`.
    fn secret_id_body(&self, extra: Value) -> Value {
        let mut v = Value::Object(self.config.secret_id.clone());
        if let Value::Object(m) = extra {
            for (k, x) in m {
                v[&k] = x;
            }
        }
        v
    }

    /// Setup; `secret_id` false makes the role without a secret_id (a shared fixture's).
    fn prepare_with(
        &mut self,
        client: &mut Client,
        naming: &Naming,
        secret_id: bool,
    ) -> Result<(), Cause> {
        let path = self.enable(client, naming)?;
        let token = self.token_settings();
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
                if !secret_id {
                    return Ok(());
                }
                let what = format!("creating a secret_id for '{NAME}'");
                let v = call(
                    client,
                    "POST",
                    &format!("{role}/secret-id"),
                    Some(&self.secret_id_body(json!({}))),
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
        if self.shared(ctx)? {
            return Ok(());
        }
        setup_with(ctx, self.method.op_name(), |client| {
            self.prepare(client, ctx.naming)
        })
    }

    fn operation(&self) -> Operation {
        let path = self
            .path
            .as_deref()
            .or(self.shared_path.as_deref())
            .unwrap_or("unset");
        let url = match self.method {
            Method::AppRole => format!("/v1/auth/{path}/login"),
            Method::Userpass => {
                let user = self.own_user.as_ref().map_or(NAME, |(_, u)| u.as_str());
                format!("/v1/auth/{path}/login/{user}")
            }
        };
        login_operation(self.method.op_name(), url, &self.body)
    }

    fn created(&self) -> Vec<Created> {
        let mut out: Vec<Created> = match &self.path {
            Some(p) => vec![Created::auth_path(self.method.kind(), p, "")],
            None => Vec::new(),
        };
        if let Some((p, user)) = &self.own_user {
            out.push(Created {
                what: format!("this shard's user '{user}' at '{p}'"),
                remove_with: format!("vault delete auth/{p}/users/{user}"),
            });
        }
        if let Some((p, accessor)) = &self.own_secret {
            // The accessor names the secret_id without being it.
            out.push(Created {
                what: format!("this shard's secret_id of role '{NAME}' at '{p}'"),
                remove_with: format!(
                    "vault write auth/{p}/role/{NAME}/secret-id-accessor/destroy secret_id_accessor={accessor}"
                ),
            });
        }
        out
    }

    fn cleanup(&mut self, client: &mut Client, _stop: &Stop) -> Result<(), Cause> {
        if let Some((p, user)) = self.own_user.clone() {
            call(
                client,
                "DELETE",
                &format!("/v1/auth/{p}/users/{user}"),
                None,
                &format!("deleting this shard's user '{user}' at '{p}'"),
            )?;
            self.own_user = None;
        }
        if let Some((p, accessor)) = self.own_secret.clone() {
            call(
                client,
                "POST",
                &format!("/v1/auth/{p}/role/{NAME}/secret-id-accessor/destroy"),
                Some(&json!({ "secret_id_accessor": accessor })),
                &format!("destroying this shard's secret_id at '{p}'"),
            )?;
            self.own_secret = None;
        }
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
                .to_string()
                .contains("soon")
        );
        assert!(
            check_token_settings("2m", "default")
                .unwrap_err()
                .to_string()
                .contains("service, batch")
        );
    }
}
