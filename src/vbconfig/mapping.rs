//! vault-benchmark's test types onto vblast's operations: each `test "TYPE" "NAME"` block
//! becomes an `OpChoice` of the operation that sends the same request, labelled NAME (the
//! report's row), with the block's `config` keys translated into that family's config.
//! Every key is accounted for here, in one place: translated, accepted because it only
//! names something (vblast names what it creates itself, and says so), or refused with a
//! message naming it when vblast's operation lacks what it would need.

use serde_json::{Map, Value, json};

use super::as_u64;
use crate::config::scenario::OpChoice;
use crate::vault::ops::{OpFlags, find};

/// A translated test: the operation, and notes for what vblast does differently.
#[derive(Debug)]
pub struct Test {
    pub choice: OpChoice,
    pub notes: Vec<String>,
}

/// vault-benchmark test types and the vblast operation each becomes.
const TYPES: &[(&str, &str)] = &[
    ("approle_auth", "approle-login"),
    ("cert_auth", "cert-login"),
    ("jwt_auth", "jwt-login"),
    ("userpass_auth", "userpass-login"),
    ("kvv1_read", "kv-read"),
    ("kvv1_write", "kv-write"),
    ("kvv2_read", "kv-read"),
    ("kvv2_write", "kv-write"),
    ("cubbyhole_read", "cubbyhole-read"),
    ("cubbyhole_write", "cubbyhole-write"),
    ("transit_encrypt", "transit-encrypt"),
    ("transit_decrypt", "transit-decrypt"),
    ("transit_sign", "transit-sign"),
    ("transit_verify", "transit-verify"),
    ("pki_issue", "pki-issue"),
    ("pki_sign", "pki-sign"),
    ("ssh_sign", "ssh-sign"),
    ("totp_generate", "totp-generate"),
    ("totp_read", "totp-read"),
    ("totp_create", "totp-create"),
    ("postgresql_secret", "db-creds"),
    ("mysql_secret", "db-creds"),
    ("ha_status", "sys-health"),
    ("seal_status", "seal-status"),
    ("metrics", "sys-metrics"),
];

/// "approle_auth, cert_auth, ...": the types vblast runs.
pub fn supported_types() -> String {
    TYPES.iter().map(|t| t.0).collect::<Vec<_>>().join(", ")
}

/// The vblast operation of a vault-benchmark test type.
pub fn op_of(kind: &str) -> Option<&'static str> {
    TYPES.iter().find(|t| t.0 == kind).map(|t| t.1)
}

/// The keys of one (nested) config block, each to be taken or refused.
struct Keys<'a> {
    test: &'a str,
    op: &'a str,
    /// "config" or "config.role": where these keys are, for messages.
    path: String,
    map: Map<String, Value>,
    /// Keys that only name things vblast names itself.
    named: Vec<String>,
}

impl<'a> Keys<'a> {
    fn new(test: &'a str, op: &'a str, path: &str, map: Map<String, Value>) -> Keys<'a> {
        Keys {
            test,
            op,
            path: path.into(),
            map,
            named: Vec::new(),
        }
    }
    fn where_(&self, key: &str) -> String {
        format!("test '{}': {}.{key}", self.test, self.path)
    }
    fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key)
    }
    fn string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(v) => Err(format!("{} must be a string, not {v}", self.where_(key))),
        }
    }
    fn number(&mut self, key: &str) -> Result<Option<u64>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => as_u64(&v)
                .map(Some)
                .ok_or_else(|| format!("{} must be a whole number, not {v}", self.where_(key))),
        }
    }
    fn boolean(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(v) => Err(format!(
                "{} must be true or false, not {v}",
                self.where_(key)
            )),
        }
    }
    /// A key vblast accepts only with this value (what its operation always does).
    fn only(&mut self, key: &str, allowed: &[Value], what_vblast_does: &str) -> Result<(), String> {
        if let Some(v) = self.take(key) {
            let same = allowed.iter().any(|a| {
                a == &v
                    || a.as_str()
                        .is_some_and(|s| v.as_str().is_some_and(|t| s.eq_ignore_ascii_case(t)))
                    || as_u64(a).is_some_and(|x| as_u64(&v) == Some(x))
            });
            if !same {
                return Err(format!(
                    "{} = {v} is not supported by vblast's {}: {what_vblast_does}",
                    self.where_(key),
                    self.op
                ));
            }
        }
        Ok(())
    }
    /// Keys that only name what the test creates: accepted, not used.
    fn names(&mut self, keys: &[&str]) {
        for k in keys {
            if self.map.remove(*k).is_some() {
                self.named.push(if self.path == "test" {
                    k.to_string()
                } else {
                    format!("{}.{k}", self.path)
                });
            }
        }
    }
    /// A nested block, or an empty one.
    fn block(&mut self, key: &str) -> Result<Keys<'a>, String> {
        // The test block's own keys are written bare ("config", "weight").
        let path = if self.path == "test" {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        };
        match self.take(key) {
            None => Ok(Keys::new(self.test, self.op, &path, Map::new())),
            Some(Value::Object(m)) => Ok(Keys::new(self.test, self.op, &path, m)),
            Some(v) => Err(format!("{} must be a block, not {v}", self.where_(key))),
        }
    }
    /// Every key left is one vblast's operation cannot honour: the first is refused.
    fn finish(self, named: &mut Vec<String>) -> Result<(), String> {
        if let Some(key) = self.map.keys().next() {
            return Err(format!(
                "{} is not supported by vblast's {} (it has no such setting); remove it to run this test",
                self.where_(key),
                self.op
            ));
        }
        named.extend(self.named);
        Ok(())
    }
}

/// Translates one test block: `body` holds `weight`, optional `mount_name` and `config`.
pub fn translate(kind: &str, name: &str, body: &Map<String, Value>) -> Result<Test, String> {
    let Some(op) = op_of(kind) else {
        return Err(format!(
            "test '{name}': unsupported test type '{kind}': vblast runs {}",
            supported_types()
        ));
    };
    let mut test = Keys::new(name, op, "test", body.clone());
    let weight = test
        .number("weight")?
        .ok_or_else(|| format!("test '{name}' has no weight (weight = 1..100)"))?;
    let weight = u32::try_from(weight)
        .ok()
        .filter(|w| (1..=100).contains(w))
        .ok_or_else(|| format!("test '{name}': weight {weight} is not between 1 and 100"))?;
    test.names(&["mount_name"]);
    let config = test.block("config")?;
    let mut named = Vec::new();
    let mut notes = Vec::new();
    let config = family_config(kind, op, config, &mut named, &mut notes)?;
    test.path = "test".into();
    test.finish(&mut named)?;
    if !named.is_empty() {
        notes.push(format!(
            "test '{name}': not used: {} (names and setup details of what the test creates; vblast creates its own under fresh names, vblast-xxxxxxxx, and removes them afterwards)",
            named.join(", ")
        ));
    }
    Ok(Test {
        choice: OpChoice {
            name: op.into(),
            weight,
            config,
            label: Some(name.into()),
        },
        notes,
    })
}

/// The family's config of a registered operation, from its flags' defaults.
fn defaults(op: &str) -> Map<String, Value> {
    let flags = OpFlags {
        kv_version: 2,
        secrets: 1000,
        secret_size: 100,
        ..OpFlags::default()
    };
    match find(op).map(|info| (info.config_from_flags)(&flags)) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// Token settings of the login families (`token_ttl`, `token_type`).
fn token_settings(k: &mut Keys, cfg: &mut Map<String, Value>) -> Result<(), String> {
    if let Some(ttl) = k.string("token_ttl")? {
        cfg.insert("token_ttl".into(), json!(ttl));
    }
    if let Some(t) = k.string("token_type")? {
        // vault-benchmark's "default" is the mount's default: service tokens.
        let t = if t == "default" { "service".into() } else { t };
        cfg.insert("token_type".into(), json!(t));
    }
    Ok(())
}

/// vault-benchmark's PKI key (`key_type` "rsa"/"ec"/"ed25519", `key_bits`) as vblast's
/// `--key-type` (rsa-2048, ec-256, ed25519...). vault-benchmark's default is RSA 2048.
fn pki_key(k: &mut Keys) -> Result<Option<String>, String> {
    let kind = k.string("key_type")?;
    let bits = k.number("key_bits")?;
    Ok(match (kind.as_deref(), bits) {
        (None, None) => None,
        (Some("ed25519"), _) => Some("ed25519".into()),
        (Some("ec"), b) => Some(format!("ec-{}", b.filter(|&b| b != 0).unwrap_or(256))),
        (Some("rsa") | None, b) => Some(format!("rsa-{}", b.filter(|&b| b != 0).unwrap_or(2048))),
        (Some(other), _) => Some(other.to_string()),
    })
}

/// `cfg[block][key] = v` in a family config whose settings sit in blocks (jwt-login,
/// pki-sign, db-creds: the blocks of vault-benchmark's own tests).
fn set_in(cfg: &mut Map<String, Value>, block: &str, key: &str, v: Value) {
    let b = cfg
        .entry(block.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = b {
        m.insert(key.into(), v);
    }
}

fn family_config(
    kind: &str,
    op: &str,
    mut c: Keys,
    named: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Value, String> {
    let mut cfg = defaults(op);
    match kind {
        "approle_auth" => {
            let mut role = c.block("role")?;
            role.names(&["role_name"]);
            role.only(
                "bind_secret_id",
                &[json!(true)],
                "its logins always present a secret_id",
            )?;
            token_settings(&mut role, &mut cfg)?;
            role.finish(named)?;
            let secret = c.block("secret_id")?;
            secret.finish(named)?;
        }
        "userpass_auth" => {
            // The password: vblast makes a random one (never printed or saved).
            c.names(&["username", "password"]);
            token_settings(&mut c, &mut cfg)?;
        }
        "cert_auth" => {
            c.names(&["name", "display_name"]);
            if let Some(ca) = c.string("certificate")? {
                if ca.contains("-----BEGIN") {
                    return Err(format!(
                        "test '{}': config.certificate holds PEM text: vblast takes the CA certificate as a file path (certificate = \"ca.pem\")",
                        c.test
                    ));
                }
                cfg.insert("client_ca".into(), json!(ca));
            }
        }
        "jwt_auth" => {
            let auth = c.block("auth")?;
            auth.finish(named)?;
            let mut role = c.block("role")?;
            role.names(&["name"]);
            role.only(
                "role_type",
                &[json!("jwt")],
                "it logs in with JWTs it signs itself (role_type jwt)",
            )?;
            // vblast signs its own tokens with these claims, so the role's bounds are its own.
            role.names(&["user_claim", "bound_audiences", "bound_subject"]);
            let mut tokens = Map::new();
            token_settings(&mut role, &mut tokens)?;
            for (k, v) in tokens {
                set_in(&mut cfg, "role", &k, v);
            }
            role.finish(named)?;
        }
        "kvv1_read" | "kvv1_write" | "kvv2_read" | "kvv2_write" => {
            cfg.insert(
                "version".into(),
                json!(if kind.starts_with("kvv1") { 1 } else { 2 }),
            );
            // vault-benchmark's defaults: 1000 secrets of 1 byte.
            let n = c.number("numkvs")?.unwrap_or(1000);
            if n == 0 {
                return Err(format!(
                    "test '{}': config.numkvs must be at least 1",
                    c.test
                ));
            }
            cfg.insert("secrets".into(), json!(n));
            cfg.insert(
                "secret_size".into(),
                json!(c.number("kvsize")?.unwrap_or(1)),
            );
        }
        "cubbyhole_read" | "cubbyhole_write" => {
            c.names(&["path"]);
        }
        "transit_encrypt" | "transit_decrypt" | "transit_sign" | "transit_verify" => {
            if let Some(n) = c.number("payload_len")? {
                cfg.insert("payload_size".into(), json!(n));
            }
            let mut keys = c.block("keys")?;
            keys.names(&["name"]);
            if let Some(t) = keys.string("type")? {
                cfg.insert("key_type".into(), json!(t));
            }
            for flag in [
                "convergent_encryption",
                "derived",
                "exportable",
                "allow_plaintext_backup",
            ] {
                keys.only(flag, &[json!(false)], "its keys are plain named keys")?;
            }
            keys.finish(named)?;
            for block in ["encrypt", "decrypt", "sign", "verify"] {
                let mut b = c.block(block)?;
                b.names(&["name"]);
                b.finish(named)?;
            }
        }
        "pki_issue" | "pki_sign" => {
            c.names(&["setup_delay"]);
            let sign = kind == "pki_sign";
            if !sign {
                notes.push(format!(
                    "test '{}': vblast's pki-issue issues from a root CA it makes itself (EC P-256), with no intermediate; the CA settings change setup only, not the requests measured",
                    c.test
                ));
            }
            for block in ["root_ca", "intermediate_csr", "intermediate_ca"] {
                let mut b = c.block(block)?;
                b.names(&["issuer_name", "key_name"]);
                if sign {
                    // pki-sign makes this chain: root, then an intermediate signed by it.
                    if block != "intermediate_ca" {
                        if let Some(cn) = b.string("common_name")? {
                            set_in(&mut cfg, block, "common_name", json!(cn));
                        }
                        if let Some(t) = b.string("key_type")? {
                            set_in(&mut cfg, block, "key_type", json!(t));
                        }
                        if let Some(n) = b.number("key_bits")? {
                            set_in(&mut cfg, block, "key_bits", json!(n));
                        }
                    }
                    if block != "intermediate_csr"
                        && let Some(ttl) = b.string("ttl")?
                    {
                        set_in(&mut cfg, block, "ttl", json!(ttl));
                    }
                } else {
                    b.names(&["common_name"]);
                    // The CA's own key: pki-issue's is EC P-256; other keys only change setup.
                    let key = pki_key(&mut b)?;
                    if key.is_some() {
                        named.push(format!("config.{block}.key_type"));
                    }
                }
                b.only(
                    "type",
                    &[json!("internal")],
                    "its CA keys are made by the server",
                )?;
                b.finish(named)?;
            }
            let mut role = c.block("role")?;
            role.names(&[
                "name",
                "allowed_domains",
                "allow_subdomains",
                "allow_any_name",
            ]);
            let put = |cfg: &mut Map<String, Value>, k: &str, v: Value| {
                if sign {
                    set_in(cfg, "role", k, v);
                } else {
                    cfg.insert(k.into(), v);
                }
            };
            if let Some(key) = pki_key(&mut role)? {
                put(&mut cfg, "key_type", json!(key));
            }
            if let Some(ttl) = role.string("ttl")? {
                put(&mut cfg, "ttl", json!(ttl));
            }
            if let Some(no_store) = role.boolean("no_store")? {
                put(&mut cfg, "no_store", json!(no_store));
            }
            role.only(
                "generate_lease",
                &[json!(false)],
                "its certificates get no lease",
            )?;
            role.finish(named)?;
            let mut req = c.block(if sign { "sign" } else { "issue" })?;
            req.names(&["name", "common_name"]);
            req.finish(named)?;
        }
        "ssh_sign" => {
            let mut role = c.block("role")?;
            role.names(&["name"]);
            role.only(
                "allow_user_certificates",
                &[json!(true)],
                "it signs user certificates",
            )?;
            role.only("key_type", &[json!("ca")], "it signs with a CA")?;
            role.finish(named)?;
            let mut ca = c.block("ca")?;
            ca.only(
                "generate_signing_key",
                &[json!(true)],
                "the server generates its CA key",
            )?;
            ca.finish(named)?;
            let mut ks = c.block("key_signing")?;
            ks.only("cert_type", &[json!("user")], "it signs user certificates")?;
            ks.finish(named)?;
        }
        "totp_create" => {
            // vault-benchmark's create request carries only generate, issuer and
            // account_name: its algorithm, digits and period are never sent.
            c.names(&[
                "key_name",
                "issuer",
                "account_name",
                "algorithm",
                "digits",
                "period",
            ]);
            c.only("generate", &[json!(true)], "the server generates its keys")?;
        }
        "totp_generate" | "totp_read" => {
            c.names(&["key_name", "issuer", "account_name"]);
            c.only(
                "algorithm",
                &[json!("SHA1")],
                "its key is generated with SHA1",
            )?;
            c.only("digits", &[json!(6)], "its codes have 6 digits")?;
            c.only("period", &[json!(30)], "its codes last 30 s")?;
            c.only("generate", &[json!(true)], "the server generates its key")?;
        }
        "postgresql_secret" | "mysql_secret" => {
            set_in(
                &mut cfg,
                "db_connection",
                "plugin_name",
                json!(if kind == "mysql_secret" {
                    "mysql-database-plugin"
                } else {
                    "postgresql-database-plugin"
                }),
            );
            let mut db = c.block("db_connection")?;
            db.names(&["name"]);
            for key in ["connection_url", "username", "password"] {
                if let Some(v) = db.string(key)? {
                    set_in(&mut cfg, "db_connection", key, json!(v));
                }
            }
            if let Some(v) = db.boolean("verify_connection")? {
                set_in(&mut cfg, "db_connection", "verify_connection", json!(v));
            }
            if let Some(v) = db.number("max_open_connections")? {
                set_in(&mut cfg, "db_connection", "max_open_connections", json!(v));
            }
            db.finish(named)?;
            let mut role = c.block("role")?;
            role.names(&["name", "db_name"]);
            for key in [
                "creation_statements",
                "revocation_statements",
                "default_ttl",
                "max_ttl",
            ] {
                if let Some(v) = role.string(key)? {
                    set_in(&mut cfg, "role", key, json!(v));
                }
            }
            role.finish(named)?;
        }
        "ha_status" => {
            notes.push(format!(
                "test '{}': ha_status is sent as GET /v1/sys/health (vblast's sys-health; it has no ha-status request)",
                c.test
            ));
        }
        _ => {}
    }
    c.finish(named)?;
    Ok(Value::Object(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(text: &str) -> Map<String, Value> {
        let body = hcl::parse(text).unwrap();
        super::super::block_object(&body, "t.hcl", "test").unwrap()
    }

    fn tr(kind: &str, text: &str) -> Result<Test, String> {
        translate(kind, "t1", &block(text))
    }

    #[test]
    fn tutorial_tests_translate() {
        let t = tr(
            "approle_auth",
            "weight = 50\nconfig {\n role {\n role_name = \"benchmark-role\"\n token_ttl = \"2m\"\n }\n}",
        )
        .unwrap();
        assert_eq!(t.choice.name, "approle-login");
        assert_eq!(t.choice.weight, 50);
        assert_eq!(t.choice.label.as_deref(), Some("t1"));
        assert_eq!(t.choice.config["token_ttl"], "2m");
        assert!(
            t.notes[0].contains("config.role.role_name"),
            "{:?}",
            t.notes
        );
        let t = tr(
            "kvv2_write",
            "weight = 50\nconfig {\n numkvs = 100\n kvsize = 100\n}",
        )
        .unwrap();
        assert_eq!(t.choice.name, "kv-write");
        assert_eq!(t.choice.config["secrets"], 100);
        assert_eq!(t.choice.config["secret_size"], 100);
        assert_eq!(t.choice.config["version"], 2);
        let t = tr("kvv1_read", "weight = 5").unwrap();
        assert_eq!(t.choice.config["version"], 1);
        assert_eq!(t.choice.config["secrets"], 1000);
        assert_eq!(t.choice.config["secret_size"], 1);
    }

    #[test]
    fn every_registered_translation_builds() {
        for (kind, op) in TYPES {
            let t = tr(kind, "weight = 10").unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(t.choice.name, *op);
            if let Some(info) = find(op) {
                (info.build)(&t.choice.config).unwrap_or_else(|e| panic!("{kind}: {e}"));
            }
        }
    }

    #[test]
    fn pki_keys_translate() {
        let t = tr(
            "pki_issue",
            "weight = 100\nconfig {\n setup_delay = \"2s\"\n root_ca {\n common_name = \"x\"\n key_type = \"ec\"\n key_bits = \"256\"\n }\n intermediate_csr {\n common_name = \"y\"\n key_type = \"ec\"\n key_bits = \"256\"\n }\n role {\n ttl = \"10s\"\n no_store = true\n generate_lease = false\n key_type = \"rsa\"\n key_bits = 3072\n }\n}",
        )
        .unwrap();
        assert_eq!(t.choice.config["key_type"], "rsa-3072");
        assert_eq!(t.choice.config["ttl"], "10s");
        assert_eq!(t.choice.config["no_store"], true);
        (find("pki-issue").unwrap().build)(&t.choice.config).unwrap();
        let e = tr(
            "pki_issue",
            "weight = 100\nconfig {\n role {\n generate_lease = true\n }\n}",
        )
        .unwrap_err();
        assert!(e.contains("config.role.generate_lease = true"), "{e}");
    }

    #[test]
    fn ops_of_the_other_branch_translate() {
        let t = tr(
            "jwt_auth",
            "weight = 100\nconfig {\n role {\n name = \"r\"\n role_type = \"jwt\"\n user_claim = \"sub\"\n bound_audiences = \"a\"\n token_ttl = \"1m\"\n token_type = \"batch\"\n }\n}",
        )
        .unwrap();
        assert_eq!(t.choice.name, "jwt-login");
        assert_eq!(t.choice.config["role"]["token_ttl"], "1m");
        assert_eq!(t.choice.config["role"]["token_type"], "batch");
        let t = tr(
            "pki_sign",
            "weight = 100\nconfig {\n role {\n key_type = \"ed25519\"\n }\n}",
        )
        .unwrap();
        assert_eq!(t.choice.name, "pki-sign");
        assert_eq!(t.choice.config["role"]["key_type"], "ed25519");
        let t = tr(
            "postgresql_secret",
            "weight = 100\nconfig {\n db_connection {\n connection_url = \"postgresql://{{username}}:{{password}}@127.0.0.1:5432/postgres\"\n username = \"u\"\n password = \"p\"\n }\n role {\n creation_statements = \"CREATE ROLE x;\"\n default_ttl = \"10s\"\n }\n}",
        )
        .unwrap();
        assert_eq!(t.choice.name, "db-creds");
        let conn = &t.choice.config["db_connection"];
        assert_eq!(conn["plugin_name"], "postgresql-database-plugin");
        assert_eq!(conn["username"], "u");
        assert_eq!(
            conn["connection_url"],
            "postgresql://{{username}}:{{password}}@127.0.0.1:5432/postgres"
        );
        let role = &t.choice.config["role"];
        assert_eq!(role["creation_statements"], "CREATE ROLE x;");
        assert_eq!(role["default_ttl"], "10s");
        (find("db-creds").unwrap().build)(&t.choice.config).unwrap();
        let t = tr("mysql_secret", "weight = 100").unwrap();
        assert_eq!(
            t.choice.config["db_connection"]["plugin_name"],
            "mysql-database-plugin"
        );
    }

    /// vault-benchmark's TOTP documentation example (docs/tests/secret-totp.md): its three
    /// test types, each onto its operation, the names noted, the settings vblast uses kept.
    #[test]
    fn totp_tests_translate() {
        for (kind, op, extra) in [
            ("totp_create", "totp-create", "generate = true\n"),
            ("totp_read", "totp-read", ""),
            ("totp_generate", "totp-generate", "generate = true\n"),
        ] {
            let text = format!(
                "weight = 33\nconfig {{\n key_name = \"k\"\n issuer = \"Vault Benchmark\"\n account_name = \"test@user.com\"\n algorithm = \"SHA1\"\n digits = 6\n period = 30\n {extra}}}"
            );
            let t = tr(kind, &text).unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(t.choice.name, op);
            assert_eq!(t.choice.weight, 33);
            assert_eq!(t.choice.label.as_deref(), Some("t1"));
            assert!(t.notes[0].contains("config.key_name"), "{:?}", t.notes);
            (find(op).unwrap().build)(&t.choice.config).unwrap();
        }
        // Create sends no algorithm, digits or period (nor does vault-benchmark's).
        let t = tr("totp_create", "weight = 1\nconfig {\n digits = 8\n}").unwrap();
        assert!(t.notes[0].contains("config.digits"), "{:?}", t.notes);
        for kind in ["totp_read", "totp_create"] {
            let e = tr(kind, "weight = 1\nconfig {\n generate = false\n}").unwrap_err();
            assert!(e.contains("config.generate"), "{kind}: {e}");
        }
        let e = tr("totp_read", "weight = 1\nconfig {\n period = 60\n}").unwrap_err();
        assert!(e.contains("config.period"), "{e}");
    }

    #[test]
    fn what_vblast_cannot_do_is_refused_by_name() {
        for (kind, text, key) in [
            (
                "approle_auth",
                "weight = 1\nconfig {\n role {\n token_policies = [\"a\"]\n }\n}",
                "config.role.token_policies",
            ),
            (
                "approle_auth",
                "weight = 1\nconfig {\n secret_id {\n ttl = \"10m\"\n }\n}",
                "config.secret_id.ttl",
            ),
            (
                "approle_auth",
                "weight = 1\nconfig {\n role {\n bind_secret_id = false\n }\n}",
                "config.role.bind_secret_id",
            ),
            (
                "kvv2_read",
                "weight = 1\nconfig {\n nonsense = 1\n}",
                "config.nonsense",
            ),
            (
                "transit_encrypt",
                "weight = 1\nconfig {\n context_len = 32\n}",
                "config.context_len",
            ),
            (
                "transit_encrypt",
                "weight = 1\nconfig {\n keys {\n derived = true\n }\n}",
                "config.keys.derived",
            ),
            (
                "transit_verify",
                "weight = 1\nconfig {\n verify {\n signature_algorithm = \"pkcs1v15\"\n }\n}",
                "config.verify.signature_algorithm",
            ),
            (
                "ssh_sign",
                "weight = 1\nconfig {\n key_signing {\n ttl = \"5m\"\n }\n}",
                "config.key_signing.ttl",
            ),
            (
                "totp_generate",
                "weight = 1\nconfig {\n digits = 8\n}",
                "config.digits",
            ),
            (
                "cert_auth",
                "weight = 1\nconfig {\n token_ttl = \"1m\"\n}",
                "config.token_ttl",
            ),
            ("ha_status", "weight = 1\nextra = 2", "test.extra"),
        ] {
            let e = tr(kind, text).unwrap_err();
            assert!(e.contains(key) && e.contains("test 't1'"), "{kind}: {e}");
        }
        let e = tr("aws_auth", "weight = 1").unwrap_err();
        assert!(
            e.contains("unsupported test type 'aws_auth'") && e.contains("approle_auth, cert_auth"),
            "{e}"
        );
        let e = tr("totp_verify", "weight = 1").unwrap_err();
        assert!(
            e.contains("unsupported test type 'totp_verify'") && e.contains("totp_create"),
            "{e}"
        );
        assert!(
            tr("kvv2_read", "config {}")
                .unwrap_err()
                .contains("no weight")
        );
        assert!(
            tr("kvv2_read", "weight = 0")
                .unwrap_err()
                .contains("weight 0")
        );
    }
}
