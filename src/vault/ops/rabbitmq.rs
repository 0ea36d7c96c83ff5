//! The RabbitMQ family: `rabbitmq-creds`, vault-benchmark's `rabbitmq_secret`. Setup
//! enables the RabbitMQ secrets engine at a fresh mount (`vblast-rabbitmq-xxxxxxxx`),
//! connects it to the management API of `--rabbitmq-url` and creates the role `vblast`
//! (vault-benchmark's default: read and write on every resource of the vhost `/`); each
//! request reads `creds/vblast`, a new RabbitMQ user, and the answer must hold its
//! username, password and lease. Cleanup revokes every lease of the role (each revocation
//! deletes its user) before disabling the mount. The admin password and the credentials
//! are never printed.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::dynamic::{Creds, Family, Write};
use super::mounted::Mounted;
use super::vb::{Keys, Mapped, set_in};
use super::{
    Fixture, OpInfo, OptionKind, OptionSpec, OptionValues, SetupCtx, VaultBenchmark, VaultOp,
    VbType, needs_setup, shared::Mode,
};
use crate::error::{Cause, Error};

/// The role vblast creates.
pub const ROLE: &str = "vblast";
/// vault-benchmark's default role: read and write on everything of the vhost `/`.
const DEFAULT_VHOSTS: &str = r#"{"/":{"write": ".*", "read": ".*"}}"#;

const URL: OptionSpec = OptionSpec {
    flag: "rabbitmq-url",
    value_name: "URL",
    kind: OptionKind::Text,
    default: None,
    help: "rabbitmq-creds: the management API and an admin user, http://USER:PASS@HOST:PORT",
};

/// The keys of vault-benchmark's `connection` block, sent to `config/connection` as given.
const CONNECTION_KEYS: &[&str] = &[
    "connection_uri",
    "username",
    "password",
    "verify_connection",
    "password_policy",
    "username_template",
];

/// vault-benchmark's `rabbitmq_secret`: the connection and the role (`tags`, `vhosts`,
/// `vhost_topics`), as given.
fn rabbitmq_hcl(c: &mut Keys, out: &mut Mapped) -> Result<(), Cause> {
    let mut conn = c.block("connection")?;
    for key in CONNECTION_KEYS {
        if let Some(v) = conn.take(key) {
            set_in(&mut out.config, "connection", key, v);
        }
    }
    conn.finish(&mut out.named)?;
    let mut role = c.block("role")?;
    role.names(&["name"]);
    for key in ["tags", "vhosts", "vhost_topics"] {
        if let Some(v) = role.take(key) {
            set_in(&mut out.config, "role", key, v);
        }
    }
    role.finish(&mut out.named)
}

pub const CREDS: OpInfo = OpInfo {
    name: "rabbitmq-creds",
    about: "GET <mount>/creds/vblast: a new RabbitMQ user",
    request: "GET /v1/<mount>/creds/vblast",
    doc: "Setup enables the RabbitMQ secrets engine at a fresh mount (`vblast-rabbitmq-xxxxxxxx`), connects it to the management API of `--rabbitmq-url` (its user as the admin; verified, so an unreachable server is one message at setup and the mount is removed) and creates the role `vblast` (vault-benchmark's default: `vhosts` `{\"/\":{\"write\": \".*\", \"read\": \".*\"}}`); each request reads `creds/vblast`, a new RabbitMQ user, and the answer must hold its username, password and lease. Cleanup revokes every lease of the role (each revocation deletes its user) before disabling the mount. The admin password and the credentials are never printed.",
    options: &[URL],
    also: &[],
    config_from,
    build,
    vault_benchmark: VaultBenchmark::Types(&[VbType {
        name: "rabbitmq_secret",
        config: rabbitmq_hcl,
    }]),
    fixture: Fixture::NotShareable,
    bounds: &[],
};

/// The family's config: vault-benchmark's `connection` and `role` keys as given.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RabbitConfig {
    /// Holds the admin password: never printed.
    #[serde(default)]
    pub connection: Map<String, Value>,
    #[serde(default)]
    pub role: Map<String, Value>,
    /// Why `--rabbitmq-url` could not be used (set by the flags only; refused by build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

/// connection_uri, username and password of `http://USER:PASS@HOST:PORT`.
fn parse_url(url: &str) -> Result<Map<String, Value>, String> {
    let (scheme, rest) = url
        .split_once("://")
        .filter(|(s, _)| *s == "http" || *s == "https")
        .ok_or("--rabbitmq-url must start with http:// or https://")?;
    let rest = rest.trim_end_matches('/');
    let bad = "--rabbitmq-url needs a user and password: http://USER:PASS@HOST:PORT";
    let (auth, addr) = rest.rsplit_once('@').ok_or(bad)?;
    let (user, pass) = auth.split_once(':').ok_or(bad)?;
    if addr.is_empty() {
        return Err(bad.into());
    }
    let mut m = Map::new();
    m.insert("connection_uri".into(), json!(format!("{scheme}://{addr}")));
    m.insert("username".into(), json!(user));
    m.insert("password".into(), json!(pass));
    Ok(m)
}

fn config_from(f: &OptionValues) -> Value {
    let (connection, invalid) = match f.text("rabbitmq-url").map(|u| parse_url(&u)) {
        None => (Map::new(), None),
        Some(Ok(m)) => (m, None),
        Some(Err(e)) => (Map::new(), Some(e)),
    };
    serde_json::to_value(RabbitConfig {
        connection,
        role: Map::new(),
        invalid,
    })
    .unwrap_or(Value::Null)
}

fn build(v: &Value) -> Result<Box<dyn VaultOp>, Cause> {
    let config: RabbitConfig =
        serde_json::from_value(v.clone()).map_err(|e| format!("bad config: {e}"))?;
    if let Some(why) = &config.invalid {
        return Err(why.clone().into());
    }
    Ok(Box::new(Creds::new(Rabbit { config })))
}

/// RabbitMQ's part of the dynamic-credentials pattern (src/vault/ops/dynamic.rs).
struct Rabbit {
    config: RabbitConfig,
}

impl Family for Rabbit {
    fn name(&self) -> &'static str {
        CREDS.name
    }

    fn mounted(&self) -> Mounted {
        Mounted::new("rabbitmq", "the RabbitMQ secrets engine", "rabbitmq")
    }

    fn prefix(&self) -> &'static str {
        "vblast-rabbitmq-"
    }

    fn check(&self, ctx: &SetupCtx) -> Result<(), Error> {
        needs_setup(ctx, CREDS.name)?;
        for key in ["connection_uri", "username", "password"] {
            if !self.config.connection.contains_key(key) {
                return Err(Error::input(
                    "rabbitmq-creds needs a RabbitMQ management API: --rabbitmq-url http://USER:PASS@HOST:PORT (a file: connection's connection_uri, username and password; vblast does not read them from the environment)",
                ));
            }
        }
        Ok(())
    }

    fn connection(&self, mount: &str, _mode: Mode) -> Write {
        let at = self
            .config
            .connection
            .get("connection_uri")
            .and_then(Value::as_str)
            .unwrap_or("?");
        Write {
            path: "config/connection".into(),
            body: Value::Object(self.config.connection.clone()),
            what: format!("connecting '{mount}' to RabbitMQ at {at}"),
        }
    }

    fn role(&self) -> &str {
        ROLE
    }

    fn role_body(&self) -> Value {
        let mut role = json!({ "vhosts": DEFAULT_VHOSTS });
        for (k, v) in &self.config.role {
            role[k] = v.clone();
        }
        role
    }

    fn secret(&self) -> Option<&str> {
        self.config
            .connection
            .get("password")
            .and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_the_connection_and_bad_ones_are_refused() {
        let m = parse_url("http://admin:p:w@127.0.0.1:15672/").unwrap();
        assert_eq!(m["connection_uri"], "http://127.0.0.1:15672");
        assert_eq!(m["username"], "admin");
        assert_eq!(m["password"], "p:w");
        for bad in [
            "amqp://a:b@h:1",
            "http://h:1",
            "http://a:b@",
            "http://ab@h:1",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
