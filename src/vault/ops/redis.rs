//! The redis family: `redis-creds` (vault-benchmark's `redis_dynamic_secret`) and
//! `redis-static-creds` (`redis_static_secret`). Setup enables the database secrets
//! engine at a fresh mount (`vblast-redis-xxxxxxxx`) and connects it to the redis server of
//! `--redis-url` with OpenBao's `redis-database-plugin`. redis-creds creates a dynamic role
//! whose requests each read `creds/vblast`, a new redis ACL user; cleanup revokes every
//! lease of the role (each revocation deletes its user) before disabling the mount.
//! redis-static-creds creates a static role for an existing redis user (`--redis-user`),
//! whose requests read `static-creds/vblast`, its current password; cleanup deletes the
//! role (the user stays, with the password Vault last gave it) and disables the mount.
//! The redis password and the credentials are never printed.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::dynamic::{Creds, Family, RoleKind, Write};
use super::mounted::Mounted;
use super::vb::{Keys, Mapped, set_in};
use super::{
    Fixture, OpInfo, OptionKind, OptionSpec, OptionValues, SetupCtx, VaultBenchmark, VaultOp,
    VbType, needs_setup, shared::Mode,
};
use crate::error::{Cause, Error};

/// The role vblast creates.
pub const ROLE: &str = "vblast";
/// The connection vblast creates in its mount.
const CONNECTION: &str = "vblast-redis";
const PLUGIN: &str = "redis-database-plugin";
/// The ACL rules of a dynamic user unless said (read-only on every key).
const DEFAULT_CREATION: &str = r#"["~*", "+@read"]"#;

const URL: OptionSpec = OptionSpec {
    flag: "redis-url",
    value_name: "URL",
    kind: OptionKind::Text,
    default: None,
    help: "redis-creds, redis-static-creds: the redis server and an admin user, redis://USER:PASS@HOST:PORT (rediss:// for TLS)",
};

const USER: OptionSpec = OptionSpec {
    flag: "redis-user",
    value_name: "NAME",
    kind: OptionKind::Text,
    default: None,
    help: "redis-static-creds: the existing redis user whose password the static role rotates",
};

/// The connection keys of vault-benchmark's `db_connection` block sent to the server as
/// given (`name`, `allowed_roles` only name things: vblast names its own).
const CONNECTION_KEYS: &[&str] = &[
    "host",
    "port",
    "username",
    "password",
    "tls",
    "insecure_tls",
    "ca_cert",
    "verify_connection",
    "plugin_version",
    "password_policy",
];

fn connection_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    let mut db = c.block("db_connection")?;
    db.names(&["name", "allowed_roles", "db_name"]);
    db.only(
        "plugin_name",
        &[json!(PLUGIN)],
        "it uses OpenBao's redis-database-plugin",
    )?;
    for key in CONNECTION_KEYS {
        if let Some(v) = db.take(key) {
            set_in(&mut out.config, "db_connection", key, v);
        }
    }
    db.finish(&mut out.named)
}

/// vault-benchmark's `redis_dynamic_secret`: the connection, and a role with its TTLs and
/// ACL rules (`creation_statements`).
fn dynamic_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    connection_hcl(c, out)?;
    let mut role = c.block("role")?;
    role.names(&["name", "role_name", "db_name"]);
    for key in ["default_ttl", "max_ttl", "creation_statements"] {
        if let Some(v) = role.take(key) {
            set_in(&mut out.config, "role", key, v);
        }
    }
    role.finish(&mut out.named)
}

/// vault-benchmark's `redis_static_secret`: the connection, and a static role of an
/// existing user (`username`, `rotation_period`). vault-benchmark writes those keys to
/// `roles/` and reads `creds/`; vblast makes the static role its documentation describes
/// and reads `static-creds/` (said in a note).
fn static_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    connection_hcl(c, out)?;
    let mut role = c.block("role")?;
    role.names(&["name", "db_name"]);
    role.only(
        "insecure_tls",
        &[json!(false)],
        "the connection's insecure_tls says it",
    )?;
    for key in ["username", "rotation_period"] {
        if let Some(v) = role.take(key) {
            set_in(&mut out.config, "role", key, v);
        }
    }
    role.finish(&mut out.named)?;
    out.notes.push(format!(
        "test '{}': vblast makes a static role (static-roles/) and reads static-creds/, as the type's documentation describes; vault-benchmark writes the role's keys to roles/ and reads creds/",
        c.test
    ));
    Ok(())
}

const DYNAMIC_DOC: &str = "Setup enables the database secrets engine at a fresh mount (`vblast-redis-xxxxxxxx`), connects it to the redis server of `--redis-url` (`redis-database-plugin`) and creates the role `vblast` (ACL rules `[\"~*\", \"+@read\"]` unless the file's `creation_statements` say); each request reads `creds/vblast`, a new redis user, and the answer must hold its username, password and lease. Cleanup revokes every lease of the role (each revocation deletes its user) before disabling the mount, so no redis user outlives the run. The redis password and the credentials are never printed.";

const STATIC_DOC: &str = "Setup enables the database secrets engine at a fresh mount (`vblast-redis-xxxxxxxx`), connects it to the redis server of `--redis-url` (`redis-database-plugin`) and creates the static role `vblast` for the existing redis user `--redis-user` (rotation period 5m, vault-benchmark's documented default); Vault sets that user's password at once. Each request reads `static-creds/vblast`, and the answer must hold the user's name and password. Cleanup deletes the role and disables the mount; the user stays, with the password Vault last set. vault-benchmark writes this type's keys to `roles/` and reads `creds/`; vblast makes the static role the type's documentation describes.";

pub const CREDS: OpInfo = OpInfo {
    name: "redis-creds",
    about: "GET <mount>/creds/vblast: a new redis ACL user",
    request: "GET /v1/<mount>/creds/vblast",
    doc: DYNAMIC_DOC,
    options: &[URL],
    also: &[],
    config_from: dynamic_config_from,
    build: build_dynamic,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "redis_dynamic_secret",
        config: dynamic_hcl,
    }]),
    fixture: Fixture::NotShareable,
    bounds: &[],
};

pub const STATIC_CREDS: OpInfo = OpInfo {
    name: "redis-static-creds",
    about: "GET <mount>/static-creds/vblast: the current password of an existing redis user",
    request: "GET /v1/<mount>/static-creds/vblast",
    doc: STATIC_DOC,
    options: &[URL, USER],
    also: &[],
    config_from: static_config_from,
    build: build_static,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "redis_static_secret",
        config: static_hcl,
    }]),
    fixture: Fixture::NotShareable,
    bounds: &[],
};

/// The family's config: vault-benchmark's `db_connection` and `role` keys as given.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// Holds the admin password: never printed.
    #[serde(default)]
    pub db_connection: Map<String, Value>,
    #[serde(default)]
    pub role: Map<String, Value>,
    /// Why `--redis-url` could not be used (set by the flags only; refused by build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

/// host, port, username, password and tls of `redis://USER:PASS@HOST:PORT`.
fn parse_url(url: &str) -> Result<Map<String, Value>, String> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("rediss://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("redis://") {
        (false, r)
    } else {
        return Err("--redis-url must start with redis:// or rediss://".into());
    };
    let rest = rest.trim_end_matches('/');
    let (auth, addr) = rest
        .rsplit_once('@')
        .ok_or("--redis-url needs a user and password: redis://USER:PASS@HOST:PORT")?;
    let (user, pass) = auth
        .split_once(':')
        .ok_or("--redis-url needs a user and password: redis://USER:PASS@HOST:PORT")?;
    let (host, port) = addr
        .rsplit_once(':')
        .ok_or("--redis-url needs a port: redis://USER:PASS@HOST:PORT")?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("--redis-url: '{port}' is not a port"))?;
    let mut m = Map::new();
    m.insert("host".into(), json!(host));
    m.insert("port".into(), json!(port));
    m.insert("username".into(), json!(user));
    m.insert("password".into(), json!(pass));
    m.insert("tls".into(), json!(tls));
    Ok(m)
}

fn config_from(f: &OptionValues, role: Map<String, Value>) -> Value {
    let (db_connection, invalid) = match f.text("redis-url").map(|u| parse_url(&u)) {
        None => (Map::new(), None),
        Some(Ok(m)) => (m, None),
        Some(Err(e)) => (Map::new(), Some(e)),
    };
    serde_json::to_value(RedisConfig {
        db_connection,
        role,
        invalid,
    })
    .unwrap_or(Value::Null)
}

fn dynamic_config_from(f: &OptionValues) -> Value {
    config_from(f, Map::new())
}

fn static_config_from(f: &OptionValues) -> Value {
    let mut role = Map::new();
    if let Some(u) = f.text("redis-user") {
        role.insert("username".into(), json!(u));
    }
    config_from(f, role)
}

fn parse(v: &Value) -> Result<RedisConfig, Cause> {
    let c: RedisConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    if let Some(why) = &c.invalid {
        return Err(why.clone().into());
    }
    Ok(c)
}

fn build_dynamic(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    Ok(Box::new(Creds::new(Redis {
        config: parse(v)?,
        is_static: false,
    })))
}

fn build_static(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    Ok(Box::new(Creds::new(Redis {
        config: parse(v)?,
        is_static: true,
    })))
}

/// Redis's part of the dynamic-credentials pattern (src/vault/ops/dynamic.rs).
struct Redis {
    config: RedisConfig,
    is_static: bool,
}

impl Redis {
    /// Where the server is, for messages (never the credentials).
    fn shown(&self) -> String {
        let c = &self.config.db_connection;
        let part = |k: &str| match c.get(k) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => "?".into(),
        };
        format!("{}:{}", part("host"), part("port"))
    }
}

impl Family for Redis {
    fn name(&self) -> &'static str {
        if self.is_static {
            STATIC_CREDS.name
        } else {
            CREDS.name
        }
    }

    fn mounted(&self) -> Mounted {
        Mounted::new(
            "database",
            "the database secrets engine",
            "database (redis)",
        )
    }

    fn prefix(&self) -> &'static str {
        "vblast-redis-"
    }

    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, self.name())?;
        let c = &self.config.db_connection;
        for key in ["host", "port", "username", "password"] {
            if !c.contains_key(key) {
                return Err(Error::input(format!(
                    "{} needs a redis server: --redis-url redis://USER:PASS@HOST:PORT (a file: db_connection's host, port, username and password; vblast does not read them from the environment)",
                    self.name()
                )));
            }
        }
        if self.is_static && !self.config.role.contains_key("username") {
            return Err(Error::input(
                "redis-static-creds needs an existing redis user: --redis-user NAME (a file: role.username)",
            ));
        }
        Ok(())
    }

    fn connection(&self, mount: &str, _mode: Mode) -> Write {
        let mut conn = json!({"plugin_name": PLUGIN, "allowed_roles": [ROLE]});
        for (k, v) in &self.config.db_connection {
            conn[k] = v.clone();
        }
        Write {
            path: format!("config/{CONNECTION}"),
            body: conn,
            what: format!("connecting '{mount}' to redis at {}", self.shown()),
        }
    }

    fn role(&self) -> &str {
        ROLE
    }

    fn role_kind(&self) -> RoleKind {
        if self.is_static {
            RoleKind::Static
        } else {
            RoleKind::Dynamic
        }
    }

    fn role_body(&self) -> Value {
        let mut body = json!({ "db_name": CONNECTION });
        if self.is_static {
            body["rotation_period"] = json!("5m");
        } else {
            body["creation_statements"] = json!(DEFAULT_CREATION);
        }
        for (k, v) in &self.config.role {
            body[k] = v.clone();
        }
        body
    }

    fn secret(&self) -> Option<&str> {
        self.config
            .db_connection
            .get("password")
            .and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_the_connection_and_bad_ones_are_refused() {
        let m = parse_url("redis://admin:s3:cret@127.0.0.1:6380/").unwrap();
        assert_eq!(m["host"], "127.0.0.1");
        assert_eq!(m["port"], 6380);
        assert_eq!(m["username"], "admin");
        assert_eq!(m["password"], "s3:cret");
        assert_eq!(m["tls"], false);
        assert_eq!(parse_url("rediss://a:b@h:1").unwrap()["tls"], true);
        for bad in [
            "http://a:b@h:1",
            "redis://h:1",
            "redis://a:b@h",
            "redis://a:b@h:x",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
