//! vault-benchmark's test types onto vblast's operations: each `test "TYPE" "NAME"` block
//! becomes an `OpChoice` of the operation that sends the same request, labelled NAME (the
//! report's row), with the block's `config` keys translated into that family's config.
//! Here: the test's own keys (weight, mount_name) and the notes; the types and their
//! mapping functions are the registry's (each operation's family file, through
//! `vault::ops::vb`), where every config key is translated, accepted because it only names
//! something (vblast names what it creates itself, and says so), or refused by name.

use crate::error::Cause;
use serde_json::{Map, Value};

use crate::config::scenario::OpChoice;
use crate::vault::ops::options::OptionValue;
use crate::vault::ops::vb::{KeyRefusal, Keys, Mapped};
use crate::vault::ops::{OpInfo, OptionValues, VbType, registry};

/// A translated test: the operation, and notes for what vblast does differently.
#[derive(Debug)]
pub struct Test {
    pub choice: OpChoice,
    pub notes: Vec<String>,
}

/// Every vault-benchmark test type of the registry, with its operation.
fn types() -> impl Iterator<Item = (&'static VbType, &'static OpInfo)> {
    registry()
        .iter()
        .flat_map(|info| info.vault_benchmark.types().iter().map(move |t| (t, info)))
}

/// "approle_auth, cert_auth, ...": the types vblast runs, in alphabetical order.
pub fn supported_types() -> String {
    let mut names: Vec<&str> = types().map(|(t, _)| t.name).collect();
    names.sort_unstable();
    names.join(", ")
}

/// The vblast operation of a vault-benchmark test type.
pub fn op_of(kind: &str) -> Option<&'static str> {
    types().find(|(t, _)| t.name == kind).map(|(_, i)| i.name)
}

/// Why a vault-benchmark test type whose engine OpenBao does not ship is refused: OpenBao
/// answers `plugin not found in the catalog` for it, so the engine must be registered as a
/// plugin first; and on a server that has it, the operation vblast lacks.
fn plugin_only(kind: &str) -> Option<String> {
    let (engine, lacks) = match kind {
        "ldap_auth" => (
            "the ldap auth method",
            "an ldap-login operation (POST auth/<path>/login/<user>)",
        ),
        "ldap_static_secret" => (
            "the ldap secrets engine",
            "an ldap static-role credentials read (GET <mount>/static-cred/<role>)",
        ),
        "ldap_dynamic_secret" => (
            "the ldap secrets engine",
            "an ldap dynamic-role credentials request (GET <mount>/creds/<role>)",
        ),
        "radius_auth" => (
            "the radius auth method",
            "a radius-login operation (POST auth/<path>/login/<user>)",
        ),
        _ => return None,
    };
    Some(format!(
        "OpenBao does not ship {engine} built in (it answers 'plugin not found in the catalog'); the engine must be registered as a plugin first. Where the server has it (HashiCorp Vault, or OpenBao with the plugin registered) vblast still lacks the mapping: {lacks}"
    ))
}

/// Translates one test block: `body` holds `weight`, optional `mount_name` and `config`.
/// Every key vblast refuses in it is returned at once, each with where it is.
pub fn translate(
    kind: &str,
    name: &str,
    body: &Map<String, Value>,
) -> Result<Test, Vec<KeyRefusal>> {
    let Some((vb_type, info)) = types().find(|(t, _)| t.name == kind) else {
        let why = plugin_only(kind)
            .map(|why| format!(" ({why})"))
            .unwrap_or_default();
        return Err(vec![KeyRefusal {
            path: String::new(),
            message: format!(
                "test '{name}': unsupported test type '{kind}'{why}: vblast runs {}",
                supported_types()
            ),
        }]);
    };
    let op = info.name;
    let mut test = Keys::new(name, op, "test", body.clone());
    let said = |path: &str, e: Cause| KeyRefusal {
        path: path.into(),
        message: e.to_string(),
    };
    let weight = match test.number("weight").map_err(|e| vec![said("weight", e)])? {
        None => {
            test.refuse_with(
                "weight",
                format!("test '{name}' has no weight (weight = 1..100)"),
            );
            0
        }
        Some(w) => match u32::try_from(w).ok().filter(|w| (1..=100).contains(w)) {
            Some(w) => w,
            None => {
                test.refuse_with(
                    "weight",
                    format!("test '{name}': weight {w} is not between 1 and 100"),
                );
                0
            }
        },
    };
    test.names(&["mount_name"]);
    let mut config = test.block("config").map_err(|e| vec![said("config", e)])?;
    let mut out = Mapped {
        config: match (info.config_from)(&OptionValues::new()) {
            Value::Object(m) => m,
            _ => Map::new(),
        },
        ..Mapped::default()
    };
    let mapped =
        (vb_type.config)(&mut config, &mut out).and_then(|()| config.finish(&mut out.named));
    let out_of_bounds = bounded(info, name, &out.config);
    let Mapped {
        config,
        mut named,
        mut notes,
    } = out;
    test.path = "test".into();
    let sink = test.sink();
    let mut extra = out_of_bounds;
    if let Err(e) = mapped {
        extra.push(said("config", e));
    }
    if let Err(e) = test.finish(&mut named) {
        extra.push(said("", e));
    }
    let mut all = sink.borrow().clone();
    all.extend(extra);
    if !all.is_empty() {
        return Err(all);
    }
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
            config: Value::Object(config),
            label: Some(name.into()),
        },
        notes,
    })
}

/// Every number of the test's config is held to its flag's bounds (`kvsize` as
/// `--secret-size`, `numkvs` as `--secrets`), or to the operation's own bound where no flag
/// has its name (`root_ca.key_bits`, `aliases.size`: `OpInfo::bounds`): refused, naming
/// the key, its value and the bound, before anything is set up on the server.
fn bounded(info: &OpInfo, name: &str, config: &Map<String, Value>) -> Vec<KeyRefusal> {
    let mut out: Vec<KeyRefusal> = info
        .bounds
        .iter()
        .filter_map(|b| b.check(config).err())
        .map(|e| KeyRefusal {
            path: "config".into(),
            message: format!("test '{name}': {e}"),
        })
        .collect();
    for (key, v) in config {
        let Some(n) = v.as_u64() else {
            continue;
        };
        let Some(spec) = info.options.iter().find(|s| s.id() == *key) else {
            continue;
        };
        if let Err(e) = spec.check(&OptionValue::Number(n)) {
            out.push(KeyRefusal {
                path: "config".into(),
                message: format!(
                    "test '{name}': its config asks for {key} = {n}, out of the flag's bounds: {e}"
                ),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::ops::find;

    fn block(text: &str) -> Map<String, Value> {
        let body = hcl::parse(text).unwrap();
        super::super::block_object(&body, "test").unwrap()
    }

    fn tr(kind: &str, text: &str) -> Result<Test, String> {
        translate(kind, "t1", &block(text)).map_err(|e| {
            e.iter()
                .map(|r| r.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        })
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
        // The role's other keys and the secret_id block go to the server as given.
        let t = tr(
            "approle_auth",
            "weight = 1\nconfig {\n role {\n token_policies = [\"a\"]\n secret_id_num_uses = 0\n }\n secret_id {\n ttl = \"10m\"\n token_bound_cidrs = [\"127.0.0.1/32\"]\n }\n}",
        )
        .unwrap();
        let c = &t.choice.config;
        assert_eq!(c["role"]["token_policies"][0], "a", "{c}");
        assert_eq!(c["role"]["secret_id_num_uses"], 0, "{c}");
        assert_eq!(c["secret_id"]["ttl"], "10m", "{c}");
        assert_eq!(
            c["secret_id"]["token_bound_cidrs"][0], "127.0.0.1/32",
            "{c}"
        );
        let t = tr("kvv1_read", "weight = 5").unwrap();
        assert_eq!(t.choice.config["version"], 1);
        assert_eq!(t.choice.config["secrets"], 1000);
        assert_eq!(t.choice.config["secret_size"], 1);
    }

    #[test]
    fn every_registered_translation_builds() {
        for (vb_type, info) in types() {
            let kind = vb_type.name;
            let t = tr(kind, "weight = 10").unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(t.choice.name, info.name);
            (info.build)(&t.choice.config).unwrap_or_else(|e| panic!("{kind}: {e}"));
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
        let chain = &t.choice.config["chain"];
        assert_eq!(chain["root_ca"]["key_type"], "ec");
        assert_eq!(chain["root_ca"]["common_name"], "x");
        assert_eq!(chain["intermediate_csr"]["key_bits"], 256);
        (find("pki-issue").unwrap().build)(&t.choice.config).unwrap();
        // vault-benchmark's defaults: an RSA-2048 root and intermediate, an RSA-2048 role
        // allowing any name, 5m, issuing test.vault.benchmark.
        let t = tr(
            "pki_issue",
            "weight = 100\nconfig {\n role {\n generate_lease = true\n }\n}",
        )
        .unwrap();
        let c = &t.choice.config;
        assert_eq!(c["generate_lease"], true);
        assert_eq!(c["key_type"], "rsa-2048");
        assert_eq!(c["ttl"], "5m");
        assert_eq!(c["chain"]["root_ca"]["key_type"], "rsa");
        assert_eq!(c["chain"]["root_ca"]["key_bits"], 2048);
        assert_eq!(
            c["chain"]["intermediate_csr"]["common_name"],
            "example.com Intermediate Authority"
        );
        assert_eq!(c["role_params"]["allow_any_name"], true);
        assert_eq!(c["params"]["common_name"], "test.vault.benchmark");
        let t = tr(
            "pki_sign",
            "weight = 100\nconfig {\n role {\n ttl = \"10m\"\n key_type = \"ec\"\n key_bits = 521\n }\n}",
        )
        .unwrap();
        assert_eq!(t.choice.config["role"]["key_type"], "ec-521");
        let e = (find("pki-sign").unwrap().build)(&t.choice.config)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("P-521") && e.contains("sign.csr"), "{e}");
        let t = tr("pki_sign", "weight = 100").unwrap();
        let c = &t.choice.config;
        assert_eq!(c["role"]["key_type"], "rsa-2048");
        assert_eq!(c["root_ca"]["key_type"], "rsa");
        assert_eq!(c["common_name"], "test.vault.benchmark");
        assert_eq!(c["csrs"], 1);
        let e = tr(
            "pki_sign",
            "weight = 100\nconfig {\n sign {\n csr = \"/nonexistent/x.csr\"\n }\n}",
        )
        .unwrap_err();
        assert!(
            e.contains("config.sign.csr") && e.contains("neither a PEM CSR"),
            "{e}"
        );
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
        // The role's bounds are the file's, the issuer goes into the auth config.
        assert_eq!(t.choice.config["role"]["name"], "r");
        assert_eq!(t.choice.config["role"]["user_claim"], "sub");
        assert_eq!(
            t.choice.config["role"]["bound_audiences"],
            serde_json::json!(["a"])
        );
        let t = tr(
            "jwt_auth",
            "weight = 100\nconfig {\n auth {\n bound_issuer = \"https://idp\"\n }\n role {\n bound_subject = \"svc\"\n }\n}",
        )
        .unwrap();
        let c = &t.choice.config;
        assert_eq!(c["bound_issuer"], "https://idp");
        assert_eq!(c["role"]["bound_subject"], "svc");
        // vault-benchmark's defaults where the file is silent.
        assert_eq!(c["role"]["name"], "benchmark-role");
        assert_eq!(c["role"]["user_claim"], "https://vault/user");
        assert_eq!(
            c["role"]["bound_audiences"],
            serde_json::json!(["https://vault.plugin.auth.jwt.test"])
        );
        (find("jwt-login").unwrap().build)(c).unwrap();
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
        // Generate and read make their key with the file's algorithm, digits and period.
        let t = tr(
            "totp_generate",
            "weight = 1\nconfig {\n algorithm = \"sha256\"\n digits = 8\n period = 60\n}",
        )
        .unwrap();
        let c = &t.choice.config;
        assert_eq!(c["algorithm"], "SHA256");
        assert_eq!(c["digits"], 8);
        assert_eq!(c["period"], 60);
        (find("totp-generate").unwrap().build)(c).unwrap();
        let e = tr("totp_read", "weight = 1\nconfig {\n period = 0\n}").unwrap_err();
        assert!(e.contains("config.period"), "{e}");
    }

    /// ssh_sign: vault-benchmark's RSA-4096 client key by default; the role's, CA's and
    /// key_signing's documented keys go to the server as given.
    #[test]
    fn ssh_sign_takes_vault_benchmarks_key_and_keys() {
        let t = tr("ssh_sign", "weight = 1").unwrap();
        assert_eq!(t.choice.config["client_key"], "rsa-4096");
        assert!(
            t.notes
                .iter()
                .any(|n| n.contains("role.allowed_users")
                    && n.contains("key_signing.valid_principals")),
            "{:?}",
            t.notes
        );
        let t = tr(
            "ssh_sign",
            "weight = 1\nconfig {\n role {\n allow_user_certificates = true\n allowed_extensions = \"permit-pty\"\n default_user = \"vblast\"\n }\n ca {\n key_type = \"ssh-ed25519\"\n }\n key_signing {\n ttl = \"5m\"\n valid_principals = \"vblast\"\n extensions = { permit-pty = \"\" }\n critical_options = {}\n key_id = \"k\"\n cert_type = \"user\"\n public_key = \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB7g vblast\"\n }\n}",
        )
        .unwrap();
        let c = &t.choice.config;
        assert_eq!(c["role"]["allowed_extensions"], "permit-pty", "{c}");
        assert_eq!(c["role"]["allow_user_certificates"], true);
        assert_eq!(c["ca"]["key_type"], "ssh-ed25519");
        assert_eq!(c["sign"]["ttl"], "5m");
        assert_eq!(c["sign"]["valid_principals"], "vblast");
        assert_eq!(c["sign"]["extensions"]["permit-pty"], "");
        assert_eq!(c["sign"]["cert_type"], "user");
        assert!(
            c["sign"]["public_key"]
                .as_str()
                .unwrap()
                .starts_with("ssh-ed25519 ")
        );
        (find("ssh-sign").unwrap().build)(c).unwrap();
        let k = crate::vault::ops::ssh::rsa_public_key(1024).unwrap();
        let b64 = k
            .strip_prefix("ssh-rsa ")
            .unwrap()
            .strip_suffix(" vblast")
            .unwrap();
        use base64::Engine as _;
        let blob = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert_eq!(&blob[4..11], b"ssh-rsa");
    }

    /// cert_auth's token settings and name constraints, userpass's token keys and the
    /// database's other connection and role keys are sent as given; the defaults vblast
    /// picks where the file is silent are said.
    #[test]
    fn documented_auth_and_database_keys_pass_through() {
        let t = tr(
            "cert_auth",
            "weight = 1\nconfig {\n token_ttl = \"1m\"\n token_policies = [\"default\"]\n allowed_common_names = [\"x\"]\n token_type = \"batch\"\n}",
        )
        .unwrap();
        let c = &t.choice.config;
        assert_eq!(c["role"]["token_ttl"], "1m", "{c}");
        assert_eq!(c["role"]["allowed_common_names"][0], "x");
        assert_eq!(c["role"]["token_type"], "batch");
        assert!(
            t.notes.iter().all(|n| !n.contains("token_ttl")),
            "{:?}",
            t.notes
        );
        (find("cert-login").unwrap().build)(c).unwrap();
        let t = tr("cert_auth", "weight = 1").unwrap();
        assert!(
            t.notes.iter().any(|n| n.contains("token_ttl not given")),
            "{:?}",
            t.notes
        );
        let t = tr(
            "userpass_auth",
            "weight = 1\nconfig {\n token_num_uses = 3\n token_period = \"1m\"\n}",
        )
        .unwrap();
        let c = &t.choice.config;
        assert_eq!(c["role"]["token_num_uses"], 3, "{c}");
        assert_eq!(c["role"]["token_period"], "1m");
        assert!(
            t.notes.iter().any(|n| n.contains("token_ttl not given")),
            "{:?}",
            t.notes
        );
        (find("userpass-login").unwrap().build)(c).unwrap();
        let t = tr(
            "approle_auth",
            "weight = 1\nconfig {\n role {\n token_ttl = \"1m\"\n }\n}",
        )
        .unwrap();
        assert!(
            t.notes.iter().all(|n| !n.contains("token_ttl")),
            "{:?}",
            t.notes
        );
        let t = tr(
            "postgresql_secret",
            "weight = 1\nconfig {\n db_connection {\n username_template = \"u-{{random 8}}\"\n max_idle_connections = 2\n allowed_roles = [\"benchmark-role\"]\n plugin_name = \"postgresql-database-plugin\"\n }\n role {\n renew_statements = \"SELECT 1;\"\n default_ttl = \"1m\"\n }\n}",
        )
        .unwrap();
        let c = &t.choice.config;
        assert_eq!(
            c["db_connection"]["extra"]["username_template"], "u-{{random 8}}",
            "{c}"
        );
        assert_eq!(c["db_connection"]["extra"]["max_idle_connections"], 2);
        assert_eq!(c["role"]["renew_statements"], "SELECT 1;");
        assert!(
            t.notes.iter().any(|n| n.contains("max_ttl not given")),
            "{:?}",
            t.notes
        );
        assert!(
            t.notes.iter().all(|n| !n.contains("default_ttl not given")),
            "{:?}",
            t.notes
        );
        (find("db-creds").unwrap().build)(c).unwrap();
        // KV reads read 1-byte secrets whatever kvsize says (vault-benchmark seeds
        // {"foo": 1}); writes send kvsize bytes.
        let t = tr("kvv2_read", "weight = 1\nconfig {\n kvsize = 100\n}").unwrap();
        assert_eq!(t.choice.config["secret_size"], 1);
        assert!(
            t.notes.iter().any(|n| n.contains("config.kvsize")),
            "{:?}",
            t.notes
        );
        let t = tr("kvv1_write", "weight = 1\nconfig {\n kvsize = 100\n}").unwrap();
        assert_eq!(t.choice.config["secret_size"], 100);
        assert!(t.notes.is_empty(), "{:?}", t.notes);
    }

    /// vault-benchmark's transit example (docs/tests/secret-transit.md): its defaults are
    /// rsa-2048 keys and PSS with SHA2-256; every key of the example is taken.
    #[test]
    fn transit_takes_vault_benchmarks_defaults_and_keys() {
        let t = tr("transit_sign", "weight = 25").unwrap();
        let c = &t.choice.config;
        assert_eq!(c["key_type"], "rsa-2048");
        assert_eq!(c["params"]["signature_algorithm"], "pss");
        assert_eq!(c["params"]["hash_algorithm"], "sha2-256");
        assert_eq!(c["params"]["marshaling_algorithm"], "asn1");
        assert_eq!(c["input"], "");
        let t = tr(
            "transit_verify",
            "weight = 25\nconfig {\n verify {\n signature_algorithm = \"pkcs1v15\"\n }\n}",
        )
        .unwrap();
        assert_eq!(t.choice.config["params"]["signature_algorithm"], "pkcs1v15");
        let t = tr(
            "transit_encrypt",
            "weight = 25\nconfig {\n payload_len = 128\n context_len = 32\n keys {\n convergent_encryption = true\n derived = true\n type = \"aes128-gcm96\"\n }\n}",
        )
        .unwrap();
        let c = &t.choice.config;
        assert_eq!(c["key_type"], "aes128-gcm96");
        assert_eq!(c["key_params"]["derived"], true);
        assert_eq!(c["key_params"]["convergent_encryption"], true);
        assert_eq!(c["context_size"], 32);
        assert!(c["params"].as_object().unwrap().is_empty());
        let t = tr(
            "transit_decrypt",
            "weight = 25\nconfig {\n payload_len = 64\n}",
        )
        .unwrap();
        assert_eq!(t.choice.config["key_type"], "rsa-2048");
        assert_eq!(t.choice.config["payload_size"], 64);
        for kind in [
            "transit_encrypt",
            "transit_decrypt",
            "transit_sign",
            "transit_verify",
        ] {
            let t = tr(kind, "weight = 1").unwrap();
            (find(t.choice.name.as_str()).unwrap().build)(&t.choice.config)
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
        }
        // Several refusals of one test, all at once.
        let e = translate(
            "transit_encrypt",
            "t1",
            &block("weight = 1\nconfig {\n keys {\n managed_key_id = \"x\"\n }\n encrypt {\n nonce = \"n\"\n }\n bogus = 1\n}"),
        )
        .unwrap_err();
        let paths: Vec<&str> = e.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "config.keys.managed_key_id",
                "config.encrypt.nonce",
                "config.bogus"
            ]
        );
    }

    #[test]
    fn what_vblast_cannot_do_is_refused_by_name() {
        for (kind, text, key) in [
            (
                "approle_auth",
                "weight = 1\nconfig {\n secret_id {\n colour = \"red\"\n }\n}",
                "config.secret_id.colour",
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
                "weight = 1\nconfig {\n encrypt {\n batch_input = []\n }\n}",
                "config.encrypt.batch_input",
            ),
            (
                "ssh_sign",
                "weight = 1\nconfig {\n role {\n key_type = \"otp\"\n }\n}",
                "config.role.key_type",
            ),
            (
                "ssh_sign",
                "weight = 1\nconfig {\n key_signing {\n public_key = \"/nonexistent/k.pub\"\n }\n}",
                "config.key_signing.public_key",
            ),
            (
                "totp_generate",
                "weight = 1\nconfig {\n digits = 7\n}",
                "config.digits",
            ),
            (
                "totp_read",
                "weight = 1\nconfig {\n algorithm = \"MD5\"\n}",
                "config.algorithm",
            ),
            (
                "cert_auth",
                "weight = 1\nconfig {\n colour = \"red\"\n}",
                "config.colour",
            ),
            (
                "postgresql_secret",
                "weight = 1\nconfig {\n db_connection {\n plugin_name = \"mysql-database-plugin\"\n }\n}",
                "config.db_connection.plugin_name",
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
        for kind in [
            "ldap_auth",
            "ldap_static_secret",
            "ldap_dynamic_secret",
            "radius_auth",
        ] {
            let e = tr(kind, "weight = 1").unwrap_err();
            assert!(
                e.contains("does not ship")
                    && e.contains("registered as a plugin")
                    && e.contains("HashiCorp Vault")
                    && e.contains("lacks the mapping"),
                "{kind}: {e}"
            );
        }
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

    /// Walks the registry's test types: every number an operation's config holds is a
    /// setting with a flag whose kind bounds it, or has a bound of the operation's own
    /// (`OpInfo::bounds`), so that a file's value is held to it (`bounded`). A new numeric
    /// setting without either fails here.
    #[test]
    fn every_numeric_setting_of_every_test_type_has_its_flags_bound() {
        use crate::vault::ops::OptionKind;
        fn numbers(v: &Value, path: &str, out: &mut Vec<String>) {
            match v {
                Value::Number(_) => out.push(path.to_string()),
                Value::Object(m) => {
                    for (k, v) in m {
                        let p = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        numbers(v, &p, out);
                    }
                }
                _ => {}
            }
        }
        let mut unbounded = Vec::new();
        let mut checked = 0;
        for (t, info) in types() {
            let cfg = (info.config_from)(&OptionValues::new());
            let mut keys = Vec::new();
            numbers(&cfg, "", &mut keys);
            for key in keys {
                checked += 1;
                let spec = info.options.iter().find(|s| s.id() == key);
                let own = info.bounds.iter().any(|b| b.key == key);
                let bounded = own
                    || spec.is_some_and(|s| {
                        s.is_bounded()
                            && matches!(
                                s.kind,
                                OptionKind::Count { .. }
                                    | OptionKind::Number { .. }
                                    | OptionKind::Bytes { .. }
                            )
                    });
                if !bounded {
                    unbounded.push(format!("{} ({}): {key}", t.name, info.name));
                }
            }
        }
        assert!(checked > 0);
        assert!(
            unbounded.is_empty(),
            "numbers without a bounded flag: {unbounded:?}"
        );
    }

    /// vault-benchmark's hostile values are refused with the flag's bound, before setup.
    #[test]
    fn a_files_numbers_have_their_flags_bounds() {
        let refused = |kind: &str, config: &str| {
            let text = format!(
                "test \"{kind}\" \"t\" {{\n  weight = 100\n  config {{\n    {config}\n  }}\n}}\n"
            );
            super::super::parse(&text, "f.hcl").unwrap_err().to_string()
        };
        let e = refused("kvv2_write", "kvsize = 4000000000");
        assert!(e.contains("--secret-size is larger than 16 MiB"), "{e}");
        let e = refused("kvv2_read", "numkvs = 18446744073709551615");
        assert!(
            e.contains("--secrets 18446744073709551615 is more than 10000000"),
            "{e}"
        );
        let e = refused("kvv1_read", "numkvs = 0");
        assert!(e.contains("must be at least 1"), "{e}");
        // The numbers no flag of the same name bounds: each named with its value and bound.
        for (kind, config, said) in [
            (
                "pki_sign",
                "root_ca {\n key_bits = 4000000000\n }",
                "config.root_ca.key_bits = 4000000000 is not one of 0, 2048, 3072, 4096, 8192 (for key_type rsa)",
            ),
            (
                "pki_sign",
                "intermediate_csr {\n key_type = \"ec\"\n key_bits = 2048\n }",
                "config.intermediate_csr.key_bits = 2048 is not one of 0, 224, 256, 384, 521 (for key_type ec)",
            ),
            (
                "pki_issue",
                "root_ca {\n key_bits = 18446744073709551615\n }",
                "config.root_ca.key_bits = 18446744073709551615 is not one of",
            ),
            (
                "identity",
                "entity_count = 18446744073709551615",
                "config.entity_count = 18446744073709551615 is out of the bounds of --entities: --entities 18446744073709551615 is more than 10000000",
            ),
            (
                "identity",
                "alias_count = 10000001",
                "config.alias_count = 10000001 is out of the bounds of --entity-aliases",
            ),
            (
                "identity",
                "group_count = 18446744073709551615",
                "config.group_count = 18446744073709551615 is out of the bounds of --groups",
            ),
            (
                "identity",
                "policy_count = 18446744073709551615",
                "config.policy_count = 18446744073709551615 is out of the bounds of --identity-policies",
            ),
            (
                "identity",
                "aliases {\n count = 1\n size = 4000000000\n }",
                "config.aliases.size = 4000000000 is not between 0 and 100",
            ),
            (
                "identity",
                "groups {\n count = 18446744073709551615\n size = 1\n }",
                "config.groups.count = 18446744073709551615 is not between 0 and 10000000",
            ),
            (
                "identity",
                "groups {\n size = 100001\n }",
                "config.groups.size = 100001 is not between 0 and 100000",
            ),
            (
                "identity",
                "policies {\n count = 10000001\n }",
                "config.policies.count = 10000001 is not between 0 and 10000000",
            ),
            (
                "identity",
                "policies {\n size = 10001\n }",
                "config.policies.size = 10001 is not between 0 and 10000",
            ),
            (
                "transit_encrypt",
                "context_len = 18446744073709551615",
                "config.context_len = 18446744073709551615 is not between 0 and 1048576",
            ),
        ] {
            let e = refused(kind, config);
            assert!(
                e.contains(said) && e.contains("test 't'"),
                "{kind} {config}: {e}"
            );
        }
        // The numbers a file cannot set (its test type does) are bounded all the same.
        for (kind, key, value, said) in [
            (
                "kvv2_read",
                "version",
                3,
                "config.version = 3 is out of the bounds of --kv-version: --kv-version 3 is not between 1 and 2",
            ),
            (
                "cubbyhole_write",
                "version",
                0,
                "config.version = 0 is out of the bounds of --kv-version",
            ),
            (
                "jwt_auth",
                "pool",
                100_001,
                "config.pool = 100001 is not between 1 and 100000",
            ),
            (
                "pki_sign",
                "csrs",
                0,
                "config.csrs = 0 is not between 1 and 10000",
            ),
        ] {
            let (_, info) = types().find(|(t, _)| t.name == kind).unwrap();
            let mut config = match (info.config_from)(&OptionValues::new()) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            config.insert(key.into(), Value::from(value));
            let e = bounded(info, "t", &config);
            assert!(e.len() == 1 && e[0].message.contains(said), "{kind}: {e:?}");
        }
        // Within the bounds, the same keys are taken.
        let ok = "test \"identity\" \"t\" {\n  weight = 100\n  config {\n    entity_count = 10000000\n    aliases {\n      count = 1\n      size = 1\n    }\n  }\n}\n";
        assert!(super::super::parse(ok, "f.hcl").is_ok());
        let ok = "test \"pki_sign\" \"t\" {\n  weight = 100\n  config {\n    root_ca {\n      key_bits = 8192\n    }\n    intermediate_csr {\n      key_type = \"ec\"\n      key_bits = 384\n    }\n  }\n}\n";
        assert!(super::super::parse(ok, "f.hcl").is_ok());
        // Within the bounds, the same keys are taken.
        let ok = "test \"kvv2_write\" \"t\" {\n  weight = 100\n  config {\n    numkvs = 10000000\n    kvsize = 16777216\n  }\n}\n";
        assert!(super::super::parse(ok, "f.hcl").is_ok());
    }
}
