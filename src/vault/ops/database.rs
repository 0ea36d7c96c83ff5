//! The database family: `db-creds`. Setup enables the database secrets engine at a fresh
//! mount (`vblast-db-xxxxxxxx`), connects it to the PostgreSQL or MySQL/MariaDB server of
//! `--db-url` (plugin from `--db-plugin` or the URL's scheme) and creates a role whose
//! users live a short while; each request reads `creds/ROLE`, a new database user, and
//! the answer must hold its username, password and lease. Cleanup revokes every lease of
//! the role (each revocation drops its user in the database) before disabling the mount,
//! so no database user outlives the run. The database password and the credentials are
//! never printed.
//!
//! Shared by the shards of a run (src/session/fixtures.rs): `vblast setup` makes the mount, the
//! connection (which also allows the roles `ROLE-*`) and the role under names derived
//! from the run id; a shard waits for the role, then makes a role of its own
//! (`ROLE-xxxxxxxx`, the same statements and TTLs) whose credentials it reads, so that at
//! its end it revokes exactly the leases it was given (their users dropped) and deletes
//! its role; `vblast cleanup` revokes every lease left under the mount's `creds/` (a
//! killed shard's) and disables the mount.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::dynamic::{Creds, Family, Write};
use super::mounted::Mounted;
use super::vb::{Keys, Mapped, set_in};
use super::{
    Created, Fixture, OpInfo, OptionKind, OptionSpec, OptionValues, SetupCtx, VaultBenchmark,
    VaultOp, VbType, needs_setup, shared::Mode,
};
use crate::error::{Cause, Error};

/// The start of a fresh mount's name, by which `vblast cleanup` knows a database mount.
pub const MOUNT_PREFIX: &str = "vblast-db-";

/// What `vblast cleanup` of a run's state file says of its database mounts among `names`:
/// a run killed with requests in flight may have left database users that no lease
/// covers. OpenBao makes the user, and when the client has gone drops the answer without
/// leasing it (measured here: 1 user in 3 SIGKILLs at `-c 2`, with no lease for it), so
/// neither the mount's removal nor any Vault call can drop it.
pub fn unleased_users_note(names: &[String]) -> Option<String> {
    let mounts: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with(MOUNT_PREFIX))
        .collect();
    if mounts.is_empty() {
        return None;
    }
    Some(format!(
        "database mount{} '{}': if the run was killed with requests in flight, the database may keep one user per request the server was answering (OpenBao made the user, then, the client gone, never leased it, so Vault cannot revoke it); such a user expires at its VALID UNTIL (the role's default_ttl); list them with `SELECT rolname FROM pg_roles WHERE rolname LIKE 'v-%'` (MySQL: `SELECT user FROM mysql.user WHERE user LIKE 'v-%'`)",
        if mounts.len() == 1 { "" } else { "s" },
        mounts.join("', '")
    ))
}

/// vault-benchmark's postgresql_secret and mysql_secret tests: the connection and the role.
fn db_hcl(plugin: &str, c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    set_in(
        &mut out.config,
        "db_connection",
        "plugin_name",
        json!(plugin),
    );
    let mut db = c.block("db_connection")?;
    db.names(&["name"]);
    for key in ["connection_url", "username", "password"] {
        if let Some(v) = db.string(key)? {
            set_in(&mut out.config, "db_connection", key, json!(v));
        }
    }
    if let Some(v) = db.boolean("verify_connection")? {
        set_in(
            &mut out.config,
            "db_connection",
            "verify_connection",
            json!(v),
        );
    }
    if let Some(v) = db.number("max_open_connections")? {
        set_in(
            &mut out.config,
            "db_connection",
            "max_open_connections",
            json!(v),
        );
    }
    db.only(
        "plugin_name",
        &[json!(plugin)],
        "the test type names its plugin",
    )?;
    // vblast's role is the one allowed: the file's list names vault-benchmark's.
    db.names(&["allowed_roles"]);
    let mysql_tls: &[&str] = if plugin == MYSQL_PLUGIN {
        MYSQL_TLS
    } else {
        &[]
    };
    let extra: Map<String, Value> = DB_CONNECTION_EXTRA
        .iter()
        .chain(mysql_tls)
        .filter_map(|key| db.take(key).map(|v| (key.to_string(), v)))
        .collect();
    if !extra.is_empty() {
        set_in(
            &mut out.config,
            "db_connection",
            "extra",
            Value::Object(extra),
        );
    }
    db.finish(&mut out.named)?;
    let mut role = c.block("role")?;
    role.names(&["name", "db_name"]);
    for (key, vblast) in [("default_ttl", "2m"), ("max_ttl", "10m")] {
        if !role.has(key) {
            out.notes.push(format!(
                "test '{}': config.role.{key} not given: vblast's role uses {vblast}, where vault-benchmark sends none and the mount's default applies (768h on a default server)",
                role.test
            ));
        }
    }
    for key in DB_ROLE_EXTRA {
        if let Some(v) = role.string(key)? {
            set_in(&mut out.config, "role", key, json!(v));
        }
    }
    for key in [
        "creation_statements",
        "revocation_statements",
        "default_ttl",
        "max_ttl",
    ] {
        if let Some(v) = role.string(key)? {
            set_in(&mut out.config, "role", key, json!(v));
        }
    }
    role.finish(&mut out.named)
}

/// vault-benchmark's other connection keys, sent in the connection's write as given.
const DB_CONNECTION_EXTRA: &[&str] = &[
    "plugin_version",
    "root_rotation_statements",
    "password_policy",
    "max_idle_connections",
    "max_connection_lifetime",
    "username_template",
    "disable_escaping",
];

/// vault-benchmark's TLS keys of a MySQL connection (the key is a credential: never saved).
const MYSQL_TLS: &[&str] = &[
    "tls_certificate_key",
    "tls_ca",
    "tls_server_name",
    "tls_skip_verify",
];

/// vault-benchmark's other role statements, sent in the role's write.
const DB_ROLE_EXTRA: &[&str] = &[
    "rollback_statements",
    "renew_statements",
    "rotation_statements",
];

fn postgresql_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    db_hcl(POSTGRES_PLUGIN, c, out)
}

fn mysql_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    db_hcl(MYSQL_PLUGIN, c, out)
}

pub const CREDS: OpInfo = OpInfo {
    name: "db-creds",
    about: "GET <mount>/creds/vblast: a new database user (PostgreSQL or MySQL/MariaDB)",
    request: "GET /v1/<mount>/creds/vblast",
    doc: "Setup enables the database secrets engine at a fresh mount (`vblast-db-xxxxxxxx`), connects it to the PostgreSQL or MySQL/MariaDB server of `--db-url` (plugin from `--db-plugin` or the URL's scheme) and creates a role whose users live a short while; each request reads `creds/ROLE`, a new database user, and the answer must hold its username, password and lease. Cleanup revokes every lease of the role (each revocation drops its user in the database) before disabling the mount, so no database user outlives the run. The database password and the credentials are never printed. Shards share the mount and the connection; each reads the credentials of a role of its own.",
    options: &[
        OptionSpec {
            flag: "db-url",
            value_name: "URL",
            kind: OptionKind::Text,
            default: None,
            help: "db-creds: the database, postgres://USER:PASS@HOST:PORT/DB or mysql://USER:PASS@HOST:PORT/DB",
        },
        OptionSpec {
            flag: "db-plugin",
            value_name: "NAME",
            kind: OptionKind::Text,
            default: None,
            help: "db-creds: postgresql or mysql (default: from the --db-url scheme)",
        },
    ],
    also: &[],
    config_from,
    build,
    vault_benchmark: VaultBenchmark::Types(&[
        VbType {
            name: "postgresql_secret",
            config: postgresql_hcl,
        },
        VbType {
            name: "mysql_secret",
            config: mysql_hcl,
        },
    ]),
    fixture: Fixture::Shared,
    bounds: &[],
};

const POSTGRES_PLUGIN: &str = "postgresql-database-plugin";
const MYSQL_PLUGIN: &str = "mysql-database-plugin";

/// The family's config: vault-benchmark's `postgresql_secret` / `mysql_secret` blocks
/// `db_connection` and `role`, with the keys vblast uses.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbConfig {
    pub db_connection: DbConnection,
    pub role: DbRole,
    /// Why `--db-url` could not be used (set by the flags only; refused by build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbConnection {
    #[serde(default = "default_name")]
    pub name: String,
    /// `postgresql-database-plugin` or `mysql-database-plugin`.
    pub plugin_name: String,
    /// With `{{username}}` and `{{password}}` templating; never the password itself.
    pub connection_url: String,
    pub username: String,
    /// Never printed (and left out of saved results: the key is a credential's).
    pub password: String,
    #[serde(default = "default_true")]
    pub verify_connection: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_open_connections: Option<u32>,
    /// vault-benchmark's other connection keys (`plugin_version`, `username_template`,
    /// ...), sent as given.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbRole {
    #[serde(default = "default_name")]
    pub name: String,
    /// Default: a user with a login and the lease's expiry, for the plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_statements: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_statements: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_statements: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_statements: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation_statements: Option<String>,
    pub default_ttl: String,
    pub max_ttl: String,
}

fn default_name() -> String {
    "vblast".into()
}
fn default_true() -> bool {
    true
}

/// `--db-url` split into the templated URL Vault stores, the user and the password.
fn split_url(url: &str, plugin: Option<&str>) -> Result<DbConnection, Cause> {
    let shown = url.rsplit_once('@').map(|(_, h)| h).unwrap_or("");
    let u =
        url::Url::parse(url).map_err(|e| format!("--db-url '...@{shown}' is not a URL: {e}"))?;
    let plugin = plugin_for(plugin.unwrap_or(u.scheme()))?;
    let decode = |s: &str| {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    let username = decode(u.username());
    let password = u.password().map(decode).unwrap_or_default();
    if username.is_empty() {
        return Err(Cause::from(format!(
            "--db-url '...@{shown}' names no user (scheme://USER:PASS@HOST:PORT/DB)"
        )));
    }
    let host = u
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| format!("--db-url '...@{shown}' names no host"))?;
    let port = u.port().unwrap_or(if plugin == POSTGRES_PLUGIN {
        5432
    } else {
        3306
    });
    let db = u.path().trim_start_matches('/');
    let query = u.query().map(|q| format!("?{q}")).unwrap_or_default();
    let connection_url = if plugin == POSTGRES_PLUGIN {
        let db = if db.is_empty() { "postgres" } else { db };
        format!("postgresql://{{{{username}}}}:{{{{password}}}}@{host}:{port}/{db}{query}")
    } else {
        format!("{{{{username}}}}:{{{{password}}}}@tcp({host}:{port})/{db}{query}")
    };
    Ok(DbConnection {
        name: default_name(),
        plugin_name: plugin.into(),
        connection_url,
        username,
        password,
        verify_connection: true,
        max_open_connections: None,
        extra: Map::new(),
    })
}

/// Vault's plugin for a `--db-plugin` name or a URL scheme.
fn plugin_for(name: &str) -> Result<&'static str, Cause> {
    match name {
        "postgres" | "postgresql" => Ok(POSTGRES_PLUGIN),
        "mysql" | "mariadb" => Ok(MYSQL_PLUGIN),
        other => Err(Cause::from(format!(
            "database plugin '{other}' is not one of postgresql, mysql (--db-plugin, or a postgres:// or mysql:// --db-url)"
        ))),
    }
}

fn config_from(f: &OptionValues) -> Value {
    let unset = || DbConnection {
        name: default_name(),
        plugin_name: POSTGRES_PLUGIN.into(),
        connection_url: String::new(),
        username: String::new(),
        password: String::new(),
        verify_connection: true,
        max_open_connections: None,
        extra: Map::new(),
    };
    let (url, plugin) = (f.text("db-url"), f.text("db-plugin"));
    let (db_connection, invalid) = match (url.as_deref(), plugin.as_deref()) {
        (Some(url), plugin) => match split_url(url, plugin) {
            Ok(c) => (c, None),
            Err(e) => (unset(), Some(e.to_string())),
        },
        (None, Some(p)) => match plugin_for(p) {
            Ok(name) => (
                DbConnection {
                    plugin_name: name.into(),
                    ..unset()
                },
                None,
            ),
            Err(e) => (unset(), Some(e.to_string())),
        },
        (None, None) => (unset(), None),
    };
    serde_json::to_value(DbConfig {
        db_connection,
        role: DbRole {
            name: default_name(),
            creation_statements: None,
            revocation_statements: None,
            rollback_statements: None,
            renew_statements: None,
            rotation_statements: None,
            default_ttl: "2m".into(),
            max_ttl: "10m".into(),
        },
        invalid,
    })
    .unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: DbConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    if let Some(e) = &config.invalid {
        return Err(Cause::from(e.clone()));
    }
    let plugin = config.db_connection.plugin_name.as_str();
    if plugin != POSTGRES_PLUGIN && plugin != MYSQL_PLUGIN {
        return Err(Cause::from(format!(
            "plugin_name '{plugin}' is not one of {POSTGRES_PLUGIN}, {MYSQL_PLUGIN}"
        )));
    }
    for (what, ttl) in [
        ("default_ttl", &config.role.default_ttl),
        ("max_ttl", &config.role.max_ttl),
    ] {
        crate::config::units::parse_duration(ttl)
            .map_err(|e| format!("{what} '{ttl}' is not a duration: {e}"))?;
    }
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    for n in [&config.db_connection.name, &config.role.name] {
        if !name_ok(n) {
            return Err(Cause::from(format!(
                "name '{n}' must be letters, digits, '-' or '_'"
            )));
        }
    }
    Ok(Box::new(Creds::new(Db { config })))
}

/// The database's part of the dynamic-credentials pattern (src/vault/ops/dynamic.rs).
struct Db {
    config: DbConfig,
}

impl Db {
    fn creation_statements(&self) -> String {
        match &self.config.role.creation_statements {
            Some(s) => s.clone(),
            None if self.config.db_connection.plugin_name == POSTGRES_PLUGIN => {
                r#"CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';"#.into()
            }
            None => "CREATE USER '{{name}}'@'%' IDENTIFIED BY '{{password}}';".into(),
        }
    }
}

impl Family for Db {
    fn name(&self) -> &'static str {
        CREDS.name
    }

    fn mounted(&self) -> Mounted {
        Mounted::new("database", "the database secrets engine", "database")
    }

    fn prefix(&self) -> &'static str {
        MOUNT_PREFIX
    }

    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, CREDS.name)?;
        if self.config.db_connection.connection_url.is_empty() {
            return Err(Error::input(
                "db-creds needs a database: --db-url postgres://USER:PASS@HOST:PORT/DB (or mysql://...)",
            ));
        }
        Ok(())
    }

    fn connection(&self, mount: &str, mode: Mode) -> Write {
        let c = &self.config.db_connection;
        let role = &self.config.role;
        let mut conn = json!({
            "plugin_name": c.plugin_name,
            "connection_url": c.connection_url,
            "username": c.username,
            "password": c.password,
            "allowed_roles": [role.name],
            "verify_connection": c.verify_connection,
        });
        if mode == Mode::Create {
            // The shards' own roles.
            conn["allowed_roles"] = json!([role.name, format!("{}-*", role.name)]);
        }
        if let Some(n) = c.max_open_connections {
            conn["max_open_connections"] = json!(n);
        }
        for (k, v) in &c.extra {
            conn[k] = v.clone();
        }
        let shown = c.connection_url.split('@').next_back().unwrap_or_default();
        Write {
            path: format!("config/{}", c.name),
            body: conn,
            what: format!(
                "connecting '{mount}' to the database at {shown} ({})",
                c.plugin_name
            ),
        }
    }

    fn role(&self) -> &str {
        &self.config.role.name
    }

    fn role_body(&self) -> Value {
        let role = &self.config.role;
        let mut r = json!({
            "db_name": self.config.db_connection.name,
            "creation_statements": self.creation_statements(),
            "default_ttl": role.default_ttl,
            "max_ttl": role.max_ttl,
        });
        for (key, s) in [
            ("revocation_statements", &role.revocation_statements),
            ("rollback_statements", &role.rollback_statements),
            ("renew_statements", &role.renew_statements),
            ("rotation_statements", &role.rotation_statements),
        ] {
            if let Some(s) = s {
                r[key] = json!(s);
            }
        }
        r
    }

    fn secret(&self) -> Option<&str> {
        Some(self.config.db_connection.password.as_str()).filter(|p| p.len() >= 3)
    }

    fn shared(&self) -> bool {
        true
    }

    fn created(&self, m: &str, role: &str) -> Vec<Created> {
        vec![Created {
            what: format!("database mount '{m}' and the database users of its leases"),
            remove_with: format!(
                "vault lease revoke -prefix {m}/creds/{role} && vault secrets disable {m}"
            ),
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(url: Option<&str>, plugin: Option<&str>) -> OptionValues {
        use super::super::OptionValue;
        let mut v = OptionValues::new();
        if let Some(u) = url {
            v.set("db-url", OptionValue::Text(u.into())).unwrap();
        }
        if let Some(p) = plugin {
            v.set("db-plugin", OptionValue::Text(p.into())).unwrap();
        }
        v
    }

    #[test]
    fn only_database_mounts_get_the_unleased_users_note() {
        assert_eq!(unleased_users_note(&["vblast-1234abcd".into()]), None);
        let note = unleased_users_note(&["vblast-x".into(), "vblast-db-1234abcd".into()]).unwrap();
        assert!(
            note.starts_with("database mount 'vblast-db-1234abcd':"),
            "{note}"
        );
        assert!(note.contains("VALID UNTIL"), "{note}");
    }

    #[test]
    fn urls_become_templated_connections_without_the_password() {
        let v = config_from(&flags(
            Some("postgres://vb%40root:p%3Ass@127.0.0.1:15432/app?sslmode=disable"),
            None,
        ));
        let c: DbConfig = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(c.db_connection.plugin_name, POSTGRES_PLUGIN);
        assert_eq!(
            c.db_connection.connection_url,
            "postgresql://{{username}}:{{password}}@127.0.0.1:15432/app?sslmode=disable"
        );
        assert_eq!(c.db_connection.username, "vb@root");
        assert_eq!(c.db_connection.password, "p:ss");
        assert!(build(&v).is_ok());
        let c: DbConfig = serde_json::from_value(config_from(&flags(
            Some("mysql://root:pw@127.0.0.1:13306/"),
            None,
        )))
        .unwrap();
        assert_eq!(c.db_connection.plugin_name, MYSQL_PLUGIN);
        assert_eq!(
            c.db_connection.connection_url,
            "{{username}}:{{password}}@tcp(127.0.0.1:13306)/"
        );
        let c: DbConfig = serde_json::from_value(config_from(&flags(
            Some("postgres://root:pw@127.0.0.1:13306/"),
            Some("mysql"),
        )))
        .unwrap();
        assert_eq!(c.db_connection.plugin_name, MYSQL_PLUGIN);
    }

    #[test]
    fn bad_urls_and_plugins_are_refused_without_showing_the_password() {
        for (url, plugin, needle) in [
            (
                Some("redis://u:sekrit@h:1/"),
                None,
                "not one of postgresql, mysql",
            ),
            (Some("postgres://u:sekrit@h:1/"), Some("oracle"), "'oracle'"),
            (Some("postgres://:sekrit@h:1/"), None, "names no user"),
            (Some("not a url sekrit"), None, "not a URL"),
            (None, Some("db2"), "'db2'"),
        ] {
            let e = build(&config_from(&flags(url, plugin)))
                .err()
                .unwrap_or_else(|| panic!("{url:?} {plugin:?} built"))
                .to_string();
            assert!(e.contains(needle), "{e}");
            assert!(!e.contains("sekrit"), "{e}");
        }
    }
}
